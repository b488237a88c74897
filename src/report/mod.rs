//! Everything retry says and writes about a run. `log` owns how it speaks
//! (stderr text or JSON Lines, GitHub Actions annotations, run events, the
//! `--report` JSON); `files` owns how a file is written (one durable atomic
//! replacement) and the up-front checks of file flags. The engine emits events; it
//! never formats them.

mod files;
mod log;

pub use files::{Replacement, check_file_target, open_in_place};
pub use log::*;
