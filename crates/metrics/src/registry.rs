//! The stability framework of `k8s.io/component-base/metrics` (`opts.go`, `registry.go`):
//! help texts annotated `[ALPHA]`/`[BETA]`/`[STABLE]` (and `(Deprecated since X)`),
//! deprecated metrics hidden once their deprecation period is over unless
//! `showHiddenMetricsForVersion` names the previous minor version, and the meta metrics
//! (`registered_metrics_total`, `disabled_metrics_total`, `hidden_metrics_total`,
//! `cardinality_enforcement_unexpected_categorizations_total`).

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use prometheus::core::Collector;
use prometheus::proto::MetricFamily;
use prometheus::{Counter, CounterVec, Opts};

/// The Kubernetes version whose metric lifecycle kubelet-rs follows (`version.Get()`).
pub const CURRENT_VERSION: (u64, u64) = (1, 35);

/// A metric's stability level (`metrics.StabilityLevel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StabilityLevel {
    /// `INTERNAL`.
    Internal,
    /// `ALPHA` (the default).
    Alpha,
    /// `BETA`.
    Beta,
    /// `STABLE`.
    Stable,
}

impl fmt::Display for StabilityLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StabilityLevel::Internal => "INTERNAL",
            StabilityLevel::Alpha => "ALPHA",
            StabilityLevel::Beta => "BETA",
            StabilityLevel::Stable => "STABLE",
        })
    }
}

impl StabilityLevel {
    /// `deprecationPeriodMinorVersions`.
    fn deprecation_period(self) -> u64 {
        match self {
            StabilityLevel::Stable => 3,
            StabilityLevel::Beta => 1,
            StabilityLevel::Alpha | StabilityLevel::Internal => 0,
        }
    }
}

/// What a metric declares besides its name and help (`KubeOpts`).
#[derive(Debug, Clone, Copy)]
pub struct Stability {
    /// The stability level.
    pub level: StabilityLevel,
    /// `DeprecatedVersion` as (major, minor), if deprecated.
    pub deprecated: Option<(u64, u64)>,
}

impl Stability {
    /// A non-deprecated metric at `level`.
    pub const fn of(level: StabilityLevel) -> Self {
        Stability {
            level,
            deprecated: None,
        }
    }

    /// `isDeprecated` at [`CURRENT_VERSION`].
    fn is_deprecated(&self) -> bool {
        self.deprecated.is_some_and(|(major, minor)| {
            CURRENT_VERSION.0 > major || (CURRENT_VERSION.0 == major && CURRENT_VERSION.1 >= minor)
        })
    }

    /// `shouldHide` at [`CURRENT_VERSION`] (a released version, not an `alpha.0`).
    fn should_hide(&self) -> bool {
        let Some((major, minor)) = self.deprecated else {
            return false;
        };
        if !self.is_deprecated() {
            return false;
        }
        let hidden_minor = minor + self.level.deprecation_period();
        match major.cmp(&CURRENT_VERSION.0) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Greater => false,
            std::cmp::Ordering::Equal => hidden_minor <= CURRENT_VERSION.1,
        }
    }

    /// The help text as component-base annotates it: `markDeprecated`, then
    /// `annotateStabilityLevel`.
    pub fn help(&self, help: &str) -> String {
        match self.deprecated {
            Some((major, minor)) if self.is_deprecated() => {
                format!(
                    "[{}] (Deprecated since {major}.{minor}.0) {help}",
                    self.level
                )
            }
            _ => format!("[{}] {help}", self.level),
        }
    }

    /// The `deprecated_version` label of `registered_metrics_total`.
    fn deprecated_label(&self) -> String {
        self.deprecated
            .map(|(major, minor)| format!("{major}.{minor}.0"))
            .unwrap_or_default()
    }
}

/// Builds prometheus [`Opts`] with component-base's annotated help text.
pub fn opts(name: &str, help: &str, stability: Stability) -> Opts {
    Opts::new(name, stability.help(help))
}

/// `showHiddenMetricsForVersion` applied: once set, hidden metrics of every registry are shown.
static SHOW_HIDDEN: AtomicBool = AtomicBool::new(false);

/// Errors registering a metric (a programming error: a duplicate name).
#[derive(Debug, Clone, thiserror::Error)]
#[error("registering metric {name}: {source}")]
pub struct RegisterError {
    name: String,
    #[source]
    source: Arc<prometheus::Error>,
}

impl RegisterError {
    pub(crate) fn new(name: &str, source: prometheus::Error) -> Self {
        RegisterError {
            name: name.to_string(),
            source: Arc::new(source),
        }
    }
}

struct MetaMetrics {
    registered: CounterVec,
    disabled: Counter,
    hidden: Counter,
    cardinality: Counter,
}

/// A registry with component-base's stability framework (`KubeRegistry`).
#[derive(Clone)]
pub struct KubeRegistry {
    inner: prometheus::Registry,
    hidden: Arc<Mutex<Vec<Box<dyn Collector>>>>,
    meta: Option<Arc<MetaMetrics>>,
}

impl Default for KubeRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl KubeRegistry {
    /// An empty registry (`NewKubeRegistry` without meta metrics).
    pub fn new() -> Self {
        KubeRegistry {
            inner: prometheus::Registry::new(),
            hidden: Arc::default(),
            meta: None,
        }
    }

    /// A registry with the meta metrics registered (`RegisterMetaMetrics`, as
    /// legacyregistry's default registry).
    pub fn with_meta_metrics() -> Result<Self, RegisterError> {
        let beta = Stability::of(StabilityLevel::Beta);
        let meta = MetaMetrics {
            registered: CounterVec::new(
                opts(
                    "registered_metrics_total",
                    "The count of registered metrics broken by stability level and deprecation version.",
                    beta,
                ),
                &["stability_level", "deprecated_version"],
            )
            .map_err(|e| RegisterError::new("registered_metrics_total", e))?,
            disabled: counter("disabled_metrics_total", "The count of disabled metrics.", beta)?,
            hidden: counter("hidden_metrics_total", "The count of hidden metrics.", beta)?,
            cardinality: counter(
                "cardinality_enforcement_unexpected_categorizations_total",
                "The count of unexpected categorizations during cardinality enforcement.",
                Stability::of(StabilityLevel::Alpha),
            )?,
        };
        let mut reg = Self::new();
        for (name, c) in [
            (
                "registered_metrics_total",
                Box::new(meta.registered.clone()) as Box<dyn Collector>,
            ),
            ("disabled_metrics_total", Box::new(meta.disabled.clone())),
            ("hidden_metrics_total", Box::new(meta.hidden.clone())),
            (
                "cardinality_enforcement_unexpected_categorizations_total",
                Box::new(meta.cardinality.clone()),
            ),
        ] {
            reg.raw_register(name, c)?;
        }
        // The meta metrics count themselves, as upstream's MustRegister does.
        let meta = Arc::new(meta);
        for _ in 0..3 {
            meta.registered.with_label_values(&["BETA", ""]).inc();
        }
        meta.registered.with_label_values(&["ALPHA", ""]).inc();
        reg.meta = Some(meta);
        Ok(reg)
    }

    /// `MustRegister` of a KubeCollector: counted in `registered_metrics_total`, hidden
    /// when deprecated long enough (unless hidden metrics are shown).
    pub fn register(
        &self,
        name: &str,
        stability: Stability,
        collector: Box<dyn Collector>,
    ) -> Result<(), RegisterError> {
        if let Some(meta) = &self.meta {
            meta.registered
                .with_label_values(&[&stability.level.to_string(), &stability.deprecated_label()])
                .inc();
        }
        if stability.should_hide() && !SHOW_HIDDEN.load(Ordering::Relaxed) {
            if let Some(meta) = &self.meta {
                meta.hidden.inc();
            }
            self.hidden
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(collector);
            return Ok(());
        }
        self.raw_register(name, collector)
    }

    /// `RawMustRegister`: a collector outside the stability framework (process collector).
    pub fn raw_register(
        &self,
        name: &str,
        collector: Box<dyn Collector>,
    ) -> Result<(), RegisterError> {
        self.inner
            .register(collector)
            .map_err(|e| RegisterError::new(name, e))
    }

    /// Registers the hidden collectors (`enableHiddenCollectors`).
    fn show_hidden(&self) {
        let hidden =
            std::mem::take(&mut *self.hidden.lock().unwrap_or_else(PoisonError::into_inner));
        for c in hidden {
            let _ = self.inner.register(c);
        }
    }

    /// Every family with at least one metric.
    pub fn gather(&self) -> Vec<MetricFamily> {
        if SHOW_HIDDEN.load(Ordering::Relaxed) {
            self.show_hidden();
        }
        self.inner.gather()
    }
}

fn counter(name: &str, help: &str, stability: Stability) -> Result<Counter, RegisterError> {
    Counter::with_opts(opts(name, help, stability)).map_err(|e| RegisterError::new(name, e))
}

/// `SetShowHidden`: `showHiddenMetricsForVersion` was set (validated by the configuration
/// as the previous minor version); every registry shows its hidden metrics from now on.
pub fn set_show_hidden() {
    SHOW_HIDDEN.store(true, Ordering::Relaxed);
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn help_carries_the_stability_level_and_deprecation() {
        assert_eq!(
            Stability::of(StabilityLevel::Alpha).help("Number of pods"),
            "[ALPHA] Number of pods"
        );
        let deprecated = Stability {
            level: StabilityLevel::Stable,
            deprecated: Some((1, 34)),
        };
        assert_eq!(deprecated.help("x"), "[STABLE] (Deprecated since 1.34.0) x");
        // Not yet deprecated at 1.35: plain annotation.
        let later = Stability {
            level: StabilityLevel::Alpha,
            deprecated: Some((1, 36)),
        };
        assert_eq!(later.help("x"), "[ALPHA] x");
    }

    #[test]
    fn show_hidden_metrics_serves_the_hidden_ones() {
        let reg = KubeRegistry::with_meta_metrics().unwrap();
        let hidden = Stability {
            level: StabilityLevel::Alpha,
            deprecated: Some((1, 34)),
        };
        let c = counter("krs_test_hidden_total", "A hidden counter.", hidden).unwrap();
        c.inc();
        reg.register("krs_test_hidden_total", hidden, Box::new(c))
            .unwrap();
        let names = |reg: &KubeRegistry| -> Vec<String> {
            reg.gather().iter().map(|f| f.name().to_string()).collect()
        };
        if !SHOW_HIDDEN.load(Ordering::Relaxed) {
            assert!(!names(&reg).contains(&"krs_test_hidden_total".to_string()));
            let text = crate::expfmt::text(&reg.gather());
            assert!(text.contains("\nhidden_metrics_total 1\n"), "{text}");
        }
        // `showHiddenMetricsForVersion: "1.34"`.
        set_show_hidden();
        assert!(names(&reg).contains(&"krs_test_hidden_total".to_string()));
        let text = crate::expfmt::text(&reg.gather());
        assert!(
            text.contains(
                "# HELP krs_test_hidden_total [ALPHA] (Deprecated since 1.34.0) A hidden counter.\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn hiding_follows_the_deprecation_period() {
        let s = |level, minor| Stability {
            level,
            deprecated: Some((1, minor)),
        };
        // ALPHA: hidden from the deprecation release on.
        assert!(s(StabilityLevel::Alpha, 35).should_hide());
        assert!(!s(StabilityLevel::Alpha, 36).should_hide());
        // BETA: one more release; STABLE: three more.
        assert!(!s(StabilityLevel::Beta, 35).should_hide());
        assert!(s(StabilityLevel::Beta, 34).should_hide());
        assert!(!s(StabilityLevel::Stable, 33).should_hide());
        assert!(s(StabilityLevel::Stable, 32).should_hide());
        assert!(!Stability::of(StabilityLevel::Stable).should_hide());
    }
}
