//! The README's examples, and those of docs/, still parse: every `retry …` in their code
//! blocks (shell lines, crontab lines, CI steps, the Dockerfile's ENTRYPOINT and the
//! Kubernetes `args:`) runs with `--dry-run`, which runs nothing. Names never leave the
//! machine: each example runs in a private mount namespace whose /etc/hosts maps every
//! host the examples name to 127.0.0.2, and whose resolv.conf points at the test's own
//! nameserver, which must hear no question at all. A block marked `sh dry-run-later`
//! shows a flag still being built: its examples say SKIPPED until they parse, and then
//! fail until the mark is removed. A `crontab` block whose first line is `# NAME` is
//! written as the file NAME beside every example, for `--crontab NAME` to read. Besides: the README installs, tests and stays a
//! guide (about 400 lines, no machine's paths); CONTRIBUTING.md names the packages that
//! `.ci/install-packages` installs; every option table agrees with `--help`; and every
//! link between the README, CONTRIBUTING.md, BENCHMARKS.md and docs/ reaches a file and
//! a heading.

use std::collections::BTreeSet;

use crate::support::dns::Nameserver;
use crate::support::http_server::{Reply, Server};
use crate::support::private_etc::PrivateEtc;
use crate::support::{retry, run, say_skipped};

/// The info-string word that marks a block whose examples cannot be dry-run yet.
const LATER: &str = "dry-run-later";

/// A fenced code block of the README: its language and its lines.
pub struct Block {
    pub lang: String,
    pub lines: Vec<String>,
}

/// The fenced code blocks of a Markdown text, in order (also read by `release`).
pub fn blocks(text: &str) -> Vec<Block> {
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

/// `retry`'s arguments in a simple command, if it runs retry with an option (and not
/// only `--version`, which prints it and runs nothing).
fn retry_args(words: &[String]) -> Option<Vec<String>> {
    let at = words
        .iter()
        .position(|w| w == "retry" || w.ends_with("/retry"))?;
    let rest = &words[at + 1..];
    // `retry --version` asks retry about itself: there is nothing to dry-run.
    if matches!(rest, [w] if w == "--version" || w == "-V") {
        return None;
    }
    rest.first()
        .filter(|w| w.starts_with('-') && rest != ["--version"])
        .map(|_| rest.to_vec())
}

/// Every `retry …` example of a document, as its arguments: those of blocks marked
/// `dry-run-later` when `later`, the others when not.
fn examples(readme: &str, later: bool) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for block in blocks(readme) {
        let mut info = block.lang.split_whitespace();
        let lang = info.next().unwrap_or("");
        if lang == "sql" || lang == "text" || info.any(|w| w == LATER) != later {
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

/// The files the documents show whole: a `crontab` block whose first line is
/// `# NAME` is the file NAME, which an example such as `retry --crontab NAME` reads.
fn shown_files(text: &str) -> Vec<(String, String)> {
    blocks(text)
        .into_iter()
        .filter(|b| b.lang == "crontab")
        .filter_map(|b| {
            let name = b.lines.first()?.strip_prefix("# ")?.trim().to_string();
            let plain = !name.is_empty() && !name.contains([' ', '/']);
            plain.then(|| (name, b.lines.join("\n") + "\n"))
        })
        .collect()
}

#[test]
fn crontab_blocks_named_in_their_first_line_are_files() {
    let text = "```crontab\n# jobs.crontab\n0 3 * * * make-report\n```\n\n```crontab\n# every night\n0 3 * * * retry -- x\n```\n";
    assert_eq!(
        shown_files(text),
        vec![(
            "jobs.crontab".to_string(),
            "# jobs.crontab\n0 3 * * * make-report\n".to_string()
        )]
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
    let later: Vec<Vec<String>> = documents()
        .iter()
        .flat_map(|(_, text)| examples(text, true))
        .collect();
    let examples: Vec<Vec<String>> = documents()
        .iter()
        .flat_map(|(_, text)| examples(text, false))
        .collect();
    let files: Vec<(String, String)> = documents()
        .iter()
        .flat_map(|(_, text)| shown_files(text))
        .collect();
    // 27 when this was written: a change to the extraction must not lose them quietly.
    assert!(
        examples.len() >= 25,
        "only {} examples found: {examples:#?}",
        examples.len()
    );
    let names: BTreeSet<String> = examples
        .iter()
        .chain(&later)
        .flat_map(|a| hosts(a))
        .collect();
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
    for (args, marked) in examples
        .iter()
        .map(|a| (a, false))
        .chain(later.iter().map(|a| (a, true)))
    {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in &files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
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
        let parses = out.status == 0 && said.contains("retry dry run: nothing is run");
        if marked && parses {
            failures.push(format!(
                "retry {}\n  parses now: remove `{LATER}` from its block",
                all.join(" ")
            ));
        } else if marked {
            say_skipped(&format!(
                "readme: not dry-run yet ({LATER}): retry {}: {}",
                all.join(" "),
                out.stderr.trim()
            ));
        } else if !parses {
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

/// The README's first screen warns about Debian's other `retry` before any command, and
/// its first block installs from a release's tarball (checked, unpacked, put first on
/// PATH) and asks `retry --version`; `cargo install` from a checkout is named too, and a
/// block of its own runs the tests.
#[test]
fn the_readme_installs_and_runs_the_tests() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let before_first_block = &readme[..readme.find("```").unwrap()];
    assert!(
        before_first_block.contains("Debian") && before_first_block.contains("retry --version"),
        "the Debian warning does not come before the first block"
    );
    let blocks = blocks(&readme);
    let first = blocks[0].lines.join("\n");
    for step in [
        "sha256sum -c",
        "tar -xzf",
        "export PATH=",
        "hash -r",
        "retry --version",
    ] {
        assert!(
            first.contains(step),
            "the first block does not {step}:\n{first}"
        );
    }
    assert!(
        first.contains(&format!("v={} ", env!("CARGO_PKG_VERSION"))),
        "the first block installs another version than Cargo.toml's:\n{first}"
    );
    assert!(
        readme.contains("`cargo install --locked --path .`"),
        "the README does not say how to install from a checkout"
    );
    assert!(
        blocks.iter().any(|b| b.lines == ["cargo test --locked"]),
        "no block of the README is the test command"
    );
}

/// CONTRIBUTING.md names the packages the suite uses: the very list
/// `.ci/install-packages` installs, which `.ci/run` runs first.
#[test]
fn contributing_names_the_packages_the_script_installs() {
    let root = env!("CARGO_MANIFEST_DIR");
    let contributing = std::fs::read_to_string(format!("{root}/CONTRIBUTING.md")).unwrap();
    let block = blocks(&contributing)
        .into_iter()
        .find(|b| b.lines.iter().any(|l| l == "sudo .ci/install-packages"))
        .expect("CONTRIBUTING.md has a block that runs sudo .ci/install-packages");
    let comment: String = block
        .lines
        .iter()
        .filter_map(|l| l.strip_prefix("# "))
        .collect::<Vec<_>>()
        .join(" ");
    let named: Vec<&str> = comment
        .split_once("packages: ")
        .expect("the block names the packages")
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

/// The README is a guide: about 400 lines, naming no machine's paths (a home, a build
/// tree, a system directory) and linking to nothing outside the repository.
#[test]
fn the_readme_is_a_short_guide_of_this_repository() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines <= 400, "the README has {lines} lines");
    let machine = [
        "/home/", "/root/", "/Users/", "/work/", "/usr/", "/opt/", "/tmp/", "/mnt/", "/nix/",
    ];
    for (n, line) in readme.lines().enumerate() {
        for prefix in machine {
            assert!(
                !line.contains(prefix),
                "README.md:{}: names a machine path ({prefix}): {line}",
                n + 1
            );
        }
    }
    for target in link_targets(&readme) {
        if target.contains("://") {
            continue;
        }
        let path = target.split('#').next().unwrap();
        assert!(
            !path.starts_with('/') && !path.starts_with(".."),
            "README.md links outside the repository: {target}"
        );
    }
}

/// The help entry of `flag` in `--help`: its first line and those under it, up to the
/// next option (indented at most six columns) or heading (not indented).
fn help_entry<'a>(help: &'a str, flag: &str) -> Option<Vec<&'a str>> {
    let lines: Vec<&str> = help.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let option = |l: &str| indent(l) <= 6 && l.trim_start().starts_with('-');
    let heading = |l: &str| indent(l) == 0 && !l.is_empty();
    let starts = |l: &str| {
        option(l)
            && l.trim_start()
                .split([' ', ',', '=', '['])
                .any(|w| w == flag)
    };
    let at = lines.iter().position(|l| starts(l))?;
    let rest = lines[at + 1..]
        .iter()
        .take_while(|l| !option(l) && !heading(l))
        .copied();
    Some(std::iter::once(lines[at]).chain(rest).collect())
}

/// The values a help entry lists (`- NAME:` lines, or `[possible values: …]`).
fn possible_values(entry: &str) -> BTreeSet<String> {
    let listed = entry
        .split("\n")
        .filter_map(|l| l.trim_start().strip_prefix("- "))
        .filter_map(|l| l.split_once(':'))
        .map(|(name, _)| name.trim().to_string());
    let inline = entry
        .split_once("[possible values: ")
        .and_then(|(_, v)| v.split_once(']'))
        .map(|(v, _)| {
            v.split(", ")
                .map(|s| s.trim().to_string())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    listed.chain(inline).collect()
}

/// Every table of options in the README and docs/ (a table whose first column is
/// `option`) names options `--help` has, with the values `--help` offers, and where it
/// has a `default` column, each default `--help` shows is the table's.
#[test]
fn option_tables_agree_with_help() {
    let help = run(&["--help"]);
    assert_eq!(help.status, 0, "{}", help.stderr);
    let help = String::from_utf8(help.stdout).unwrap();
    let mut rows = 0;
    let mut wrong = Vec::new();
    for (name, text) in documents() {
        let mut columns: Option<Vec<String>> = None;
        for line in prose_lines(&text) {
            let Some(inner) = line.trim().strip_prefix('|') else {
                columns = None;
                continue;
            };
            let cells: Vec<String> = inner
                .trim_end_matches('|')
                .split(" | ")
                .map(|c| c.trim().trim_matches('|').trim().to_string())
                .collect();
            let Some(header) = &columns else {
                columns = Some(cells);
                continue;
            };
            if header[0] != "option" || cells[0].starts_with("---") {
                continue;
            }
            let Some(flag) = cells[0]
                .trim_matches('`')
                .split([' ', '`'])
                .next()
                .filter(|f| f.starts_with('-'))
            else {
                wrong.push(format!("{name}: {line}: no option in the first column"));
                continue;
            };
            rows += 1;
            let Some(entry) = help_entry(&help, flag) else {
                wrong.push(format!("{name}: {flag} is not in --help"));
                continue;
            };
            let values: Vec<String> = cells[0]
                .replace('`', "")
                .split_whitespace()
                .nth(1)
                .filter(|v| v.contains("\\|"))
                .map(|v| v.split("\\|").map(str::to_string).collect())
                .unwrap_or_default();
            let offered = possible_values(&entry.join("\n"));
            for value in &values {
                if !offered.contains(value) {
                    wrong.push(format!(
                        "{name}: {flag}: --help offers no value {value:?} ({offered:?})"
                    ));
                }
            }
            let joined = entry
                .join(" ")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            let shown = joined
                .split_once("[default: ")
                .and_then(|(_, d)| d.split_once(']'))
                .map(|(d, _)| d.to_string());
            let column = header.iter().position(|h| h == "default");
            if let (Some(default), Some(at)) = (shown, column) {
                let cell = cells
                    .get(at)
                    .map(|c| c.replace('`', ""))
                    .unwrap_or_default();
                if !cell.contains(&default) {
                    wrong.push(format!(
                        "{name}: {flag}: --help's default is {default:?}, the table says {cell:?}"
                    ));
                }
            }
        }
    }
    assert!(rows >= 10, "only {rows} option rows found");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
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

/// The statuses in the first column of each table of a Markdown section, as the numbers
/// (and `128+N`) they name.
fn statuses_in(section: &str) -> BTreeSet<String> {
    section
        .lines()
        .filter_map(|l| l.strip_prefix("| "))
        .filter_map(|l| l.split(" | ").next())
        .flat_map(|cell| cell.split([' ', '/', ',']).map(str::to_string))
        .filter(|w| w == "128+N" || (!w.is_empty() && w.chars().all(|c| c.is_ascii_digit())))
        .collect()
}

/// docs/exit-status.md lists the statuses `--help` (and so the man page) lists, in both
/// modes: neither can gain a status the other lacks.
#[test]
fn the_exit_status_page_agrees_with_help() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("docs/exit-status.md")).unwrap();
    let (command_mode, http_mode) = page.split_once("## In HTTP mode").unwrap();
    let help = run(&["--help"]);
    assert_eq!(help.status, 0, "{}", help.stderr);
    let help = String::from_utf8(help.stdout).unwrap();
    let section =
        &help[help.find("\nExit status:\n").unwrap()..help.find("\nEnvironment:\n").unwrap()];
    let flat = section.split_whitespace().collect::<Vec<_>>().join(" ");
    let (_, curl) = flat
        .split_once(" HTTP mode curl's codes: ")
        .expect("the HTTP row");
    // Each row of --help's table starts two columns in: its status, then the meaning.
    let help_statuses: BTreeSet<String> = section
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.trim().split("  ").next())
        .flat_map(|s| s.split(", ").map(str::to_string).collect::<Vec<_>>())
        .filter(|s| s != "HTTP mode")
        .map(|s| {
            if s == "N" {
                "the command's status".to_string()
            } else {
                s
            }
        })
        .collect();
    let page_statuses: BTreeSet<String> = command_mode
        .lines()
        .filter_map(|l| l.strip_prefix("| "))
        .filter_map(|l| l.split(" | ").next())
        .filter(|c| *c != "status" && !c.starts_with("---"))
        .flat_map(|c| c.split(" / ").map(str::to_string).collect::<Vec<_>>())
        .collect();
    assert_eq!(
        page_statuses, help_statuses,
        "docs/exit-status.md and --help list different statuses"
    );
    let curl_codes: BTreeSet<String> = curl
        .split(", ")
        .filter_map(|item| item.split(' ').next())
        .filter(|w| w.parse::<u32>().is_ok())
        .map(str::to_string)
        .collect();
    let mut http_statuses = statuses_in(http_mode);
    // Success, retry's own error and a signal are the command mode's rows in --help.
    for shared in ["0", "125", "128+N"] {
        http_statuses.remove(shared);
    }
    assert_eq!(
        http_statuses, curl_codes,
        "docs/exit-status.md's HTTP table and --help's curl codes differ"
    );
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

/// The walk's outputs are what their seeds give: each README example with `--seed`
/// whose block is followed by a `text` block runs in `examples/` (whose stand-ins are
/// the scripts it names), stdout and stderr on one pipe, and prints that text exactly.
#[test]
fn the_seeded_examples_print_what_the_readme_shows() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let blocks = blocks(&readme);
    let on_path = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(crate::support::bin(), on_path.path().join("retry")).unwrap();
    let path = format!(
        "{}:{}:/usr/bin:/bin",
        on_path.path().display(),
        root.join("examples").display()
    );
    let mut checked = 0;
    for pair in blocks.windows(2) {
        let [example, shown] = pair else { continue };
        let seeded: Vec<&String> = example
            .lines
            .iter()
            .filter(|l| l.contains("--seed"))
            .collect();
        if example.lang != "sh" || shown.lang != "text" || seeded.len() != 1 {
            continue;
        }
        // The HTTP example's server, as the README tells it: a 503 with Retry-After: 1,
        // a 502, then the answer.
        let server = Server::script(vec![
            Reply::status(503).header("Retry-After", "1"),
            Reply::status(502),
            Reply::ok("{\"status\": \"ok\"}\n"),
        ]);
        let line = seeded[0].replace("https://api.example", &server.url(""));
        let r = crate::support::Invocation::of("sh")
            .args(["-c", &format!("{line} 2>&1")])
            .env("PATH", &path)
            .current_dir(root.join("examples"))
            .run();
        let expected = shown.lines.join("\n") + "\n";
        assert_eq!(r.stdout_text(), expected, "{line}");
        checked += 1;
    }
    assert!(
        checked >= 3,
        "only {checked} seeded examples with their output"
    );
}
