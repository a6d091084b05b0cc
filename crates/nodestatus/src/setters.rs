//! The node status setters: `pkg/kubelet/nodestatus/setters.go`. Each one fills part of a
//! `Node` from its inputs, as upstream's `Setter` closures do; here the inputs are
//! gathered once per computation ([`SetterInputs`]) so every setter is a pure function.
//! Events the setters record are collected in [`SetterContext::events`].
//!
//! Not set (no such subsystem yet): device plugin resources, `VolumesInUse`,
//! `runtimeHandlers` (gates `RecursiveReadOnlyMounts`, `UserNamespacesSupport`), swap
//! capacity (`NodeSwap`),
//! `declaredFeatures`, the container manager's soft requirements, the node shutdown
//! manager's errors.

use std::collections::BTreeMap;
use std::net::IpAddr;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    ContainerImage, DaemonEndpoint, Node, NodeAddress, NodeCondition, NodeDaemonEndpoints,
    NodeFeatures, NodeStatus, NodeSystemInfo,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubelet_apimachinery::goruntime::{GOOS, go_arch};
use kubelet_apimachinery::{Format, Quantity, parse_semantic};
use kubelet_cm::capacity::{
    RESOURCE_CPU, RESOURCE_EPHEMERAL_STORAGE, RESOURCE_MEMORY, RESOURCE_PODS,
    ephemeral_storage_capacity, is_huge_page_resource_name,
};
use kubelet_cm::capacity_from_machine_info;
use kubelet_container::events::reasons as events;
use kubelet_container::{EventType, Image, RuntimeFeatures};

use crate::config::NodeStatusConfig;
use crate::runtime_state::aggregate;
use crate::source::{HostNetwork, Machine, NodeEvent};

/// `MaxNamesPerImageInNodeStatus`.
pub const MAX_NAMES_PER_IMAGE_IN_NODE_STATUS: usize = 5;

/// `cloudproviderapi.AnnotationAlphaProvidedIPAddr`.
pub const ANNOTATION_ALPHA_PROVIDED_IP_ADDR: &str = "alpha.kubernetes.io/provided-node-ip";

/// Node condition types.
pub mod condition {
    /// `v1.NodeReady`.
    pub const READY: &str = "Ready";
    /// `v1.NodeMemoryPressure`.
    pub const MEMORY_PRESSURE: &str = "MemoryPressure";
    /// `v1.NodeDiskPressure`.
    pub const DISK_PRESSURE: &str = "DiskPressure";
    /// `v1.NodePIDPressure`.
    pub const PID_PRESSURE: &str = "PIDPressure";
}

/// What the setters read, gathered once per status computation.
#[derive(Debug, Clone)]
pub struct SetterInputs {
    /// `clock.Now()`.
    pub now: Timestamp,
    /// `GetCachedMachineInfo`.
    pub machine: Result<Machine, String>,
    /// `RootFsInfo().Capacity` (the container manager's ephemeral-storage capacity).
    pub root_fs_capacity: Result<u64, String>,
    /// `containerRuntime.Type()`.
    pub runtime_type: String,
    /// `containerRuntime.Version()`.
    pub runtime_version: Result<String, String>,
    /// `imageManager.GetImageList()`.
    pub images: Result<Vec<Image>, String>,
    /// `runtimeState.runtimeErrors()`, flattened.
    pub runtime_errors: Vec<String>,
    /// `runtimeState.networkErrors()`, flattened.
    pub network_errors: Vec<String>,
    /// `runtimeState.runtimeFeatures()`.
    pub runtime_features: Option<RuntimeFeatures>,
    /// `shutdownManager.ShutdownStatus()`: `node is shutting down` while the graceful
    /// node shutdown runs.
    pub node_shutdown_error: Option<String>,
    /// `evictionManager.IsUnderMemoryPressure()` (no eviction manager yet: false).
    pub memory_pressure: bool,
    /// `evictionManager.IsUnderDiskPressure()`.
    pub disk_pressure: bool,
    /// `evictionManager.IsUnderPIDPressure()`.
    pub pid_pressure: bool,
}

/// The setters' environment: configuration, host network, collected events and the
/// once-only reboot event.
pub struct SetterContext<'a> {
    /// The node's settings.
    pub cfg: &'a NodeStatusConfig,
    /// The inputs of this computation.
    pub inputs: &'a SetterInputs,
    /// The host's network (node addresses).
    pub host: &'a dyn HostNetwork,
    /// Events recorded by the setters.
    pub events: Vec<NodeEvent>,
    /// `rebootEvent sync.Once`: set once the reboot event was recorded.
    pub reboot_event_recorded: &'a mut bool,
}

impl SetterContext<'_> {
    /// `recordNodeStatusEvent`: `Node <name> status is now: <event>`.
    fn record_node_status_event(&mut self, event_type: EventType, event: &str) {
        tracing::debug!(node = %self.cfg.node_name, event, "Recording event message for node");
        self.events.push(NodeEvent {
            event_type,
            reason: event.to_string(),
            message: format!("Node {} status is now: {event}", self.cfg.node_name),
        });
    }
}

fn status(node: &mut Node) -> &mut NodeStatus {
    node.status.get_or_insert_with(NodeStatus::default)
}

fn node_info(node: &mut Node) -> &mut NodeSystemInfo {
    status(node)
        .node_info
        .get_or_insert_with(NodeSystemInfo::default)
}

fn api_quantity(q: &Quantity) -> ApiQuantity {
    ApiQuantity(q.to_string())
}

fn parse_quantity(q: &ApiQuantity) -> Quantity {
    Quantity::parse(&q.0).unwrap_or_default()
}

/// Wall time as the API stores it (whole seconds).
pub fn api_time(t: Timestamp) -> Time {
    Time(Timestamp::from_second(t.as_second()).unwrap_or(t))
}

/// `validateNodeIP`: the node IP must be a usable unicast address of this host.
pub fn validate_node_ip(ip: IpAddr, host: &dyn HostNetwork) -> Result<(), String> {
    let link_local = match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => v6.is_unicast_link_local(),
    };
    if ip.is_loopback() {
        return Err("nodeIP can't be loopback address".into());
    }
    if ip.is_multicast() {
        return Err("nodeIP can't be a multicast address".into());
    }
    if link_local {
        return Err("nodeIP can't be a link-local unicast address".into());
    }
    if ip.is_unspecified() {
        return Err("nodeIP can't be an all zeros address".into());
    }
    if host.interface_addrs()?.contains(&ip) {
        return Ok(());
    }
    Err(format!(
        "node IP: \"{ip}\" not found in the host's network interfaces"
    ))
}

/// `NodeAddress`: InternalIP(s) and Hostname, without a cloud provider's addresses.
pub fn node_address(node: &mut Node, ctx: &SetterContext<'_>) -> Result<(), String> {
    let cfg = ctx.cfg;
    let node_ip = cfg.node_ips.first().copied();
    let secondary = cfg.node_ips.get(1).copied();
    let prefer_v4 = node_ip.is_none_or(|ip| ip.is_ipv4());
    let specified = node_ip.filter(|ip| !ip.is_unspecified());
    let secondary_specified = secondary.filter(|ip| !ip.is_unspecified());
    if let Some(ip) = specified {
        validate_node_ip(ip, ctx.host).map_err(|e| format!("failed to validate nodeIP: {e}"))?;
        tracing::trace!(IP = %ip, "Using node IP");
    }
    if let Some(ip) = secondary_specified {
        validate_node_ip(ip, ctx.host)
            .map_err(|e| format!("failed to validate secondaryNodeIP: {e}"))?;
        tracing::trace!(IP = %ip, "Using secondary node IP");
    }
    let annotations = node.metadata.annotations.get_or_insert_with(BTreeMap::new);
    match specified {
        Some(ip) if cfg.external_cloud_provider => {
            let mut value = ip.to_string();
            if let Some(s) = secondary_specified {
                value = format!("{value},{s}");
            }
            annotations.insert(ANNOTATION_ALPHA_PROVIDED_IP_ADDR.into(), value);
        }
        _ => {
            annotations.remove(ANNOTATION_ALPHA_PROVIDED_IP_ADDR);
        }
    }
    if node
        .metadata
        .annotations
        .as_ref()
        .is_some_and(BTreeMap::is_empty)
    {
        node.metadata.annotations = None;
    }
    let hostname_addr = NodeAddress {
        type_: "Hostname".into(),
        address: cfg.hostname.clone(),
    };
    let internal = |ip: IpAddr| NodeAddress {
        type_: "InternalIP".into(),
        address: ip.to_string(),
    };
    if cfg.external_cloud_provider {
        if status(node)
            .addresses
            .as_ref()
            .is_some_and(|a| !a.is_empty())
        {
            return Ok(());
        }
        if node_ip.is_none() {
            status(node).addresses = Some(vec![hostname_addr]);
            return Ok(());
        }
    }
    if let (Some(ip), Some(ip2)) = (specified, secondary_specified) {
        status(node).addresses = Some(vec![internal(ip), internal(ip2), hostname_addr]);
        return Ok(());
    }
    let mut last_err = String::new();
    let ip = if let Some(ip) = specified {
        Some(ip)
    } else if let Some(ip) = kubelet_apimachinery::parse_ip_sloppy(&cfg.hostname) {
        Some(ip)
    } else {
        let mut chosen = None;
        for addr in ctx.host.lookup_ip(&cfg.node_name) {
            match validate_node_ip(addr, ctx.host) {
                Ok(()) if addr.is_ipv4() == prefer_v4 => {
                    chosen = Some(addr);
                    break;
                }
                Ok(()) => {
                    chosen = chosen.or(Some(addr));
                }
                Err(e) => last_err = e,
            }
        }
        match chosen {
            Some(ip) => Some(ip),
            None => match ctx.host.resolve_bind_address(node_ip) {
                Ok(ip) => Some(ip),
                Err(e) => {
                    last_err = e;
                    None
                }
            },
        }
    };
    let Some(ip) = ip else {
        return Err(format!(
            "can't get ip address of node {}. error: {last_err}",
            cfg.node_name
        ));
    };
    status(node).addresses = Some(vec![internal(ip), hostname_addr]);
    Ok(())
}

/// The container manager's capacity (`GetCapacity`): the machine's, plus
/// ephemeral-storage from the root filesystem when local storage capacity isolation is on.
pub fn container_manager_capacity(
    machine: &Machine,
    inputs: &SetterInputs,
    cfg: &NodeStatusConfig,
) -> BTreeMap<String, Quantity> {
    let mut c = capacity_from_machine_info(&machine.info, &machine.hugepages);
    if cfg.local_storage_capacity_isolation
        && let Ok(bytes) = &inputs.root_fs_capacity
    {
        c.insert(
            RESOURCE_EPHEMERAL_STORAGE.into(),
            ephemeral_storage_capacity(*bytes),
        );
    }
    c
}

/// The node's pod capacity: `maxPods`, or `podsPerCore × cores` when set and smaller.
pub fn pods_capacity(cfg: &NodeStatusConfig, num_cores: usize) -> i64 {
    let cores = i64::try_from(num_cores).unwrap_or(i64::MAX);
    if cfg.pods_per_core > 0 {
        cores.saturating_mul(cfg.pods_per_core).min(cfg.max_pods)
    } else {
        cfg.max_pods
    }
}

/// `v1helper.IsExtendedResourceName`: a qualified name outside the `kubernetes.io`
/// namespaces that is not a quota `requests.` name.
fn is_extended_resource_name(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    !native && !name.starts_with("requests.")
}

/// `MachineInfo`: nodeInfo IDs, capacity (cpu, memory, huge pages, pods,
/// ephemeral-storage) and allocatable = capacity − `GetNodeAllocatableReservation`
/// (never negative), with huge pages also taken out of allocatable memory.
pub fn machine_info(node: &mut Node, ctx: &mut SetterContext<'_>) -> Result<(), String> {
    let cfg = ctx.cfg;
    let inputs = ctx.inputs;
    let mut capacity: BTreeMap<String, ApiQuantity> =
        status(node).capacity.take().unwrap_or_default();
    let mut reservation = BTreeMap::new();
    match &inputs.machine {
        Err(e) => {
            capacity.insert(RESOURCE_CPU.into(), ApiQuantity("0".into()));
            capacity.insert(RESOURCE_MEMORY.into(), ApiQuantity("0".into()));
            capacity.insert(RESOURCE_PODS.into(), ApiQuantity(cfg.max_pods.to_string()));
            tracing::error!(err = %e, "Error getting machine info");
        }
        Ok(machine) => {
            let info = node_info(node);
            info.machine_id = machine.info.machine_id.clone();
            info.system_uuid = machine.info.system_uuid.clone();
            let cm_capacity = container_manager_capacity(machine, inputs, cfg);
            for (k, v) in capacity_from_machine_info(&machine.info, &machine.hugepages) {
                capacity.insert(k, api_quantity(&v));
            }
            capacity.insert(
                RESOURCE_PODS.into(),
                ApiQuantity(pods_capacity(cfg, machine.info.num_cores()).to_string()),
            );
            let old_boot_id = node_info(node).boot_id.clone();
            if !old_boot_id.is_empty()
                && old_boot_id != machine.info.boot_id
                && !*ctx.reboot_event_recorded
            {
                *ctx.reboot_event_recorded = true;
                ctx.events.push(NodeEvent {
                    event_type: EventType::Warning,
                    reason: events::NODE_REBOOTED.into(),
                    message: format!(
                        "Node {} has been rebooted, boot id: {}",
                        cfg.node_name, machine.info.boot_id
                    ),
                });
            }
            node_info(node).boot_id = machine.info.boot_id.clone();
            if let Some(v) = cm_capacity.get(RESOURCE_EPHEMERAL_STORAGE) {
                capacity.insert(RESOURCE_EPHEMERAL_STORAGE.into(), api_quantity(v));
            }
            reservation = cfg.node_config.node_allocatable_reservation(&cm_capacity);
        }
    }
    let st = status(node);
    let mut allocatable = st.allocatable.take().unwrap_or_default();
    allocatable.retain(|k, _| capacity.contains_key(k) || !is_extended_resource_name(k));
    for (k, v) in &capacity {
        let mut value = parse_quantity(v);
        if let Some(r) = reservation.get(k) {
            value = value.sub(r);
        }
        if value.sign() < 0 {
            value = Quantity::from_int(0, value.format());
        }
        allocatable.insert(k.clone(), api_quantity(&value));
    }
    for (k, v) in &capacity {
        if is_huge_page_resource_name(k) {
            let mem = allocatable
                .get(RESOURCE_MEMORY)
                .map(parse_quantity)
                .unwrap_or_default();
            let mut mem = mem.sub(&parse_quantity(v));
            if mem.sign() < 0 {
                mem = Quantity::from_int(0, Format::BinarySI);
            }
            allocatable.insert(RESOURCE_MEMORY.into(), api_quantity(&mem));
        }
    }
    st.capacity = Some(capacity);
    st.allocatable = Some(allocatable);
    Ok(())
}

/// `utilversion.ParseGeneric(v).String()`: two or more dot-separated numbers after an
/// optional `v` (the first without a leading zero), anything after them dropped.
fn generic_string(v: &str) -> Option<String> {
    let rest = v.trim_start_matches(['\t', '\n', '\u{c}', '\r', ' ']);
    let rest = rest.strip_prefix('v').unwrap_or(rest);
    let end = rest
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || (c == '.' && i > 0 && rest[i + 1..].starts_with(|d: char| d.is_ascii_digit())))
        })
        .map_or(rest.len(), |(i, _)| i);
    let (numbers, extra) = rest.split_at(end);
    if numbers.is_empty() || extra.contains('\n') {
        return None;
    }
    let components: Vec<&str> = numbers.split('.').collect();
    if components.len() < 2 || (components[0].starts_with('0') && components[0] != "0") {
        return None;
    }
    let nums: Option<Vec<String>> = components
        .iter()
        .map(|c| c.parse::<u64>().ok().map(|n| n.to_string()))
        .collect();
    Some(nums?.join("."))
}

/// The runtime's version as `kubeGenericRuntimeManager.Version` reports it
/// (`newRuntimeVersion`: `ParseSemantic`, else `ParseGeneric`), as Go's `String()`.
fn runtime_version_string(v: &str) -> Option<String> {
    let Ok(v) = parse_semantic(v) else {
        return generic_string(v);
    };
    let mut s = format!("{}.{}.{}", v.major, v.minor, v.patch);
    if !v.pre_release.is_empty() {
        s = format!("{s}-{}", v.pre_release);
    }
    if !v.build_metadata.is_empty() {
        s = format!("{s}+{}", v.build_metadata);
    }
    Some(s)
}

/// `VersionInfo`: kernel, OS image, `<runtime>://<version>` (`Unknown` when the runtime
/// does not answer or its version is not semantic), kubelet version; `kubeProxyVersion`
/// cleared under `DisableNodeKubeProxyVersion`.
pub fn version_info(node: &mut Node, ctx: &SetterContext<'_>) -> Result<(), String> {
    let machine = ctx
        .inputs
        .machine
        .as_ref()
        .map_err(|e| format!("error getting version info: {e}"))?;
    let runtime_version = ctx
        .inputs
        .runtime_version
        .as_ref()
        .ok()
        .and_then(|v| runtime_version_string(v))
        .unwrap_or_else(|| "Unknown".to_string());
    let info = node_info(node);
    info.kernel_version = machine.info.kernel_version.clone();
    info.os_image = machine.info.os_image.clone();
    info.container_runtime_version = format!("{}://{runtime_version}", ctx.inputs.runtime_type);
    info.kubelet_version = ctx.cfg.kubelet_version.clone();
    info.kube_proxy_version = if ctx.cfg.disable_node_kube_proxy_version {
        String::new()
    } else {
        ctx.cfg.kubelet_version.clone()
    };
    Ok(())
}

/// `DaemonEndpoints`: the kubelet's port.
pub fn daemon_endpoints(node: &mut Node, ctx: &SetterContext<'_>) {
    status(node).daemon_endpoints = Some(NodeDaemonEndpoints {
        kubelet_endpoint: Some(DaemonEndpoint {
            port: ctx.cfg.kubelet_port,
        }),
    });
}

/// `Images`: the largest `nodeStatusMaxImages` images (all with -1), each with up to
/// [`MAX_NAMES_PER_IMAGE_IN_NODE_STATUS`] names, digests first.
pub fn images(node: &mut Node, ctx: &SetterContext<'_>) -> Result<(), String> {
    let list = match &ctx.inputs.images {
        Ok(l) => l,
        Err(e) => {
            status(node).images = None;
            return Err(format!("error getting image list: {e}"));
        }
    };
    let mut sorted: Vec<&Image> = list.iter().collect();
    // `imageManager.GetImageList` sorts by size, largest first.
    sorted.sort_by_key(|i| std::cmp::Reverse(i.size));
    if let Ok(max) = usize::try_from(ctx.cfg.node_status_max_images) {
        sorted.truncate(max);
    }
    let images: Vec<ContainerImage> = sorted
        .into_iter()
        .map(|image| {
            let mut names: Vec<String> = image
                .repo_digests
                .iter()
                .chain(&image.repo_tags)
                .cloned()
                .collect();
            names.truncate(MAX_NAMES_PER_IMAGE_IN_NODE_STATUS);
            ContainerImage {
                names: Some(names),
                size_bytes: Some(i64::try_from(image.size).unwrap_or(i64::MAX)),
            }
        })
        .collect();
    status(node).images = (!images.is_empty()).then_some(images);
    Ok(())
}

/// `GoRuntime`: operating system and architecture.
pub fn go_runtime(node: &mut Node) {
    let info = node_info(node);
    info.operating_system = GOOS.to_string();
    info.architecture = go_arch().to_string();
}

/// `NodeFeatures`: `status.features.supplementalGroupsPolicy` from the runtime's
/// features; left as it is while the runtime reports none (gate `SupplementalGroupsPolicy`
/// is GA and locked on).
pub fn node_features(node: &mut Node, ctx: &SetterContext<'_>) {
    let Some(features) = ctx.inputs.runtime_features else {
        return;
    };
    status(node).features = Some(NodeFeatures {
        supplemental_groups_policy: Some(features.supplemental_groups_policy),
    });
}

/// `ReadyCondition`: `KubeletReady` or `KubeletNotReady` with the runtime, network, node
/// shutdown and missing-capacity errors aggregated as `utilerrors` does; the transition time is kept
/// while the status stays; `NodeReady`/`NodeNotReady` events on a change.
pub fn ready_condition(node: &mut Node, ctx: &mut SetterContext<'_>) {
    let now = api_time(ctx.inputs.now);
    let mut errs: Vec<String> = ctx.inputs.runtime_errors.clone();
    errs.extend(ctx.inputs.network_errors.iter().cloned());
    errs.extend(ctx.inputs.node_shutdown_error.iter().cloned());
    let mut required = vec![RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_PODS];
    if ctx.cfg.local_storage_capacity_isolation {
        required.push(RESOURCE_EPHEMERAL_STORAGE);
    }
    let capacity = status(node).capacity.clone().unwrap_or_default();
    let missing: Vec<&str> = required
        .into_iter()
        .filter(|r| !capacity.contains_key(*r))
        .collect();
    if !missing.is_empty() {
        errs.push(format!(
            "missing node capacity for resources: {}",
            missing.join(", ")
        ));
    }
    let mut new = match aggregate(&errs) {
        None => NodeCondition {
            type_: condition::READY.into(),
            status: "True".into(),
            reason: Some("KubeletReady".into()),
            message: Some("kubelet is posting ready status".into()),
            last_heartbeat_time: Some(now.clone()),
            last_transition_time: None,
        },
        Some(message) => NodeCondition {
            type_: condition::READY.into(),
            status: "False".into(),
            reason: Some("KubeletNotReady".into()),
            message: Some(message),
            last_heartbeat_time: Some(now.clone()),
            last_transition_time: None,
        },
    };
    let conditions = status(node).conditions.get_or_insert_with(Vec::new);
    let mut record = false;
    if let Some(c) = conditions.iter_mut().find(|c| c.type_ == condition::READY) {
        if c.status == new.status {
            new.last_transition_time = c.last_transition_time.clone();
        } else {
            new.last_transition_time = Some(now);
            record = true;
        }
        *c = new.clone();
    } else {
        new.last_transition_time = Some(now);
        conditions.push(new.clone());
    }
    if record {
        if new.status == "True" {
            ctx.record_node_status_event(EventType::Normal, events::NODE_READY);
        } else {
            ctx.record_node_status_event(EventType::Normal, events::NODE_NOT_READY);
            tracing::info!(node = %ctx.cfg.node_name, condition = ?new, "Node became not ready");
        }
    }
}

/// The texts of one pressure condition: (type, reason, message, event) when under
/// pressure and when not.
struct Pressure {
    type_: &'static str,
    yes: [&'static str; 3],
    no: [&'static str; 3],
}

const MEMORY: Pressure = Pressure {
    type_: condition::MEMORY_PRESSURE,
    yes: [
        "KubeletHasInsufficientMemory",
        "kubelet has insufficient memory available",
        "NodeHasInsufficientMemory",
    ],
    no: [
        "KubeletHasSufficientMemory",
        "kubelet has sufficient memory available",
        "NodeHasSufficientMemory",
    ],
};

const DISK: Pressure = Pressure {
    type_: condition::DISK_PRESSURE,
    yes: [
        "KubeletHasDiskPressure",
        "kubelet has disk pressure",
        "NodeHasDiskPressure",
    ],
    no: [
        "KubeletHasNoDiskPressure",
        "kubelet has no disk pressure",
        "NodeHasNoDiskPressure",
    ],
};

const PID: Pressure = Pressure {
    type_: condition::PID_PRESSURE,
    yes: [
        "KubeletHasInsufficientPID",
        "kubelet has insufficient PID available",
        "NodeHasInsufficientPID",
    ],
    no: [
        "KubeletHasSufficientPID",
        "kubelet has sufficient PID available",
        "NodeHasSufficientPID",
    ],
};

fn pressure_condition(node: &mut Node, ctx: &mut SetterContext<'_>, p: &Pressure, under: bool) {
    let now = api_time(ctx.inputs.now);
    let conditions = status(node).conditions.get_or_insert_with(Vec::new);
    let idx = match conditions.iter().position(|c| c.type_ == p.type_) {
        Some(i) => i,
        None => {
            conditions.push(NodeCondition {
                type_: p.type_.into(),
                status: "Unknown".into(),
                ..NodeCondition::default()
            });
            conditions.len() - 1
        }
    };
    let c = &mut conditions[idx];
    c.last_heartbeat_time = Some(now.clone());
    let (want, [reason, message, event]) = if under {
        ("True", p.yes)
    } else {
        ("False", p.no)
    };
    if c.status != want {
        c.status = want.into();
        c.reason = Some(reason.into());
        c.message = Some(message.into());
        c.last_transition_time = Some(now);
        ctx.record_node_status_event(EventType::Normal, event);
    }
}

/// `MemoryPressureCondition`.
pub fn memory_pressure_condition(node: &mut Node, ctx: &mut SetterContext<'_>) {
    let under = ctx.inputs.memory_pressure;
    pressure_condition(node, ctx, &MEMORY, under);
}

/// `DiskPressureCondition`.
pub fn disk_pressure_condition(node: &mut Node, ctx: &mut SetterContext<'_>) {
    let under = ctx.inputs.disk_pressure;
    pressure_condition(node, ctx, &DISK, under);
}

/// `PIDPressureCondition`.
pub fn pid_pressure_condition(node: &mut Node, ctx: &mut SetterContext<'_>) {
    let under = ctx.inputs.pid_pressure;
    pressure_condition(node, ctx, &PID, under);
}

/// `setNodeStatus` with `defaultNodeStatusFuncs`, in upstream's order; a failing setter is
/// logged and the others still run.
pub fn set_node_status(node: &mut Node, ctx: &mut SetterContext<'_>) {
    let name = node.metadata.name.clone().unwrap_or_default();
    let results = [
        ("NodeAddress", node_address(node, ctx)),
        ("MachineInfo", machine_info(node, ctx)),
        ("VersionInfo", version_info(node, ctx)),
    ];
    for (setter, r) in results {
        if let Err(e) = r {
            tracing::error!(err = %e, node = %name, setter, "Failed to set some node status fields");
        }
    }
    daemon_endpoints(node, ctx);
    if let Err(e) = images(node, ctx) {
        tracing::error!(err = %e, node = %name, "Failed to set some node status fields");
    }
    go_runtime(node);
    node_features(node, ctx);
    memory_pressure_condition(node, ctx);
    disk_pressure_condition(node, ctx);
    pid_pressure_condition(node, ctx);
    ready_condition(node, ctx);
}
