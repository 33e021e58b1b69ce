//! The tenant namespace of a company (`deriveTenantNamespace`).

use sha2::{Digest, Sha256};

use crate::config::KubernetesConfig;
use js_compat::string;

/// A namespace name is at most 63 characters; the default `paperclip-` prefix leaves 53.
const MAX_SLUG_LENGTH: usize = 53;
/// Room kept for `-` plus the 8-hex-digit hash when a slug is shortened.
const HASH_SUFFIX_LENGTH: usize = 9;

/// `deriveTenantNamespace(config, companyId)`: the prefix followed by `companySlug`, or by the
/// slug derived from the company id. Plain concatenation: nothing caps the result at 63.
pub fn derive_tenant_namespace(config: &KubernetesConfig, company_id: &str) -> String {
    let slug = match &config.company_slug {
        Some(slug) => slug.clone(),
        None => derive_company_slug(company_id),
    };
    format!("{}{slug}", config.namespace_prefix)
}

/// `deriveCompanySlug(input)`: lower-cased, every run of characters outside `[a-z0-9-]` turned
/// into one `-`, dashes trimmed from both ends, `company` when nothing is left. A slug longer
/// than 53 keeps its first 44 characters (trailing dashes dropped) plus `-` and the first 8 hex
/// digits of SHA-256 over the UTF-8 of the *original* input, so inputs sharing a long prefix
/// still get distinct namespaces.
pub fn derive_company_slug(input: &str) -> String {
    let lowered = string::to_lower_case(input);
    let mut collapsed = String::with_capacity(lowered.len());
    let mut in_run = false;
    for c in lowered.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' {
            collapsed.push(c);
            in_run = false;
        } else if !in_run {
            collapsed.push('-');
            in_run = true;
        }
    }
    let slug = collapsed.trim_matches('-');
    if slug.is_empty() {
        return "company".into();
    }
    // Only ASCII is left, so byte lengths are character (and UTF-16) lengths.
    if slug.len() <= MAX_SLUG_LENGTH {
        return slug.to_string();
    }
    let head = slug[..MAX_SLUG_LENGTH - HASH_SUFFIX_LENGTH].trim_end_matches('-');
    let digest = Sha256::digest(input.as_bytes());
    let hash: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    format!("{head}-{hash}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        assert_eq!(derive_company_slug("Acme Corp"), "acme-corp");
        assert_eq!(
            derive_company_slug("---lead-and-trail---"),
            "lead-and-trail"
        );
        assert_eq!(derive_company_slug("a--b"), "a--b");
        assert_eq!(derive_company_slug("!!!"), "company");
        assert_eq!(derive_company_slug(""), "company");
        assert_eq!(derive_company_slug("\u{212A}elvin Labs"), "kelvin-labs");
        assert_eq!(derive_company_slug("İstanbul"), "i-stanbul");
        assert_eq!(derive_company_slug("ΣΙΣΥΦΟΣ"), "company");
    }

    #[test]
    fn long_slugs_are_hashed_over_the_original_input() {
        assert_eq!(
            derive_company_slug(&"a".repeat(54)),
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-a3f01b69"
        );
        assert_eq!(derive_company_slug(&"a".repeat(53)), "a".repeat(53));
        assert_ne!(
            derive_company_slug("ACME-XXXXXXXXXXXXXXXXXXXXXXXXXXXXXX-YYYYYYYYYYYYYYYYYYYYYYYY"),
            derive_company_slug("acme-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx-yyyyyyyyyyyyyyyyyyyyyyyy"),
        );
    }
}
