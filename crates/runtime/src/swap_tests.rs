//! Ported from upstream `kuberuntime_container_linux_test.go`: `TestGetContainerSwapBehavior`
//! and `TestGenerateLinuxContainerResourcesWithSwap`.

#![allow(clippy::unwrap_used)]

use k8s_openapi::api::core::v1::{Container, Pod};

use super::*;
use crate::resources::{ResourceSettings, generate_linux_container_resources};

const GI: i64 = 1024 * 1024 * 1024;

fn settings(v2: bool, controller: bool, limited: bool) -> ResourceSettings {
    ResourceSettings {
        cgroup_v2: v2,
        single_process_oom_kill: true,
        memory_capacity: 40 * GI,
        swap: SwapSettings {
            controller_available: controller,
            limited_swap: limited,
            swap_capacity: 5 * GI,
        },
        ..ResourceSettings::default()
    }
}

/// A pod whose status says `qos` (upstream sets `Status.QOSClass`, which `GetPodQOS` reads
/// first) with containers of (request, limit) memory.
fn pod(qos: &str, containers: &[(&str, &str)], priority: Option<i32>) -> Pod {
    let containers: Vec<serde_json::Value> = containers
        .iter()
        .enumerate()
        .map(|(i, (req, lim))| {
            let mut r = serde_json::json!({});
            if !req.is_empty() {
                r["requests"] = serde_json::json!({"memory": req});
            }
            if !lim.is_empty() {
                r["limits"] = serde_json::json!({"memory": lim});
            }
            serde_json::json!({"name": format!("c{}", i + 1), "image": "i", "resources": r})
        })
        .collect();
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": "foo", "namespace": "bar", "uid": "12345678"},
        "spec": {"containers": containers, "priority": priority},
        "status": {"qosClass": qos},
    }))
    .unwrap()
}

fn first(p: &Pod) -> &Container {
    &p.spec.as_ref().unwrap().containers[0]
}

#[test]
fn get_container_swap_behavior() {
    let burstable = pod("Burstable", &[("1Gi", "2Gi")], None);
    let b = |s: &ResourceSettings, p: &Pod| container_swap_behavior(s, p, first(p));
    // User set NoSwap.
    assert_eq!(
        b(&settings(true, true, false), &burstable),
        SwapBehavior::NoSwap
    );
    // Swap controller unavailable.
    assert_eq!(
        b(&settings(true, false, true), &burstable),
        SwapBehavior::NoSwap
    );
    // cgroup v1.
    assert_eq!(
        b(&settings(false, true, true), &burstable),
        SwapBehavior::NoSwap
    );
    let s = settings(true, true, true);
    // BestEffort and Guaranteed pods.
    assert_eq!(
        b(&s, &pod("BestEffort", &[("1Gi", "2Gi")], None)),
        SwapBehavior::NoSwap
    );
    assert_eq!(
        b(&s, &pod("Guaranteed", &[("1Gi", "2Gi")], None)),
        SwapBehavior::NoSwap
    );
    // Zero memory, and a request equal to the limit.
    assert_eq!(
        b(&s, &pod("Burstable", &[("0", "0")], None)),
        SwapBehavior::NoSwap
    );
    assert_eq!(
        b(&s, &pod("Burstable", &[("100Mi", "100Mi")], None)),
        SwapBehavior::NoSwap
    );
    // A critical pod.
    let critical = pod("Burstable", &[("1Gi", "2Gi")], Some(2_000_000_000));
    assert_eq!(b(&s, &critical), SwapBehavior::NoSwap);
    // LimitedSwap on cgroup v2.
    assert_eq!(b(&s, &burstable), SwapBehavior::LimitedSwap);
}

#[test]
fn calc_swap_for_burstable_pods_is_proportional() {
    assert_eq!(
        calc_swap_for_burstable_pods(GI, 40 * GI, 5 * GI),
        Ok(GI / 8)
    );
    assert!(calc_swap_for_burstable_pods(GI, 0, 5 * GI).is_err());
    assert!(calc_swap_for_burstable_pods(41 * GI, 40 * GI, 5 * GI).is_err());
}

/// `TestGenerateLinuxContainerResourcesWithSwap`: what each container's resources carry.
#[test]
fn generate_linux_container_resources_with_swap() {
    let gen_all = |s: &ResourceSettings, p: &Pod| -> Vec<LinuxContainerResources> {
        p.spec
            .as_ref()
            .unwrap()
            .containers
            .iter()
            .map(|c| generate_linux_container_resources(s, p, c, false))
            .collect()
    };
    let swap_max = |r: &LinuxContainerResources| r.unified.get(CGROUP2_MAX_SWAP_FILENAME).cloned();
    // cgroup v1, LimitedSwap (refused at start, but here): NoSwap = memory+swap limit equal
    // to the memory limit; without a limit both stay 0.
    for qos in ["Burstable", "BestEffort"] {
        let p = pod(qos, &[("1Gi", "2Gi"), ("", "")], None);
        let r = gen_all(&settings(false, true, true), &p);
        assert_eq!(r[0].memory_swap_limit_in_bytes, 2 * GI);
        assert_eq!(r[0].memory_swap_limit_in_bytes, r[0].memory_limit_in_bytes);
        assert_eq!(r[1].memory_swap_limit_in_bytes, 0);
        assert!(swap_max(&r[0]).is_none());
    }
    // No swap controller on the node ("swap disabled on node"): nothing set, on v1 or v2.
    for v2 in [false, true] {
        let p = pod("Burstable", &[("1Gi", "2Gi")], None);
        let r = gen_all(&settings(v2, false, true), &p);
        assert_eq!(r[0].memory_swap_limit_in_bytes, 0);
        assert!(swap_max(&r[0]).is_none());
    }
    // cgroup v2, NoSwap (the default) and BestEffort/Guaranteed under LimitedSwap: 0.
    for (qos, limited) in [
        ("BestEffort", false),
        ("BestEffort", true),
        ("Guaranteed", true),
    ] {
        let p = pod(qos, &[("", ""), ("", "")], None);
        for r in gen_all(&settings(true, true, limited), &p) {
            assert_eq!(swap_max(&r).as_deref(), Some("0"), "{qos} {limited}");
            assert_eq!(r.memory_swap_limit_in_bytes, 0);
        }
    }
    // Burstable, LimitedSwap: a container with a request gets its share; one without
    // requests and a "guaranteed" container (request = limit) get none.
    let p = pod(
        "Burstable",
        &[("1Gi", "2Gi"), ("", ""), ("512Mi", "512Mi")],
        None,
    );
    let r = gen_all(&settings(true, true, true), &p);
    assert_eq!(swap_max(&r[0]), Some((GI / 8).to_string()));
    assert_eq!(swap_max(&r[1]).as_deref(), Some("0"));
    assert_eq!(swap_max(&r[2]).as_deref(), Some("0"));
    // A critical pod: no swap.
    let p = pod("Burstable", &[("1Gi", "2Gi")], Some(2_000_000_000));
    let r = gen_all(&settings(true, true, true), &p);
    assert_eq!(swap_max(&r[0]).as_deref(), Some("0"));
}
