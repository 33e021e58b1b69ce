//! Starting one command inside a sandbox root, with pipes or a PTY, and controlling its tree.

use std::io::Read;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
use nix::pty::{Winsize, openpty};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::io::unix::AsyncFd;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

use super::bwrap::{Bwrap, PidMode};
use super::exit::ExitInfo;
use super::procfs::session_members;

/// How the command's standard streams are connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoMode {
    /// Separate stdout/stderr pipes; stdin is a pipe when `stdin` is true, else /dev/null.
    Pipes { stdin: bool },
    /// One pseudo-terminal for all three streams, as the controlling terminal of the command.
    Pty { cols: u16, rows: u16 },
}

/// What to run and where.
#[derive(Debug, Clone)]
pub struct LaunchSpec<'a> {
    pub root: &'a Path,
    pub hostname: &'a str,
    pub cwd: &'a str,
    pub env: Vec<(String, String)>,
    pub argv: Vec<String>,
    pub io: IoMode,
}

/// A started command: its tree handle, its streams and the bwrap child to wait for.
pub struct Launched {
    pub tree: std::sync::Arc<ProcessTree>,
    pub io: LaunchedIo,
    /// Wait on this with [`ProcessTree::wait`].
    pub child: Child,
}

pub enum LaunchedIo {
    Pipes {
        stdin: Option<ChildStdin>,
        stdout: ChildStdout,
        stderr: ChildStderr,
    },
    Pty(PtyMaster),
}

impl Bwrap {
    /// Starts `spec` as a new session led by bwrap, so the whole tree can be found and killed,
    /// in a pid namespace of its own.
    pub fn launch(&self, spec: LaunchSpec<'_>) -> std::io::Result<Launched> {
        self.launch_in(spec, None)
    }

    /// [`Bwrap::launch`], in the pid namespace `pidns` when given (the command and everything it
    /// starts then live on after bwrap's child exits, adopted by that namespace's init, as in a
    /// container).
    pub fn launch_in(
        &self,
        spec: LaunchSpec<'_>,
        pidns: Option<BorrowedFd<'_>>,
    ) -> std::io::Result<Launched> {
        let ns_fd = pidns.map(|fd| fd.as_raw_fd());
        let mode = match ns_fd {
            Some(ns_fd) => PidMode::Join { ns_fd },
            None => PidMode::Own,
        };
        let mut cmd = Command::new(self.path());
        cmd.args(self.args(
            spec.root,
            spec.hostname,
            spec.cwd,
            &spec.env,
            &spec.argv,
            mode,
        ));
        cmd.env_clear();
        let mut master = None;
        match spec.io {
            IoMode::Pipes { stdin } => {
                cmd.stdin(if stdin { Stdio::piped() } else { Stdio::null() })
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
                // SAFETY: only async-signal-safe calls between fork and exec; `ns_fd` is open
                // in the parent for the whole spawn (borrowed for this call).
                unsafe { cmd.pre_exec(move || new_session(false).and_then(|()| inherit(ns_fd))) };
            }
            IoMode::Pty { cols, rows } => {
                let size = Winsize {
                    ws_row: rows,
                    ws_col: cols,
                    ws_xpixel: 0,
                    ws_ypixel: 0,
                };
                let pty = openpty(Some(&size), None).map_err(std::io::Error::from)?;
                set_cloexec(&pty.master)?;
                set_cloexec(&pty.slave)?;
                cmd.stdin(Stdio::from(pty.slave.try_clone()?))
                    .stdout(Stdio::from(pty.slave.try_clone()?))
                    .stderr(Stdio::from(pty.slave));
                // SAFETY: only async-signal-safe calls between fork and exec; `ns_fd` is open
                // in the parent for the whole spawn (borrowed for this call).
                unsafe { cmd.pre_exec(move || new_session(true).and_then(|()| inherit(ns_fd))) };
                master = Some(pty.master);
            }
        }
        let mut child = cmd.spawn()?;
        // Dropping the command closes our copies of the PTY slave, so the master sees EOF (EIO)
        // once the sandboxed tree is gone.
        drop(cmd);
        let leader = child.id().map(|p| p as i32).unwrap_or(-1);
        let io = match master {
            Some(fd) => LaunchedIo::Pty(PtyMaster::new(fd)?),
            None => LaunchedIo::Pipes {
                stdin: child.stdin.take(),
                stdout: child.stdout.take().expect("piped stdout"),
                stderr: child.stderr.take().expect("piped stderr"),
            },
        };
        Ok(Launched {
            tree: std::sync::Arc::new(ProcessTree::new(leader)),
            io,
            child,
        })
    }
}

/// Runs in the forked child before exec: new session (so every descendant shares our session
/// id), the PTY as controlling terminal, and death with the emulator.
fn new_session(controlling_tty: bool) -> std::io::Result<()> {
    // SAFETY: plain syscalls, async-signal-safe.
    unsafe {
        if libc::setsid() < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if controlling_tty && libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
    }
    Ok(())
}

/// Runs in the forked child before exec: lets `fd` (if any) survive the exec.
fn inherit(fd: Option<i32>) -> std::io::Result<()> {
    if let Some(fd) = fd {
        // SAFETY: fcntl on a descriptor number, async-signal-safe; it changes only the child's
        // descriptor table.
        if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A pid namespace kept alive by a process of its own (bwrap's init and `cat` on a pipe from us),
/// for commands to join ([`Bwrap::launch_in`]): a container's namespace, which outlives each
/// exec in it. Dropping it (or [`PidNamespace::kill`]) kills its holder, and with the
/// namespace's init every process still in it.
pub struct PidNamespace {
    holder: Child,
    ns: std::fs::File,
    /// The holder's stdin. The holder is `cat`, reading it: when this end closes (dropped, or
    /// the emulator's process gone however it ended) the holder exits, and with it the
    /// namespace. `PR_SET_PDEATHSIG` alone does not hold: bwrap changes its credentials as it
    /// sets up, which clears the parent-death signal, and a holder outlived a killed test run.
    _lifeline: Option<tokio::process::ChildStdin>,
}

impl PidNamespace {
    /// The namespace, to pass to [`Bwrap::launch_in`].
    pub fn fd(&self) -> BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.ns.as_fd()
    }

    /// Kills the holder (bwrap's `--die-with-parent` takes the namespace's init with it, and
    /// the kernel then kills everything left in the namespace).
    pub fn kill(&mut self) {
        let _ = self.holder.start_kill();
    }
}

impl Bwrap {
    /// Starts a new pid namespace in `root`, held open by `cat` on a pipe from us, as the pause
    /// process of a container. Must be called on a thread that lives as long as the namespace
    /// (a runtime worker, not a blocking-pool thread): the holder dies with the thread that
    /// started it (`PR_SET_PDEATHSIG`). Blocks for bwrap's set-up (milliseconds).
    pub fn spawn_pid_namespace(
        &self,
        root: &Path,
        hostname: &str,
        env: &[(String, String)],
    ) -> std::io::Result<PidNamespace> {
        let (info_read, info_write) =
            nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(std::io::Error::from)?;
        let info_fd = info_write.as_raw_fd();
        let mut cmd = Command::new(self.path());
        cmd.args(self.args(
            root,
            hostname,
            "/",
            env,
            &["cat".into()],
            PidMode::OwnReporting { info_fd },
        ));
        cmd.env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        // SAFETY: only async-signal-safe calls between fork and exec; `info_write` is open in
        // the parent until after the spawn.
        unsafe { cmd.pre_exec(move || new_session(false).and_then(|()| inherit(Some(info_fd)))) };
        let mut holder = cmd.spawn()?;
        let lifeline = holder.stdin.take();
        drop(cmd);
        drop(info_write);
        // bwrap writes the info and closes it once the namespace exists, or exits on failure:
        // either way this read ends.
        let mut info = String::new();
        let read = std::fs::File::from(info_read).read_to_string(&mut info);
        let child_pid = read.ok().and_then(|_| {
            let value: serde_json::Value = serde_json::from_str(&info).ok()?;
            value.get("child-pid")?.as_i64()
        });
        let ns = child_pid
            .ok_or_else(|| {
                std::io::Error::other(format!("bwrap reported no pid namespace: {info:?}"))
            })
            .and_then(|pid| std::fs::File::open(format!("/proc/{pid}/ns/pid")));
        match ns {
            Ok(ns) => Ok(PidNamespace {
                holder,
                ns,
                _lifeline: lifeline,
            }),
            Err(error) => {
                let _ = holder.start_kill();
                Err(error)
            }
        }
    }
}

fn set_cloexec(fd: &OwnedFd) -> std::io::Result<()> {
    fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).map_err(std::io::Error::from)?;
    Ok(())
}

/// The processes of one launched command: bwrap (session leader), its namespace init, and the
/// command with all its descendants (all share the session id = bwrap's pid).
#[derive(Debug)]
pub struct ProcessTree {
    leader: i32,
    delivered: AtomicI32,
    reaped: AtomicBool,
}

impl ProcessTree {
    fn new(leader: i32) -> Self {
        ProcessTree {
            leader,
            delivered: AtomicI32::new(0),
            reaped: AtomicBool::new(leader <= 0),
        }
    }

    /// Host pid of bwrap (the session leader).
    pub fn leader_pid(&self) -> i32 {
        self.leader
    }

    /// Delivers `sig` to the command's processes — not to bwrap or its namespace init, which
    /// would die instead of passing it on. Returns whether anything was signalled.
    pub fn signal(&self, sig: Signal) -> bool {
        if self.reaped.load(Ordering::SeqCst) {
            return false;
        }
        self.delivered.store(sig as i32, Ordering::SeqCst);
        let members = session_members(self.leader);
        let inits: Vec<i32> = members
            .iter()
            .filter(|p| p.ppid == self.leader)
            .map(|p| p.pid)
            .collect();
        let mut any = false;
        for p in members
            .iter()
            .filter(|p| p.pid != self.leader && !inits.contains(&p.pid))
        {
            any |= kill(Pid::from_raw(p.pid), sig).is_ok();
        }
        any
    }

    /// Stops (or continues) every process of the tree: used while the sandbox is paused.
    pub fn freeze(&self, frozen: bool) {
        let sig = if frozen {
            Signal::SIGSTOP
        } else {
            Signal::SIGCONT
        };
        self.signal_everything(sig);
    }

    /// SIGKILLs the whole tree including bwrap; the kernel then tears down the pid namespace.
    pub fn kill(&self) {
        self.signal_everything(Signal::SIGKILL);
    }

    fn signal_everything(&self, sig: Signal) {
        if self.reaped.load(Ordering::SeqCst) {
            return;
        }
        let _ = kill(Pid::from_raw(self.leader), sig);
        for p in session_members(self.leader) {
            let _ = kill(Pid::from_raw(p.pid), sig);
        }
    }

    /// The last signal the emulator delivered, to tell "killed by N" from "exit 128+N".
    pub fn delivered(&self) -> Option<i32> {
        match self.delivered.load(Ordering::SeqCst) {
            0 => None,
            sig => Some(sig),
        }
    }

    /// Waits for bwrap (`child`, this tree's leader) and marks the tree reaped in the same step:
    /// once reaped, its pid (and session id) may be reused, so nothing may signal them again,
    /// and no await may come between. How the command ended; a failed wait counts as killed
    /// (the tree is gone all the same).
    pub async fn wait(&self, child: &mut Child) -> ExitInfo {
        let status = child.wait().await;
        self.reaped.store(true, Ordering::SeqCst);
        match status {
            Ok(status) => ExitInfo::from_bwrap(status, self.delivered()),
            Err(_) => ExitInfo {
                code: None,
                signal: Some(Signal::SIGKILL.as_str().to_string()),
            },
        }
    }

    pub fn is_reaped(&self) -> bool {
        self.reaped.load(Ordering::SeqCst)
    }

    /// True once no process of the tree is running any more (zombies awaiting our reaper
    /// count as dead): from then on nothing can write into the sandbox root.
    pub fn is_dead(&self) -> bool {
        self.is_reaped() || session_members(self.leader).is_empty()
    }
}

/// The emulator's end of a command's pseudo-terminal (non-blocking, driven by tokio).
pub struct PtyMaster {
    fd: AsyncFd<OwnedFd>,
}

impl PtyMaster {
    fn new(fd: OwnedFd) -> std::io::Result<Self> {
        let flags = fcntl(&fd, FcntlArg::F_GETFL).map_err(std::io::Error::from)?;
        let flags = OFlag::from_bits_truncate(flags) | OFlag::O_NONBLOCK;
        fcntl(&fd, FcntlArg::F_SETFL(flags)).map_err(std::io::Error::from)?;
        // SAFETY: we own `fd`; it stays open and unchanged for the AsyncFd's whole life.
        let fd = unsafe { AsyncFd::register(fd) }.map_err(|e| e.into_parts().1)?;
        Ok(PtyMaster { fd })
    }

    /// Reads terminal output; `Ok(0)` once every slave side is closed (Linux reports EIO).
    pub async fn read(&self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let mut guard = self.fd.readable().await?;
            let result = guard.try_io(|fd| {
                // SAFETY: reading into a valid, exclusively borrowed buffer.
                let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
                if n < 0 {
                    Err(std::io::Error::last_os_error())
                } else {
                    Ok(n as usize)
                }
            });
            match result {
                Ok(Err(e)) if e.raw_os_error() == Some(libc::EIO) => return Ok(0),
                Ok(other) => return other,
                Err(_would_block) => continue,
            }
        }
    }

    /// Writes all of `data` as terminal input.
    pub async fn write_all(&self, mut data: &[u8]) -> std::io::Result<()> {
        while !data.is_empty() {
            let mut guard = self.fd.writable().await?;
            let result = guard.try_io(|fd| {
                // SAFETY: writing from a valid buffer.
                let n = unsafe { libc::write(fd.as_raw_fd(), data.as_ptr().cast(), data.len()) };
                if n < 0 {
                    Err(std::io::Error::last_os_error())
                } else {
                    Ok(n as usize)
                }
            });
            match result {
                Ok(Ok(n)) => data = &data[n..],
                Ok(Err(e)) => return Err(e),
                Err(_would_block) => continue,
            }
        }
        Ok(())
    }

    /// Changes the terminal size (the command gets SIGWINCH).
    pub fn resize(&self, cols: u16, rows: u16) -> std::io::Result<()> {
        let size = libc::winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: TIOCSWINSZ reads a winsize struct we own.
        let rc = unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::TIOCSWINSZ, &size) };
        if rc < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
}
