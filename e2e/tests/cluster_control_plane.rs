//! The test control plane from `hack/cluster-up.sh` is up and usable through kubectl.
//! Ignored (and counted as ignored by the test runner) only when built with
//! `KRS_SKIP_CLUSTER_TESTS=1`; a control plane that cannot be brought up fails them.

use kubelet_e2e::cluster;

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[test]
fn apiserver_readyz_is_ok() -> TestResult {
    let c = cluster::ensure()?;
    assert_eq!(c.kubectl_output(["get", "--raw", "/readyz"])?, "ok");
    assert!(c.server.starts_with("https://127.0.0.1:"), "{}", c.server);
    Ok(())
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[test]
fn server_is_upstream_v1_35() -> TestResult {
    let c = cluster::ensure()?;
    let version: serde_json::Value =
        serde_json::from_str(&c.kubectl_output(["version", "-o", "json"])?)?;
    assert_eq!(version["serverVersion"]["gitVersion"], "v1.35.4");
    assert_eq!(version["clientVersion"]["gitVersion"], "v1.35.4");
    Ok(())
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[test]
fn controllers_and_rbac_are_set_up() -> TestResult {
    let c = cluster::ensure()?;
    // The controller-manager made the default ServiceAccount and published the root CA.
    c.kubectl_output(["-n", "default", "get", "serviceaccount", "default"])?;
    c.kubectl_output(["-n", "default", "get", "configmap", "kube-root-ca.crt"])?;
    // The apiserver's kubelet client may use the kubelet API (logs, exec) ...
    let can = c.kubectl_output([
        "auth",
        "can-i",
        "get",
        "nodes/proxy",
        "--as",
        "kube-apiserver-kubelet-client",
    ])?;
    assert_eq!(can.trim(), "yes");
    // ... and the Node authorizer keeps a node to its own objects.
    let other = c.kubectl_output([
        "auth",
        "can-i",
        "get",
        "secrets",
        "--as",
        "system:node:nobody",
        "--as-group",
        "system:nodes",
    ]);
    assert!(
        matches!(&other, Err(cluster::ClusterError::Failed { stdout, .. }) if stdout.starts_with("no")),
        "{other:?}"
    );
    Ok(())
}
