//! The Prometheus text format as `prometheus/common/expfmt` writes it (`text_create.go`):
//! families sorted by name, `# HELP` with component-base's stability prefix, samples sorted
//! by label values, values printed as Go's `strconv.FormatFloat(v, 'g', -1, 64)`.

use std::fmt::Write;

/// A metric's stability level (component-base prefixes the help text with it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stability {
    /// `[STABLE]`.
    Stable,
    /// `[ALPHA]`.
    Alpha,
    /// None: a collector registered raw (cAdvisor's), help text as is.
    Raw,
}

/// A family's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `counter`.
    Counter,
    /// `gauge`.
    Gauge,
}

/// A family's description.
#[derive(Debug, Clone, Copy)]
pub struct Desc {
    /// Name.
    pub name: &'static str,
    /// Help text, without the stability prefix.
    pub help: &'static str,
    /// Label names, in order.
    pub labels: &'static [&'static str],
    /// Stability.
    pub stability: Stability,
    /// Type.
    pub kind: Kind,
}

impl Desc {
    /// A description.
    pub const fn new(
        name: &'static str,
        help: &'static str,
        labels: &'static [&'static str],
        stability: Stability,
        kind: Kind,
    ) -> Desc {
        Desc {
            name,
            help,
            labels,
            stability,
            kind,
        }
    }
}

/// One sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Label values, in the order of [`Desc::labels`].
    pub labels: Vec<String>,
    /// Value.
    pub value: f64,
    /// Timestamp in milliseconds.
    pub timestamp_ms: Option<i64>,
}

/// Collected families.
#[derive(Debug, Default)]
pub struct Families {
    families: Vec<(Desc, Vec<Sample>)>,
}

impl Families {
    /// Adds a sample to `desc`'s family.
    pub fn push(&mut self, desc: &Desc, labels: &[&str], value: f64, timestamp_ms: Option<i64>) {
        let sample = Sample {
            labels: labels.iter().map(|s| s.to_string()).collect(),
            value,
            timestamp_ms,
        };
        match self.families.iter_mut().find(|(d, _)| d.name == desc.name) {
            Some((_, samples)) => samples.push(sample),
            None => self.families.push((*desc, vec![sample])),
        }
    }

    /// The text exposition.
    pub fn render(mut self) -> String {
        self.families.sort_by(|a, b| a.0.name.cmp(b.0.name));
        let mut out = String::new();
        for (desc, mut samples) in self.families {
            let stability = match desc.stability {
                Stability::Stable => "[STABLE] ",
                Stability::Alpha => "[ALPHA] ",
                Stability::Raw => "",
            };
            let kind = match desc.kind {
                Kind::Counter => "counter",
                Kind::Gauge => "gauge",
            };
            let _ = writeln!(
                out,
                "# HELP {} {stability}{}",
                desc.name,
                escape_help(desc.help)
            );
            let _ = writeln!(out, "# TYPE {} {kind}", desc.name);
            // client_golang sorts a family's metrics by their (name-sorted) label pairs.
            let mut order: Vec<usize> = (0..desc.labels.len()).collect();
            order.sort_by_key(|i| desc.labels[*i]);
            samples.sort_by(|a, b| {
                let ka: Vec<&String> = order.iter().map(|i| &a.labels[*i]).collect();
                let kb: Vec<&String> = order.iter().map(|i| &b.labels[*i]).collect();
                ka.cmp(&kb)
            });
            for s in samples {
                out.push_str(desc.name);
                if !order.is_empty() {
                    out.push('{');
                    for (n, i) in order.iter().enumerate() {
                        if n > 0 {
                            out.push(',');
                        }
                        let _ = write!(
                            out,
                            "{}=\"{}\"",
                            desc.labels[*i],
                            escape_label(&s.labels[*i])
                        );
                    }
                    out.push('}');
                }
                out.push(' ');
                out.push_str(&format_float(s.value));
                if let Some(ts) = s.timestamp_ms {
                    let _ = write!(out, " {ts}");
                }
                out.push('\n');
            }
        }
        out
    }
}

/// Go's `strconv.FormatFloat(v, 'g', -1, 64)` with expfmt's special cases.
pub use kubelet_metrics::expfmt::go_float as format_float;
use kubelet_metrics::expfmt::{escape_help, escape_label};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_as_go_formats_them() {
        for (v, want) in [
            (1764547200.123, "1.764547200123e+09"),
            (123456.0, "123456"),
            (1234567.0, "1.234567e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (12.5, "12.5"),
            (21710086144.0, "2.1710086144e+10"),
            (1e21, "1e+21"),
            (3.5e-7, "3.5e-07"),
            (0.0, "0"),
            (1.0, "1"),
            (-2.5, "-2.5"),
        ] {
            assert_eq!(format_float(v), want, "{v}");
        }
    }

    #[test]
    fn families_sorted_and_labels_ordered() {
        const B: Desc = Desc {
            name: "b_total",
            help: "B",
            labels: &["pod", "namespace"],
            stability: Stability::Stable,
            kind: Kind::Counter,
        };
        const A: Desc = Desc {
            name: "a",
            help: "A",
            labels: &[],
            stability: Stability::Alpha,
            kind: Kind::Gauge,
        };
        let mut f = Families::default();
        f.push(&B, &["p2", "ns"], 2.0, Some(5));
        f.push(&B, &["p1", "ns"], 1.0, Some(5));
        f.push(&A, &[], 0.0, None);
        assert_eq!(
            f.render(),
            "# HELP a [ALPHA] A\n# TYPE a gauge\na 0\n\
             # HELP b_total [STABLE] B\n# TYPE b_total counter\n\
             b_total{namespace=\"ns\",pod=\"p1\"} 1 5\nb_total{namespace=\"ns\",pod=\"p2\"} 2 5\n"
        );
    }
}
