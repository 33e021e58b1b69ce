//! The host temp dirs of native file sync (`paperclip-k8s-sync-XXXXXX` under the system temp
//! dir), and what removes them on every path, so that no sync leaves an archive on the host:
//!
//! - the sync ends, succeeded or failed, or its future is dropped (worker shutdown cancels it,
//!   a caller gives up): the [`HostTempDir`] guard removes the dir;
//! - the worker dies in the middle of a sync (SIGKILL, the `process.exit` that ends the host's
//!   shutdown drain, a crash): no destructor runs then. So each dir is held with an exclusive
//!   `flock` for as long as it exists, which the kernel releases with the process, and
//!   [`sweep_abandoned`] removes every such dir that no process holds. A worker sweeps on its
//!   first asynchronous hook (the host starts a new worker after one died; `setup` and the
//!   synchronous hooks must start no thread) and, at most once a minute, when a sync makes its
//!   dir. A dir younger than [`MIN_AGE`] is left alone: it may have just been made and not yet
//!   locked.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sandbox_core::archive::node_fs_message;
use sandbox_core::{ProviderError, ProviderResult};

/// The name every sync temp dir starts with.
pub const TEMP_DIR_PREFIX: &str = "paperclip-k8s-sync-";
/// How old an unlocked dir must be before a sweep removes it.
pub const MIN_AGE: Duration = Duration::from_secs(10);
/// The least time between two sweeps a sync starts.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// A sync's temp dir: removed on drop, and locked while it exists (see the module docs).
pub(super) struct HostTempDir {
    // Dropped in this order: the dir is removed while it is still locked.
    dir: tempfile::TempDir,
    _lock: File,
}

impl HostTempDir {
    /// A new dir under the system temp dir, locked; a sweep starts in the background when none
    /// ran for a minute.
    pub(super) fn new() -> ProviderResult<Self> {
        let root = std::env::temp_dir();
        let dir = tempfile::Builder::new()
            .prefix(TEMP_DIR_PREFIX)
            .tempdir_in(&root)
            .map_err(|e| ProviderError::new(node_fs_message(&e, "mkdtemp", &root)))?;
        let lock = File::open(dir.path())
            .map_err(|e| ProviderError::new(node_fs_message(&e, "open", dir.path())))?;
        // Cannot fail but where the file system has no `flock`: a sweep cannot take the lock
        // there either, so it removes nothing (and a sweep leaves a dir this young alone).
        let _ = try_lock(&lock);
        #[cfg(feature = "testing")]
        probe::made(dir.path());
        if sweep_due() {
            spawn_sweep();
        }
        Ok(Self { dir, _lock: lock })
    }

    pub(super) fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Takes the exclusive `flock` of `file` without waiting; it lasts until the file is closed (or
/// its process ends).
fn try_lock(file: &File) -> std::io::Result<()> {
    rustix::fs::flock(file, rustix::fs::FlockOperation::NonBlockingLockExclusive)
        .map_err(std::io::Error::from)
}

/// Whether a sync should start a sweep now (once a minute at most, process-wide).
fn sweep_due() -> bool {
    static LAST: Mutex<Option<Instant>> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    let due = last.is_none_or(|at| at.elapsed() >= SWEEP_EVERY);
    if due {
        *last = Some(Instant::now());
    }
    due
}

/// Sweeps the system temp dir on a thread of its own ([`sweep_abandoned`], [`MIN_AGE`]): the
/// removals are file-system work that must not hold up the caller.
pub fn spawn_sweep() {
    let root = std::env::temp_dir();
    let _ = std::thread::Builder::new()
        .name("paperclip-k8s-sync-sweep".into())
        .spawn(move || sweep_abandoned(&root, MIN_AGE));
}

/// Removes the sync temp dirs under `root` that no live process holds: directories (never a
/// link) named [`TEMP_DIR_PREFIX`]…, owned by this user, unchanged for `min_age`, whose lock can
/// be taken. Returns what it removed.
pub fn sweep_abandoned(root: &Path, min_age: Duration) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    // This user's id, as the file system records it for what this process makes.
    let Some(uid) = tempfile::tempfile_in(root)
        .and_then(|f| f.metadata())
        .ok()
        .map(|m| m.uid())
    else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        if !entry
            .file_name()
            .to_string_lossy()
            .starts_with(TEMP_DIR_PREFIX)
        {
            continue;
        }
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let old = meta
            .modified()
            .ok()
            .and_then(|at| at.elapsed().ok())
            .is_some_and(|age| age >= min_age);
        if !meta.is_dir() || meta.uid() != uid || !old {
            continue;
        }
        let Ok(lock) = File::open(&path) else {
            continue;
        };
        // Held: a live worker's sync is using it.
        if try_lock(&lock).is_err() {
            continue;
        }
        if std::fs::remove_dir_all(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

/// The sync temp dirs made so far in this process (feature `testing`), to check that none is
/// left.
#[cfg(feature = "testing")]
pub mod probe {
    use std::path::{Path, PathBuf};
    use std::sync::Mutex;

    static MADE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

    /// Every sync temp dir made in this process, in order.
    pub fn made_dirs() -> Vec<PathBuf> {
        MADE.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(super) fn made(dir: &Path) {
        MADE.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(dir.to_path_buf());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dir as a worker that died left it: named like a sync's, with an archive, unlocked.
    fn abandoned(root: &Path, name: &str) -> PathBuf {
        let dir = root.join(format!("{TEMP_DIR_PREFIX}{name}"));
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("sync-out.tar"), vec![0u8; 4096]).unwrap();
        dir
    }

    #[test]
    fn a_sweep_removes_unlocked_dirs_and_leaves_held_young_and_foreign_ones() {
        let root = tempfile::tempdir().unwrap();
        let dead = abandoned(root.path(), "dead");
        let held = abandoned(root.path(), "held");
        let lock = File::open(&held).unwrap();
        try_lock(&lock).unwrap();
        let other = root.path().join("not-a-sync-dir");
        std::fs::create_dir(&other).unwrap();
        let link = root.path().join(format!("{TEMP_DIR_PREFIX}link"));
        std::os::unix::fs::symlink(&other, &link).unwrap();
        // Too young for a sweep with an age limit.
        assert!(sweep_abandoned(root.path(), Duration::from_secs(3600)).is_empty());
        assert!(dead.exists());
        assert_eq!(
            sweep_abandoned(root.path(), Duration::ZERO),
            vec![dead.clone()]
        );
        assert!(!dead.exists());
        assert!(held.join("sync-out.tar").exists(), "a held dir stays");
        assert!(
            other.exists() && link.exists(),
            "only sync dirs, never a link"
        );
        // Once its holder is gone (the kernel drops the lock with the process), it goes too.
        drop(lock);
        assert_eq!(
            sweep_abandoned(root.path(), Duration::ZERO),
            vec![held.clone()]
        );
    }

    #[test]
    fn a_sync_dir_is_held_while_it_lives_and_removed_when_dropped() {
        let dir = HostTempDir::new().unwrap();
        let path = dir.path().to_path_buf();
        std::fs::write(path.join("sync-out.tar"), b"x").unwrap();
        assert!(try_lock(&File::open(&path).unwrap()).is_err(), "locked");
        let root = path.parent().unwrap();
        assert!(!sweep_abandoned(root, Duration::ZERO).contains(&path));
        assert!(path.exists());
        drop(dir);
        assert!(!path.exists());
    }
}
