//! `AddKubeletConfigFlags`, third part: eviction, reserved resources and node
//! allocatable, the memory manager and node registration.

use super::{FlagDef, flag};
use crate::flags::Parsed;
use crate::flagvalue::Target;

pub(super) fn resource_flags() -> Vec<FlagDef> {
    vec![
        flag(
            "eviction-hard",
            t!(LangleMap, config.eviction_hard),
            "A set of eviction thresholds (e.g. memory.available<1Gi) that if met would trigger a pod eviction.",
        ),
        flag(
            "eviction-soft",
            t!(LangleMapPlain, config.eviction_soft),
            "A set of eviction thresholds (e.g. memory.available<1.5Gi) that if met over a corresponding grace period would trigger a pod eviction.",
        ),
        flag(
            "eviction-soft-grace-period",
            t!(MapStr, config.eviction_soft_grace_period; false),
            "A set of eviction grace periods (e.g. memory.available=1m30s) that correspond to how long a soft eviction threshold must hold before triggering a pod eviction.",
        ),
        flag(
            "eviction-pressure-transition-period",
            t!(Dur, config.eviction_pressure_transition_period),
            "Duration for which the kubelet has to wait before transitioning out of an eviction pressure condition.",
        ),
        flag(
            "eviction-max-pod-grace-period",
            t!(Int32, config.eviction_max_pod_grace_period),
            "Maximum allowed grace period (in seconds) to use when terminating pods in response to a soft eviction threshold being met.  If negative, defer to pod specified value.",
        ),
        flag(
            "eviction-minimum-reclaim",
            t!(MapStr, config.eviction_minimum_reclaim; false),
            "A set of minimum reclaims (e.g. imagefs.available=2Gi) that describes the minimum amount of resource the kubelet will reclaim when performing a pod eviction if that resource is under pressure.",
        ),
        flag(
            "pods-per-core",
            t!(Int32, config.pods_per_core),
            "Number of Pods per core that can run on this Kubelet. The total number of Pods on this Kubelet cannot exceed max-pods, so max-pods will be used if this calculation results in a larger number of Pods allowed on the Kubelet. A value of 0 disables this limit.",
        ),
        flag(
            "protect-kernel-defaults",
            t!(Bool, config.protect_kernel_defaults),
            "Default kubelet behaviour for kernel tuning. If set, kubelet errors if any of kernel tunables is different than kubelet defaults.",
        ),
        flag(
            "reserved-cpus",
            t!(Str, config.reserved_system_cpus),
            "A comma-separated list of CPUs or CPU ranges that are reserved for system and kubernetes usage. This specific list will supersede cpu counts in --system-reserved and --kube-reserved.",
        ),
        flag(
            "topology-manager-scope",
            t!(Str, config.topology_manager_scope),
            "Scope to which topology hints applied. Topology Manager collects hints from Hint Providers and applies them to defined scope to ensure the pod admission. Possible values: 'container', 'pod'.",
        ),
        flag(
            "topology-manager-policy-options",
            t!(MapStr, config.topology_manager_policy_options; true),
            "A set of key=value Topology Manager policy options to use, to fine tune their behaviour. If not supplied, keep the default behaviour.",
        ),
        flag(
            "system-reserved",
            t!(MapStr, config.system_reserved; false),
            "A set of ResourceName=ResourceQuantity (e.g. cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000) pairs that describe resources reserved for non-kubernetes components. Currently only cpu, memory, pid and local ephemeral storage for root file system are supported. See https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/ for more detail. [default=none]",
        ),
        flag(
            "kube-reserved",
            t!(MapStr, config.kube_reserved; false),
            "A set of ResourceName=ResourceQuantity (e.g. cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000) pairs that describe resources reserved for kubernetes system components. Currently only cpu, memory, pid and local ephemeral storage for root file system are supported. See https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/ for more detail. [default=none]",
        ),
        flag(
            "enforce-node-allocatable",
            t!(OptStrings, config.enforce_node_allocatable),
            "A comma separated list of levels of node allocatable enforcement to be enforced by kubelet. Acceptable options are 'none', 'pods', 'system-reserved', 'system-reserved-compressible', 'kube-reserved' and 'kube-reserved-compressible'. If any of the latter four options are specified, '--system-reserved-cgroup' and '--kube-reserved-cgroup' must also be set, respectively. If 'none' is specified, no additional options should be set. See https://kubernetes.io/docs/tasks/administer-cluster/reserve-compute-resources/ for more details.",
        ),
        flag(
            "system-reserved-cgroup",
            t!(Str, config.system_reserved_cgroup),
            "Absolute name of the top level cgroup that is used to manage non-kubernetes components for which compute resources were reserved via '--system-reserved' flag. Ex. '/system-reserved'. [default='']",
        ),
        flag(
            "kube-reserved-cgroup",
            t!(Str, config.kube_reserved_cgroup),
            "Absolute name of the top level cgroup that is used to manage kubernetes components for which compute resources were reserved via '--kube-reserved' flag. Ex. '/kube-reserved'. [default='']",
        ),
        flag(
            "memory-manager-policy",
            t!(Str, config.memory_manager_policy),
            "Memory Manager policy to use. Possible values: 'None', 'Static'.",
        ),
        flag(
            "reserved-memory",
            t!(ReservedMemory, config.reserved_memory),
            "A comma separated list of memory reservations for NUMA nodes. (e.g. --reserved-memory 0:memory=1Gi,hugepages-1M=2Gi --reserved-memory 1:memory=2Gi). The total sum for each memory type should be equal to the sum of kube-reserved, system-reserved and eviction-threshold. See https://kubernetes.io/docs/tasks/administer-cluster/memory-manager/#reserved-memory-flag for more details.",
        ),
        flag(
            "register-node",
            t!(OptBool, config.register_node),
            "Register the node with the apiserver. If --kubeconfig is not provided, this flag is irrelevant, as the Kubelet won't have an apiserver to register with.",
        ),
        flag(
            "register-with-taints",
            t!(Taints, config.register_with_taints),
            "Register the node with the given list of taints (comma separated \"<key>=<value>:<effect>\"). No-op if register-node is false.",
        ),
    ]
}
