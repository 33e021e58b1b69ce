//! Host-side confinement of sandbox paths (`assertConfinedSandboxPath`, `posixPathEscapes`).

use js_compat::path;

/// The message of a sandbox path that does not normalise to an absolute path without `..` (A37 in
/// the error reference).
pub fn not_confined_message(label: &str, candidate: &str) -> String {
    format!("Kubernetes sync {label} path is not a confined absolute path: {candidate}")
}

/// The message of a sandbox path outside the workspace remote dir (A38 in the error reference).
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
    let normalized_root = path::normalize(root);
    let normalized = path::normalize(candidate);
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
    let normalized = path::normalize(relative);
    normalized == ".." || normalized.starts_with("../") || normalized.starts_with('/')
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
        assert_eq!(path::basename("/workspace/a/b.txt"), "b.txt");
        assert_eq!(path::basename("/workspace/dir/"), "dir");
    }
}
