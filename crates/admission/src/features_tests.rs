use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

use super::*;

fn pod(spec: Value) -> Pod {
    let v = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "u"}, "spec": spec});
    match serde_json::from_value(v) {
        Ok(p) => p,
        Err(e) => unreachable!("test pod must decode: {e}"),
    }
}

fn admit(p: &Pod) -> PodAdmitResult {
    UnsupportedPodFeatures.admit(&PodAdmitAttributes {
        pod: p,
        other_pods: &[],
    })
}

fn c(extra: Value) -> Value {
    let mut base = json!({"name": "c", "image": "busybox"});
    if let (Value::Object(b), Value::Object(e)) = (&mut base, extra) {
        b.extend(e);
    }
    base
}

/// One pod per table entry, with the paths the rejection must name.
fn cases() -> Vec<(&'static str, Value, Vec<&'static str>)> {
    vec![
        (
            "spec.{initContainers,containers}[*].restartPolicyRules[*].action: RestartAllContainers",
            json!({"restartPolicy": "Never",
                   "initContainers": [c(json!({"name": "i", "restartPolicy": "Never", "restartPolicyRules": [
                       {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [1]}}]}))],
                   "containers": [c(json!({"restartPolicy": "Never", "restartPolicyRules": [
                       {"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}},
                       {"action": "RestartAllContainers", "exitCodes": {"operator": "NotIn", "values": [0]}}]}))]}),
            vec![
                "spec.initContainers[0].restartPolicyRules[0].action",
                "spec.containers[0].restartPolicyRules[1].action",
            ],
        ),
        (
            "spec.{initContainers,containers}[*].resources.claims",
            json!({"containers": [c(json!({"resources": {"claims": [{"name": "gpu"}]}}))]}),
            vec!["spec.containers[0].resources.claims"],
        ),
        (
            "spec.{initContainers,containers}[*].volumeDevices",
            json!({"containers": [c(json!({"volumeDevices": [{"name": "v", "devicePath": "/dev/xvda"}]}))]}),
            vec!["spec.containers[0].volumeDevices"],
        ),
        (
            "spec.volumes[*] of any type but emptyDir, hostPath, configMap, secret, downwardAPI, projected and image",
            json!({"containers": [c(json!({}))], "volumes": [
                {"name": "h", "hostPath": {"path": "/tmp"}},
                {"name": "d", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
                {"name": "i", "image": {"reference": "busybox"}},
                {"name": "n", "nfs": {"server": "s", "path": "/"}},
                {"name": "cm", "configMap": {"name": "cfg"}},
                {"name": "s", "secret": {"secretName": "s"}},
                {"name": "pvc", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "p", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}]}),
            vec![
                "spec.volumes[3].nfs",
                "spec.volumes[6].persistentVolumeClaim",
            ],
        ),
        (
            "spec.volumes[*].projected.sources[*].{clusterTrustBundle,podCertificate}",
            json!({"containers": [c(json!({}))], "volumes": [
                {"name": "p", "projected": {"sources": [
                    {"serviceAccountToken": {"path": "token"}},
                    {"clusterTrustBundle": {"name": "b", "path": "ca.pem"}},
                    {"podCertificate": {"signerName": "x/y", "keyType": "ED25519", "credentialBundlePath": "c"}}]}}]}),
            vec![
                "spec.volumes[0].projected.sources[1].clusterTrustBundle",
                "spec.volumes[0].projected.sources[2].podCertificate",
            ],
        ),
    ]
}

#[test]
fn every_entry_rejects_a_pod_using_it_naming_each_path() {
    // RestartAllContainers is refused only with its gate on.
    let _gate = kubelet_container::gates::set_restart_all_containers_during_test(true);
    let cases = cases();
    for f in UNSUPPORTED_POD_FEATURES {
        let case = cases.iter().find(|(field, _, _)| *field == f.field);
        let Some((_, spec, want)) = case else {
            unreachable!("no test case for table entry {:?}", f.field);
        };
        let p = pod(spec.clone());
        let r = admit(&p);
        assert!(!r.admit, "{}", f.field);
        assert_eq!(r.reason, "UnsupportedPodFeature");
        assert_eq!(
            r.message,
            format!("kubelet-rs does not support {} yet", want.join(", ")),
            "{}",
            f.field
        );
    }
    for (field, _, _) in &cases {
        assert!(
            UNSUPPORTED_POD_FEATURES.iter().any(|f| f.field == *field),
            "test case for {field:?} has no table entry"
        );
    }
}

/// With `RestartAllContainersOnContainerExits` off (the 1.35 default) the action is
/// admitted: upstream's `ContainerShouldRestart` then falls back to the container's
/// `restartPolicy` (`kubelet_container::podutil`). With the gate on it is refused, naming
/// the field.
#[test]
fn restart_all_containers_is_refused_only_with_its_gate_on() {
    let spec = json!({"restartPolicy": "Never",
        "containers": [c(json!({"restartPolicy": "Never", "restartPolicyRules": [
            {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [3]}}]}))]});
    let p = pod(spec);
    {
        let _gate = kubelet_container::gates::set_restart_all_containers_during_test(false);
        assert_eq!(admit(&p), PodAdmitResult::admit());
    }
    let _gate = kubelet_container::gates::set_restart_all_containers_during_test(true);
    let r = admit(&p);
    assert!(!r.admit);
    assert_eq!(r.reason, "UnsupportedPodFeature");
    assert_eq!(
        r.message,
        "kubelet-rs does not support spec.containers[0].restartPolicyRules[0].action yet"
    );
}

#[test]
fn implemented_features_are_admitted() {
    let p = pod(json!({
        "securityContext": {"supplementalGroupsPolicy": "Strict", "fsGroup": 2000, "sysctls": [{"name": "net.ipv4.tcp_syncookies", "value": "1"}]},
        "hostUsers": false,
        "runtimeClassName": "gvisor",
        "activeDeadlineSeconds": 30,
        "initContainers": [c(json!({"name": "init"})), c(json!({"name": "side", "restartPolicy": "Always"}))],
        "containers": [c(json!({
            "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi", "ephemeral-storage": "1Gi"},
                          "limits": {"memory": "128Mi", "ephemeral-storage": "2Gi"}},
            "lifecycle": {"postStart": {"exec": {"command": ["true"]}}},
            "volumeMounts": [{"name": "h", "mountPath": "/h"}]
        }))],
        "volumes": [{"name": "h", "hostPath": {"path": "/tmp"}}]
    }));
    assert_eq!(admit(&p), PodAdmitResult::admit());
    let with_empty_dir = pod(json!({
        "securityContext": {"fsGroup": 2000, "fsGroupChangePolicy": "OnRootMismatch"},
        "containers": [c(json!({"volumeMounts": [
            {"name": "e", "mountPath": "/e", "subPath": "a"},
            {"name": "m", "mountPath": "/m", "subPathExpr": "$(POD)"}]}))],
        "volumes": [{"name": "e", "emptyDir": {}},
                    {"name": "m", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
                    // On disk, the eviction manager enforces the limit (localStorageEviction).
                    {"name": "d", "emptyDir": {"sizeLimit": "1Gi"}}]}));
    assert_eq!(admit(&with_empty_dir), PodAdmitResult::admit());
    let with_restart_rules = pod(json!({
        "restartPolicy": "Never",
        "initContainers": [c(json!({"name": "init", "restartPolicy": "OnFailure"}))],
        "containers": [c(json!({"restartPolicy": "Always"})),
                       c(json!({"name": "d", "restartPolicy": "Never", "restartPolicyRules": [
                           {"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}]}))]}));
    assert_eq!(admit(&with_restart_rules), PodAdmitResult::admit());
    assert!(admit(&Pod::default()).admit);
}

fn docs_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/pod-features.md")
}

/// `docs/pod-features.md` is generated from the table; `KRS_UPDATE_DOCS=1` rewrites it.
#[test]
fn docs_page_matches_the_table() {
    let want = markdown();
    let path = docs_path();
    if std::env::var_os("KRS_UPDATE_DOCS").is_some() {
        if let Err(e) = std::fs::write(&path, &want) {
            unreachable!("write {}: {e}", path.display());
        }
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{} is out of date with UNSUPPORTED_POD_FEATURES; regenerate it with \
         KRS_UPDATE_DOCS=1 cargo test -p kubelet-admission --lib features",
        path.display()
    );
}

#[test]
fn readme_points_at_the_docs_page() {
    let readme = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let text = std::fs::read_to_string(readme).unwrap_or_default();
    assert!(
        text.contains("docs/pod-features.md"),
        "README must link docs/pod-features.md"
    );
}
