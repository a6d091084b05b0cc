//! `kubelet-nodestatus` against the real kube-apiserver of `hack/cluster-up.sh`, with a
//! node's own credentials (`system:node:krs-t-nodestatus-<pid>`, so `Node` authorization
//! and `NodeRestriction` apply): registration creates the Node with its labels, taints,
//! capacity, allocatable and nodeInfo; a second registration reconciles what changed; the
//! status patch lands (Ready, then NotReady with upstream's message); the Lease is created
//! owned by the Node and renewed. The machine and runtime are the recording fakes; the
//! clock is a fake clock (no wall-clock timing). The Node and Lease are deleted at the
//! end. Ignored only when built with `KRS_SKIP_CLUSTER_TESTS=1`.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};
use kubelet_apimachinery::CpuSet;
use kubelet_client::KubeletClients;
use kubelet_cm::{MachineInfo, NodeConfig, NodeConfigInput};
use kubelet_container::clock::FakeClock;
use kubelet_e2e::cluster;
use kubelet_nodestatus::{
    FakeHostNetwork, FakeNodeStatusSource, KubeNodeApi, LeaseController, NodeApi, NodeStatusConfig,
    NodeStatusManager,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const NODE_IP: &str = "198.18.254.77";

fn machine() -> MachineInfo {
    MachineInfo {
        online_cpus: CpuSet::parse("0-3").unwrap(),
        memory_capacity: 8 << 30,
        machine_id: "krs-e2e-machine".into(),
        boot_id: "krs-e2e-boot".into(),
        system_uuid: "krs-e2e-uuid".into(),
        kernel_version: "6.1.0-e2e".into(),
        os_image: "kubelet-rs e2e".into(),
    }
}

fn node_config(m: &MachineInfo) -> NodeConfig {
    let kube = BTreeMap::from([("cpu".to_string(), "500m".to_string())]);
    let sys = BTreeMap::from([("memory".to_string(), "1Gi".to_string())]);
    let hard = kubelet_apimachinery::default_eviction_hard();
    let e = BTreeMap::new();
    NodeConfig::parse(
        NodeConfigInput {
            reserved_system_cpus: "",
            kube_reserved: &kube,
            system_reserved: &sys,
            eviction_hard: &hard,
            ignore_eviction_for_allocatable: false,
            qos_reserved: &e,
            enforce_node_allocatable: &[],
        },
        m,
    )
    .unwrap()
}

fn status_config(name: &str) -> NodeStatusConfig {
    let mut c = kubelet_config::new_kubelet_configuration();
    c.register_with_taints = vec![kubelet_config::types::Taint {
        key: "example.com/krs-e2e".into(),
        value: "nodestatus".into(),
        effect: "NoSchedule".into(),
        time_added: None,
    }];
    c.node_lease_duration_seconds = 40;
    let flags = kubelet_config::KubeletFlags {
        node_labels: BTreeMap::from([("example.com/rack".to_string(), "r1".to_string())]),
        ..Default::default()
    };
    let m = machine();
    NodeStatusConfig::new(
        &c,
        &flags,
        name,
        name,
        vec![NODE_IP.parse().unwrap()],
        node_config(&m),
    )
}

struct Setup {
    name: String,
    admin: kube::Client,
    heartbeat: Arc<dyn NodeApi>,
    main: Arc<dyn NodeApi>,
    source: FakeNodeStatusSource,
    clock: FakeClock,
}

impl Setup {
    fn manager(&self) -> NodeStatusManager {
        NodeStatusManager::new(
            status_config(&self.name),
            self.main.clone(),
            self.heartbeat.clone(),
            Arc::new(self.source.clone()),
            Arc::new(FakeHostNetwork {
                interface_addrs: vec![NODE_IP.parse().unwrap()],
                ..Default::default()
            }),
            Arc::new(self.clock.clone()),
        )
    }

    /// A new manager (a kubelet start) that registered the node.
    async fn registered_manager(&self) -> NodeStatusManager {
        let manager = self.manager();
        manager.update_runtime_up().await;
        assert!(
            manager
                .register_with_api_server(&CancellationToken::new())
                .await
        );
        manager
    }

    async fn node(&self) -> Node {
        Api::<Node>::all(self.admin.clone())
            .get(&self.name)
            .await
            .unwrap()
    }

    async fn cleanup(&self) {
        let dp = DeleteParams::default();
        let _ = Api::<Lease>::namespaced(self.admin.clone(), "kube-node-lease")
            .delete(&self.name, &dp)
            .await;
        let _ = Api::<Node>::all(self.admin.clone())
            .delete(&self.name, &dp)
            .await;
    }
}

/// Deletes the Node and Lease even when an assertion failed.
struct Cleanup(String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let Ok(c) = cluster::ensure() else { return };
        let _ = c.kubectl_output(["delete", "node", &self.0, "--ignore-not-found"]);
        let _ = c.kubectl_output([
            "-n",
            "kube-node-lease",
            "delete",
            "lease",
            &self.0,
            "--ignore-not-found",
        ]);
    }
}

fn ready(node: &Node) -> (String, String, String) {
    let c = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
        .unwrap();
    (
        c.status.clone(),
        c.reason.clone().unwrap_or_default(),
        c.message.clone().unwrap_or_default(),
    )
}

async fn setup() -> Result<Setup, Box<dyn std::error::Error>> {
    let c = cluster::ensure()?;
    let name = format!("krs-t-nodestatus-{}", std::process::id());
    let files = c.node_files(&name, NODE_IP)?;
    let cfg = kubelet_config::new_kubelet_configuration();
    let clients = KubeletClients::build(&files.kubeconfig, &cfg).await?;
    let admin = KubeletClients::build(&c.kubeconfig, &cfg).await?.main;
    Ok(Setup {
        name,
        admin,
        heartbeat: Arc::new(KubeNodeApi::new(clients.heartbeat)),
        main: Arc::new(KubeNodeApi::new(clients.main)),
        source: FakeNodeStatusSource::new(machine()),
        clock: FakeClock::new(jiff::Timestamp::now()),
    })
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[tokio::test]
async fn node_registers_reports_status_and_keeps_its_lease() -> TestResult {
    let s = setup().await?;
    let _cleanup = Cleanup(s.name.clone());
    s.cleanup().await;
    scenario(&s).await
}

async fn scenario(s: &Setup) -> TestResult {
    // Registration with the node's own identity.
    s.registered_manager().await;
    let node = s.node().await;
    let v = serde_json::to_value(&node)?;
    let labels = &v["metadata"]["labels"];
    assert_eq!(labels["kubernetes.io/hostname"], s.name.as_str());
    assert_eq!(labels["kubernetes.io/os"], "linux");
    assert_eq!(labels["beta.kubernetes.io/os"], "linux");
    assert_eq!(
        labels["kubernetes.io/arch"],
        kubelet_apimachinery::goruntime::go_arch()
    );
    assert_eq!(labels["example.com/rack"], "r1");
    assert_eq!(
        v["metadata"]["annotations"]["volumes.kubernetes.io/controller-managed-attach-detach"],
        "true"
    );
    // (The apiserver's `TaintNodesByCondition` admission adds `node.kubernetes.io/not-ready`.)
    assert!(
        v["spec"]["taints"].as_array().unwrap().contains(
            &json!({"key": "example.com/krs-e2e", "value": "nodestatus", "effect": "NoSchedule"})
        ),
        "{}",
        v["spec"]
    );
    let st = &v["status"];
    assert_eq!(
        st["capacity"],
        json!({"cpu": "4", "ephemeral-storage": "100Gi", "hugepages-2Mi": "0", "memory": "8Gi", "pods": "110"})
    );
    // cpu − 500m; memory − 1Gi − 100Mi (default evictionHard); ephemeral-storage − 10 %
    // (float32 as upstream); imagefs/nodefs.inodesFree take nothing.
    assert_eq!(st["allocatable"]["cpu"], "3500m");
    assert_eq!(st["allocatable"]["memory"], "7068Mi");
    assert_eq!(st["allocatable"]["pods"], "110");
    assert_eq!(st["allocatable"]["ephemeral-storage"], "96636764k");
    assert_eq!(st["nodeInfo"]["machineID"], "krs-e2e-machine");
    assert_eq!(st["nodeInfo"]["systemUUID"], "krs-e2e-uuid");
    assert_eq!(st["nodeInfo"]["bootID"], "krs-e2e-boot");
    assert_eq!(
        st["nodeInfo"]["containerRuntimeVersion"],
        "containerd://2.1.4"
    );
    assert_eq!(
        st["nodeInfo"]["kubeletVersion"],
        kubelet_config::version::git_version().as_str()
    );
    assert_eq!(st["daemonEndpoints"]["kubeletEndpoint"]["Port"], 10250);
    assert_eq!(
        st["addresses"],
        json!([{"type": "InternalIP", "address": NODE_IP}, {"type": "Hostname", "address": s.name.as_str()}])
    );
    assert_eq!(ready(&node).0, "True");

    // Someone changed the default labels and dropped the annotation: a restarted kubelet
    // (a new manager) puts them back.
    Api::<Node>::all(s.admin.clone())
        .patch(
            &s.name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {
                "labels": {"kubernetes.io/hostname": "elsewhere"},
                "annotations": {"volumes.kubernetes.io/controller-managed-attach-detach": null}
            }})),
        )
        .await?;
    let manager = s.registered_manager().await;
    let v = serde_json::to_value(s.node().await)?;
    assert_eq!(
        v["metadata"]["labels"]["kubernetes.io/hostname"],
        s.name.as_str()
    );
    assert_eq!(
        v["metadata"]["annotations"]["volumes.kubernetes.io/controller-managed-attach-detach"],
        "true"
    );

    // Status: the runtime's network goes down, the patch carries NotReady.
    s.source
        .set_network_not_ready("NetworkPluginNotReady", "cni plugin not initialized");
    manager.update_runtime_up().await;
    s.clock.step(Duration::from_secs(10));
    manager.update_node_status().await?;
    assert_eq!(
        ready(&s.node().await),
        (
            "False".to_string(),
            "KubeletNotReady".to_string(),
            "container runtime network not ready: NetworkReady=false \
             reason:NetworkPluginNotReady message:cni plugin not initialized"
                .to_string()
        )
    );

    // The lease: created owned by the Node, then renewed.
    let uid = s.node().await.metadata.uid.unwrap();
    let mut lease =
        LeaseController::for_node(s.heartbeat.clone(), Arc::new(s.clock.clone()), &s.name, 40);
    lease.sync().await;
    let leases = Api::<Lease>::namespaced(s.admin.clone(), "kube-node-lease");
    let l = serde_json::to_value(leases.get(&s.name).await?)?;
    assert_eq!(l["spec"]["holderIdentity"], s.name.as_str());
    assert_eq!(l["spec"]["leaseDurationSeconds"], 40);
    assert_eq!(
        l["metadata"]["ownerReferences"],
        json!([{"apiVersion": "v1", "kind": "Node", "name": s.name.as_str(), "uid": uid}])
    );
    let first = l["spec"]["renewTime"].clone();
    s.clock.step(Duration::from_secs(10));
    lease.sync().await;
    let l = serde_json::to_value(leases.get(&s.name).await?)?;
    assert_ne!(l["spec"]["renewTime"], first);
    Ok(())
}
