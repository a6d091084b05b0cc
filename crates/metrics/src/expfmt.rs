//! The exposition formats, as client_golang's `promhttp` negotiates and writes them
//! (`github.com/prometheus/common/expfmt` `Negotiate`, `MetricFamilyToText`, and the
//! delimited protobuf encoder) for the handlers `k8s.io/component-base/metrics` installs.
//!
//! Upstream's kubelet handlers leave `EnableOpenMetrics` unset, so a scraper asking for
//! `application/openmetrics-text` gets the 0.0.4 text format, as here; a scraper asking for
//! delimited protobuf (Prometheus with native histograms) gets protobuf. The text writer
//! formats numbers as Go's `strconv.FormatFloat(f, 'g', -1, 64)` does (`4.5678592e+07`),
//! so a scrape of kubelet-rs reads byte for byte like one of upstream.

use std::fmt::Write as _;

use prometheus::Encoder as _;
use prometheus::proto::{MetricFamily, MetricType};

/// `text/plain; version=0.0.4; charset=utf-8` (expfmt `FmtText`).
const FMT_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";
/// expfmt `FmtProtoDelim`.
const FMT_PROTO_DELIM: &str =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited";

/// A negotiated exposition format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format {
    kind: FormatKind,
    /// The `escaping=` parameter answered (`underscores` unless the client named another).
    escaping: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FormatKind {
    Text,
    ProtoDelimited,
}

impl Format {
    /// The 0.0.4 text format with the default escaping scheme.
    pub fn text() -> Self {
        Format {
            kind: FormatKind::Text,
            escaping: "underscores".to_string(),
        }
    }

    /// The `Content-Type` header value, as promhttp writes it.
    pub fn content_type(&self) -> String {
        let base = match self.kind {
            FormatKind::Text => FMT_TEXT,
            FormatKind::ProtoDelimited => FMT_PROTO_DELIM,
        };
        format!("{base}; escaping={}", self.escaping)
    }

    /// `true` for the delimited protobuf format.
    pub fn is_protobuf(&self) -> bool {
        self.kind == FormatKind::ProtoDelimited
    }
}

/// expfmt `Negotiate` (OpenMetrics not enabled, as upstream's kubelet handlers): the first
/// acceptable entry of the `Accept` header by quality, else the text format.
pub fn negotiate(accept: Option<&str>) -> Format {
    let mut escaping = "underscores".to_string();
    let mut entries: Vec<(f64, usize, &str)> = accept
        .unwrap_or("")
        .split(',')
        .enumerate()
        .filter(|(_, e)| !e.trim().is_empty())
        .map(|(i, e)| (quality(e), i, e))
        .collect();
    // goautoneg sorts by quality, keeping the order of equal ones.
    entries.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    for (_, _, entry) in entries {
        let mut parts = entry.split(';');
        let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let params: Vec<(String, String)> = parts
            .filter_map(|p| {
                let (k, v) = p.split_once('=')?;
                Some((k.trim().to_string(), v.trim().trim_matches('"').to_string()))
            })
            .collect();
        let param = |k: &str| {
            params
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
                .unwrap_or("")
        };
        let esc = param("escaping");
        if matches!(esc, "allow-utf-8" | "underscores" | "dots" | "values") {
            escaping = esc.to_string();
        }
        if media == "application/vnd.google.protobuf"
            && param("proto") == "io.prometheus.client.MetricFamily"
            && param("encoding") == "delimited"
        {
            return Format {
                kind: FormatKind::ProtoDelimited,
                escaping,
            };
        }
        if media == "text/plain" && matches!(param("version"), "0.0.4" | "") {
            return Format {
                kind: FormatKind::Text,
                escaping,
            };
        }
    }
    Format {
        kind: FormatKind::Text,
        escaping,
    }
}

fn quality(entry: &str) -> f64 {
    entry
        .split(';')
        .skip(1)
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| k.trim() == "q")
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(1.0)
}

/// Encodes gathered families in `format`.
pub fn encode(families: &[MetricFamily], format: &Format) -> Vec<u8> {
    match format.kind {
        FormatKind::Text => text(families).into_bytes(),
        FormatKind::ProtoDelimited => {
            let mut buf = Vec::new();
            // Writing into a Vec cannot fail short of running out of memory; on an
            // encoding error the scrape gets what was written, like promhttp's
            // ContinueOnError.
            let _ = prometheus::ProtobufEncoder::new().encode(families, &mut buf);
            buf
        }
    }
}

/// expfmt `MetricFamilyToText` for every family, families sorted by name and the metrics
/// of a family by their label values (client_golang's `NormalizeMetricFamilies`).
pub fn text(families: &[MetricFamily]) -> String {
    let mut families: Vec<&MetricFamily> = families
        .iter()
        .filter(|f| !f.metric.as_slice().is_empty())
        .collect();
    families.sort_by(|a, b| a.name().cmp(b.name()));
    let mut out = String::new();
    for family in families {
        family_text(&mut out, family);
    }
    out
}

fn family_text(out: &mut String, family: &MetricFamily) {
    let name = family.name();
    if !family.help().is_empty() {
        let _ = writeln!(out, "# HELP {name} {}", escape_help(family.help()));
    }
    let kind = match family.get_field_type() {
        MetricType::COUNTER => "counter",
        MetricType::GAUGE => "gauge",
        MetricType::HISTOGRAM => "histogram",
        MetricType::SUMMARY => "summary",
        MetricType::UNTYPED => "untyped",
    };
    let _ = writeln!(out, "# TYPE {name} {kind}");
    let mut metrics: Vec<(Vec<(&str, &str)>, &prometheus::proto::Metric)> = family
        .metric
        .as_slice()
        .iter()
        .map(|m| {
            let mut labels: Vec<(&str, &str)> =
                m.label.iter().map(|l| (l.name(), l.value())).collect();
            labels.sort_by(|a, b| a.0.cmp(b.0));
            (labels, m)
        })
        .collect();
    metrics.sort_by(|a, b| {
        let av = a.0.iter().map(|l| l.1);
        let bv = b.0.iter().map(|l| l.1);
        av.cmp(bv)
    });
    for (labels, m) in metrics {
        match family.get_field_type() {
            MetricType::COUNTER => {
                sample(out, name, "", &labels, None, &go_float(m.counter.value()));
            }
            MetricType::GAUGE => {
                sample(out, name, "", &labels, None, &go_float(m.gauge.value()));
            }
            MetricType::UNTYPED => {
                sample(out, name, "", &labels, None, &go_float(m.untyped.value()));
            }
            MetricType::HISTOGRAM => {
                let h = &m.histogram;
                let mut inf_seen = false;
                for b in h.bucket.as_slice() {
                    let le = go_float(b.upper_bound());
                    inf_seen |= b.upper_bound().is_infinite();
                    let count = b.cumulative_count().to_string();
                    sample(out, name, "_bucket", &labels, Some(&le), &count);
                }
                if !inf_seen {
                    let count = h.sample_count().to_string();
                    sample(out, name, "_bucket", &labels, Some("+Inf"), &count);
                }
                sample(out, name, "_sum", &labels, None, &go_float(h.sample_sum()));
                sample(
                    out,
                    name,
                    "_count",
                    &labels,
                    None,
                    &h.sample_count().to_string(),
                );
            }
            MetricType::SUMMARY => {
                let s = &m.summary;
                for q in s.quantile.as_slice() {
                    let qv = go_float(q.quantile());
                    let mut labels = labels.clone();
                    labels.push(("quantile", qv.as_str()));
                    sample(out, name, "", &labels, None, &go_float(q.value()));
                }
                sample(out, name, "_sum", &labels, None, &go_float(s.sample_sum()));
                sample(
                    out,
                    name,
                    "_count",
                    &labels,
                    None,
                    &s.sample_count().to_string(),
                );
            }
        }
    }
}

fn sample(
    out: &mut String,
    name: &str,
    suffix: &str,
    labels: &[(&str, &str)],
    le: Option<&str>,
    value: &str,
) {
    out.push_str(name);
    out.push_str(suffix);
    if !labels.is_empty() || le.is_some() {
        out.push('{');
        let mut first = true;
        for (k, v) in labels.iter().copied().chain(le.map(|le| ("le", le))) {
            if !first {
                out.push(',');
            }
            first = false;
            let _ = write!(out, "{k}=\"{}\"", escape_label(v));
        }
        out.push('}');
    }
    out.push(' ');
    out.push_str(value);
    out.push('\n');
}

/// A HELP text escaped as the text format wants it (backslash and newline).
pub fn escape_help(s: &str) -> String {
    s.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A label value escaped as the text format wants it (backslash, newline, quote).
pub fn escape_label(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('\n', "\\n")
        .replace('"', "\\\"")
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)` with expfmt's special cases (`writeFloat`):
/// the shortest digits that round-trip, in exponent form when the decimal exponent is
/// below -4 or at least 6 (`1e+06`, `4.5678592e+07`, `1e-05`), else plain (`3600`, `0.005`).
pub fn go_float(f: f64) -> String {
    if f == 1.0 {
        return "1".into();
    }
    if f == 0.0 {
        return "0".into();
    }
    if f == -1.0 {
        return "-1".into();
    }
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    // Rust's `{:e}` writes the shortest round-trip digits, as Go's shortest mode.
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let sign = if f < 0.0 { "-" } else { "" };
    if !(-4..6).contains(&exp) {
        let (head, tail) = digits.split_at(1);
        let frac = if tail.is_empty() {
            String::new()
        } else {
            format!(".{tail}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{head}{frac}e{esign}{:02}", exp.abs());
    }
    let nd = digits.len() as i32;
    let point = exp + 1; // digits before the decimal point
    if point <= 0 {
        let zeros = "0".repeat((-point) as usize);
        format!("{sign}0.{zeros}{digits}")
    } else if point >= nd {
        let zeros = "0".repeat((point - nd) as usize);
        format!("{sign}{digits}{zeros}")
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{sign}{int}.{frac}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_are_formatted_as_go_formats_them() {
        for (f, want) in [
            (1.0, "1"),
            (0.0, "0"),
            (-1.0, "-1"),
            (0.005, "0.005"),
            (2.5, "2.5"),
            (3600.0, "3600"),
            (100000.0, "100000"),
            (1_000_000.0, "1e+06"),
            (45_678_592.0, "4.5678592e+07"),
            (1_234_567.0, "1.234567e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.2345e-7, "1.2345e-07"),
            (-2.5e10, "-2.5e+10"),
            (745.0634765625, "745.0634765625"),
            (18446744073709551615.0, "1.8446744073709552e+19"),
            (1_764_547_200.25, "1.76454720025e+09"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
            (f64::NAN, "NaN"),
        ] {
            assert_eq!(go_float(f), want, "{f}");
        }
    }

    #[test]
    fn negotiation_follows_expfmt() {
        let text = "text/plain; version=0.0.4; charset=utf-8; escaping=underscores";
        assert_eq!(negotiate(None).content_type(), text);
        // OpenMetrics is not enabled on the kubelet's handlers: Prometheus' default
        // Accept header gets the 0.0.4 text.
        let prom = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2";
        assert_eq!(
            negotiate(Some(prom)).content_type(),
            "text/plain; version=0.0.4; charset=utf-8; escaping=allow-utf-8"
        );
        assert_eq!(
            negotiate(Some("application/openmetrics-text; version=1.0.0")).content_type(),
            text
        );
        let proto = negotiate(Some(
            "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3",
        ));
        assert!(proto.is_protobuf());
        assert_eq!(
            proto.content_type(),
            "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited; escaping=underscores"
        );
        // Quality decides, not the order.
        let text_first = negotiate(Some(
            "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.2,text/plain;version=0.0.4;q=0.3",
        ));
        assert!(!text_first.is_protobuf());
    }
}
