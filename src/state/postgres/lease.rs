//! Leases: a PostgreSQL lock is a row of `retry_lease`, taken, renewed and released
//! by single statements on the server's clock, so it works through a transaction
//! pooler and survives a lost connection. Its token is the lock's fencing counter
//! and only grows. While held, a lease is renewed every TTL/3 by the renewer thread
//! on a connection of its own, opened for each renewal; if no renewal is answered within 2/3 TTL of the last
//! one sent (or one finds the lease gone), the lease is lost: the run is told through
//! `signals::lose_lock_within`, which ends the attempt before the server can hand the
//! lease to anyone else.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};
use tokio_postgres::types::Type;

use super::db::{Db, Shared};
use super::url::PgTarget;
use crate::state::{Burst, Patience};
use crate::wait::{self, Bound, Pauses};
use crate::{report, signals, sys};

/// How long a failed renewal waits before the next try on a fresh connection.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// The pauses between two polls of a busy lease: from 50 ms up to 1 s apart, with full
/// jitter, so N waiters cost about two statements a second each however long they
/// wait; and at least ten times as long as the poll before took, so waiters on a server
/// too busy to answer at once take at most a tenth of its time and leave the rest to
/// the holder's renewals and release.
pub fn poll_pauses() -> Pauses {
    Pauses::new(Duration::from_millis(50), Duration::from_secs(1)).stretched(POLL_STRETCH)
}

/// How many times as long as a poll took the pause after it lasts at least.
const POLL_STRETCH: u32 = 10;

/// Takes the lease when its row is absent or expired by the server's clock (or already
/// this holder's: the take sent again after its connection was lost). The token
/// is the greatest of the old one + 1, the server's clock in microseconds, and `$4`
/// (an earlier version's fencing count + 1, or 0).
const TAKE_SQL: &str = "INSERT INTO retry_lease AS l (name, holder, token, expires_at)
    VALUES ($1, $2, greatest((extract(epoch FROM now()) * 1000000)::bigint, $4),
            now() + make_interval(secs => $3))
    ON CONFLICT (name) DO UPDATE
        SET holder = EXCLUDED.holder, token = greatest(l.token + 1, EXCLUDED.token),
            expires_at = EXCLUDED.expires_at
        WHERE l.expires_at <= now() OR l.holder = EXCLUDED.holder
    RETURNING token";

/// [`TAKE_SQL`] for a job's run lease under `--overlap replace`: a new holder starts
/// with no stop asked of it.
const TAKE_CLEAR_SQL: &str = "INSERT INTO retry_lease AS l (name, holder, token, expires_at)
    VALUES ($1, $2, greatest((extract(epoch FROM now()) * 1000000)::bigint, $4),
            now() + make_interval(secs => $3))
    ON CONFLICT (name) DO UPDATE
        SET holder = EXCLUDED.holder, token = greatest(l.token + 1, EXCLUDED.token),
            expires_at = EXCLUDED.expires_at, stop_asked = NULL
        WHERE l.expires_at <= now() OR l.holder = EXCLUDED.holder
    RETURNING token";

/// [`RENEW_SQL`] for a job's run lease under `--overlap replace`: says whether a newer
/// slot asked the holder to stop.
const RENEW_WATCHING_SQL: &str =
    "UPDATE retry_lease SET expires_at = now() + make_interval(secs => $4)
    WHERE name = $1 AND holder = $2 AND token = $3 AND expires_at > now()
    RETURNING stop_asked IS NOT NULL";

/// A newer slot asks the live holder of a job's run lease to stop (`--overlap replace`).
pub const ASK_STOP_SQL: &str =
    "UPDATE retry_lease SET stop_asked = now() WHERE name = $1 AND expires_at > now()";

/// The earlier version's fencing count for a lock name, + 1 (0 when it has none).
const FENCING_SEED_SQL: &str =
    "SELECT coalesce((SELECT token + 1 FROM retry_fencing WHERE name = $1), 0)";

/// Where this holder still holds it, the lease lives TTL from now.
const RENEW_SQL: &str = "UPDATE retry_lease SET expires_at = now() + make_interval(secs => $4)
    WHERE name = $1 AND holder = $2 AND token = $3 AND expires_at > now()";

/// Where this holder still holds it, the lease is freed.
pub const RELEASE_SQL: &str = "UPDATE retry_lease SET expires_at = '-infinity'
    WHERE name = $1 AND holder = $2 AND token = $3 AND expires_at > now()";

/// A lease's row: `lock:NAME` for `--lock postgres://…#NAME`, `once:KEY` for a `--once`
/// key or a slot, so the two never collide.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseName(String);

impl LeaseName {
    pub fn lock(name: &str) -> LeaseName {
        LeaseName(format!("lock:{name}"))
    }

    pub fn once(key: &str) -> LeaseName {
        LeaseName(format!("once:{key}"))
    }

    /// A scheduled job's run lease (`--overlap`): held while one of its slots runs.
    pub fn run(job: &str) -> LeaseName {
        LeaseName(format!("run:{job}"))
    }
}

/// A lease this process holds.
pub struct Held {
    pub name: LeaseName,
    pub holder: String,
    pub token: i64,
    pub ttl: Duration,
    /// The renewals, until the lease is released (dropping it stops them).
    renewal: Option<Renewal>,
    /// Set by the renewer when the lease was lost: there is nothing left to release.
    lost: Arc<AtomicBool>,
}

impl Held {
    /// The statement parameters that say "this holder's lease": name, holder, token.
    pub fn identity(&self) -> [(&(dyn tokio_postgres::types::ToSql + Sync), Type); 3] {
        [
            (&self.name.0, Type::TEXT),
            (&self.holder, Type::TEXT),
            (&self.token, Type::INT8),
        ]
    }

    /// Renews now, on the run's connection: `Ok(false)` when the lease is no longer this
    /// holder's (checked before a success is recorded under it).
    pub fn confirm(&self, db: &Db, bound: &Bound) -> anyhow::Result<bool> {
        let [name, holder, token] = self.identity();
        let ttl = self.ttl.as_secs_f64();
        let renewed = db.execute(
            RENEW_SQL,
            &[name, holder, token, (&ttl, Type::FLOAT8)],
            bound,
        )?;
        Ok(renewed == 1)
    }

    /// Stops the renewals: the lease is about to be released (or recorded and released).
    pub fn stop_renewals(&mut self) {
        self.renewal = None;
    }

    /// Whether the renewer found the lease lost.
    pub fn is_lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }

    /// Stops the renewals and frees the lease (where it is still this holder's; a lost
    /// one is left alone, and no call is made for it).
    pub fn release(&mut self, db: &Db, bound: &Bound) -> anyhow::Result<()> {
        self.stop_renewals();
        if !self.is_lost() {
            db.execute(RELEASE_SQL, &self.identity(), bound)?;
        }
        Ok(())
    }
}

/// A holder id: which host and process, and a fresh UUID (an operator reads it in
/// `retry_lease.holder`).
fn holder_id() -> String {
    format!(
        "{}:{}:{}",
        crate::state::record::host_name(),
        std::process::id(),
        uuid::Uuid::new_v4()
    )
}

/// How a try to take a lease ended.
pub enum Taken {
    Held(Held),
    Busy,
}

/// Tries once to take `name` for `ttl`. A take answered after its own loss deadline
/// (2/3 TTL after it was sent) is released at once and is an error: the renewals
/// could not have kept it.
pub fn try_take(
    db: &Db,
    name: &LeaseName,
    ttl: Duration,
    seed_from: Option<&str>,
    bound: &Bound,
) -> anyhow::Result<Taken> {
    take(db, name, (ttl, false), seed_from, bound)
}

/// [`try_take`] for a job's run lease whose renewals watch for a newer slot's ask to
/// stop (`--overlap replace`): the holder is then stopped as replaced.
pub fn try_take_watching(
    db: &Db,
    name: &LeaseName,
    ttl: Duration,
    bound: &Bound,
) -> anyhow::Result<Taken> {
    take(db, name, (ttl, true), None, bound)
}

fn take(
    db: &Db,
    name: &LeaseName,
    (ttl, watching): (Duration, bool),
    seed_from: Option<&str>,
    bound: &Bound,
) -> anyhow::Result<Taken> {
    let _burst = Burst::begin();
    let seed: i64 = match seed_from {
        Some(old) => db
            .query(FENCING_SEED_SQL, &[(&old, Type::TEXT)], bound)?
            .first()
            .map_or(0, |r| r.get(0)),
        None => 0,
    };
    let holder = holder_id();
    let secs = ttl.as_secs_f64();
    let sent = Instant::now();
    let rows = db
        .query(
            if watching { TAKE_CLEAR_SQL } else { TAKE_SQL },
            &[
                (&name.0, Type::TEXT),
                (&holder, Type::TEXT),
                (&secs, Type::FLOAT8),
                (&seed, Type::INT8),
            ],
            bound,
        )
        .map_err(|e| out_of_tokens(e, name))?;
    let Some(row) = rows.first() else {
        return Ok(Taken::Busy);
    };
    let token: i64 = row.get(0);
    let lost = Arc::new(AtomicBool::new(false));
    let mut held = Held {
        name: name.clone(),
        holder: holder.clone(),
        token,
        ttl,
        renewal: None,
        lost: Arc::clone(&lost),
    };
    let late = sent.elapsed();
    if late >= loss_after(ttl) {
        // Released before any renewal starts: a renewer would count it lost at once
        // (its loss deadline has passed) and the release would then skip the call.
        let _ = held.release(db, bound);
        anyhow::bail!(
            "the lease {} was granted {} after it was asked for, past 2/3 of its TTL ({}); released it",
            name.0,
            crate::domain::human(late),
            crate::domain::human(ttl)
        );
    }
    let lease = Renewed {
        target: db.target(),
        name: name.clone(),
        holder,
        token,
        ttl,
        sent_clock: sys::suspend_aware_now().saturating_sub(sent.elapsed()),
        sent,
        watching,
    };
    held.renewal = Some(Renewal::start(lease, &lost));
    Ok(Taken::Held(held))
}

/// A take whose token would pass 2^63−1 fails in the server ("bigint out of range"):
/// say which row, never wrap.
fn out_of_tokens(err: anyhow::Error, name: &LeaseName) -> anyhow::Error {
    let overflow = err
        .downcast_ref::<tokio_postgres::Error>()
        .and_then(tokio_postgres::Error::code)
        .is_some_and(|c| *c == tokio_postgres::error::SqlState::NUMERIC_VALUE_OUT_OF_RANGE);
    if overflow {
        anyhow::anyhow!(
            "the lease {name}'s token in retry_lease has reached 2^63-1 and cannot grow: \
             fencing tokens never wrap; a person must decide what the lock's next token is"
        )
    } else {
        err
    }
}

/// The loss deadline: 2/3 of TTL after the last take or renewal that was answered was sent.
pub fn loss_after(ttl: Duration) -> Duration {
    ttl * 2 / 3
}

/// How long after SIGTERM a lost lease's attempt is killed: TTL/3 − 0.5 s, so it is
/// gone before the server's TTL runs out (loss at 2/3 TTL, + TTL/3 − 0.5 s).
pub fn kill_within(ttl: Duration) -> Duration {
    (ttl / 3).saturating_sub(Duration::from_millis(500))
}

/// One lease's renewals on the renewer thread; dropping it stops them.
pub struct Renewal {
    _stop: oneshot::Sender<()>,
}

/// What the renewer thread is asked to keep alive, until `stop` is dropped.
struct Order {
    lease: Renewed,
    stop: oneshot::Receiver<()>,
    /// Set when the lease is lost.
    lost: Arc<AtomicBool>,
}

/// A lease as its renewals see it.
struct Renewed {
    target: PgTarget,
    name: LeaseName,
    holder: String,
    token: i64,
    ttl: Duration,
    /// When the last answered take or renewal was sent.
    sent: Instant,
    /// The same moment on the clock that counts a stopped process and a suspended host.
    sent_clock: Duration,
    /// Each renewal looks for a newer slot's ask to stop (`--overlap replace`).
    watching: bool,
}

impl Renewal {
    fn start(lease: Renewed, lost: &Arc<AtomicBool>) -> Renewal {
        let (name, ttl) = (lease.name.clone(), lease.ttl);
        let (stop_tx, stop) = oneshot::channel();
        let order = Order {
            lease,
            stop,
            lost: Arc::clone(lost),
        };
        if renewer().send(order).is_err() {
            // The thread could not be started: say so; the run has no renewals, so the
            // lease counts as lost at its loss deadline.
            let ttl = loss_after(ttl);
            report::error(&format!(
                "cannot renew the lease {}: the renewer thread is gone; it counts as lost after {}",
                name.0,
                crate::domain::human(ttl)
            ));
        }
        Renewal { _stop: stop_tx }
    }
}

/// The renewer thread's queue, started at the first lease.
fn renewer() -> &'static mpsc::UnboundedSender<Order> {
    static RENEWER: OnceLock<mpsc::UnboundedSender<Order>> = OnceLock::new();
    RENEWER.get_or_init(|| {
        let (orders, queue) = mpsc::unbounded_channel();
        let started = std::thread::Builder::new()
            .name("lease-renewer".into())
            .spawn(move || {
                // The renewals are tasks of this thread alone.
                let local = tokio::task::LocalSet::new();
                wait::on_runtime(local.run_until(serve(queue)));
            });
        if let Err(e) = started {
            report::error(&format!("cannot start the lease renewer thread: {e}"));
        }
        orders
    })
}

/// The renewer: one task per lease; leases on one server share one connection, open
/// only while a renewal is being made.
async fn serve(mut queue: mpsc::UnboundedReceiver<Order>) {
    let mut conns: HashMap<String, Weak<Shared>> = HashMap::new();
    while let Some(order) = queue.recv().await {
        let key = super::db::server_key(&order.lease.target);
        let conn = match conns.get(&key).and_then(Weak::upgrade) {
            Some(conn) => conn,
            None => {
                let conn = Arc::new(Shared::new(&order.lease.target, "lease renewal"));
                conns.insert(key, Arc::downgrade(&conn));
                conn
            }
        };
        conns.retain(|_, c| c.strong_count() > 0);
        tokio::task::spawn_local(renew(order, conn));
    }
}

/// Keeps one lease alive until its holder stops the renewals, or says it was lost.
async fn renew(order: Order, conn: Arc<Shared>) {
    let Order {
        mut lease,
        mut stop,
        lost: lost_flag,
    } = order;
    let renewing = async {
        loop {
            let slept = sleep_watching(lease.sent + lease.ttl / 3).await;
            match renew_watched(&lease, &conn).await {
                Ok((sent, sent_clock)) => (lease.sent, lease.sent_clock) = (sent, sent_clock),
                Err(why) => return stopped_meanwhile(&lease, slept).unwrap_or(why),
            }
        }
    };
    let lost = tokio::select! {
        _ = &mut stop => None,
        why = renewing => Some(why),
    };
    // A lease its holder is releasing is not lost, whatever its last renewal found.
    let stopped = matches!(stop.try_recv(), Err(oneshot::error::TryRecvError::Closed));
    if let Some(why) = lost.filter(|_| !stopped) {
        lost_flag.store(true, Ordering::SeqCst);
        let at = crate::domain::rfc3339_millis(std::time::SystemTime::now());
        let message = format!("the lease {} was lost at {at}: {why}", lease.name.0);
        signals::lose_lock_within(message, Some(kill_within(lease.ttl)));
    }
}

/// How often a waiting renewer looks at the clock, so that a stop of the process (or
/// of the host) is measured from the last time it ran.
const WATCH: Duration = Duration::from_millis(500);

/// A gap in the renewer's run shorter than this is scheduling, not a stop.
const STOP_NOTICED: Duration = Duration::from_secs(1);

/// Whether the capacity warning was given (once per process).
static WARNED: AtomicBool = AtomicBool::new(false);

/// A renewer's sleep on the clock that counts a stop: when it last ran before the
/// sleep ended, and when it woke.
#[derive(Clone, Copy, Debug)]
struct Slept {
    awake: Duration,
    woke: Duration,
}

/// Sleeps until `next`, waking every [`WATCH`] to note that the process runs.
async fn sleep_watching(next: Instant) -> Slept {
    let mut awake = sys::suspend_aware_now();
    loop {
        let now = Instant::now();
        if now < next {
            tokio::time::sleep_until((now + WATCH).min(next).into()).await;
        }
        let woke = sys::suspend_aware_now();
        if Instant::now() >= next {
            return Slept { awake, woke };
        }
        awake = woke;
    }
}

/// When the renewer last ran before the loss deadline and woke only after it (the
/// process was stopped, or its host suspended, for longer than the lease allowed), the
/// loss is told as that, not as a renewal left unanswered.
fn stopped_meanwhile(lease: &Renewed, slept: Slept) -> Option<String> {
    let Slept { awake, woke } = slept;
    let deadline = lease.sent_clock + loss_after(lease.ttl);
    let gap = woke.saturating_sub(awake);
    (awake < deadline && woke >= deadline && gap >= STOP_NOTICED).then(|| {
        format!(
            "this process was stopped for {}; the lease expired meanwhile",
            crate::domain::human(gap)
        )
    })
}

/// [`renew_once`], with one warning (per process) when it has used half the time to
/// its loss deadline: the server takes the renewals' connections or answers them
/// more slowly than a fleet's renewals need, and the lease is in danger next.
async fn renew_watched(order: &Renewed, conn: &Shared) -> Result<(Instant, Duration), String> {
    let began = Instant::now();
    let deadline = order.sent + loss_after(order.ttl);
    let halfway = began + deadline.saturating_duration_since(began) / 2;
    let renewal = renew_once(order, conn);
    tokio::pin!(renewal);
    tokio::select! {
        biased;
        renewed = &mut renewal => return renewed,
        () = tokio::time::sleep_until(halfway.into()) => {}
    }
    if !WARNED.swap(true, Ordering::SeqCst) {
        report::notice(&format!(
            "warning: a renewal of the lease {} has waited {} for the server, half the time \
             left before the lease counts as lost: the server takes connections or answers \
             more slowly than the renewals need; a longer --lease-ttl (now {}) or PgBouncer \
             in front of the server gives them room",
            order.name,
            crate::domain::human(began.elapsed()),
            crate::domain::human(order.ttl)
        ));
    }
    renewal.await
}

/// One renewal, tried again on a fresh connection until the loss deadline (a server
/// that refuses for capacity, until then too); returns when the answered renewal was
/// sent (by `Instant` and by the clock that counts a stop).
async fn renew_once(order: &Renewed, conn: &Shared) -> Result<(Instant, Duration), String> {
    let deadline = order.sent + loss_after(order.ttl);
    let bound = Bound::background(deadline);
    let secs = order.ttl.as_secs_f64();
    let mut last_error = String::from("no renewal was answered in time");
    loop {
        let sent = Instant::now();
        let sent_clock = sys::suspend_aware_now();
        if sent >= deadline {
            return Err(format!(
                "no renewal was answered within {} ({last_error})",
                crate::domain::human(loss_after(order.ttl))
            ));
        }
        let params = [
            (
                &order.name.0 as &(dyn tokio_postgres::types::ToSql + Sync),
                Type::TEXT,
            ),
            (&order.holder, Type::TEXT),
            (&order.token, Type::INT8),
            (&secs, Type::FLOAT8),
        ];
        let patience = Patience::Until(deadline);
        let renewed = if order.watching {
            let rows = conn
                .query(RENEW_WATCHING_SQL, &params, &bound, patience)
                .await;
            rows.map(|rows| {
                if rows.first().is_some_and(|row| row.get::<_, bool>(0)) {
                    signals::replace_now(
                        "another scheduler started a newer slot of the job in its place (--overlap replace)",
                    );
                }
                rows.len() as u64
            })
        } else {
            conn.execute(RENEW_SQL, &params, &bound, patience).await
        };
        match renewed {
            Ok(1) => return Ok((sent, sent_clock)),
            Ok(_) => {
                return Err("it expired or another holder took it".into());
            }
            Err(e) => {
                last_error = format!("{e:#}");
                let pause = (sent + RETRY_PAUSE).min(deadline);
                tokio::time::sleep_until(pause.into()).await;
            }
        }
    }
}

impl std::fmt::Display for LeaseName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_locks_and_keys_never_collide() {
        assert_eq!(LeaseName::lock("x").to_string(), "lock:x");
        assert_eq!(LeaseName::once("x").to_string(), "once:x");
        assert_ne!(LeaseName::lock("once:x"), LeaseName::once("x"));
        assert_eq!(LeaseName::run("x").to_string(), "run:x");
    }

    #[test]
    fn a_loss_is_blamed_on_a_stop_only_when_the_renewer_slept_through_the_deadline() {
        let secs = Duration::from_secs_f64;
        let lease = Renewed {
            target: PgTarget::default(),
            name: LeaseName::lock("k"),
            holder: String::new(),
            token: 1,
            ttl: secs(3.0),
            sent: Instant::now(),
            sent_clock: secs(100.0),
            watching: false,
        };
        let slept = |awake, woke| Slept {
            awake: secs(awake),
            woke: secs(woke),
        };
        assert_eq!(
            stopped_meanwhile(&lease, slept(100.5, 104.0)).as_deref(),
            Some("this process was stopped for 3.5s; the lease expired meanwhile")
        );
        // Woke before the deadline: the renewal itself went unanswered.
        assert_eq!(stopped_meanwhile(&lease, slept(100.5, 101.0)), None);
        // Late past the deadline by a moment of scheduling, not a stop.
        assert_eq!(stopped_meanwhile(&lease, slept(101.9, 102.1)), None);
    }

    #[test]
    fn a_lost_holder_is_gone_before_the_ttl_runs_out() {
        for secs in [3, 15, 3600] {
            let ttl = Duration::from_secs(secs);
            let gone = loss_after(ttl) + kill_within(ttl);
            assert!(gone + Duration::from_millis(500) <= ttl, "{ttl:?}");
        }
        assert_eq!(loss_after(Duration::from_secs(3)), Duration::from_secs(2));
        assert_eq!(
            kill_within(Duration::from_secs(3)),
            Duration::from_millis(500)
        );
    }
}
