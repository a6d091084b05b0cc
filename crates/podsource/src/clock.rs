//! Time for the `kubernetes.io/config.seen` annotation. The clock itself is
//! `kubelet_container::clock` (re-exported here): [`Clock`], [`RealClock`] in
//! production, [`FakeClock`] in tests.

pub use kubelet_container::clock::{Clock, FakeClock, RealClock};

/// Go's `time.RFC3339Nano` rendering in UTC (fraction without trailing zeros), the format
/// of `kubetypes.NewTimestamp().GetString()`.
pub fn rfc3339_nano(t: jiff::Timestamp) -> String {
    t.to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_go_rfc3339_nano() {
        let t: jiff::Timestamp = "2024-05-06T07:08:09.120Z".parse().unwrap();
        assert_eq!(rfc3339_nano(t), "2024-05-06T07:08:09.12Z");
        let t: jiff::Timestamp = "2024-05-06T07:08:09Z".parse().unwrap();
        assert_eq!(rfc3339_nano(t), "2024-05-06T07:08:09Z");
        let t: jiff::Timestamp = "2024-05-06T07:08:09.000000001Z".parse().unwrap();
        assert_eq!(rfc3339_nano(t), "2024-05-06T07:08:09.000000001Z");
    }
}
