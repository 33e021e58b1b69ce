//! Locating bubblewrap, proving it works on this machine, and building its argument list.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use super::error::RunnerError;

/// Debian/Ubuntu package that provides `bwrap`; named in the error when it is missing.
pub const BWRAP_PACKAGE: &str = "bubblewrap";

/// Top-level host entries that are mirrored into every sandbox. Merged-/usr hosts have these as
/// symlinks (recreated inside the sandbox root), others as directories (bound read-only).
const SYSTEM_LINKS_OR_DIRS: &[&str] = &["bin", "sbin", "lib", "lib32", "lib64", "libx32"];
/// Host directories always bound read-only: programs, libraries and configuration.
const SYSTEM_DIRS: &[&str] = &["/usr", "/etc"];

/// Which pid namespace a command runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PidMode {
    /// A new one of its own (`--unshare-pid`).
    Own,
    /// A new one of its own, and bwrap writes `{"child-pid": N, …}` (N: the host pid of the
    /// namespace's init) to the inherited descriptor `info_fd`, then closes it.
    OwnReporting { info_fd: i32 },
    /// The namespace open as the inherited descriptor `ns_fd` (`--pidns`).
    Join { ns_fd: i32 },
}

/// A usable bubblewrap binary plus the host layout it mirrors into sandboxes.
#[derive(Debug, Clone)]
pub struct Bwrap {
    path: PathBuf,
    read_only_dirs: Vec<PathBuf>,
    root_symlinks: Vec<(String, PathBuf)>,
}

impl Bwrap {
    /// Finds `bwrap` (honouring `EMULATOR_BWRAP`) and runs it once to prove namespaces work.
    /// The probe result is cached for the process: it costs ~10 ms and never changes.
    pub fn locate() -> Result<Bwrap, RunnerError> {
        static PROBED: OnceLock<Result<Bwrap, String>> = OnceLock::new();
        PROBED
            .get_or_init(|| Self::probe().map_err(|e| e.to_string()))
            .clone()
            .map_err(|detail| RunnerError::BwrapUnavailable {
                detail,
                package: BWRAP_PACKAGE,
            })
    }

    fn probe() -> Result<Bwrap, String> {
        let path = match std::env::var_os("EMULATOR_BWRAP") {
            Some(p) => PathBuf::from(p),
            None => find_in_path("bwrap").ok_or("`bwrap` was not found on PATH")?,
        };
        let mut read_only_dirs: Vec<PathBuf> = SYSTEM_DIRS.iter().map(PathBuf::from).collect();
        let mut root_symlinks = Vec::new();
        for name in SYSTEM_LINKS_OR_DIRS {
            let host = Path::new("/").join(name);
            match std::fs::symlink_metadata(&host) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    let target = std::fs::read_link(&host).map_err(|e| e.to_string())?;
                    root_symlinks.push((name.to_string(), target));
                }
                Ok(meta) if meta.is_dir() => read_only_dirs.push(host),
                _ => {}
            }
        }
        let bwrap = Bwrap {
            path,
            read_only_dirs,
            root_symlinks,
        };
        // A throwaway root proves mounts and namespaces are permitted, not just that the file exists.
        let scratch = tempfile::tempdir().map_err(|e| e.to_string())?;
        bwrap
            .prepare_root(scratch.path())
            .map_err(|e| e.to_string())?;
        let mut cmd = Command::new(&bwrap.path);
        cmd.args(bwrap.args(
            scratch.path(),
            "probe",
            "/",
            &[],
            &["/bin/true".into()],
            PidMode::Own,
        ));
        let out = cmd
            .output()
            .map_err(|e| format!("cannot run {}: {e}", bwrap.path.display()))?;
        if !out.status.success() {
            return Err(format!(
                "`bwrap` failed its self-test ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(bwrap)
    }

    /// Creates the symlinks a merged-/usr host expects at `/` inside a fresh sandbox root.
    /// Done by us rather than with `--symlink` because bwrap 0.8 refuses to recreate a link
    /// that a previous command already left in the (persistent) root.
    pub fn prepare_root(&self, root: &Path) -> std::io::Result<()> {
        for (name, target) in &self.root_symlinks {
            let link = root.join(name);
            if std::fs::symlink_metadata(&link).is_err() {
                std::os::unix::fs::symlink(target, &link)?;
            }
        }
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Arguments for running `argv` with `root` as the sandbox's writable `/`, in the pid
    /// namespace `pid` says.
    pub fn args(
        &self,
        root: &Path,
        hostname: &str,
        cwd: &str,
        env: &[(String, String)],
        argv: &[String],
        pid: PidMode,
    ) -> Vec<OsString> {
        let mut a: Vec<OsString> = Vec::with_capacity(32 + env.len() * 3 + argv.len());
        let mut push = |s: &str| a.push(OsString::from(s));
        push("--bind");
        a.push(root.as_os_str().to_owned());
        a.push("/".into());
        for dir in &self.read_only_dirs {
            a.push("--ro-bind".into());
            a.push(dir.as_os_str().to_owned());
            a.push(dir.as_os_str().to_owned());
        }
        let mut push = |s: &str| a.push(OsString::from(s));
        for fixed in [
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--unshare-ipc",
            "--unshare-uts",
            "--clearenv",
        ] {
            push(fixed);
        }
        match pid {
            // Own pid namespace: when the command exits, its namespace init dies and the kernel
            // reaps every leftover background process, like a per-command process tree. It dies
            // (and with it the namespace) if the emulator vanishes without cleaning up.
            PidMode::Own => {
                push("--unshare-pid");
                push("--die-with-parent");
            }
            PidMode::OwnReporting { info_fd } => {
                push("--unshare-pid");
                push("--die-with-parent");
                push("--info-fd");
                push(&info_fd.to_string());
            }
            // Another command's namespace (no reaper of its own: the namespace's init adopts
            // what the command leaves behind), as `runc exec` joins a container. Never with
            // `--die-with-parent`: to enter the namespace bwrap forks an intermediate child that
            // exits at once, and a command that set its parent-death signal before that child
            // was gone was SIGKILLed by its exit, after it had run (one `echo ok` in a burst of
            // 200 execs ended 137 with its output written, the kill traced to the exiting
            // intermediate). The command dies with the namespace instead, whose holder dies
            // with the emulator (`PidNamespace`).
            PidMode::Join { ns_fd } => {
                push("--pidns");
                push(&ns_fd.to_string());
            }
        }
        push("--hostname");
        push(hostname);
        for (k, v) in env {
            push("--setenv");
            push(k);
            push(v);
        }
        push("--chdir");
        push(cwd);
        push("--");
        for arg in argv {
            push(arg);
        }
        a
    }
}

fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}
