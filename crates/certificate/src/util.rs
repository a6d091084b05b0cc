//! Time formatting shared by the modules.

use std::time::SystemTime;

/// `time.Now().Format("2006-01-02-15-04-05")` in the local time zone (the store's file
/// names).
pub fn file_stamp_now() -> String {
    jiff::Zoned::now().strftime("%Y-%m-%d-%H-%M-%S").to_string()
}

/// RFC 3339 in UTC, for messages.
pub fn format_time(t: SystemTime) -> String {
    jiff::Timestamp::try_from(t)
        .map(|ts| ts.to_string())
        .unwrap_or_else(|_| format!("{t:?}"))
}
