//! Pod status computation and the status manager (pkg/kubelet/status, kubelet_pods.go generateAPIPodStatus).
