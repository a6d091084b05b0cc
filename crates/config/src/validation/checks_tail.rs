//! The end of `ValidateKubeletConfiguration`: logging (`logsapi.Validate`), tracing
//! (`tracingapi.ValidateTracingConfiguration`), MemoryQoS, runtime endpoint, system log
//! query, log rotation and `podLogsDir`.

use kubelet_features::{FeatureGate, gates};

use super::go_url;
use crate::types::KubeletConfiguration;

const P: &str = "invalid configuration:";

/// `logsapi.Validate` (`component-base/logs/api/v1/options.go`).
fn logging(kc: &KubeletConfiguration, g: &FeatureGate, errs: &mut Vec<String>) {
    let l = &kc.logging;
    if l.flush_frequency.duration <= kubelet_apimachinery::Duration::ZERO {
        // field.Invalid renders the value as its JSON: a string or nanoseconds.
        let value = serde_json::to_string(&l.flush_frequency).unwrap_or_default();
        errs.push(format!(
            "logging.flushFrequency: Invalid value: {value}: Must be greater than zero"
        ));
    }
    match l.format.as_str() {
        "text" => {}
        "json" => {
            if !g.enabled(gates::LOGGING_BETA_OPTIONS) {
                errs.push("logging.format: Forbidden: Log format json is disabled, see LoggingBetaOptions feature".to_string());
            }
        }
        other => errs.push(format!(
            "logging.format: Invalid value: {other:?}: Unsupported log format"
        )),
    }
    if l.verbosity > i32::MAX as u32 {
        errs.push(format!(
            "logging.verbosity: Invalid value: {}: Must be <= {}",
            l.verbosity,
            i32::MAX
        ));
    }
    if !l.vmodule.is_empty() && !l.format.is_empty() && l.format != "text" {
        errs.push("logging.vmodule: Forbidden: Only supported for text log format".to_string());
    }
    for (i, item) in l.vmodule.iter().enumerate() {
        let pattern = &item.file_pattern;
        if pattern.is_empty() {
            errs.push(format!(
                "logging.vmodule[{i}]: Required value: File pattern must not be empty"
            ));
        }
        if pattern.contains(['=', ',']) {
            errs.push(format!(
                "logging.vmodule[{i}]: Invalid value: {}: File pattern must not contain equal sign or comma",
                kubelet_apimachinery::go_quote(pattern)
            ));
        }
        if item.verbosity > i32::MAX as u32 {
            errs.push(format!(
                "logging.vmodule[{i}]: Invalid value: {}: Must be <= {}",
                item.verbosity,
                i32::MAX
            ));
        }
    }
    let alpha = g.enabled(gates::LOGGING_ALPHA_OPTIONS);
    for (name, o) in [("text", &l.options.text), ("json", &l.options.json)] {
        if !alpha && o.split_stream {
            errs.push(format!("logging.options.{name}.splitStream: Forbidden: Feature LoggingAlphaOptions is disabled"));
        }
        let buffered = o.info_buffer_size.as_deref().is_some_and(|q| q != "0");
        if !alpha && buffered {
            errs.push(format!("logging.options.{name}.infoBufferSize: Forbidden: Feature LoggingAlphaOptions is disabled"));
        }
    }
}

/// `tracingapi.ValidateTracingConfiguration` (`component-base/tracing/api/v1/config.go`).
fn tracing(kc: &KubeletConfiguration, errs: &mut Vec<String>) {
    let Some(t) = &kc.tracing else { return };
    if let Some(rate) = t.sampling_rate_per_million {
        if rate < 0 {
            errs.push(format!("tracing.samplingRatePerMillion: Invalid value: {rate}: sampling rate must be positive"));
        }
        if rate > 1_000_000 {
            errs.push(format!("tracing.samplingRatePerMillion: Invalid value: {rate}: sampling rate per million must be less than or equal to one million"));
        }
    }
    if let Some(endpoint) = &t.endpoint
        && let Err(e) = validate_endpoint(endpoint)
    {
        errs.push(e);
    }
}

/// `validateEndpoint`: a gRPC target with scheme dns (the default), unix or unix-abstract.
fn validate_endpoint(endpoint: &str) -> Result<(), String> {
    let endpoint = if endpoint.contains("//") {
        endpoint.to_string()
    } else {
        format!("dns://{endpoint}")
    };
    let invalid = |detail: String| {
        format!(
            "tracing.endpoint: Invalid value: {}: {detail}",
            kubelet_apimachinery::go_quote(&endpoint)
        )
    };
    match go_url::parse_scheme(&endpoint).map_err(invalid)?.as_str() {
        "dns" | "unix" | "unix-abstract" => Ok(()),
        other => Err(invalid(format!(
            "unsupported scheme: {other}.  Options are none, dns, unix, or unix-abstract.  See https://github.com/grpc/grpc/blob/master/doc/naming.md"
        ))),
    }
}

pub(super) fn logging_and_tail(kc: &KubeletConfiguration, g: &FeatureGate, errs: &mut Vec<String>) {
    logging(kc, g, errs);
    tracing(kc, errs);
    if g.enabled(gates::MEMORY_QOS) && kc.memory_throttling_factor.is_none() {
        errs.push(format!(
            "{P} memoryThrottlingFactor is required when MemoryQoS feature flag is enabled"
        ));
    }
    if let Some(f) = kc.memory_throttling_factor
        && (f <= 0.0 || f > 1.0)
    {
        errs.push(format!(
            "{P} memoryThrottlingFactor {} must be greater than 0 and less than or equal to 1.0",
            super::extra::go_float(f)
        ));
    }
    if kc.container_runtime_endpoint.is_empty() {
        errs.push(format!(
            "{P} the containerRuntimeEndpoint was not specified or empty"
        ));
    }
    let query = kc.enable_system_log_query.unwrap_or(false);
    if query && !g.enabled(gates::NODE_LOG_QUERY) {
        errs.push(format!(
            "{P} NodeLogQuery feature gate is required for enableSystemLogQuery"
        ));
    }
    if query && !kc.enable_system_log_handler.unwrap_or(false) {
        errs.push(format!(
            "{P} enableSystemLogHandler is required for enableSystemLogQuery"
        ));
    }
    if kc.container_log_max_workers.unwrap_or(0) < 1 {
        errs.push(format!(
            "{P} containerLogMaxWorkers must be greater than or equal to 1"
        ));
    }
    if kc
        .container_log_monitor_interval
        .unwrap_or_default()
        .as_millis()
        < 3000
    {
        errs.push(format!("{P} containerLogMonitorInterval must be a positive time duration greater than or equal to 3s"));
    }
    if kc.container_log_max_files.unwrap_or(0) <= 1 {
        errs.push(format!("{P} containerLogMaxFiles must be greater than 1"));
    }
    pod_logs_dir(&kc.pod_logs_dir, errs);
}

fn pod_logs_dir(dir: &str, errs: &mut Vec<String>) {
    if dir.is_empty() {
        errs.push(format!("{P} podLogsDir was not specified"));
    }
    if !dir.starts_with('/') {
        errs.push(format!("{P} pod logs path {dir:?} must be absolute path"));
    }
    if crate::fs::clean(std::path::Path::new(dir)).to_string_lossy() != dir {
        errs.push(format!("{P} pod logs path {dir:?} must be normalized"));
    }
    if !dir.is_ascii() {
        errs.push(format!(
            "{P} pod logs path {dir:?} mut contains ASCII characters only"
        ));
    }
}
