//! Which answers mean "no room for another connection now": a server at
//! `max_connections`, one starting up or shutting down, a pooler at `max_client_conn`,
//! a port that refuses while the server restarts, a listen queue too full to take the
//! connection's opening. Such a refusal is a passing state
//! that `db` tries again with backoff until the call's own bound; every other error
//! (authentication, a missing database or role, TLS) is an answer. Each row of the
//! table says where the answer comes from.

use std::io::ErrorKind;

/// How a refusal shows itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sign {
    /// The server's SQLSTATE.
    SqlState(&'static str),
    /// A pooler's message (PgBouncer sends its own errors, and the server's errors at
    /// login, as SQLSTATE 08P01): the message starts with this.
    PoolerMessage(&'static str),
    /// The socket's error while connecting.
    Socket(ErrorKind),
    /// The connection closed before the server said anything (while connecting).
    ClosedWhileConnecting,
}

struct Row {
    sign: Sign,
    /// What the refusal means, as the error message says it.
    why: &'static str,
    /// Where it comes from (said at `-vv` when the call tries again).
    source: &'static str,
}

/// SQLSTATE PgBouncer gives its own errors and the server's login errors it passes on.
const POOLER_SQLSTATE: &str = "08P01";

const TOO_MANY: &str = "too many clients";
const NOT_NOW: &str = "the server is starting up, shutting down or in recovery";
const POOLER_FULL: &str = "the pooler has too many clients";
const POOLER_LOGIN: &str = "the pooler cannot log in to the server now";

const ROWS: &[Row] = &[
    Row {
        sign: Sign::SqlState("53300"),
        why: TOO_MANY,
        source: "PostgreSQL too_many_connections: max_connections, or the slots reserved for superusers",
    },
    Row {
        sign: Sign::SqlState("57P03"),
        why: NOT_NOW,
        source: "PostgreSQL cannot_connect_now",
    },
    Row {
        sign: Sign::SqlState("57P01"),
        why: NOT_NOW,
        source: "PostgreSQL admin_shutdown: a fast shutdown or restart met the connection as it began",
    },
    Row {
        sign: Sign::SqlState("57P02"),
        why: NOT_NOW,
        source: "PostgreSQL crash_shutdown: the server is restarting after a crash",
    },
    Row {
        sign: Sign::SqlState("53000"),
        why: "insufficient resources",
        source: "PostgreSQL insufficient_resources",
    },
    Row {
        sign: Sign::SqlState("53100"),
        why: "its disk is full",
        source: "PostgreSQL disk_full",
    },
    Row {
        sign: Sign::SqlState("53200"),
        why: "out of memory",
        source: "PostgreSQL out_of_memory",
    },
    Row {
        sign: Sign::PoolerMessage("no more connections allowed"),
        why: POOLER_FULL,
        source: "PgBouncer max_client_conn (and max_db_client_connections, max_user_client_connections)",
    },
    Row {
        sign: Sign::PoolerMessage("server login has been failing"),
        why: POOLER_LOGIN,
        source: "PgBouncer 1.17 and later, server_login_retry",
    },
    Row {
        sign: Sign::PoolerMessage("pgbouncer cannot connect to server"),
        why: POOLER_LOGIN,
        source: "PgBouncer up to 1.16, server_login_retry",
    },
    Row {
        sign: Sign::PoolerMessage("sorry, too many clients already"),
        why: TOO_MANY,
        source: "PostgreSQL's 53300 at the pooler's login, passed on by PgBouncer",
    },
    Row {
        sign: Sign::PoolerMessage("remaining connection slots are reserved"),
        why: TOO_MANY,
        source: "PostgreSQL's 53300 (reserved slots) at the pooler's login, passed on by PgBouncer",
    },
    Row {
        sign: Sign::PoolerMessage("the database system is"),
        why: NOT_NOW,
        source: "PostgreSQL's 57P03 (starting up, shutting down, in recovery, not accepting connections) passed on by PgBouncer",
    },
    Row {
        sign: Sign::PoolerMessage("terminating connection due to administrator command"),
        why: NOT_NOW,
        source: "PostgreSQL's 57P01 (a restart met the pooler's login) passed on by PgBouncer",
    },
    Row {
        sign: Sign::PoolerMessage("server conn crashed"),
        why: POOLER_LOGIN,
        source: "PgBouncer: its server connection ended while the client's login waited for it",
    },
    Row {
        sign: Sign::Socket(ErrorKind::ConnectionRefused),
        why: "connection refused (nothing listens on the port, as while the server restarts)",
        source: "TCP: ECONNREFUSED",
    },
    Row {
        sign: Sign::Socket(ErrorKind::ConnectionReset),
        why: "connection reset (as while the server restarts)",
        source: "TCP: ECONNRESET",
    },
    Row {
        sign: Sign::Socket(ErrorKind::ConnectionAborted),
        why: "connection aborted (as while the server restarts)",
        source: "TCP: ECONNABORTED",
    },
    Row {
        sign: Sign::Socket(ErrorKind::UnexpectedEof),
        why: "the connection was closed before the server answered (as while it restarts)",
        source: "TCP: an end of stream in the middle of the login, as a server that is going down closes it",
    },
    Row {
        sign: Sign::Socket(ErrorKind::BrokenPipe),
        why: "the connection was closed before the server answered (as while it restarts)",
        source: "TCP: EPIPE on the login's first write, as a server that is going down closes it",
    },
    Row {
        sign: Sign::Socket(ErrorKind::TimedOut),
        why: "the server's listen queue did not take the connection within 1s (more connect at once than it accepts)",
        source: "TCP: a SYN left unanswered, as a full listen queue drops it (db::HANDSHAKE_LIMIT)",
    },
    Row {
        sign: Sign::ClosedWhileConnecting,
        why: "the connection was closed before the server answered (as while it restarts)",
        source: "a server or pooler that is stopping closes new connections",
    },
];

/// A connection refused for want of capacity (or closed under a call, as while the
/// server or pooler restarts): what it means and what the server said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub why: &'static str,
    pub said: String,
    /// Where such an answer comes from (a setting, a state of the server).
    pub source: &'static str,
    /// The connection was open and then closed under a call (not refused at the door).
    pub closed: bool,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = if self.closed { "closed" } else { "refused" };
        write!(f, "the server {what} the connection: {}", self.why)?;
        if !self.said.is_empty() && !self.why.contains(self.said.as_str()) {
            write!(f, " ({})", self.said)?;
        }
        Ok(())
    }
}

/// What an error looks like to the table.
#[derive(Clone, Copy, Debug, Default)]
pub struct Seen<'a> {
    pub sqlstate: Option<&'a str>,
    pub message: Option<&'a str>,
    pub socket: Option<ErrorKind>,
    pub closed: bool,
    /// The error came while connecting (a socket error during a statement is a lost
    /// connection, not a refusal).
    pub connecting: bool,
}

/// The refusal `seen` is, if it is one.
pub fn classify(seen: &Seen<'_>) -> Option<Refusal> {
    let row = ROWS.iter().find(|row| matches(row.sign, seen))?;
    let said = match (seen.message, seen.sqlstate) {
        (Some(m), Some(code)) => format!("{m}, SQLSTATE {code}"),
        (Some(m), None) => m.to_string(),
        _ => String::new(),
    };
    Some(Refusal {
        why: row.why,
        said,
        source: row.source,
        closed: false,
    })
}

/// A connection the server or pooler ended under a call (`err` ended the connection,
/// not just the statement): the same passing state as a refusal, tried again on a
/// new connection within the call's bound.
pub fn closed_under_call(err: &tokio_postgres::Error) -> Refusal {
    let said = match err.as_db_error() {
        Some(db) => format!("{}, SQLSTATE {}", db.message(), db.code().code()),
        None => format!("{err:#}"),
    };
    Refusal {
        why: "it ended while a call was under way (as when the server or the pooler restarts)",
        said,
        source: "a closed or reset socket, or the server's or pooler's FATAL message \
                 (a restart, an administrator's shutdown, pg_terminate_backend)",
        closed: true,
    }
}

fn matches(sign: Sign, seen: &Seen<'_>) -> bool {
    match sign {
        Sign::SqlState(code) => seen.sqlstate == Some(code),
        Sign::PoolerMessage(start) => {
            seen.sqlstate == Some(POOLER_SQLSTATE)
                && seen.message.is_some_and(|m| m.starts_with(start))
        }
        Sign::Socket(kind) => seen.connecting && seen.socket == Some(kind),
        Sign::ClosedWhileConnecting => seen.connecting && seen.closed,
    }
}

/// The refusal `err` is, if it is one (`connecting`: the error came while connecting).
pub fn refusal(err: &tokio_postgres::Error, connecting: bool) -> Option<Refusal> {
    let db = err.as_db_error();
    let socket = std::error::Error::source(err)
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .map(std::io::Error::kind);
    let io_text = std::error::Error::source(err).map(ToString::to_string);
    let seen = Seen {
        sqlstate: db.map(|d| d.code().code()),
        message: db
            .map(tokio_postgres::error::DbError::message)
            .or(io_text.as_deref()),
        socket,
        closed: err.is_closed(),
        connecting,
    };
    classify(&seen)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(code: &'static str, message: &'static str) -> Seen<'static> {
        Seen {
            sqlstate: Some(code),
            message: Some(message),
            ..Seen::default()
        }
    }

    #[test]
    fn the_server_and_the_pooler_turning_a_connection_away_are_refusals() {
        for (seen, why) in [
            (db("53300", "sorry, too many clients already"), TOO_MANY),
            (db("57P03", "the database system is starting up"), NOT_NOW),
            (
                db(
                    "57P01",
                    "terminating connection due to administrator command",
                ),
                NOT_NOW,
            ),
            (
                db(
                    "57P02",
                    "terminating connection because of crash of another server process",
                ),
                NOT_NOW,
            ),
            (
                db(
                    "08P01",
                    "terminating connection due to administrator command",
                ),
                NOT_NOW,
            ),
            (
                db("53000", "insufficient resources"),
                "insufficient resources",
            ),
            (db("53100", "could not extend file"), "its disk is full"),
            (db("53200", "out of memory"), "out of memory"),
            (
                db("08P01", "no more connections allowed (max_client_conn)"),
                POOLER_FULL,
            ),
            (
                db(
                    "08P01",
                    "server login has been failing, try again later (server_login_retry)",
                ),
                POOLER_LOGIN,
            ),
            (
                db("08P01", "pgbouncer cannot connect to server"),
                POOLER_LOGIN,
            ),
            (db("08P01", "sorry, too many clients already"), TOO_MANY),
            (db("08P01", "the database system is shutting down"), NOT_NOW),
        ] {
            let refusal = classify(&seen).unwrap_or_else(|| panic!("{seen:?}"));
            assert_eq!(refusal.why, why, "{seen:?}");
        }
        for kind in [
            ErrorKind::ConnectionRefused,
            ErrorKind::UnexpectedEof,
            ErrorKind::BrokenPipe,
        ] {
            let refused = Seen {
                socket: Some(kind),
                connecting: true,
                ..Seen::default()
            };
            assert!(classify(&refused).is_some(), "{kind:?}");
        }
        let closed = Seen {
            closed: true,
            connecting: true,
            ..Seen::default()
        };
        assert!(classify(&closed).is_some());
        let unanswered_opening = Seen {
            socket: Some(ErrorKind::TimedOut),
            connecting: true,
            ..Seen::default()
        };
        assert!(classify(&unanswered_opening).is_some());
    }

    #[test]
    fn authentication_a_missing_database_and_lost_connections_are_answers() {
        for seen in [
            db("28P01", "password authentication failed for user \"app\""),
            db("28000", "no pg_hba.conf entry for host"),
            db("3D000", "database \"jobs\" does not exist"),
            db("42501", "permission denied for table retry_lease"),
            // PgBouncer's other errors: its own authentication, an unknown database.
            db("08P01", "password authentication failed"),
            db("08P01", "no such database: jobs"),
            // A message that matches a pooler row, from a server with another code.
            db("XX000", "no more connections allowed"),
        ] {
            assert_eq!(classify(&seen), None, "{seen:?}");
        }
        // A socket that fails during a statement lost the connection.
        let reset = Seen {
            socket: Some(ErrorKind::ConnectionReset),
            ..Seen::default()
        };
        assert_eq!(classify(&reset), None);
        let timed_out = Seen {
            socket: Some(ErrorKind::TimedOut),
            ..Seen::default()
        };
        assert_eq!(
            classify(&timed_out),
            None,
            "a statement's socket timing out"
        );
    }

    #[test]
    fn a_refusal_names_what_the_server_said() {
        let refusal = classify(&db("53300", "sorry, too many clients already")).unwrap();
        assert_eq!(
            refusal.to_string(),
            "the server refused the connection: too many clients \
             (sorry, too many clients already, SQLSTATE 53300)"
        );
    }
}
