//! Scrape checks for tests (feature `testing`): a Prometheus text-format parser
//! (`openmetrics-parser`) plus the checks every kubelet scrape must pass.

use std::collections::HashMap;

use openmetrics_parser::prometheus::parse_prometheus;
use openmetrics_parser::{MetricFamily, PrometheusType, PrometheusValue};

/// A parsed family: its type, help text and samples.
pub type Family = MetricFamily<PrometheusType, PrometheusValue>;

/// Parses a 0.0.4 text exposition; besides the grammar, checks that every family has a
/// `# HELP` and `# TYPE` line and that no family is split (a name appearing twice).
pub fn parse(text: &str) -> Result<HashMap<String, Family>, String> {
    let parsed = parse_prometheus(text).map_err(|e| format!("{e:?}"))?;
    let mut seen = std::collections::HashSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let name = rest.split(' ').next().unwrap_or("");
            if !seen.insert(name.to_string()) {
                return Err(format!("family {name} declared twice"));
            }
        }
    }
    for (name, f) in &parsed.families {
        if f.help.is_empty() {
            return Err(format!("family {name} has no help"));
        }
    }
    Ok(parsed.families)
}

/// The first sample's value of a counter or gauge family with these label values
/// (label values in the family's label-name order).
pub fn value(family: &Family, label_values: &[&str]) -> Option<f64> {
    let values: Vec<String> = label_values.iter().map(|s| s.to_string()).collect();
    let s = family.get_sample_by_label_values(&values)?;
    match &s.value {
        PrometheusValue::Counter(c) => Some(c.value.as_f64()),
        PrometheusValue::Gauge(g) | PrometheusValue::Unknown(g) => Some(g.as_f64()),
        PrometheusValue::Histogram(h) => h.count.map(|c| c as f64),
        PrometheusValue::Summary(s) => s.count.map(|c| c as f64),
    }
}

/// The sum of a family's samples (counts for histograms).
pub fn total(family: &Family) -> f64 {
    family
        .iter_samples()
        .map(|s| match &s.value {
            PrometheusValue::Counter(c) => c.value.as_f64(),
            PrometheusValue::Gauge(g) | PrometheusValue::Unknown(g) => g.as_f64(),
            PrometheusValue::Histogram(h) => h.count.unwrap_or(0) as f64,
            PrometheusValue::Summary(s) => s.count.unwrap_or(0) as f64,
        })
        .sum()
}

/// A parsed OpenMetrics family.
pub type OpenMetricsFamily = openmetrics_parser::MetricFamily<
    openmetrics_parser::OpenMetricsType,
    openmetrics_parser::OpenMetricsValue,
>;

/// Parses an OpenMetrics text exposition with `openmetrics-parser` (which checks the
/// grammar, `# EOF`, the sample names each type allows, counters' `_total`, histogram
/// buckets), and checks the rules it leaves out: `# EOF` once and last, no empty line, no
/// family declared twice, a counter family's name without `_total`, every family typed.
pub fn parse_openmetrics(text: &str) -> Result<HashMap<String, OpenMetricsFamily>, String> {
    let parsed =
        openmetrics_parser::openmetrics::parse_openmetrics(text).map_err(|e| format!("{e:?}"))?;
    let lines: Vec<&str> = text.split('\n').collect();
    if lines.last() != Some(&"") || lines.get(lines.len().wrapping_sub(2)) != Some(&"# EOF") {
        return Err("the exposition does not end with `# EOF\\n`".into());
    }
    let mut seen = std::collections::HashSet::new();
    for (i, line) in lines[..lines.len() - 1].iter().enumerate() {
        if line.is_empty() {
            return Err(format!("empty line {}", i + 1));
        }
        if *line == "# EOF" && i != lines.len() - 2 {
            return Err(format!("`# EOF` on line {} before the end", i + 1));
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut it = rest.split(' ');
            let (name, kind) = (it.next().unwrap_or(""), it.next().unwrap_or(""));
            if !seen.insert(name.to_string()) {
                return Err(format!("family {name} declared twice"));
            }
            if kind == "counter" && name.ends_with("_total") {
                return Err(format!("counter family {name} ends with _total"));
            }
            if kind == "untyped" {
                return Err(format!(
                    "family {name}: `untyped` is not an OpenMetrics type"
                ));
            }
        }
    }
    Ok(parsed.families)
}
