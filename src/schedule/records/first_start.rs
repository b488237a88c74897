//! A job's first-start record: the second it first started with its schedule, so that
//! catch-up never reaches before it, made anew when the schedule changes.

use std::time::SystemTime;

use anyhow::Context;

use crate::config::ScheduleConfig;
use crate::domain::{command_line, parse_rfc3339, rfc3339_millis, rfc3339_seconds};
use crate::report;
use crate::schedule::catch_up::whole_second;
use crate::schedule::{Slot, first_start_key};
use crate::state::{self, Marker, MarkerStore, Status, UnreadableRecord};
use crate::wait::Bound;

/// What a first-start record says of the schedule it was made for.
pub(super) fn schedule_words(schedule: &ScheduleConfig) -> Vec<String> {
    vec![
        "schedule".into(),
        format!("{} in {}", schedule.cron.text, schedule.cron.zone.name()),
    ]
}

/// The second the job first started with its schedule, from its record in the state.
/// When there is none, or it was made for another schedule (the same job, a new CRON),
/// `start` (to the second) is recorded with the schedule and returned, so catch-up never
/// runs a slot of the old schedule's spacing; a record that cannot be read is replaced so
/// too, with a warning.
pub(super) fn first_start(
    schedule: &ScheduleConfig,
    store: &mut dyn MarkerStore,
    start: Slot,
    bound: &Bound,
) -> anyhow::Result<Slot> {
    let job = &schedule.job;
    let key = first_start_key(job);
    let words = schedule_words(schedule);
    let second = whole_second(start);
    let shown = rfc3339_seconds(second);
    let found = match store.find(&key, bound) {
        Ok(found) => found,
        // A first-start record that cannot be read is replaced (docs/internals.md,
        // "Records of a scheduler").
        Err(err) => match err.downcast::<UnreadableRecord>() {
            Ok(unreadable) => {
                let why = format!("{}: {}", unreadable.place, unreadable.why);
                let first = record_first_start(store, schedule, &key, second, bound)?;
                report::notice(&format!(
                    "warning: the first-start record of job {job} could not be read ({why}); replaced it with {shown}"
                ));
                return Ok(first);
            }
            Err(err) => return Err(err),
        },
    };
    let recorded = found.as_ref().and_then(|d| parse_rfc3339(&d.succeeded_at));
    let (said, at) = match (&found, recorded) {
        (None, _) => (
            format!(
                "first start of job {job}: recorded as {shown}; slots before it are never caught up"
            ),
            second,
        ),
        (Some(done), Some(first)) if done.command == command_line(&words) => {
            return Ok(whole_second(first));
        }
        // An earlier version recorded no schedule: the start stands, and now says which.
        (Some(done), Some(first)) if !done.command.starts_with("schedule ") => {
            let first = whole_second(first);
            return record_first_start(store, schedule, &key, first, bound);
        }
        (Some(done), Some(_)) => (
            format!(
                "job {job}: its schedule changed (was {}); its first start is now {shown}, so no slot of the old schedule is caught up",
                done.command
                    .strip_prefix("schedule ")
                    .unwrap_or(&done.command)
            ),
            second,
        ),
        (Some(done), None) => (
            format!(
                "warning: the first-start record of job {job} ({}) could not be read ({}); replaced it with {shown}",
                done.place, done.succeeded_at
            ),
            second,
        ),
    };
    let first = record_first_start(store, schedule, &key, at, bound)?;
    report::info(&said);
    Ok(first)
}

/// Writes the job's first-start record: `at`, and the schedule it is for.
fn record_first_start(
    store: &mut dyn MarkerStore,
    schedule: &ScheduleConfig,
    key: &str,
    at: Slot,
    bound: &Bound,
) -> anyhow::Result<Slot> {
    let marker = Marker {
        key: key.to_string(),
        // Only a success replaces a record, and an unreadable one must be replaced.
        status: Status::Succeeded,
        succeeded_at: rfc3339_millis(SystemTime::from(at)),
        host: state::host_name(),
        pid: std::process::id(),
        command: schedule_words(schedule),
        attempts: 0,
    };
    store.record(&marker, bound).with_context(|| {
        format!(
            "cannot record the first start of job {} in {}",
            schedule.job,
            store.describe()
        )
    })?;
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::records::read_only;
    use crate::schedule::records::reads::store;
    use crate::schedule::records::schedule_in;

    fn t(text: &str) -> Slot {
        text.parse().unwrap()
    }

    fn first(schedule: &ScheduleConfig, start: &str) -> Slot {
        let bound = Bound::signals_only();
        let mut store = store(schedule, &bound).unwrap();
        first_start(schedule, store.as_mut(), t(start), &bound).unwrap()
    }

    #[test]
    fn a_first_start_is_kept_for_its_schedule_and_made_anew_when_the_schedule_changes() {
        let dir = tempfile::tempdir().unwrap();
        let every10 = schedule_in(dir.path(), "@every 10s");
        assert_eq!(
            first(&every10, "2026-01-01T00:00:00.700Z"),
            t("2026-01-01T00:00:00Z")
        );
        assert_eq!(
            first(&every10, "2026-01-01T05:00:00Z"),
            t("2026-01-01T00:00:00Z"),
            "kept"
        );
        let every1 = schedule_in(dir.path(), "@every 1s");
        assert_eq!(
            first(&every1, "2026-01-01T06:00:00Z"),
            t("2026-01-01T06:00:00Z"),
            "a new schedule"
        );
        assert_eq!(
            first(&every1, "2026-01-01T07:00:00Z"),
            t("2026-01-01T06:00:00Z")
        );
        let (_, read) = read_only(&every1).unwrap();
        assert_eq!(read, Some(t("2026-01-01T06:00:00Z")));
        let (_, other) = read_only(&every10).unwrap();
        assert_eq!(
            other, None,
            "a dry run of another schedule finds no first start of its own"
        );
    }

    #[test]
    fn a_first_start_an_earlier_version_wrote_keeps_its_time_and_gains_the_schedule() {
        let dir = tempfile::tempdir().unwrap();
        let daily = schedule_in(dir.path(), "@daily");
        let bound = Bound::signals_only();
        let mut store = store(&daily, &bound).unwrap();
        let old = Marker {
            key: first_start_key("paced"),
            status: Status::Succeeded,
            succeeded_at: "2025-06-01T00:00:00.000Z".into(),
            host: "h".into(),
            pid: 1,
            command: vec!["make-report".into()],
            attempts: 0,
        };
        store.record(&old, &bound).unwrap();
        assert_eq!(
            first(&daily, "2026-01-01T00:00:00Z"),
            t("2025-06-01T00:00:00Z")
        );
        let done = store
            .find(&first_start_key("paced"), &bound)
            .unwrap()
            .unwrap();
        assert_eq!(done.command, command_line(&schedule_words(&daily)));
    }
}
