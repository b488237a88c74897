//! Console control events, both ways: the handler that hands Ctrl-C, Ctrl-Break and the
//! console's close to one function of the caller's (`signals.rs` makes them retry's
//! signals), and Ctrl-Break sent to a process group, the one ask to end Windows has.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};

use windows_sys::Win32::Foundation::{FALSE, TRUE};
use windows_sys::Win32::System::Console::{
    CTRL_BREAK_EVENT, CTRL_C_EVENT, CTRL_CLOSE_EVENT, GenerateConsoleCtrlEvent,
    SetConsoleCtrlHandler,
};

/// The console events retry takes as signals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConsoleEvent {
    /// Ctrl-C: SIGINT's part (exit 130, as shells report it).
    Interrupt,
    /// Ctrl-Break: SIGQUIT's part.
    Break,
    /// The console is closing: SIGHUP's part.
    Close,
}

/// The caller's function for console events (0 until `console_events` is called).
static ON_EVENT: AtomicUsize = AtomicUsize::new(0);

unsafe extern "system" fn on_console(kind: u32) -> i32 {
    let event = match kind {
        CTRL_C_EVENT => ConsoleEvent::Interrupt,
        CTRL_BREAK_EVENT => ConsoleEvent::Break,
        CTRL_CLOSE_EVENT => ConsoleEvent::Close,
        _ => return FALSE,
    };
    let f = ON_EVENT.load(Ordering::SeqCst);
    if f == 0 {
        return FALSE;
    }
    // SAFETY: only `console_events` stores here, and it stores a `fn(ConsoleEvent)`.
    let f: fn(ConsoleEvent) = unsafe { std::mem::transmute::<usize, fn(ConsoleEvent)>(f) };
    f(event);
    if event == ConsoleEvent::Close {
        // Windows ends the process when this returns: give the run its grace to end the
        // attempt's job and write its last lines (the system allows about 5 s).
        std::thread::sleep(std::time::Duration::from_secs(4));
    }
    TRUE
}

/// Has `on_event` called (on a thread of the system's) for each console event, instead
/// of the default, which ends retry at once.
pub fn console_events(on_event: fn(ConsoleEvent)) -> io::Result<()> {
    ON_EVENT.store(on_event as usize, Ordering::SeqCst);
    // SAFETY: a handler with the signature the call requires, for the process's life.
    if unsafe { SetConsoleCtrlHandler(Some(on_console), TRUE) } == FALSE {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Asks the process `pid`, started in a group of its own, to end: Ctrl-Break to its
/// group, which retry takes as a signal.
pub(super) fn ask_to_end(pid: u32) -> io::Result<()> {
    // SAFETY: no memory is passed; a group that is gone fails.
    if unsafe { GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, pid) } == FALSE {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
