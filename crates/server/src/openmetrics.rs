//! OpenMetrics when the scraper asks for it, on `/metrics`, `/metrics/probes`,
//! `/metrics/resource` and `/metrics/cadvisor` (both ports).
//!
//! **A deliberate difference from upstream**: the 1.35 kubelet's handlers leave
//! `promhttp.HandlerOpts.EnableOpenMetrics` unset, so they answer the 0.0.4 text format even
//! to a scraper that prefers OpenMetrics (Prometheus' default `Accept` header does). Issue #8
//! asks for OpenMetrics when asked; kubelet-rs answers as client_golang would with
//! `EnableOpenMetrics: true`: [`negotiate`] is `expfmt.NegotiateIncludingOpenMetrics`
//! (`application/openmetrics-text` with `version=1.0.0`, `0.0.1` or none, taken when it is
//! the first acceptable entry by quality), the content type
//! `application/openmetrics-text; version=<v>; charset=utf-8; escaping=<scheme>`. Without
//! such an `Accept` the answers are byte for byte what they were.
//!
//! One place for every endpoint: [`open_metrics`] is a middleware around the four routes;
//! it asks the handler for the text format and converts its answer ([`text_to_openmetrics`]):
//! counters' families lose `_total` and their samples carry it (`# TYPE x counter`,
//! `x_total`), `untyped` becomes `unknown`, `HELP` is re-escaped (`"` too), `le` and
//! `quantile` values are floats (`1` → `1.0`), timestamps go from milliseconds to seconds,
//! comments other than `HELP`/`TYPE` and empty lines are dropped, and `# EOF` ends the
//! exposition. No `_created` samples (as client_golang without
//! `EnableOpenMetricsTextCreatedSamples`).

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// `application/openmetrics-text`'s versions client_golang serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// `version=1.0.0`.
    V1_0_0,
    /// `version=0.0.1` (also what an `Accept` without a version gets).
    V0_0_1,
}

impl Version {
    fn as_str(self) -> &'static str {
        match self {
            Version::V1_0_0 => "1.0.0",
            Version::V0_0_1 => "0.0.1",
        }
    }
}

/// One `Accept` entry as goautoneg parses it.
struct Accept<'a> {
    media: (&'a str, &'a str),
    q: f64,
    params: Vec<(&'a str, &'a str)>,
}

impl Accept<'_> {
    fn param(&self, k: &str) -> &str {
        self.params
            .iter()
            .find(|(n, _)| *n == k)
            .map_or("", |(_, v)| v)
    }
}

/// goautoneg `ParseAccept`: entries with a `type/subtype` (or `*`), `q` and parameters,
/// by quality, then specific types before `*`.
fn parse_accept(header: &str) -> Vec<Accept<'_>> {
    let mut out = Vec::new();
    for part in header.split(',') {
        let part = part.trim_matches(' ');
        let mut pieces = part.split(';');
        let media = pieces.next().unwrap_or_default();
        let mut types = media.split('/');
        let ty = types.next().unwrap_or_default().trim_matches(' ');
        let sub = match (types.next(), types.next()) {
            (None, _) if ty == "*" => "*",
            (Some(s), None) => s.trim_matches(' '),
            _ => continue,
        };
        let mut a = Accept {
            media: (ty, sub),
            q: 1.0,
            params: Vec::new(),
        };
        for p in pieces {
            let mut kv = p.split('=');
            let (Some(k), Some(v), None) = (kv.next(), kv.next(), kv.next()) else {
                continue;
            };
            let k = k.trim_matches(' ');
            if k == "q" {
                a.q = v.parse::<f32>().map(f64::from).unwrap_or(0.0);
            } else {
                a.params.push((k, v.trim_matches(' ')));
            }
        }
        out.push(a);
    }
    let rank = |a: &Accept| (a.media.0 == "*", a.media.1 == "*");
    out.sort_by(|a, b| b.q.total_cmp(&a.q).then(rank(a).cmp(&rank(b))));
    out
}

/// `expfmt.NegotiateIncludingOpenMetrics`, as far as it picks OpenMetrics: the version
/// and the escaping scheme, or `None` when the text or protobuf format wins.
pub fn negotiate(accept: Option<&str>) -> Option<(Version, String)> {
    let mut escaping = "underscores".to_string();
    for a in parse_accept(accept.unwrap_or_default()) {
        let esc = a.param("escaping");
        if matches!(esc, "allow-utf-8" | "underscores" | "dots" | "values") {
            escaping = esc.to_string();
        }
        let ver = a.param("version");
        if a.media == ("application", "vnd.google.protobuf")
            && a.param("proto") == "io.prometheus.client.MetricFamily"
            && matches!(a.param("encoding"), "delimited" | "text" | "compact-text")
        {
            return None;
        }
        if a.media == ("text", "plain") && matches!(ver, "0.0.4" | "") {
            return None;
        }
        if a.media == ("application", "openmetrics-text") && matches!(ver, "0.0.1" | "1.0.0" | "") {
            let v = if ver == "1.0.0" {
                Version::V1_0_0
            } else {
                Version::V0_0_1
            };
            return Some((v, escaping));
        }
    }
    None
}

/// The content type of an OpenMetrics answer.
pub fn content_type(version: Version, escaping: &str) -> String {
    format!(
        "application/openmetrics-text; version={}; charset=utf-8; escaping={escaping}",
        version.as_str()
    )
}

/// The middleware (`axum::middleware::from_fn`) around the metrics routes.
pub(crate) async fn open_metrics(mut req: Request, next: Next) -> Response {
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    let Some((version, escaping)) = negotiate(accept) else {
        return next.run(req).await;
    };
    req.headers_mut().insert(
        header::ACCEPT,
        HeaderValue::from_static("text/plain;version=0.0.4"),
    );
    let resp = next.run(req).await;
    let is_text = resp.status() == StatusCode::OK
        && resp
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.starts_with("text/plain; version=0.0.4"));
    if !is_text {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let bytes = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(b) => b,
        Err(e) => {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("An error has occurred while gathering metrics: {e}\n"),
            )
                .into_response();
        }
    };
    let om = text_to_openmetrics(&String::from_utf8_lossy(&bytes));
    parts.headers.remove(header::CONTENT_LENGTH);
    if let Ok(v) = HeaderValue::from_str(&content_type(version, &escaping)) {
        parts.headers.insert(header::CONTENT_TYPE, v);
    }
    Response::from_parts(parts, Body::from(om))
}

/// A family being converted.
#[derive(Default)]
struct Family {
    /// The name in the text format.
    name: String,
    help: Option<String>,
    kind: Option<String>,
    /// Metadata written.
    written: bool,
}

impl Family {
    fn kind(&self) -> &str {
        self.kind.as_deref().unwrap_or("untyped")
    }

    /// The OpenMetrics family name (counters without `_total`).
    fn om_name(&self) -> &str {
        if self.kind() == "counter" {
            self.name.strip_suffix("_total").unwrap_or(&self.name)
        } else {
            &self.name
        }
    }

    /// Whether a sample named `sample` belongs to this family.
    fn owns(&self, sample: &str) -> bool {
        if self.name.is_empty() {
            return false;
        }
        let suffixes: &[&str] = match self.kind() {
            "histogram" => &["", "_bucket", "_sum", "_count"],
            "summary" => &["", "_sum", "_count"],
            _ => &[""],
        };
        if self.kind() == "counter" && sample == format!("{}_total", self.om_name()) {
            return true;
        }
        suffixes
            .iter()
            .any(|s| sample.strip_suffix(s) == Some(self.name.as_str()))
    }

    fn write_metadata(&mut self, out: &mut String) {
        if self.written || self.name.is_empty() {
            return;
        }
        self.written = true;
        let name = self.om_name().to_string();
        if let Some(h) = &self.help {
            out.push_str(&format!("# HELP {name} {}\n", escape_help(h)));
        }
        if let Some(k) = &self.kind {
            let k = if k == "untyped" {
                "unknown"
            } else {
                k.as_str()
            };
            out.push_str(&format!("# TYPE {name} {k}\n"));
        }
    }
}

/// The 0.0.4 `HELP` text unescaped (`\\`, `\n`), then escaped for OpenMetrics (`\\`,
/// `\n`, `\"`).
fn escape_help(text_help: &str) -> String {
    let mut raw = String::new();
    let mut chars = text_help.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => raw.push('\n'),
                Some('\\') => raw.push('\\'),
                Some(other) => {
                    raw.push('\\');
                    raw.push(other);
                }
                None => raw.push('\\'),
            }
        } else {
            raw.push(c);
        }
    }
    raw.replace('\\', "\\\\")
        .replace('\n', "\\n")
        .replace('"', "\\\"")
}

/// A Go float label value as client_golang's OpenMetrics writer prints it: integers get
/// `.0`.
fn om_float(v: &str) -> String {
    let looks_integer = !v.is_empty()
        && v.trim_start_matches(['-', '+'])
            .chars()
            .all(|c| c.is_ascii_digit());
    if looks_integer && v.parse::<f64>().is_ok() {
        format!("{v}.0")
    } else {
        v.to_string()
    }
}

/// The labels `{…}` at the start of `s` (after the name): the converted label set and the
/// rest of the line.
fn convert_labels(s: &str) -> Option<(String, &str)> {
    let body = s.strip_prefix('{')?;
    let mut out = String::from("{");
    let mut rest = body;
    let mut first = true;
    loop {
        rest = rest.trim_start_matches([' ', ',']);
        if let Some(after) = rest.strip_prefix('}') {
            out.push('}');
            return Some((out, after));
        }
        let (name, after) = rest.split_once('=')?;
        let name = name.trim();
        let after = after.trim_start().strip_prefix('"')?;
        // The value up to the closing quote, escapes kept as they are.
        let mut end = None;
        let mut escaped = false;
        for (i, c) in after.char_indices() {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                end = Some(i);
                break;
            }
        }
        let end = end?;
        let mut value = after[..end].to_string();
        if name == "le" || name == "quantile" {
            value = om_float(&value);
        }
        if !first {
            out.push(',');
        }
        first = false;
        out.push_str(&format!("{name}=\"{value}\""));
        rest = &after[end + 1..];
    }
}

/// A 0.0.4 timestamp (milliseconds) in seconds.
fn om_timestamp(ms: &str) -> Option<String> {
    let ms: i64 = ms.parse().ok()?;
    let (s, frac) = (ms.div_euclid(1000), ms.rem_euclid(1000));
    Some(if frac == 0 {
        s.to_string()
    } else {
        format!("{s}.{frac:03}").trim_end_matches('0').to_string()
    })
}

/// One sample line converted for `family`.
fn convert_sample(line: &str, family: &Family) -> Option<String> {
    let name_end = line.find(['{', ' ', '\t']).unwrap_or(line.len());
    let name = &line[..name_end];
    let (labels, rest) = match convert_labels(&line[name_end..]) {
        Some((l, rest)) => (l, rest),
        None => (String::new(), &line[name_end..]),
    };
    let mut fields = rest.split_whitespace();
    let value = fields.next()?;
    let ts = fields.next().and_then(om_timestamp);
    let name = if family.kind() == "counter" && family.owns(name) {
        format!("{}_total", family.om_name())
    } else {
        name.to_string()
    };
    let mut out = format!("{name}{labels} {value}");
    if let Some(ts) = ts {
        out.push(' ');
        out.push_str(&ts);
    }
    out.push('\n');
    Some(out)
}

/// Converts a 0.0.4 text exposition to OpenMetrics text.
pub fn text_to_openmetrics(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8 + 8);
    let mut family = Family::default();
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            let comment = comment.trim_start();
            let (keyword, rest) = comment.split_once(' ').unwrap_or((comment, ""));
            if keyword != "HELP" && keyword != "TYPE" {
                continue;
            }
            let (name, value) = rest.split_once(' ').unwrap_or((rest, ""));
            if name != family.name {
                family.write_metadata(&mut out);
                family = Family {
                    name: name.to_string(),
                    ..Family::default()
                };
            }
            if keyword == "HELP" {
                family.help = Some(value.to_string());
            } else {
                family.kind = Some(value.trim().to_string());
            }
            continue;
        }
        let name_end = line.find(['{', ' ', '\t']).unwrap_or(line.len());
        if !family.owns(&line[..name_end]) {
            family.write_metadata(&mut out);
            family = Family::default();
        }
        family.write_metadata(&mut out);
        if let Some(s) = convert_sample(line, &family) {
            out.push_str(&s);
        }
    }
    family.write_metadata(&mut out);
    out.push_str("# EOF\n");
    out
}

#[cfg(test)]
#[path = "openmetrics_tests.rs"]
mod tests;
