#![allow(clippy::unwrap_used, clippy::panic)]

use super::*;
use crate::types::CONFIG_HASH_ANNOTATION_KEY;

const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: c\n    image: nginx:1.25\n";

fn file() -> ManifestOrigin {
    ManifestOrigin::File("/etc/kubernetes/manifests/web.yaml".into())
}

fn decode(data: &str, origin: &ManifestOrigin) -> Result<Pod, ManifestError> {
    decode_static_pod(
        data.as_bytes(),
        origin,
        "node-a",
        StaticPodOptions::default(),
    )
    .map(|p| p.pod)
}

#[test]
fn applies_upstream_static_pod_defaults() {
    let pod = decode(POD, &file()).unwrap();
    let uid = pod.metadata.uid.clone().unwrap();
    assert_eq!(uid.len(), 32);
    assert!(uid.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(pod.metadata.name.as_deref(), Some("web-node-a"));
    assert_eq!(pod.metadata.namespace.as_deref(), Some("default"));
    let annotations = pod.metadata.annotations.as_ref().unwrap();
    assert_eq!(annotations[CONFIG_HASH_ANNOTATION_KEY], uid);
    let spec = pod.spec.as_ref().unwrap();
    assert_eq!(spec.node_name.as_deref(), Some("node-a"));
    let tolerations = spec.tolerations.as_ref().unwrap();
    assert_eq!(tolerations.len(), 1);
    assert_eq!(tolerations[0].operator.as_deref(), Some("Exists"));
    assert_eq!(tolerations[0].effect.as_deref(), Some("NoExecute"));
    assert_eq!(tolerations[0].key, None);
    assert_eq!(pod.status.unwrap().phase.as_deref(), Some("Pending"));
    assert_eq!(spec.restart_policy.as_deref(), Some("Always"));
}

#[test]
fn pod_name_gets_lowercased_node_suffix() {
    assert_eq!(generate_pod_name("web", "Node-A"), "web-node-a");
}

#[test]
fn uid_depends_on_content_node_and_source() {
    let uid = |data: &str, origin: &ManifestOrigin, node: &str| {
        let p =
            decode_static_pod(data.as_bytes(), origin, node, StaticPodOptions::default()).unwrap();
        p.pod.metadata.uid.unwrap()
    };
    let a = uid(POD, &file(), "n1");
    assert_eq!(a, uid(POD, &file(), "n1"), "stable");
    assert_ne!(a, uid(POD, &file(), "n2"), "node");
    assert_ne!(
        a,
        uid(POD, &ManifestOrigin::File("/other.yaml".into()), "n1"),
        "path"
    );
    assert_ne!(
        a,
        uid(&POD.replace("1.25", "1.26"), &file(), "n1"),
        "content"
    );
    assert_ne!(
        a,
        uid(POD, &ManifestOrigin::Url("http://x".into()), "n1"),
        "url"
    );
    // Upstream hashes the defaulted pod: an explicit default gives the same UID.
    let explicit = POD.replace("spec:\n", "spec:\n  restartPolicy: Always\n");
    assert_eq!(a, uid(&explicit, &file(), "n1"));
}

#[test]
fn uid_hash_input_order_matches_upstream() {
    let mut pod = crate::decode::decode_pod(POD.as_bytes()).unwrap().value;
    crate::defaults::set_defaults_pod(&mut pod);
    let mut h = Fnv128a::default();
    h.write(&serde_json::to_vec(&pod).unwrap());
    h.write(b"host:n1file:/p");
    assert_eq!(
        static_pod_uid(&pod, &ManifestOrigin::File("/p".into()), "n1"),
        h.hex()
    );
}

#[test]
fn explicit_uid_and_namespace_are_kept() {
    let data = POD.replace(
        "  name: web\n",
        "  name: web\n  uid: my-uid\n  namespace: kube-system\n",
    );
    let pod = decode(&data, &file()).unwrap();
    assert_eq!(pod.metadata.uid.as_deref(), Some("my-uid"));
    assert_eq!(pod.metadata.namespace.as_deref(), Some("kube-system"));
    assert_eq!(
        pod.metadata.annotations.unwrap()[CONFIG_HASH_ANNOTATION_KEY],
        "my-uid"
    );
}

#[test]
fn url_pods_get_no_toleration() {
    let pod = decode(POD, &ManifestOrigin::Url("http://127.0.0.1/p".into())).unwrap();
    assert_eq!(pod.spec.unwrap().tolerations, None);
}

#[test]
fn matching_toleration_is_replaced_not_duplicated() {
    let data = POD.replace(
        "spec:\n",
        "spec:\n  tolerations:\n  - operator: Exists\n    effect: NoExecute\n    tolerationSeconds: 5\n  - key: k\n    operator: Exists\n",
    );
    let tolerations = decode(&data, &file())
        .unwrap()
        .spec
        .unwrap()
        .tolerations
        .unwrap();
    assert_eq!(tolerations.len(), 2);
    assert_eq!(tolerations[0].toleration_seconds, None);
    assert_eq!(tolerations[1].key.as_deref(), Some("k"));
}

#[test]
fn errors_name_the_location() {
    let err = decode("kind: Service\napiVersion: v1\n", &file()).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with("/etc/kubernetes/manifests/web.yaml: couldn't parse as pod("),
        "{msg}"
    );
    assert!(msg.contains("Service"), "{msg}");

    let err = decode("apiVersion: v1\nkind: Pod\nspec: {}\n", &file()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "/etc/kubernetes/manifests/web.yaml: invalid pod: name is needed for the pod"
    );

    let err = decode(&POD.replace("image: nginx:1.25", "image: ''"), &file()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "/etc/kubernetes/manifests/web.yaml: invalid pod: [spec.containers[0].image: Required value]"
    );
}

#[test]
fn api_references_are_rejected_unless_gate_off() {
    let data = POD.replace("spec:\n", "spec:\n  serviceAccountName: default\n");
    let err = decode(&data, &file()).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("static pods may not reference serviceaccounts"),
        "{err}"
    );
    let opts = StaticPodOptions {
        prevent_api_references: false,
    };
    assert!(decode_static_pod(data.as_bytes(), &file(), "n", opts).is_ok());
}

#[test]
fn http_decoding_accepts_pod_or_pod_list() {
    let url = ManifestOrigin::Url("http://127.0.0.1/pods".into());
    let opts = StaticPodOptions::default();
    assert_eq!(
        decode_static_pods(POD.as_bytes(), &url, "n", opts)
            .unwrap()
            .len(),
        1
    );
    let list = "apiVersion: v1\nkind: PodList\nitems:\n- metadata:\n    name: a\n  spec:\n    containers:\n    - name: c\n      image: i\n- metadata:\n    name: b\n  spec:\n    containers:\n    - name: c\n      image: i\n";
    let pods = decode_static_pods(list.as_bytes(), &url, "n", opts).unwrap();
    let names: Vec<_> = pods
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["a-n", "b-n"]);

    let bad_item = list.replace("image: i\n- metadata", "image: ''\n- metadata");
    let err = decode_static_pods(bad_item.as_bytes(), &url, "n", opts).unwrap_err();
    assert!(matches!(err, ManifestError::Invalid { .. }), "{err}");

    let err = decode_static_pods(b"kind: Secret\napiVersion: v1\n", &url, "n", opts).unwrap_err();
    assert!(matches!(err, ManifestError::NotPods { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with("http://127.0.0.1/pods: couldn't parse as single pod")
    );
}
