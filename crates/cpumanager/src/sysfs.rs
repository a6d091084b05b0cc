//! cAdvisor's machine topology from sysfs (`utils/sysinfo.GetNodesInfo`,
//! `utils/sysfs`, `machine.GetSockets`), behind [`SysFs`] so tests point it
//! at a fake tree.
//!
//! Read, as cAdvisor reads them:
//! - `/sys/devices/system/node/node<N>/cpu<M>`: the CPUs of each NUMA node (no node
//!   directory: one node per `physical_package_id`);
//! - `/sys/devices/system/cpu/online`: CPUs not listed are skipped (no file: all online);
//! - `/sys/devices/system/cpu/cpu<M>/topology/{core_id,physical_package_id}`
//!   (a CPU without them is skipped);
//! - `/sys/devices/system/cpu/cpu<M>/cache/index*/{id,size,level,type,shared_cpu_map}`
//!   of one thread per core: a level-3+ cache not shared by the whole node is the
//!   core's uncore cache (its `id` is the `UncoreCacheID`); any cache read error drops
//!   the rest of that node's cache information, as cAdvisor's `addCacheInfo`.
//!
//! - `/sys/devices/system/node/node<N>/distance`: the node's distances to every node
//!   (`getDistances`: a missing file leaves them unknown, a malformed one is an error).
//!
//! Differences: cAdvisor counts sockets from `/proc/cpuinfo` `physical id`
//! lines first; this counts the distinct `physical_package_id` of the
//! discovered CPUs (the same number wherever both exist). s390x book/drawer ids are
//! not read.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use kubelet_apimachinery::CpuSet;

use crate::topology::{Cache, Core, MachineInfo, Node};

const NODE_DIR: &str = "devices/system/node";
const CPU_DIR: &str = "devices/system/cpu";

/// Read access to a sysfs tree; paths are relative to the sysfs root
/// (`devices/system/cpu/online`).
pub trait SysFs: Send + Sync {
    /// The file's content.
    fn read_file(&self, path: &str) -> io::Result<String>;
    /// The names in a directory (not followed: a symlink is listed by its name).
    fn read_dir(&self, path: &str) -> io::Result<Vec<String>>;
}

/// The real sysfs, or a copy of one under another root (test fixtures).
#[derive(Clone, Debug)]
pub struct RealSysFs {
    root: PathBuf,
}

impl RealSysFs {
    /// `/sys`.
    pub fn new() -> RealSysFs {
        RealSysFs::with_root("/sys")
    }

    /// A tree whose root stands for `/sys`.
    pub fn with_root(root: impl Into<PathBuf>) -> RealSysFs {
        RealSysFs { root: root.into() }
    }

    /// The root.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

impl Default for RealSysFs {
    fn default() -> Self {
        RealSysFs::new()
    }
}

impl SysFs for RealSysFs {
    fn read_file(&self, path: &str) -> io::Result<String> {
        std::fs::read_to_string(self.root.join(path))
    }

    fn read_dir(&self, path: &str) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(self.root.join(path))? {
            names.push(entry?.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }
}

/// An in-memory sysfs: files by path; directories are implied by the paths.
/// Records every path read.
#[derive(Debug, Default)]
pub struct FakeSysFs {
    files: BTreeMap<String, String>,
    reads: std::sync::Mutex<Vec<String>>,
}

impl FakeSysFs {
    /// An empty tree.
    pub fn new() -> FakeSysFs {
        FakeSysFs::default()
    }

    /// Adds a file (a directory entry with no content when `content` is "" and
    /// nothing is below it is fine: it is listed by `read_dir`).
    pub fn with_file(mut self, path: &str, content: &str) -> FakeSysFs {
        self.files.insert(path.to_owned(), content.to_owned());
        self
    }

    /// Every path read so far, in order.
    pub fn reads(&self) -> Vec<String> {
        self.reads.lock().map(|r| r.clone()).unwrap_or_default()
    }

    fn record(&self, path: &str) {
        if let Ok(mut reads) = self.reads.lock() {
            reads.push(path.to_owned());
        }
    }
}

impl SysFs for FakeSysFs {
    fn read_file(&self, path: &str) -> io::Result<String> {
        self.record(path);
        self.files
            .get(path)
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, path.to_owned()))
    }

    fn read_dir(&self, path: &str) -> io::Result<Vec<String>> {
        self.record(path);
        let prefix = format!("{path}/");
        let mut names: Vec<String> = self
            .files
            .keys()
            .filter_map(|p| p.strip_prefix(&prefix))
            .map(|rest| rest.split('/').next().unwrap_or(rest).to_owned())
            .collect();
        names.dedup();
        if names.is_empty() {
            return Err(io::Error::new(io::ErrorKind::NotFound, path.to_owned()));
        }
        Ok(names)
    }
}

/// An error reading the topology from sysfs.
#[derive(Debug, thiserror::Error)]
pub enum SysFsError {
    /// A read failed (other than a missing per-CPU topology file, which skips the CPU).
    #[error("read {path}: {source}")]
    Read {
        /// Path below the sysfs root.
        path: String,
        /// The error.
        source: io::Error,
    },
    /// A file that should hold a number does not (Go: `strconv.Atoi`).
    #[error("strconv.Atoi: parsing {value:?}: invalid syntax (in {path})")]
    Number {
        /// Path below the sysfs root.
        path: String,
        /// The content.
        value: String,
    },
    /// A node's `distance` file holds something other than unsigned numbers.
    #[error("cannot convert {0} to int")]
    Distance(String),
    /// `/sys/devices/system/cpu` lists no CPU (no NUMA node directory either).
    #[error("Any CPU is not available, cpusPath: /sys/devices/system/cpu")]
    NoCpus,
}

/// `<prefix><digits>` → the number (cAdvisor's `cpu*[0-9]` / `node*[0-9]` globs and
/// `cpu(\d+)` / `node(\d+)` regexps).
fn numbered(name: &str, prefix: &str) -> Option<usize> {
    let digits = name.strip_prefix(prefix)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn read_number(sys: &dyn SysFs, path: &str) -> Result<Option<usize>, SysFsError> {
    match sys.read_file(path) {
        Ok(s) => {
            let value = s.trim();
            value.parse().map(Some).map_err(|_| SysFsError::Number {
                path: path.to_owned(),
                value: value.to_owned(),
            })
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(SysFsError::Read {
            path: path.to_owned(),
            source,
        }),
    }
}

/// The online CPUs, or `None` when hotplug is off (no `online` file: all online).
/// An unreadable or unparsable file makes every CPU offline, as cAdvisor's
/// `IsCPUOnline` (it logs and answers false).
fn online_cpus(sys: &dyn SysFs) -> Option<CpuSet> {
    match sys.read_file(&format!("{CPU_DIR}/online")) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(_) => Some(CpuSet::new()),
        Ok(s) => Some(CpuSet::parse(s.trim()).unwrap_or_default()),
    }
}

fn cpu_ids_in(sys: &dyn SysFs, dir: &str) -> Result<Vec<usize>, SysFsError> {
    let names = match sys.read_dir(dir) {
        Ok(names) => names,
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(source) => {
            return Err(SysFsError::Read {
                path: dir.to_owned(),
                source,
            });
        }
    };
    Ok(names.iter().filter_map(|n| numbered(n, "cpu")).collect())
}

/// `getCoresInfo`: the online CPUs grouped into cores by `(core_id, physical_package_id)`.
fn get_cores_info(
    sys: &dyn SysFs,
    cpus: &[usize],
    online: Option<&CpuSet>,
) -> Result<Vec<Core>, SysFsError> {
    let mut cores: Vec<Core> = Vec::new();
    for &cpu in cpus {
        if online.is_some_and(|o| !o.contains(cpu)) {
            continue;
        }
        let base = format!("{CPU_DIR}/cpu{cpu}/topology");
        let Some(core_id) = read_number(sys, &format!("{base}/core_id"))? else {
            tracing::warn!(cpu, "Cannot read core id, core_id file does not exist");
            continue;
        };
        let Some(package_id) = read_number(sys, &format!("{base}/physical_package_id"))? else {
            tracing::warn!(
                cpu,
                "Cannot read physical package id, physical_package_id file does not exist"
            );
            continue;
        };
        match cores
            .iter_mut()
            .find(|c| c.id == core_id && c.socket_id == package_id)
        {
            Some(core) => core.threads.push(cpu),
            None => cores.push(Core {
                id: core_id,
                socket_id: package_id,
                threads: vec![cpu],
                ..Core::default()
            }),
        }
    }
    Ok(cores)
}

/// cAdvisor's `CacheInfo` of one `cache/index*` directory.
struct CacheInfo {
    cache: Cache,
    cpus: usize,
}

fn read_cache(sys: &dyn SysFs, cpu: usize, name: &str) -> Option<CacheInfo> {
    let dir = format!("{CPU_DIR}/cpu{cpu}/cache/{name}");
    let read = |f: &str| sys.read_file(&format!("{dir}/{f}")).ok();
    let leading_number = |s: &str| -> Option<u64> {
        let s = s.trim_start();
        let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        s[..end].parse().ok()
    };
    let id = usize::try_from(leading_number(&read("id")?)?).ok()?;
    // Go: fmt.Sscanf(size, "%dK").
    let size_text = read("size")?;
    let size_text = size_text.trim_start();
    let digits_end = size_text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(size_text.len());
    if !size_text[digits_end..].starts_with('K') {
        return None;
    }
    let size: u64 = size_text[..digits_end].parse().ok()?;
    let level = usize::try_from(leading_number(&read("level")?)?).ok()?;
    let cache_type = read("type")?.trim().to_owned();
    let mut cpus = 0;
    for mask in read("shared_cpu_map")?.split(',') {
        cpus += u64::from_str_radix(mask.trim(), 16).ok()?.count_ones() as usize;
    }
    Some(CacheInfo {
        cache: Cache {
            id,
            size: size * 1024,
            cache_type,
            level,
        },
        cpus,
    })
}

/// `addCacheInfo`; `None` when some cache file is missing or malformed (cAdvisor
/// then keeps what it added so far and logs "Found node without cache information").
fn add_cache_info(sys: &dyn SysFs, node: &mut Node) -> Option<()> {
    let num_cores = node.cores.len();
    for idx in 0..num_cores {
        let thread = *node.cores[idx].threads.first()?;
        let dir = format!("{CPU_DIR}/cpu{thread}/cache");
        let names = sys.read_dir(&dir).ok()?;
        let threads_per_core = node.cores[idx].threads.len();
        let threads_per_node = num_cores * threads_per_core;
        for name in names.iter().filter(|n| n.starts_with("index")) {
            let info = read_cache(sys, thread, name)?;
            if info.cache.level > 2 {
                if info.cpus == threads_per_node {
                    if !node.caches.contains(&info.cache) {
                        node.caches.push(info.cache);
                    }
                } else if !node.cores[idx].uncore_caches.contains(&info.cache) {
                    node.cores[idx].uncore_caches.push(info.cache);
                }
            } else if info.cpus == threads_per_core {
                node.cores[idx].caches.push(info.cache);
            }
        }
    }
    Some(())
}

/// `getDistances`: the numbers of `node<N>/distance` (space-separated, trimmed), `None`
/// when the file cannot be read ("Found node without distance information").
fn get_distances(sys: &dyn SysFs, node_dir: &str) -> Result<Option<Vec<u64>>, SysFsError> {
    let Ok(raw) = sys.read_file(&format!("{node_dir}/distance")) else {
        tracing::warn!(node_dir, "Found node without distance information");
        return Ok(None);
    };
    raw.trim()
        .split(' ')
        .map(|d| d.parse().map_err(|_| SysFsError::Distance(d.to_owned())))
        .collect::<Result<Vec<u64>, _>>()
        .map(Some)
}

/// cAdvisor's `GetNodesInfo` plus `NumSockets`: the [`MachineInfo`] that
/// [`discover`](crate::topology::discover) takes.
pub fn machine_info_from_sysfs(sys: &dyn SysFs) -> Result<MachineInfo, SysFsError> {
    let online = online_cpus(sys);
    let mut nodes = Vec::new();
    let mut num_threads = 0;
    let node_ids: Vec<usize> = match sys.read_dir(NODE_DIR) {
        Ok(names) => names.iter().filter_map(|n| numbered(n, "node")).collect(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(source) => {
            return Err(SysFsError::Read {
                path: NODE_DIR.to_owned(),
                source,
            });
        }
    };
    if node_ids.is_empty() {
        // getCPUTopology: one node per physical package.
        let cpus = cpu_ids_in(sys, CPU_DIR)?;
        if cpus.is_empty() {
            return Err(SysFsError::NoCpus);
        }
        num_threads = cpus.len();
        let mut by_package: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for cpu in cpus {
            let path = format!("{CPU_DIR}/cpu{cpu}/topology/physical_package_id");
            if let Some(package) = read_number(sys, &path)? {
                by_package.entry(package).or_default().push(cpu);
            }
        }
        for (package, cpus) in by_package {
            let mut node = Node {
                id: package,
                cores: get_cores_info(sys, &cpus, online.as_ref())?,
                ..Node::default()
            };
            let _ = add_cache_info(sys, &mut node);
            nodes.push(node);
        }
    } else {
        for id in node_ids {
            let cpus = cpu_ids_in(sys, &format!("{NODE_DIR}/node{id}"))?;
            let mut node = Node {
                id,
                ..Node::default()
            };
            if cpus.is_empty() {
                tracing::warn!(node = id, "Found node without any CPU");
            } else {
                node.cores = get_cores_info(sys, &cpus, online.as_ref())?;
                num_threads += node.cores.iter().map(|c| c.threads.len()).sum::<usize>();
            }
            if add_cache_info(sys, &mut node).is_none() {
                tracing::debug!(node = id, "Found node without cache information");
            }
            node.distances = get_distances(sys, &format!("{NODE_DIR}/node{id}"))?;
            nodes.push(node);
        }
    }
    let sockets: CpuSet = nodes
        .iter()
        .flat_map(|n| n.cores.iter().map(|c| c.socket_id))
        .collect();
    Ok(MachineInfo {
        num_cores: num_threads,
        num_sockets: sockets.len(),
        topology: nodes,
    })
}

#[cfg(test)]
#[path = "sysfs_tests.rs"]
mod tests;
