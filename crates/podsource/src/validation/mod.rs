//! Pod validation, the part of `ValidatePodCreate` (`pkg/apis/core/validation/validation.go`)
//! a kubelet relies on for static pods. Errors carry their field path and read like
//! upstream's `field.Error`s (`spec.containers[0].image: Required value`).

mod container;
mod spec;
mod volumes;

use kubelet_apimachinery::{
    is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value,
};

use k8s_openapi::api::core::v1::Pod;
use std::fmt;

/// The kind of a validation error (upstream `field.ErrorType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorType {
    Required,
    Invalid,
    NotFound,
    Duplicate,
    NotSupported,
    Forbidden,
    TooLong,
}

/// The offending value shown in an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldValue {
    None,
    Str(String),
    Int(i64),
}

impl From<&str> for FieldValue {
    fn from(s: &str) -> Self {
        FieldValue::Str(s.to_string())
    }
}
impl From<String> for FieldValue {
    fn from(s: String) -> Self {
        FieldValue::Str(s)
    }
}
impl From<i64> for FieldValue {
    fn from(i: i64) -> Self {
        FieldValue::Int(i)
    }
}
impl From<i32> for FieldValue {
    fn from(i: i32) -> Self {
        FieldValue::Int(i64::from(i))
    }
}

impl fmt::Display for FieldValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldValue::None => f.write_str("null"),
            FieldValue::Str(s) => write!(f, "{s:?}"),
            FieldValue::Int(i) => write!(f, "{i}"),
        }
    }
}

/// One validation problem, with the field path it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub kind: ErrorType,
    pub field: String,
    pub value: FieldValue,
    pub detail: String,
}

impl FieldError {
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Required, field, FieldValue::None, detail)
    }
    pub fn invalid(
        field: impl Into<String>,
        value: impl Into<FieldValue>,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(ErrorType::Invalid, field, value.into(), detail)
    }
    pub fn not_found(field: impl Into<String>, value: impl Into<FieldValue>) -> Self {
        Self::new(ErrorType::NotFound, field, value.into(), "")
    }
    pub fn duplicate(field: impl Into<String>, value: impl Into<FieldValue>) -> Self {
        Self::new(ErrorType::Duplicate, field, value.into(), "")
    }
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Forbidden, field, FieldValue::None, detail)
    }
    pub fn too_long(field: impl Into<String>, max: usize) -> Self {
        Self::new(
            ErrorType::TooLong,
            field,
            FieldValue::None,
            format!("may not be more than {max} bytes"),
        )
    }
    pub fn not_supported(
        field: impl Into<String>,
        value: impl Into<FieldValue>,
        supported: &[&str],
    ) -> Self {
        let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        Self::new(
            ErrorType::NotSupported,
            field,
            value.into(),
            format!("supported values: {}", list.join(", ")),
        )
    }

    fn new(
        kind: ErrorType,
        field: impl Into<String>,
        value: FieldValue,
        detail: impl Into<String>,
    ) -> Self {
        FieldError {
            kind,
            field: field.into(),
            value,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.field)?;
        match self.kind {
            ErrorType::Required => f.write_str("Required value")?,
            ErrorType::Forbidden => f.write_str("Forbidden")?,
            ErrorType::TooLong => f.write_str("Too long")?,
            ErrorType::Invalid => write!(f, "Invalid value: {}", self.value)?,
            ErrorType::NotFound => write!(f, "Not found: {}", self.value)?,
            ErrorType::Duplicate => write!(f, "Duplicate value: {}", self.value)?,
            ErrorType::NotSupported => write!(f, "Unsupported value: {}", self.value)?,
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// Every problem found in a pod (upstream `field.ErrorList`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorList(pub Vec<FieldError>);

impl ErrorList {
    pub fn push(&mut self, e: FieldError) {
        self.0.push(e);
    }
    pub fn extend(&mut self, other: ErrorList) {
        self.0.extend(other.0);
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn iter(&self) -> impl Iterator<Item = &FieldError> {
        self.0.iter()
    }
}

impl fmt::Display for ErrorList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(ToString::to_string).collect();
        write!(f, "[{}]", parts.join(", "))
    }
}

/// Validates a defaulted pod about to be created (`ValidatePodCreate`), returning every problem.
pub fn validate_pod_create(pod: &Pod) -> ErrorList {
    let mut errs = validate_object_meta(pod);
    match pod.spec.as_ref() {
        Some(spec) => errs.extend(spec::validate_pod_spec(spec)),
        None => errs.push(FieldError::required("spec.containers", "")),
    }
    errs
}

fn validate_object_meta(pod: &Pod) -> ErrorList {
    let mut errs = ErrorList::default();
    let meta = &pod.metadata;
    match meta.name.as_deref().unwrap_or_default() {
        "" => errs.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        )),
        name => {
            for msg in is_dns1123_subdomain(name) {
                errs.push(FieldError::invalid("metadata.name", name, msg));
            }
        }
    }
    match meta.namespace.as_deref().unwrap_or_default() {
        "" => errs.push(FieldError::required("metadata.namespace", "")),
        ns => {
            for msg in is_dns1123_label(ns) {
                errs.push(FieldError::invalid("metadata.namespace", ns, msg));
            }
        }
    }
    for (k, v) in meta.labels.iter().flatten() {
        for msg in is_qualified_name(k) {
            errs.push(FieldError::invalid("metadata.labels", k.as_str(), msg));
        }
        for msg in is_valid_label_value(v) {
            errs.push(FieldError::invalid("metadata.labels", v.as_str(), msg));
        }
    }
    errs.extend(validate_annotations(meta.annotations.as_ref()));
    errs
}

const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

fn validate_annotations(
    annotations: Option<&std::collections::BTreeMap<String, String>>,
) -> ErrorList {
    let mut errs = ErrorList::default();
    let mut total = 0;
    for (k, v) in annotations.into_iter().flatten() {
        for msg in is_qualified_name(&k.to_lowercase()) {
            errs.push(FieldError::invalid("metadata.annotations", k.as_str(), msg));
        }
        total += k.len() + v.len();
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(FieldError::too_long(
            "metadata.annotations",
            TOTAL_ANNOTATION_SIZE_LIMIT,
        ));
    }
    errs
}

#[cfg(test)]
mod tests;
