//! The processes an attempt leaves behind. retry is a child subreaper, so a
//! process that leaves the attempt's group (`setsid`, a double fork) is still
//! its descendant; ending an attempt ends the group first, then every adopted
//! descendant. Liveness comes from `/proc`, where a zombie is not alive: retry
//! reaps what it adopts and never waits on a process that has already exited
//! (as PID 1 in a container nobody else would reap them).

use std::collections::HashMap;
use std::fs;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::{Pid, getpid};

/// Makes retry the reaper of its orphaned descendants (Linux
/// PR_SET_CHILD_SUBREAPER). Failure is not fatal: only adopted descendants are
/// missed, so it is reported with `-v`.
pub fn become_subreaper() -> nix::Result<()> {
    nix::sys::prctl::set_child_subreaper(true)
}

/// One line of `/proc/PID/stat`: what we need of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stat {
    pid: i32,
    ppid: i32,
    pgrp: i32,
    zombie: bool,
}

/// Parses `/proc/PID/stat`; the command name may hold spaces and parentheses,
/// so the fields are read after the last `)`.
fn parse_stat(text: &str) -> Option<Stat> {
    let pid = text.split_once(' ')?.0.parse().ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(Stat {
        pid,
        ppid,
        pgrp,
        zombie: state == "Z" || state == "X",
    })
}

/// Every process visible in `/proc`; `None` when `/proc` is not mounted.
fn processes() -> Option<Vec<Stat>> {
    let dir = fs::read_dir("/proc").ok()?;
    let stats = dir
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|text| parse_stat(&text))
        .collect();
    Some(stats)
}

/// The live (not zombie) descendants of `root`.
fn live_descendants(all: &[Stat], root: i32) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<&Stat>> = HashMap::new();
    for stat in all {
        children.entry(stat.ppid).or_default().push(stat);
    }
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(pid) = stack.pop() {
        for child in children.get(&pid).into_iter().flatten() {
            stack.push(child.pid);
            if !child.zombie {
                out.push(child.pid);
            }
        }
    }
    out
}

/// What is left of an attempt: its process group and retry's other descendants.
#[derive(Debug, Default, PartialEq, Eq)]
struct Leftovers {
    group: bool,
    adopted: Vec<i32>,
}

impl Leftovers {
    fn find(pgid: Pid) -> Leftovers {
        reap_adopted(None);
        match processes() {
            Some(all) => {
                let group = all.iter().any(|s| s.pgrp == pgid.as_raw() && !s.zombie);
                let adopted = live_descendants(&all, getpid().as_raw())
                    .into_iter()
                    .filter(|pid| all.iter().any(|s| s.pid == *pid && s.pgrp != pgid.as_raw()))
                    .collect();
                Leftovers { group, adopted }
            }
            // Without /proc, the group is all we can see (a zombie member counts as alive).
            None => Leftovers {
                group: killpg(pgid, None).is_ok(),
                adopted: Vec::new(),
            },
        }
    }

    fn is_empty(&self) -> bool {
        !self.group && self.adopted.is_empty()
    }

    fn signal(&self, pgid: Pid, sig: Signal) {
        if self.group {
            let _ = killpg(pgid, sig);
        }
        for pid in &self.adopted {
            let _ = kill(Pid::from_raw(*pid), sig);
        }
    }
}

/// Ends every process of a finished attempt: the group `pgid` first, then any
/// descendant retry adopted. SIGCONT and SIGTERM, then SIGKILL after
/// `kill_after` for whatever is still alive.
pub fn end_attempt(pgid: Pid, kill_after: Duration) {
    let left = Leftovers::find(pgid);
    if left.is_empty() {
        return;
    }
    left.signal(pgid, Signal::SIGTERM);
    // A stopped process cannot act on SIGTERM until it is continued.
    left.signal(pgid, Signal::SIGCONT);
    if wait_gone(pgid, Instant::now() + kill_after) {
        return;
    }
    Leftovers::find(pgid).signal(pgid, Signal::SIGKILL);
    wait_gone(pgid, Instant::now() + Duration::from_secs(1));
}

/// Waits until nothing of the attempt is alive, or `until`; true if it is all gone.
fn wait_gone(pgid: Pid, until: Instant) -> bool {
    loop {
        let left = Leftovers::find(pgid);
        if left.is_empty() {
            return true;
        }
        let now = Instant::now();
        if now >= until {
            return false;
        }
        // SIGCHLD wakes this early for our own children; grandchildren are polled.
        crate::wait::pause((until - now).min(Duration::from_millis(10)));
    }
}

/// Reaps every exited child of retry except `keep` (the attempt's main process,
/// which the supervisor waits for itself).
pub fn reap_adopted(keep: Option<Pid>) {
    let Some(all) = processes() else {
        return;
    };
    let me = getpid().as_raw();
    for stat in all.iter().filter(|s| s.ppid == me && s.zombie) {
        let pid = Pid::from_raw(stat.pid);
        if Some(pid) != keep {
            while let Err(Errno::EINTR) = waitpid(pid, Some(WaitPidFlag::WNOHANG)) {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_awkward_command_names() {
        let stat = parse_stat("4242 (a b) c)) S 1 4242 4242 0 -1 4194560 0").unwrap();
        assert_eq!(
            stat,
            Stat {
                pid: 4242,
                ppid: 1,
                pgrp: 4242,
                zombie: false
            }
        );
        assert!(parse_stat("7 (sh) Z 3 7 7").unwrap().zombie);
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn descendants_skip_zombies_but_not_their_children() {
        let all = [
            Stat {
                pid: 10,
                ppid: 1,
                pgrp: 10,
                zombie: false,
            },
            Stat {
                pid: 11,
                ppid: 10,
                pgrp: 10,
                zombie: true,
            },
            Stat {
                pid: 12,
                ppid: 11,
                pgrp: 12,
                zombie: false,
            },
            Stat {
                pid: 13,
                ppid: 1,
                pgrp: 13,
                zombie: false,
            },
        ];
        let mut found = live_descendants(&all, 10);
        found.sort();
        assert_eq!(found, [12]);
    }
}
