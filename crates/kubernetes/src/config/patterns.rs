//! The schema's regular expressions, as plain predicates.
//!
//! Each one states the JS regex it stands for. The JS regexes carry no `u` flag, so `\d` is
//! ASCII `[0-9]` only and `$` matches at the very end of the input (never before a trailing
//! newline). Every accepted character is ASCII, so counting bytes equals counting UTF-16 units.

fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// `/^[a-z0-9-]{1,32}$/` (`namespacePrefix`, `companySlug`).
pub fn is_short_dns_fragment(s: &str) -> bool {
    (1..=32).contains(&s.len()) && s.bytes().all(|b| is_lower_alnum(b) || b == b'-')
}

/// `/^(\d{1,3}\.){3}\d{1,3}\/\d{1,2}$/`: the shape of an IPv4 CIDR; ranges are not checked.
pub fn is_ipv4_cidr_shape(s: &str) -> bool {
    let digits = |part: &str, max: usize| {
        (1..=max).contains(&part.len()) && part.bytes().all(|b| b.is_ascii_digit())
    };
    let Some((address, prefix)) = s.split_once('/') else {
        return false;
    };
    let octets: Vec<&str> = address.split('.').collect();
    octets.len() == 4 && octets.iter().all(|octet| digits(octet, 3)) && digits(prefix, 2)
}

/// `/^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/`: a label name or a non-empty label value.
fn is_label_name(s: &str) -> bool {
    let bytes = s.as_bytes();
    let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    bytes.len() <= 63
        && first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// `/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/`: a lower-case DNS
/// subdomain (dot-separated labels, each starting and ending alphanumeric).
fn is_dns_subdomain(s: &str) -> bool {
    s.split('.').all(|label| {
        let bytes = label.as_bytes();
        match (bytes.first(), bytes.last()) {
            (Some(&first), Some(&last)) => {
                is_lower_alnum(first)
                    && is_lower_alnum(last)
                    && bytes.iter().all(|&b| is_lower_alnum(b) || b == b'-')
            }
            _ => false,
        }
    })
}

/// A Kubernetes label key: `name`, or `prefix/name` split at the first `/`, with a DNS-subdomain
/// prefix of at most 253 characters.
pub fn is_valid_label_key(key: &str) -> bool {
    match key.split_once('/') {
        None => is_label_name(key),
        Some((prefix, name)) => {
            prefix.len() <= 253 && is_dns_subdomain(prefix) && is_label_name(name)
        }
    }
}

/// A Kubernetes label value: empty, or a label name.
pub fn is_valid_label_value(value: &str) -> bool {
    value.is_empty() || is_label_name(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_fragment() {
        assert!(is_short_dns_fragment("paperclip-"));
        assert!(is_short_dns_fragment("--"));
        assert!(is_short_dns_fragment(&"a".repeat(32)));
        assert!(!is_short_dns_fragment(&"a".repeat(33)));
        assert!(!is_short_dns_fragment(""));
        assert!(!is_short_dns_fragment("UP"));
        assert!(!is_short_dns_fragment("a_b"));
        assert!(!is_short_dns_fragment("abc\n"));
    }

    #[test]
    fn cidr_shape() {
        assert!(is_ipv4_cidr_shape("10.0.0.0/8"));
        assert!(is_ipv4_cidr_shape("999.1.1.1/99"));
        assert!(!is_ipv4_cidr_shape("10.0.0.0"));
        assert!(!is_ipv4_cidr_shape("10.0.0.0/33x"));
        assert!(!is_ipv4_cidr_shape("10.0.0/8"));
        assert!(!is_ipv4_cidr_shape("10.0.0.0.0/8"));
        assert!(!is_ipv4_cidr_shape("1000.0.0.0/8"));
        assert!(!is_ipv4_cidr_shape("10.0.0.0/123"));
        assert!(!is_ipv4_cidr_shape("fd00::/8"));
        assert!(
            !is_ipv4_cidr_shape("١.0.0.0/8"),
            "Arabic-Indic digits are not \\d"
        );
        assert!(!is_ipv4_cidr_shape("10.0.0.0/8/8"));
    }

    #[test]
    fn label_keys() {
        for good in ["app", "app.kubernetes.io/name", "a", "A_b.c-d", "x/y"] {
            assert!(is_valid_label_key(good), "{good}");
        }
        for bad in [
            "",
            "bad key",
            "k8s:io.kubernetes.pod.namespace",
            "-app",
            "app-",
            "Example.com/app",
            "/app",
            "a//b",
            "a/b/c",
            "a..b/c",
            &"a".repeat(64),
        ] {
            assert!(!is_valid_label_key(bad), "{bad}");
        }
        assert!(is_valid_label_key(&format!("{}/n", "a".repeat(253))));
        assert!(!is_valid_label_key(&format!("{}/n", "a".repeat(254))));
    }

    #[test]
    fn label_values() {
        assert!(is_valid_label_value(""));
        assert!(is_valid_label_value(&"v".repeat(63)));
        assert!(!is_valid_label_value(&"v".repeat(64)));
        assert!(!is_valid_label_value("has space"));
        assert!(!is_valid_label_value("-bad"));
    }
}
