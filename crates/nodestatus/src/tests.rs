//! Registration, status and lease on the fakes (`FakeNodeApi`, `FakeNodeStatusSource`,
//! `FakeHostNetwork`, `FakeClock`, paused tokio time: no wall-clock timing).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, NodeCondition};
use kubelet_apimachinery::CpuSet;
use kubelet_cm::{HugePagesInfo, MachineInfo, NodeConfig, NodeConfigInput};
use kubelet_container::Image;
use kubelet_container::clock::FakeClock;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::api::ApiError;
use crate::fake::{FakeNodeApi, connection_refused};
use crate::node_status::NodeStatusManager;
use crate::setters::{self, SetterContext, SetterInputs};
use crate::source::{FakeHostNetwork, FakeNodeStatusSource, Machine};
use crate::{LeaseController, NodeStatusConfig};

const NODE: &str = "krs-unit";
const NODE_IP: &str = "198.18.255.9";

fn machine() -> MachineInfo {
    MachineInfo {
        online_cpus: CpuSet::parse("0-1").unwrap(),
        memory_capacity: 4 << 30,
        machine_id: "machine-1".into(),
        boot_id: "boot-1".into(),
        system_uuid: "uuid-1".into(),
        kernel_version: "6.1.0-test".into(),
        os_image: "Debian GNU/Linux 12 (bookworm)".into(),
    }
}

fn node_config() -> NodeConfig {
    let m = |kv: &[(&str, &str)]| -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let e = BTreeMap::new();
    NodeConfig::parse(
        NodeConfigInput {
            reserved_system_cpus: "",
            kube_reserved: &m(&[("cpu", "100m")]),
            system_reserved: &m(&[("memory", "1Gi")]),
            eviction_hard: &m(&[("memory.available", "100Mi"), ("nodefs.available", "50%")]),
            ignore_eviction_for_allocatable: false,
            qos_reserved: &e,
            enforce_node_allocatable: &[],
        },
        &machine(),
    )
    .unwrap()
}

fn cfg() -> NodeStatusConfig {
    let flags = kubelet_config::flags::KubeletFlags {
        node_labels: BTreeMap::from([
            ("example.com/rack".to_string(), "r1".to_string()),
            (
                "kubernetes.io/hostname".to_string(),
                "overridden".to_string(),
            ),
        ]),
        ..Default::default()
    };
    let mut c = kubelet_config::new_kubelet_configuration();
    c.provider_id = "krs://unit".into();
    c.register_with_taints = vec![kubelet_config::types::Taint {
        key: "example.com/dedicated".into(),
        value: "krs".into(),
        effect: "NoSchedule".into(),
        time_added: None,
    }];
    NodeStatusConfig::new(
        &c,
        &flags,
        NODE,
        "krs-unit-host",
        vec![NODE_IP.parse().unwrap()],
        node_config(),
    )
}

fn host() -> FakeHostNetwork {
    FakeHostNetwork {
        interface_addrs: vec![NODE_IP.parse().unwrap(), "127.0.0.1".parse().unwrap()],
        lookup: Vec::new(),
        default_ip: None,
    }
}

fn start_time() -> Timestamp {
    "2026-11-30T12:00:00Z".parse().unwrap()
}

struct Env {
    api: FakeNodeApi,
    source: FakeNodeStatusSource,
    clock: FakeClock,
    manager: Arc<NodeStatusManager>,
}

fn env_with(cfg: NodeStatusConfig) -> Env {
    let api = FakeNodeApi::default();
    let source = FakeNodeStatusSource::new(machine());
    let clock = FakeClock::new(start_time());
    let manager = Arc::new(
        NodeStatusManager::new(
            cfg,
            Arc::new(api.clone()),
            Arc::new(api.clone()),
            Arc::new(source.clone()),
            Arc::new(host()),
            Arc::new(clock.clone()),
        )
        .with_random(|| 0.5),
    );
    Env {
        api,
        source,
        clock,
        manager,
    }
}

/// Another manager over the same fakes as `e.manager` (to give it a node lister).
fn second_manager(e: &Env) -> NodeStatusManager {
    NodeStatusManager::new(
        cfg(),
        Arc::new(e.api.clone()),
        Arc::new(e.api.clone()),
        Arc::new(e.source.clone()),
        Arc::new(host()),
        Arc::new(e.clock.clone()),
    )
}

fn env() -> Env {
    env_with(cfg())
}

fn json_of(node: &Node) -> serde_json::Value {
    serde_json::to_value(node).unwrap()
}

fn condition<'a>(node: &'a Node, type_: &str) -> &'a NodeCondition {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == type_))
        .unwrap()
}

/// A condition's status, reason and message.
fn texts(c: &NodeCondition) -> (&str, &str, &str) {
    (
        c.status.as_str(),
        c.reason.as_deref().unwrap_or_default(),
        c.message.as_deref().unwrap_or_default(),
    )
}

#[tokio::test(start_paused = true)]
async fn initial_node_has_labels_taints_capacity_allocatable_and_node_info() {
    let e = env();
    e.manager.update_runtime_up().await;
    let node = e.manager.initial_node().await;
    let v = json_of(&node);
    assert_eq!(
        v["metadata"]["labels"],
        json!({
            "beta.kubernetes.io/arch": kubelet_apimachinery::goruntime::go_arch(),
            "beta.kubernetes.io/os": "linux",
            "example.com/rack": "r1",
            "kubernetes.io/arch": kubelet_apimachinery::goruntime::go_arch(),
            "kubernetes.io/hostname": "overridden",
            "kubernetes.io/os": "linux",
        })
    );
    assert_eq!(
        v["metadata"]["annotations"],
        json!({"volumes.kubernetes.io/controller-managed-attach-detach": "true"})
    );
    assert_eq!(
        v["spec"],
        json!({
            "providerID": "krs://unit",
            "taints": [{"key": "example.com/dedicated", "value": "krs", "effect": "NoSchedule"}]
        })
    );
    let st = &v["status"];
    assert_eq!(
        st["capacity"],
        json!({"cpu": "2", "ephemeral-storage": "100Gi", "hugepages-2Mi": "0", "memory": "4Gi", "pods": "110"})
    );
    // cpu − kubeReserved 100m; memory − systemReserved 1Gi − hard eviction 100Mi;
    // ephemeral-storage − 50 % nodefs.available.
    assert_eq!(
        st["allocatable"],
        json!({"cpu": "1900m", "ephemeral-storage": "50Gi", "hugepages-2Mi": "0", "memory": "2972Mi", "pods": "110"})
    );
    assert_eq!(
        st["nodeInfo"],
        json!({
            "architecture": kubelet_apimachinery::goruntime::go_arch(),
            "bootID": "boot-1",
            "containerRuntimeVersion": "containerd://2.1.4",
            "kernelVersion": "6.1.0-test",
            "kubeProxyVersion": "",
            "kubeletVersion": kubelet_config::version::git_version(),
            "machineID": "machine-1",
            "operatingSystem": "linux",
            "osImage": "Debian GNU/Linux 12 (bookworm)",
            "systemUUID": "uuid-1",
        })
    );
    assert_eq!(
        st["daemonEndpoints"],
        json!({"kubeletEndpoint": {"Port": 10250}})
    );
    assert_eq!(
        st["addresses"],
        json!([{"type": "InternalIP", "address": NODE_IP}, {"type": "Hostname", "address": "krs-unit-host"}])
    );
    let types: Vec<&str> = st["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
    );
    assert_eq!(
        texts(condition(&node, "Ready")),
        ("True", "KubeletReady", "kubelet is posting ready status")
    );
    assert_eq!(
        texts(condition(&node, "MemoryPressure")),
        (
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available"
        )
    );
    assert_eq!(
        condition(&node, "DiskPressure").reason.as_deref(),
        Some("KubeletHasNoDiskPressure")
    );
    assert_eq!(
        condition(&node, "PIDPressure").message.as_deref(),
        Some("kubelet has sufficient PID available")
    );
    assert_eq!(
        e.source.take_events(),
        [
            "Normal NodeHasSufficientMemory: Node krs-unit status is now: NodeHasSufficientMemory",
            "Normal NodeHasNoDiskPressure: Node krs-unit status is now: NodeHasNoDiskPressure",
            "Normal NodeHasSufficientPID: Node krs-unit status is now: NodeHasSufficientPID",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn not_ready_reasons_are_aggregated_as_upstream() {
    let e = env();
    // Before the first runtime status check.
    let node = e.manager.initial_node().await;
    let ready = condition(&node, "Ready");
    assert_eq!(ready.status, "False");
    assert_eq!(ready.reason.as_deref(), Some("KubeletNotReady"));
    assert_eq!(
        ready.message.as_deref(),
        Some("[container runtime status check may not have completed yet, network state unknown]")
    );

    e.source.set_network_not_ready(
        "NetworkPluginNotReady",
        "Network plugin returns error: cni plugin not initialized",
    );
    e.manager.update_runtime_up().await;
    let node = e.manager.initial_node().await;
    assert_eq!(
        condition(&node, "Ready").message.as_deref(),
        Some(
            "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady \
             message:Network plugin returns error: cni plugin not initialized"
        )
    );

    e.source.update(|s| {
        s.health_checks = vec![(
            "PLEG".into(),
            Err("pleg was last seen active 3m1s ago; threshold is 3m0s".into()),
        )];
        s.root_fs_capacity = Err("statfs failed".into());
    });
    let node = e.manager.initial_node().await;
    assert_eq!(
        condition(&node, "Ready").message.as_deref(),
        Some(
            "[PLEG is not healthy: pleg was last seen active 3m1s ago; threshold is 3m0s, \
             container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady \
             message:Network plugin returns error: cni plugin not initialized, \
             missing node capacity for resources: ephemeral-storage]"
        )
    );
}

/// `ReadyCondition` with the shutdown manager's `ShutdownStatus`: `node is shutting down`
/// after the runtime and network errors, before the missing capacities.
#[tokio::test(start_paused = true)]
async fn node_shutting_down_makes_the_node_not_ready() {
    let e = env();
    e.manager.update_runtime_up().await;
    e.source
        .update(|s| s.shutdown_error = Some("node is shutting down".into()));
    let node = e.manager.initial_node().await;
    let ready = condition(&node, "Ready");
    assert_eq!(ready.status, "False");
    assert_eq!(ready.reason.as_deref(), Some("KubeletNotReady"));
    assert_eq!(ready.message.as_deref(), Some("node is shutting down"));
    e.source
        .update(|s| s.root_fs_capacity = Err("statfs failed".into()));
    let node = e.manager.initial_node().await;
    assert_eq!(
        condition(&node, "Ready").message.as_deref(),
        Some("[node is shutting down, missing node capacity for resources: ephemeral-storage]")
    );
    e.source.update(|s| s.shutdown_error = None);
    e.source.update(|s| s.root_fs_capacity = Ok(1 << 30));
    let node = e.manager.initial_node().await;
    assert_eq!(condition(&node, "Ready").status, "True");
}

fn inputs(now: Timestamp) -> SetterInputs {
    SetterInputs {
        now,
        machine: Ok(Machine {
            info: machine(),
            hugepages: vec![HugePagesInfo {
                page_size_kib: 2048,
                num_pages: 512,
            }],
        }),
        root_fs_capacity: Ok(10 << 30),
        runtime_type: "containerd".into(),
        runtime_version: Ok("v1.7.24-rc.1".into()),
        images: Ok(Vec::new()),
        runtime_errors: Vec::new(),
        network_errors: Vec::new(),
        runtime_features: None,
        node_shutdown_error: None,
        memory_pressure: false,
        disk_pressure: false,
        pid_pressure: false,
    }
}

fn run_setter(
    cfg: &NodeStatusConfig,
    inputs: &SetterInputs,
    host: &FakeHostNetwork,
    node: &mut Node,
    f: impl FnOnce(&mut Node, &mut SetterContext<'_>),
) -> Vec<String> {
    let mut reboot = false;
    let mut ctx = SetterContext {
        cfg,
        inputs,
        host,
        events: Vec::new(),
        reboot_event_recorded: &mut reboot,
    };
    f(node, &mut ctx);
    ctx.events.into_iter().map(|e| e.reason).collect()
}

#[test]
fn huge_pages_leave_allocatable_memory_and_negative_allocatable_is_zero() {
    let mut c = cfg();
    c.node_config.kube_reserved.insert(
        "ephemeral-storage".into(),
        kubelet_apimachinery::Quantity::parse("20Gi").unwrap(),
    );
    let mut node = Node::default();
    run_setter(&c, &inputs(start_time()), &host(), &mut node, |n, ctx| {
        setters::machine_info(n, ctx).unwrap();
    });
    let st = json_of(&node)["status"].clone();
    assert_eq!(st["capacity"]["hugepages-2Mi"], "1Gi");
    // 4Gi − 1Gi − 100Mi − 1Gi of huge pages.
    assert_eq!(st["allocatable"]["memory"], "1948Mi");
    assert_eq!(st["allocatable"]["ephemeral-storage"], "0");
}

#[test]
fn machine_info_failure_reports_zero_capacity() {
    let c = cfg();
    let mut i = inputs(start_time());
    i.machine = Err("cadvisor down".into());
    let mut node = Node::default();
    run_setter(&c, &i, &host(), &mut node, |n, ctx| {
        setters::machine_info(n, ctx).unwrap();
        assert_eq!(
            setters::version_info(n, ctx).unwrap_err(),
            "error getting version info: cadvisor down"
        );
    });
    assert_eq!(
        json_of(&node)["status"]["capacity"],
        json!({"cpu": "0", "memory": "0", "pods": "110"})
    );
}

#[test]
fn reboot_is_an_event_once() {
    let c = cfg();
    let i = inputs(start_time());
    let mut node = Node::default();
    let mut reboot = false;
    for boot in ["old-boot", "older-boot"] {
        node.status
            .get_or_insert_with(Default::default)
            .node_info
            .get_or_insert_with(Default::default)
            .boot_id = boot.into();
        let mut ctx = SetterContext {
            cfg: &c,
            inputs: &i,
            host: &host(),
            events: Vec::new(),
            reboot_event_recorded: &mut reboot,
        };
        setters::machine_info(&mut node, &mut ctx).unwrap();
        let events: Vec<String> = ctx
            .events
            .iter()
            .map(|e| format!("{} {} {}", e.event_type.as_str(), e.reason, e.message))
            .collect();
        if boot == "old-boot" {
            assert_eq!(
                events,
                ["Warning Rebooted Node krs-unit has been rebooted, boot id: boot-1"]
            );
        } else {
            assert!(events.is_empty());
        }
    }
}

#[test]
fn runtime_version_is_semantic_or_unknown() {
    let c = cfg();
    let mut i = inputs(start_time());
    // Semantic; else `ParseGeneric` (Debian's containerd says `1.6.20~ds1`); else Unknown.
    for (version, shown) in [
        (Ok("v1.7.24-rc.1"), "containerd://1.7.24-rc.1"),
        (Ok("1.6.20~ds1"), "containerd://1.6.20"),
        (Ok("v2.1"), "containerd://2.1"),
        (Ok("not-a-version"), "containerd://Unknown"),
        (Err("rpc error"), "containerd://Unknown"),
    ] {
        i.runtime_version = version.map(str::to_string).map_err(str::to_string);
        let mut node = Node::default();
        run_setter(&c, &i, &host(), &mut node, |n, ctx| {
            setters::version_info(n, ctx).unwrap();
        });
        assert_eq!(
            json_of(&node)["status"]["nodeInfo"]["containerRuntimeVersion"],
            shown
        );
    }
}

#[test]
fn images_largest_first_limited_with_five_names() {
    let mut c = cfg();
    c.node_status_max_images = 2;
    let mut i = inputs(start_time());
    let image = |size: u64, tags: usize| Image {
        id: format!("sha256:{size}"),
        repo_tags: (0..tags).map(|t| format!("img{size}:{t}")).collect(),
        repo_digests: vec![format!("img{size}@sha256:{size}")],
        size,
        ..Default::default()
    };
    i.images = Ok(vec![image(10, 1), image(30, 7), image(20, 1)]);
    let mut node = Node::default();
    run_setter(&c, &i, &host(), &mut node, |n, ctx| {
        setters::images(n, ctx).unwrap();
    });
    assert_eq!(
        json_of(&node)["status"]["images"],
        json!([
            {"names": ["img30@sha256:30", "img30:0", "img30:1", "img30:2", "img30:3"], "sizeBytes": 30},
            {"names": ["img20@sha256:20", "img20:0"], "sizeBytes": 20},
        ])
    );
    c.node_status_max_images = -1;
    run_setter(&c, &i, &host(), &mut node, |n, ctx| {
        setters::images(n, ctx).unwrap();
    });
    assert_eq!(
        json_of(&node)["status"]["images"].as_array().unwrap().len(),
        3
    );
    i.images = Err("rpc error".into());
    run_setter(&c, &i, &host(), &mut node, |n, ctx| {
        assert_eq!(
            setters::images(n, ctx).unwrap_err(),
            "error getting image list: rpc error"
        );
    });
    assert!(node.status.unwrap().images.is_none());
}

#[test]
fn node_addresses_without_a_cloud_provider() {
    let i = inputs(start_time());
    let addresses = |c: &NodeStatusConfig, h: &FakeHostNetwork| {
        let mut node = Node::default();
        let mut result = Ok(());
        run_setter(c, &i, h, &mut node, |n, ctx| {
            result = setters::node_address(n, ctx);
        });
        result.map(|()| json_of(&node)["status"]["addresses"].clone())
    };
    let ip = |s: &str| -> IpAddr { s.parse().unwrap() };

    // Dual-stack --node-ip.
    let mut c = cfg();
    c.node_ips = vec![ip(NODE_IP), ip("fd00::9")];
    let mut h = host();
    h.interface_addrs.push(ip("fd00::9"));
    assert_eq!(
        addresses(&c, &h).unwrap(),
        json!([
            {"type": "InternalIP", "address": NODE_IP},
            {"type": "InternalIP", "address": "fd00::9"},
            {"type": "Hostname", "address": "krs-unit-host"}
        ])
    );
    // A node IP that is not the host's.
    c.node_ips = vec![ip("198.18.255.77")];
    assert_eq!(
        addresses(&c, &h).unwrap_err(),
        "failed to validate nodeIP: node IP: \"198.18.255.77\" not found in the host's network interfaces"
    );
    c.node_ips = vec![ip("127.0.0.1")];
    assert_eq!(
        addresses(&c, &h).unwrap_err(),
        "failed to validate nodeIP: nodeIP can't be loopback address"
    );
    // No --node-ip: the hostname when it is an IP, then DNS (IPv4 preferred), then the
    // default route's interface.
    c.node_ips = Vec::new();
    c.hostname = "198.18.255.10".into();
    assert_eq!(addresses(&c, &h).unwrap()[0]["address"], "198.18.255.10");
    c.hostname = "krs-unit-host".into();
    h.lookup = vec![ip("fd00::9"), ip("198.18.255.9")];
    assert_eq!(addresses(&c, &h).unwrap()[0]["address"], NODE_IP);
    h.lookup = Vec::new();
    h.default_ip = Some(ip("192.0.2.2"));
    assert_eq!(addresses(&c, &h).unwrap()[0]["address"], "192.0.2.2");
    h.default_ip = None;
    assert_eq!(
        addresses(&c, &h).unwrap_err(),
        "can't get ip address of node krs-unit. error: no default routes found"
    );
}

#[tokio::test(start_paused = true)]
async fn registration_creates_the_node() {
    let e = env();
    e.manager.update_runtime_up().await;
    assert!(
        e.manager
            .register_with_api_server(&CancellationToken::new())
            .await
    );
    assert_eq!(e.api.calls(), ["create node krs-unit"]);
    let node = e.api.node(NODE).unwrap();
    assert_eq!(condition(&node, "Ready").status, "True");
    assert!(e.manager.registration_completed().await);
    // Registered once: a second call does nothing.
    assert!(
        e.manager
            .register_with_api_server(&CancellationToken::new())
            .await
    );
    assert_eq!(e.api.calls().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn re_registration_reconciles_the_existing_node() {
    let e = env();
    e.manager.update_runtime_up().await;
    let mut existing = e.manager.initial_node().await;
    let labels = existing.metadata.labels.as_mut().unwrap();
    labels.insert("kubernetes.io/hostname".into(), "old-hostname".into());
    labels.insert("someone/else".into(), "kept".into());
    existing.metadata.annotations = None;
    let st = existing.status.as_mut().unwrap();
    for list in [
        st.capacity.as_mut().unwrap(),
        st.allocatable.as_mut().unwrap(),
    ] {
        list.remove("hugepages-2Mi");
        list.insert(
            "hugepages-1Gi".into(),
            k8s_openapi::apimachinery::pkg::api::resource::Quantity("2Gi".into()),
        );
    }
    e.api.put_node(existing);

    assert!(
        e.manager
            .try_register_with_api_server(&e.manager.initial_node().await)
            .await
    );
    assert_eq!(
        e.api.calls(),
        [
            "create node krs-unit",
            "get node krs-unit",
            "patch node status krs-unit"
        ]
    );
    let v = json_of(&e.api.node(NODE).unwrap());
    assert_eq!(
        v["metadata"]["labels"]["kubernetes.io/hostname"],
        "overridden"
    );
    assert_eq!(v["metadata"]["labels"]["someone/else"], "kept");
    assert_eq!(
        v["metadata"]["annotations"]["volumes.kubernetes.io/controller-managed-attach-detach"],
        "true"
    );
    assert_eq!(v["status"]["capacity"]["hugepages-2Mi"], "0");
    assert!(v["status"]["capacity"].get("hugepages-1Gi").is_none());
    assert!(v["status"]["allocatable"].get("hugepages-1Gi").is_none());

    // Already in line: no patch.
    let before = e.api.calls().len();
    assert!(
        e.manager
            .try_register_with_api_server(&e.manager.initial_node().await)
            .await
    );
    assert_eq!(
        e.api.calls()[before..],
        ["create node krs-unit", "get node krs-unit"]
    );
}

#[tokio::test(start_paused = true)]
async fn registration_waits_for_the_api_with_backoff() {
    let e = env();
    for _ in 0..8 {
        e.api.fail_next("create node", connection_refused());
    }
    let start = tokio::time::Instant::now();
    assert!(
        e.manager
            .register_with_api_server(&CancellationToken::new())
            .await
    );
    let calls = e.api.take_calls();
    assert_eq!(calls.len(), 9);
    let mut last = start;
    let gaps: Vec<u128> = calls
        .iter()
        .map(|(_, t)| {
            let gap = (*t - last).as_millis();
            last = *t;
            gap
        })
        .collect();
    // The first try at once (upstream sleeps 100 ms first), then upstream's back-off.
    assert_eq!(gaps, [0, 100, 200, 400, 800, 1600, 3200, 6400, 7000]);
    // A forbidden create falls back to reading the Node (KubeletRegistrationGetOnExistsOnly off).
    let e = env();
    e.api.fail_next(
        "create node",
        ApiError::status(403, "Forbidden", "forbidden"),
    );
    assert!(
        !e.manager
            .try_register_with_api_server(&e.manager.initial_node().await)
            .await
    );
    assert_eq!(e.api.calls(), ["create node krs-unit", "get node krs-unit"]);
}

#[tokio::test(start_paused = true)]
async fn status_is_not_posted_before_registration() {
    let e = env();
    e.api.set_down(true);
    let cancel = CancellationToken::new();
    let task = tokio::spawn(e.manager.clone().run(cancel.clone()));
    tokio::time::sleep(Duration::from_secs(60)).await;
    cancel.cancel();
    task.await.unwrap();
    let calls = e.api.calls();
    assert!(calls.len() > 5);
    assert!(
        calls.iter().all(|c| c == "create node krs-unit"),
        "{calls:?}"
    );
}

async fn registered() -> Env {
    let e = env();
    e.manager.update_runtime_up().await;
    assert!(
        e.manager
            .register_with_api_server(&CancellationToken::new())
            .await
    );
    e.api.take_calls();
    e.source.take_events();
    e
}

#[tokio::test(start_paused = true)]
async fn status_is_patched_when_changed_or_when_the_report_frequency_passed() {
    let e = registered().await;
    // First update after a start: the report time is unknown, so it is sent.
    e.clock.step(Duration::from_secs(10));
    e.manager.update_node_status().await.unwrap();
    let calls: Vec<String> = e.api.take_calls().into_iter().map(|c| c.0).collect();
    assert_eq!(
        calls,
        ["get node krs-unit rv=0", "patch node status krs-unit"]
    );

    // Nothing changed, report frequency (5m) not reached: no patch.
    e.clock.step(Duration::from_secs(10));
    e.manager.update_node_status().await.unwrap();
    let calls: Vec<String> = e.api.take_calls().into_iter().map(|c| c.0).collect();
    assert_eq!(calls, ["get node krs-unit rv=0"]);

    // A change is sent at once: only what changed (and the heartbeats).
    e.source.set_network_not_ready(
        "NetworkPluginNotReady",
        "Network plugin returns error: cni plugin not initialized",
    );
    e.manager.update_runtime_up().await;
    e.clock.step(Duration::from_secs(10));
    e.manager.update_node_status().await.unwrap();
    let patches = e.api.patches();
    let last = patches.last().unwrap();
    let ready = last["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap();
    assert_eq!(ready["status"], "False");
    assert_eq!(ready["reason"], "KubeletNotReady");
    assert!(last["status"].get("capacity").is_none());
    assert_eq!(
        e.source.take_events(),
        ["Normal NodeNotReady: Node krs-unit status is now: NodeNotReady"]
    );
    let node = e.api.node(NODE).unwrap();
    assert_eq!(
        condition(&node, "Ready")
            .last_transition_time
            .as_ref()
            .unwrap()
            .0,
        "2026-11-30T12:00:30Z".parse::<Timestamp>().unwrap()
    );

    // Unchanged until the report frequency (the random delay is 0 here) has passed.
    let n = e.api.patches().len();
    e.clock.step(Duration::from_secs(299));
    e.manager.update_node_status().await.unwrap();
    assert_eq!(e.api.patches().len(), n);
    e.clock.step(Duration::from_secs(1));
    e.manager.update_node_status().await.unwrap();
    let patches = e.api.patches();
    assert_eq!(patches.len(), n + 1);
    // Only heartbeat times: the transition time stays.
    for c in patches[n]["status"]["conditions"].as_array().unwrap() {
        let keys: Vec<&String> = c.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["lastHeartbeatTime", "type"], "{c}");
    }
    let node = e.api.node(NODE).unwrap();
    assert_eq!(
        condition(&node, "Ready")
            .last_transition_time
            .as_ref()
            .unwrap()
            .0,
        "2026-11-30T12:00:30Z".parse::<Timestamp>().unwrap()
    );
    assert_eq!(
        condition(&node, "Ready")
            .last_heartbeat_time
            .as_ref()
            .unwrap()
            .0,
        "2026-11-30T12:05:30Z".parse::<Timestamp>().unwrap()
    );
}

#[tokio::test(start_paused = true)]
async fn status_update_retries_five_times_reading_from_the_server_after_the_first() {
    let e = registered().await;
    e.api
        .fail_next("get node krs-unit rv=0", connection_refused());
    e.api.fail_next(
        "patch node status",
        ApiError::status(409, "Conflict", "conflict"),
    );
    e.manager.update_node_status().await.unwrap();
    let calls: Vec<String> = e.api.take_calls().into_iter().map(|c| c.0).collect();
    assert_eq!(
        calls,
        [
            "get node krs-unit rv=0",
            "get node krs-unit",
            "patch node status krs-unit",
            "get node krs-unit",
            "patch node status krs-unit"
        ]
    );

    e.api.set_down(true);
    let err = e.manager.update_node_status().await.unwrap_err();
    assert_eq!(err.to_string(), "update node status exceeds retry count");
    let calls: Vec<String> = e.api.take_calls().into_iter().map(|c| c.0).collect();
    // The failures above make every first try read the API server itself for a while
    // (`FRESH_READS_AFTER_FAILURE`), not its cache.
    assert_eq!(calls, ["get node krs-unit"; 5]);
}

#[tokio::test(start_paused = true)]
async fn os_and_arch_labels_are_restored() {
    let e = registered().await;
    let mut node = e.api.node(NODE).unwrap();
    node.metadata
        .labels
        .as_mut()
        .unwrap()
        .remove("kubernetes.io/os");
    e.api.put_node(node);
    e.manager.update_node_status().await.unwrap();
    e.clock.step(Duration::from_secs(10));
    // Reported once after start; then a missing label counts as a change by itself.
    let mut node = e.api.node(NODE).unwrap();
    node.metadata
        .labels
        .as_mut()
        .unwrap()
        .remove("kubernetes.io/arch");
    e.api.put_node(node);
    e.manager.update_node_status().await.unwrap();
    let labels = e.api.node(NODE).unwrap().metadata.labels.unwrap();
    assert_eq!(labels["kubernetes.io/os"], "linux");
    assert_eq!(
        labels["kubernetes.io/arch"],
        kubelet_apimachinery::goruntime::go_arch()
    );
}

fn lease_controller(e: &Env) -> LeaseController {
    LeaseController::for_node(Arc::new(e.api.clone()), Arc::new(e.clock.clone()), NODE, 40)
}

#[tokio::test(start_paused = true)]
async fn lease_is_created_owned_by_the_node_and_renewed() {
    let e = registered().await;
    let mut lease = lease_controller(&e);
    assert_eq!(lease.renew_interval(), Duration::from_secs(10));
    let other =
        LeaseController::for_node(Arc::new(e.api.clone()), Arc::new(e.clock.clone()), NODE, 60);
    assert_eq!(other.renew_interval(), Duration::from_secs(15));
    lease.sync().await;
    let calls: Vec<String> = e.api.take_calls().into_iter().map(|c| c.0).collect();
    assert_eq!(
        calls,
        [
            "get lease kube-node-lease/krs-unit",
            "get node krs-unit",
            "create lease kube-node-lease/krs-unit"
        ]
    );
    let l = serde_json::to_value(e.api.lease("kube-node-lease", NODE).unwrap()).unwrap();
    assert_eq!(l["spec"]["holderIdentity"], NODE);
    assert_eq!(l["spec"]["leaseDurationSeconds"], 40);
    assert_eq!(l["spec"]["renewTime"], "2026-11-30T12:00:00.000000Z");
    assert_eq!(
        l["metadata"]["ownerReferences"],
        json!([{"apiVersion": "v1", "kind": "Node", "name": NODE, "uid": "uid-krs-unit"}])
    );

    // Renewal: an update from the latest lease, no read.
    e.clock.step(Duration::from_secs(10));
    lease.sync().await;
    let calls: Vec<String> = e.api.take_calls().into_iter().map(|c| c.0).collect();
    assert_eq!(calls, ["update lease kube-node-lease/krs-unit"]);
    let l = serde_json::to_value(e.api.lease("kube-node-lease", NODE).unwrap()).unwrap();
    assert_eq!(l["spec"]["renewTime"], "2026-11-30T12:00:10.000000Z");

    // Someone else wrote it: the conflict makes it read the lease again.
    let mut other = e.api.lease("kube-node-lease", NODE).unwrap();
    other.metadata.labels = Some(BTreeMap::from([("x".into(), "y".into())]));
    e.api.update_lease_as_other(other);
    lease.sync().await;
    let calls: Vec<String> = e.api.take_calls().into_iter().map(|c| c.0).collect();
    assert_eq!(
        calls,
        [
            "update lease kube-node-lease/krs-unit",
            "get lease kube-node-lease/krs-unit",
            "update lease kube-node-lease/krs-unit"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn lease_waits_for_the_node_and_backs_off_while_the_api_is_down() {
    let e = env();
    let mut lease = lease_controller(&e);
    // No Node yet: the lease is not created (it would have no owner).
    lease.sync().await;
    let calls: Vec<String> = e.api.take_calls().into_iter().map(|c| c.0).collect();
    assert_eq!(
        calls,
        ["get lease kube-node-lease/krs-unit", "get node krs-unit"]
    );
    assert!(e.api.lease("kube-node-lease", NODE).is_none());

    e.manager.update_runtime_up().await;
    assert!(
        e.manager
            .register_with_api_server(&CancellationToken::new())
            .await
    );
    e.api.take_calls();
    for _ in 0..7 {
        e.api.fail_next("get lease", connection_refused());
    }
    let start = tokio::time::Instant::now();
    lease.sync().await;
    let calls = e.api.take_calls();
    let gets: Vec<u128> = calls
        .iter()
        .filter(|(c, _)| c.starts_with("get lease"))
        .map(|(_, t)| (*t - start).as_millis())
        .collect();
    // Waits of 200 ms doubling to 7 s between tries.
    assert_eq!(gets, [0, 200, 600, 1400, 3000, 6200, 12600, 19600]);
    assert!(e.api.lease("kube-node-lease", NODE).is_some());
}

#[tokio::test(start_paused = true)]
async fn start_registers_posts_status_and_keeps_the_lease() {
    let e = env();
    let cancel = CancellationToken::new();
    let apis = crate::NodeApis {
        main: Arc::new(e.api.clone()),
        heartbeat: Arc::new(e.api.clone()),
        node_lister: None,
    };
    let mut tasks = tokio::task::JoinSet::new();
    let manager = crate::start(
        apis,
        Arc::new(e.source.clone()),
        Arc::new(host()),
        cfg(),
        Arc::new(e.clock.clone()),
        cancel.clone(),
        &mut tasks,
    );
    tokio::time::sleep(Duration::from_secs(25)).await;
    assert!(manager.registration_completed().await);
    cancel.cancel();
    while let Some(r) = tasks.join_next().await {
        r.unwrap();
    }
    let calls = e.api.calls();
    assert!(
        calls.contains(&"create node krs-unit".to_string()),
        "{calls:?}"
    );
    assert!(
        calls.contains(&"patch node status krs-unit".to_string()),
        "{calls:?}"
    );
    assert!(
        calls.contains(&"create lease kube-node-lease/krs-unit".to_string()),
        "{calls:?}"
    );
    assert!(
        calls.contains(&"update lease kube-node-lease/krs-unit".to_string()),
        "{calls:?}"
    );
    assert_eq!(
        condition(&e.api.node(NODE).unwrap(), "Ready").status,
        "True"
    );
}

#[tokio::test(start_paused = true)]
async fn register_node_false_only_updates_the_status() {
    let mut c = cfg();
    c.register_node = false;
    let e = env_with(c);
    e.manager.update_runtime_up().await;
    // Nobody registered it: the status update fails, nothing is created.
    assert!(e.manager.sync_node_status(&CancellationToken::new()).await);
    assert!(e.api.calls().iter().all(|c| c.starts_with("get node")));
    assert!(e.api.node(NODE).is_none());
    // Once the Node exists (made by someone else), its status is kept.
    e.api.put_node(Node {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(NODE.into()),
            ..Default::default()
        },
        ..Default::default()
    });
    assert!(e.manager.sync_node_status(&CancellationToken::new()).await);
    assert_eq!(
        condition(&e.api.node(NODE).unwrap(), "Ready").status,
        "True"
    );
    assert!(!e.api.calls().iter().any(|c| c.starts_with("create")));
}

/// How many status computations (`get node ... rv=0`) `run` makes in 95 s.
async fn status_rounds(frequency: Duration) -> usize {
    let mut c = cfg();
    c.node_status_update_frequency = frequency;
    let e = env_with(c);
    let cancel = CancellationToken::new();
    let task = tokio::spawn(e.manager.clone().run(cancel.clone()));
    tokio::time::sleep(Duration::from_secs(95)).await;
    cancel.cancel();
    task.await.unwrap();
    e.api.calls().iter().filter(|c| c.ends_with("rv=0")).count()
}

#[tokio::test(start_paused = true)]
async fn status_is_computed_every_node_status_update_frequency() {
    // Registered after 100 ms, then a round every period + up to 4 % jitter.
    assert_eq!(status_rounds(Duration::from_secs(10)).await, 10);
    assert_eq!(status_rounds(Duration::from_secs(30)).await, 4);
}

#[tokio::test(start_paused = true)]
async fn report_frequency_follows_the_configuration() {
    let mut c = cfg();
    c.node_status_report_frequency = Duration::from_secs(60);
    let e = env_with(c);
    e.manager.update_runtime_up().await;
    assert!(
        e.manager
            .register_with_api_server(&CancellationToken::new())
            .await
    );
    e.manager.update_node_status().await.unwrap();
    let n = e.api.patches().len();
    e.clock.step(Duration::from_secs(59));
    e.manager.update_node_status().await.unwrap();
    assert_eq!(e.api.patches().len(), n);
    e.clock.step(Duration::from_secs(1));
    e.manager.update_node_status().await.unwrap();
    assert_eq!(e.api.patches().len(), n + 1);
}

#[test]
fn controller_attach_detach_annotation_follows_the_configuration() {
    let mut c = cfg();
    c.enable_controller_attach_detach = false;
    let e = env_with(c);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let node = rt.block_on(e.manager.initial_node());
    assert!(node.metadata.annotations.is_none());
    // An existing node with the annotation loses it on re-registration.
    let mut existing = node.clone();
    existing.metadata.annotations = Some(BTreeMap::from([(
        crate::node_status::CONTROLLER_MANAGED_ATTACH_ANNOTATION.to_string(),
        "true".to_string(),
    )]));
    assert!(crate::node_status::reconcile_cmad_annotation_with_existing_node(&node, &mut existing));
    assert_eq!(existing.metadata.annotations, Some(BTreeMap::new()));
}

#[tokio::test(start_paused = true)]
async fn fast_status_update_posts_ready_as_soon_as_the_runtime_is() {
    let e = env();
    e.source
        .set_network_not_ready("NetworkPluginNotReady", "cni plugin not initialized");
    e.manager.update_runtime_up().await;
    assert!(
        e.manager
            .register_with_api_server(&CancellationToken::new())
            .await
    );
    assert_eq!(
        condition(&e.api.node(NODE).unwrap(), "Ready").status,
        "False"
    );
    let cancel = CancellationToken::new();
    let fast = tokio::spawn(e.manager.clone().fast_status_update_once(cancel.clone()));
    tokio::time::sleep(Duration::from_secs(3)).await;
    // Not ready: nothing sent, no API reads either.
    assert_eq!(e.api.calls(), ["create node krs-unit"]);
    assert!(!fast.is_finished());

    e.source.set_runtime_ready();
    let ready_at = tokio::time::Instant::now();
    fast.await.unwrap();
    assert!(ready_at.elapsed() <= Duration::from_millis(100));
    assert_eq!(
        e.api.calls(),
        ["create node krs-unit", "patch node status krs-unit"]
    );
    assert_eq!(
        condition(&e.api.node(NODE).unwrap(), "Ready").status,
        "True"
    );
    assert_eq!(
        e.source.take_events().last().unwrap(),
        "Normal NodeReady: Node krs-unit status is now: NodeReady"
    );
}

#[tokio::test(start_paused = true)]
async fn fast_status_update_gives_up_after_the_grace_period() {
    let e = env();
    e.source
        .set_network_not_ready("NetworkPluginNotReady", "cni plugin not initialized");
    e.manager.update_runtime_up().await;
    assert!(
        e.manager
            .register_with_api_server(&CancellationToken::new())
            .await
    );
    let start = tokio::time::Instant::now();
    e.manager
        .clone()
        .fast_status_update_once(CancellationToken::new())
        .await;
    assert!(start.elapsed() >= crate::node_status::NODE_READY_GRACE_PERIOD);
    assert_eq!(e.api.calls(), ["create node krs-unit"]);
}

#[tokio::test(start_paused = true)]
async fn the_node_informer_is_read_before_the_api_server() {
    let e = registered().await;
    let api = e.api.clone();
    let manager = second_manager(&e).with_node_lister(Arc::new(move || api.node(NODE)));
    manager.update_node_status().await.unwrap();
    let calls: Vec<String> = e.api.take_calls().into_iter().map(|c| c.0).collect();
    assert_eq!(calls, ["patch node status krs-unit"]);
    // Not in the informer (yet): the retry reads the API server.
    let manager = manager.with_node_lister(Arc::new(|| None));
    manager.update_node_status().await.unwrap();
    let calls: Vec<String> = e.api.take_calls().into_iter().map(|c| c.0).collect();
    assert_eq!(calls, ["get node krs-unit"]);
    // A Node the informer had not seen yet is no heartbeat failure: the next update reads
    // the informer again, not the API server.
    let api = e.api.clone();
    let manager = manager.with_node_lister(Arc::new(move || api.node(NODE)));
    e.clock.step(Duration::from_secs(10));
    manager.update_node_status().await.unwrap();
    let calls: Vec<String> = e.api.take_calls().into_iter().map(|c| c.0).collect();
    assert!(
        !calls.iter().any(|c| c.starts_with("get node")),
        "{calls:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn after_a_failed_update_the_api_server_is_read_not_the_stale_informer() {
    let e = registered().await;
    let api = e.api.clone();
    let manager = second_manager(&e);
    manager.update_node_status().await.unwrap();
    // The informer stays at the Ready node reported now (its watch has not caught up).
    let stale = api.node(NODE).unwrap();
    let manager = manager.with_node_lister(Arc::new(move || Some(stale.clone())));
    e.api.take_calls();

    // The API server went away: the lease could not be renewed (nothing changed in the
    // status, so no status update failed).
    manager.note_heartbeat_failure();
    // Meanwhile the node lifecycle controller set Ready=Unknown on the Node.
    let mut unknown = api.node(NODE).unwrap();
    for c in unknown
        .status
        .as_mut()
        .and_then(|s| s.conditions.as_mut())
        .unwrap()
    {
        c.status = "Unknown".into();
        c.reason = Some("NodeStatusUnknown".into());
    }
    e.api.put_node(unknown);
    e.api.take_calls();

    // The next update reads the Node itself, sees Unknown and reports its own Ready
    // condition again.
    e.clock.step(Duration::from_secs(10));
    manager.update_node_status().await.unwrap();
    let calls: Vec<String> = e.api.take_calls().into_iter().map(|c| c.0).collect();
    assert_eq!(calls, ["get node krs-unit", "patch node status krs-unit"]);
    let ready = api
        .node(NODE)
        .and_then(|n| n.status)
        .and_then(|s| s.conditions)
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .unwrap();
    assert_ne!(ready.status, "Unknown");

    // Two minutes later the informer is trusted again.
    e.clock.step(crate::node_status::FRESH_READS_AFTER_FAILURE);
    manager.update_node_status().await.unwrap();
    let calls: Vec<String> = e.api.take_calls().into_iter().map(|c| c.0).collect();
    assert!(
        !calls.iter().any(|c| c.starts_with("get node")),
        "{calls:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn node_features_follow_the_runtime_features() {
    let e = env();
    // containerd 1.6 reports no features: no `status.features`.
    e.manager.update_runtime_up().await;
    let node = e.manager.initial_node().await;
    assert_eq!(json_of(&node)["status"].get("features"), None);

    e.source
        .set_runtime_features(Some(kubelet_container::RuntimeFeatures {
            supplemental_groups_policy: true,
        }));
    e.manager.update_runtime_up().await;
    let node = e.manager.initial_node().await;
    assert_eq!(
        json_of(&node)["status"]["features"],
        serde_json::json!({"supplementalGroupsPolicy": true})
    );

    e.source
        .set_runtime_features(Some(kubelet_container::RuntimeFeatures::default()));
    e.manager.update_runtime_up().await;
    let node = e.manager.initial_node().await;
    assert_eq!(
        json_of(&node)["status"]["features"],
        serde_json::json!({"supplementalGroupsPolicy": false})
    );
}

#[test]
fn node_features_are_kept_while_the_runtime_reports_none() {
    let c = cfg();
    let mut node = Node {
        status: Some(k8s_openapi::api::core::v1::NodeStatus {
            features: Some(k8s_openapi::api::core::v1::NodeFeatures {
                supplemental_groups_policy: Some(true),
            }),
            ..Default::default()
        }),
        ..Node::default()
    };
    let before = node.clone();
    run_setter(&c, &inputs(start_time()), &host(), &mut node, |n, ctx| {
        crate::setters::node_features(n, ctx)
    });
    assert_eq!(node, before);
}

/// The eviction manager's pressure (the source's `pressure`) drives the three pressure
/// conditions, with upstream's reasons and events.
#[tokio::test(start_paused = true)]
async fn eviction_manager_pressure_reaches_the_conditions() {
    let e = env();
    e.manager.update_runtime_up().await;
    e.source.update(|s| {
        s.pressure = crate::NodePressure {
            memory: true,
            disk: true,
            pid: false,
        }
    });
    let node = e.manager.initial_node().await;
    assert_eq!(
        texts(condition(&node, "MemoryPressure")),
        (
            "True",
            "KubeletHasInsufficientMemory",
            "kubelet has insufficient memory available"
        )
    );
    assert_eq!(
        texts(condition(&node, "DiskPressure")),
        (
            "True",
            "KubeletHasDiskPressure",
            "kubelet has disk pressure"
        )
    );
    assert_eq!(condition(&node, "PIDPressure").status, "False");
    let events = e.source.take_events();
    assert!(
        events.contains(
            &"Normal NodeHasInsufficientMemory: Node krs-unit status is now: NodeHasInsufficientMemory"
                .to_string()
        ),
        "{events:?}"
    );
}

/// `localStorageCapacityIsolation: false`: upstream's `GetCapacity(false)` reports no
/// ephemeral-storage, so neither capacity nor allocatable has it (and Ready does not
/// require it).
#[test]
fn without_local_storage_capacity_isolation_no_ephemeral_storage_is_reported() {
    let mut c = cfg();
    c.local_storage_capacity_isolation = false;
    let mut node = Node::default();
    run_setter(&c, &inputs(start_time()), &host(), &mut node, |n, ctx| {
        setters::machine_info(n, ctx).unwrap();
    });
    let st = json_of(&node)["status"].clone();
    assert!(st["capacity"].get("ephemeral-storage").is_none(), "{st}");
    assert!(st["allocatable"].get("ephemeral-storage").is_none(), "{st}");
    assert!(st["capacity"].get("memory").is_some(), "{st}");
}
