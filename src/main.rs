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
    open_standard_descriptors();
    // Before SIGPIPE below: the commands retry starts get back what retry was given.
    retry::record_inherited_signals();
    // Writes to a closed pipe must fail with EPIPE, not kill retry (std does the same).
    // SAFETY: no other thread exists yet, and SIG_IGN runs no code.
    let _ = unsafe {
        nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGPIPE,
            nix::sys::signal::SigHandler::SigIgn,
        )
    };
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

#[cfg(not(test))]
/// Opens /dev/null on any of descriptors 0–2 that is closed, as std does, so that no
/// file retry opens later becomes the command's stdin, stdout or stderr.
fn open_standard_descriptors() {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::BorrowedFd;
    // SAFETY: 0, 1 and 2 are only polled; a closed one reports POLLNVAL.
    let fds = [0, 1, 2].map(|fd| unsafe { BorrowedFd::borrow_raw(fd) });
    let mut polled = fds.map(|fd| PollFd::new(fd, PollFlags::empty()));
    if poll(&mut polled, PollTimeout::ZERO).is_err() {
        return;
    }
    for (fd, p) in polled.iter().enumerate() {
        if p.revents().is_some_and(|r| r.contains(PollFlags::POLLNVAL)) {
            use nix::fcntl::{OFlag, open};
            if fd == 1 {
                // What retry itself writes there is lost, and it must say so (curl's 23).
                retry::record_closed_stdout();
            }
            // The lowest free descriptor is the closed one, checked in order; without
            // O_CLOEXEC, since the command inherits it as its own.
            match open("/dev/null", OFlag::O_RDWR, nix::sys::stat::Mode::empty()) {
                Ok(file) => {
                    use std::os::fd::IntoRawFd;
                    let got = file.into_raw_fd();
                    if got != fd as i32 {
                        let _ = nix::unistd::close(got);
                    }
                }
                Err(_) => std::process::abort(),
            }
        }
    }
}
