//! Which image a run uses and how it is pulled (`image-allowlist.ts` @ 297658a).

use sandbox_core::{ProviderError, ProviderResult};

/// `globMatch(pattern, value)`: the whole of `value` must match. `*` matches any run of
/// characters other than `/` (a wildcard never spans path segments), `?` exactly one such
/// character, and every other character itself. Characters are UTF-16 code units, as in the
/// original's (non-`u`) regular expression.
pub fn glob_match(pattern: &str, value: &str) -> bool {
    let pattern: Vec<u16> = pattern.encode_utf16().collect();
    let value: Vec<u16> = value.encode_utf16().collect();
    glob_match_units(&pattern, &value)
}

const SLASH: u16 = b'/' as u16;
const STAR: u16 = b'*' as u16;
const QUESTION: u16 = b'?' as u16;

/// `matches[j]`: whether the pattern read so far matches `value[..j]`; one pass per pattern unit.
fn glob_match_units(pattern: &[u16], value: &[u16]) -> bool {
    let mut matches = vec![false; value.len() + 1];
    matches[0] = true;
    for &p in pattern {
        let mut next = vec![false; value.len() + 1];
        for j in 0..=value.len() {
            next[j] = match p {
                // Either the star matches nothing, or it extends over one more non-slash unit.
                STAR => matches[j] || (j > 0 && value[j - 1] != SLASH && next[j - 1]),
                QUESTION => j > 0 && value[j - 1] != SLASH && matches[j - 1],
                literal => j > 0 && value[j - 1] == literal && matches[j - 1],
            };
        }
        matches = next;
    }
    matches[value.len()]
}

/// `resolveImage({imageOverride}, {runtimeImage}, {imageAllowList, imageRegistry})`.
///
/// An override (any non-empty string) must match an allow-list glob. Otherwise the adapter's
/// image is used, moved to `image_registry` when that is set (non-empty). Acquire always passes
/// no override.
pub fn resolve_image(
    image_override: Option<&str>,
    runtime_image: &str,
    image_allow_list: &[String],
    image_registry: Option<&str>,
) -> ProviderResult<String> {
    if let Some(image) = image_override.filter(|i| !i.is_empty()) {
        if !image_allow_list
            .iter()
            .any(|pattern| glob_match(pattern, image))
        {
            return Err(ProviderError::new(format!(
                "Image override \"{image}\" is not in allowlist"
            )));
        }
        return Ok(image.to_string());
    }
    match image_registry.filter(|r| !r.is_empty()) {
        Some(registry) => Ok(rewrite_registry(runtime_image, registry)),
        None => Ok(runtime_image.to_string()),
    }
}

/// Replaces the host and organisation of `image` with `registry`, used without its `http://` or
/// `https://` scheme (issue #37: the original kept the scheme in, which made the reference
/// invalid) and without trailing slashes. The tag starts at the last `:` of the whole
/// reference, so a digest is carried over as `@sha256:…` pieces.
pub fn rewrite_registry(image: &str, registry: &str) -> String {
    let registry = registry_prefix(registry);
    let (path, tag) = match image.rfind(':') {
        Some(colon) => (&image[..colon], &image[colon..]),
        None => (image, ""),
    };
    let segments: Vec<&str> = path.split('/').collect();
    let rest = segments[segments.len().min(2)..].join("/");
    let name = if rest.is_empty() {
        segments[segments.len() - 1].to_string()
    } else {
        rest
    };
    format!("{registry}/{name}{tag}")
}

/// `registry` without a leading `http://` or `https://` (any case) and trailing slashes: the
/// part an image reference can carry. The config has already refused any other form.
pub fn registry_prefix(registry: &str) -> &str {
    let without_scheme = ["https://", "http://"]
        .iter()
        .find_map(|scheme| {
            let head = registry.get(..scheme.len())?;
            head.eq_ignore_ascii_case(scheme)
                .then(|| &registry[scheme.len()..])
        })
        .unwrap_or(registry);
    without_scheme.trim_end_matches('/')
}

/// Kubernetes `imagePullPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImagePullPolicy {
    Always,
    IfNotPresent,
}

impl ImagePullPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            ImagePullPolicy::Always => "Always",
            ImagePullPolicy::IfNotPresent => "IfNotPresent",
        }
    }
}

/// Tags a publisher may re-point at new bytes.
const FLOATING_TAGS: [&str; 4] = ["latest", "dev", "main", "stable"];

/// `imagePullPolicyFor(image)`: a node's cached copy of a floating tag (or of an untagged
/// reference, which means `latest`) may be stale, so those are pulled `Always`; digests and
/// other tags name fixed bytes and use `IfNotPresent`. The tag is looked for in the last path
/// segment only, so a registry port is not a tag.
pub fn image_pull_policy_for(image: &str) -> ImagePullPolicy {
    if image.contains("@sha256:") {
        return ImagePullPolicy::IfNotPresent;
    }
    let last_segment = image.rsplit('/').next().unwrap_or(image);
    let tag = last_segment
        .rfind(':')
        .map_or("latest", |colon| &last_segment[colon + 1..]);
    if FLOATING_TAGS.contains(&tag) {
        ImagePullPolicy::Always
    } else {
        ImagePullPolicy::IfNotPresent
    }
}

/// `resolveImagePullPolicy(image, preloadedImages)`: clusters whose nodes have the images
/// preloaded (and may have no registry access) use `IfNotPresent` for everything.
pub fn resolve_image_pull_policy(image: &str, preloaded_images: bool) -> ImagePullPolicy {
    if preloaded_images {
        ImagePullPolicy::IfNotPresent
    } else {
        image_pull_policy_for(image)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("ghcr.io/acme/*", "ghcr.io/acme/agent:v2"));
        assert!(!glob_match("ghcr.io/acme/*", "ghcr.io/acme/team/agent:v2"));
        assert!(glob_match("ghcr.io/*/*:v?", "ghcr.io/a/b:v1"));
        assert!(!glob_match("a?b", "a/b"));
        assert!(glob_match(
            "r.example/a+b(c)|d:[1]",
            "r.example/a+b(c)|d:[1]"
        ));
        assert!(!glob_match("ghcr.io/*", "ghcrxio/agent"));
        assert!(glob_match("*", ""));
        assert!(glob_match("a**b", "ab"));
        assert!(!glob_match("agent", "ghcr.io/agent"));
        // An astral character is two code units, so one `?` does not cover it.
        assert!(!glob_match("x?", "x\u{1F600}"));
        assert!(glob_match("x??", "x\u{1F600}"));
    }

    #[test]
    fn override_must_be_allow_listed() {
        let allow = vec!["ghcr.io/acme/*".to_string()];
        assert_eq!(
            resolve_image(Some("ghcr.io/acme/a:1"), "d:1", &allow, None).unwrap(),
            "ghcr.io/acme/a:1"
        );
        let err = resolve_image(Some("busybox"), "d:1", &[], Some("r.example")).unwrap_err();
        assert_eq!(
            err.message,
            "Image override \"busybox\" is not in allowlist"
        );
        assert_eq!(resolve_image(Some(""), "d:1", &[], None).unwrap(), "d:1");
    }

    #[test]
    fn registry_rewrite() {
        let rewrite = |image, registry| resolve_image(None, image, &[], Some(registry)).unwrap();
        assert_eq!(
            rewrite(
                "ghcr.io/paperclipai/agent-runtime-codex:v1",
                "r.example/m///"
            ),
            "r.example/m/agent-runtime-codex:v1"
        );
        assert_eq!(rewrite("docker.io/agent", "r.example"), "r.example/agent");
        assert_eq!(rewrite("agent", "r.example"), "r.example/agent");
        assert_eq!(
            rewrite("ghcr.io/o/team/agent:v1", "r.example"),
            "r.example/team/agent:v1"
        );
        assert_eq!(
            rewrite("ghcr.io/o/agent@sha256:ab", "r.example"),
            "r.example/agent@sha256:ab"
        );
        assert_eq!(resolve_image(None, "d:1", &[], Some("")).unwrap(), "d:1");
    }

    #[test]
    fn registry_rewrite_drops_the_scheme() {
        let claude = "ghcr.io/paperclipai/agent-runtime-claude:v7";
        for registry in [
            "https://ghcr.io/acme",
            "HTTPS://ghcr.io/acme/",
            "http://ghcr.io/acme",
            "ghcr.io/acme",
        ] {
            assert_eq!(
                rewrite_registry(claude, registry),
                "ghcr.io/acme/agent-runtime-claude:v7",
                "{registry}"
            );
        }
        assert_eq!(
            rewrite_registry(claude, "https://registry.local:5000"),
            "registry.local:5000/agent-runtime-claude:v7"
        );
        assert_eq!(registry_prefix("https:/x"), "https:/x");
    }

    #[test]
    fn pull_policies() {
        assert_eq!(
            image_pull_policy_for("ghcr.io/a/b:v1"),
            ImagePullPolicy::IfNotPresent
        );
        assert_eq!(
            image_pull_policy_for("ghcr.io/a/b"),
            ImagePullPolicy::Always
        );
        assert_eq!(
            image_pull_policy_for("localhost:5000/agent"),
            ImagePullPolicy::Always
        );
        assert_eq!(
            image_pull_policy_for("a:latest@sha256:abc"),
            ImagePullPolicy::IfNotPresent
        );
        assert_eq!(
            resolve_image_pull_policy("a:dev", true),
            ImagePullPolicy::IfNotPresent
        );
        assert_eq!(
            resolve_image_pull_policy("a:main", false).as_str(),
            "Always"
        );
    }
}
