//! The bash, zsh and fish completions from `retry --generate`, driven in the real
//! shells: bash interactively on a pseudo-terminal, where readline presses TAB (once
//! on its own and once with bash-completion loaded), zsh through its own zpty, and fish
//! with `complete -C`. Each line is completed in every shell; a fake `gitfoo` on PATH
//! with its own registered completion (and `plainfoo` with none) makes command names
//! and delegation deterministic.
//! A missing zsh, fish or bash-completion is skipped loudly, unless
//! RETRY_TEST_REQUIRE_SHELLS=1 (CI) makes them mandatory.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::{Terminal, generated, terminal};

const BASH_COMPLETION: &str = "/usr/share/bash-completion/bash_completion";

/// `gitfoo`'s own completion in each shell: two options retry does not have.
const GITFOO_OPTIONS: [&str; 2] = ["--verbose-foo", "--version-foo"];

#[derive(Clone, Copy, Debug)]
enum Shell {
    Bash,
    BashCompletion,
    Zsh,
    Fish,
}

const SHELLS: [Shell; 4] = [Shell::Bash, Shell::BashCompletion, Shell::Zsh, Shell::Fish];

/// A scratch directory with the generated scripts, `bin/gitfoo` and a file to name.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        // gitfoo has a completion of its own in every shell, plainfoo none.
        for name in ["gitfoo", "plainfoo"] {
            let path = bin.join(name);
            std::fs::write(&path, "#!/bin/sh\nexit 0\n").unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::create_dir_all(dir.path().join("zsh")).unwrap();
        for (kind, file) in [
            ("bash", "retry.bash"),
            ("zsh", "zsh/_retry"),
            ("fish", "retry.fish"),
        ] {
            std::fs::write(dir.path().join(file), generated(kind)).unwrap();
        }
        std::fs::write(dir.path().join("report-here.json"), "").unwrap();
        Fixture { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn search_path(&self) -> String {
        let bin = self.path("bin");
        format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }
}

/// Whether `shell` can run here; when it cannot, says so (or fails in CI).
fn available(shell: Shell) -> bool {
    let found = match shell {
        Shell::Bash => true,
        Shell::BashCompletion => Path::new(BASH_COMPLETION).exists(),
        Shell::Zsh => runs("zsh"),
        Shell::Fish => runs("fish"),
    };
    if !found {
        let required = std::env::var("RETRY_TEST_REQUIRE_SHELLS").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "{shell:?} is not installed and RETRY_TEST_REQUIRE_SHELLS=1"
        );
        crate::support::say_skipped(&format!(
            "{}: {shell:?} is not installed, so its completion is not tested; \
             RETRY_TEST_REQUIRE_SHELLS=1 makes this a failure",
            crate::support::current_test()
        ));
    }
    found
}

fn runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// What `shell` offers for `line` (the cursor at its end), one candidate per entry.
fn complete(shell: Shell, line: &str) -> Vec<String> {
    let fx = Fixture::new();
    let words = match shell {
        Shell::Bash => bash(&fx, line, false),
        Shell::BashCompletion => bash(&fx, line, true),
        Shell::Zsh => zsh(&fx, line),
        Shell::Fish => fish(&fx, line),
    };
    words.into_iter().filter(|w| !w.is_empty()).collect()
}

/// Runs `check` on what every available shell offers for `line`.
fn in_every_shell(line: &str, check: impl Fn(Shell, &[String])) {
    for shell in SHELLS {
        if available(shell) {
            check(shell, &complete(shell, line));
        }
    }
}

/// Types `line` and TAB into an interactive bash on a pty. The completion function is
/// wrapped so that it also writes COMPREPLY to a file once readline has called it.
fn bash(fx: &Fixture, line: &str, bash_completion: bool) -> Vec<String> {
    let out = fx.path("out");
    let ready = fx.path("ready");
    let mut setup = String::from("PS1= PROMPT_COMMAND=\n");
    if bash_completion {
        setup += &format!("source {BASH_COMPLETION}\n");
    }
    setup += &format!(
        "source {script}\n\
         _gitfoo() {{ COMPREPLY=($(compgen -W '{gitfoo}' -- \"$2\")); }}; complete -F _gitfoo gitfoo\n\
         _retry_capture() {{ _retry \"$@\"; printf '%s\\n' \"${{COMPREPLY[@]}}\" >{out}.part; mv {out}.part {out}; }}\n\
         complete -F _retry_capture retry\n\
         : >{ready}\n",
        script = fx.path("retry.bash").display(),
        gitfoo = GITFOO_OPTIONS.join(" "),
        out = out.display(),
        ready = ready.display(),
    );
    let mut cmd = Command::new("bash");
    cmd.args(["--norc", "--noprofile", "-i"])
        .env("PATH", fx.search_path())
        .env("INPUTRC", "/dev/null")
        .env("HISTFILE", "/dev/null")
        .env("TERM", "dumb");
    let mut session = Pty::spawn(cmd);
    session.type_text(&setup);
    wait_for(&ready, "bash to read the set-up lines");
    session.type_text(&format!("{line}\t"));
    wait_for(&out, &format!("bash to complete {line:?}"));
    session.end();
    lines(&std::fs::read_to_string(&out).unwrap())
}

/// A child process with stdin, stdout and stderr on a pseudo-terminal whose output
/// is drained in the background, so that the child never blocks writing.
struct Pty {
    child: std::process::Child,
    master: std::fs::File,
}

impl Pty {
    fn spawn(mut cmd: Command) -> Pty {
        let Terminal { master, slave } = terminal();
        let child = cmd
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave))
            .spawn()
            .unwrap();
        drop(cmd);
        let mut reader = master.try_clone().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // Reading the master ends with EIO once the child has closed the terminal.
            while reader.read(&mut buf).is_ok_and(|n| n > 0) {}
        });
        Pty { child, master }
    }

    fn type_text(&mut self, text: &str) {
        self.master.write_all(text.as_bytes()).unwrap();
    }

    fn end(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_for(file: &Path, what: &str) {
    let appeared = crate::support::wait_until(Duration::from_secs(20), || file.exists());
    assert!(appeared, "timed out waiting for {what}");
}

/// zsh completes `line` in an interactive zsh of its own (zpty) with `compadd` wrapped
/// to record every match it is given; the matches go to OUT.
const ZSH_DRIVER: &str = r#"
zmodload zsh/zpty || exit 2
dir=$1 line=$2 out=$3
zpty retryz zsh -f -i
zpty -w retryz "PS1='' RPS1=''; unsetopt autolist listbeep beep"
zpty -w retryz "fpath=(${(q)dir} \$fpath); autoload -Uz compinit; compinit -u -D"
zpty -w retryz "_gitfoo() { _arguments '--verbose-foo[verbose]' '--version-foo[version]' }; compdef _gitfoo gitfoo"
zpty -w retryz "compadd() { if (( \${@[(I)-[OAD]*]} )); then builtin compadd \"\$@\"; return; fi; local -a hits; builtin compadd -A hits \"\$@\"; print -rl -- \$hits >>${(q)out}.part; builtin compadd \"\$@\" }"
zpty -w retryz "_capture() { zle complete-word; mv ${(q)out}.part ${(q)out} 2>/dev/null || : >${(q)out} }; zle -N _capture; bindkey '^I' _capture"
zpty -w -n retryz "$line"$'\t'
for i in {1..400}; do
    while zpty -rt retryz chunk 2>/dev/null; do :; done
    [[ -e $out ]] && break
    sleep 0.05
done
zpty -d retryz
[[ -e $out ]] || { print -u2 "zsh did not complete the line"; exit 1; }
"#;

fn zsh(fx: &Fixture, line: &str) -> Vec<String> {
    let out = fx.path("out");
    let status = Command::new("zsh")
        .args(["-f", "-c", ZSH_DRIVER, "zsh"])
        .arg(fx.path("zsh"))
        .arg(line)
        .arg(&out)
        .env("PATH", fx.search_path())
        .env("HOME", fx.path(""))
        .status()
        .unwrap();
    assert!(status.success(), "zsh failed to complete {line:?}");
    lines(&std::fs::read_to_string(&out).unwrap())
}

fn fish(fx: &Fixture, line: &str) -> Vec<String> {
    let script = format!(
        "source {}; complete -c gitfoo -l verbose-foo; complete -c gitfoo -l version-foo; complete -C {}",
        fx.path("retry.fish").display(),
        fish_quote(line),
    );
    let out = Command::new("fish")
        .args(["--no-config", "-c", &script])
        .env("PATH", fx.search_path())
        .env("HOME", fx.path(""))
        .env("XDG_CONFIG_HOME", fx.path("config"))
        .env("XDG_DATA_HOME", fx.path("data"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "fish: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Each line is a candidate, then a tab and its description.
    lines(&String::from_utf8(out.stdout).unwrap())
        .into_iter()
        .map(|l| l.split('\t').next().unwrap().to_string())
        .collect()
}

fn fish_quote(text: &str) -> String {
    format!("'{}'", text.replace('\\', r"\\").replace('\'', r"\'"))
}

fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_string).collect()
}

fn has(words: &[String], word: &str) -> bool {
    words.iter().any(|w| w == word)
}

#[test]
fn an_option_prefix_completes_retrys_option() {
    in_every_shell("retry --ji", |shell, words| {
        assert_eq!(words, ["--jitter"], "{shell:?}");
    });
}

#[test]
fn an_options_value_completes_from_its_choices() {
    in_every_shell("retry --jitter ", |shell, words| {
        let mut words = words.to_vec();
        words.sort();
        assert_eq!(
            words,
            ["decorrelated", "equal", "full", "none"],
            "{shell:?}"
        );
    });
    in_every_shell("retry -q --log-format j", |shell, words| {
        assert_eq!(words, ["json"], "{shell:?}");
    });
}

#[test]
fn a_value_after_equals_completes_from_its_choices() {
    in_every_shell("retry --backoff=l", |shell, words| {
        // fish offers the whole word; bash and zsh what follows the '='.
        let expected = if matches!(shell, Shell::Fish) {
            "--backoff=linear"
        } else {
            "linear"
        };
        assert_eq!(words, [expected], "{shell:?}");
    });
}

#[test]
fn file_names_complete_for_file_options_and_for_commands_without_completion() {
    let fx = Fixture::new();
    let prefix = fx.path("report-h");
    for line in [
        format!("retry --report {}", prefix.display()),
        format!("retry -- plainfoo {}", prefix.display()),
    ] {
        in_every_shell(&line, |shell, words| {
            // zsh's _files offers the part after the last slash.
            assert!(
                words.iter().any(|w| w.ends_with("report-here.json")),
                "{shell:?} {line:?}: {words:?}"
            );
        });
    }
}

#[test]
fn the_first_operand_completes_command_names() {
    for line in [
        "retry gitf",
        "retry -- gitf",
        "retry -a 3 --jitter equal gitf",
        "retry -qj none gitf",
    ] {
        in_every_shell(line, |shell, words| {
            assert!(has(words, "gitfoo"), "{shell:?} {line:?}: {words:?}");
            assert!(
                words.iter().all(|w| !w.starts_with('-')),
                "{shell:?} {line:?}: {words:?}"
            );
        });
    }
}

#[test]
fn the_commands_arguments_are_its_own_completion() {
    for line in [
        "retry -- gitfoo --ver",
        "retry gitfoo --ver",
        "retry -a 3 --stdin=null gitfoo --ver",
        "retry --delay 1s -- gitfoo -x --ver",
    ] {
        in_every_shell(line, |shell, words| {
            let mut words = words.to_vec();
            words.sort();
            assert_eq!(words, GITFOO_OPTIONS, "{shell:?} {line:?}");
        });
    }
}

#[test]
fn the_commands_words_never_get_retrys_options() {
    in_every_shell("retry -- gitfoo --ver", |shell, words| {
        assert!(
            !has(words, "--verbose") && !has(words, "--version"),
            "{shell:?}"
        );
    });
    in_every_shell("retry -- sh --at", |shell, words| {
        assert!(!has(words, "--attempts"), "{shell:?}: {words:?}");
    });
}

#[test]
fn options_follow_a_url_and_nothing_else_does() {
    // Options after the URL, as curl takes them (README, "Usage").
    for line in [
        "retry http://127.0.0.1:8080/x --ver",
        "retry -s HTTPS://127.0.0.1/x -o out --ver",
        "retry -a 3 http://127.0.0.1/ -H 'X-A: 1' --ver",
    ] {
        in_every_shell(line, |shell, words| {
            let mut words = words.to_vec();
            words.sort();
            assert_eq!(words, ["--verbose", "--version"], "{shell:?} {line:?}");
        });
    }
    in_every_shell("retry http://127.0.0.1/x --jitter ", |shell, words| {
        assert!(has(words, "decorrelated"), "{shell:?}: {words:?}");
    });
    let fx = Fixture::new();
    let line = format!(
        "retry http://127.0.0.1/x -o {}",
        fx.path("report-h").display()
    );
    in_every_shell(&line, |shell, words| {
        // zsh's _files offers the part after the last slash.
        assert!(
            words.iter().any(|w| w.ends_with("report-here.json")),
            "{shell:?}: {words:?}"
        );
    });
    // A second operand, or anything after -- (where the URL is a command's word), gets
    // nothing: one run is one request.
    for line in [
        "retry http://127.0.0.1/x gitf",
        "retry http://127.0.0.1/x -s gitf",
        "retry http://127.0.0.1/x -- gitf",
        "retry -- https://127.0.0.1/ -",
    ] {
        in_every_shell(line, |shell, words| {
            assert!(words.is_empty(), "{shell:?} {line:?}: {words:?}");
        });
    }
}

#[test]
fn generate_is_never_offered() {
    for kind in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = String::from_utf8(generated(kind)).unwrap();
        assert!(
            !script.contains("--generate"),
            "{kind} script offers --generate"
        );
    }
    for line in ["retry --ge", "retry --", "retry -"] {
        in_every_shell(line, |shell, words| {
            assert!(
                words.iter().all(|w| !w.contains("generate")),
                "{shell:?} {line:?}"
            );
        });
    }
    in_every_shell("retry --", |shell, words| {
        assert!(
            has(words, "--max-delay") && has(words, "--version"),
            "{shell:?}: {words:?}"
        );
    });
}

#[test]
fn a_url_target_is_offered_no_file_names() {
    for line in [
        "retry http://",
        "retry https://",
        "retry -s http://127.0.0.1",
        "retry -- https://",
        "retry -a 3 http://localhost:8080/",
    ] {
        in_every_shell(line, |shell, words| {
            assert!(words.is_empty(), "{shell:?} {line:?}: {words:?}");
        });
    }
}

/// Every option with a fixed set of values offers that set, from clap's possible values.
#[test]
fn fixed_value_sets_are_offered() {
    let methods = [
        "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE",
    ];
    let cases: [(&str, &[&str]); 6] = [
        ("retry -X ", &methods),
        ("retry --request ", &methods),
        (
            "retry --backoff ",
            &["constant", "exponential", "fibonacci", "linear"],
        ),
        (
            "retry --jitter ",
            &["decorrelated", "equal", "full", "none"],
        ),
        (
            "retry --profile ",
            &["auto", "curl", "generic", "git", "rsync", "ssh", "wget"],
        ),
        ("retry --catch-up ", &["all", "latest", "none"]),
    ];
    for (line, expected) in cases {
        in_every_shell(line, |shell, words| {
            let mut words = words.to_vec();
            words.sort();
            assert_eq!(words, expected, "{shell:?} {line:?}");
        });
    }
    in_every_shell("retry -X P", |shell, words| {
        let mut words = words.to_vec();
        words.sort();
        assert_eq!(words, ["PATCH", "POST", "PUT"], "{shell:?}");
    });
}
