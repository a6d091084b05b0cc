//! User namespaces for pods (upstream `pkg/kubelet/userns/userns_manager.go`
//! `GetOrCreateUserNamespaceMappings`, `kubelet_getters.go` `HandlerSupportsUserNamespaces`),
//! with the `UserNamespacesSupport` gate at its 1.35 default (on).
//!
//! A pod without `hostUsers`, or with `hostUsers: true`, runs in the node's user namespace
//! (CRI `UserNamespace{mode: NODE}`). `hostUsers: false` needs the runtime handler to
//! report `user_namespaces` in the CRI `Status` response's `runtime_handlers`; a runtime
//! that reports no handlers (containerd before 2.0) or a handler without the feature gets
//! upstream's error, so the sandbox is never created and the pod stays Pending with a
//! `FailedCreatePodSandBox` warning, as upstream.
//!
//! On a supporting runtime, [`UsernsManager`] (upstream's `UsernsManager`) gives each such
//! pod `idsPerPod` (default 65536) host IDs from the kubelet's range (`getsubids kubelet`
//! when the `kubelet` user exists, else every ID from `idsPerPod` up: [`get_kubelet_mappings`]),
//! picked by upstream's random-start scan over a bitmap of blocks, and persists the choice
//! as JSON in `<root-dir>/pods/<uid>/userns` (upstream's file format: a pod directory written
//! by either kubelet is read by the other). The allocations on disk are recorded at start
//! ([`UsernsManager::new`], upstream `MakeUserNsManager`); upstream releases a pod's range
//! in `syncTerminatedPod` ([`UsernsManager::release`]) and reconciles them in
//! `HandlePodCleanups` ([`UsernsManager::cleanup_orphaned_pod_userns_allocations`]).
//! The runtime manager uses the manager given by
//! `KubeGenericRuntimeManager::with_userns_manager`; without one such a pod fails with
//! [`UsernsError::NoAllocator`].
//!
//! Differences from upstream: the `userns` file is written through [`OsInterface`] as a
//! temporary file renamed into place, without upstream's fsync of the pod directory; the
//! `kubelet` user is looked up in `/etc/passwd` only (Go's `user.Lookup` without cgo).

use crate::os::OsInterface;
use k8s_openapi::api::core::v1::Pod;
use kubelet_cri::v1::{NamespaceMode, RuntimeHandler, UserNamespace};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use thiserror::Error;

/// Why a pod cannot get its user namespace, or the manager cannot start.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum UsernsError {
    /// Upstream's refusal when the handler lacks the feature (with the lookup error, when
    /// the runtime does not know the handler at all).
    #[error("{}{}", unsupported_message(handler), cause.as_ref().map(|c| format!(": {c}")).unwrap_or_default())]
    Unsupported {
        /// The runtime handler (empty: the runtime's default).
        handler: String,
        /// `the handler "x" is not known`.
        cause: Option<String>,
    },
    /// The runtime could run it, but the kubelet set no [`UsernsManager`] on the runtime
    /// manager (upstream always has one while `UserNamespacesSupport` is on).
    #[error(
        "can't set `spec.hostUsers: false`: the kubelet has no user namespace manager \
         (KubeGenericRuntimeManager::with_userns_manager was not called)"
    )]
    NoAllocator,
    /// `getKubeletMappings` failed (`kubelet mappings: ...`).
    #[error("kubelet mappings: {0}")]
    KubeletMappings(String),
    /// `MakeUserNsManager`'s checks of the kubelet's range against `idsPerPod` / `maxPods`.
    #[error("{0}")]
    Config(String),
    /// `read pods from disk: ...` at start.
    #[error("read pods from disk: {0}")]
    ReadPodsFromDisk(String),
    /// `record pod mappings for existing pod "uid": ...` at start.
    #[error("record pod mappings for existing pod {uid:?}: {source}")]
    RecordExisting {
        /// The pod.
        uid: String,
        /// Why.
        source: Box<UsernsError>,
    },
    /// `allocateOne` with every block in use.
    #[error("could not find an empty slot to allocate a user namespace")]
    Exhausted,
    /// `record` / `parseUserNsFileAndRecord` refusing a range or a file.
    #[error("{0}")]
    Invalid(String),
    /// Reading or writing the `userns` file.
    #[error("{0}")]
    Io(String),
    /// `GetOrCreateUserNamespaceMappings` with an existing, unusable file.
    #[error("user namespace: {0}")]
    Existing(Box<UsernsError>),
    /// `GetOrCreateUserNamespaceMappings` failing to allocate.
    #[error("create user namespace: {0}")]
    Create(Box<UsernsError>),
}

fn unsupported_message(handler: &str) -> String {
    if handler.is_empty() {
        "can't set `spec.hostUsers: false`, runtime does not support user namespaces".into()
    } else {
        format!(
            "can't set `spec.hostUsers: false`, RuntimeClass handler {handler:?} does not support user namespaces"
        )
    }
}

/// `HandlerSupportsUserNamespaces` over the handlers of the runtime's `Status` response.
///
/// # Errors
/// `the handler "x" is not known` when the runtime lists handlers but not this one.
pub fn handler_supports_user_namespaces(
    handlers: &[RuntimeHandler],
    handler: &str,
) -> Result<bool, String> {
    if handlers.is_empty() {
        // "The slice is empty if the runtime is old and doesn't support this message."
        return Ok(false);
    }
    handlers
        .iter()
        .find(|h| h.name == handler)
        .map(|h| h.features.is_some_and(|f| f.user_namespaces))
        .ok_or_else(|| format!("the handler {handler:?} is not known"))
}

/// The pod asks for its own user namespace (`hostUsers: false`).
pub fn wants_pod_user_namespace(pod: &Pod) -> bool {
    pod.spec.as_ref().and_then(|s| s.host_users) == Some(false)
}

/// The node's user namespace (pods without `hostUsers: false`).
pub fn node_user_namespace() -> UserNamespace {
    UserNamespace {
        mode: NamespaceMode::Node as i32,
        ..UserNamespace::default()
    }
}

/// `GetOrCreateUserNamespaceMappings` for `pod` under `runtime_handler`, given the
/// runtime's handlers (only read for `hostUsers: false`) and the kubelet's manager.
///
/// # Errors
/// See [`UsernsError`].
pub fn user_namespace_for_pod(
    pod: &Pod,
    runtime_handler: &str,
    handlers: &[RuntimeHandler],
    manager: Option<&UsernsManager>,
) -> Result<UserNamespace, UsernsError> {
    if !wants_pod_user_namespace(pod) {
        return Ok(node_user_namespace());
    }
    match handler_supports_user_namespaces(handlers, runtime_handler) {
        Ok(true) => {}
        Ok(false) => {
            return Err(UsernsError::Unsupported {
                handler: runtime_handler.into(),
                cause: None,
            });
        }
        Err(cause) => {
            return Err(UsernsError::Unsupported {
                handler: runtime_handler.into(),
                cause: Some(cause),
            });
        }
    }
    let manager = manager.ok_or(UsernsError::NoAllocator)?;
    let uid = pod
        .metadata
        .uid
        .as_deref()
        .filter(|u| !u.is_empty())
        .ok_or_else(|| {
            UsernsError::Create(Box::new(UsernsError::Invalid("pod has no UID".into())))
        })?;
    let ns = manager.get_or_create(uid)?;
    let map = |m: &[IdMapping]| {
        m.iter()
            .map(|m| kubelet_cri::v1::IdMapping {
                host_id: m.host_id,
                container_id: m.container_id,
                length: m.length,
            })
            .collect()
    };
    Ok(UserNamespace {
        mode: NamespaceMode::Pod as i32,
        uids: map(&ns.uid_mappings),
        gids: map(&ns.gid_mappings),
    })
}

/// `kubeletconfig.DefaultKubeletUserNamespacesIDsPerPod` (`userNamespaces.idsPerPod`).
pub const DEFAULT_IDS_PER_POD: u32 = 65536;
/// `userNsUnitLength`.
pub const USER_NS_UNIT_LENGTH: u32 = 65536;
/// `mapReInitializeThreshold` (Go maps never shrink; kept for the bookkeeping's sake).
const MAP_REINITIALIZE_THRESHOLD: usize = 1000;
/// `mappingsFile`: the file in the pod directory.
pub const MAPPINGS_FILE: &str = "userns";
/// `kubeletUser`.
pub const KUBELET_USER: &str = "kubelet";

/// Upstream's `userNamespace` (the `userns` file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserNamespaceFile {
    /// `uidMappings`.
    #[serde(rename = "uidMappings", default)]
    pub uid_mappings: Vec<IdMapping>,
    /// `gidMappings`.
    #[serde(rename = "gidMappings", default)]
    pub gid_mappings: Vec<IdMapping>,
}

/// Upstream's `idMapping` (field order as Go's `json.Marshal` writes it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdMapping {
    /// `hostId`.
    #[serde(rename = "hostId", default)]
    pub host_id: u32,
    /// `containerId`.
    #[serde(rename = "containerId", default)]
    pub container_id: u32,
    /// `length`.
    #[serde(rename = "length", default)]
    pub length: u32,
}

/// Runs `getsubids` (upstream `exec.LookPath("getsubids")` + `exec.Command(...).Output()`).
pub trait SubIdsCommand: Send + Sync {
    /// `getsubids kubelet` (`group == false`) or `getsubids -g kubelet`: stdout, or the
    /// error text upstream's `exec` gives (`exec: "getsubids": executable file not found
    /// in $PATH`, `exit status 1`).
    ///
    /// # Errors
    /// The command is missing or fails.
    fn output(&self, group: bool, user: &str) -> Result<String, String>;
}

/// The real `getsubids`.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealSubIds;

impl SubIdsCommand for RealSubIds {
    fn output(&self, group: bool, user: &str) -> Result<String, String> {
        let mut cmd = std::process::Command::new("getsubids");
        if group {
            cmd.arg("-g");
        }
        let out = cmd.arg(user).output().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                "exec: \"getsubids\": executable file not found in $PATH".to_string()
            } else {
                e.to_string()
            }
        })?;
        if !out.status.success() {
            return Err(out.status.code().map_or_else(
                || "signal: killed".to_string(),
                |c| format!("exit status {c}"),
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// `parseGetSubIdsOutput`: `0: kubelet 65536 2147483648` → (first ID, length).
///
/// # Errors
/// Upstream's messages for more than one line, a line without four fields or numbers
/// that are not `u32`.
pub fn parse_get_sub_ids_output(input: &str) -> Result<(u32, u32), String> {
    let trimmed = input.trim_matches('\n');
    let lines: Vec<&str> = trimmed.split('\n').collect();
    if lines.len() != 1 {
        return Err(format!(
            "error parsing line {input:?}: it must contain only one line"
        ));
    }
    let parts: Vec<&str> = lines[0].split_whitespace().collect();
    if parts.len() != 4 {
        return Err(format!("invalid line {input:?}"));
    }
    let num = |s: &str| {
        s.parse::<u32>().map_err(|e| {
            format!("error parsing line {input:?}: strconv.ParseUint: parsing {s:?}: {e}")
        })
    };
    Ok((num(parts[2])?, num(parts[3])?))
}

/// `getKubeletMappings(idsPerPod)`: the `kubelet` user's single subordinate ID range from
/// `getsubids` (the same for UIDs and GIDs), or `[idsPerPod, 2^32)` when the user does
/// not exist in `/etc/passwd`. As upstream, a `kubelet` user without `getsubids` installed
/// is an error (Go's `os.IsNotExist` is false for `exec.ErrNotFound`).
///
/// # Errors
/// [`UsernsError::KubeletMappings`] with upstream's message.
pub fn get_kubelet_mappings(
    os: &dyn OsInterface,
    subids: &dyn SubIdsCommand,
    ids_per_pod: u32,
) -> Result<(u32, u32), UsernsError> {
    let default_first = ids_per_pod;
    #[allow(clippy::cast_possible_truncation)]
    let default_len = ((1u64 << 32) - u64::from(default_first)) as u32;
    let passwd = os
        .read_to_string(Path::new("/etc/passwd"))
        .map_err(|e| UsernsError::KubeletMappings(format!("open /etc/passwd: {e}")))?;
    let exists = passwd
        .lines()
        .any(|l| l.split(':').next() == Some(KUBELET_USER));
    if !exists {
        tracing::debug!(
            user = KUBELET_USER,
            "user namespaces: user not found, using default mappings"
        );
        return Ok((default_first, default_len));
    }
    let uids = subids.output(false, KUBELET_USER).map_err(|e| {
        if e.starts_with("exec: ") {
            UsernsError::KubeletMappings(e)
        } else {
            UsernsError::KubeletMappings(format!(
                "error retrieving additional uids for user {KUBELET_USER:?}: {e}"
            ))
        }
    })?;
    let gids = subids.output(true, KUBELET_USER).map_err(|_| {
        UsernsError::KubeletMappings(format!(
            "error retrieving additional gids for user {KUBELET_USER:?}"
        ))
    })?;
    if uids != gids {
        return Err(UsernsError::KubeletMappings(format!(
            "mismatched subuids and subgids for user {KUBELET_USER:?}"
        )));
    }
    parse_get_sub_ids_output(&uids).map_err(UsernsError::KubeletMappings)
}

/// Upstream `allocator.AllocationBitmap` with `randomScanStrategy` (offset 0): a random
/// start, then the first free block scanning forward and wrapping.
#[derive(Debug)]
struct AllocationBitmap {
    words: Vec<u64>,
    max: usize,
    count: usize,
    rng: u64,
}

impl AllocationBitmap {
    fn new(max: usize, seed: u64) -> Self {
        Self {
            words: vec![0; max.div_ceil(64)],
            max,
            count: 0,
            rng: seed | 1,
        }
    }

    fn has(&self, i: usize) -> bool {
        i < self.max && self.words[i / 64] & (1 << (i % 64)) != 0
    }

    fn set(&mut self, i: usize, on: bool) {
        if i >= self.max || self.has(i) == on {
            return;
        }
        if on {
            self.words[i / 64] |= 1 << (i % 64);
            self.count += 1;
        } else {
            self.words[i / 64] &= !(1 << (i % 64));
            self.count -= 1;
        }
    }

    fn next_rand(&mut self) -> u64 {
        // xorshift64: upstream seeds math/rand from the clock; only spread matters.
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }

    fn allocate_next(&mut self) -> Option<usize> {
        if self.count >= self.max {
            return None;
        }
        #[allow(clippy::cast_possible_truncation)]
        let offset = (self.next_rand() % self.max as u64) as usize;
        let at = (0..self.max)
            .map(|i| (offset + i) % self.max)
            .find(|&at| !self.has(at))?;
        self.set(at, true);
        Some(at)
    }
}

#[derive(Debug)]
struct State {
    used: AllocationBitmap,
    used_by: HashMap<String, u32>,
    removed: usize,
}

/// Upstream's `UsernsManager`: the per-pod ID ranges of `hostUsers: false` pods.
pub struct UsernsManager {
    os: Arc<dyn OsInterface>,
    pods_dir: PathBuf,
    off: usize,
    len: usize,
    user_ns_length: u32,
    state: Mutex<State>,
}

impl std::fmt::Debug for UsernsManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UsernsManager")
            .field("pods_dir", &self.pods_dir)
            .field("off", &self.off)
            .field("len", &self.len)
            .field("user_ns_length", &self.user_ns_length)
            .finish_non_exhaustive()
    }
}

impl UsernsManager {
    /// `MakeUserNsManager`: `root_dir` is `--root-dir` (pods live in `<root_dir>/pods`),
    /// `kubelet_mapping` is [`get_kubelet_mappings`]'s answer, `ids_per_pod` the config's
    /// `userNamespaces.idsPerPod` (default [`DEFAULT_IDS_PER_POD`]). Records the
    /// allocations found in the pod directories.
    ///
    /// # Errors
    /// Upstream's messages for a range that does not fit, and for unreadable or invalid
    /// `userns` files of existing pods.
    pub fn new(
        os: Arc<dyn OsInterface>,
        root_dir: &Path,
        kubelet_mapping: (u32, u32),
        ids_per_pod: Option<u32>,
        max_pods: usize,
    ) -> Result<Self, UsernsError> {
        Self::with_seed(os, root_dir, kubelet_mapping, ids_per_pod, max_pods, seed())
    }

    fn with_seed(
        os: Arc<dyn OsInterface>,
        root_dir: &Path,
        (mapping_id, mapping_len): (u32, u32),
        ids_per_pod: Option<u32>,
        max_pods: usize,
        seed: u64,
    ) -> Result<Self, UsernsError> {
        let len_ = ids_per_pod.unwrap_or(DEFAULT_IDS_PER_POD);
        if len_ == 0 || !len_.is_multiple_of(USER_NS_UNIT_LENGTH) {
            return Err(UsernsError::Config(format!(
                "kubelet user namespace length {len_} is not a multiple of {USER_NS_UNIT_LENGTH}"
            )));
        }
        if !mapping_id.is_multiple_of(len_) {
            return Err(UsernsError::Config(format!(
                "kubelet user assigned ID {mapping_id} is not a multiple of {len_}"
            )));
        }
        if mapping_id < len_ {
            return Err(UsernsError::Config(format!(
                "kubelet user assigned ID {mapping_id} must be greater or equal to {len_}"
            )));
        }
        if !mapping_len.is_multiple_of(len_) {
            return Err(UsernsError::Config(format!(
                "kubelet user assigned IDs length {mapping_len} is not a multiple of {len_}"
            )));
        }
        if ((mapping_len / len_) as usize) < max_pods {
            return Err(UsernsError::Config(format!(
                "kubelet user assigned IDs are not enough to support {max_pods} pods"
            )));
        }
        let off = (mapping_id / len_) as usize;
        let len = (mapping_len / len_) as usize;
        tracing::debug!(
            offset = off,
            length = len,
            ids_per_pod = len_,
            "User namespace manager mapping"
        );
        let m = Self {
            os,
            pods_dir: root_dir.join("pods"),
            off,
            len,
            user_ns_length: len_,
            state: Mutex::new(State {
                used: AllocationBitmap::new(len, seed),
                used_by: HashMap::new(),
                removed: 0,
            }),
        };
        let found = match m.list_pods_from_disk() {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(m),
            Err(e) => return Err(UsernsError::ReadPodsFromDisk(e.to_string())),
        };
        {
            let mut st = m.lock();
            for uid in found {
                m.record_pod_mappings(&mut st, &uid)
                    .map_err(|e| UsernsError::RecordExisting {
                        uid: uid.clone(),
                        source: Box::new(e),
                    })?;
            }
        }
        Ok(m)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `GetPodDir`.
    fn pod_dir(&self, uid: &str) -> PathBuf {
        self.pods_dir.join(uid)
    }

    /// `listPodsFromDisk`: the directories under `<root>/pods`.
    fn list_pods_from_disk(&self) -> std::io::Result<Vec<String>> {
        let mut names = self.os.read_dir(&self.pods_dir)?;
        names.retain(|n| self.os.is_dir(&self.pods_dir.join(n)));
        names.sort();
        Ok(names)
    }

    /// `readMappingsFromFile`: `None` when the file does not exist (`ErrKeyNotFound`).
    fn read_mappings_from_file(&self, uid: &str) -> Result<Option<Vec<u8>>, UsernsError> {
        match self.os.read(&self.pod_dir(uid).join(MAPPINGS_FILE)) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(UsernsError::Io(e.to_string())),
        }
    }

    /// `writeMappingsToFile` (the file store's write: a temporary file renamed in place).
    fn write_mappings_to_file(&self, uid: &str, ns: &UserNamespaceFile) -> Result<(), UsernsError> {
        let dir = self.pod_dir(uid);
        let data = serde_json::to_vec(ns).map_err(|e| UsernsError::Io(e.to_string()))?;
        self.os
            .mkdir_all(&dir)
            .map_err(|e| UsernsError::Io(format!("create user namespace store: {e}")))?;
        let tmp = dir.join(format!(".tmp_{MAPPINGS_FILE}"));
        self.os
            .write_file(&tmp, &data)
            .map_err(|e| UsernsError::Io(e.to_string()))?;
        self.os.rename(&tmp, &dir.join(MAPPINGS_FILE)).map_err(|e| {
            let _ = self.os.remove_file(&tmp);
            UsernsError::Io(e.to_string())
        })
    }

    /// `recordPodMappings`: a pod directory without the file has no user namespace.
    fn record_pod_mappings(&self, st: &mut State, uid: &str) -> Result<(), UsernsError> {
        match self.read_mappings_from_file(uid)? {
            Some(c) if !c.is_empty() => self.parse_and_record(st, uid, &c).map(|_| ()),
            _ => Ok(()),
        }
    }

    /// `isSet`: whether the block holding `v` is taken (out of range counts as taken).
    pub fn is_set(&self, v: u32) -> bool {
        let index = (v / self.user_ns_length) as usize;
        match index.checked_sub(self.off) {
            Some(i) if i < self.len => self.lock().used.has(i),
            _ => true,
        }
    }

    /// Whether `uid` holds a range (upstream `podAllocated`).
    pub fn pod_allocated(&self, uid: &str) -> bool {
        self.lock().used_by.contains_key(uid)
    }

    /// `allocateOne`: (first ID, length).
    fn allocate_one(&self, st: &mut State, uid: &str) -> Result<(u32, u32), UsernsError> {
        let first_zero = st.used.allocate_next().ok_or(UsernsError::Exhausted)?;
        tracing::debug!(pod_uid = uid, "new pod user namespace allocation");
        #[allow(clippy::cast_possible_truncation)]
        let first = ((first_zero + self.off) as u32).wrapping_mul(self.user_ns_length);
        st.used_by.insert(uid.to_string(), first);
        Ok((first, self.user_ns_length))
    }

    /// `record`: registers `[from, from+length)` for `uid`.
    fn record(&self, st: &mut State, uid: &str, from: u32, length: u32) -> Result<(), UsernsError> {
        if length != self.user_ns_length {
            return Err(UsernsError::Invalid(format!(
                "wrong user namespace length {length}"
            )));
        }
        if !from.is_multiple_of(self.user_ns_length) {
            return Err(UsernsError::Invalid(format!(
                "wrong user namespace offset specified {from}"
            )));
        }
        let prev = st.used_by.get(uid).copied();
        if prev.is_some_and(|p| p != from) {
            return Err(UsernsError::Invalid(format!(
                "different user namespace range already used by pod {uid:?}"
            )));
        }
        let index = match ((from / self.user_ns_length) as usize).checked_sub(self.off) {
            Some(i) if i < self.len => i,
            _ => return Err(UsernsError::Invalid(format!("id {from} is out of range"))),
        };
        if prev.is_none() && st.used.has(index) {
            return Err(UsernsError::Invalid(format!(
                "range picked for pod {uid:?} already taken"
            )));
        }
        if prev.is_some() {
            return Ok(());
        }
        tracing::debug!(pod_uid = uid, "new pod user namespace allocation");
        st.used.set(index, true);
        st.used_by.insert(uid.to_string(), from);
        Ok(())
    }

    /// `Release`: frees `uid`'s range and removes its `userns` file.
    pub fn release(&self, uid: &str) {
        let mut st = self.lock();
        self.release_with_lock(&mut st, uid);
    }

    fn release_with_lock(&self, st: &mut State, uid: &str) {
        let Some(v) = st.used_by.remove(uid) else {
            tracing::trace!(pod_uid = uid, "pod user namespace allocation not present");
            return;
        };
        tracing::debug!(pod_uid = uid, "releasing pod user namespace allocation");
        st.removed += 1;
        let _ = self.os.remove_file(&self.pod_dir(uid).join(MAPPINGS_FILE));
        if st.removed.is_multiple_of(MAP_REINITIALIZE_THRESHOLD) {
            st.used_by.shrink_to_fit();
            st.removed = 0;
        }
        if let Some(i) = ((v / self.user_ns_length) as usize).checked_sub(self.off) {
            st.used.set(i, false);
        }
    }

    /// `parseUserNsFileAndRecord`.
    fn parse_and_record(
        &self,
        st: &mut State,
        uid: &str,
        content: &[u8],
    ) -> Result<UserNamespaceFile, UsernsError> {
        let ns: UserNamespaceFile = serde_json::from_slice(content).map_err(|e| {
            UsernsError::Invalid(format!("invalid user namespace mappings file: {e}"))
        })?;
        let (Some(u), 1) = (ns.uid_mappings.first(), ns.uid_mappings.len()) else {
            return Err(UsernsError::Invalid(
                "invalid user namespace configuration: no more than one mapping allowed.".into(),
            ));
        };
        if ns.uid_mappings.len() != ns.gid_mappings.len() {
            return Err(UsernsError::Invalid(
                "invalid user namespace configuration: GID and UID mappings should be identical."
                    .into(),
            ));
        }
        let g = ns.gid_mappings.first();
        if g != Some(u) {
            return Err(UsernsError::Invalid(
                "invalid user namespace configuration: GID and UID mapping should be identical"
                    .into(),
            ));
        }
        if u.container_id != 0 {
            return Err(UsernsError::Invalid(
                "invalid user namespace configuration: UID 0 must be mapped".into(),
            ));
        }
        self.record(st, uid, u.host_id, u.length)?;
        Ok(ns)
    }

    /// `createUserNs`: allocates and persists; the allocation is released when writing fails.
    fn create_user_ns(&self, st: &mut State, uid: &str) -> Result<UserNamespaceFile, UsernsError> {
        let (first, length) = self.allocate_one(st, uid)?;
        let m = IdMapping {
            host_id: first,
            container_id: 0,
            length,
        };
        let ns = UserNamespaceFile {
            uid_mappings: vec![m],
            gid_mappings: vec![m],
        };
        if let Err(e) = self.write_mappings_to_file(uid, &ns) {
            self.release_with_lock(st, uid);
            return Err(e);
        }
        Ok(ns)
    }

    /// The allocation half of `GetOrCreateUserNamespaceMappings` (after the handler
    /// check): the pod's `userns` file when it has one, else a new range.
    ///
    /// # Errors
    /// `user namespace: ...` for an unusable file, `create user namespace: ...` when no
    /// block is free or the file cannot be written.
    pub fn get_or_create(&self, uid: &str) -> Result<UserNamespaceFile, UsernsError> {
        let mut st = self.lock();
        match self.read_mappings_from_file(uid)? {
            Some(c) if !c.is_empty() => self
                .parse_and_record(&mut st, uid, &c)
                .map_err(|e| UsernsError::Existing(Box::new(e))),
            _ => self
                .create_user_ns(&mut st, uid)
                .map_err(|e| UsernsError::Create(Box::new(e))),
        }
    }

    /// `CleanupOrphanedPodUsernsAllocations`: releases the ranges of pod directories whose
    /// pod is neither known (`known_pods`: the pod manager's and the runtime's pod UIDs)
    /// nor, for allocations in memory, still on disk.
    ///
    /// # Errors
    /// `user namespace: read pods from disk: ...`.
    pub fn cleanup_orphaned_pod_userns_allocations<'a>(
        &self,
        known_pods: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), UsernsError> {
        let all: HashSet<&str> = known_pods.into_iter().collect();
        let mut st = self.lock();
        // Not upstream, which lists the pod directories at every housekeeping (2 s): with no
        // range allocated there is nothing to release (every `userns` file on disk was
        // recorded at start or written by an allocation), so the listing is skipped.
        if st.used_by.is_empty() {
            return Ok(());
        }
        let found = self.list_pods_from_disk().map_err(|e| {
            UsernsError::Existing(Box::new(UsernsError::ReadPodsFromDisk(e.to_string())))
        })?;
        for uid in &found {
            if !all.contains(uid.as_str()) {
                tracing::debug!(pod_uid = %uid, "Clean up orphaned pod user namespace possible allocation");
                self.release_with_lock(&mut st, uid);
            }
        }
        let found: HashSet<&str> = found.iter().map(String::as_str).collect();
        let gone: Vec<String> = st
            .used_by
            .keys()
            .filter(|u| !found.contains(u.as_str()))
            .cloned()
            .collect();
        for uid in gone {
            tracing::debug!(pod_uid = %uid, "Clean up orphaned pod user namespace possible allocation");
            self.release_with_lock(&mut st, &uid);
        }
        Ok(())
    }
}

fn seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    #[allow(clippy::cast_possible_truncation)]
    let n = nanos as u64;
    n ^ (u64::from(std::process::id()) << 32)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::os::FakeOs;
    use kubelet_cri::v1::RuntimeHandlerFeatures;
    use serde_json::json;

    fn pod(host_users: Option<bool>) -> Pod {
        serde_json::from_value(json!({"spec": {"hostUsers": host_users, "containers": []}}))
            .unwrap()
    }

    fn handler(name: &str, userns: bool) -> RuntimeHandler {
        RuntimeHandler {
            name: name.into(),
            features: Some(RuntimeHandlerFeatures {
                recursive_read_only_mounts: false,
                user_namespaces: userns,
            }),
        }
    }

    #[test]
    fn host_users_unset_or_true_is_the_node_namespace() {
        for p in [pod(None), pod(Some(true))] {
            assert_eq!(
                user_namespace_for_pod(&p, "", &[], None),
                Ok(node_user_namespace())
            );
        }
    }

    #[test]
    fn runtime_without_handler_features_refuses_with_upstream_message() {
        let e = user_namespace_for_pod(&pod(Some(false)), "", &[], None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
        );
        let e = user_namespace_for_pod(&pod(Some(false)), "kata", &[handler("", true)], None)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"can't set `spec.hostUsers: false`, RuntimeClass handler "kata" does not support user namespaces: the handler "kata" is not known"#
        );
        let e = user_namespace_for_pod(&pod(Some(false)), "runc", &[handler("runc", false)], None)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"can't set `spec.hostUsers: false`, RuntimeClass handler "runc" does not support user namespaces"#
        );
    }

    #[test]
    fn supporting_runtime_without_a_manager_is_refused() {
        assert_eq!(
            user_namespace_for_pod(&pod(Some(false)), "", &[handler("", true)], None),
            Err(UsernsError::NoAllocator)
        );
    }

    const L: u32 = 65536;
    const ROOT: &str = "/var/lib/kubelet";

    fn fake() -> Arc<FakeOs> {
        let os = Arc::new(FakeOs::new());
        os.mkdir_all(Path::new("/var/lib/kubelet/pods")).unwrap();
        os
    }

    fn make(
        os: &Arc<FakeOs>,
        first: u32,
        len: u32,
        ids: Option<u32>,
        max_pods: usize,
    ) -> Result<UsernsManager, UsernsError> {
        UsernsManager::with_seed(os.clone(), Path::new(ROOT), (first, len), ids, max_pods, 42)
    }

    fn pod_with_uid(uid: &str) -> Pod {
        serde_json::from_value(
            json!({"metadata": {"uid": uid}, "spec": {"hostUsers": false, "containers": []}}),
        )
        .unwrap()
    }

    /// `TestUserNsManagerAllocate` (default and custom `idsPerPod`).
    #[test]
    fn allocate_record_release() {
        for (ids, first, len) in [(L, L, L * 2000), (1_048_576, 1_048_576, 1_048_576 * 2000)] {
            let os = fake();
            let m = make(&os, first, len, Some(ids), 110).unwrap();
            let mut st = m.lock();
            let (a1, l1) = m.allocate_one(&mut st, "one").unwrap();
            drop(st);
            assert_eq!(l1, ids);
            assert!(m.is_set(a1));
            let mut st = m.lock();
            let (a2, l2) = m.allocate_one(&mut st, "two").unwrap();
            assert_ne!(a1, a2);
            assert_eq!(l1, l2);
            // re-recording the same range is fine, anything else is not
            m.record(&mut st, "two", a2, l2).unwrap();
            assert_eq!(
                m.record(&mut st, "two", a2 + 1, l2)
                    .unwrap_err()
                    .to_string(),
                format!("wrong user namespace offset specified {}", a2 + 1)
            );
            drop(st);
            m.release("one");
            m.release("two");
            assert!(!m.is_set(a1));
            assert!(!m.is_set(a2));
            let mut allocs = Vec::new();
            for i in 0..1000 {
                let (a, l) = m.allocate_one(&mut m.lock(), &i.to_string()).unwrap();
                assert_eq!(l, ids);
                assert!(a >= first);
                assert!(a <= first + len - ids);
                allocs.push(a);
            }
            let unique: HashSet<_> = allocs.iter().collect();
            assert_eq!(unique.len(), 1000);
            for (i, v) in allocs.into_iter().enumerate() {
                assert!(m.is_set(v));
                m.release(&i.to_string());
                assert!(!m.is_set(v));
                m.record(&mut m.lock(), &i.to_string(), v, ids).unwrap();
                m.release(&i.to_string());
                assert!(!m.is_set(v));
            }
        }
    }

    #[test]
    fn exhaustion_is_upstreams_error() {
        let os = fake();
        let m = make(&os, L, 2 * L, None, 2).unwrap();
        let a = m.get_or_create("a").unwrap();
        let b = m.get_or_create("b").unwrap();
        assert_ne!(a.uid_mappings[0].host_id, b.uid_mappings[0].host_id);
        let e = m.get_or_create("c").unwrap_err();
        assert_eq!(
            e.to_string(),
            "create user namespace: could not find an empty slot to allocate a user namespace"
        );
        assert!(!m.pod_allocated("c"));
        m.release("a");
        assert_eq!(m.get_or_create("c").unwrap(), a);
    }

    /// `TestMakeUserNsManager`.
    #[test]
    fn make_checks_the_kubelet_range() {
        let os = fake();
        assert!(make(&os, L, u32::MAX - L + 1, None, 110).is_ok());
        for (first, len, max_pods, msg) in [
            (
                L + 1,
                L,
                0,
                "kubelet user assigned ID 65537 is not a multiple of 65536",
            ),
            (
                0,
                L,
                0,
                "kubelet user assigned ID 0 must be greater or equal to 65536",
            ),
            (
                L,
                L + 1,
                0,
                "kubelet user assigned IDs length 65537 is not a multiple of 65536",
            ),
            (
                L,
                L,
                2,
                "kubelet user assigned IDs are not enough to support 2 pods",
            ),
        ] {
            assert_eq!(
                make(&os, first, len, None, max_pods)
                    .unwrap_err()
                    .to_string(),
                msg
            );
        }
        assert_eq!(
            make(&os, L, L, Some(L + 1), 0).unwrap_err().to_string(),
            "kubelet user namespace length 65537 is not a multiple of 65536"
        );
    }

    /// `TestMakeUserNsManagerFailsListPod`: a missing pods directory is fine, an
    /// unreadable one is not.
    #[test]
    fn make_without_pods_dir() {
        let os = Arc::new(FakeOs::new());
        assert!(make(&os, L, L, None, 1).is_ok());
    }

    /// `TestUserNsManagerParseUserNsFile`.
    #[test]
    fn parse_user_ns_file() {
        let os = fake();
        let m = make(&os, L, L * 2000, None, 110).unwrap();
        let cases = [
            (
                "basic",
                r#"{"uidMappings":[{"hostId":131072,"containerId":0,"length":65536}],"gidMappings":[{"hostId":131072,"containerId":0,"length":65536}]}"#,
                None,
            ),
            (
                "invalid length",
                r#"{"uidMappings":[{"hostId":131072,"containerId":0,"length":0}],"gidMappings":[{"hostId":131072,"containerId":0,"length":0}]}"#,
                Some("wrong user namespace length 0"),
            ),
            (
                "wrong offset",
                r#"{"uidMappings":[{"hostId":131072,"containerId":0,"length":65536}],"gidMappings":[{"hostId":1,"containerId":0,"length":65536}]}"#,
                Some(
                    "invalid user namespace configuration: GID and UID mapping should be identical",
                ),
            ),
            (
                "two GID mappings",
                r#"{"uidMappings":[{"hostId":131072,"containerId":0,"length":65536}],"gidMappings":[{"hostId":131072,"containerId":0,"length":65536},{"hostId":196608,"containerId":0,"length":65536}]}"#,
                Some(
                    "invalid user namespace configuration: GID and UID mappings should be identical.",
                ),
            ),
            (
                "two UID mappings",
                r#"{"uidMappings":[{"hostId":131072,"containerId":0,"length":65536},{"hostId":196608,"containerId":0,"length":65536}],"gidMappings":[{"hostId":131072,"containerId":0,"length":65536}]}"#,
                Some("invalid user namespace configuration: no more than one mapping allowed."),
            ),
            (
                "no root UID",
                r#"{"uidMappings":[{"hostId":131072,"containerId":1,"length":65536}],"gidMappings":[{"hostId":131072,"containerId":0,"length":65536}]}"#,
                Some(
                    "invalid user namespace configuration: GID and UID mapping should be identical",
                ),
            ),
            (
                "no root",
                r#"{"uidMappings":[{"hostId":131072,"containerId":1,"length":65536}],"gidMappings":[{"hostId":131072,"containerId":1,"length":65536}]}"#,
                Some("invalid user namespace configuration: UID 0 must be mapped"),
            ),
            (
                "not json",
                "{",
                Some("invalid user namespace mappings file: "),
            ),
        ];
        for (name, file, want) in cases {
            let got = m.parse_and_record(&mut m.lock(), name, file.as_bytes());
            match want {
                None => assert!(got.is_ok(), "{name}: {got:?}"),
                Some(msg) => assert!(
                    got.as_ref().unwrap_err().to_string().starts_with(msg),
                    "{name}: {got:?}"
                ),
            }
        }
    }

    /// `TestRecordBounds`.
    #[test]
    fn record_bounds() {
        let os = fake();
        let m = make(&os, L, L, None, 1).unwrap();
        m.record(&mut m.lock(), "0", L, L).unwrap();
        assert_eq!(
            m.record(&mut m.lock(), "2", 2 * L, L)
                .unwrap_err()
                .to_string(),
            "id 131072 is out of range"
        );
        assert_eq!(
            m.record(&mut m.lock(), "3", L, L).unwrap_err().to_string(),
            "range picked for pod \"3\" already taken"
        );
    }

    /// The file upstream's kubelet writes (`json.Marshal` of `userNamespace`) is read, and
    /// ours is byte-for-byte what upstream writes.
    #[test]
    fn file_format_round_trip_and_restart() {
        let os = fake();
        let m = make(&os, L, L * 2000, None, 110).unwrap();
        let ns = m.get_or_create("uid-1").unwrap();
        let h = ns.uid_mappings[0].host_id;
        let written = os
            .read_to_string(Path::new("/var/lib/kubelet/pods/uid-1/userns"))
            .unwrap();
        assert_eq!(
            written,
            format!(
                r#"{{"uidMappings":[{{"hostId":{h},"containerId":0,"length":65536}}],"gidMappings":[{{"hostId":{h},"containerId":0,"length":65536}}]}}"#
            )
        );
        // same pod again: the file's range
        assert_eq!(m.get_or_create("uid-1").unwrap(), ns);
        // upstream-written file of another pod, recorded at start
        os.mkdir_all(Path::new("/var/lib/kubelet/pods/uid-2"))
            .unwrap();
        os.write_file(
            Path::new("/var/lib/kubelet/pods/uid-2/userns"),
            br#"{"uidMappings":[{"hostId":196608,"containerId":0,"length":65536}],"gidMappings":[{"hostId":196608,"containerId":0,"length":65536}]}"#,
        )
        .unwrap();
        os.mkdir_all(Path::new("/var/lib/kubelet/pods/uid-3"))
            .unwrap();
        let m2 = make(&os, L, L * 2000, None, 110).unwrap();
        assert!(m2.pod_allocated("uid-1"));
        assert!(m2.pod_allocated("uid-2"));
        assert!(!m2.pod_allocated("uid-3"));
        assert!(m2.is_set(h) && m2.is_set(196_608));
        assert_eq!(m2.get_or_create("uid-1").unwrap(), ns);
        // release removes the file
        m2.release("uid-2");
        assert!(!os.exists(Path::new("/var/lib/kubelet/pods/uid-2/userns")));
        assert!(!m2.is_set(196_608));
        // an invalid file fails the start, with upstream's wrapping
        os.write_file(Path::new("/var/lib/kubelet/pods/uid-3/userns"), b"{")
            .unwrap();
        let e = make(&os, L, L * 2000, None, 110).unwrap_err().to_string();
        assert!(
            e.starts_with("record pod mappings for existing pod \"uid-3\": invalid user namespace mappings file: "),
            "{e}"
        );
        assert!(
            m2.get_or_create("uid-3")
                .unwrap_err()
                .to_string()
                .starts_with("user namespace: invalid user namespace mappings file")
        );
    }

    /// `TestCleanupOrphanedPodUsernsAllocations`.
    #[test]
    fn cleanup_orphaned_pod_userns_allocations() {
        struct Case {
            list: &'static [&'static str],
            set_before: &'static [&'static str],
            known: &'static [&'static str],
            set_after: &'static [&'static str],
            unset_after: &'static [&'static str],
        }
        let cases = [
            Case {
                list: &["pod-1", "pod-2"],
                set_before: &[],
                known: &[],
                set_after: &[],
                unset_after: &[],
            },
            Case {
                list: &["pod-1", "pod-2"],
                set_before: &["pod-1", "pod-2"],
                known: &[],
                set_after: &[],
                unset_after: &["pod-1", "pod-2"],
            },
            Case {
                list: &["pod-1", "pod-2"],
                set_before: &["pod-1", "pod-2"],
                known: &["pod-1"],
                set_after: &["pod-1"],
                unset_after: &["pod-2"],
            },
            Case {
                list: &[],
                set_before: &["pod-1", "pod-2"],
                known: &["pod-1"],
                set_after: &[],
                unset_after: &["pod-1", "pod-2"],
            },
            Case {
                list: &[],
                set_before: &["pod-1", "pod-2"],
                known: &[],
                set_after: &[],
                unset_after: &["pod-1", "pod-2"],
            },
        ];
        for c in cases {
            let os = fake();
            for p in c.list {
                os.mkdir_all(&Path::new(ROOT).join("pods").join(p)).unwrap();
            }
            let m = make(&os, L, L * 2000, None, 110).unwrap();
            for (i, p) in c.set_before.iter().enumerate() {
                let from = u32::try_from(i + 1).unwrap() * L;
                m.record(&mut m.lock(), p, from, L).unwrap();
            }
            m.cleanup_orphaned_pod_userns_allocations(c.known.iter().copied())
                .unwrap();
            for p in c.set_after {
                assert!(m.pod_allocated(p), "{p}");
            }
            for p in c.unset_after {
                assert!(!m.pod_allocated(p), "{p}");
            }
        }
    }

    /// `GetOrCreateUserNamespaceMappings` end to end: POD mode, container 0 → the range.
    #[test]
    fn pod_mode_mappings_for_host_users_false() {
        let os = fake();
        let m = make(&os, L, L * 2000, None, 110).unwrap();
        let ns = user_namespace_for_pod(&pod_with_uid("u1"), "", &[handler("", true)], Some(&m))
            .unwrap();
        assert_eq!(ns.mode, NamespaceMode::Pod as i32);
        assert_eq!(ns.uids.len(), 1);
        assert_eq!(ns.uids, ns.gids);
        assert_eq!(ns.uids[0].container_id, 0);
        assert_eq!(ns.uids[0].length, 65536);
        assert!(m.is_set(ns.uids[0].host_id));
        // the unsupported refusal is unchanged with a manager
        let e = user_namespace_for_pod(&pod_with_uid("u2"), "", &[], Some(&m)).unwrap_err();
        assert!(matches!(e, UsernsError::Unsupported { .. }));
        assert!(!m.pod_allocated("u2"));
    }

    struct FakeSubIds(Result<String, String>, Result<String, String>);
    impl SubIdsCommand for FakeSubIds {
        fn output(&self, group: bool, user: &str) -> Result<String, String> {
            assert_eq!(user, "kubelet");
            if group {
                self.1.clone()
            } else {
                self.0.clone()
            }
        }
    }

    #[test]
    fn parse_get_sub_ids_output_as_upstream() {
        assert_eq!(
            parse_get_sub_ids_output("0: kubelet 65536 2147483648\n"),
            Ok((65536, 2_147_483_648))
        );
        assert_eq!(
            parse_get_sub_ids_output("0: kubelet 65536 2147483648\n1: kubelet 1 2\n").unwrap_err(),
            "error parsing line \"0: kubelet 65536 2147483648\\n1: kubelet 1 2\\n\": it must contain only one line"
        );
        assert_eq!(
            parse_get_sub_ids_output("0: kubelet 65536").unwrap_err(),
            "invalid line \"0: kubelet 65536\""
        );
        assert!(
            parse_get_sub_ids_output("0: kubelet x 1")
                .unwrap_err()
                .starts_with("error parsing line")
        );
        assert!(parse_get_sub_ids_output("0: kubelet 1 4294967296").is_err());
    }

    /// `getKubeletMappings`: default range without a `kubelet` user, `getsubids` with one.
    #[test]
    fn kubelet_mappings_from_user_and_getsubids() {
        let os = FakeOs::new();
        let ok = |s: &str| Ok(s.to_string());
        let never = FakeSubIds(Err("unused".into()), Err("unused".into()));
        os.write_file(
            Path::new("/etc/passwd"),
            b"root:x:0:0::/root:/bin/sh\nkubeletx:x:1:1::/:/bin/false\n",
        )
        .unwrap();
        assert_eq!(
            get_kubelet_mappings(&os, &never, L),
            Ok((L, u32::MAX - L + 1))
        );
        assert_eq!(
            get_kubelet_mappings(&os, &never, 2 * L),
            Ok((2 * L, u32::MAX - 2 * L + 1))
        );
        os.write_file(
            Path::new("/etc/passwd"),
            b"root:x:0:0::/root:/bin/sh\nkubelet:x:999:999::/:/bin/false\n",
        )
        .unwrap();
        let line = "0: kubelet 65536 2147483648\n";
        assert_eq!(
            get_kubelet_mappings(&os, &FakeSubIds(ok(line), ok(line)), L),
            Ok((65536, 2_147_483_648))
        );
        assert_eq!(
            get_kubelet_mappings(
                &os,
                &FakeSubIds(ok(line), ok("0: kubelet 131072 65536\n")),
                L
            )
            .unwrap_err()
            .to_string(),
            "kubelet mappings: mismatched subuids and subgids for user \"kubelet\""
        );
        assert_eq!(
            get_kubelet_mappings(&os, &FakeSubIds(Err("exit status 1".into()), ok(line)), L)
                .unwrap_err()
                .to_string(),
            "kubelet mappings: error retrieving additional uids for user \"kubelet\": exit status 1"
        );
        assert_eq!(
            get_kubelet_mappings(&os, &FakeSubIds(ok(line), Err("exit status 1".into())), L)
                .unwrap_err()
                .to_string(),
            "kubelet mappings: error retrieving additional gids for user \"kubelet\""
        );
        let missing = "exec: \"getsubids\": executable file not found in $PATH";
        assert_eq!(
            get_kubelet_mappings(&os, &FakeSubIds(Err(missing.into()), ok(line)), L)
                .unwrap_err()
                .to_string(),
            format!("kubelet mappings: {missing}")
        );
    }
}
