//! Enumerates the fields of a serde type from its own `Deserialize` impl, so the list cannot
//! drift from the type: a probing `Deserializer` walks one path at a time and records the
//! `fields` list each `deserialize_struct` call receives; anything else is a leaf.

#![allow(clippy::panic)]

use std::cell::RefCell;
use std::fmt;

use serde::de::value::StrDeserializer;
use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, Visitor};
use serde::forward_to_deserialize_any;

#[derive(Debug, Clone, PartialEq)]
enum Found {
    Struct(Vec<&'static str>),
    Leaf,
}

/// The error that stops the walk once the probed path is reached.
#[derive(Debug)]
struct Stop(String);

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Stop {}

impl de::Error for Stop {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Stop(msg.to_string())
    }
}

struct Probe<'a> {
    target: &'a [&'static str],
    found: &'a RefCell<Option<Found>>,
}

impl Probe<'_> {
    fn leaf<T>(self) -> Result<T, Stop> {
        if self.target.is_empty() {
            *self.found.borrow_mut() = Some(Found::Leaf);
        }
        Err(Stop("leaf".into()))
    }
}

impl<'de> de::Deserializer<'de> for Probe<'_> {
    type Error = Stop;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Stop> {
        self.leaf()
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Stop> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Stop> {
        match self.target.split_first() {
            None => {
                *self.found.borrow_mut() = Some(Found::Struct(fields.to_vec()));
                Err(Stop("struct".into()))
            }
            Some((first, rest)) => visitor.visit_map(OneField {
                key: Some(first),
                value: Some(Probe {
                    target: rest,
                    found: self.found,
                }),
            }),
        }
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

/// A map with one entry: the next path component, whose value is probed further.
struct OneField<'a> {
    key: Option<&'static str>,
    value: Option<Probe<'a>>,
}

impl<'de> MapAccess<'de> for OneField<'_> {
    type Error = Stop;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Stop> {
        match self.key.take() {
            Some(k) => seed.deserialize(StrDeserializer::<Stop>::new(k)).map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Stop> {
        match self.value.take() {
            Some(p) => seed.deserialize(p),
            None => Err(Stop("no value".into())),
        }
    }
}

fn probe<T: DeserializeOwned>(path: &[&'static str]) -> Option<Found> {
    let found = RefCell::new(None);
    let _ = T::deserialize(Probe {
        target: path,
        found: &found,
    });
    found.into_inner()
}

/// Every leaf field of `T` as a dotted JSON path (nested structs are descended into;
/// maps, lists and scalars are leaves), in declaration order.
pub(super) fn leaf_paths<T: DeserializeOwned>() -> Vec<String> {
    fn walk<T: DeserializeOwned>(path: &mut Vec<&'static str>, out: &mut Vec<String>) {
        match probe::<T>(path) {
            Some(Found::Struct(fields)) => {
                for f in fields {
                    path.push(f);
                    walk::<T>(path, out);
                    path.pop();
                }
            }
            Some(Found::Leaf) => out.push(path.join(".")),
            None => panic!("probing {:?} reached no value", path.join(".")),
        }
    }
    let mut out = Vec::new();
    walk::<T>(&mut Vec::new(), &mut out);
    out
}
