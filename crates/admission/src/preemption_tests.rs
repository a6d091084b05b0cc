//! Upstream `preemption_test.go` (`TestGetPodsToPreempt`), and the standalone outcome:
//! static pods preempt nothing of equal priority.

use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

use super::*;

fn pod(name: &str, requests: Value, limits: Value, priority: Option<i32>) -> Pod {
    let mut resources = json!({});
    if !requests.is_null() {
        resources["requests"] = requests;
    }
    if !limits.is_null() {
        resources["limits"] = limits;
    }
    let v = json!({"metadata": {"name": name, "uid": name},
                   "spec": {"priority": priority, "containers": [{"name": "c", "image": "i", "resources": resources}]}});
    match serde_json::from_value(v) {
        Ok(p) => p,
        Err(e) => unreachable!("{e}"),
    }
}

fn req(cpu: &str, mem: &str) -> Value {
    json!({"cpu": cpu, "memory": mem})
}

struct Pods {
    best_effort: Pod,
    burstable: Pod,
    high_burstable: Pod,
    guaranteed: Pod,
    high_guaranteed: Pod,
    cluster_critical: Pod,
    node_critical: Pod,
}

fn pods() -> Pods {
    Pods {
        best_effort: pod("bestEffort", Value::Null, Value::Null, None),
        burstable: pod("burstable", req("100m", "100Mi"), Value::Null, None),
        high_burstable: pod(
            "high-request-burstable",
            req("300m", "300Mi"),
            Value::Null,
            None,
        ),
        guaranteed: pod(
            "guaranteed",
            req("100m", "100Mi"),
            req("100m", "100Mi"),
            None,
        ),
        high_guaranteed: pod(
            "high-request-guaranteed",
            req("300m", "300Mi"),
            req("300m", "300Mi"),
            None,
        ),
        cluster_critical: pod(
            "cluster-critical",
            req("100m", "100Mi"),
            Value::Null,
            Some(SYSTEM_CRITICAL_PRIORITY),
        ),
        node_critical: pod(
            "node-critical",
            req("100m", "100Mi"),
            Value::Null,
            Some(SYSTEM_CRITICAL_PRIORITY + 100),
        ),
    }
}

/// Upstream `getAdmissionRequirementList(cpu m, memory Mi, pods)`.
fn reqs(cpu: i64, mem: i64, pods: i64) -> Vec<AdmissionRequirement> {
    let mut r = Vec::new();
    if cpu > 0 {
        r.push(AdmissionRequirement {
            resource: "cpu",
            quantity: cpu,
        });
    }
    if mem > 0 {
        r.push(AdmissionRequirement {
            resource: "memory",
            quantity: mem << 20,
        });
    }
    if pods > 0 {
        r.push(AdmissionRequirement {
            resource: "pods",
            quantity: pods,
        });
    }
    r
}

/// The chosen pods' names, sorted (upstream's `podListEqual` ignores order).
fn names(r: Result<Vec<&Pod>, String>) -> Result<Vec<String>, String> {
    r.map(|v| {
        let mut n: Vec<String> = v
            .iter()
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect();
        n.sort();
        n
    })
}

#[test]
fn get_pods_to_preempt_as_upstream() {
    let p = pods();
    let cc = &p.cluster_critical;
    let ok = |v: &[&str]| Ok(v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert_eq!(names(get_pods_to_preempt(cc, &[], &reqs(0, 0, 0))), ok(&[]));
    assert!(get_pods_to_preempt(cc, &[], &reqs(0, 0, 1)).is_err());
    assert_eq!(
        names(get_pods_to_preempt(cc, &[&p.burstable], &reqs(100, 100, 1))),
        ok(&["burstable"])
    );
    assert!(get_pods_to_preempt(cc, &[&p.burstable], &reqs(200, 200, 2)).is_err());
    assert_eq!(
        names(get_pods_to_preempt(
            cc,
            &[&p.burstable, &p.best_effort],
            &reqs(0, 0, 1)
        )),
        ok(&["bestEffort"])
    );
    assert_eq!(
        names(get_pods_to_preempt(
            cc,
            &[&p.burstable, &p.guaranteed],
            &reqs(0, 0, 1)
        )),
        ok(&["burstable"])
    );
    assert_eq!(
        names(get_pods_to_preempt(
            cc,
            &[&p.best_effort, &p.high_burstable, &p.burstable],
            &reqs(100, 100, 0)
        )),
        ok(&["burstable"])
    );
    assert_eq!(
        names(get_pods_to_preempt(
            cc,
            &[&p.best_effort, &p.burstable, &p.high_burstable],
            &reqs(150, 150, 0)
        )),
        ok(&["high-request-burstable"])
    );
    let five = [
        &p.best_effort,
        &p.burstable,
        &p.high_burstable,
        &p.guaranteed,
        &p.high_guaranteed,
    ];
    assert_eq!(
        names(get_pods_to_preempt(cc, &five, &reqs(350, 350, 0))),
        ok(&["burstable", "high-request-burstable"])
    );
    assert_eq!(
        names(get_pods_to_preempt(cc, &five, &reqs(0, 550, 0))),
        ok(&["high-request-burstable", "high-request-guaranteed"])
    );
    assert_eq!(
        names(get_pods_to_preempt(
            &p.node_critical,
            &[cc],
            &reqs(100, 0, 0)
        )),
        ok(&["cluster-critical"])
    );
    assert!(get_pods_to_preempt(cc, &[&p.node_critical], &reqs(100, 0, 0)).is_err());
}

#[test]
fn error_text_is_upstreams() {
    let p = pods();
    let e = get_pods_to_preempt(&p.cluster_critical, &[], &reqs(5, 0, 1)).err();
    assert_eq!(
        e.as_deref(),
        Some(
            "no set of running pods found to reclaim resources: [(res: cpu, q: 5), (res: pods, q: 1), ]"
        )
    );
}

fn static_pod(name: &str, priority: Option<i32>) -> Pod {
    let mut p = pod(name, Value::Null, Value::Null, priority);
    p.metadata.annotations = Some(
        [(
            "kubernetes.io/config.source".to_string(),
            "file".to_string(),
        )]
        .into_iter()
        .collect(),
    );
    p
}

#[test]
fn static_pods_are_critical_and_preempt_only_lower_priorities() {
    let out_of_pods = || {
        vec![PredicateFailure::InsufficientResource {
            resource: "pods",
            requested: 1,
            used: 2,
            capacity: 2,
        }]
    };
    let (a, b) = (static_pod("a", None), static_pod("b", None));
    assert!(is_critical_pod(&a));
    assert_eq!(
        handle_admission_failure(&static_pod("c", None), out_of_pods(), &[&a, &b]),
        FailureOutcome::Error(
            "preemption: error finding a set of pods to preempt: no set of running pods found to reclaim resources: [(res: pods, q: 1), ]".into()
        )
    );
    let (low, high) = (static_pod("low", Some(5)), static_pod("high", Some(50)));
    let FailureOutcome::Preempt(victims) =
        handle_admission_failure(&static_pod("c", Some(10)), out_of_pods(), &[&low, &high])
    else {
        unreachable!("a higher priority preempts");
    };
    assert_eq!(victims.len(), 1);
    assert_eq!(victims[0].metadata.name.as_deref(), Some("low"));
    // A reason that is not a resource shortage stands.
    let mut failures = out_of_pods();
    failures.push(PredicateFailure::Predicate {
        name: "NodePorts",
        desc: "x",
    });
    assert_eq!(
        handle_admission_failure(&a, failures, &[&b]),
        FailureOutcome::Reject(vec![PredicateFailure::Predicate {
            name: "NodePorts",
            desc: "x"
        }])
    );
    // Pods that are not critical keep every reason.
    let api = pod("api", Value::Null, Value::Null, None);
    assert_eq!(
        handle_admission_failure(&api, out_of_pods(), &[&a]),
        FailureOutcome::Reject(out_of_pods())
    );
}
