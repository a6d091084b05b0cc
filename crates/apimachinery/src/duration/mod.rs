//! Go `time.Duration` as used by `metav1.Duration`.
//!
//! Mirrors Go's `src/time/time.go` (`Duration`, `Duration.String`) and
//! `src/time/format.go` (`ParseDuration`), and
//! `k8s.io/apimachinery/pkg/apis/meta/v1/duration.go` for the JSON form.

mod format;
mod parse;
mod serde_impl;
#[cfg(test)]
mod tests;

pub use parse::ParseDurationError;

/// A signed span of time in nanoseconds, with Go `time.Duration` semantics.
///
/// The JSON form (serde) is the Go string form, as `metav1.Duration` marshals it
/// (`"1m0s"`, `"100ms"`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(i64);

/// Nanoseconds per unit, as Go's `time` constants.
pub(crate) const NANOSECOND: u64 = 1;
pub(crate) const MICROSECOND: u64 = 1_000 * NANOSECOND;
pub(crate) const MILLISECOND: u64 = 1_000 * MICROSECOND;
pub(crate) const SECOND: u64 = 1_000 * MILLISECOND;
pub(crate) const MINUTE: u64 = 60 * SECOND;
pub(crate) const HOUR: u64 = 60 * MINUTE;

impl Duration {
    /// The zero duration.
    pub const ZERO: Duration = Duration(0);
    /// The largest representable duration (about 292 years).
    pub const MAX: Duration = Duration(i64::MAX);
    /// The smallest (most negative) representable duration.
    pub const MIN: Duration = Duration(i64::MIN);

    /// Parses a Go duration string (`"300ms"`, `"-1.5h"`, `"2h45m"`), exactly like
    /// Go's `time.ParseDuration`, including its error messages.
    pub fn parse(s: &str) -> Result<Duration, ParseDurationError> {
        parse::parse_duration(s).map(Duration)
    }

    /// A duration of `nanos` nanoseconds.
    pub const fn from_nanos(nanos: i64) -> Duration {
        Duration(nanos)
    }

    /// A duration of `millis` milliseconds, saturating at the i64 nanosecond range.
    pub const fn from_millis(millis: i64) -> Duration {
        Duration(millis.saturating_mul(MILLISECOND as i64))
    }

    /// A duration of `secs` seconds, saturating at the i64 nanosecond range.
    pub const fn from_secs(secs: i64) -> Duration {
        Duration(secs.saturating_mul(SECOND as i64))
    }

    /// A duration of `mins` minutes, saturating at the i64 nanosecond range.
    pub const fn from_mins(mins: i64) -> Duration {
        Duration(mins.saturating_mul(MINUTE as i64))
    }

    /// A duration of `hours` hours, saturating at the i64 nanosecond range.
    pub const fn from_hours(hours: i64) -> Duration {
        Duration(hours.saturating_mul(HOUR as i64))
    }

    /// The duration in nanoseconds.
    pub const fn as_nanos(self) -> i64 {
        self.0
    }

    /// The duration in whole milliseconds, truncated toward zero (Go `Milliseconds()`).
    pub const fn as_millis(self) -> i64 {
        self.0 / MILLISECOND as i64
    }

    /// The duration in whole seconds, truncated toward zero.
    pub const fn as_secs(self) -> i64 {
        self.0 / SECOND as i64
    }

    /// The duration as a [`std::time::Duration`], or `None` when negative.
    pub fn as_std(self) -> Option<std::time::Duration> {
        u64::try_from(self.0)
            .ok()
            .map(std::time::Duration::from_nanos)
    }

    /// Converts a [`std::time::Duration`], saturating at [`Duration::MAX`].
    pub fn from_std(d: std::time::Duration) -> Duration {
        Duration(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
    }

    /// `self + other`, or `None` on overflow.
    pub const fn checked_add(self, other: Duration) -> Option<Duration> {
        match self.0.checked_add(other.0) {
            Some(n) => Some(Duration(n)),
            None => None,
        }
    }

    /// `self - other`, or `None` on overflow.
    pub const fn checked_sub(self, other: Duration) -> Option<Duration> {
        match self.0.checked_sub(other.0) {
            Some(n) => Some(Duration(n)),
            None => None,
        }
    }

    /// `self + other`, clamped to [`Duration::MIN`]..=[`Duration::MAX`].
    pub const fn saturating_add(self, other: Duration) -> Duration {
        Duration(self.0.saturating_add(other.0))
    }

    /// `self - other`, clamped to [`Duration::MIN`]..=[`Duration::MAX`].
    pub const fn saturating_sub(self, other: Duration) -> Duration {
        Duration(self.0.saturating_sub(other.0))
    }

    /// Whether the duration is zero.
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// Whether the duration is negative.
    pub const fn is_negative(self) -> bool {
        self.0 < 0
    }
}

impl std::str::FromStr for Duration {
    type Err = ParseDurationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Duration::parse(s)
    }
}

impl From<Duration> for i64 {
    fn from(d: Duration) -> i64 {
        d.0
    }
}
