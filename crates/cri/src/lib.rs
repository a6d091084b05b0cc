//! CRI v1 (runtime.v1) gRPC clients, generated from vendored k8s.io/cri-api protos, plus a recording fake CRI server (k8s.io/cri-api, pkg/kubelet/cri/remote).
