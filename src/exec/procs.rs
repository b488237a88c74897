//! Everything one attempt or hook started, and how it is ended. retry is a child
//! subreaper, so a process that leaves the attempt's group (`setsid`, a double
//! fork) is still its descendant. A [`Tree`] is one attempt's or hook's processes:
//! the group its main process leads, every descendant of that group, and the
//! orphans retry adopted since the tree began. Ending a tree, whatever the cause
//! (a timeout, a stopping signal, retry's own fault, a lost lock, a failed
//! attempt), signals the group and the processes that left it together, and
//! sends SIGKILL to whatever is left at one deadline.
//!
//! Which processes a tree holds is [`survey`]'s to find, from the system's list of
//! processes ([`sys::processes`]), where a zombie is not alive. retry reaps what it
//! adopts and never waits on a process that has already exited (as PID 1 in a
//! container nobody else would reap them). Where the system has no subreaper, what
//! left the group is found only while its parent is in the tree.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::sys::{self, Process, Signal};
use crate::{domain, signals};

/// How long a tree gets after its SIGKILL to be gone before retry stops waiting
/// (a process in uninterruptible sleep dies only when its system call returns).
const AFTER_KILL: Duration = Duration::from_secs(1);
/// How often the processes that left the group are looked for while waiting; retry's
/// own children wake the wait at once (SIGCHLD).
const POLL: Duration = Duration::from_millis(10);

/// Whether retry became a subreaper: only then are orphans its to end.
static SUBREAPER: AtomicBool = AtomicBool::new(false);

/// Makes retry the reaper of its orphaned descendants. Failure is not fatal: only
/// adopted descendants are missed, so it is reported with `-v`.
pub fn become_subreaper() -> std::io::Result<()> {
    sys::become_subreaper()?;
    SUBREAPER.store(true, Ordering::SeqCst);
    Ok(())
}

/// A process as it is named for good: its ID and when it started (an ID is reused).
type Identity = (i32, u64);

/// retry's children when a tree is about to begin: none of them is the tree's (an
/// earlier attempt that succeeded may have left them), even once the tree's own
/// orphans are adopted beside them. Taken before the tree's main process is started.
pub struct Before(Vec<Identity>);

impl Before {
    /// retry's children now; none matter when retry adopts no orphans.
    pub fn now() -> Before {
        if !SUBREAPER.load(Ordering::SeqCst) {
            return Before(Vec::new());
        }
        let children = sys::children()
            .into_iter()
            .filter_map(|pid| Some((pid, sys::started(pid)?)))
            .collect();
        Before(children)
    }
}

/// What is alive of a tree now.
#[derive(Debug, Default, PartialEq, Eq)]
struct Members {
    /// Whether its group has a live member.
    group: bool,
    /// Its live processes outside the group.
    escaped: Vec<i32>,
}

impl Members {
    fn is_empty(&self) -> bool {
        !self.group && self.escaped.is_empty()
    }

    fn signal(&self, pgid: i32, sig: Signal) {
        if self.group {
            sys::signal_group(pgid, Some(sig));
        }
        for pid in &self.escaped {
            sys::signal_process(*pid, sig);
        }
    }
}

/// Where a tree begins: its group, when its main process started, and retry's
/// children that were there before it (not its own).
struct Origin {
    pgid: i32,
    since: Option<u64>,
    strangers: Vec<Identity>,
}

/// Finds what is alive of the tree that began at `origin`: the group, every
/// descendant of a group member, (when retry is a subreaper) every orphan it
/// adopted since, and every process `known` to have left the group before, with
/// their descendants. A child retry had before the tree began, or one older than its
/// main process, is another's (left by an attempt that succeeded). Where processes
/// cannot be listed the group is all that can be seen. Also returns who the processes
/// outside the group are, for `known` next time.
fn survey(origin: &Origin, known: &[Identity]) -> (Members, Vec<Identity>) {
    let pgid = origin.pgid;
    // Where the group holds the whole tree (a Job Object), it is all there is to see.
    let listed = sys::processes().filter(|_| !sys::GROUP_HOLDS_TREE);
    let Some(all) = listed else {
        let group = sys::signal_group(pgid, None);
        return (
            Members {
                group,
                escaped: Vec::new(),
            },
            Vec::new(),
        );
    };
    let me = std::process::id() as i32;
    let adopts = SUBREAPER.load(Ordering::SeqCst);
    let stranger = |p: &Process| origin.strangers.contains(&(p.pid, p.start));
    let roots = all.iter().filter(|p| {
        let newer = origin.since.is_none_or(|t| p.start >= t);
        let adopted = adopts && p.ppid == me && newer && !stranger(p);
        p.pgid == pgid || adopted || known.contains(&(p.pid, p.start))
    });
    let roots: Vec<i32> = roots.map(|s| s.pid).collect();
    let members = with_descendants(&all, &roots);
    let (group, escaped): (Vec<&Process>, Vec<&Process>) =
        members.into_iter().partition(|p| p.pgid == pgid);
    let members = Members {
        group: !group.is_empty(),
        escaped: escaped.iter().map(|p| p.pid).collect(),
    };
    (members, escaped.iter().map(|p| (p.pid, p.start)).collect())
}

/// The live (not zombie) processes among `roots` and their descendants; a zombie's
/// children are still followed.
fn with_descendants<'a>(all: &'a [Process], roots: &[i32]) -> Vec<&'a Process> {
    let mut children: HashMap<i32, Vec<&Process>> = HashMap::new();
    let mut by_pid: HashMap<i32, &Process> = HashMap::new();
    for process in all {
        children.entry(process.ppid).or_default().push(process);
        by_pid.insert(process.pid, process);
    }
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    let mut stack: Vec<&Process> = roots
        .iter()
        .filter_map(|p| by_pid.get(p).copied())
        .collect();
    while let Some(process) = stack.pop() {
        if !seen.insert(process.pid) {
            continue;
        }
        if !process.zombie {
            out.push(process);
        }
        stack.extend(children.get(&process.pid).into_iter().flatten());
    }
    out
}

/// Everything one attempt or hook started (see the module's documentation). Ending
/// it may begin on one thread (a hook's timeout) and go on on another.
pub struct Tree {
    origin: Origin,
    /// The processes seen outside the group so far: still the tree's once their parent
    /// is gone, which matters where retry cannot adopt them (no subreaper).
    escaped: Mutex<Vec<Identity>>,
    ending: Mutex<Ending>,
}

#[derive(Default)]
struct Ending {
    /// When whatever is left gets SIGKILL, once ending has begun.
    kill_at: Option<Instant>,
    /// Whether that SIGKILL was sent.
    killed: bool,
    /// The stopping signal retry received and passed on.
    passed_on: Option<domain::Signal>,
}

impl Tree {
    /// The tree of the process just started as `leader`, in a group of its own, with
    /// retry's children as they were [`Before`] it started.
    pub fn new(leader: i32, before: Before) -> Tree {
        let origin = Origin {
            pgid: leader,
            since: sys::started(leader),
            strangers: before.0,
        };
        Tree {
            origin,
            escaped: Mutex::new(Vec::new()),
            ending: Mutex::new(Ending::default()),
        }
    }

    /// The main process, which leads the group.
    pub fn leader(&self) -> i32 {
        self.origin.pgid
    }

    fn state(&self) -> MutexGuard<'_, Ending> {
        self.ending.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn survey(&self) -> Members {
        let mut known = self.escaped.lock().unwrap_or_else(|p| p.into_inner());
        let (members, escaped) = survey(&self.origin, &known);
        for identity in escaped {
            if !known.contains(&identity) {
                known.push(identity);
            }
        }
        members
    }

    /// Sends `sigs` to the group and to every process that left it, in that order.
    fn send(&self, sigs: &[Signal]) {
        let sigs = sigs.iter().copied();
        let members = self.survey();
        for sig in sigs {
            members.signal(self.origin.pgid, sig);
        }
    }

    /// Begins ending the tree, or hastens it: SIGTERM and SIGCONT to every process
    /// now (a stopped one acts on SIGTERM only once continued), and SIGKILL at
    /// `kill_at`, or at an earlier deadline already set.
    pub fn terminate(&self, kill_at: Instant) {
        self.terminate_with(Signal::SIGTERM, kill_at);
    }

    /// As [`terminate`](Tree::terminate), with `sig` in place of SIGTERM (`--signal`).
    pub fn terminate_with(&self, sig: Signal, kill_at: Instant) {
        let then: Vec<Signal> = std::iter::once(sig).chain(sys::CONTINUE).collect();
        self.send(&then);
        self.kill_by(kill_at);
    }

    /// Brings the SIGKILL deadline to `at` unless it is earlier already.
    pub fn kill_by(&self, at: Instant) {
        let mut state = self.state();
        state.kill_at = Some(state.kill_at.map_or(at, |t| t.min(at)));
    }

    /// When the SIGKILL is due, while it has not been sent.
    pub fn kill_at(&self) -> Option<Instant> {
        let state = self.state();
        state.kill_at.filter(|_| !state.killed)
    }

    /// The stopping signal passed on to the tree, if one was.
    pub fn passed_on(&self) -> Option<domain::Signal> {
        self.state().passed_on
    }

    /// Passes the stopping signal retry received on to every process, once, with
    /// SIGKILL due `grace` later; a second signal sends SIGKILL at once. Returns the
    /// signal passed on.
    pub fn pass_on_signals(&self, now: Instant, grace: Duration) -> Option<domain::Signal> {
        let sig = signals::pending()?;
        let first = self.state().passed_on.is_none();
        if first {
            self.state().passed_on = Some(sig);
            if let Some(passed) = sys::passed_on(sig.number()) {
                self.send(&[passed]);
            }
            self.kill_by(now + grace);
        } else if signals::take_repeat().is_some() {
            // A second signal: stop waiting politely.
            self.kill_now();
        }
        Some(sig)
    }

    /// Sends SIGKILL to every process if its deadline has come (once).
    pub fn escalate(&self, now: Instant) {
        let due = {
            let mut state = self.state();
            let due = !state.killed && state.kill_at.is_some_and(|t| now >= t);
            state.killed |= due;
            due
        };
        if due {
            self.send(&[Signal::SIGKILL]);
        }
    }

    /// Sends SIGKILL to every process now.
    pub fn kill_now(&self) {
        let now = Instant::now();
        self.kill_by(now);
        self.escalate(now);
    }

    /// Ends what is left of the tree once its main process is gone: SIGTERM and
    /// SIGCONT now (what is left may ignore the signal that ended the main process),
    /// and SIGKILL `grace` later, or at an earlier deadline already set. Returns when
    /// nothing is alive, or a second after the SIGKILL. A stopping signal meanwhile
    /// is passed on, with SIGKILL at most `grace` after it; a lease lost meanwhile
    /// brings the SIGKILL within the lease's limit.
    pub fn end(&self, grace: Duration) {
        reap_adopted(None);
        if self.survey().is_empty() {
            return;
        }
        self.terminate(Instant::now() + grace);
        loop {
            let now = Instant::now();
            self.pass_on_signals(now, grace);
            if let Some(within) = signals::lost_lock_kill_within() {
                // A lease lost meanwhile: gone before the server can hand it on.
                self.kill_by(now + within);
            }
            reap_adopted(None);
            let left = self.survey();
            let kill_at = self.state().kill_at.unwrap_or(now);
            if left.is_empty() || now >= kill_at + AFTER_KILL {
                return;
            }
            if now >= kill_at {
                // Again while anything is alive: a process may have forked meanwhile.
                self.state().killed = true;
                left.signal(self.origin.pgid, Signal::SIGKILL);
            }
            let next = if now < kill_at { kill_at - now } else { POLL };
            crate::wait::pause(next.min(POLL));
        }
    }
}

impl Drop for Tree {
    /// Lets go of what the system holds for the group (on Windows its Job Object, whose
    /// close ends whatever of it still runs).
    fn drop(&mut self) {
        sys::release_group(self.origin.pgid);
    }
}

/// Reaps every exited child of retry except `keep` (the attempt's main process,
/// which the supervisor waits for itself).
pub fn reap_adopted(keep: Option<i32>) {
    let Some(all) = sys::processes() else {
        return;
    };
    let me = std::process::id() as i32;
    for process in all.iter().filter(|p| p.ppid == me && p.zombie) {
        if Some(process.pid) != keep {
            sys::reap(process.pid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(pid: i32, ppid: i32, pgid: i32, zombie: bool) -> Process {
        Process {
            pid,
            ppid,
            pgid,
            zombie,
            start: 0,
        }
    }

    #[test]
    fn descendants_go_through_zombies_and_leave_strangers_out() {
        let all = [
            process(10, 1, 10, false),
            process(11, 10, 10, true),
            process(12, 11, 12, false),
            process(13, 1, 13, false),
            process(14, 12, 14, false),
        ];
        let pids = |roots: &[i32]| {
            let mut found: Vec<i32> = with_descendants(&all, roots)
                .iter()
                .map(|s| s.pid)
                .collect();
            found.sort();
            found
        };
        assert_eq!(pids(&[10]), [10, 12, 14]);
        assert_eq!(pids(&[11, 12]), [12, 14], "each process once");
        assert_eq!(pids(&[99]), Vec::<i32>::new());
    }

    /// Starts `sh -c script` as the leader of its own group, and reads the PID of the
    /// process that leaves it from the script's first line.
    fn leader_and_escaped(script: &str) -> (std::process::Child, i32) {
        let mut command = std::process::Command::new("sh");
        command
            .args(["-c", script])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        sys::own_process_group(&mut command);
        let mut leader = command.spawn().unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(leader.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        (leader, line.trim().parse().unwrap())
    }

    #[test]
    fn a_tree_finds_what_left_its_group_through_its_parent() {
        // Not a subreaper here: the process that left the group is found through
        // its parent, which is in the group.
        let (mut leader, escaped) = leader_and_escaped("setsid sleep 30 & echo $!; wait");
        let leader_pid = leader.id() as i32;
        let stat_of = |pid: i32| {
            let all = sys::processes().unwrap_or_default();
            all.into_iter().find(|p| p.pid == pid)
        };
        let left = (0..500).any(|_| {
            std::thread::sleep(Duration::from_millis(2));
            stat_of(escaped).is_some_and(|p| p.pgid != leader_pid)
        });
        assert!(left, "setsid never ran");
        let tree = Tree::new(leader_pid, Before(Vec::new()));
        let members = tree.survey();
        assert!(members.group);
        assert_eq!(members.escaped, [escaped]);
        tree.kill_now();
        let _ = leader.wait();
        let gone = (0..200).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            stat_of(escaped).is_none_or(|s| s.zombie)
        });
        assert!(gone, "the process that left the group outlived SIGKILL");
    }

    #[test]
    fn what_left_the_group_stays_the_trees_once_seen_when_its_parent_is_gone() {
        // Not a subreaper here: once its parent is gone, the process that left the group
        // belongs to init, and only having seen it before keeps it the tree's.
        let (mut leader, escaped) =
            leader_and_escaped("setsid sh -c 'echo $$; exec sleep 30' & read go");
        let tree = Tree::new(leader.id() as i32, Before(Vec::new()));
        assert_eq!(tree.survey().escaped, [escaped], "seen through its parent");
        drop(leader.stdin.take());
        leader.wait().unwrap();
        let members = tree.survey();
        assert!(!members.group);
        assert_eq!(
            members.escaped,
            [escaped],
            "followed after its parent exited"
        );
        tree.kill_now();
        let gone = (0..200).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            let all = sys::processes().unwrap_or_default();
            all.iter().all(|p| p.pid != escaped || p.zombie)
        });
        assert!(gone, "the process that left the group outlived SIGKILL");
    }
}
