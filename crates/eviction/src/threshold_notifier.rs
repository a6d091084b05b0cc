//! Upstream `pkg/kubelet/eviction/memory_threshold_notifier.go` (`memoryThresholdNotifier`,
//! `UpdateThreshold`), `memory_threshold_notifier_others.go` and
//! `threshold_notifier_linux.go` (`linuxCgroupNotifier`: an eventfd registered through the
//! cgroup v1 `cgroup.event_control` on `memory.usage_in_bytes`).
//!
//! With `kernelMemcgNotification`, every memory threshold (`memory.available` on the memory
//! hierarchy's root, `allocatableMemory.available` on the pod cgroup root) gets a
//! [`MemoryThresholdNotifier`]; after each synchronize (at most every
//! [`NOTIFIER_REFRESH_INTERVAL`]) it re-arms a kernel notifier at
//! `capacity − eviction threshold + inactive_file` of memcg usage; when the kernel signals,
//! the manager synchronizes at once. On cgroup v2 the notifier is disabled as upstream's
//! (`IsCgroup2UnifiedMode` → `disabledThresholdNotifier`): the manager polls.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kubelet_apimachinery::eviction::{Signal, Threshold};
use kubelet_apimachinery::{Format, Quantity};
use kubelet_stats::types::Summary;
use tokio::sync::mpsc;

use crate::helpers::SYSTEM_CONTAINER_PODS;

/// How often the manager re-arms the notifiers at most (upstream
/// `notifierRefreshInterval`).
pub const NOTIFIER_REFRESH_INTERVAL: Duration = Duration::from_secs(10);
/// The watched memcg attribute (upstream `memoryUsageAttribute`).
pub const MEMORY_USAGE_ATTRIBUTE: &str = "memory.usage_in_bytes";

/// Why a notifier could not be created or armed.
#[derive(Debug, thiserror::Error)]
pub enum NotifierError {
    /// A cgroup file could not be opened or written, or a syscall failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was done.
        op: &'static str,
        /// On what.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// No v1 memory hierarchy is mounted.
    #[error("memory cgroup mount point not found")]
    NoMemoryMount,
    /// The summary lacks the memory figures.
    #[error(
        "summary was incomplete.  Expected MemoryStats and all subfields to be non-nil, but got {0}"
    )]
    IncompleteSummary(String),
    /// The summary has no `pods` system container.
    #[error("system container {0:?} not found in metrics")]
    NoSystemContainer(&'static str),
    /// The fake's scripted failure.
    #[error("{0}")]
    Other(String),
}

/// A started kernel notifier (upstream `CgroupNotifier`); dropping it stops it too.
pub trait CgroupNotifier: Send + Sync {
    /// Stops it and releases its file descriptors.
    fn stop(&self);
}

/// Makes kernel notifiers (upstream `NotifierFactory` and `cm.GetCgroupSubsystems`'s
/// memory mount point).
pub trait NotifierFactory: Send + Sync {
    /// Where the memory controller is mounted (`MountPoints["memory"]`).
    fn memory_cgroup_mount(&self) -> Result<PathBuf, NotifierError>;
    /// Upstream `NewCgroupNotifier(path, attribute, threshold)` followed by its `Start`:
    /// sends on `events` every time the kernel signals.
    fn new_cgroup_notifier(
        &self,
        path: &Path,
        attribute: &str,
        threshold: i64,
        events: mpsc::UnboundedSender<()>,
    ) -> Result<Box<dyn CgroupNotifier>, NotifierError>;
}

/// The notifier for one memory eviction threshold (upstream `linuxMemoryThresholdNotifier`).
pub struct MemoryThresholdNotifier {
    threshold: Threshold,
    cgroup_path: PathBuf,
    factory: Arc<dyn NotifierFactory>,
    events_tx: mpsc::UnboundedSender<()>,
    events_rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<()>>,
    notifier: Mutex<Option<Box<dyn CgroupNotifier>>>,
}

impl std::fmt::Debug for MemoryThresholdNotifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryThresholdNotifier")
            .field("threshold", &self.threshold)
            .field("cgroup_path", &self.cgroup_path)
            .finish_non_exhaustive()
    }
}

fn is_allocatable(t: &Threshold) -> bool {
    t.signal == Signal::AllocatableMemoryAvailable
}

impl MemoryThresholdNotifier {
    /// Upstream `NewMemoryThresholdNotifier`: the memory mount point, plus `cgroup_root`
    /// (the pod cgroup root, e.g. `/kubepods` or `/kubepods.slice`) for the allocatable
    /// threshold. [`Self::update_threshold`] must be called before it notifies.
    pub fn new(
        threshold: Threshold,
        cgroup_root: &str,
        factory: Arc<dyn NotifierFactory>,
    ) -> Result<Self, NotifierError> {
        let mount = factory.memory_cgroup_mount()?;
        let mut path = mount.into_os_string();
        if path.is_empty() {
            return Err(NotifierError::NoMemoryMount);
        }
        if is_allocatable(&threshold) {
            path.push(cgroup_root);
        }
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        Ok(MemoryThresholdNotifier {
            threshold,
            cgroup_path: PathBuf::from(path),
            factory,
            events_tx,
            events_rx: tokio::sync::Mutex::new(events_rx),
            notifier: Mutex::new(None),
        })
    }

    /// The cgroup it watches.
    pub fn cgroup_path(&self) -> &Path {
        &self.cgroup_path
    }

    /// Upstream `UpdateThreshold`: arms a new kernel notifier at
    /// `capacity − eviction threshold + inactive_file` of memcg usage (so that it fires
    /// when the working set reaches `capacity − eviction threshold`), replacing the last.
    pub fn update_threshold(&self, summary: &Summary) -> Result<(), NotifierError> {
        let memory = if is_allocatable(&self.threshold) {
            summary
                .node
                .system_containers
                .iter()
                .find(|c| c.name == SYSTEM_CONTAINER_PODS)
                .ok_or(NotifierError::NoSystemContainer(SYSTEM_CONTAINER_PODS))?
                .memory
                .as_ref()
        } else {
            summary.node.memory.as_ref()
        };
        let (usage, working_set, available) = match memory {
            Some(m) => match (m.usage_bytes, m.working_set_bytes, m.available_bytes) {
                (Some(u), Some(w), Some(a)) => (u, w, a),
                _ => return Err(NotifierError::IncompleteSummary(format!("{m:?}"))),
            },
            None => return Err(NotifierError::IncompleteSummary("nil".into())),
        };
        let threshold = memcg_threshold(&self.threshold, usage, working_set, available);
        tracing::debug!(notifier = %self.description(), capacity = threshold, "Eviction manager: setting notifier to capacity");
        let mut slot = self.notifier.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(old) = slot.take() {
            old.stop();
        }
        let new = self.factory.new_cgroup_notifier(
            &self.cgroup_path,
            MEMORY_USAGE_ATTRIBUTE,
            threshold,
            self.events_tx.clone(),
        )?;
        *slot = Some(new);
        Ok(())
    }

    /// Upstream `Start`: calls `handler` with `"eviction manager: <description> crossed"`
    /// on every kernel event. Runs until dropped.
    pub async fn start(&self, handler: impl Fn(String)) {
        tracing::info!(notifier = %self.description(), "Eviction manager: created memoryThresholdNotifier");
        let mut rx = self.events_rx.lock().await;
        while rx.recv().await.is_some() {
            handler(format!("eviction manager: {} crossed", self.description()));
        }
    }

    /// Upstream `Description`: `hard memory eviction threshold`,
    /// `soft allocatable memory eviction threshold`, ...
    pub fn description(&self) -> String {
        let hard = if self.threshold.is_hard() {
            "hard "
        } else {
            "soft "
        };
        let allocatable = if is_allocatable(&self.threshold) {
            "allocatable "
        } else {
            ""
        };
        format!("{hard}{allocatable}memory eviction threshold")
    }
}

impl Drop for MemoryThresholdNotifier {
    fn drop(&mut self) {
        let slot = self
            .notifier
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = slot.take() {
            n.stop();
        }
    }
}

/// The memcg usage at which the working set reaches the eviction threshold:
/// `capacity − threshold + inactive_file`, with `inactive_file = usage − working_set` and
/// `capacity = available + working_set` (upstream's int64 arithmetic).
#[allow(clippy::cast_possible_wrap)]
pub fn memcg_threshold(threshold: &Threshold, usage: u64, working_set: u64, available: u64) -> i64 {
    let inactive_file = usage.wrapping_sub(working_set) as i64;
    let capacity = available.wrapping_add(working_set) as i64;
    let eviction = threshold
        .value
        .quantity_for_capacity(&Quantity::from_int(capacity, Format::BinarySI))
        .value();
    capacity.wrapping_sub(eviction).wrapping_add(inactive_file)
}

/// The real factory: cgroup v1 eventfd notifiers (upstream `CgroupNotifierFactory`); on
/// cgroup v2 every notifier is disabled (upstream `disabledThresholdNotifier`).
#[derive(Debug, Clone, Copy)]
pub struct CgroupNotifierFactory {
    /// The host runs the unified (v2) hierarchy.
    pub unified: bool,
}

impl NotifierFactory for CgroupNotifierFactory {
    fn memory_cgroup_mount(&self) -> Result<PathBuf, NotifierError> {
        if self.unified {
            return Ok(PathBuf::from("/sys/fs/cgroup"));
        }
        let path = Path::new("/proc/self/mountinfo");
        let table = std::fs::read_to_string(path).map_err(|source| NotifierError::Io {
            op: "read",
            path: path.into(),
            source,
        })?;
        memory_mount_from_mountinfo(&table).ok_or(NotifierError::NoMemoryMount)
    }

    fn new_cgroup_notifier(
        &self,
        path: &Path,
        attribute: &str,
        threshold: i64,
        events: mpsc::UnboundedSender<()>,
    ) -> Result<Box<dyn CgroupNotifier>, NotifierError> {
        if self.unified {
            return Ok(Box::new(DisabledThresholdNotifier));
        }
        Ok(Box::new(LinuxCgroupNotifier::new(
            path, attribute, threshold, events,
        )?))
    }
}

/// The mount point of the v1 `cgroup` filesystem with the `memory` controller in a
/// `/proc/self/mountinfo` table.
pub fn memory_mount_from_mountinfo(table: &str) -> Option<PathBuf> {
    table.lines().find_map(|line| {
        let (pre, post) = line.split_once(" - ")?;
        let mut post = post.split(' ');
        let fstype = post.next()?;
        let _source = post.next()?;
        let super_opts = post.next()?;
        if fstype != "cgroup" || !super_opts.split(',').any(|o| o == "memory") {
            return None;
        }
        let mount_point = pre.split(' ').nth(4)?;
        Some(PathBuf::from(mount_point.replace("\\040", " ")))
    })
}

/// Upstream `disabledThresholdNotifier` (cgroup v2): never signals.
#[derive(Debug)]
pub struct DisabledThresholdNotifier;

impl CgroupNotifier for DisabledThresholdNotifier {
    fn stop(&self) {}
}

fn last_os_error(op: &'static str, path: &Path) -> NotifierError {
    NotifierError::Io {
        op,
        path: path.into(),
        source: std::io::Error::last_os_error(),
    }
}

#[allow(unsafe_code)]
fn new_eventfd(path: &Path) -> Result<File, NotifierError> {
    // SAFETY: eventfd takes no pointers; a non-negative result is a new fd we own.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(last_os_error("eventfd for", path));
    }
    // SAFETY: `fd` is a freshly created descriptor owned by nobody else.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// `poll(2)` on the two descriptors until one is readable (or hung up); EINTR retried.
#[allow(unsafe_code)]
fn poll_two(a: &File, b: &File) -> std::io::Result<(i16, i16)> {
    loop {
        let mut fds = [
            libc::pollfd {
                fd: a.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: b.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: `fds` is a valid array of 2 pollfd for the duration of the call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if n >= 0 {
            return Ok((fds[0].revents, fds[1].revents));
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Upstream `linuxCgroupNotifier`: an eventfd registered with
/// `cgroup.event_control` as `"<eventfd> <fd of attribute> <threshold>"`, waited on by a
/// dedicated thread that sends on `events` at every signal; [`CgroupNotifier::stop`] (or
/// drop) wakes the thread through a second eventfd and closes both.
#[derive(Debug)]
pub struct LinuxCgroupNotifier {
    stop: Arc<File>,
}

impl LinuxCgroupNotifier {
    /// Upstream `NewCgroupNotifier` and `Start`.
    pub fn new(
        path: &Path,
        attribute: &str,
        threshold: i64,
        events: mpsc::UnboundedSender<()>,
    ) -> Result<Self, NotifierError> {
        let watch_path = path.join(attribute);
        let watch = File::open(&watch_path).map_err(|source| NotifierError::Io {
            op: "open",
            path: watch_path.clone(),
            source,
        })?;
        let control_path = path.join("cgroup.event_control");
        let mut control = OpenOptions::new()
            .write(true)
            .open(&control_path)
            .map_err(|source| NotifierError::Io {
                op: "open",
                path: control_path.clone(),
                source,
            })?;
        let event = new_eventfd(path)?;
        let stop = Arc::new(new_eventfd(path)?);
        let config = format!("{} {} {threshold}", event.as_raw_fd(), watch.as_raw_fd());
        control
            .write_all(config.as_bytes())
            .map_err(|source| NotifierError::Io {
                op: "write",
                path: control_path,
                source,
            })?;
        let thread_stop = stop.clone();
        std::thread::Builder::new()
            .name("memcg-notifier".into())
            .spawn(move || wait_loop(event, &thread_stop, &events))
            .map_err(|source| NotifierError::Io {
                op: "spawn notifier thread for",
                path: path.into(),
                source,
            })?;
        Ok(LinuxCgroupNotifier { stop })
    }
}

/// Waits for the kernel's signal (or the stop signal); reads the eventfd counter and
/// sends one event per wake-up.
fn wait_loop(mut event: File, stop: &File, events: &mpsc::UnboundedSender<()>) {
    loop {
        let (ev, st) = match poll_two(&event, stop) {
            Ok(r) => r,
            Err(err) => {
                tracing::info!(err = %err, "Eviction manager: error while waiting for memcg events");
                return;
            }
        };
        if st != 0 {
            return;
        }
        if ev & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
            let mut buf = [0u8; 8];
            if let Err(err) = event.read_exact(&mut buf) {
                tracing::info!(err = %err, "Eviction manager: error reading memcg events");
                return;
            }
            if events.send(()).is_err() {
                return;
            }
        }
    }
}

impl CgroupNotifier for LinuxCgroupNotifier {
    fn stop(&self) {
        // Makes the stop eventfd readable; a failure (counter overflow after repeated
        // stops) leaves it readable too.
        let _ = (&*self.stop).write_all(&1u64.to_ne_bytes());
    }
}

impl Drop for LinuxCgroupNotifier {
    fn drop(&mut self) {
        self.stop();
    }
}
