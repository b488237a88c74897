//! Signals on Windows, which sends none: the two `--signal` may name (TERM and KILL, which
//! end an attempt through Ctrl-Break and its Job Object), and console events caught as
//! retry's signals (Ctrl-C as SIGINT, Ctrl-Break as SIGQUIT, the console's close as
//! SIGHUP), each setting its flag and a manual-reset event that every wait watches, so
//! that a wait is one `WaitForMultipleObjects` with a timeout, free of races.

use std::io;
use std::os::windows::io::RawHandle;
use std::sync::atomic::{AtomicUsize, Ordering};

use windows_sys::Win32::Foundation::{
    CloseHandle, FALSE, HANDLE, TRUE, WAIT_FAILED, WAIT_OBJECT_0,
};
use windows_sys::Win32::System::Threading::{
    CreateEventW, INFINITE, ResetEvent, SetEvent, WaitForMultipleObjects, WaitForSingleObject,
};

use super::console::{ConsoleEvent, console_events};

/// What `--signal` may name on Windows, which sends no signals: TERM is Ctrl-Break to the
/// attempt's process group (and the end of its Job Object after `--kill-after`), KILL the
/// Job Object's end at once.
#[allow(clippy::upper_case_acronyms)] // the names the systems with signals give them
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Signal {
    SIGKILL = 9,
    SIGTERM = 15,
}

impl Signal {
    pub const fn as_str(self) -> &'static str {
        match self {
            Signal::SIGKILL => "SIGKILL",
            Signal::SIGTERM => "SIGTERM",
        }
    }
}

/// What `--signal` takes, for its refusal.
pub const SIGNALS_ACCEPTED: &str = "TERM or KILL (with or without SIG), or 15 or 9: Windows \
     ends an attempt through Ctrl-Break and its Job Object, and can send no other signal";

const SIGNALS: [Signal; 2] = [Signal::SIGKILL, Signal::SIGTERM];

pub fn signal_by_number(number: i32) -> Option<Signal> {
    SIGNALS.into_iter().find(|s| *s as i32 == number)
}

pub fn signal_by_name(name: &str) -> Option<Signal> {
    SIGNALS.into_iter().find(|s| s.as_str() == name)
}

/// Windows sends no SIGCHLD: a child's end is seen by waiting on its process handle
/// ([`pause_for_child`](super::pause_for_child)), and there are no orphans to reap.
pub const CHILD_SIGNAL: Option<i32> = None;

/// Nothing asks a crontab to be read again but its file's change: SIGHUP's part, the
/// console's close, is a hang-up that stops retry (Windows ends the process 5 s later),
/// and there is no SIGUSR2.
pub const RELOAD_SIGNALS: &[i32] = &[];

/// The manual-reset event a console event or [`wake`] sets, and every wait watches
/// (0 until made).
static WAKE_EVENT: AtomicUsize = AtomicUsize::new(0);

/// Bit `n` is set when signal number `n`'s console event was asked for.
static CAUGHT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The signal number each console event stands for (SIGINT, SIGQUIT, SIGHUP).
fn event_number(event: ConsoleEvent) -> i32 {
    match event {
        ConsoleEvent::Interrupt => 2,
        ConsoleEvent::Break => 3,
        ConsoleEvent::Close => 1,
    }
}

fn on_event(event: ConsoleEvent) {
    let number = event_number(event);
    if CAUGHT.load(Ordering::SeqCst) & (1 << number) == 0 {
        return;
    }
    if let Some(flag) = crate::sys::raised(number) {
        flag.store(true, Ordering::SeqCst);
    }
    wake();
}

fn wake_event() -> io::Result<HANDLE> {
    let made = WAKE_EVENT.load(Ordering::SeqCst);
    if made != 0 {
        return Ok(made as HANDLE);
    }
    // SAFETY: no attributes or name; manual reset, not set. Kept for the process's life.
    let raw = unsafe { CreateEventW(std::ptr::null(), TRUE, FALSE, std::ptr::null()) };
    if raw.is_null() {
        return Err(io::Error::last_os_error());
    }
    match WAKE_EVENT.compare_exchange(0, raw as usize, Ordering::SeqCst, Ordering::SeqCst) {
        Ok(_) => Ok(raw),
        Err(other) => {
            // SAFETY: the event just made, which no one else saw.
            unsafe { CloseHandle(raw) };
            Ok(other as HANDLE)
        }
    }
}

/// Has the console events standing for `numbers` (2 Ctrl-C, 3 Ctrl-Break, 1 the
/// console's close) set their flags and wake a waiting thread; other numbers have no
/// console event and are never raised.
pub fn catch(numbers: &[i32]) -> io::Result<()> {
    wake_event()?;
    let bits = numbers
        .iter()
        .filter(|n| (0..64).contains(*n))
        .fold(0u64, |bits, n| bits | 1 << n);
    CAUGHT.fetch_or(bits, Ordering::SeqCst);
    // One handler for the process: a second call (the crontab's reload) only adds numbers.
    static HANDLER: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    if HANDLER.get().is_none() {
        console_events(on_event)?;
        let _ = HANDLER.set(());
    }
    Ok(())
}

/// The event that says a console event came or a thread called [`wake`], for a wait on
/// other handles too (`None` before [`catch`]).
pub fn wake_handle() -> Option<RawHandle> {
    match WAKE_EVENT.load(Ordering::SeqCst) {
        0 => None,
        raw => Some(raw as RawHandle),
    }
}

/// Milliseconds to wait for `d`, below `INFINITE`: every wait has an end.
pub(super) fn wait_ms(d: std::time::Duration) -> u32 {
    d.as_millis().min(u128::from(INFINITE - 1)) as u32
}

/// Sleeps up to `d`, waking early at a console event or a [`wake`].
pub fn wait_for_wake(d: std::time::Duration) {
    let Some(event) = wake_handle() else {
        std::thread::sleep(d);
        return;
    };
    // SAFETY: the event stays open for the process's life.
    unsafe { WaitForSingleObject(event as HANDLE, wait_ms(d)) };
    drain_wakes();
}

/// Waits up to `d` for any of `handles` or the wake event: the index of a handle that is
/// signalled, `None` when the time passed or the wake event was set.
pub fn wait_any(handles: &[RawHandle], d: std::time::Duration) -> io::Result<Option<usize>> {
    let mut all: Vec<HANDLE> = handles.iter().map(|h| *h as HANDLE).collect();
    all.extend(wake_handle().map(|h| h as HANDLE));
    // SAFETY: the handles are open for the length of the call (the caller's and ours).
    let got = unsafe { WaitForMultipleObjects(all.len() as u32, all.as_ptr(), FALSE, wait_ms(d)) };
    if got == WAIT_FAILED {
        return Err(io::Error::last_os_error());
    }
    let index = got.wrapping_sub(WAIT_OBJECT_0) as usize;
    if index >= handles.len() {
        drain_wakes();
        return Ok(None);
    }
    Ok(Some(index))
}

/// Clears the wake event after a wait saw it (the flags keep what happened).
pub fn drain_wakes() {
    if let Some(event) = wake_handle() {
        // SAFETY: the event stays open for the process's life.
        unsafe { ResetEvent(event as HANDLE) };
    }
}

/// Wakes a thread blocked in [`wait_for_wake`] or [`wait_any`].
pub fn wake() {
    if let Some(event) = wake_handle() {
        // SAFETY: the event stays open for the process's life.
        unsafe { SetEvent(event as HANDLE) };
    }
}

/// Windows keeps no ignored signals across a process start.
pub fn inherited_ignored(_number: i32) -> bool {
    false
}

/// Nothing to record: see [`inherited_ignored`].
pub fn record_inherited() {}
