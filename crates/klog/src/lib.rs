//! klog-compatible text and JSON log formatting for `tracing`
//! (mirrors `k8s.io/klog/v2` text output and `k8s.io/component-base/logs/json`).
//!
//! Text lines look exactly like the upstream kubelet's:
//!
//! ```text
//! I1129 19:41:28.123456   12345 server.rs:123] "Message" key="value" count=3
//! ```
//!
//! Verbosity (`-v=N`) maps onto `tracing` levels: `error!`, `warn!` and `info!` are
//! always shown (klog `V(0)`); `debug!` is shown from `-v=2` and `trace!` from `-v=4`,
//! matching the kubelet's usual split between V(2) "more detail" and V(4) "debug".

mod fields;
mod format;

pub use format::{JsonFormat, TextFormat};

use tracing::level_filters::LevelFilter;

/// Output format, as selected by `--logging-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// klog text (`--logging-format=text`, the default).
    #[default]
    Text,
    /// component-base JSON (`--logging-format=json`).
    Json,
}

impl std::str::FromStr for Format {
    type Err = LogError;
    fn from_str(s: &str) -> Result<Self, LogError> {
        match s {
            "" | "text" => Ok(Format::Text),
            "json" => Ok(Format::Json),
            other => Err(LogError::UnknownFormat(other.to_string())),
        }
    }
}

/// Errors of logging set-up.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// `--logging-format` names a format we do not have.
    #[error("format: Invalid value: {0:?}: Unsupported log format")]
    UnknownFormat(String),
    /// A global subscriber was already installed.
    #[error("logging already initialised")]
    AlreadyInitialised,
}

/// The `tracing` level filter for a klog verbosity.
pub fn level_filter(verbosity: u32) -> LevelFilter {
    match verbosity {
        0 | 1 => LevelFilter::INFO,
        2 | 3 => LevelFilter::DEBUG,
        _ => LevelFilter::TRACE,
    }
}

/// The klog verbosity a `tracing` level stands for (for the JSON `"v"` field).
pub fn verbosity_of(level: &tracing::Level) -> u32 {
    match *level {
        tracing::Level::TRACE => 4,
        tracing::Level::DEBUG => 2,
        _ => 0,
    }
}

/// Whether an event passes the verbosity: our own crates (`kubelet_*` targets) log up to
/// the level `-v` allows; libraries (tonic, hyper, h2…) only at info and above, so that
/// `-v=4` shows the kubelet's debug output, not every HTTP/2 frame.
pub fn enabled(target: &str, level: &tracing::Level, verbosity: u32) -> bool {
    let max = level_filter(verbosity);
    if target.starts_with("kubelet") {
        max >= *level
    } else {
        *level <= tracing::Level::INFO && max >= *level
    }
}

/// Installs the global subscriber writing to stderr, as klog does.
pub fn init(format: Format, verbosity: u32) -> Result<(), LogError> {
    init_filtered(format, move |target, level| {
        enabled(target, level, verbosity)
    })
}

/// Like [`init`], but only warnings and errors are written (kubelet-rs's `--print-config`
/// shows the warnings a start would log, and nothing else).
pub fn init_warnings_only(format: Format) -> Result<(), LogError> {
    init_filtered(format, |_, level| *level <= tracing::Level::WARN)
}

fn init_filtered(
    format: Format,
    keep: impl Fn(&str, &tracing::Level) -> bool + Send + Sync + 'static,
) -> Result<(), LogError> {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter =
        tracing_subscriber::filter::filter_fn(move |meta| keep(meta.target(), meta.level()));
    let layer = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let registry = tracing_subscriber::registry().with(filter);
    let result = match format {
        Format::Text => registry.with(layer.event_format(TextFormat)).try_init(),
        Format::Json => registry.with(layer.event_format(JsonFormat)).try_init(),
    };
    result.map_err(|_| LogError::AlreadyInitialised)
}
