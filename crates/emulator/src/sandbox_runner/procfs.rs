//! Just enough of /proc to find the processes of one sandboxed command.
//!
//! Why: bwrap neither forwards signals nor reports how its child died, so to deliver SIGTERM to
//! the command (and not kill bwrap itself) we signal the members of the session we created for
//! it, skipping bwrap and its namespace init.

/// One process as seen in `/proc/<pid>/stat`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProcEntry {
    pub pid: i32,
    pub ppid: i32,
    pub session: i32,
}

/// Every live process whose session id is `session`.
pub(crate) fn session_members(session: i32) -> Vec<ProcEntry> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(read_stat)
        .filter(|p| p.session == session)
        .collect()
}

fn read_stat(pid: i32) -> Option<ProcEntry> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is parenthesised and may itself contain ") ", so split after the last one.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split(' ');
    let state = fields.next()?;
    if state == "Z" || state == "X" {
        return None;
    }
    let ppid = fields.next()?.parse().ok()?;
    let _pgrp: i32 = fields.next()?.parse().ok()?;
    let session = fields.next()?.parse().ok()?;
    Some(ProcEntry { pid, ppid, session })
}
