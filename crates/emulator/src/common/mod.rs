//! Logic shared by the emulators: fault rules and their matching, the request log's ring
//! buffer, the accept loop, the common control routes, small helpers and the binaries'
//! stdin/signal lifecycle. Each emulator keeps its own request record, fault actions and
//! routing; only what is really the same lives here.

pub mod control;
pub mod faults;
pub mod lifecycle;
pub mod request_log;
pub mod serve;
pub mod util;
