//! Kubelet feature gates at the Kubernetes 1.35 level (pkg/features/kube_features.go, component-base/featuregate).
