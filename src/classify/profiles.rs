//! Tool profiles: each tool's failure vocabulary as a table, taken from the tool's
//! documented exit codes and, where a code is ambiguous, the words it prints on
//! stderr. Rows are checked in order; the first whose codes and condition match
//! decides. A row of a tool that shows an HTTP status (curl, wget, git) hands
//! that status to the one status table in `http`. The generic rules at the
//! bottom apply to every command.

use super::http::{self, STATUS_TABLE};
use crate::domain::{Class, ExitStatus, ProfileName, RetryCap, RetryCapKey, Verdict};

/// When a row applies, beyond its exit codes.
#[derive(Clone, Copy, Debug)]
pub enum When {
    Always,
    /// stderr showed an HTTP status.
    StatusShown,
    /// stderr showed no HTTP status.
    NoStatus,
    /// A stderr line matched one of these patterns.
    Shows(&'static Phrases),
}

/// Case-insensitive regexes for what a tool prints on stderr when a code is ambiguous.
#[derive(Debug)]
pub struct Phrases {
    /// What the phrases mean, for `--dry-run` and reasons.
    pub what: &'static str,
    pub patterns: &'static [&'static str],
}

/// What a row decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Then {
    /// This class, retried at most as often as its cap allows across the run.
    Is(Class, Option<RetryCap>),
    /// Classify the status shown on stderr with the HTTP status table.
    StatusTable,
}

#[derive(Clone, Copy, Debug)]
pub struct Row {
    pub codes: &'static [(u8, u8)],
    pub when: When,
    pub then: Then,
    pub why: &'static str,
}

/// What a profile does with a non-zero exit code that no row names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Otherwise {
    Permanent,
    Generic,
}

#[derive(Debug)]
pub struct Profile {
    pub name: &'static str,
    /// Base names of the commands that pick this profile under `--profile auto`.
    pub commands: &'static [&'static str],
    pub source: &'static str,
    /// Pulls an HTTP status (capture group 1) out of a stderr line.
    pub status_pattern: Option<&'static str>,
    pub rows: &'static [Row],
    pub otherwise: Otherwise,
}

const fn row(codes: &'static [(u8, u8)], class: Class, why: &'static str) -> Row {
    row_when(codes, When::Always, class, None, why)
}

const fn row_when(
    codes: &'static [(u8, u8)],
    when: When,
    class: Class,
    cap: Option<RetryCapKey>,
    why: &'static str,
) -> Row {
    let cap = match cap {
        Some(key) => Some(RetryCap::twice(key)),
        None => None,
    };
    Row {
        codes,
        when,
        then: Then::Is(class, cap),
        why,
    }
}

/// The row that hands a failure whose stderr names an HTTP status to the status table.
const fn status_row(codes: &'static [(u8, u8)], why: &'static str) -> Row {
    Row {
        codes,
        when: When::StatusShown,
        then: Then::StatusTable,
        why,
    }
}

use Class::{Permanent as P, Transient as T};

pub static CURL: Profile = Profile {
    name: "curl",
    commands: &["curl"],
    source: "curl(1), section EXIT CODES; exit 22 is --fail, whose stderr names the status",
    status_pattern: Some(r"returned error: (\d{3})"),
    rows: &[
        row(&[(5, 5)], T, "curl: could not resolve proxy"),
        row(&[(6, 6)], T, "curl: could not resolve host"),
        row(&[(7, 7)], T, "curl: failed to connect"),
        row(&[(16, 16)], T, "curl: HTTP/2 framing error"),
        row(&[(18, 18)], T, "curl: partial file (transfer cut off)"),
        row(&[(28, 28)], T, "curl: operation timed out"),
        row(&[(35, 35)], T, "curl: TLS connect error"),
        row(&[(52, 52)], T, "curl: empty reply from server"),
        row(&[(55, 55)], T, "curl: failed sending network data"),
        row(&[(56, 56)], T, "curl: failure receiving network data"),
        row(&[(92, 92)], T, "curl: HTTP/2 stream error"),
        row(&[(95, 95)], T, "curl: HTTP/3 layer error"),
        status_row(&[(22, 22)], "curl --fail: HTTP error"),
        row_when(
            &[(22, 22)],
            When::NoStatus,
            T,
            Some(RetryCapKey::StatusNotShown),
            "curl --fail: HTTP error with no status shown (retried at most twice)",
        ),
        row(&[(3, 3)], P, "curl: malformed URL"),
        row(&[(23, 23)], P, "curl: write error"),
        row(&[(26, 26)], P, "curl: read error"),
        row(&[(27, 27)], P, "curl: out of memory"),
        row(&[(43, 43)], P, "curl: internal error"),
        row(&[(48, 48)], P, "curl: unknown option"),
        row(&[(51, 51)], P, "curl: peer fingerprint mismatch"),
        row(
            &[(60, 60)],
            P,
            "curl: peer certificate cannot be authenticated",
        ),
        row(&[(77, 77)], P, "curl: problem reading the CA certificates"),
    ],
    otherwise: Otherwise::Permanent,
};

pub static WGET: Profile = Profile {
    name: "wget",
    commands: &["wget"],
    source: "wget(1), section EXIT STATUS; exit 8's stderr names the status (ERROR 503: ...)",
    status_pattern: Some(r"ERROR (\d{3})"),
    rows: &[
        row(&[(4, 4)], T, "wget: network failure"),
        status_row(&[(8, 8)], "wget: server issued an error response"),
        row_when(
            &[(8, 8)],
            When::NoStatus,
            T,
            Some(RetryCapKey::StatusNotShown),
            "wget: server error with no status shown, as with -q (retried at most twice)",
        ),
        row(&[(1, 1)], P, "wget: generic error"),
        row(&[(2, 2)], P, "wget: parse error in options or files"),
        row(&[(3, 3)], P, "wget: file I/O error"),
        row(&[(5, 5)], P, "wget: TLS verification failure"),
        row(&[(6, 6)], P, "wget: authentication failure"),
        row(&[(7, 7)], P, "wget: protocol error"),
    ],
    otherwise: Otherwise::Permanent,
};

/// ssh's words for a login or host key that another attempt cannot fix (sshconnect2.c,
/// sshconnect.c, kex.c).
static SSH_REFUSED: Phrases = Phrases {
    what: "an authentication or host-key failure",
    patterns: &[
        r"Permission denied",
        r"Host key verification failed",
        r"REMOTE HOST IDENTIFICATION HAS CHANGED",
        r"Too many authentication failures",
        r"no matching .+ found",
    ],
};

pub static SSH: Profile = Profile {
    name: "ssh",
    commands: &["ssh", "scp", "sftp"],
    source: "ssh(1): exits with the remote command's status, or 255 if an error occurred",
    status_pattern: None,
    rows: &[
        row_when(
            &[(255, 255)],
            When::Shows(&SSH_REFUSED),
            P,
            None,
            "ssh: authentication or host-key failure (exit 255); retrying a refused login only trips fail2ban",
        ),
        row(&[(255, 255)], T, "ssh: connection failure (exit 255)"),
    ],
    otherwise: Otherwise::Permanent,
};

/// The daemon's refusal when every slot is taken (clientserver.c: "@ERROR: max
/// connections (%d) reached -- try again later").
static RSYNC_DAEMON_FULL: Phrases = Phrases {
    what: "the daemon's max connections reached",
    patterns: &[r"max connections \(\d+\) reached", r"try again later"],
};

/// A source that no later attempt will find or be allowed to read.
static RSYNC_MISSING: Phrases = Phrases {
    what: "a missing or unreadable source",
    patterns: &[r"No such file or directory", r"Permission denied"],
};

pub static RSYNC: Profile = Profile {
    name: "rsync",
    commands: &["rsync"],
    source: "rsync(1), section EXIT VALUES; codes 5 and 23 are told apart by stderr",
    status_pattern: None,
    rows: &[
        row(&[(10, 10)], T, "rsync: error in socket I/O"),
        row(&[(12, 12)], T, "rsync: error in the protocol data stream"),
        row_when(
            &[(23, 23)],
            When::Shows(&RSYNC_MISSING),
            P,
            None,
            "rsync: partial transfer, a source is missing or unreadable",
        ),
        row_when(
            &[(23, 23)],
            When::Always,
            T,
            Some(RetryCapKey::RsyncPartial),
            "rsync: partial transfer due to error (retried at most twice)",
        ),
        row(
            &[(24, 24)],
            T,
            "rsync: partial transfer, source files vanished",
        ),
        row(&[(30, 30)], T, "rsync: timeout in data send/receive"),
        row(
            &[(35, 35)],
            T,
            "rsync: timeout waiting for the daemon connection",
        ),
        row(&[(1, 1)], P, "rsync: syntax or usage error"),
        row(&[(2, 2)], P, "rsync: protocol incompatibility"),
        row(
            &[(3, 3)],
            P,
            "rsync: errors selecting input/output files or directories",
        ),
        row(&[(4, 4)], P, "rsync: requested action not supported"),
        row_when(
            &[(5, 5)],
            When::Shows(&RSYNC_DAEMON_FULL),
            T,
            None,
            "rsync: the daemon is at its max connections, try again later",
        ),
        row(
            &[(5, 5)],
            P,
            "rsync: error starting the client-server protocol",
        ),
        row(
            &[(6, 6)],
            P,
            "rsync: daemon unable to append to its log file",
        ),
        row(&[(11, 11)], P, "rsync: error in file I/O"),
        row(&[(13, 13)], P, "rsync: errors with program diagnostics"),
        row(&[(14, 14)], P, "rsync: error in IPC code"),
        row(&[(15, 19)], P, "rsync: internal error"),
        row(&[(20, 20)], P, "rsync: received SIGUSR1 or SIGINT"),
        row(&[(21, 21)], P, "rsync: some error returned by waitpid()"),
        row(&[(22, 22)], P, "rsync: error allocating memory buffers"),
        row(
            &[(25, 25)],
            P,
            "rsync: --max-delete limit stopped deletions",
        ),
    ],
    otherwise: Otherwise::Generic,
};

/// How git's transports (connect.c, http.c, curl) word a network failure.
static GIT_NETWORK: Phrases = Phrases {
    what: "a network failure",
    patterns: &[
        "could not resolve host",
        "connection timed out",
        "connection refused",
        "connection reset",
        "early eof",
        "rpc failed",
        "the remote end hung up unexpectedly",
        "operation timed out",
        "failed to connect",
        "temporary failure in name resolution",
    ],
};

pub static GIT: Profile = Profile {
    name: "git",
    commands: &["git"],
    source: "git: die() exits 128 (usage.c); network failures are told apart by the transport's stderr",
    status_pattern: Some(r"returned error: (\d{3})"),
    rows: &[
        row_when(
            &[(128, 128)],
            When::Shows(&GIT_NETWORK),
            T,
            None,
            "git: network failure",
        ),
        status_row(&[(128, 128)], "git: HTTP error from the remote"),
        row(
            &[(128, 128)],
            P,
            "git: fatal error that is not a network failure",
        ),
    ],
    otherwise: Otherwise::Generic,
};

/// No tool-specific rows: only the generic rules apply.
pub static GENERIC: Profile = Profile {
    name: "generic",
    commands: &[],
    source: "retry's generic rules",
    status_pattern: None,
    rows: &[],
    otherwise: Otherwise::Generic,
};

pub static ALL: [&Profile; 5] = [&CURL, &WGET, &SSH, &RSYNC, &GIT];

/// Generic rules for exit codes, after every user rule and the profile.
pub static GENERIC_EXITS: &[Row] = &[
    row(&[(0, 0)], Class::Success, "exit status 0"),
    row(
        &[(126, 126)],
        P,
        "not executable (exit 126): retrying cannot help",
    ),
    row(
        &[(127, 127)],
        P,
        "command not found (exit 127): retrying cannot help",
    ),
    row(
        &[(64, 68), (70, 70), (72, 73), (76, 78)],
        P,
        "sysexits: usage, data or configuration error",
    ),
    row(
        &[(69, 69)],
        T,
        "sysexits: service unavailable (EX_UNAVAILABLE)",
    ),
    row(
        &[(71, 71)],
        T,
        "sysexits: operating system error (EX_OSERR)",
    ),
    row(&[(74, 74)], T, "sysexits: I/O error (EX_IOERR)"),
    row(&[(75, 75)], T, "sysexits: temporary failure (EX_TEMPFAIL)"),
    row(
        &[(124, 124)],
        T,
        "exit 124: timed out (as timeout(1) reports)",
    ),
    row(&[(1, 255)], T, "non-zero exit status"),
];

/// The generic rules for `--dry-run`.
pub fn describe_generic() -> Vec<String> {
    GENERIC_EXITS
        .iter()
        .map(|row| {
            let Then::Is(class, _) = row.then else {
                unreachable!("generic rules do not read stderr")
            };
            format!(
                "exit {}: {} ({})",
                code_list(row.codes),
                class.as_str(),
                row.why
            )
        })
        .collect()
}

impl Profile {
    /// Whether a row hands an HTTP status the tool printed to the status table.
    pub fn shows_status(&self) -> bool {
        self.rows.iter().any(|row| row.then == Then::StatusTable)
    }
}

/// The profile for `--profile NAME`, or for the command's base name under `auto`.
pub fn pick(name: ProfileName, program: &std::ffi::OsStr) -> &'static Profile {
    match name {
        ProfileName::Generic => &GENERIC,
        ProfileName::Curl => &CURL,
        ProfileName::Wget => &WGET,
        ProfileName::Ssh => &SSH,
        ProfileName::Rsync => &RSYNC,
        ProfileName::Git => &GIT,
        ProfileName::Auto => {
            let base = std::path::Path::new(program)
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("");
            ALL.iter()
                .copied()
                .find(|p| p.commands.contains(&base))
                .unwrap_or(&GENERIC)
        }
    }
}

pub fn codes_contain(codes: &[(u8, u8)], code: ExitStatus) -> bool {
    codes
        .iter()
        .any(|&(lo, hi)| (lo..=hi).contains(&code.code()))
}

/// `2,64-78` for a list of inclusive ranges.
pub fn code_list<T: std::fmt::Display + PartialEq>(codes: &[(T, T)]) -> String {
    let parts: Vec<String> = codes
        .iter()
        .map(|(lo, hi)| {
            if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}-{hi}")
            }
        })
        .collect();
    parts.join(",")
}

/// The verdict for a status a tool showed on stderr as it failed: the status
/// table's, except that a status which is not an error cannot excuse the failure.
pub fn shown_status(status: u16) -> Verdict {
    let facts = http::StatusFacts {
        status,
        ..http::StatusFacts::default()
    };
    match http::status_row(&facts) {
        Some(row) => shown_row_verdict(row, status),
        None => Verdict::permanent(format!("HTTP {status} is not a known status class")),
    }
}

/// What a tool's failure with a status that is not an error means: nothing to retry for.
const NOT_AN_ERROR: &str = "not an error status, yet the tool failed";

fn shown_row_verdict(row: &http::StatusRow, status: u16) -> Verdict {
    if row.class == Class::Success {
        Verdict::permanent(format!("HTTP {status}: {NOT_AN_ERROR}"))
    } else {
        row.verdict(status)
    }
}

impl Row {
    /// The row for `--dry-run`; a status-table row is spelled out a status range a line.
    pub fn describe(&self, profile: &str) -> Vec<String> {
        let head = format!("{profile} exit {}", code_list(self.codes));
        match self.then {
            Then::Is(class, cap) => {
                let cap = cap
                    .map(|l| format!(", at most {} retries", l.max_retries))
                    .unwrap_or_default();
                vec![format!(
                    "{head}{}: {}{cap} ({})",
                    self.when.describe(),
                    class.as_str(),
                    self.why
                )]
            }
            Then::StatusTable => STATUS_TABLE
                .iter()
                .filter(|row| row.requires == http::Requires::Nothing)
                .map(|row| {
                    let (lo, hi) = row.codes;
                    let verdict = shown_row_verdict(row, lo);
                    let cap = verdict
                        .retry_cap
                        .map(|l| format!(", at most {} retries", l.max_retries))
                        .unwrap_or_default();
                    let why = if row.class == Class::Success {
                        NOT_AN_ERROR
                    } else {
                        row.why
                    };
                    format!(
                        "{head} with stderr showing HTTP {}: {}{cap} ({}; {why})",
                        code_list(&[(lo, hi)]),
                        verdict.class.as_str(),
                        self.why,
                    )
                })
                .collect(),
        }
    }
}

impl When {
    fn describe(self) -> String {
        match self {
            When::Always => String::new(),
            When::StatusShown => " with stderr showing an HTTP status".into(),
            When::NoStatus => " with no HTTP status on stderr".into(),
            When::Shows(phrases) => format!(" with stderr showing {}", phrases.what),
        }
    }
}

impl Profile {
    /// Every stderr pattern the profile's rows look for, each once.
    pub fn phrase_patterns(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = Vec::new();
        for row in self.rows {
            if let When::Shows(phrases) = row.when {
                for p in phrases.patterns {
                    if !out.contains(p) {
                        out.push(p);
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    fn class(row: &Row) -> Class {
        match row.then {
            Then::Is(class, _) => class,
            Then::StatusTable => panic!("{} reads the status table", row.why),
        }
    }

    /// The row that decides `code` when stderr showed nothing.
    fn row_with_quiet_stderr(profile: &Profile, code: u8) -> &Row {
        profile
            .rows
            .iter()
            .find(|r| {
                codes_contain(r.codes, ExitStatus::new(code))
                    && matches!(r.when, When::Always | When::NoStatus)
            })
            .unwrap()
    }

    #[test]
    fn phrase_patterns_compile_and_are_listed_once() {
        for p in ALL {
            let patterns = p.phrase_patterns();
            regex::RegexSet::new(&patterns).unwrap();
            let mut unique = patterns.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), patterns.len(), "{}", p.name);
        }
        assert_eq!(RSYNC.phrase_patterns().len(), 4);
    }

    #[test]
    fn auto_picks_by_base_name() {
        assert_eq!(
            pick(ProfileName::Auto, OsStr::new("/usr/bin/curl")).name,
            "curl"
        );
        assert_eq!(pick(ProfileName::Auto, OsStr::new("scp")).name, "ssh");
        assert_eq!(
            pick(ProfileName::Auto, OsStr::new("./deploy.sh")).name,
            "generic"
        );
        assert_eq!(
            pick(ProfileName::Git, OsStr::new("./deploy.sh")).name,
            "git"
        );
    }

    #[test]
    fn spec_transient_codes_are_transient() {
        let cases: [(&Profile, &[u8]); 4] = [
            (&CURL, &[5, 6, 7, 16, 18, 28, 35, 52, 55, 56, 92, 95]),
            (&WGET, &[4]),
            (&SSH, &[255]),
            (&RSYNC, &[10, 12, 23, 24, 30, 35]),
        ];
        for (profile, codes) in cases {
            for &code in codes {
                let row = row_with_quiet_stderr(profile, code);
                assert_eq!(class(row), Class::Transient, "{} {code}", profile.name);
            }
        }
    }

    #[test]
    fn spec_permanent_codes_are_permanent() {
        let cases: [(&Profile, &[u8]); 3] = [
            (&CURL, &[3, 23, 26, 27, 43, 48, 51, 60, 77]),
            (&WGET, &[1, 2, 3, 5, 6, 7]),
            (
                &RSYNC,
                &[
                    1, 2, 3, 4, 5, 6, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 25,
                ],
            ),
        ];
        for (profile, codes) in cases {
            for &code in codes {
                let row = row_with_quiet_stderr(profile, code);
                assert_eq!(class(row), Class::Permanent, "{} {code}", profile.name);
            }
        }
    }

    #[test]
    fn generic_sysexits() {
        let class_of = |code| {
            class(
                GENERIC_EXITS
                    .iter()
                    .find(|r| codes_contain(r.codes, ExitStatus::new(code)))
                    .unwrap(),
            )
        };
        for code in [64, 65, 66, 67, 68, 70, 72, 73, 76, 77, 78, 126, 127] {
            assert_eq!(class_of(code), Class::Permanent, "{code}");
        }
        for code in [1, 2, 69, 71, 74, 75, 124, 255] {
            assert_eq!(class_of(code), Class::Transient, "{code}");
        }
        assert_eq!(class_of(0), Class::Success);
    }

    #[test]
    fn profiles_that_see_a_status_use_the_status_table() {
        for profile in [&CURL, &WGET, &GIT] {
            let table_rows = profile
                .rows
                .iter()
                .filter(|r| r.then == Then::StatusTable)
                .count();
            assert_eq!(table_rows, 1, "{}", profile.name);
            assert!(profile.status_pattern.is_some(), "{}", profile.name);
        }
    }

    #[test]
    fn shown_status_follows_the_status_table() {
        let v500 = shown_status(500);
        assert_eq!(
            (v500.class, v500.retry_cap),
            (Class::Transient, Some(http::RETRY_CAP_500))
        );
        for status in [408, 429, 502, 503, 504] {
            assert_eq!(shown_status(status).class, Class::Transient, "{status}");
        }
        for status in [200, 302, 400, 403, 404, 501, 505, 507, 599, 600] {
            assert_eq!(shown_status(status).class, Class::Permanent, "{status}");
        }
    }

    #[test]
    fn a_status_row_is_described_a_range_a_line() {
        let lines = CURL
            .rows
            .iter()
            .find(|r| r.then == Then::StatusTable)
            .unwrap()
            .describe("curl");
        assert!(
            lines.contains(&"curl exit 22 with stderr showing HTTP 500: transient, at most 2 retries \
                 (curl --fail: HTTP error; Internal Server Error: may be a passing fault, worth two more tries at most (RFC 9110 §15.6.1))"
                .to_string()),
            "{lines:#?}"
        );
        assert!(
            lines.iter().all(|l| !l.contains("X-RateLimit")),
            "{lines:#?}"
        );
    }

    #[test]
    fn status_patterns_compile() {
        for p in ALL {
            if let Some(pat) = p.status_pattern {
                regex::bytes::Regex::new(pat).unwrap();
            }
        }
    }
}
