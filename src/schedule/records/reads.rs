//! The reads and prunes the state thread makes: a job's start (its records, its first
//! start, its newest success), its records again, and the pruning of old ones.

use std::collections::HashSet;
use std::time::SystemTime;

use super::Begun;
use super::first_start::{first_start, schedule_words};
use crate::config::ScheduleConfig;
use crate::domain::{command_line, parse_rfc3339};
use crate::report;
use crate::schedule::catch_up::whole_second;
use crate::schedule::{KEEP_PAST_WINDOW, Slot, first_start_key, slot_of_key, window};
use crate::state::{self, MarkerStore, Status};
use crate::wait::Bound;

/// Most slot records read at start for the newest success (`retry_last_success_seconds`).
const SUCCESS_LOOKUPS: usize = 1000;

/// The slot records, opened for one call (no connection is held between calls).
pub(super) fn store(
    schedule: &ScheduleConfig,
    bound: &Bound,
) -> anyhow::Result<Box<dyn MarkerStore>> {
    state::open_markers(&schedule.state, true, bound)
}

fn prefix(schedule: &ScheduleConfig) -> String {
    format!("{}@", schedule.job)
}

pub(super) fn begin(
    schedule: &ScheduleConfig,
    start: Slot,
    success: bool,
) -> anyhow::Result<Begun> {
    let bound = Bound::signals_only();
    let mut store = store(schedule, &bound)?;
    let handled = read_handled(schedule, store.as_mut(), &bound)?;
    let first_start = first_start(schedule, store.as_mut(), start, &bound)?;
    let before = start - window(schedule) - KEEP_PAST_WINDOW;
    prune_in(schedule, store.as_mut(), before, &bound);
    let last_success = if success {
        newest_success(schedule, store.as_mut(), &bound).unwrap_or_else(|err| {
            report::notice(&format!(
                "warning: cannot read the last success of job {} from the state ({err:#}); retry_last_success_seconds starts with the next one",
                schedule.job
            ));
            None
        })
    } else {
        None
    };
    Ok(Begun {
        first_start,
        handled,
        last_success,
    })
}

pub(super) fn handled(schedule: &ScheduleConfig) -> anyhow::Result<HashSet<Slot>> {
    let bound = Bound::signals_only();
    let mut store = store(schedule, &bound)?;
    read_handled(schedule, store.as_mut(), &bound)
}

/// The slots with a record; one that cannot be read counts as handled, with an error line.
fn read_handled(
    schedule: &ScheduleConfig,
    store: &mut dyn MarkerStore,
    bound: &Bound,
) -> anyhow::Result<HashSet<Slot>> {
    let prefix = prefix(schedule);
    let keys = store.keys_with_prefix(&prefix, bound)?;
    for line in store.unreadable_with_prefix(&prefix, bound)? {
        report::error(&format!("{line}; catch-up counts its slot as handled"));
    }
    Ok(keys
        .iter()
        .filter_map(|k| slot_of_key(&schedule.job, k))
        .collect())
}

pub(super) fn prune(schedule: &ScheduleConfig, before: Slot) {
    let bound = Bound::signals_only();
    match store(schedule, &bound) {
        Ok(mut store) => prune_in(schedule, store.as_mut(), before, &bound),
        Err(err) => report::verbose(1, &format!("cannot prune old slot records: {err:#}")),
    }
}

fn prune_in(schedule: &ScheduleConfig, store: &mut dyn MarkerStore, before: Slot, bound: &Bound) {
    match store.prune(&prefix(schedule), SystemTime::from(before), bound) {
        Ok(0) => {}
        Ok(n) => report::verbose(
            1,
            &format!("pruned {n} old slot records of job {}", schedule.job),
        ),
        Err(err) => report::verbose(1, &format!("cannot prune old slot records: {err:#}")),
    }
}

/// The newest success recorded (the newest slot records first, at most
/// [`SUCCESS_LOOKUPS`] of them).
fn newest_success(
    schedule: &ScheduleConfig,
    store: &mut dyn MarkerStore,
    bound: &Bound,
) -> anyhow::Result<Option<SystemTime>> {
    let mut slots: Vec<(Slot, String)> = store
        .keys_with_prefix(&prefix(schedule), bound)?
        .into_iter()
        .filter_map(|key| slot_of_key(&schedule.job, &key).map(|slot| (slot, key)))
        .collect();
    slots.sort_by_key(|(slot, _)| std::cmp::Reverse(*slot));
    for (slot, key) in slots.into_iter().take(SUCCESS_LOOKUPS) {
        let Some(done) = store.find(&key, bound)? else {
            continue;
        };
        if done.status == Status::Succeeded {
            // When it was recorded, which is when the slot's run ended.
            let at = parse_rfc3339(&done.succeeded_at).unwrap_or(slot);
            return Ok(Some(SystemTime::from(at)));
        }
    }
    Ok(None)
}

/// What the state holds for a job, read without changing anything (the dry run): the
/// slots with a record and the first start, if one is recorded for this schedule.
pub fn read_only(schedule: &ScheduleConfig) -> anyhow::Result<(HashSet<Slot>, Option<Slot>)> {
    // A state directory that does not exist yet holds no record, and a dry run creates nothing.
    if schedule.state.local_dir().is_some_and(|dir| !dir.exists()) {
        return Ok((HashSet::new(), None));
    }
    let bound = Bound::signals_only();
    let mut store = state::open_markers_read_only(&schedule.state, &bound)?;
    let handled = read_handled(schedule, store.as_mut(), &bound)?;
    let found = store.find(&first_start_key(&schedule.job), &bound)?;
    let words = command_line(&schedule_words(schedule));
    let first = found
        .filter(|done| done.command == words || !done.command.starts_with("schedule "))
        .and_then(|done| parse_rfc3339(&done.succeeded_at).map(whole_second));
    Ok((handled, first))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::records::schedule_in;
    use crate::schedule::{boot_key, slot_key};
    use crate::state::Marker;

    fn t(text: &str) -> Slot {
        text.parse().unwrap()
    }

    fn record(store: &mut dyn MarkerStore, key: String, status: Status, at: &str) {
        let marker = Marker {
            key,
            status,
            succeeded_at: at.into(),
            host: "h".into(),
            pid: 1,
            command: vec!["make-report".into()],
            attempts: 1,
        };
        store.record(&marker, &Bound::signals_only()).unwrap();
    }

    #[test]
    fn the_records_name_the_slots_handled_and_the_newest_success_and_a_prune_takes_only_older_writes_of_its_job()
     {
        let dir = tempfile::tempdir().unwrap();
        let hourly = schedule_in(dir.path(), "@hourly");
        let bound = Bound::signals_only();
        let mut markers = store(&hourly, &bound).unwrap();
        let slot = |h: u8| t(&format!("2026-01-01T{h:02}:00:00Z"));
        record(
            markers.as_mut(),
            slot_key("paced", slot(1)),
            Status::Succeeded,
            "2026-01-01T01:00:05.000Z",
        );
        record(
            markers.as_mut(),
            slot_key("paced", slot(2)),
            Status::GaveUp,
            "2026-01-01T02:00:09.000Z",
        );
        record(
            markers.as_mut(),
            slot_key("other", slot(3)),
            Status::Succeeded,
            "2026-01-01T03:00:01.000Z",
        );
        record(
            markers.as_mut(),
            boot_key("paced", slot(0)),
            Status::Succeeded,
            "2026-01-01T00:00:01.000Z",
        );

        let found = handled(&hourly).unwrap();
        assert_eq!(
            found,
            HashSet::from([slot(1), slot(2)]),
            "its own slots, no boot run"
        );
        let newest = newest_success(&hourly, markers.as_mut(), &bound).unwrap();
        assert_eq!(
            newest,
            Some(SystemTime::from(t("2026-01-01T01:00:05Z"))),
            "a failure is no success"
        );

        // A record's age is when it was written, not its slot's time.
        prune(&hourly, slot(2));
        assert_eq!(handled(&hourly).unwrap().len(), 2, "written just now, kept");
        prune(
            &hourly,
            jiff::Timestamp::now() + jiff::SignedDuration::from_secs(60),
        );
        let (read, first) = read_only(&hourly).unwrap();
        assert_eq!((read, first), (HashSet::new(), None), "pruned");
        let others = schedule_in(dir.path(), "@hourly");
        let others = ScheduleConfig {
            job: "other".into(),
            ..others
        };
        assert_eq!(
            handled(&others).unwrap(),
            HashSet::from([slot(3)]),
            "another job's stay"
        );
        let other = schedule_in(&dir.path().join("never-made"), "@hourly");
        assert_eq!(read_only(&other).unwrap(), (HashSet::new(), None));
        assert!(
            !dir.path().join("never-made").exists(),
            "a dry run creates nothing"
        );
    }
}
