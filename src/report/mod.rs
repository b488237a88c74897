//! Everything retry says about a run. [`log`] owns how it speaks (stderr text or JSON
//! Lines, GitHub Actions annotations, run events, the `--report` JSON); how a file is
//! written is `files`'. The engine emits events; it never formats them.

mod log;

pub use log::*;
