//! Per-run object names: the run name, its Secret, and its scoped egress policies.
//!
//! The tenant namespace is derived in [`crate::lease::namespace`].

use js_compat::{number, string};

/// Prefix of every run (workload) name: Sandbox/Job name and `providerLeaseId`.
pub const RUN_NAME_PREFIX: &str = "pc-";
/// Suffix of the per-run Secret holding the adapter env.
pub const RUN_SECRET_SUFFIX: &str = "-env";
/// Lower-case Crockford base32: no `i`, `l`, `o`, `u`, so names stay unambiguous and DNS-safe.
pub const ULID_ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";
/// Timestamp and random parts of the ULID, in characters.
const ULID_TIME_CHARS: usize = 10;
pub const ULID_RANDOM_CHARS: usize = 16;
/// The longest object name Kubernetes accepts (a DNS-1123 subdomain).
pub const MAX_OBJECT_NAME_LENGTH: usize = 253;

/// `newRunUlidDns(now)`: 26 characters, the first 10 encoding `now_ms` (most significant first),
/// the last 16 drawn from `random_below_32`, which must return uniform values in `0..32` from a
/// cryptographic source (the names must not be guessable). Values outside the range are reduced
/// modulo 32.
pub fn new_run_ulid_dns(now_ms: f64, mut random_below_32: impl FnMut() -> u32) -> String {
    let mut time_chars = [0u8; ULID_TIME_CHARS];
    let mut t = now_ms;
    for slot in time_chars.iter_mut().rev() {
        // `t & 0x1f` in JS: ToInt32 keeps the low 32 bits, and 32 divides 2^32, so the low five
        // bits are those of the truncated value even above 2^32.
        *slot = ULID_ALPHABET[(number::to_int32(t) & 0x1f) as usize];
        t = (t / 32.0).floor();
    }
    let mut out = String::with_capacity(ULID_TIME_CHARS + ULID_RANDOM_CHARS);
    out.extend(time_chars.iter().map(|&b| b as char));
    for _ in 0..ULID_RANDOM_CHARS {
        out.push(ULID_ALPHABET[(random_below_32() % 32) as usize] as char);
    }
    out
}

/// The run name acquire uses: `pc-` and a fresh ULID.
pub fn new_run_name(now_ms: f64, random_below_32: impl FnMut() -> u32) -> String {
    format!(
        "{RUN_NAME_PREFIX}{}",
        new_run_ulid_dns(now_ms, random_below_32)
    )
}

/// `<run>-env`.
pub fn run_secret_name(run_name: &str) -> String {
    format!("{run_name}{RUN_SECRET_SUFFIX}")
}

/// `<workload><suffix>`, kept within 253 characters. An over-long workload name keeps its head
/// and its last 25 characters (where a run's random part sits), joined by `-`. Lengths and cuts
/// count UTF-16 code units, as the original's `length`/`slice` do.
pub fn scoped_policy_name(workload_name: &str, suffix: &str) -> String {
    let suffix_len = string::utf16_len(suffix) as i64;
    let max_workload_len = MAX_OBJECT_NAME_LENGTH as i64 - suffix_len;
    let workload_len = string::utf16_len(workload_name) as i64;
    let workload = if workload_len <= max_workload_len {
        workload_name.to_string()
    } else {
        format!(
            "{}-{}",
            string::slice(workload_name, 0, Some(max_workload_len - 26)),
            string::slice(workload_name, -25, None)
        )
    };
    format!("{workload}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ulid_encodes_time_then_random_digits() {
        let mut digits = (0..16u32).map(|i| if i == 15 { 31 } else { i });
        assert_eq!(
            new_run_ulid_dns(1_767_225_600_000.0, || digits.next().unwrap()),
            "01kdvdna000123456789abcdez"
        );
        assert_eq!(new_run_ulid_dns(0.0, || 31), "0000000000zzzzzzzzzzzzzzzz");
    }

    #[test]
    fn run_and_secret_names() {
        let run = new_run_name(0.0, || 0);
        assert_eq!(run, "pc-00000000000000000000000000");
        assert_eq!(run_secret_name(&run), "pc-00000000000000000000000000-env");
    }

    #[test]
    fn scoped_names_are_capped_keeping_the_tail() {
        let kept = "w".repeat(246);
        assert_eq!(
            scoped_policy_name(&kept, "-egress"),
            format!("{kept}-egress")
        );
        let long = format!("{}-{}", "h".repeat(200), "t".repeat(46));
        let name = scoped_policy_name(&long, "-egress");
        assert_eq!(name.len(), 253);
        assert_eq!(
            name,
            format!(
                "{}-{}-{}-egress",
                "h".repeat(200),
                "t".repeat(19),
                "t".repeat(25)
            )
        );
    }
}
