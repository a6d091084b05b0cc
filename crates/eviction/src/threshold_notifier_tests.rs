//! Tests of `threshold_notifier.rs`, after upstream's `memory_threshold_notifier_test.go`
//! (with a recording fake factory), plus the real cgroup v1 notifier on this host.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kubelet_apimachinery::Quantity;
use kubelet_apimachinery::eviction::{Signal, Threshold, ThresholdOperator, ThresholdValue};
use kubelet_stats::types::{ContainerStats, MemoryStats, NodeStats, Summary};
use tokio::sync::mpsc;

use crate::threshold_notifier::*;

const GI: u64 = 1 << 30;

/// A recording fake factory: every armed notifier's `(path/attribute, threshold)`, how many
/// were stopped, and the last one's event channel (to play the kernel).
#[derive(Default)]
pub(crate) struct FakeNotifierFactory {
    armed: Mutex<Vec<(String, i64)>>,
    stopped: Arc<Mutex<usize>>,
    last_events: Mutex<Option<mpsc::UnboundedSender<()>>>,
    /// Fail `new_cgroup_notifier` with this.
    fail: Option<String>,
    /// `memory_cgroup_mount` answers none.
    no_mount: bool,
}

impl FakeNotifierFactory {
    pub(crate) fn armed(&self) -> Vec<(String, i64)> {
        self.armed.lock().unwrap().clone()
    }
    pub(crate) fn stopped(&self) -> usize {
        *self.stopped.lock().unwrap()
    }
    /// The kernel signals the last armed notifier.
    pub(crate) fn fire_last(&self) {
        self.last_events
            .lock()
            .unwrap()
            .as_ref()
            .unwrap()
            .send(())
            .unwrap();
    }
}

struct FakeCgroupNotifier(Arc<Mutex<usize>>);

impl CgroupNotifier for FakeCgroupNotifier {
    fn stop(&self) {
        *self.0.lock().unwrap() += 1;
    }
}

impl NotifierFactory for FakeNotifierFactory {
    fn memory_cgroup_mount(&self) -> Result<PathBuf, NotifierError> {
        if self.no_mount {
            return Err(NotifierError::NoMemoryMount);
        }
        Ok(PathBuf::from("/sys/fs/cgroup/memory"))
    }
    fn new_cgroup_notifier(
        &self,
        path: &Path,
        attribute: &str,
        threshold: i64,
        events: mpsc::UnboundedSender<()>,
    ) -> Result<Box<dyn CgroupNotifier>, NotifierError> {
        if let Some(e) = &self.fail {
            return Err(NotifierError::Other(e.clone()));
        }
        self.armed
            .lock()
            .unwrap()
            .push((path.join(attribute).display().to_string(), threshold));
        *self.last_events.lock().unwrap() = Some(events);
        Ok(Box::new(FakeCgroupNotifier(self.stopped.clone())))
    }
}

/// Upstream's `nodeSummary`: the memory figures on the node, or on the `pods` system
/// container for an allocatable threshold.
pub(crate) fn memory_summary(
    available: u64,
    working_set: u64,
    usage: u64,
    allocatable: bool,
) -> Summary {
    let memory = MemoryStats {
        available_bytes: Some(available),
        working_set_bytes: Some(working_set),
        usage_bytes: Some(usage),
        ..MemoryStats::default()
    };
    if allocatable {
        Summary {
            node: NodeStats {
                system_containers: vec![ContainerStats {
                    name: "pods".to_string(),
                    memory: Some(memory),
                    ..ContainerStats::default()
                }],
                ..NodeStats::default()
            },
            pods: Vec::new(),
        }
    } else {
        Summary {
            node: NodeStats {
                memory: Some(memory),
                ..NodeStats::default()
            },
            pods: Vec::new(),
        }
    }
}

fn threshold(signal: Signal, value: ThresholdValue, hard: bool) -> Threshold {
    Threshold {
        signal,
        operator: ThresholdOperator::LessThan,
        value,
        grace_period: if hard {
            kubelet_apimachinery::Duration::ZERO
        } else {
            kubelet_apimachinery::Duration::from_std(Duration::from_secs(60))
        },
        min_reclaim: None,
    }
}

fn qty(s: &str) -> ThresholdValue {
    ThresholdValue::Quantity(s.parse::<Quantity>().unwrap())
}

#[allow(clippy::cast_possible_wrap)]
fn gi(n: u64) -> i64 {
    (n * GI) as i64
}

/// Upstream `TestUpdateThreshold`: node level (available 3Gi, usage 2Gi, working set 1Gi,
/// threshold 1Gi → 4Gi on the memory mount), allocatable (4Gi, 3Gi, 1Gi → 6Gi on the pod
/// cgroup root) and the factory's error returned.
#[test]
fn update_threshold() {
    let cases = [
        (
            "node level threshold",
            Signal::MemoryAvailable,
            (3, 1, 2),
            None,
            "/sys/fs/cgroup/memory/memory.usage_in_bytes",
            gi(4),
        ),
        (
            "allocatable threshold",
            Signal::AllocatableMemoryAvailable,
            (4, 1, 3),
            None,
            "/sys/fs/cgroup/memory/kubepods/memory.usage_in_bytes",
            gi(6),
        ),
        (
            "error updating node level threshold",
            Signal::MemoryAvailable,
            (3, 1, 2),
            Some("unexpected error".to_string()),
            "",
            0,
        ),
    ];
    for (desc, signal, (avail, ws, usage), fail, path, expected) in cases {
        let factory = Arc::new(FakeNotifierFactory {
            fail: fail.clone(),
            ..FakeNotifierFactory::default()
        });
        let allocatable = signal == Signal::AllocatableMemoryAvailable;
        let n = MemoryThresholdNotifier::new(
            threshold(signal, qty("1Gi"), true),
            "/kubepods",
            factory.clone(),
        )
        .unwrap();
        let r = n.update_threshold(&memory_summary(
            avail * GI,
            ws * GI,
            usage * GI,
            allocatable,
        ));
        if fail.is_some() {
            assert_eq!(r.unwrap_err().to_string(), "unexpected error", "{desc}");
            assert!(factory.armed().is_empty(), "{desc}");
        } else {
            r.unwrap();
            assert_eq!(factory.armed(), [(path.to_string(), expected)], "{desc}");
        }
    }
}

/// A percentage is taken of capacity (available + working set): 10% of 4Gi is 409.6Mi,
/// truncated to bytes as upstream's `GetThresholdQuantity`.
#[test]
fn update_threshold_percentage() {
    let t = threshold(
        Signal::MemoryAvailable,
        ThresholdValue::Percentage(0.1),
        true,
    );
    let expected = gi(4) - (gi(4) as f64 * f64::from(0.1f32)) as i64 + gi(1);
    assert_eq!(memcg_threshold(&t, 2 * GI, GI, 3 * GI), expected);
}

/// Upstream `TestUpdateThresholdWithInvalidSummary`: an incomplete summary and a missing
/// `pods` system container are errors.
#[test]
fn update_threshold_with_invalid_summary() {
    let factory = Arc::new(FakeNotifierFactory::default());
    let node = MemoryThresholdNotifier::new(
        threshold(Signal::MemoryAvailable, qty("1Gi"), true),
        "/kubepods",
        factory.clone(),
    )
    .unwrap();
    let mut incomplete = Summary::default();
    incomplete.node.memory = Some(MemoryStats::default());
    assert!(matches!(
        node.update_threshold(&incomplete),
        Err(NotifierError::IncompleteSummary(_))
    ));
    let alloc = MemoryThresholdNotifier::new(
        threshold(Signal::AllocatableMemoryAvailable, qty("1Gi"), true),
        "/kubepods",
        factory.clone(),
    )
    .unwrap();
    incomplete.node.system_containers = vec![ContainerStats {
        name: "invalid".to_string(),
        ..ContainerStats::default()
    }];
    assert_eq!(
        alloc.update_threshold(&incomplete).unwrap_err().to_string(),
        "system container \"pods\" not found in metrics"
    );
    assert!(factory.armed().is_empty());
}

/// Re-arming stops the previous kernel notifier (upstream `m.notifier.Stop()`).
#[test]
fn update_threshold_replaces_the_notifier() {
    let factory = Arc::new(FakeNotifierFactory::default());
    let n = MemoryThresholdNotifier::new(
        threshold(Signal::MemoryAvailable, qty("1Gi"), true),
        "/",
        factory.clone(),
    )
    .unwrap();
    let s = memory_summary(3 * GI, GI, 2 * GI, false);
    n.update_threshold(&s).unwrap();
    n.update_threshold(&s).unwrap();
    assert_eq!(factory.armed().len(), 2);
    assert_eq!(factory.stopped(), 1);
}

/// No memory mount: the notifier cannot be created (upstream's error).
#[test]
fn no_memory_mount() {
    let factory = Arc::new(FakeNotifierFactory {
        no_mount: true,
        ..FakeNotifierFactory::default()
    });
    let err = MemoryThresholdNotifier::new(
        threshold(Signal::MemoryAvailable, qty("1Gi"), true),
        "/",
        factory,
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "memory cgroup mount point not found");
}

/// Upstream `TestStart` and `Description`: each event calls the handler with
/// `"eviction manager: <description> crossed"`.
#[tokio::test]
async fn start_calls_the_handler_on_events() {
    let factory = Arc::new(FakeNotifierFactory::default());
    let n = MemoryThresholdNotifier::new(
        threshold(Signal::AllocatableMemoryAvailable, qty("1Gi"), false),
        "/kubepods.slice",
        factory.clone(),
    )
    .unwrap();
    assert_eq!(
        n.description(),
        "soft allocatable memory eviction threshold"
    );
    assert_eq!(
        n.cgroup_path(),
        Path::new("/sys/fs/cgroup/memory/kubepods.slice")
    );
    n.update_threshold(&memory_summary(3 * GI, GI, 2 * GI, true))
        .unwrap();
    let seen = Mutex::new(Vec::new());
    for _ in 0..3 {
        factory.fire_last();
    }
    let _ = tokio::time::timeout(
        Duration::from_millis(200),
        n.start(|m| seen.lock().unwrap().push(m)),
    )
    .await;
    assert_eq!(
        *seen.lock().unwrap(),
        vec!["eviction manager: soft allocatable memory eviction threshold crossed".to_string(); 3]
    );
}

/// The v1 memory mount is found in a mountinfo table (a v2 mount and other controllers
/// skipped).
#[test]
fn memory_mount_from_mountinfo_table() {
    let table = "\
30 23 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n\
35 30 0:31 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw,nsdelegate\n\
36 30 0:32 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n\
37 30 0:33 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory\n";
    assert_eq!(
        memory_mount_from_mountinfo(table),
        Some(PathBuf::from("/sys/fs/cgroup/memory"))
    );
    assert_eq!(memory_mount_from_mountinfo(&table[..200]), None);
}

/// On cgroup v2 the real factory answers the unified mount and disabled notifiers
/// (upstream `disabledThresholdNotifier`): nothing is opened, nothing signals.
#[test]
fn cgroup_v2_notifiers_are_disabled() {
    let f = CgroupNotifierFactory { unified: true };
    assert_eq!(
        f.memory_cgroup_mount().unwrap(),
        PathBuf::from("/sys/fs/cgroup")
    );
    let (tx, mut rx) = mpsc::unbounded_channel();
    let n = f
        .new_cgroup_notifier(Path::new("/nonexistent"), MEMORY_USAGE_ATTRIBUTE, 1, tx)
        .unwrap();
    n.stop();
    assert!(rx.try_recv().is_err());
}

/// The real notifier on a cgroup v1 host (run as root): a child memory cgroup, armed 20 MiB
/// and 200 MiB above its usage; a process in it allocates 50 MiB (`tail` buffering a
/// 50 MiB line); the first one's event arrives, the second's does not. Skipped
/// (with a message) where there is no writable v1 memory hierarchy.
#[test]
fn real_cgroup_v1_notification_arrives() {
    let f = CgroupNotifierFactory { unified: false };
    let Ok(mount) = f.memory_cgroup_mount() else {
        eprintln!("skipped: no cgroup v1 memory hierarchy");
        return;
    };
    let cg = mount.join(format!("krs-memcg-test-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir(&cg) {
        eprintln!("skipped: cannot create {}: {e}", cg.display());
        return;
    }
    struct Cleanup(PathBuf, Option<std::process::Child>);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            if let Some(c) = &mut self.1 {
                let _ = c.kill();
                let _ = c.wait();
            }
            for _ in 0..50 {
                if std::fs::remove_dir(&self.0).is_ok() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            eprintln!("could not remove {}", self.0.display());
        }
    }
    let mut cleanup = Cleanup(cg.clone(), None);
    let usage: i64 = std::fs::read_to_string(cg.join(MEMORY_USAGE_ATTRIBUTE))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let notifier = f
        .new_cgroup_notifier(&cg, MEMORY_USAGE_ATTRIBUTE, usage + (20 << 20), tx)
        .unwrap();
    // A second notifier 200 MiB above: the 50 MiB never reach it.
    let (high_tx, mut high_rx) = mpsc::unbounded_channel();
    let high = f
        .new_cgroup_notifier(&cg, MEMORY_USAGE_ATTRIBUTE, usage + (200 << 20), high_tx)
        .unwrap();
    assert!(rx.try_recv().is_err(), "no event before the allocation");
    let procs = cg.join("cgroup.procs");
    let child = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(format!(
            "echo $$ > {} && head -c 50m /dev/zero | tail >/dev/null",
            procs.display()
        ))
        .spawn()
        .unwrap();
    cleanup.1 = Some(child);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        if rx.try_recv().is_ok() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no memcg event within 20s (usage now {:?})",
            std::fs::read_to_string(cg.join(MEMORY_USAGE_ATTRIBUTE))
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let peak: i64 = std::fs::read_to_string(cg.join("memory.max_usage_in_bytes"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(peak > usage + (20 << 20), "peak {peak}");
    assert!(
        high_rx.try_recv().is_err(),
        "the 200 MiB threshold was not crossed"
    );
    notifier.stop();
    high.stop();
    drop(notifier);
}
