//! The last rules (metrics, logging, tracing, memory QoS, runtime endpoint, logs), aggregation and `--node-labels`.

use super::*;

#[test]
fn show_hidden_metrics() {
    assert!(errors(|kc| kc.show_hidden_metrics_for_version = "1.34".into()).is_empty());
    one(
        errors(|kc| kc.show_hidden_metrics_for_version = "1.33".into()),
        "--show-hidden-metrics-for-version must be omitted or have the value '1.34'. Only the previous minor version is allowed",
    );
}

#[test]
fn logging() {
    one(
        errors(|kc| kc.logging.format = "xml".into()),
        "logging.format: Invalid value: \"xml\": Unsupported log format",
    );
    assert!(errors(|kc| kc.logging.format = "json".into()).is_empty());
    one(
        errors(|kc| kc.logging.options.text.split_stream = true),
        "logging.options.text.splitStream: Forbidden: Feature LoggingAlphaOptions is disabled",
    );
}

#[test]
fn logging_vmodule_and_flush_frequency() {
    use crate::types::{TimeOrMetaDuration, VModuleItem};
    let item = |p: &str, v: u32| VModuleItem {
        file_pattern: p.into(),
        verbosity: v,
    };
    assert!(errors(|kc| kc.logging.vmodule = vec![item("server*", 4)]).is_empty());
    assert_eq!(
        errors(|kc| {
            kc.logging.vmodule = vec![item("", 2), item("a=b", 1), item("ok", u32::MAX)]
        }),
        vec![
            "logging.vmodule[0]: Required value: File pattern must not be empty",
            "logging.vmodule[1]: Invalid value: \"a=b\": File pattern must not contain equal sign or comma",
            "logging.vmodule[2]: Invalid value: 4294967295: Must be <= 2147483647",
        ]
    );
    one(
        errors(|kc| {
            kc.logging.flush_frequency = TimeOrMetaDuration {
                duration: Duration::from_secs(-1),
                serialize_as_string: true,
            }
        }),
        "logging.flushFrequency: Invalid value: \"-1s\": Must be greater than zero",
    );
    one(
        errors(|kc| {
            kc.logging.flush_frequency = TimeOrMetaDuration {
                duration: Duration::from_secs(-1),
                serialize_as_string: false,
            }
        }),
        "logging.flushFrequency: Invalid value: -1000000000: Must be greater than zero",
    );
}

#[test]
fn tracing() {
    one(
        errors(|kc| {
            kc.tracing = Some(TracingConfiguration {
                endpoint: None,
                sampling_rate_per_million: Some(-1),
            })
        }),
        "tracing.samplingRatePerMillion: Invalid value: -1: sampling rate must be positive",
    );
    let endpoint = |e: &str| {
        errors(|kc| {
            kc.tracing = Some(TracingConfiguration {
                endpoint: Some(e.into()),
                sampling_rate_per_million: None,
            })
        })
    };
    for ok in ["localhost:4317", "dns://otel:4317", "unix:///run/otel.sock"] {
        assert!(endpoint(ok).is_empty(), "{ok}");
    }
    one(
        endpoint("collector host:4317"),
        "tracing.endpoint: Invalid value: \"dns://collector host:4317\": parse \"dns://collector host:4317\": invalid character \" \" in host name",
    );
    one(
        endpoint("http://collector:4318"),
        "tracing.endpoint: Invalid value: \"http://collector:4318\": unsupported scheme: http.  Options are none, dns, unix, or unix-abstract.  See https://github.com/grpc/grpc/blob/master/doc/naming.md",
    );
}

#[test]
fn memory_qos() {
    one(
        errors_with(&[("MemoryQoS", true)], |kc| {
            kc.memory_throttling_factor = None
        }),
        "invalid configuration: memoryThrottlingFactor is required when MemoryQoS feature flag is enabled",
    );
    one(
        errors(|kc| kc.memory_throttling_factor = Some(1.5)),
        "invalid configuration: memoryThrottlingFactor 1.5 must be greater than 0 and less than or equal to 1.0",
    );
}

#[test]
fn runtime_endpoint() {
    one(
        errors(|kc| kc.container_runtime_endpoint.clear()),
        "invalid configuration: the containerRuntimeEndpoint was not specified or empty",
    );
}

#[test]
fn system_log_query() {
    let errs = errors(|kc| {
        kc.enable_system_log_query = Some(true);
        kc.enable_system_log_handler = Some(false);
    });
    assert_eq!(
        errs,
        vec![
            "invalid configuration: NodeLogQuery feature gate is required for enableSystemLogQuery",
            "invalid configuration: enableSystemLogHandler is required for enableSystemLogQuery",
        ]
    );
}

#[test]
fn log_rotation() {
    one(
        errors(|kc| kc.container_log_max_workers = Some(0)),
        "invalid configuration: containerLogMaxWorkers must be greater than or equal to 1",
    );
    one(
        errors(|kc| kc.container_log_monitor_interval = Some(Duration::from_secs(2))),
        "invalid configuration: containerLogMonitorInterval must be a positive time duration greater than or equal to 3s",
    );
    one(
        errors(|kc| kc.container_log_max_files = Some(1)),
        "invalid configuration: containerLogMaxFiles must be greater than 1",
    );
}

#[test]
fn pod_logs_dir() {
    one(
        errors(|kc| kc.pod_logs_dir = "logs".into()),
        "invalid configuration: pod logs path \"logs\" must be absolute path",
    );
    one(
        errors(|kc| kc.pod_logs_dir = "/var/log//pods/".into()),
        "invalid configuration: pod logs path \"/var/log//pods/\" must be normalized",
    );
    one(
        errors(|kc| kc.pod_logs_dir = "/var/lög".into()),
        "invalid configuration: pod logs path \"/var/lög\" mut contains ASCII characters only",
    );
    let errs = errors(|kc| kc.pod_logs_dir.clear());
    assert_eq!(
        errs[0],
        "invalid configuration: podLogsDir was not specified"
    );
}

#[test]
fn all_errors_are_collected_and_aggregated() {
    let mut kc = valid();
    kc.port = 0;
    kc.max_pods = -1;
    let e = validate_kubelet_configuration(&kc, &FeatureGate::new(), V2).unwrap_err();
    assert_eq!(e.0.len(), 2);
    assert_eq!(
        e.to_string(),
        "[invalid configuration: maxPods (--max-pods) -1 must not be a negative number, invalid configuration: port (--port) 0 must be between 1 and 65535, inclusive]"
    );
}

#[test]
fn kubelet_label_allow_list() {
    assert!(validate_kubelet_flags(&crate::KubeletFlags::default()).is_ok());
    assert!(flags::is_kubelet_label("kubernetes.io/hostname"));
    assert!(flags::is_kubelet_label("a.node.kubernetes.io/x"));
    assert!(!flags::is_kubelet_label("node-role.kubernetes.io/worker"));
    let mut f = crate::KubeletFlags::default();
    f.node_labels
        .insert("node-role.kubernetes.io/worker".into(), String::new());
    assert!(
        validate_kubelet_flags(&f)
            .unwrap_err()
            .contains("[node-role.kubernetes.io/worker]")
    );
}
