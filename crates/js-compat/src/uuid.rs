//! `crypto.randomUUID()`: a random (version 4, RFC 9562 variant) UUID in lower-case hex with
//! hyphens, from the `uuid` crate (OS randomness through `getrandom`).

/// `crypto.randomUUID()`.
pub fn random_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[cfg(test)]
mod tests {
    use super::random_uuid;

    #[test]
    fn uuids_are_v4_and_lower_case() {
        let a = random_uuid();
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!("89ab".contains(&a[19..20]));
        for i in [8, 13, 18, 23] {
            assert_eq!(&a[i..=i], "-");
        }
        assert!(
            a.chars()
                .all(|c| c == '-' || c.is_ascii_digit() || ('a'..='f').contains(&c))
        );
        assert_ne!(a, random_uuid());
    }
}
