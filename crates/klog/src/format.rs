//! The two event formatters: klog text and component-base JSON.

use std::fmt::Write as _;

use kubelet_apimachinery::go_quote;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use crate::fields::{Fields, render_text, to_json};

/// klog text: `I1129 19:41:28.123456   12345 file.rs:123] "msg" k="v"`.
#[derive(Debug, Default, Clone, Copy)]
pub struct TextFormat;

/// component-base JSON: `{"ts":…,"caller":"file.rs:123","msg":"…","v":0,"k":"v"}`.
#[derive(Debug, Default, Clone, Copy)]
pub struct JsonFormat;

fn severity(level: &Level) -> char {
    match *level {
        Level::ERROR => 'E',
        Level::WARN => 'W',
        _ => 'I',
    }
}

fn caller(event: &Event<'_>) -> String {
    let meta = event.metadata();
    let file = meta.file().unwrap_or("???");
    let base = file.rsplit('/').next().unwrap_or(file);
    format!("{}:{}", base, meta.line().unwrap_or(0))
}

/// Renders the klog text header and body for a set of fields.
pub(crate) fn render_line(
    level: &Level,
    now: &jiff::Zoned,
    pid: u32,
    caller: &str,
    fields: &Fields,
) -> String {
    let mut line = String::with_capacity(128);
    let _ = write!(
        line,
        "{}{} {:>7} {}] {}",
        severity(level),
        now.strftime("%m%d %H:%M:%S.%6f"),
        pid,
        caller,
        go_quote(&fields.message)
    );
    for (k, v) in &fields.pairs {
        let _ = write!(line, " {}={}", k, render_text(v));
    }
    line
}

impl<S, N> FormatEvent<S, N> for TextFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let line = render_line(
            event.metadata().level(),
            &jiff::Zoned::now(),
            std::process::id(),
            &caller(event),
            &fields,
        );
        writeln!(writer, "{line}")
    }
}

/// Renders one JSON log object.
pub(crate) fn render_json(
    level: &Level,
    ts_millis: f64,
    caller: &str,
    fields: &Fields,
) -> serde_json::Value {
    let mut obj = serde_json::Map::new();
    obj.insert("ts".into(), serde_json::json!(ts_millis));
    obj.insert("caller".into(), caller.into());
    obj.insert("msg".into(), fields.message.clone().into());
    if *level != Level::ERROR {
        obj.insert("v".into(), crate::verbosity_of(level).into());
    }
    for (k, v) in &fields.pairs {
        obj.insert((*k).to_string(), to_json(v));
    }
    serde_json::Value::Object(obj)
}

impl<S, N> FormatEvent<S, N> for JsonFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let ts = jiff::Timestamp::now().as_microsecond() as f64 / 1000.0;
        let obj = render_json(event.metadata().level(), ts, &caller(event), &fields);
        writeln!(writer, "{obj}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields::Value;

    fn sample() -> Fields {
        Fields {
            message: "Starting kubelet".into(),
            pairs: vec![("node", Value::Str("n1".into())), ("pods", Value::Int(3))],
        }
    }

    #[test]
    fn text_line_matches_klog_layout() {
        let now: jiff::Zoned = "2026-11-29T19:41:28.123456789+00:00[UTC]"
            .parse()
            .unwrap_or_else(|e| unreachable!("{e}"));
        let line = render_line(&Level::INFO, &now, 12345, "server.rs:123", &sample());
        assert_eq!(
            line,
            r#"I1129 19:41:28.123456   12345 server.rs:123] "Starting kubelet" node="n1" pods=3"#
        );
        let line = render_line(&Level::ERROR, &now, 7, "a.rs:1", &sample());
        assert!(
            line.starts_with("E1129 19:41:28.123456       7 a.rs:1] "),
            "{line}"
        );
        let line = render_line(&Level::WARN, &now, 7, "a.rs:1", &sample());
        assert!(line.starts_with('W'));
    }

    #[test]
    fn json_object_has_component_base_keys() {
        let v = render_json(&Level::INFO, 1.5, "x.rs:2", &sample());
        assert_eq!(
            v,
            serde_json::json!({"ts":1.5,"caller":"x.rs:2","msg":"Starting kubelet","v":0,"node":"n1","pods":3})
        );
        let e = render_json(&Level::ERROR, 1.5, "x.rs:2", &sample());
        assert!(e.get("v").is_none());
        let d = render_json(&Level::DEBUG, 1.5, "x.rs:2", &sample());
        assert_eq!(d["v"], 2);
    }

    #[test]
    fn verbosity_filters() {
        use tracing::level_filters::LevelFilter;
        assert_eq!(crate::level_filter(0), LevelFilter::INFO);
        assert_eq!(crate::level_filter(2), LevelFilter::DEBUG);
        assert_eq!(crate::level_filter(10), LevelFilter::TRACE);
        assert!("xml".parse::<crate::Format>().is_err());
        assert_eq!(
            "json".parse::<crate::Format>().ok(),
            Some(crate::Format::Json)
        );
    }

    #[test]
    fn libraries_are_capped_at_info() {
        use crate::enabled;
        assert!(enabled("kubelet_app::startup", &Level::DEBUG, 2));
        assert!(!enabled("kubelet_app::startup", &Level::DEBUG, 0));
        assert!(!enabled("h2::codec", &Level::DEBUG, 4));
        assert!(enabled("h2::codec", &Level::WARN, 0));
        assert!(!enabled("kubelet_pleg", &Level::TRACE, 2));
        assert!(enabled("kubelet_pleg", &Level::TRACE, 4));
    }
}
