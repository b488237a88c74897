//! The one way retry starts a process, for attempts and hooks alike: std's `Command`,
//! in a process group of its own, started by `sys::start` (on Unix with the signal
//! state retry inherited, but for the signal its timeout sends, the terminal's foreground when the attempt gets the terminal,
//! and the parent-death signal; on Windows suspended into a Job Object, then resumed).
//!
//! If the process cannot be started, the terminal is handed back to retry at once,
//! before the error goes anywhere. What the error means (not found, not executable,
//! out of processes or memory) is the caller's to say.

use std::ffi::OsString;
use std::io;

use crate::sys;

/// What one of the child's descriptors 0, 1 and 2 is.
pub(crate) enum Stdio {
    /// retry's own.
    Inherit,
    /// /dev/null.
    Null,
    /// This descriptor (retry keeps no copy once the child has started).
    Fd(sys::Owned),
    /// A new pipe; retry gets the other end.
    Piped,
}

impl From<Stdio> for std::process::Stdio {
    fn from(stdio: Stdio) -> Self {
        match stdio {
            Stdio::Inherit => std::process::Stdio::inherit(),
            Stdio::Null => std::process::Stdio::null(),
            Stdio::Fd(fd) => std::process::Stdio::from(fd),
            Stdio::Piped => std::process::Stdio::piped(),
        }
    }
}

/// The process to start: what runs, with which environment changes and descriptors.
pub(crate) struct Spec<'a> {
    /// The program (looked up in PATH unless it holds a `/`) and its arguments.
    pub argv: &'a [OsString],
    /// Variables set (`Some`) or removed (`None`) on top of retry's environment, in
    /// order: a later entry for the same name wins.
    pub env: Vec<(&'a str, Option<OsString>)>,
    pub stdin: Stdio,
    pub stdout: Stdio,
    pub stderr: Stdio,
    /// Take the terminal's foreground (stdin is retry's controlling terminal and
    /// retry is in its foreground).
    pub foreground: bool,
    /// The signal the process's timeout sends (`--signal` for an attempt, SIGTERM
    /// for a hook): it starts at its default even when retry inherited it ignored.
    pub timeout_signal: sys::Signal,
}

/// A started process and retry's ends of its piped streams.
pub(crate) struct Spawned {
    pub pid: i32,
    pub stdin: Option<sys::Owned>,
    pub stdout: Option<sys::Owned>,
    pub stderr: Option<sys::Owned>,
    /// The process as started, kept for the attempt's life: on Windows its handle keeps
    /// its pid from naming another process while the attempt is waited for by pid.
    pub process: sys::Started,
}

/// Starts `spec`'s process; `Err` is why it could not be started (the OS error of the
/// fork, the exec or a step between them).
pub(crate) fn spawn(spec: Spec<'_>) -> io::Result<Spawned> {
    let Some((program, args)) = spec.argv.split_first() else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "no command"));
    };
    let mut command = sys::new_command(program, args);
    for (name, value) in spec.env {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    command
        .stdin(spec.stdin)
        .stdout(spec.stdout)
        .stderr(spec.stderr);
    let mut process = sys::start(command, spec.foreground, spec.timeout_signal)?;
    let child = &mut process.child;
    Ok(Spawned {
        pid: child.id() as i32,
        stdin: child.stdin.take().map(sys::Owned::from),
        stdout: child.stdout.take().map(sys::Owned::from),
        stderr: child.stderr.take().map(sys::Owned::from),
        process,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::process::ExitStatus;

    fn argv(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    fn spec(argv: &[OsString]) -> Spec<'_> {
        Spec {
            argv,
            env: vec![],
            stdin: Stdio::Null,
            stdout: Stdio::Piped,
            stderr: Stdio::Null,
            foreground: false,
            timeout_signal: sys::Signal::SIGTERM,
        }
    }

    fn output(mut spawned: Spawned) -> (String, ExitStatus) {
        let mut text = String::new();
        std::fs::File::from(spawned.stdout.take().unwrap())
            .read_to_string(&mut text)
            .unwrap();
        (text, spawned.process.child.wait().unwrap())
    }

    #[cfg(unix)]
    #[test]
    fn runs_a_command_found_on_path_with_the_environment_changed() {
        let words = argv(&[
            "sh",
            "-c",
            "echo \"$RETRY_TEST_SET/${HOME+home}/$(ps -o pgid= -p $$)/$$\"",
        ]);
        let mut s = spec(&words);
        s.env = vec![
            ("RETRY_TEST_SET", Some("first".into())),
            ("HOME", None),
            ("RETRY_TEST_SET", Some("set".into())),
        ];
        let spawned = spawn(s).unwrap();
        let (text, status) = output(spawned);
        assert_eq!(status.code(), Some(0));
        let fields: Vec<&str> = text.trim().split('/').collect();
        assert_eq!(fields[..2], ["set", ""], "{text}");
        // Its own process group.
        assert_eq!(fields[2].trim(), fields[3], "{text}");
    }

    #[test]
    fn a_missing_or_unexecutable_command_is_an_error() {
        let words = argv(&["retry-test-no-such-command"]);
        let err = spawn(spec(&words)).err().unwrap();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        let err = spawn(spec(&argv(&["/etc/passwd"]))).err().unwrap();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
    }

    #[test]
    fn a_nul_byte_is_refused_before_anything_starts() {
        let words = vec![OsString::from("echo"), OsString::from("a\0b")];
        assert_eq!(
            spawn(spec(&words)).err().unwrap().kind(),
            io::ErrorKind::InvalidInput
        );
    }

    #[test]
    fn piped_stdin_reaches_the_child() {
        let words = argv(&["cat"]);
        let mut s = spec(&words);
        s.stdin = Stdio::Piped;
        let mut spawned = spawn(s).unwrap();
        let stdin = spawned.stdin.take().unwrap();
        std::io::Write::write_all(&mut std::fs::File::from(stdin), b"fed").unwrap();
        let (text, _) = output(spawned);
        assert_eq!(text, "fed");
    }
}
