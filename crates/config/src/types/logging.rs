//! `k8s.io/component-base/logs/api/v1.LoggingConfiguration` (types.go) and
//! `SetRecommendedLoggingConfiguration` (options.go).

use kubelet_apimachinery::Duration;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `logsapi.LogFlushFreqDefault`.
pub const LOG_FLUSH_FREQ_DEFAULT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoggingConfiguration {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub format: String,
    #[serde(default)]
    pub flush_frequency: TimeOrMetaDuration,
    #[serde(default)]
    pub verbosity: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vmodule: Vec<VModuleItem>,
    #[serde(default)]
    pub options: FormatOptions,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VModuleItem {
    #[serde(default)]
    pub file_pattern: String,
    #[serde(default)]
    pub verbosity: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FormatOptions {
    #[serde(default)]
    pub text: OutputRoutingOptions,
    #[serde(default)]
    pub json: OutputRoutingOptions,
}

/// `TextOptions`/`JSONOptions` (both inline `OutputRoutingOptions`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutputRoutingOptions {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub split_stream: bool,
    /// A `resource.QuantityValue`; `None` until defaulted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info_buffer_size: Option<String>,
}

/// `TimeOrMetaDuration`: reads a duration string or integer nanoseconds; writes the string
/// form when it was read from (or defaulted as) a string, nanoseconds otherwise.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimeOrMetaDuration {
    pub duration: Duration,
    pub serialize_as_string: bool,
}

impl Serialize for TimeOrMetaDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.serialize_as_string {
            self.duration.serialize(s)
        } else {
            s.serialize_i64(self.duration.as_nanos())
        }
    }
}

impl<'de> Deserialize<'de> for TimeOrMetaDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Nanos(i64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Nanos(n) => Ok(TimeOrMetaDuration {
                duration: Duration::from_nanos(n),
                serialize_as_string: false,
            }),
            Raw::Text(t) => Duration::parse(&t)
                .map(|duration| TimeOrMetaDuration {
                    duration,
                    serialize_as_string: true,
                })
                .map_err(serde::de::Error::custom),
        }
    }
}

/// `SetRecommendedLoggingConfiguration`.
pub fn set_recommended_logging_configuration(c: &mut LoggingConfiguration) {
    if c.format.is_empty() {
        c.format = "text".to_string();
    }
    if c.flush_frequency.duration.is_zero() {
        c.flush_frequency = TimeOrMetaDuration {
            duration: LOG_FLUSH_FREQ_DEFAULT,
            serialize_as_string: true,
        };
    }
    for o in [&mut c.options.text, &mut c.options.json] {
        if o.info_buffer_size.is_none() {
            o.info_buffer_size = Some("0".to_string());
        }
    }
}
