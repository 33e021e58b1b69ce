//! Host-side confinement of sandbox paths (`assertConfinedSandboxPath`) and the POSIX path
//! helpers file sync uses (node's `path.posix`).

pub use sandbox_core::archive::{posix_dirname, posix_join, posix_normalize};

/// A37.
pub fn not_confined_message(label: &str, candidate: &str) -> String {
    format!("Kubernetes sync {label} path is not a confined absolute path: {candidate}")
}

/// A38.
pub fn escapes_message(label: &str, candidate: &str) -> String {
    format!("Kubernetes sync {label} path escapes the workspace remote dir: {candidate}")
}

/// `assertConfinedSandboxPath(root, candidate, label)`: `candidate` must normalise to an
/// absolute path without `..` that is `root` or below it.
pub fn assert_confined_sandbox_path(
    root: &str,
    candidate: &str,
    label: &str,
) -> Result<(), String> {
    let normalized_root = posix_normalize(root);
    let normalized = posix_normalize(candidate);
    if !normalized.starts_with('/')
        || normalized == ".."
        || normalized.contains("/../")
        || normalized.ends_with("/..")
    {
        return Err(not_confined_message(label, candidate));
    }
    let prefix = if normalized_root.ends_with('/') {
        normalized_root.clone()
    } else {
        format!("{normalized_root}/")
    };
    if normalized != normalized_root && !normalized.starts_with(&prefix) {
        return Err(escapes_message(label, candidate));
    }
    Ok(())
}

/// `posixPathEscapes`: absolute, `..`, or `..`-leading once normalised.
pub fn posix_path_escapes(relative: &str) -> bool {
    let normalized = posix_normalize(relative);
    normalized == ".." || normalized.starts_with("../") || normalized.starts_with('/')
}

/// `path.posix.basename`.
pub fn posix_basename(path: &str) -> String {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return String::new();
    }
    trimmed.rsplit('/').next().unwrap_or_default().to_string()
}

/// A random v4 UUID, lower-case hex (`crypto.randomUUID()`).
pub fn random_uuid() -> String {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).expect("OS randomness");
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confinement() {
        let ok = |p: &str| assert_confined_sandbox_path("/workspace", p, "target");
        assert_eq!(ok("/workspace"), Ok(()));
        assert_eq!(ok("/workspace/"), Ok(()));
        assert_eq!(ok("/workspace/a/../b"), Ok(()));
        assert_eq!(ok("/workspace/./x"), Ok(()));
        assert_eq!(
            ok("relative/x"),
            Err("Kubernetes sync target path is not a confined absolute path: relative/x".into())
        );
        assert_eq!(
            ok("/workspace/../etc/passwd"),
            Err(
                "Kubernetes sync target path escapes the workspace remote dir: /workspace/../etc/passwd"
                    .into()
            )
        );
        assert_eq!(
            ok("/workspaces/x"),
            Err(
                "Kubernetes sync target path escapes the workspace remote dir: /workspaces/x"
                    .into()
            )
        );
        assert_eq!(
            ok("../x"),
            Err("Kubernetes sync target path is not a confined absolute path: ../x".into())
        );
        assert_eq!(
            assert_confined_sandbox_path("/", "/anything", "source"),
            Ok(())
        );
    }

    #[test]
    fn escapes_and_basenames() {
        assert!(posix_path_escapes(".."));
        assert!(posix_path_escapes("a/../../b"));
        assert!(posix_path_escapes("/etc"));
        assert!(!posix_path_escapes("a/../b"));
        assert!(!posix_path_escapes("./a"));
        assert_eq!(posix_basename("/workspace/a/b.txt"), "b.txt");
        assert_eq!(posix_basename("/workspace/dir/"), "dir");
        let id = random_uuid();
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "4");
    }
}
