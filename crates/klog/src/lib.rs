//! klog-compatible text and JSON log formatting for tracing (k8s.io/klog/v2, component-base/logs).
