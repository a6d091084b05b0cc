//! Cases of upstream `predicate_test.go` (`TestGeneralPredicates` with its node of
//! 10 millicores and 20 bytes, the OS tests) and the pod count (`maxPods`).

use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

use super::*;

fn pod(v: Value) -> Pod {
    let mut base = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}});
    if let (Value::Object(b), Value::Object(e)) = (&mut base, v) {
        b.extend(e);
    }
    match serde_json::from_value(base) {
        Ok(p) => p,
        Err(e) => unreachable!("test pod must decode: {e}"),
    }
}

fn pod_with_port(port: i32) -> Pod {
    pod(
        json!({"spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80, "hostPort": port}]}]}}),
    )
}

fn alloc(pods: i64) -> Allocatable {
    Allocatable {
        pods,
        milli_cpu: 10,
        memory: 20,
        ephemeral_storage: 5,
    }
}

fn node(pods: i64) -> NodeInfo {
    NodeInfo::standalone("machine1", "machine1", &BTreeMap::new(), alloc(pods))
}

fn resource_pod(cpu_milli: i64, memory: i64) -> Pod {
    pod(
        json!({"spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {
        "cpu": format!("{cpu_milli}m"), "memory": memory.to_string()}}}]}}),
    )
}

fn admit(node: NodeInfo, p: &Pod, others: &[&Pod]) -> PodAdmitResult {
    PredicateAdmitHandler::new(node).admit(&PodAdmitAttributes {
        pod: p,
        other_pods: others,
    })
}

#[test]
fn no_resources_port_or_host_requested_always_fits() {
    let other = pod(json!({}));
    assert_eq!(
        admit(node(110), &pod(json!({})), &[&other]),
        PodAdmitResult::admit()
    );
}

#[test]
fn too_many_pods_is_out_of_pods_with_upstreams_message() {
    let a = pod(json!({}));
    let b = pod(json!({}));
    let r = admit(node(2), &pod(json!({})), &[&a, &b]);
    assert_eq!(
        r,
        PodAdmitResult::reject(
            "OutOfpods",
            "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"
        )
    );
    assert!(admit(node(3), &pod(json!({})), &[&a, &b]).admit);
    let r = admit(node(0), &pod(json!({})), &[]);
    assert_eq!(
        r.message,
        "Node didn't have enough resource: pods, requested: 1, used: 0, capacity: 0"
    );
}

#[test]
fn not_enough_cpu_and_memory_resource() {
    let other = resource_pod(5, 19);
    let handler = PredicateAdmitHandler::new(node(110));
    let p = resource_pod(8, 10);
    assert_eq!(
        handler.general_filter(&p, &[&other]),
        vec![
            PredicateFailure::InsufficientResource {
                resource: "cpu",
                requested: 8,
                used: 5,
                capacity: 10
            },
            PredicateFailure::InsufficientResource {
                resource: "memory",
                requested: 10,
                used: 19,
                capacity: 20
            },
        ]
    );
    assert_eq!(
        admit(node(110), &p, &[&other]),
        PodAdmitResult::reject(
            "OutOfcpu",
            "Node didn't have enough resource: cpu, requested: 8, used: 5, capacity: 10"
        )
    );
    let r = admit(node(110), &resource_pod(1, 10), &[&other]);
    assert_eq!(r.reason, "OutOfmemory");
    assert_eq!(
        r.message,
        "Node didn't have enough resource: memory, requested: 10, used: 19, capacity: 20"
    );
    assert!(admit(node(110), &resource_pod(5, 1), &[&other]).admit);
    // A pod requesting nothing fits even on a full node.
    assert!(admit(node(110), &pod(json!({})), &[&resource_pod(10, 20)]).admit);
}

#[test]
fn pod_capacity_is_max_pods_or_pods_per_core() {
    assert_eq!(pod_capacity(110, 0, 2), 110);
    assert_eq!(pod_capacity(110, 10, 2), 20);
    assert_eq!(pod_capacity(10, 100, 2), 10);
}

#[test]
fn host_not_match() {
    let r = admit(
        node(110),
        &pod(
            json!({"spec": {"nodeName": "machine2", "containers": [{"name": "c", "image": "i"}]}}),
        ),
        &[],
    );
    assert_eq!(
        r,
        PodAdmitResult::reject(
            "NodeName",
            "Predicate NodeName failed: node(s) didn't match the requested node name"
        )
    );
    let same =
        pod(json!({"spec": {"nodeName": "machine1", "containers": [{"name": "c", "image": "i"}]}}));
    assert!(admit(node(110), &same, &[]).admit);
}

#[test]
fn hostport_conflict() {
    let other = pod_with_port(123);
    let r = admit(node(110), &pod_with_port(123), &[&other]);
    assert_eq!(
        r,
        PodAdmitResult::reject(
            "NodePorts",
            "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
        )
    );
    assert!(admit(node(110), &pod_with_port(124), &[&other]).admit);
    let udp = pod(
        json!({"spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80, "hostPort": 123, "protocol": "UDP"}]}]}}),
    );
    assert!(admit(node(110), &udp, &[&other]).admit);
    let on_ip = |ip: &str| {
        pod(
            json!({"spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80, "hostPort": 9, "hostIP": ip}]}]}}),
        )
    };
    let (a, b) = (on_ip("127.0.0.1"), on_ip("127.0.0.2"));
    assert!(admit(node(110), &a, &[&b]).admit);
    assert!(!admit(node(110), &on_ip("0.0.0.0"), &[&b]).admit);
    assert!(!admit(node(110), &a, &[&on_ip("0.0.0.0")]).admit);
}

#[test]
fn the_first_failure_is_reported() {
    let other = pod_with_port(123);
    let mut p = pod_with_port(123);
    if let Some(s) = p.spec.as_mut() {
        s.node_name = Some("machine2".into());
    }
    let reasons = PredicateAdmitHandler::new(node(1)).general_filter(&p, &[&other]);
    assert_eq!(reasons.len(), 3);
    assert_eq!(admit(node(1), &p, &[&other]).reason, "OutOfpods");
}

#[test]
fn node_selector_and_affinity_match_the_standalone_node_labels() {
    let mut extra = BTreeMap::new();
    extra.insert("disk".to_string(), "ssd".to_string());
    extra.insert("gen".to_string(), "5".to_string());
    let n = || NodeInfo::standalone("machine1", "host1", &extra, alloc(110));
    let rejected = PodAdmitResult::reject(
        "NodeAffinity",
        "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
    );
    let sel = |s: Value| {
        pod(json!({"spec": {"nodeSelector": s, "containers": [{"name": "c", "image": "i"}]}}))
    };
    assert!(
        admit(
            n(),
            &sel(json!({"kubernetes.io/hostname": "host1", "disk": "ssd"})),
            &[]
        )
        .admit
    );
    assert!(admit(n(), &sel(json!({"kubernetes.io/os": "linux"})), &[]).admit);
    assert_eq!(admit(n(), &sel(json!({"disk": "hdd"})), &[]), rejected);

    let aff = |terms: Value| {
        pod(
            json!({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}},
                            "containers": [{"name": "c", "image": "i"}]}}),
        )
    };
    let expr = |key: &str, op: &str, values: Value| json!({"matchExpressions": [{"key": key, "operator": op, "values": values}]});
    assert!(
        admit(
            n(),
            &aff(json!([expr("disk", "In", json!(["hdd", "ssd"]))])),
            &[]
        )
        .admit
    );
    assert_eq!(
        admit(
            n(),
            &aff(json!([expr("disk", "NotIn", json!(["ssd"]))])),
            &[]
        ),
        rejected
    );
    assert!(
        admit(
            n(),
            &aff(json!([
                expr("disk", "NotIn", json!(["ssd"])),
                expr("gen", "Gt", json!(["4"]))
            ])),
            &[]
        )
        .admit
    );
    assert_eq!(
        admit(n(), &aff(json!([expr("gen", "Lt", json!(["5"]))])), &[]),
        rejected
    );
    assert!(
        admit(
            n(),
            &aff(json!([expr("gpu", "DoesNotExist", json!(null))])),
            &[]
        )
        .admit
    );
    assert_eq!(
        admit(n(), &aff(json!([expr("gpu", "Exists", json!(null))])), &[]),
        rejected
    );
    let by_name = |name: &str| json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]}]);
    assert!(admit(n(), &aff(by_name("machine1")), &[]).admit);
    assert_eq!(admit(n(), &aff(by_name("machine2")), &[]), rejected);
    assert_eq!(admit(n(), &aff(json!([{}])), &[]), rejected);
    assert_eq!(admit(n(), &aff(json!([])), &[]), rejected);
}

#[test]
fn node_labels_override_the_defaults() {
    let mut extra = BTreeMap::new();
    extra.insert("kubernetes.io/hostname".to_string(), "custom".to_string());
    let n = NodeInfo::standalone("machine1", "host1", &extra, alloc(110));
    assert_eq!(
        n.labels.get("kubernetes.io/hostname").map(String::as_str),
        Some("custom")
    );
    assert_eq!(
        n.labels.get("kubernetes.io/os").map(String::as_str),
        Some("linux")
    );
    assert_eq!(
        n.labels.get("beta.kubernetes.io/arch").map(String::as_str),
        Some(go_arch())
    );
}

// Upstream `TestRejectPodAdmissionBasedOnOSSelector` / `...OSField`.
#[test]
fn os_label_and_field() {
    let labelled =
        |os: &str| pod(json!({"metadata": {"name": "p", "labels": {"kubernetes.io/os": os}}}));
    let mut dummy_node = node(110);
    dummy_node
        .labels
        .insert(LABEL_OS_STABLE.into(), "dummyOS".into());
    assert!(admit(node(110), &labelled("linux"), &[]).admit);
    assert!(admit(dummy_node.clone(), &labelled("linux"), &[]).admit);
    assert_eq!(
        admit(dummy_node.clone(), &labelled("dummyOS"), &[]),
        PodAdmitResult::reject(
            "PodOSSelectorNodeLabelDoesNotMatch",
            "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"
        )
    );
    assert!(admit(dummy_node, &pod(json!({})), &[]).admit);

    let with_os = |os: &str| {
        pod(json!({"spec": {"os": {"name": os}, "containers": [{"name": "c", "image": "i"}]}}))
    };
    assert!(admit(node(110), &with_os("linux"), &[]).admit);
    assert_eq!(
        admit(node(110), &with_os("windows"), &[]),
        PodAdmitResult::reject(
            "PodOSNotSupported",
            "Failed to admit pod as the OS field doesn't match node OS"
        )
    );
}

fn tainted_node(effect: &str) -> NodeInfo {
    let mut n = node(110);
    n.taints = vec![k8s_openapi::api::core::v1::Taint {
        key: "node.kubernetes.io/unreachable".into(),
        effect: effect.into(),
        ..Default::default()
    }];
    n
}

#[test]
fn untolerated_no_execute_taint_rejects_api_pods() {
    let r = admit(tainted_node("NoExecute"), &pod(json!({})), &[]);
    assert_eq!(
        r,
        PodAdmitResult::reject(
            reasons::TAINT_TOLERATION,
            "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"
        )
    );
    // NoSchedule taints are the scheduler's business, not the kubelet's.
    assert!(admit(tainted_node("NoSchedule"), &pod(json!({})), &[]).admit);
    // A toleration admits the pod.
    let tolerating = pod(
        json!({"spec": {"containers": [{"name": "c", "image": "i"}], "tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}]}}),
    );
    assert!(admit(tainted_node("NoExecute"), &tolerating, &[]).admit);
}

#[test]
fn static_pods_ignore_taints() {
    let static_pod = pod(
        json!({"metadata": {"name": "p", "annotations": {"kubernetes.io/config.source": "file"}}}),
    );
    assert!(admit(tainted_node("NoExecute"), &static_pod, &[]).admit);
    let api_pod = pod(
        json!({"metadata": {"name": "p", "annotations": {"kubernetes.io/config.source": "api"}}}),
    );
    assert!(!admit(tainted_node("NoExecute"), &api_pod, &[]).admit);
}

#[test]
fn node_info_from_a_node_object() {
    let node: k8s_openapi::api::core::v1::Node = match serde_json::from_value(json!({
        "metadata": {"name": "n1", "labels": {"kubernetes.io/os": "linux", "disk": "ssd"}},
        "spec": {"taints": [{"key": "k", "effect": "NoExecute"}]},
        "status": {"allocatable": {"cpu": "1500m", "memory": "1Gi", "pods": "3"}}
    })) {
        Ok(n) => n,
        Err(e) => unreachable!("{e}"),
    };
    let info = NodeInfo::from_node(&node);
    assert_eq!(info.name, "n1");
    assert_eq!(info.labels.get("disk").map(String::as_str), Some("ssd"));
    assert_eq!(info.allocatable_milli_cpu, 1500);
    assert_eq!(info.allocatable_memory, 1 << 30);
    assert_eq!(info.allocatable_pods, 3);
    assert_eq!(info.taints.len(), 1);
    // A node without status offers nothing: every pod with requests is out of resources.
    let bare = NodeInfo::from_node(&k8s_openapi::api::core::v1::Node::default());
    assert_eq!(bare.allocatable_pods, 0);
    let r = admit(bare, &pod(json!({})), &[]);
    assert_eq!(r.reason, reasons::OUT_OF_PODS);
}

/// A getter whose node changes between admissions (the informer's latest Node).
#[derive(Debug, Default)]
struct ChangingNode(std::sync::Mutex<NodeInfo>);

impl NodeGetter for ChangingNode {
    fn get_node_any_way(&self) -> NodeInfo {
        self.0.lock().map(|n| n.clone()).unwrap_or_default()
    }
}

#[test]
fn each_admission_sees_the_current_node() {
    let getter = std::sync::Arc::new(ChangingNode(std::sync::Mutex::new(node(110))));
    let handler = PredicateAdmitHandler::with_node_getter(getter.clone(), false);
    let p = pod(json!({}));
    let attrs = PodAdmitAttributes {
        pod: &p,
        other_pods: &[],
    };
    assert!(handler.admit(&attrs).admit);
    if let Ok(mut n) = getter.0.lock() {
        *n = tainted_node("NoExecute");
    }
    assert_eq!(handler.admit(&attrs).reason, reasons::TAINT_TOLERATION);
}

#[test]
fn strict_supplemental_groups_policy_needs_the_node_feature() {
    let with_policy = |policy: Option<&str>| {
        let sc = match policy {
            Some(p) => json!({"supplementalGroupsPolicy": p}),
            None => json!({}),
        };
        pod(json!({"spec": {"securityContext": sc, "containers": [{"name": "c", "image": "i"}]}}))
    };
    let unsupported = node(110);
    assert!(!unsupported.supplemental_groups_policy);
    let r = admit(unsupported.clone(), &with_policy(Some("Strict")), &[]);
    assert!(!r.admit);
    assert_eq!(r.reason, "SupplementalGroupsPolicyNotSupported");
    assert_eq!(
        r.message,
        "SupplementalGroupsPolicy=Strict is not supported in this node"
    );
    for policy in [None, Some("Merge")] {
        assert!(
            admit(unsupported.clone(), &with_policy(policy), &[]).admit,
            "{policy:?}"
        );
    }

    let supported = NodeInfo {
        supplemental_groups_policy: true,
        ..node(110)
    };
    assert!(admit(supported, &with_policy(Some("Strict")), &[]).admit);
}

#[test]
fn the_node_feature_comes_from_the_node_status() {
    let node_with = |features: serde_json::Value| match serde_json::from_value(
        json!({"metadata": {"name": "n1"}, "status": features}),
    ) {
        Ok(n) => NodeInfo::from_node(&n).supplemental_groups_policy,
        Err(e) => unreachable!("test node must decode: {e}"),
    };
    assert!(node_with(
        json!({"features": {"supplementalGroupsPolicy": true}})
    ));
    assert!(!node_with(
        json!({"features": {"supplementalGroupsPolicy": false}})
    ));
    assert!(!node_with(json!({"features": {}})));
    assert!(!node_with(json!({})));
}

fn storage_pod(bytes: i64) -> Pod {
    pod(
        json!({"spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {
        "ephemeral-storage": bytes.to_string()}}}]}}),
    )
}

/// Upstream `TestGeneralPredicates`/`noderesources` `Fits` for local storage: the pod's
/// ephemeral-storage request against allocatable minus the other pods' requests
/// (`OutOfephemeral-storage`); a node without allocatable ephemeral storage
/// (`localStorageCapacityIsolation: false`) rejects any request of it.
#[test]
fn ephemeral_storage_requests_fit_against_allocatable() {
    let other = storage_pod(2);
    assert_eq!(
        admit(node(110), &storage_pod(3), &[&other]),
        PodAdmitResult::admit()
    );
    assert_eq!(
        admit(node(110), &storage_pod(4), &[&other]),
        PodAdmitResult::reject(
            "OutOfephemeral-storage",
            "Node didn't have enough resource: ephemeral-storage, requested: 4, used: 2, capacity: 5"
        )
    );
    let mut without = node(110);
    without.allocatable_ephemeral_storage = 0;
    assert_eq!(
        admit(without.clone(), &storage_pod(1), &[]).reason,
        "OutOfephemeral-storage"
    );
    assert!(admit(without, &pod(json!({})), &[]).admit);
    // From a Node object: status.allocatable["ephemeral-storage"].
    let n: Node = serde_json::from_value(json!({"metadata": {"name": "n"},
        "status": {"allocatable": {"ephemeral-storage": "1Gi"}}}))
    .unwrap_or_default();
    assert_eq!(
        NodeInfo::from_node(&n).allocatable_ephemeral_storage,
        1 << 30
    );
}
