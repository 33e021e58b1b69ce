//! Running commands in the agent pod.

pub mod command;
