//! The lease hooks and the in-worker state behind them.

pub(crate) mod acquire;
pub(crate) mod probe;
pub(crate) mod release;
pub(crate) mod resume;
pub mod state;
