//! Collecting an event's fields in klog's structured form: the message apart,
//! every other field as `key=value` with strings quoted as Go's `%q` does.

use kubelet_apimachinery::go_quote;
use tracing::field::{Field, Visit};

/// A field value, kept typed so that text and JSON render it properly.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Str(String),
    Int(i128),
    Float(f64),
    Bool(bool),
}

/// The fields of one event.
#[derive(Debug, Default)]
pub(crate) struct Fields {
    pub message: String,
    pub pairs: Vec<(&'static str, Value)>,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.push(field, Value::Str(format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.push(field, Value::Str(value.to_string()));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.push(field, Value::Int(value.into()));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.push(field, Value::Int(value.into()));
    }
    fn record_i128(&mut self, field: &Field, value: i128) {
        self.push(field, Value::Int(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.push(field, Value::Float(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.push(field, Value::Bool(value));
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.push(field, Value::Str(value.to_string()));
    }
}

impl Fields {
    fn push(&mut self, field: &Field, value: Value) {
        if field.name() == "message" {
            self.message = match value {
                Value::Str(s) => s,
                other => render_text(&other),
            };
        } else {
            self.pairs.push((field.name(), value));
        }
    }
}

/// Renders a value the way klog's text format does.
pub(crate) fn render_text(v: &Value) -> String {
    match v {
        Value::Str(s) => go_quote(s),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Bool(b) => b.to_string(),
    }
}

/// Converts a value to JSON.
pub(crate) fn to_json(v: &Value) -> serde_json::Value {
    match v {
        Value::Str(s) => serde_json::Value::String(s.clone()),
        Value::Int(i) => i64::try_from(*i)
            .map(serde_json::Value::from)
            .unwrap_or_else(|_| serde_json::Value::String(i.to_string())),
        Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(serde_json::Value::Number)
            .unwrap_or(serde_json::Value::Null),
        Value::Bool(b) => serde_json::Value::Bool(*b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_values() {
        assert_eq!(render_text(&Value::Int(-3)), "-3");
        assert_eq!(render_text(&Value::Bool(true)), "true");
        assert_eq!(render_text(&Value::Str("x y".into())), "\"x y\"");
        assert_eq!(
            to_json(&Value::Int(i128::MAX)),
            serde_json::json!(i128::MAX.to_string())
        );
    }
}
