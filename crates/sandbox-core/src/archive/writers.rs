//! The regular files of a checked archive, written on worker threads while the extraction reads on.
//!
//! Why: on ext4 most of an extraction's time is the kernel creating files (the inode
//! allocator's search, `__ext4_new_inode`; see `bench/profile/README.md`, the sync section), a
//! cost paid per file and on the CPU, so with one thread the read of the next member waits for
//! every create in turn. With files handed to [`Writers`], two or more creates run at once and
//! the read overlaps them. (The original's node-tar keeps several file writes in flight too.)
//!
//! Order stays what a sequential extraction would show: [`Writers::settle`] waits until every
//! file handed over so far is written, and the extraction settles before any entry that is not
//! a new regular file (a directory, a link, a path handed over already or a path under one), so
//! such an entry sees every file before it on disk. A failure stops the writing of files not yet
//! started, and the one reported is the first in archive order.
//!
//! Bounds: only files of at most [`WRITER_FILE_BYTES`] are handed over (their bytes are read
//! into memory first), and at most [`QUEUED_FILES`] wait at once, so a writer pool holds at most
//! `(QUEUED_FILES + writers + 1) * WRITER_FILE_BYTES` of file content.

use std::fs::File;
use std::os::fd::OwnedFd;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::Scope;
use std::time::{Duration, UNIX_EPOCH};

use super::ArchiveError;
use crate::confined::Confined;
use crate::sparse::SparseFile;

/// The largest file handed to a writer thread; larger ones are written by the reading thread.
pub const WRITER_FILE_BYTES: u64 = 1024 * 1024;

/// Files read and waiting for a writer thread at most.
pub const QUEUED_FILES: usize = 8;

/// Writer threads: one per core (at least two, so that the read overlaps a create even on one
/// core; at most four, past which this machine kind measured no gain).
fn writer_count() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4))
}

/// Where and how a regular file is created: `name` in the directory `parent`.
pub struct NewFile {
    pub parent: Arc<OwnedFd>,
    pub name: String,
    /// The destination path, for error messages.
    pub target: PathBuf,
    pub mode: u32,
    pub mtime: Option<u64>,
    /// Owner to restore (running as root, as node-tar does).
    pub owner: Option<(u32, u32)>,
}

/// A file handed to the writers: its entry's position in the archive (the first failure by
/// position is reported) and its whole content.
pub struct FileJob {
    pub index: usize,
    pub file: NewFile,
    pub content: Vec<u8>,
}

#[derive(Default)]
struct Progress {
    written: usize,
    /// The failure of the lowest archive position so far.
    failure: Option<(usize, ArchiveError)>,
}

#[derive(Default)]
struct Shared {
    progress: Mutex<Progress>,
    settled: Condvar,
}

impl Shared {
    fn progress(&self) -> MutexGuard<'_, Progress> {
        // A writer never panics while holding the lock (it only counts); recover regardless.
        self.progress.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The writer threads of one extraction, started on the first file handed over. Dropping it
/// closes the queue; the scope joins the threads once they finish what is queued.
pub struct Writers<'scope, 'env> {
    scope: &'scope Scope<'scope, 'env>,
    root: &'env Confined,
    queue: Option<SyncSender<FileJob>>,
    shared: Arc<Shared>,
    handed_over: usize,
}

impl<'scope, 'env> Writers<'scope, 'env> {
    pub fn new(scope: &'scope Scope<'scope, 'env>, root: &'env Confined) -> Self {
        Writers {
            scope,
            root,
            queue: None,
            shared: Arc::default(),
            handed_over: 0,
        }
    }

    /// Queues `job` (waiting while [`QUEUED_FILES`] wait already).
    pub fn hand_over(&mut self, job: FileJob) {
        let queue = self.queue.get_or_insert_with(|| {
            let (queue, jobs) = sync_channel(QUEUED_FILES);
            let jobs = Arc::new(Mutex::new(jobs));
            for _ in 0..writer_count() {
                let (jobs, shared, root) = (Arc::clone(&jobs), Arc::clone(&self.shared), self.root);
                self.scope.spawn(move || write_jobs(&jobs, &shared, root));
            }
            queue
        });
        self.handed_over += 1;
        if let Err(unsent) = queue.send(job) {
            // No writer is left (one panicked, and the scope re-raises that): count it as done.
            record(&self.shared, unsent.0.index, Err(ArchiveError::Unsafe));
        }
    }

    /// Whether a file handed over has failed (the extraction stops reading then).
    pub fn failed(&self) -> bool {
        self.shared.progress().failure.is_some()
    }

    /// Waits until every file handed over is written: the first failure in archive order, if any.
    pub fn settle(&mut self) -> Result<(), ArchiveError> {
        match self.wait_for_all().failure.take() {
            Some((_, error)) => Err(error),
            None => Ok(()),
        }
    }

    /// The failure to report when the entry at archive position `index` failed with `failure`:
    /// once every file handed over is written, the failure of one before it, if any, else
    /// `failure`.
    pub fn first_failure(&mut self, index: usize, failure: ArchiveError) -> ArchiveError {
        match self.wait_for_all().failure.take() {
            Some((at, earlier)) if at < index => earlier,
            _ => failure,
        }
    }

    fn wait_for_all(&self) -> MutexGuard<'_, Progress> {
        let mut progress = self.shared.progress();
        while progress.written < self.handed_over {
            progress = self
                .shared
                .settled
                .wait(progress)
                .unwrap_or_else(|p| p.into_inner());
        }
        progress
    }
}

impl Drop for Writers<'_, '_> {
    fn drop(&mut self) {
        // Closing the queue lets the threads end; the scope joins them.
        self.queue = None;
    }
}

fn write_jobs(jobs: &Mutex<Receiver<FileJob>>, shared: &Shared, root: &Confined) {
    loop {
        let job = match jobs.lock().unwrap_or_else(|p| p.into_inner()).recv() {
            Ok(job) => job,
            Err(_) => return,
        };
        // After a failure nothing more is written, as a sequential extraction stops there.
        if shared.progress().failure.is_some() {
            record(shared, job.index, Ok(()));
            continue;
        }
        match catch_unwind(AssertUnwindSafe(|| write_job(root, &job))) {
            Ok(outcome) => record(shared, job.index, outcome),
            Err(panic) => {
                // Counted, so that `settle` returns; the scope re-raises the panic when it joins.
                record(shared, job.index, Err(ArchiveError::Unsafe));
                resume_unwind(panic);
            }
        }
    }
}

fn record(shared: &Shared, index: usize, outcome: Result<(), ArchiveError>) {
    let mut progress = shared.progress();
    progress.written += 1;
    if let Err(error) = outcome
        && progress.failure.as_ref().is_none_or(|(at, _)| index < *at)
    {
        progress.failure = Some((index, error));
    }
    shared.settled.notify_all();
}

/// Creates `file` as every extraction path does: what was at the name removed (never a
/// directory), created exclusively and never through a link, filled by `fill`, then its mtime
/// and owner restored.
pub fn create_file(
    root: &Confined,
    file: &NewFile,
    fill: impl FnOnce(&mut File) -> Result<(), ArchiveError>,
) -> Result<(), ArchiveError> {
    let fs_err = |e, syscall| ArchiveError::fs(e, syscall, &file.target);
    root.clear(&*file.parent, &file.name)
        .map_err(|e| fs_err(e, "open"))?;
    let mut out = root
        .create_file(&*file.parent, &file.name, file.mode)
        .map_err(|e| fs_err(e, "open"))?;
    fill(&mut out)?;
    if let Some(mtime) = file.mtime {
        let _ = out.set_modified(UNIX_EPOCH + Duration::from_secs(mtime));
    }
    if let Some((uid, gid)) = file.owner {
        root.chown(&*file.parent, &file.name, uid, gid);
    }
    Ok(())
}

/// A handed-over file: its content written with zero blocks left as holes.
fn write_job(root: &Confined, job: &FileJob) -> Result<(), ArchiveError> {
    create_file(root, &job.file, |out| {
        let write_err = |e| ArchiveError::fs(e, "write", &job.file.target);
        let mut sparse = SparseFile::new(out);
        sparse.write(&job.content).map_err(write_err)?;
        sparse.finish().map(drop).map_err(write_err)
    })
}
