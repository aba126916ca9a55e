//! The agent loop and its pure parts: when to stop (and how to nudge), what history to send,
//! the prompts, and the demonstrations shown before the task.

pub mod demos;
pub mod history;
pub mod prompt;
pub mod run;
pub mod stop;
