//! Authorization on the secure port (`pkg/kubelet/server/auth.go`
//! `nodeAuthorizerAttributesGetter.GetRequestAttributes`, apiserver `authorizer.Authorizer`).
//!
//! Every request becomes one or more attribute sets on `nodes/<subresource>` of this node;
//! it is allowed when the authorizer allows **any** of them. `AlwaysAllow` is the only
//! mode a standalone kubelet has; `authorization.mode: Webhook` is the SubjectAccessReview
//! authorizer of `kubelet-auth`.

use std::future::Future;
use std::pin::Pin;

use crate::authn::UserInfo;

/// `authorizer.Attributes` as the kubelet fills them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attributes {
    /// The authenticated user.
    pub user: UserInfo,
    /// From the HTTP method (`get`, `create`, `update`, `patch`, `delete`; else empty).
    pub verb: String,
    /// Always empty (nodes are cluster-scoped).
    pub namespace: String,
    /// Always empty (core group).
    pub api_group: String,
    /// Always `v1`.
    pub api_version: String,
    /// Always `nodes`.
    pub resource: String,
    /// `stats`, `metrics`, `log`, `checkpoint`, `pods`, `healthz`, `configz`, `statusz`, `proxy`.
    pub subresource: String,
    /// This node's name.
    pub name: String,
    /// Always `true`.
    pub resource_request: bool,
    /// The URL path.
    pub path: String,
}

/// `authorizer.Decision`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Allowed.
    Allow,
    /// Explicitly denied.
    Deny,
    /// No opinion (treated as denied).
    NoOpinion,
}

/// An authorizer failed to decide (e.g. the SubjectAccessReview call failed): 500.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("authorization failed: {0}")]
pub struct AuthorizerError(pub String);

/// The future [`Authorizer::authorize`] returns.
pub type AuthorizeFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Decision, AuthorizerError>> + Send + 'a>>;

/// `authorizer.Authorizer`.
pub trait Authorizer: Send + Sync {
    /// Decides one attribute set.
    fn authorize<'a>(&'a self, attrs: &'a Attributes) -> AuthorizeFuture<'a>;
}

/// `authorization.mode: AlwaysAllow`.
#[derive(Debug, Clone, Copy, Default)]
pub struct AlwaysAllow;

impl Authorizer for AlwaysAllow {
    fn authorize<'a>(&'a self, _attrs: &'a Attributes) -> AuthorizeFuture<'a> {
        Box::pin(async { Ok(Decision::Allow) })
    }
}

/// `isSubpath`: `path` equals `prefix` or lies under it (trailing slash of `prefix` ignored).
fn is_subpath(path: &str, prefix: &str) -> bool {
    let prefix = prefix.strip_suffix('/').unwrap_or(prefix);
    path == prefix
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The HTTP method's API verb.
pub fn api_verb(method: &str) -> &'static str {
    match method {
        "POST" => "create",
        "GET" => "get",
        "PUT" => "update",
        "PATCH" => "patch",
        "DELETE" => "delete",
        _ => "",
    }
}

/// The subresources tried for `path`, most specific first. With `KubeletFineGrainedAuthz`
/// `/pods`, `/runningpods/`, `/healthz` and `/configz` first try their own subresource, then
/// fall back to `proxy`; `/statusz` is `statusz` and `/flagz` is `configz` in either case.
pub fn subresources(path: &str, fine_grained: bool) -> Vec<&'static str> {
    let mut out = Vec::with_capacity(2);
    if fine_grained {
        let specific = [
            ("/pods", "pods"),
            ("/healthz", "healthz"),
            ("/configz", "configz"),
            ("/runningpods/", "pods"),
            // kubelet-rs's pod startup timelines, as `/pods`.
            ("/debug/pods/", "pods"),
        ];
        if let Some((_, sub)) = specific.iter().find(|(p, _)| is_subpath(path, p)) {
            out.push(*sub);
        }
    }
    // Everything else — `/run`, `/exec`, `/attach`, `/portForward`, `/containerLogs`,
    // `/configz`, `/debug/...` — is `proxy`.
    let coarse = [
        ("/stats/", "stats"),
        ("/metrics", "metrics"),
        ("/logs/", "log"),
        ("/checkpoint/", "checkpoint"),
        ("/statusz", "statusz"),
        ("/flagz", "configz"),
    ];
    let sub = coarse
        .iter()
        .find(|(p, _)| is_subpath(path, p))
        .map_or("proxy", |(_, s)| *s);
    out.push(sub);
    out
}

/// `GetRequestAttributes`: one attribute set per subresource to try.
pub fn request_attributes(
    node_name: &str,
    user: &UserInfo,
    method: &str,
    path: &str,
    fine_grained: bool,
) -> Vec<Attributes> {
    let verb = api_verb(method);
    subresources(path, fine_grained)
        .into_iter()
        .map(|sub| Attributes {
            user: user.clone(),
            verb: verb.to_string(),
            namespace: String::new(),
            api_group: String::new(),
            api_version: "v1".into(),
            resource: "nodes".into(),
            subresource: sub.to_string(),
            name: node_name.to_string(),
            resource_request: true,
            path: path.to_string(),
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn subpath_matching() {
        assert!(is_subpath("/stats", "/stats/"));
        assert!(is_subpath("/stats/summary", "/stats/"));
        assert!(!is_subpath("/statsfoo", "/stats/"));
        assert!(is_subpath("/metrics/cadvisor", "/metrics"));
        assert!(!is_subpath("/metricsx", "/metrics"));
        assert!(is_subpath("/runningpods", "/runningpods/"));
    }

    #[test]
    fn mapping_with_fine_grained_authz() {
        let cases: &[(&str, &[&str])] = &[
            ("/stats/summary", &["stats"]),
            ("/metrics", &["metrics"]),
            ("/metrics/cadvisor", &["metrics"]),
            ("/metrics/probes", &["metrics"]),
            ("/logs/syslog", &["log"]),
            ("/checkpoint/ns/p/c", &["checkpoint"]),
            ("/pods", &["pods", "proxy"]),
            ("/pods/", &["pods", "proxy"]),
            ("/runningpods/", &["pods", "proxy"]),
            ("/healthz", &["healthz", "proxy"]),
            ("/healthz/syncloop", &["healthz", "proxy"]),
            ("/configz", &["configz", "proxy"]),
            ("/statusz", &["statusz"]),
            ("/flagz", &["configz"]),
            ("/exec/ns/p/c", &["proxy"]),
            ("/exec/ns/p/uid/c", &["proxy"]),
            ("/attach/ns/p/c", &["proxy"]),
            ("/portForward/ns/p", &["proxy"]),
            ("/run/ns/p/c", &["proxy"]),
            ("/runningpods", &["pods", "proxy"]),
            ("/debug/pods/ns/p/timeline", &["pods", "proxy"]),
            ("/debug/pprof/heap", &["proxy"]),
            ("/containerLogs/ns/p/c/", &["proxy"]),
            ("/containerLogs/ns/p/c", &["proxy"]),
            ("/spec/", &["proxy"]),
            ("/podsx", &["proxy"]),
            ("/", &["proxy"]),
        ];
        for (path, want) in cases {
            assert_eq!(subresources(path, true), *want, "{path}");
        }
    }

    #[test]
    fn mapping_without_fine_grained_authz() {
        assert_eq!(subresources("/pods", false), vec!["proxy"]);
        assert_eq!(subresources("/configz", false), vec!["proxy"]);
        assert_eq!(subresources("/stats/summary", false), vec!["stats"]);
        assert_eq!(subresources("/runningpods/", false), vec!["proxy"]);
        assert_eq!(
            subresources("/debug/pods/ns/p/timeline", false),
            vec!["proxy"]
        );
        assert_eq!(subresources("/statusz", false), vec!["statusz"]);
    }

    #[test]
    fn attributes_carry_node_verb_and_path() {
        let user = UserInfo::anonymous();
        let attrs = request_attributes("node1", &user, "POST", "/configz", true);
        assert_eq!(attrs.len(), 2);
        let a = &attrs[0];
        assert_eq!(a.verb, "create");
        assert_eq!(a.resource, "nodes");
        assert_eq!(a.subresource, "configz");
        assert_eq!(a.name, "node1");
        assert_eq!(a.api_version, "v1");
        assert_eq!(a.path, "/configz");
        assert!(a.resource_request && a.namespace.is_empty() && a.api_group.is_empty());
        assert_eq!(attrs[1].subresource, "proxy");
    }

    #[test]
    fn verbs() {
        for (m, v) in [
            ("GET", "get"),
            ("POST", "create"),
            ("PUT", "update"),
            ("PATCH", "patch"),
            ("DELETE", "delete"),
            ("HEAD", ""),
            ("OPTIONS", ""),
        ] {
            assert_eq!(api_verb(m), v, "{m}");
        }
    }

    #[tokio::test]
    async fn always_allow_allows() {
        let attrs = request_attributes("n", &UserInfo::anonymous(), "DELETE", "/x", true);
        assert_eq!(
            AlwaysAllow.authorize(&attrs[0]).await.unwrap(),
            Decision::Allow
        );
    }
}
