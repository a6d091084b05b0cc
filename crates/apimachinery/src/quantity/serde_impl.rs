//! JSON form (upstream `MarshalJSON` / `UnmarshalJSON`): a string; a JSON
//! number or `null` is accepted on input.
//!
//! Upstream parses a JSON number from its raw text, so `1e3` keeps the
//! DecimalExponent format there; serde hands us the number's value, so a
//! number is re-read from its shortest decimal form (`1000`, DecimalSI). The
//! value is the same; only the remembered format can differ.

use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

use super::Quantity;

impl Serialize for Quantity {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

struct Visitor;

impl de::Visitor<'_> for Visitor {
    type Value = Quantity;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a quantity string such as \"100m\" or \"1Gi\", or a number")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Quantity, E> {
        // Upstream trims surrounding whitespace before parsing.
        Quantity::parse(v.trim()).map_err(|e| E::custom(format!("{e} (got {:?})", e.input())))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Quantity, E> {
        self.visit_str(&v.to_string())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Quantity, E> {
        self.visit_str(&v.to_string())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Quantity, E> {
        if !v.is_finite() {
            return Err(E::custom(format!("quantity must be finite, got {v}")));
        }
        self.visit_str(&v.to_string())
    }

    fn visit_unit<E: de::Error>(self) -> Result<Quantity, E> {
        Ok(Quantity::default())
    }
}

impl<'de> Deserialize<'de> for Quantity {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Visitor)
    }
}
