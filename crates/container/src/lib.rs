//! Runtime-neutral container types and the Runtime trait the kubelet drives (pkg/kubelet/container).
