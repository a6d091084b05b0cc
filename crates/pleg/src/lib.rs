//! Pod lifecycle event generator: generic relist and CRI event stream (pkg/kubelet/pleg).
