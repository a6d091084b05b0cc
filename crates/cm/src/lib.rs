//! Container manager: cgroup roots, machine info, node allocatable, OOM score adjustment (pkg/kubelet/cm, pkg/util/oom).
