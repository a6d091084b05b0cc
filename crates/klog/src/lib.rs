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
//! `--vmodule` raises the verbosity per source file ([`VModule`]).

mod fields;
mod format;
mod vmodule;

pub use format::{JsonFormat, TextFormat};
pub use vmodule::VModule;

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

/// [`enabled`] with `--vmodule`: an event of our own crates from a file `vmodule` names
/// passes up to that file's verbosity when it is larger than `-v` (klog `VDepth`).
pub fn enabled_in_file(
    target: &str,
    file: Option<&str>,
    level: &tracing::Level,
    verbosity: u32,
    vmodule: &VModule,
) -> bool {
    if enabled(target, level, verbosity) {
        return true;
    }
    if vmodule.is_empty() || !target.starts_with("kubelet") {
        return false;
    }
    file.and_then(|f| vmodule.level_for_file(f))
        .is_some_and(|v| level_filter(v) >= *level)
}

/// The `-v` in effect for the subscriber [`init`] installed; [`set_verbosity`] changes it.
static VERBOSITY: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Changes `-v` at run time (upstream `logs.GlogSetter`, behind `PUT /debug/flags/v`):
/// later events are filtered with `verbosity`.
pub fn set_verbosity(verbosity: u32) {
    VERBOSITY.store(verbosity, std::sync::atomic::Ordering::Relaxed);
    // The filter's per-callsite answers were cached for the old level.
    tracing::callsite::rebuild_interest_cache();
}

/// The `-v` in effect.
pub fn verbosity() -> u32 {
    VERBOSITY.load(std::sync::atomic::Ordering::Relaxed)
}

/// Installs the global subscriber writing to stderr, as klog does.
pub fn init(format: Format, verbosity: u32, vmodule: VModule) -> Result<(), LogError> {
    VERBOSITY.store(verbosity, std::sync::atomic::Ordering::Relaxed);
    init_filtered(format, move |meta| {
        enabled_in_file(
            meta.target(),
            meta.file(),
            meta.level(),
            self::verbosity(),
            &vmodule,
        )
    })
}

/// Like [`init`], but only warnings and errors are written (kubelet-rs's `--print-config`
/// shows the warnings a start would log, and nothing else).
pub fn init_warnings_only(format: Format) -> Result<(), LogError> {
    init_filtered(format, |meta| *meta.level() <= tracing::Level::WARN)
}

fn init_filtered(
    format: Format,
    keep: impl Fn(&tracing::Metadata<'_>) -> bool + Send + Sync + 'static,
) -> Result<(), LogError> {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = tracing_subscriber::filter::filter_fn(keep);
    let layer = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let registry = tracing_subscriber::registry().with(filter);
    let result = match format {
        Format::Text => registry.with(layer.event_format(TextFormat)).try_init(),
        Format::Json => registry.with(layer.event_format(JsonFormat)).try_init(),
    };
    result.map_err(|_| LogError::AlreadyInitialised)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::Level;

    #[test]
    fn vmodule_raises_verbosity_per_file() {
        let vm = VModule::new([("syncer", 4), ("pleg*", 2)]);
        let syncer = Some("crates/app/src/kubelet/syncer.rs");
        let generic = Some("crates/pleg/src/generic.rs");
        let pleg = Some("crates/app/src/kubelet/pleg_events.rs");
        // -v=0: only the named files log below info, each up to its own level.
        assert!(enabled_in_file(
            "kubelet_app::kubelet::syncer",
            syncer,
            &Level::TRACE,
            0,
            &vm
        ));
        assert!(enabled_in_file(
            "kubelet_app::x",
            pleg,
            &Level::DEBUG,
            0,
            &vm
        ));
        assert!(!enabled_in_file(
            "kubelet_app::x",
            pleg,
            &Level::TRACE,
            0,
            &vm
        ));
        assert!(!enabled_in_file(
            "kubelet_pleg::generic",
            generic,
            &Level::DEBUG,
            0,
            &vm
        ));
        assert!(enabled_in_file(
            "kubelet_pleg::generic",
            generic,
            &Level::INFO,
            0,
            &vm
        ));
        // -v is a floor: a file's pattern never lowers it.
        let low = VModule::new([("syncer", 0)]);
        assert!(enabled_in_file(
            "kubelet_app::x",
            syncer,
            &Level::DEBUG,
            2,
            &low
        ));
        // Libraries keep their info cap, as Go libraries do not log through klog.
        assert!(!enabled_in_file(
            "h2::codec",
            Some("src/syncer.rs"),
            &Level::DEBUG,
            0,
            &vm
        ));
        // No vmodule: -v alone.
        let none = VModule::default();
        assert!(!enabled_in_file(
            "kubelet_app::x",
            syncer,
            &Level::DEBUG,
            0,
            &none
        ));
        assert!(enabled_in_file(
            "kubelet_app::x",
            syncer,
            &Level::DEBUG,
            2,
            &none
        ));
    }
}
