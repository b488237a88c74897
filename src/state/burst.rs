//! A burst of store calls: the connections a networked store opens stay open between
//! the calls of one burst and are closed when the outermost burst of the thread ends,
//! so that none stays open while a command, a hook, a sleep, a hold or a lock wait's
//! pause runs ([`idle`]); a call made outside any burst is a burst of its own. A burst
//! also says how long a call that the server refuses for want of capacity asks again
//! ([`Patience`]). What each store keeps open, and how it is found again, is the store's
//! own: it hands the burst only a way to close it ([`KeptOpen`]).

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::rc::{Rc, Weak};
use std::time::{Duration, Instant};

/// How long a call that the server refuses for want of capacity asks again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Patience {
    /// For the store's own limit on a call (a PostgreSQL URL's `connect_timeout`)
    /// after the call began.
    #[default]
    ConnectTimeout,
    /// Until this instant, or for `connect_timeout` when that is later.
    Until(Instant),
    /// Not at all: the refusal is the call's answer (a lock wait's poll, whose next
    /// poll asks again anyway).
    None,
}

impl Patience {
    /// Until when a call that began at `began` asks again; `None`: it does not.
    pub(in crate::state) fn deadline(self, began: Instant, timeout: Duration) -> Option<Instant> {
        let timeout = began.checked_add(timeout);
        match self {
            Patience::ConnectTimeout => timeout,
            Patience::Until(until) => later(Some(until), timeout),
            Patience::None => None,
        }
    }
}

/// The later of two instants, when there is one.
fn later(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// The bursts under way on this thread.
#[derive(Clone, Copy, Debug, Default)]
pub(in crate::state) struct Bursts {
    pub(in crate::state) depth: usize,
    /// How long refusals for capacity are asked again.
    pub(in crate::state) patience: Patience,
}

thread_local! {
    static BURSTS: Cell<Bursts> = const {
        Cell::new(Bursts { depth: 0, patience: Patience::ConnectTimeout })
    };
}

/// The bursts under way on this thread, as a store's call sees them.
pub(in crate::state) fn current() -> Bursts {
    BURSTS.get()
}

/// A burst of store calls: until it is dropped, this thread's connections stay open
/// between calls, and when the outermost burst ends they are closed. Outside any
/// burst every call opens and closes its own connection, so forgetting a burst
/// costs a connection, never an idle one held open.
#[must_use = "a burst lasts until it is dropped"]
pub struct Burst {
    outer: Bursts,
    /// Bursts belong to the thread that began them.
    _thread: PhantomData<*const ()>,
}

impl Burst {
    /// A burst as patient with refusals as the one it is part of.
    pub fn begin() -> Burst {
        Burst::patient(BURSTS.get().patience)
    }

    /// A burst whose calls refused for capacity ask again as `patience` says (a take
    /// or check before the first attempt, as long as `--lock-wait`).
    pub fn patient(patience: Patience) -> Burst {
        let outer = BURSTS.get();
        BURSTS.set(Bursts {
            depth: outer.depth + 1,
            patience,
        });
        Burst {
            outer,
            _thread: PhantomData,
        }
    }
}

impl Drop for Burst {
    fn drop(&mut self) {
        BURSTS.set(self.outer);
        if self.outer.depth == 0 {
            close_idle();
        }
    }
}

/// Runs `wait` with none of this thread's connections open, whatever bursts are under
/// way: a wait belongs to no burst (a lock wait's pause between two polls).
pub fn idle<T>(wait: impl FnOnce() -> T) -> T {
    let bursts = BURSTS.replace(Bursts::default());
    close_idle();
    let out = wait();
    BURSTS.set(bursts);
    out
}

/// What a networked store keeps open between the calls of a burst (a connection).
pub(in crate::state) trait KeptOpen {
    /// Closes it; the next call opens it again.
    fn close(&self);
}

thread_local! {
    /// What this thread's stores keep open, as they told [`keep_open`].
    static KEPT: RefCell<Vec<Weak<dyn KeptOpen>>> = const { RefCell::new(Vec::new()) };
}

/// Closes `kept` whenever this thread's outermost burst ends or a wait begins, for as
/// long as its store holds it.
pub(in crate::state) fn keep_open(kept: Weak<dyn KeptOpen>) {
    KEPT.with_borrow_mut(|all| {
        all.retain(|k| k.strong_count() > 0);
        all.push(kept);
    });
}

/// Closes what each networked store keeps open for a burst.
fn close_idle() {
    // Upgraded first: closing may drop the last holder, which must find `KEPT` free.
    let kept: Vec<Rc<dyn KeptOpen>> =
        KEPT.with_borrow(|all| all.iter().filter_map(Weak::upgrade).collect());
    for open in kept {
        open.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_as_patient_as_it_is_told_or_as_its_outer_one_and_a_wait_belongs_to_none() {
        let later = Patience::Until(Instant::now() + Duration::from_secs(30));
        assert_eq!(BURSTS.get().depth, 0);
        {
            let _outer = Burst::patient(later);
            {
                let _inner = Burst::begin();
                assert_eq!(BURSTS.get().depth, 2);
                assert_eq!(BURSTS.get().patience, later, "the outer's patience");
                {
                    let _poll = Burst::patient(Patience::None);
                    assert_eq!(BURSTS.get().patience, Patience::None);
                }
                assert_eq!(BURSTS.get().patience, later);
                let inside = idle(|| BURSTS.get().depth);
                assert_eq!(inside, 0, "a wait is in no burst");
                assert_eq!(BURSTS.get().depth, 2, "and the bursts go on after it");
            }
            assert_eq!(BURSTS.get().depth, 1);
        }
        assert_eq!(BURSTS.get().depth, 0);
        assert_eq!(BURSTS.get().patience, Patience::ConnectTimeout);
        let (began, timeout) = (Instant::now(), Duration::from_secs(10));
        let soon = Patience::Until(began + Duration::from_secs(1));
        assert_eq!(soon.deadline(began, timeout), Some(began + timeout));
        assert_eq!(Patience::None.deadline(began, timeout), None);
    }

    /// Counts how often a burst closed it.
    struct Counted(Cell<u32>);

    impl KeptOpen for Counted {
        fn close(&self) {
            self.0.set(self.0.get() + 1);
        }
    }

    #[test]
    fn what_a_store_keeps_open_is_closed_by_the_outermost_burst_and_a_wait_while_it_is_held() {
        let kept = Rc::new(Counted(Cell::new(0)));
        keep_open(Rc::<Counted>::downgrade(&kept));
        {
            let _outer = Burst::begin();
            drop(Burst::begin());
            assert_eq!(kept.0.get(), 0, "an inner burst closes nothing");
            idle(|| ());
            assert_eq!(kept.0.get(), 1, "a wait closes it");
        }
        assert_eq!(kept.0.get(), 2, "so does the outermost burst's end");
        drop(kept);
        drop(Burst::begin());
        assert_eq!(
            KEPT.with_borrow(Vec::len),
            1,
            "a dropped one is only forgotten later"
        );
        keep_open(Rc::<Counted>::downgrade(&Rc::new(Counted(Cell::new(0)))));
        assert_eq!(KEPT.with_borrow(Vec::len), 1, "when another is kept");
    }
}
