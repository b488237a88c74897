//! Outcome → class, in the vocabulary of `domain` (`Class`, `Verdict`, `RetryCap`) that
//! every mode shares. The rules are tables with their sources, built from plain
//! settings (code sets, patterns, a profile name), never from the configuration:
//! [`profiles`] (tools' exit codes), [`http`] (statuses, methods, transport failures; the
//! one status table that profiles seeing a status use too), [`server_wait`] (rate-limit and
//! wait headers), [`control`] (the command's own word, rule 0) and [`endings`] (signals,
//! timeouts and retry's own stops). [`command`] applies them to a command's ending.
//! The engine only reads verdicts; it never inspects exit codes or statuses itself.

pub mod command;
pub mod control;
pub mod endings;
pub mod http;
pub mod profiles;
pub mod server_wait;
