//! The agent loop's pure parts: when to stop (and how to nudge), and what history to send.

pub mod history;
pub mod prompt;
pub mod run;
pub mod stop;
