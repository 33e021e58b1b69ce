//! A sandbox's private root directory on the host.

use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use super::bwrap::Bwrap;

/// The host directory that is `/` inside one sandbox. Removed by [`SandboxRoot::remove`] (the
/// emulator also removes its whole parent directory on shutdown, so nothing outlives it).
#[derive(Debug)]
pub struct SandboxRoot {
    path: PathBuf,
}

impl SandboxRoot {
    /// Creates `path` with the given `(sandbox path, mode)` directories, e.g. `("/tmp", 0o1777)`.
    pub fn create(bwrap: &Bwrap, path: PathBuf, dirs: &[(&str, u32)]) -> std::io::Result<Self> {
        std::fs::create_dir(&path)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        for (dir, mode) in dirs {
            let host = Self::join(&path, dir);
            std::fs::create_dir_all(&host)?;
            std::fs::set_permissions(&host, std::fs::Permissions::from_mode(*mode))?;
        }
        bwrap.prepare_root(&path)?;
        Ok(SandboxRoot { path })
    }

    /// Copies this root (ownership, modes, links and all) into a new root at `dest`.
    /// `cp -a` rather than a Rust walk: it preserves special files, hard links and xattrs.
    pub async fn fork_to(&self, dest: PathBuf) -> std::io::Result<SandboxRoot> {
        let status = tokio::process::Command::new("cp")
            .arg("-a")
            .arg("--reflink=auto")
            .arg("--")
            .arg(&self.path)
            .arg(&dest)
            .stdin(std::process::Stdio::null())
            .status()
            .await?;
        if !status.success() {
            let _ = std::fs::remove_dir_all(&dest);
            return Err(std::io::Error::other(format!("cp -a failed: {status}")));
        }
        Ok(SandboxRoot { path: dest })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The host path of an absolute sandbox path, lexically (symlinks are not followed, so the
    /// result is only used for existence checks; reads and writes go through the sandbox).
    pub fn host_path(&self, sandbox_path: &str) -> PathBuf {
        Self::join(&self.path, sandbox_path)
    }

    fn join(root: &Path, sandbox_path: &str) -> PathBuf {
        let mut out = root.to_path_buf();
        for part in Path::new(sandbox_path).components() {
            if let Component::Normal(p) = part {
                out.push(p);
            }
        }
        out
    }

    /// Deletes the tree. Call only after every process of the sandbox has been killed.
    pub fn remove(&self) -> std::io::Result<()> {
        match std::fs::remove_dir_all(&self.path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }
}
