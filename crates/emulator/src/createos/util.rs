//! Small helpers: resource IDs and timestamps.

use std::time::SystemTime;

use crate::common::util::{random_u64, unix_ms};

/// `prefix_` + 16 random lower-case hex digits (matches the provider's `^[A-Za-z0-9_-]{1,200}$`).
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{:016x}", random_u64())
}

/// RFC 3339 UTC timestamp with millisecond precision, e.g. `2026-01-02T03:04:05.678Z`.
pub fn rfc3339(t: SystemTime) -> String {
    js_compat::date::to_iso_string(unix_ms(t) as f64).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn formats_timestamps_and_ids() {
        let t = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        assert_eq!(rfc3339(t), "2023-11-14T22:13:20.123Z");
        let (a, b) = (new_id("sb"), new_id("sb"));
        assert_ne!(a, b);
        assert_eq!(a.len(), 19);
    }
}
