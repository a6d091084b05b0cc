//! What node status reads from the rest of the kubelet ([`NodeStatusSource`], implemented
//! by the app over its runtime, PLEG and machine info) and from the host's network
//! ([`HostNetwork`]: `net.InterfaceAddrs`, `net.LookupIP`, `utilnet.ResolveBindAddress`),
//! with recording fakes.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use kubelet_cm::{HugePagesInfo, MachineInfo};
use kubelet_container::{EventType, Image, RuntimeStatus};

use crate::runtime_state::HealthCheck;

/// The machine as cAdvisor describes it (`MachineInfo` with its huge pages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    /// CPUs, memory, IDs, kernel and OS.
    pub info: MachineInfo,
    /// Huge page sizes.
    pub hugepages: Vec<HugePagesInfo>,
}

/// An event about the node (`recordEvent` / `recordNodeStatusEvent`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeEvent {
    /// `Normal` or `Warning`.
    pub event_type: EventType,
    /// `NodeReady`, `NodeHasSufficientMemory`, `Rebooted`...
    pub reason: String,
    /// The event's message.
    pub message: String,
}

/// The kubelet's parts node status reads. Errors are the messages upstream would log.
#[async_trait]
pub trait NodeStatusSource: Send + Sync {
    /// cAdvisor's cached `MachineInfo`.
    fn machine(&self) -> Result<Machine, String>;
    /// The capacity in bytes of the kubelet root directory's filesystem (`RootFsInfo`).
    fn root_fs_capacity(&self) -> Result<u64, String>;
    /// `containerRuntime.Type()`.
    fn runtime_type(&self) -> String;
    /// `containerRuntime.Version()`: the runtime's version string (CRI `runtime_version`).
    async fn runtime_version(&self) -> Result<String, String>;
    /// `containerRuntime.Status()`.
    async fn runtime_status(&self) -> Result<RuntimeStatus, String>;
    /// The images on the node (`imageManager.GetImageList`), in any order.
    async fn images(&self) -> Result<Vec<Image>, String>;
    /// The health checks of `runtimeState` (`PLEG`, `EventedPLEG`), evaluated now.
    fn health_checks(&self) -> Vec<HealthCheck>;
    /// Record an event about the node.
    fn record_event(&self, event: NodeEvent);
    /// The eviction manager's pressure (upstream `evictionManager.IsUnderMemoryPressure`,
    /// `IsUnderDiskPressure`, `IsUnderPIDPressure`); none without one.
    fn pressure(&self) -> NodePressure {
        NodePressure::default()
    }
    /// The node shutdown manager's `ShutdownStatus` (`Err("node is shutting down")` while
    /// the node shuts down); none without a manager.
    fn shutdown_status(&self) -> Result<(), String> {
        Ok(())
    }
}

/// Which pressure conditions the eviction manager reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodePressure {
    /// `MemoryPressure`.
    pub memory: bool,
    /// `DiskPressure`.
    pub disk: bool,
    /// `PIDPressure`.
    pub pid: bool,
}

/// The host's network, as node addresses need it.
pub trait HostNetwork: Send + Sync {
    /// The addresses of the host's interfaces (`net.InterfaceAddrs`).
    fn interface_addrs(&self) -> Result<Vec<IpAddr>, String>;
    /// `net.LookupIP(name)` (empty when it fails).
    fn lookup_ip(&self, name: &str) -> Vec<IpAddr>;
    /// `utilnet.ResolveBindAddress(bind)`: `bind` itself when specified, else a global
    /// unicast address of the default route's interface (IPv4 preferred unless `bind` is
    /// `::`).
    fn resolve_bind_address(&self, bind: Option<IpAddr>) -> Result<IpAddr, String>;
}

/// The real host: `getifaddrs`, the system resolver, `/proc/net/route` and
/// `/proc/net/ipv6_route`.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealHostNetwork;

fn ifaddrs() -> Result<Vec<(String, IpAddr)>, String> {
    let addrs = nix::ifaddrs::getifaddrs().map_err(|e| e.to_string())?;
    Ok(addrs
        .filter_map(|a| {
            let addr = a.address?;
            let ip = if let Some(v4) = addr.as_sockaddr_in() {
                IpAddr::V4(v4.ip())
            } else {
                IpAddr::V6(addr.as_sockaddr_in6()?.ip())
            };
            Some((a.interface_name, ip))
        })
        .collect())
}

/// The interface of the default route of a family, from `/proc/net/route` (destination
/// `00000000`) or `/proc/net/ipv6_route` (destination `::/0`).
fn default_route_interface(v4: bool) -> Option<String> {
    if v4 {
        let text = std::fs::read_to_string("/proc/net/route").ok()?;
        text.lines().skip(1).find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 7 && f[1] == "00000000" && f[7] == "00000000").then(|| f[0].to_string())
        })
    } else {
        let text = std::fs::read_to_string("/proc/net/ipv6_route").ok()?;
        text.lines().find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 10 && f[0].chars().all(|c| c == '0') && f[1] == "00" && f[9] != "lo")
                .then(|| f[9].to_string())
        })
    }
}

fn is_global_unicast(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            !(v4.is_loopback()
                || v4.is_link_local()
                || v4.is_multicast()
                || v4.is_unspecified()
                || v4.is_broadcast())
        }
        IpAddr::V6(v6) => {
            !(v6.is_loopback()
                || v6.is_multicast()
                || v6.is_unspecified()
                || v6.is_unicast_link_local())
        }
    }
}

impl HostNetwork for RealHostNetwork {
    fn interface_addrs(&self) -> Result<Vec<IpAddr>, String> {
        Ok(ifaddrs()?.into_iter().map(|(_, ip)| ip).collect())
    }

    fn lookup_ip(&self, name: &str) -> Vec<IpAddr> {
        use std::net::ToSocketAddrs;
        (name, 0)
            .to_socket_addrs()
            .map(|it| it.map(|a| a.ip()).collect())
            .unwrap_or_default()
    }

    fn resolve_bind_address(&self, bind: Option<IpAddr>) -> Result<IpAddr, String> {
        if let Some(ip) = bind.filter(|ip| !ip.is_unspecified()) {
            return Ok(ip);
        }
        // `ChooseHostInterface`: IPv4 first unless `::` was given.
        let families = if matches!(bind, Some(IpAddr::V6(_))) {
            [false, true]
        } else {
            [true, false]
        };
        let addrs = ifaddrs()?;
        for v4 in families {
            let Some(iface) = default_route_interface(v4) else {
                continue;
            };
            if let Some((_, ip)) = addrs
                .iter()
                .find(|(n, ip)| *n == iface && ip.is_ipv4() == v4 && is_global_unicast(ip))
            {
                return Ok(*ip);
            }
        }
        Err("no default routes found in \"/proc/net/route\" or \"/proc/net/ipv6_route\"".into())
    }
}

/// A host network that answers from fixed data.
#[derive(Debug, Default, Clone)]
pub struct FakeHostNetwork {
    /// `interface_addrs`.
    pub interface_addrs: Vec<IpAddr>,
    /// `lookup_ip` for any name.
    pub lookup: Vec<IpAddr>,
    /// `resolve_bind_address` when nothing is specified.
    pub default_ip: Option<IpAddr>,
}

impl HostNetwork for FakeHostNetwork {
    fn interface_addrs(&self) -> Result<Vec<IpAddr>, String> {
        Ok(self.interface_addrs.clone())
    }
    fn lookup_ip(&self, _name: &str) -> Vec<IpAddr> {
        self.lookup.clone()
    }
    fn resolve_bind_address(&self, bind: Option<IpAddr>) -> Result<IpAddr, String> {
        bind.filter(|ip| !ip.is_unspecified())
            .or(self.default_ip)
            .ok_or_else(|| "no default routes found".to_string())
    }
}

/// A [`NodeStatusSource`] whose answers tests set; records the events.
#[derive(Debug, Clone)]
pub struct FakeNodeStatusSource {
    state: Arc<Mutex<FakeSourceState>>,
}

/// The answers of a [`FakeNodeStatusSource`].
#[derive(Debug, Clone)]
pub struct FakeSourceState {
    pub machine: Result<Machine, String>,
    pub root_fs_capacity: Result<u64, String>,
    pub runtime_type: String,
    pub runtime_version: Result<String, String>,
    pub runtime_status: Result<RuntimeStatus, String>,
    pub images: Result<Vec<Image>, String>,
    pub health_checks: Vec<HealthCheck>,
    pub events: Vec<NodeEvent>,
    pub pressure: NodePressure,
    /// `ShutdownStatus`'s error (the node is shutting down).
    pub shutdown_error: Option<String>,
}

/// A CRI status with `RuntimeReady` and `NetworkReady` true.
fn ready_status() -> RuntimeStatus {
    let ready = |t: &str| kubelet_container::RuntimeCondition {
        type_: t.into(),
        status: true,
        ..Default::default()
    };
    RuntimeStatus {
        conditions: vec![
            ready(RuntimeStatus::RUNTIME_READY),
            ready(RuntimeStatus::NETWORK_READY),
        ],
        features: None,
    }
}

impl FakeNodeStatusSource {
    /// A healthy machine: 2 CPUs, 4 GiB, 2 MiB huge pages (none allocated), 100 GiB root
    /// filesystem, containerd 2.1.4 ready, no images.
    pub fn new(machine: MachineInfo) -> Self {
        FakeNodeStatusSource {
            state: Arc::new(Mutex::new(FakeSourceState {
                machine: Ok(Machine {
                    info: machine,
                    hugepages: vec![HugePagesInfo {
                        page_size_kib: 2048,
                        num_pages: 0,
                    }],
                }),
                root_fs_capacity: Ok(100 << 30),
                runtime_type: "containerd".into(),
                runtime_version: Ok("v2.1.4".into()),
                runtime_status: Ok(ready_status()),
                images: Ok(Vec::new()),
                health_checks: vec![("PLEG".into(), Ok(()))],
                events: Vec::new(),
                pressure: NodePressure::default(),
                shutdown_error: None,
            })),
        }
    }

    /// Change the answers.
    pub fn update(&self, f: impl FnOnce(&mut FakeSourceState)) {
        f(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner));
    }

    fn get<R>(&self, f: impl FnOnce(&mut FakeSourceState) -> R) -> R {
        f(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The runtime and its network are ready.
    pub fn set_runtime_ready(&self) {
        self.update(|s| s.runtime_status = Ok(ready_status()));
    }

    /// The runtime reports `features` in its (ready) status.
    pub fn set_runtime_features(&self, features: Option<kubelet_container::RuntimeFeatures>) {
        self.update(|s| {
            if let Ok(status) = &mut s.runtime_status {
                status.features = features;
            }
        });
    }

    /// The runtime is ready, its network is not (`NetworkReady=false` with `reason`,
    /// `message`), as a CRI `Status` says while no CNI configuration is installed.
    pub fn set_network_not_ready(&self, reason: &str, message: &str) {
        let condition = |t: &str, ok: bool| kubelet_container::RuntimeCondition {
            type_: t.into(),
            status: ok,
            reason: if ok { "" } else { reason }.into(),
            message: if ok { "" } else { message }.into(),
        };
        self.update(|s| {
            s.runtime_status = Ok(RuntimeStatus {
                conditions: vec![
                    condition(RuntimeStatus::RUNTIME_READY, true),
                    condition(RuntimeStatus::NETWORK_READY, false),
                ],
                features: None,
            });
        });
    }

    /// The events recorded so far, as `reason: message`, and forgets them.
    pub fn take_events(&self) -> Vec<String> {
        self.get(|s| std::mem::take(&mut s.events))
            .into_iter()
            .map(|e| format!("{} {}: {}", e.event_type.as_str(), e.reason, e.message))
            .collect()
    }
}

#[async_trait]
impl NodeStatusSource for FakeNodeStatusSource {
    fn machine(&self) -> Result<Machine, String> {
        self.get(|s| s.machine.clone())
    }
    fn root_fs_capacity(&self) -> Result<u64, String> {
        self.get(|s| s.root_fs_capacity.clone())
    }
    fn runtime_type(&self) -> String {
        self.get(|s| s.runtime_type.clone())
    }
    async fn runtime_version(&self) -> Result<String, String> {
        self.get(|s| s.runtime_version.clone())
    }
    async fn runtime_status(&self) -> Result<RuntimeStatus, String> {
        self.get(|s| s.runtime_status.clone())
    }
    async fn images(&self) -> Result<Vec<Image>, String> {
        self.get(|s| s.images.clone())
    }
    fn health_checks(&self) -> Vec<HealthCheck> {
        self.get(|s| s.health_checks.clone())
    }
    fn record_event(&self, event: NodeEvent) {
        self.get(|s| s.events.push(event));
    }
    fn pressure(&self) -> NodePressure {
        self.get(|s| s.pressure)
    }
    fn shutdown_status(&self) -> Result<(), String> {
        self.get(|s| s.shutdown_error.clone()).map_or(Ok(()), Err)
    }
}
