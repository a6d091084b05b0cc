//! Memory per NUMA node as cAdvisor reads it (`utils/sysinfo.GetNodesInfo`:
//! `getNodeMemInfo`, `GetHugePagesInfo`), through the CPU manager's [`SysFs`] so tests
//! point it at a fake tree.
//!
//! Read, as cAdvisor reads them, for every `/sys/devices/system/node/node<N>`:
//! - `meminfo`: the node's memory from its `MemTotal: <n> kB` line (no file: 0, as
//!   cAdvisor's "Found node without memory information"; a file without the line is an
//!   error);
//! - `hugepages/hugepages-<size>kB/nr_hugepages`: the pages of each size (no directory:
//!   none; a name or count that does not parse is an error).
//!
//! Without any node directory cAdvisor makes one node per CPU socket with no memory; so
//! does this (the ids from the CPU manager's topology reading).

use std::io;

use kubelet_cpumanager::SysFs;

const NODE_DIR: &str = "devices/system/node";

/// cAdvisor's `HugePagesInfo`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HugePagesInfo {
    /// `PageSize` in KiB.
    pub page_size: u64,
    /// `NumPages`.
    pub num_pages: u64,
}

/// The memory part of cAdvisor's `info.Node`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Node {
    /// `Id`.
    pub id: usize,
    /// `Memory` in bytes.
    pub memory: u64,
    /// `HugePages`, in directory order.
    pub huge_pages: Vec<HugePagesInfo>,
}

/// The memory part of cAdvisor's `MachineInfo`: its `Topology`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MachineInfo {
    /// `Topology`.
    pub topology: Vec<Node>,
}

/// An error reading the memory topology.
#[derive(Debug, thiserror::Error)]
pub enum SysFsError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The path (relative to the sysfs root).
        path: String,
        /// Why.
        source: io::Error,
    },
    /// A `meminfo` without `MemTotal`.
    #[error("failed to match regexp in output: {0:?}")]
    MemInfo(String),
    /// A number that does not parse.
    #[error("{0}")]
    Parse(String),
    /// Without node directories: the CPU topology (the node ids) could not be read.
    #[error(transparent)]
    Cpu(#[from] kubelet_cpumanager::SysFsError),
}

/// `nodeDirPattern` `node*[0-9]` with `nodeDirRegExp` `node/node(\d*)`: the node id.
fn node_id(name: &str) -> Option<usize> {
    let digits = name.strip_prefix("node")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// `memoryCapacityRegexp` `MemTotal:\s*([0-9]+) kB`, in bytes.
fn mem_total(meminfo: &str) -> Result<u64, SysFsError> {
    let trimmed = meminfo.trim();
    for (i, _) in trimmed.match_indices("MemTotal:") {
        let rest = trimmed[i + "MemTotal:".len()..].trim_start();
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if !digits.is_empty() && rest[digits.len()..].starts_with(" kB") {
            let kb: u64 = digits
                .parse()
                .map_err(|e| SysFsError::Parse(format!("{e}")))?;
            return Ok(kb.wrapping_mul(1024));
        }
    }
    Err(SysFsError::MemInfo(trimmed.to_owned()))
}

/// `GetHugePagesInfo` of one directory (no directory: none).
pub fn huge_pages_info(sysfs: &dyn SysFs, dir: &str) -> Result<Vec<HugePagesInfo>, SysFsError> {
    let Ok(names) = sysfs.read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for name in names {
        // strings.Split(name, "-")[1], then strings.Split(.., "kB")[0]
        let size = name.split('-').nth(1).unwrap_or_default();
        let size = size.split("kB").next().unwrap_or_default();
        let page_size: u64 = size.parse().map_err(|_| {
            SysFsError::Parse(format!(
                "strconv.ParseUint: parsing {size:?}: invalid syntax"
            ))
        })?;
        let path = format!("{dir}/{name}/nr_hugepages");
        let raw = sysfs
            .read_file(&path)
            .map_err(|source| SysFsError::Io { path, source })?;
        let num_pages: u64 = raw.trim().parse().map_err(|_| {
            SysFsError::Parse(format!(
                "could not parse file nr_hugepage for {name}, contents {raw:?}"
            ))
        })?;
        out.push(HugePagesInfo {
            page_size,
            num_pages,
        });
    }
    Ok(out)
}

/// The memory topology (cAdvisor's `GetNodesInfo`, memory part).
pub fn machine_info_from_sysfs(sysfs: &dyn SysFs) -> Result<MachineInfo, SysFsError> {
    let mut ids: Vec<usize> = sysfs
        .read_dir(NODE_DIR)
        .map(|names| names.iter().filter_map(|n| node_id(n)).collect())
        .unwrap_or_default();
    if ids.is_empty() {
        let cpus = kubelet_cpumanager::machine_info_from_sysfs(sysfs)?;
        return Ok(MachineInfo {
            topology: cpus
                .topology
                .iter()
                .map(|n| Node {
                    id: n.id,
                    ..Node::default()
                })
                .collect(),
        });
    }
    // filepath.Glob sorts the names: node10 before node2.
    ids.sort_by_key(|id| format!("node{id}"));
    let mut topology = Vec::new();
    for id in ids {
        let dir = format!("{NODE_DIR}/node{id}");
        let memory = match sysfs.read_file(&format!("{dir}/meminfo")) {
            Ok(meminfo) => mem_total(&meminfo)?,
            Err(_) => {
                tracing::warn!(node_dir = %dir, "Found node without memory information");
                0
            }
        };
        let huge_pages = huge_pages_info(sysfs, &format!("{dir}/hugepages"))?;
        topology.push(Node {
            id,
            memory,
            huge_pages,
        });
    }
    Ok(MachineInfo { topology })
}

#[cfg(test)]
#[path = "sysfs_tests.rs"]
mod tests;
