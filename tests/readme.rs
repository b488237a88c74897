//! The README's examples, and those of docs/, still parse: every `retry …` in their code
//! blocks (shell lines, crontab lines, CI steps, the Dockerfile's ENTRYPOINT and the
//! Kubernetes `args:`) runs with `--dry-run`, which runs nothing. Names never leave the
//! machine: each example runs in a private mount namespace whose /etc/hosts maps every
//! host the examples name to 127.0.0.2, and whose resolv.conf points at the test's own
//! nameserver, which must hear no question at all. Besides: the first screen names the packages that
//! `.ci/install-packages` installs, and every link between the README, CONTRIBUTING.md,
//! BENCHMARKS.md and docs/ reaches a file and a heading.

use std::collections::BTreeSet;

use crate::support::dns::Nameserver;
use crate::support::private_etc::PrivateEtc;
use crate::support::retry;

/// A fenced code block of the README: its language and its lines.
struct Block {
    lang: String,
    lines: Vec<String>,
}

fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for line in text.lines() {
        let fence = line.trim_start().strip_prefix("```");
        match (fence, open.take()) {
            (Some(_), Some(block)) => out.push(block),
            (Some(lang), None) => {
                open = Some(Block {
                    lang: lang.trim().to_string(),
                    lines: Vec::new(),
                });
            }
            (None, Some(mut block)) => {
                block.lines.push(line.to_string());
                open = Some(block);
            }
            (None, None) => {}
        }
    }
    out
}

/// A shell line's simple commands, as words: quotes removed as sh removes them
/// (`$(…)` and variables stay literal), split at `|`, `&&`, `||`, `;` and `&`, with
/// redirections and comments dropped.
fn simple_commands(line: &str) -> Vec<Vec<String>> {
    let mut commands = vec![Vec::new()];
    let mut word: Option<String> = None;
    let mut chars = line.chars().peekable();
    let mut skip_next_word = false;
    let end_word = |word: &mut Option<String>, commands: &mut Vec<Vec<String>>, skip: &mut bool| {
        if let Some(w) = word.take() {
            if *skip {
                *skip = false;
            } else {
                commands.last_mut().unwrap().push(w);
            }
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    w.push(q);
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' if matches!(chars.peek(), Some('"' | '\\' | '$' | '`')) => {
                            w.push(chars.next().unwrap());
                        }
                        _ => w.push(q),
                    }
                }
            }
            '\\' => {
                if let Some(n) = chars.next() {
                    word.get_or_insert_with(String::new).push(n);
                }
            }
            '#' if word.is_none() => break,
            c if c.is_whitespace() => end_word(&mut word, &mut commands, &mut skip_next_word),
            '|' | ';' | '&' => {
                end_word(&mut word, &mut commands, &mut skip_next_word);
                if matches!(chars.peek(), Some('|' | '&')) {
                    chars.next();
                }
                commands.push(Vec::new());
            }
            '>' | '<' => {
                // `2>`, `>file`, `> file`: the target is no word of the command.
                if word
                    .as_deref()
                    .is_some_and(|w| w.chars().all(|d| d.is_ascii_digit()))
                {
                    word = None;
                }
                end_word(&mut word, &mut commands, &mut skip_next_word);
                while chars.peek() == Some(&'>') || chars.peek() == Some(&'&') {
                    chars.next();
                }
                if chars.peek().is_some_and(|n| n.is_whitespace()) {
                    skip_next_word = true;
                } else {
                    word = Some(String::new());
                    skip_next_word = true;
                }
            }
            _ => word.get_or_insert_with(String::new).push(c),
        }
    }
    end_word(&mut word, &mut commands, &mut skip_next_word);
    commands.retain(|c| !c.is_empty());
    commands
}

/// `retry`'s arguments in a simple command, if it runs retry with an option.
fn retry_args(words: &[String]) -> Option<Vec<String>> {
    let at = words
        .iter()
        .position(|w| w == "retry" || w.ends_with("/retry"))?;
    let rest = &words[at + 1..];
    rest.first()
        .filter(|w| w.starts_with('-'))
        .map(|_| rest.to_vec())
}

/// Every `retry …` example of the README, as its arguments.
fn examples(readme: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for block in blocks(readme) {
        if block.lang == "sql" || block.lang == "text" || block.lang == "crontab" {
            continue;
        }
        // Shell lines, joined where they continue on the next one.
        let joined = block.lines.join("\n").replace("\\\n", " ");
        for line in joined.lines() {
            let line = line.trim_start();
            if let Some(array) = line.strip_prefix("ENTRYPOINT ") {
                let words: Vec<String> = serde_json::from_str(array).expect(array);
                out.extend(retry_args(&words));
                continue;
            }
            let line = line.strip_prefix("- run: ").unwrap_or(line);
            out.extend(simple_commands(line).iter().filter_map(|c| retry_args(c)));
        }
        out.extend(kubernetes_args(&block));
    }
    out
}

/// A Kubernetes container whose `command` is retry: the items of its `args:` list.
fn kubernetes_args(block: &Block) -> Option<Vec<String>> {
    let command = block
        .lines
        .iter()
        .position(|l| l.trim() == "command: [\"retry\"]")?;
    let args = command
        + 1
        + block.lines[command + 1..]
            .iter()
            .position(|l| l.trim() == "args:")?;
    let items = block.lines[args + 1..]
        .iter()
        .map_while(|l| l.trim_start().strip_prefix("- "))
        .map(str::to_string)
        .collect();
    Some(items)
}

/// The host names that URLs in `args` name (`scheme://[user@]host[:port]…`).
fn hosts(args: &[String]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for arg in args {
        let mut rest = arg.as_str();
        while let Some(at) = rest.find("://") {
            rest = &rest[at + 3..];
            let authority = rest
                .split(['/', '?', '#', '\'', '"', ' '])
                .next()
                .unwrap_or("");
            let host = authority
                .rsplit('@')
                .next()
                .unwrap_or("")
                .split(':')
                .next()
                .unwrap_or("");
            if !host.is_empty()
                && host.parse::<std::net::IpAddr>().is_err()
                && !host.starts_with('[')
            {
                out.insert(host.to_ascii_lowercase());
            }
        }
    }
    out
}

#[test]
fn shell_lines_split_as_sh_splits_them() {
    let words = |line: &str| simple_commands(line);
    assert_eq!(
        words(r#"pg_dump mydb | retry -- aws s3 cp - "s3://b/x.sql" 2>/dev/null # copy"#),
        vec![
            vec!["pg_dump", "mydb"],
            vec!["retry", "--", "aws", "s3", "cp", "-", "s3://b/x.sql"],
        ]
    );
    assert_eq!(
        words(r#"a && retry --once "r-$(date +\%F)" -- sh -c 'x "$y"; z' > out"#),
        vec![
            vec!["a"],
            vec![
                "retry",
                "--once",
                r"r-$(date +\%F)",
                "--",
                "sh",
                "-c",
                r#"x "$y"; z"#
            ],
        ]
    );
}

/// The README and every page of docs/, as (path, text).
fn documents() -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = vec![root.join("README.md")];
    let mut pages: Vec<_> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    paths.extend(pages);
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let name = path.strip_prefix(root).unwrap().display().to_string();
            (name, text)
        })
        .collect()
}

#[test]
fn every_readme_example_parses_with_dry_run() {
    let examples: Vec<Vec<String>> = documents()
        .iter()
        .flat_map(|(_, text)| examples(text))
        .collect();
    // 27 when this was written: a change to the extraction must not lose them quietly.
    assert!(
        examples.len() >= 25,
        "only {} examples found: {examples:#?}",
        examples.len()
    );
    let names: BTreeSet<String> = examples.iter().flat_map(|a| hosts(a)).collect();
    let nameserver = Nameserver::refusing();
    let hosts_file = format!(
        "127.0.0.1 localhost\n127.0.0.2 {}\n",
        names.iter().cloned().collect::<Vec<_>>().join(" ")
    );
    let resolv = format!("nameserver {}\n", nameserver.ip());
    let Some(etc) = PrivateEtc::new("readme examples", &hosts_file, &resolv) else {
        return;
    };
    let mut failures = Vec::new();
    for args in &examples {
        let dir = tempfile::tempdir().unwrap();
        // The files an example reads at parse time (`-H @FILE`, `--json @FILE`, `-T FILE`),
        // made up.
        let uploads = args
            .windows(2)
            .filter(|w| {
                matches!(w[0].as_str(), "-T" | "--upload-file")
                    || w[0].ends_with('T') && w[0].starts_with('-') && !w[0].starts_with("--")
            })
            .map(|w| w[1].clone());
        for name in uploads {
            if name != "-" && !name.starts_with('/') {
                std::fs::write(dir.path().join(&name), "upload").unwrap();
            }
        }
        for name in args.iter().filter_map(|a| a.strip_prefix('@')) {
            if name != "-" && !name.starts_with('/') {
                let text = if name.ends_with(".json") {
                    "{}"
                } else {
                    "X-Example: 1\n"
                };
                std::fs::write(dir.path().join(name), text).unwrap();
            }
        }
        // A crontab an example names, made up: the crontab blocks are checked below.
        let tab = dir.path().join("crontab.example");
        std::fs::write(&tab, "@daily true\n").unwrap();
        let tab = tab.to_string_lossy().into_owned();
        let mut all: Vec<String> = Vec::new();
        let mut words = args.iter();
        while let Some(word) = words.next() {
            if word == "--crontab" {
                words.next();
                all.extend(["--crontab".to_string(), tab.clone()]);
            } else if word.starts_with("--crontab=") {
                all.push(format!("--crontab={tab}"));
            } else {
                all.push(word.clone());
            }
        }
        if !all.iter().any(|a| a == "--dry-run") {
            all.insert(0, "--dry-run".into());
        }
        let out = etc
            .retry()
            .args(&all)
            .current_dir(dir.path())
            .env("HOME", dir.path())
            .env("XDG_STATE_HOME", dir.path())
            .run();
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status != 0 || !said.contains("retry dry run: nothing is run") {
            failures.push(format!(
                "retry {}\n  exit {}: {}",
                all.join(" "),
                out.status,
                out.stderr.trim()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "README examples that no longer parse:\n{}",
        failures.join("\n")
    );
    assert!(
        nameserver.questions().is_empty(),
        "a name left the examples' /etc/hosts: {:?}",
        nameserver.questions()
    );
}

/// The README's first screen installs, runs the example and the tests, and names the
/// packages the suite uses: the very list `.ci/install-packages` installs, which `.ci/run`
/// runs first.
#[test]
fn the_first_screen_names_the_packages_the_script_installs() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let first = &blocks(&readme)[0];
    let text = first.lines.join("\n");
    for command in [
        "cargo install --locked",
        "sudo .ci/install-packages",
        "cargo test --locked",
    ] {
        assert!(
            text.contains(command),
            "the first block lacks {command}:\n{text}"
        );
    }
    let comment: String = first
        .lines
        .iter()
        .filter_map(|l| l.strip_prefix("# "))
        .collect::<Vec<_>>()
        .join(" ");
    let named: Vec<&str> = comment
        .split_once("packages: ")
        .expect("the first block names the packages")
        .1
        .split_once('.')
        .unwrap()
        .0
        .split_whitespace()
        .collect();
    let out = std::process::Command::new("bash")
        .args([&format!("{root}/.ci/install-packages"), "--list"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = String::from_utf8(out.stdout).unwrap();
    assert_eq!(named, listed.split_whitespace().collect::<Vec<_>>());
    let ci = std::fs::read_to_string(format!("{root}/.ci/run")).unwrap();
    assert!(
        ci.lines().any(|l| l.trim() == ".ci/install-packages"),
        ".ci/run no longer runs .ci/install-packages"
    );
}

/// A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The lines of a Markdown file outside its fenced code blocks.
fn prose_lines(text: &str) -> Vec<&str> {
    let mut fenced = false;
    text.lines()
        .filter(|line| {
            if line.starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .collect()
}

/// The anchors of a Markdown file's headings.
fn anchors(text: &str) -> BTreeSet<String> {
    prose_lines(text)
        .into_iter()
        .filter(|line| line.starts_with('#'))
        .map(|line| anchor(line.trim_start_matches('#')))
        .collect()
}

/// The targets of a Markdown file's `[text](target)` links outside code blocks, a link
/// broken across lines (`[What holds under\nfaults](…)`) included.
fn link_targets(text: &str) -> Vec<String> {
    let prose = prose_lines(text).join(" ");
    let mut out = Vec::new();
    let mut rest = prose.as_str();
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let end = rest.find(')').unwrap_or(rest.len());
        out.push(rest[..end].to_string());
        rest = &rest[end..];
    }
    out
}

/// Every link between the README, CONTRIBUTING.md, BENCHMARKS.md and docs/ reaches a file that exists
/// and, when it names one, a heading of that file: moving text between them must not
/// leave a reader at a dead end.
#[test]
fn every_link_between_the_documents_reaches_a_file_and_a_heading() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut documents = documents();
    for name in ["BENCHMARKS.md", "CONTRIBUTING.md"] {
        let text = std::fs::read_to_string(root.join(name)).unwrap();
        documents.push((name.into(), text));
    }
    let mut broken = Vec::new();
    let mut checked = 0;
    for (name, text) in &documents {
        let dir = root.join(name).parent().unwrap().to_path_buf();
        for target in link_targets(text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, fragment) = target.split_once('#').unwrap_or((&target, ""));
            let file = if path.is_empty() {
                root.join(name)
            } else {
                dir.join(path)
            };
            let Ok(linked) = std::fs::read_to_string(&file) else {
                broken.push(format!("{name}: {target}: no such file"));
                continue;
            };
            if !fragment.is_empty() && !anchors(&linked).contains(fragment) {
                broken.push(format!("{name}: {target}: no such heading"));
            }
        }
    }
    assert!(checked >= 30, "only {checked} links found");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// Every crontab of the README and docs/ (a `crontab` code block) reads with
/// `retry --crontab FILE --dry-run`.
#[test]
fn every_documented_crontab_reads() {
    let tabs: Vec<Block> = documents()
        .iter()
        .flat_map(|(_, text)| blocks(text))
        .filter(|b| b.lang == "crontab")
        .collect();
    assert!(!tabs.is_empty(), "docs/schedules.md shows a crontab");
    for block in tabs {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("crontab");
        std::fs::write(&file, block.lines.join("\n") + "\n").unwrap();
        let out = retry()
            .arg("--crontab")
            .arg(&file)
            .args(["--dry-run", "--state"])
            .arg(dir.path().join("state"))
            .run();
        assert_eq!(out.status, 0, "{}\n{}", block.lines.join("\n"), out.stderr);
    }
}
