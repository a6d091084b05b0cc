//! The kubelet's HTTP servers: healthz, read-only port, secure port (pkg/kubelet/server).
