//! Small helpers: random name suffixes and Kubernetes timestamps.

use std::time::{SystemTime, UNIX_EPOCH};

pub use crate::common::util::random_u64;

/// The API server's `generateName` alphabet (no vowels, no confusable digits).
pub fn name_suffix(len: usize) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut out = String::with_capacity(len);
    let mut bits = random_u64();
    for _ in 0..len {
        out.push(ALPHABET[(bits % ALPHABET.len() as u64) as usize] as char);
        bits /= ALPHABET.len() as u64;
    }
    out
}

/// `metav1.Time`: RFC 3339 in UTC with second precision, e.g. `2026-01-02T03:04:05Z`.
pub fn k8s_time(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    let iso = js_compat::date::to_iso_string(secs as f64 * 1000.0).unwrap_or_default();
    // `YYYY-MM-DDTHH:mm:ss.000Z` without the milliseconds.
    format!("{}Z", iso.get(..19).unwrap_or_default())
}

pub fn now() -> String {
    k8s_time(SystemTime::now())
}

/// Resolves once the flag is (or becomes) `true`, or its sender is gone. The borrow of the
/// value is dropped at once, so the future stays `Send`.
pub async fn raised(rx: &mut tokio::sync::watch::Receiver<bool>) {
    let _ = rx.wait_for(|v| *v).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn formats_times_uids_and_suffixes() {
        let t = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        assert_eq!(k8s_time(t), "2023-11-14T22:13:20Z");
        assert_eq!(name_suffix(5).len(), 5);
    }
}
