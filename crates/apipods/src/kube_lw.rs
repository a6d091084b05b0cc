//! The kube-rs [`ListerWatcher`] (upstream `cache.NewListWatchFromClient` with a field
//! selector, and the informer factory's `WithTweakListOptions`).

use std::fmt::Debug;

use async_trait::async_trait;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, ListParams, WatchParams};
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::reflector::{ListerWatcher, ObjectList, WatchEvent};

/// Lists and watches every `K` in all namespaces matching `field_selector`.
#[derive(Clone)]
pub struct KubeListerWatcher<K> {
    api: Api<K>,
    field_selector: String,
}

impl<K> KubeListerWatcher<K>
where
    K: kube::Resource + Clone + DeserializeOwned + Debug,
    K::DynamicType: Default,
{
    /// Lists and watches `K` across namespaces with `field_selector` (`spec.nodeName=n`).
    pub fn new(client: kube::Client, field_selector: impl Into<String>) -> Self {
        Self {
            api: Api::all(client),
            field_selector: field_selector.into(),
        }
    }

    /// Lists and watches `K` in `namespace` with `field_selector` (`metadata.name=n`).
    pub fn namespaced(
        client: kube::Client,
        namespace: &str,
        field_selector: impl Into<String>,
    ) -> Self
    where
        K: kube::Resource<Scope = kube::core::NamespaceResourceScope>,
    {
        Self {
            api: Api::namespaced(client, namespace),
            field_selector: field_selector.into(),
        }
    }
}

/// `fields.OneTermEqualSelector(field, value)` (values are escaped as upstream's
/// `fields.EscapeValue`: `\`, `,` and `=` get a backslash).
pub fn one_term_equal_selector(field: &str, value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '\\' | ',' | '=') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    format!("{field}={escaped}")
}

#[async_trait]
impl<K> ListerWatcher<K> for KubeListerWatcher<K>
where
    K: kube::Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    async fn list(&self, resource_version: &str) -> Result<ObjectList<K>, ApiError> {
        let mut lp = ListParams::default().fields(&self.field_selector);
        if !resource_version.is_empty() {
            lp.resource_version = Some(resource_version.to_string());
        }
        let list = self.api.list(&lp).await?;
        Ok(ObjectList {
            items: list.items,
            resource_version: list.metadata.resource_version.unwrap_or_default(),
        })
    }

    async fn watch(
        &self,
        resource_version: &str,
        timeout_secs: u32,
    ) -> Result<BoxStream<'static, Result<WatchEvent<K>, ApiError>>, ApiError> {
        let wp = WatchParams::default()
            .fields(&self.field_selector)
            .timeout(timeout_secs);
        let stream = self.api.watch(&wp, resource_version).await?;
        Ok(stream
            .map_err(ApiError::from)
            .map_ok(|e| match e {
                kube::core::WatchEvent::Added(o) => WatchEvent::Added(o),
                kube::core::WatchEvent::Modified(o) => WatchEvent::Modified(o),
                kube::core::WatchEvent::Deleted(o) => WatchEvent::Deleted(o),
                kube::core::WatchEvent::Bookmark(b) => {
                    WatchEvent::Bookmark(b.metadata.resource_version)
                }
                kube::core::WatchEvent::Error(s) => WatchEvent::Error(ApiError::from(*s)),
            })
            .boxed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selector_escapes_as_fields_escape_value() {
        assert_eq!(
            one_term_equal_selector("spec.nodeName", "node-1"),
            "spec.nodeName=node-1"
        );
        assert_eq!(
            one_term_equal_selector("metadata.name", r"a,b=c\d"),
            r"metadata.name=a\,b\=c\\d"
        );
    }
}
