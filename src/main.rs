//! The binary: it makes the process fit for [`retry::run`](retry::run) (the standard descriptors
//! open, the inherited signals recorded, SIGPIPE ignored, a panic made exit 125),
//! hands it the arguments and exits with the status it returns. Nothing else.

// The C runtime calls `main` below directly, without std's start-up: that start-up
// finds the main thread's stack guard through /proc/self/maps and sets up an
// alternate signal stack, which costs more than everything retry does before its
// first spawn. What of it retry relies on is done here.
// (Under `cargo test` the bin's test harness brings its own main.)
#![cfg_attr(not(test), no_main)]

#[cfg(not(test))]
use std::ffi::{c_char, c_int};
#[cfg(not(test))]
use std::io::Write;

#[cfg(not(test))]
#[unsafe(no_mangle)]
extern "C" fn main(_argc: c_int, _argv: *const *const c_char) -> c_int {
    exit_125_on_panic();
    retry::open_standard_streams();
    // Before SIGPIPE below: the commands retry starts get back what retry was given.
    retry::record_inherited_signals();
    retry::ignore_sigpipe();
    let status = retry::run(std::env::args_os());
    // std's own exit path flushes stdout; this one must.
    let _ = std::io::stdout().flush();
    c_int::from(u8::try_from(status).unwrap_or(retry::USAGE_EXIT))
}

#[cfg(not(test))]
/// A panic is retry's own failure: its message and exit 125, never the abort (134)
/// that `panic = "abort"` would make of it.
fn exit_125_on_panic() {
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let what = payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("a panic without a message");
        let place = info
            .location()
            .map_or(String::new(), |l| format!(" at {}:{}", l.file(), l.line()));
        let code = retry::USAGE_EXIT;
        // Written without `eprintln!`, which panics itself when stderr fails.
        let _ = writeln!(
            std::io::stderr(),
            "retry: internal error{place}: {what}; exit status {code}"
        );
        std::process::exit(i32::from(code));
    }));
}
