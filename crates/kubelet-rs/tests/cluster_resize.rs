//! In-place pod resize (`InPlacePodVerticalScaling`, GA at 1.35) on a kubelet-rs node of
//! the real control plane (`hack/cluster-up.sh`, `hack/kubelet-rs-node-up.sh`), with the
//! scenarios of upstream's conformance specs "[sig-node] Pod InPlace Resize Container …"
//! (`test/e2e/common/node/pod_resize.go`) and the checks of their framework
//! (`test/e2e/common/node/framework/podresize`, `…/cgroups`): after a `pods/resize` patch
//! (or a replace through the subresource) every container's `status.resources` equals its
//! new spec, `allocatedResources` its requests, the pod is Ready without `PodResizePending`
//! / `PodResizeInProgress`, the container restart counts follow `resizePolicy`, and the
//! cgroup v1 files read inside each container (`cpu.shares`, `cpu.cfs_quota_us`,
//! `memory.limit_in_bytes`) hold the values upstream expects. Then the rollback, and a
//! resize beyond the node's capacity, which stays `PodResizePending`/`Infeasible`.
//!
//! Node `krs-t-resize-rs` (198.18.255.73), namespace `t-resize`. Built as ignored with
//! `KRS_SKIP_CLUSTER_TESTS=1` or `KRS_SKIP_RUNTIME_TESTS=1`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use kubelet_e2e::cluster::{self, Cluster, NodeKubelet, NodeSpec};
use serde_json::{Map, Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const NODE: &str = "krs-t-resize-rs";
const NODE_IP: &str = "198.18.255.73";
const NS: &str = "t-resize";
const TAINT_KEY: &str = "kubelet-rs.test/resize";
const BUSYBOX: &str = "docker.io/library/busybox:1.36";

/// kubectl's stdout; fails the test (with kubectl's output) when it fails.
fn ok_stdout(c: &Cluster, args: &[&str]) -> String {
    c.kubectl_output(args).unwrap()
}

fn kubectl_stdin(c: &Cluster, args: &[&str], input: &str) -> Output {
    let mut child = c
        .kubectl()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn delete_namespace(c: &Cluster) {
    let args = ["delete", "namespace", NS, "--ignore-not-found", "--wait"];
    let _ = c.kubectl().args(args).arg("--timeout=120s").output();
}

struct Cleanup<'a>(&'a Cluster);

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        delete_namespace(self.0);
    }
}

/// A container's resources as the test writes them: `(cpu request, cpu limit, memory
/// request, memory limit)`, empty for none (upstream `cgroups.ContainerResources`).
#[derive(Clone, Copy, Debug)]
struct Res(&'static str, &'static str, &'static str, &'static str);

impl Res {
    /// `ResourceRequirements()`: absent lists stay absent.
    fn requirements(self) -> Value {
        let list = |cpu: &str, mem: &str| {
            let mut m = Map::new();
            if !cpu.is_empty() {
                m.insert("cpu".into(), json!(cpu));
            }
            if !mem.is_empty() {
                m.insert("memory".into(), json!(mem));
            }
            (!m.is_empty()).then_some(Value::Object(m))
        };
        let mut r = Map::new();
        if let Some(l) = list(self.1, self.3) {
            r.insert("limits".into(), l);
        }
        if let Some(l) = list(self.0, self.2) {
            r.insert("requests".into(), l);
        }
        Value::Object(r)
    }
}

struct Ctr {
    name: &'static str,
    res: Res,
    /// `(cpu policy, memory policy)`.
    policy: Option<(&'static str, &'static str)>,
}

fn ctr(name: &'static str, res: Res) -> Ctr {
    Ctr {
        name,
        res,
        policy: None,
    }
}

fn pod(name: &str, ctrs: &[Ctr]) -> Value {
    let containers: Vec<Value> = ctrs
        .iter()
        .map(|c| {
            let mut v = json!({
                "name": c.name,
                "image": BUSYBOX,
                "command": ["/bin/sh"],
                "args": ["-c", "grep Cpus_allowed_list /proc/self/status | cut -f2 && sleep 1d"],
                "resources": c.res.requirements(),
            });
            if let Some((cpu, mem)) = c.policy {
                v["resizePolicy"] = json!([
                    {"resourceName": "cpu", "restartPolicy": cpu},
                    {"resourceName": "memory", "restartPolicy": mem},
                ]);
            }
            v
        })
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeName": NODE,
            "restartPolicy": "OnFailure",
            "terminationGracePeriodSeconds": 0,
            "automountServiceAccountToken": false,
            "tolerations": [
                {"key": TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
            ],
            "containers": containers,
        },
    })
}

/// The strategic merge patch `MakeResizePatch` sends: each container's new resources.
fn resize_patch(ctrs: &[(&str, Res)]) -> String {
    let containers: Vec<Value> = ctrs
        .iter()
        .map(|(n, r)| json!({"name": n, "resources": r.requirements()}))
        .collect();
    json!({"spec": {"containers": containers}}).to_string()
}

/// `kubectl patch pod <name> --subresource resize` with [`resize_patch`].
fn patch_resize(c: &Cluster, name: &str, to: &[(&str, Res)]) {
    let patch = resize_patch(to);
    let args = [
        "-n",
        NS,
        "patch",
        "pod",
        name,
        "--subresource",
        "resize",
        "-p",
    ];
    ok_stdout(c, &[&args[..], &[patch.as_str()]].concat());
}

/// A quantity as a number: milli-units for CPU, bytes for memory (enough for the values
/// used here: `Nm`, `N`, `NMi`, `NKi`, `NGi`).
fn quantity(q: &str) -> i64 {
    let (num, mult) = if let Some(n) = q.strip_suffix('m') {
        (n, 1)
    } else if let Some(n) = q.strip_suffix("Ki") {
        (n, 1 << 10)
    } else if let Some(n) = q.strip_suffix("Mi") {
        (n, 1 << 20)
    } else if let Some(n) = q.strip_suffix("Gi") {
        (n, 1 << 30)
    } else {
        (q, 1)
    };
    num.parse::<i64>().unwrap() * mult
}

/// A resource list as numbers (`cpu` in milli-CPUs, `memory` in bytes); `None` when absent.
fn numbers(v: &Value) -> Option<Vec<(String, i64)>> {
    let m = v.as_object()?;
    Some(
        m.iter()
            .map(|(k, q)| {
                let s = q.as_str().unwrap();
                let n = if k == "cpu" && !s.ends_with('m') {
                    quantity(s) * 1000
                } else {
                    quantity(s)
                };
                (k.clone(), n)
            })
            .collect(),
    )
}

fn get_pod(c: &Cluster, name: &str) -> Value {
    serde_json::from_str(&ok_stdout(c, &["-n", NS, "get", "pod", name, "-o", "json"])).unwrap()
}

fn container_status<'a>(p: &'a Value, name: &str) -> &'a Value {
    p["status"]["containerStatuses"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["name"] == name))
        .unwrap_or(&Value::Null)
}

/// What `WaitForPodResizeActuation` waits for, as a list of differences (empty: done).
fn resize_differences(p: &Value, want: &[(&str, Res)]) -> Vec<String> {
    let mut diffs = Vec::new();
    for (name, res) in want {
        let cs = container_status(p, name);
        let r = res.requirements();
        if numbers(&cs["allocatedResources"]) != numbers(&r["requests"]) {
            diffs.push(format!(
                "{name}: allocatedResources {} != {}",
                cs["allocatedResources"], r["requests"]
            ));
        }
        if numbers(&cs["resources"]["requests"]) != numbers(&r["requests"])
            || numbers(&cs["resources"]["limits"]) != numbers(&r["limits"])
        {
            diffs.push(format!("{name}: resources {} != {r}", cs["resources"]));
        }
    }
    for cond in p["status"]["conditions"].as_array().into_iter().flatten() {
        if cond["type"] == "PodResizePending" || cond["type"] == "PodResizeInProgress" {
            diffs.push(format!("condition {cond}"));
        }
    }
    let ready = p["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True");
    if !ready {
        diffs.push("pod not ready".into());
    }
    diffs
}

fn wait_resized(c: &Cluster, name: &str, want: &[(&str, Res)]) -> Value {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let p = get_pod(c, name);
        let diffs = resize_differences(&p, want);
        if diffs.is_empty() {
            return p;
        }
        assert!(
            Instant::now() < deadline,
            "pod {name} not resized: {diffs:?}\n{p:#}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// `head -n 1 <file>` in the container.
fn cgroup_value(c: &Cluster, pod: &str, container: &str, file: &str) -> String {
    ok_stdout(
        c,
        &[
            "-n", NS, "exec", pod, "-c", container, "--", "head", "-n", "1", file,
        ],
    )
    .trim()
    .to_string()
}

/// The pod cgroup's values on the host (cgroup v1), as upstream's
/// `ResourceConfigForPod` gives them: shares from the summed CPU requests, CFS quota from
/// the summed CPU limits when every container has one (else -1), the summed memory limits
/// when every container has one (else unlimited). Polled: the pod cgroup is written in
/// the same sync as the containers, a moment after the status may show them resized.
fn check_pod_cgroup(c: &Cluster, pod: &str, want: &[(&str, Res)]) {
    let q = |s: &str| if s.is_empty() { 0 } else { quantity(s) };
    let cpu_req: i64 = want
        .iter()
        .map(|(_, r)| if r.0.is_empty() { q(r.1) } else { q(r.0) })
        .sum();
    let all = |f: fn(&Res) -> &str| want.iter().all(|(_, r)| !f(r).is_empty());
    let cpu_lim: i64 = want.iter().map(|(_, r)| q(r.1)).sum();
    let mem_lim: i64 = want.iter().map(|(_, r)| q(r.3)).sum();
    let guaranteed = want.iter().all(|(_, r)| {
        !r.1.is_empty()
            && !r.3.is_empty()
            && (r.0.is_empty() || q(r.0) == q(r.1))
            && (r.2.is_empty() || q(r.2) == q(r.3))
    });
    let best_effort = want
        .iter()
        .all(|(_, r)| r.0.is_empty() && r.1.is_empty() && r.2.is_empty() && r.3.is_empty());
    let qos = if guaranteed {
        ""
    } else if best_effort {
        "besteffort/"
    } else {
        "burstable/"
    };
    let shares = if best_effort {
        2
    } else {
        (cpu_req * 1024 / 1000).max(2)
    };
    let quota = if all(|r| r.1) {
        (cpu_lim * 100).max(1000)
    } else {
        -1
    };
    let uid = get_pod(c, pod)["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    // The node's cgroupRoot is `/kubelet-rs-test/<node>` (`hack/lib/cluster-node.sh`).
    let dir = |ctrl: &str| {
        PathBuf::from(format!(
            "/sys/fs/cgroup/{ctrl}/kubelet-rs-test/{NODE}/kubepods/{qos}pod{uid}"
        ))
    };
    let read = |ctrl: &str, file: &str| {
        std::fs::read_to_string(dir(ctrl).join(file))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|e| format!("{file}: {e}"))
    };
    let want_values = [
        shares.to_string(),
        quota.to_string(),
        if all(|r| r.3) {
            mem_lim.to_string()
        } else {
            "unlimited".into()
        },
    ];
    let unlimited = std::fs::read_to_string("/sys/fs/cgroup/memory/memory.limit_in_bytes")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mem = read("memory", "memory.limit_in_bytes");
        let got = [
            read("cpu", "cpu.shares"),
            read("cpu", "cpu.cfs_quota_us"),
            if mem == unlimited {
                "unlimited".into()
            } else {
                mem
            },
        ];
        if got == want_values {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "pod cgroup {} of {pod}: (cpu.shares, cpu.cfs_quota_us, memory.limit_in_bytes) = {got:?}, want {want_values:?}",
            dir("cpu").display()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `VerifyContainerCgroupValues` on cgroup v1, and the pod cgroup ([`check_pod_cgroup`]).
fn check_cgroups(c: &Cluster, pod: &str, want: &[(&str, Res)]) {
    check_pod_cgroup(c, pod, want);
    for (name, res) in want {
        let mem_limit = if res.3.is_empty() { 0 } else { quantity(res.3) };
        if mem_limit != 0 {
            let got = cgroup_value(c, pod, name, "/sys/fs/cgroup/memory/memory.limit_in_bytes");
            assert_eq!(got, mem_limit.to_string(), "{name} memory.limit_in_bytes");
        }
        let cpu_limit = if res.1.is_empty() { 0 } else { quantity(res.1) };
        let quota = if cpu_limit == 0 {
            -1
        } else {
            (cpu_limit * 100).max(1000)
        };
        let mut quotas = vec![quota.to_string()];
        if cpu_limit % 10 != 0 && quota != -1 {
            quotas.push(((cpu_limit / 10 + 1) * 10 * 100).max(1000).to_string());
        }
        let got = cgroup_value(c, pod, name, "/sys/fs/cgroup/cpu/cpu.cfs_quota_us");
        assert!(
            quotas.contains(&got),
            "{name} cpu.cfs_quota_us {got} not in {quotas:?}"
        );
        let cpu_request = if res.0.is_empty() {
            cpu_limit
        } else {
            quantity(res.0)
        };
        let shares = (cpu_request * 1024 / 1000).max(2);
        let got = cgroup_value(c, pod, name, "/sys/fs/cgroup/cpu/cpu.shares");
        assert_eq!(got, shares.to_string(), "{name} cpu.shares");
    }
}

fn restart_counts(p: &Value, names: &[&str]) -> Vec<i64> {
    names
        .iter()
        .map(|n| {
            container_status(p, n)["restartCount"]
                .as_i64()
                .unwrap_or(-1)
        })
        .collect()
}

fn create_running(c: &Cluster, name: &str, ctrs: &[Ctr]) -> Value {
    let out = kubectl_stdin(
        c,
        &["-n", NS, "create", "-f", "-"],
        &pod(name, ctrs).to_string(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want: Vec<(&str, Res)> = ctrs.iter().map(|c| (c.name, c.res)).collect();
    let p = wait_resized(c, name, &want);
    check_cgroups(c, name, &want);
    p
}

/// `doPatchAndRollback`: patch, verify, (roll back, verify), with the restart counts each
/// step must add.
fn patch_and_verify(c: &Cluster, name: &str, to: &[(&str, Res)], extra_restarts: &[i64]) {
    let names: Vec<&str> = to.iter().map(|(n, _)| *n).collect();
    let before = restart_counts(&get_pod(c, name), &names);
    patch_resize(c, name, to);
    let p = wait_resized(c, name, to);
    let want: Vec<i64> = before
        .iter()
        .zip(extra_restarts)
        .map(|(b, e)| b + e)
        .collect();
    assert_eq!(restart_counts(&p, &names), want, "restart counts of {name}");
    check_cgroups(c, name, to);
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[test]
fn pods_are_resized_in_place_as_the_conformance_specs_expect() -> TestResult {
    let c = cluster::ensure()?;
    let mut spec = NodeSpec::new(
        NodeKubelet::KubeletRs(PathBuf::from(env!("CARGO_BIN_EXE_kubelet-rs"))),
        NODE,
        NODE_IP,
    );
    spec.taints = vec![format!("{TAINT_KEY}=:NoSchedule")];
    let node = c.start_node(spec)?;
    delete_namespace(&c);
    ok_stdout(&c, &["create", "namespace", NS]);
    let cleanup = Cleanup(&c);

    // Guaranteed, 3 containers: increase c1, c2, decrease c3 (net increase), roll back.
    let orig = [
        ("c1", Res("20m", "20m", "20Mi", "20Mi")),
        ("c2", Res("22m", "22m", "22Mi", "22Mi")),
        ("c3", Res("24m", "24m", "24Mi", "24Mi")),
    ];
    let ctrs: Vec<Ctr> = orig.iter().map(|(n, r)| ctr(n, *r)).collect();
    create_running(&c, "guaranteed", &ctrs);
    let resized = [
        ("c1", Res("25m", "25m", "25Mi", "25Mi")),
        ("c2", Res("27m", "27m", "27Mi", "27Mi")),
        ("c3", Res("19m", "19m", "19Mi", "19Mi")),
    ];
    patch_and_verify(&c, "guaranteed", &resized, &[0, 0, 0]);
    patch_and_verify(&c, "guaranteed", &orig, &[0, 0, 0]);
    // Mixed: CPU up on c1, c3, down on c2; memory up on c2, c3.
    let mixed = [
        ("c1", Res("25m", "25m", "20Mi", "20Mi")),
        ("c2", Res("17m", "17m", "27Mi", "27Mi")),
        ("c3", Res("29m", "29m", "29Mi", "29Mi")),
    ];
    patch_and_verify(&c, "guaranteed", &mixed, &[0, 0, 0]);

    // Burstable, 5 containers, adding limits and requests (no rollback upstream).
    let orig = [
        ("c1", Res("20m", "", "", "")),
        ("c2", Res("", "", "20Mi", "")),
        ("c3", Res("20m", "", "20Mi", "")),
        ("c4", Res("20m", "", "", "")),
        ("c5", Res("", "", "20Mi", "")),
    ];
    let ctrs: Vec<Ctr> = orig.iter().map(|(n, r)| ctr(n, *r)).collect();
    create_running(&c, "burstable", &ctrs);
    let resized = [
        ("c1", Res("25m", "35m", "", "")),
        ("c2", Res("", "", "15Mi", "35Mi")),
        ("c3", Res("20m", "", "15Mi", "")),
        ("c4", Res("15m", "", "20Mi", "")),
        ("c5", Res("20m", "", "25Mi", "")),
    ];
    patch_and_verify(&c, "burstable", &resized, &[0, 0, 0, 0, 0]);

    // Equivalents: below the runtime's resolution the allocated values are reported.
    let orig = [("c1", Res("2m", "10m", "", ""))];
    create_running(&c, "equivalents", &[ctr("c1", orig[0].1)]);
    patch_and_verify(&c, "equivalents", &[("c1", Res("1m", "5m", "", ""))], &[0]);
    patch_and_verify(&c, "equivalents", &orig, &[0]);

    // resizePolicy: a CPU change restarts a container whose CPU policy is RestartContainer;
    // a memory change does not.
    let orig = Res("20m", "30m", "20Mi", "30Mi");
    create_running(
        &c,
        "policy",
        &[Ctr {
            name: "c1",
            res: orig,
            policy: Some(("RestartContainer", "NotRequired")),
        }],
    );
    patch_and_verify(
        &c,
        "policy",
        &[("c1", Res("25m", "35m", "20Mi", "30Mi"))],
        &[1],
    );
    patch_and_verify(
        &c,
        "policy",
        &[("c1", Res("25m", "35m", "25Mi", "35Mi"))],
        &[0],
    );

    // The replace endpoint, then the pod read through the resize subresource.
    create_running(&c, "replace", &[ctr("c1", Res("20m", "", "20Mi", ""))]);
    let mut p = get_pod(&c, "replace");
    assert_eq!(p["metadata"]["generation"], 1);
    p["spec"]["containers"][0]["resources"] = Res("25m", "", "25Mi", "").requirements();
    let out = kubectl_stdin(
        &c,
        &["-n", NS, "replace", "--subresource", "resize", "-f", "-"],
        &p.to_string(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = wait_resized(&c, "replace", &[("c1", Res("25m", "", "25Mi", ""))]);
    assert_eq!(p["metadata"]["generation"], 2);
    assert_eq!(p["status"]["observedGeneration"], 2);
    check_cgroups(&c, "replace", &[("c1", Res("25m", "", "25Mi", ""))]);

    // Beyond the node's capacity: pending, infeasible, and the containers keep running with
    // their allocated resources.
    patch_resize(&c, "replace", &[("c1", Res("1000", "", "25Mi", ""))]);
    let deadline = Instant::now() + Duration::from_secs(60);
    let pending = loop {
        let p = get_pod(&c, "replace");
        let cond = p["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "PodResizePending")
            .cloned();
        if let Some(cond) = cond {
            break (p, cond);
        }
        assert!(Instant::now() < deadline, "no PodResizePending: {p:#}");
        std::thread::sleep(Duration::from_millis(500));
    };
    let (p, cond) = pending;
    assert_eq!(cond["reason"], "Infeasible", "{cond}");
    assert!(
        cond["message"]
            .as_str()
            .unwrap()
            .starts_with("Node didn't have enough capacity: cpu, requested: 1000000, capacity: "),
        "{cond}"
    );
    assert_eq!(cond["observedGeneration"], 3, "{cond}");
    let cs = container_status(&p, "c1");
    assert_eq!(
        numbers(&cs["allocatedResources"]),
        numbers(&json!({"cpu": "25m", "memory": "25Mi"}))
    );
    let events = ok_stdout(
        &c,
        &[
            "-n",
            NS,
            "get",
            "events",
            "--field-selector",
            "involvedObject.name=replace",
            "-o",
            "jsonpath={range .items[*]}{.reason}{\"\\n\"}{end}",
        ],
    );
    for reason in ["ResizeStarted", "ResizeCompleted", "ResizeInfeasible"] {
        assert!(
            events.lines().any(|l| l == reason),
            "no {reason} event: {events}"
        );
    }
    // Reverting the pending resize clears the condition.
    patch_resize(&c, "replace", &[("c1", Res("25m", "", "25Mi", ""))]);
    wait_resized(&c, "replace", &[("c1", Res("25m", "", "25Mi", ""))]);

    drop(cleanup);
    node.stop()?;
    Ok(())
}
