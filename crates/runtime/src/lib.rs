//! The kubelet's container runtime manager on top of CRI: SyncPod, sandboxes, containers, images, GC, logs (pkg/kubelet/kuberuntime).
