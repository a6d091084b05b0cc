//! `POST /checkpoint/{namespace}/{pod}/{container}` (`pkg/kubelet/server/server.go`
//! `checkpoint`), installed with `enableDebuggingHandlers` and the `ContainerCheckpoint`
//! feature gate (beta, on by default in 1.35), authorized as `nodes/checkpoint`:
//!
//! * the pod must be known to the kubelet (404 `pod does not exist`) and have a container,
//!   init container or ephemeral container of that name (404 `container <c> does not exist`);
//! * `timeout` (seconds, the last value wins; 404 `cannot parse value of timeout parameter`
//!   when it is not an integer) goes to the CRI request; without it the CRI client's default
//!   timeout applies ([`crate::HostInterface::checkpoint_container`]);
//! * the runtime's failure is 500 `checkpointing of <ns>/<pod>/<c> failed (<error>)`;
//! * success is `{"items":["<archive path>"]}` (the path the kubelet chose:
//!   `<root-dir>/checkpoints/checkpoint-<pod>_<namespace>-<container>-<RFC 3339 time>.tar`).

use axum::Router;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::any;

use crate::Host;
use crate::debugging::{pod_full_name, query_values, write_json_response};
use crate::methods::post_only;
use crate::respond::restful_error;

/// The `/checkpoint/` routes (merged by the secure router when the gate is on).
pub(crate) fn checkpoint_handler(host: Host) -> Router {
    Router::new()
        .route("/checkpoint/{ns}/{pod}/{container}", any(checkpoint))
        .route_layer(axum::middleware::from_fn(post_only))
        .with_state(host)
}

/// `timeout`'s last value as `strconv.ParseInt(s, 10, 64)` reads it; `Ok(None)` without one.
fn timeout_param(query: Option<&str>) -> Result<Option<i64>, ()> {
    match query_values(query, "timeout").last() {
        None => Ok(None),
        Some(v) => v.parse::<i64>().map(Some).map_err(|_| ()),
    }
}

async fn checkpoint(
    State(host): State<Host>,
    Path((namespace, name, container)): Path<(String, String, String)>,
    RawQuery(query): RawQuery,
) -> Response {
    let Some(pod) = host.get_pod_by_name(&namespace, &name) else {
        return restful_error(StatusCode::NOT_FOUND, "pod does not exist");
    };
    let spec = pod.spec.as_ref();
    let found = spec.is_some_and(|s| {
        s.containers.iter().any(|c| c.name == container)
            || s.init_containers
                .iter()
                .flatten()
                .any(|c| c.name == container)
            || s.ephemeral_containers
                .iter()
                .flatten()
                .any(|c| c.name == container)
    });
    if !found {
        return restful_error(
            StatusCode::NOT_FOUND,
            format!("container {container} does not exist"),
        );
    }
    let Ok(timeout) = timeout_param(query.as_deref()) else {
        return restful_error(
            StatusCode::NOT_FOUND,
            "cannot parse value of timeout parameter",
        );
    };
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    match host
        .checkpoint_container(&uid, &pod_full_name(&pod), &container, timeout)
        .await
    {
        // Upstream prints the path with `%s` into the JSON, unescaped.
        Ok(location) => write_json_response(format!("{{\"items\":[\"{location}\"]}}").into_bytes()),
        Err(e) => restful_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("checkpointing of {namespace}/{name}/{container} failed ({e})"),
        ),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::{Arc, Mutex};

    use axum::body::Body;
    use axum::http::Request;
    use http_body_util::BodyExt;
    use k8s_openapi::api::core::v1::{Container, EphemeralContainer, Pod, PodSpec};
    use tower::ServiceExt;

    use super::*;
    use crate::{HostFuture, HostInterface};

    /// `default/web` (uid `uid-1`) with `app`, init `init` and ephemeral `debug`; records
    /// each checkpoint call and answers `answer`.
    struct FakeHost {
        calls: Mutex<Vec<String>>,
        answer: Result<String, String>,
    }

    impl HostInterface for FakeHost {
        fn get_pods(&self) -> Vec<Pod> {
            let mut p = Pod::default();
            p.metadata.name = Some("web".into());
            p.metadata.namespace = Some("default".into());
            p.metadata.uid = Some("uid-1".into());
            let c = |n: &str| Container {
                name: n.into(),
                ..Container::default()
            };
            p.spec = Some(PodSpec {
                containers: vec![c("app")],
                init_containers: Some(vec![c("init")]),
                ephemeral_containers: Some(vec![EphemeralContainer {
                    name: "debug".into(),
                    ..EphemeralContainer::default()
                }]),
                ..PodSpec::default()
            });
            vec![p]
        }
        fn sync_loop_health(&self) -> Result<(), String> {
            Ok(())
        }
        fn checkpoint_container<'a>(
            &'a self,
            pod_uid: &'a str,
            pod_full_name: &'a str,
            container: &'a str,
            timeout: Option<i64>,
        ) -> HostFuture<'a, Result<String, String>> {
            self.calls
                .lock()
                .unwrap()
                .push(format!("{pod_uid} {pod_full_name} {container} {timeout:?}"));
            Box::pin(async move { self.answer.clone() })
        }
    }

    async fn call(host: &Arc<FakeHost>, method: &str, uri: &str) -> (u16, String, String) {
        let req = Request::builder()
            .method(method)
            .uri(uri)
            .body(Body::empty())
            .unwrap();
        let resp = checkpoint_handler(host.clone()).oneshot(req).await.unwrap();
        let status = resp.status().as_u16();
        let ct = resp
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, ct, String::from_utf8(body.to_vec()).unwrap())
    }

    fn host(answer: Result<&str, &str>) -> Arc<FakeHost> {
        Arc::new(FakeHost {
            calls: Mutex::new(Vec::new()),
            answer: answer.map(str::to_string).map_err(str::to_string),
        })
    }

    #[tokio::test]
    async fn checkpoints_any_kind_of_container_and_answers_the_archive_path() {
        let h = host(Ok(
            "/var/lib/kubelet/checkpoints/checkpoint-web_default-app-T.tar",
        ));
        let (status, ct, body) = call(&h, "POST", "/checkpoint/default/web/app").await;
        assert_eq!((status, ct.as_str()), (200, "application/json"));
        assert_eq!(
            body,
            r#"{"items":["/var/lib/kubelet/checkpoints/checkpoint-web_default-app-T.tar"]}"#
        );
        for c in ["init", "debug"] {
            let (status, _, _) = call(&h, "POST", &format!("/checkpoint/default/web/{c}")).await;
            assert_eq!(status, 200, "{c}");
        }
        // The last `timeout` wins; a negative one reaches the CRI client (which refuses it).
        call(
            &h,
            "POST",
            "/checkpoint/default/web/app?timeout=5&timeout=300",
        )
        .await;
        call(&h, "POST", "/checkpoint/default/web/app?timeout=-1").await;
        assert_eq!(
            *h.calls.lock().unwrap(),
            [
                "uid-1 web_default app None",
                "uid-1 web_default init None",
                "uid-1 web_default debug None",
                "uid-1 web_default app Some(300)",
                "uid-1 web_default app Some(-1)",
            ]
        );
    }

    #[tokio::test]
    async fn errors_as_upstream() {
        let h = host(Err(
            "rpc error: code = Unimplemented desc = method CheckpointContainer not implemented",
        ));
        for (method, uri, want_status, want_body) in [
            (
                "POST",
                "/checkpoint/default/nope/app",
                404,
                "pod does not exist",
            ),
            (
                "POST",
                "/checkpoint/other/web/app",
                404,
                "pod does not exist",
            ),
            (
                "POST",
                "/checkpoint/default/web/nope",
                404,
                "container nope does not exist",
            ),
            (
                "POST",
                "/checkpoint/default/web/app?timeout=soon",
                404,
                "cannot parse value of timeout parameter",
            ),
            (
                "POST",
                "/checkpoint/default/web/app?timeout=1&timeout=",
                404,
                "cannot parse value of timeout parameter",
            ),
            (
                "POST",
                "/checkpoint/default/web/app",
                500,
                "checkpointing of default/web/app failed (rpc error: code = Unimplemented desc = method CheckpointContainer not implemented)",
            ),
            (
                "GET",
                "/checkpoint/default/web/app",
                405,
                "405: Method Not Allowed",
            ),
        ] {
            let (status, _, body) = call(&h, method, uri).await;
            assert_eq!((status, body.as_str()), (want_status, want_body), "{uri}");
        }
        // Only the last request reached the runtime.
        assert_eq!(h.calls.lock().unwrap().len(), 1);
    }
}
