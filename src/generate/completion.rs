//! bash, zsh and fish completions written from the clap definition. Before the target
//! they complete retry's own options and their values; from the target on (the first
//! operand, or the word after `--`) they complete a command name and then hand the
//! words to that command's own completion, and offer nothing after a URL. The shell
//! code lives in the `retry.*` templates beside this file; this module fills in the
//! options. Hidden options (`--generate`) are never written.

use clap::{Arg, ArgAction, Command, ValueHint};

/// What completes an option's value.
enum Values {
    /// The option takes no value.
    Flag,
    /// One of a fixed set: (value, help).
    Choices(Vec<(String, String)>),
    Files,
    Dirs,
    /// Free text: nothing to offer.
    Free,
}

/// One visible option of `retry`, as the completion scripts need it.
struct Opt {
    shorts: Vec<char>,
    longs: Vec<String>,
    help: String,
    value_name: String,
    values: Values,
    repeatable: bool,
    /// The value may be the next word (`--jitter full`), not only `--jitter=full`.
    detached: bool,
}

impl Opt {
    fn takes_value(&self) -> bool {
        !matches!(self.values, Values::Flag)
    }

    /// Whether the word after this option is its value, not the next option or operand.
    fn takes_next_word(&self) -> bool {
        self.takes_value() && self.detached
    }

    /// Every spelling: `-j`, `--jitter`, and visible aliases.
    fn names(&self) -> Vec<String> {
        let shorts = self.shorts.iter().map(|c| format!("-{c}"));
        shorts
            .chain(self.longs.iter().map(|l| format!("--{l}")))
            .collect()
    }
}

/// retry's visible options, in definition order (help and version included).
fn options(cmd: &Command) -> Vec<Opt> {
    cmd.get_arguments()
        .filter(|arg| !arg.is_positional() && !arg.is_hide_set())
        .map(option)
        .collect()
}

fn option(arg: &Arg) -> Opt {
    let shorts = arg.get_short_and_visible_aliases().unwrap_or_default();
    let longs = arg
        .get_long_and_visible_aliases()
        .unwrap_or_default()
        .into_iter()
        .map(str::to_string)
        .collect();
    let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
    let value_name = arg
        .get_value_names()
        .and_then(|names| names.first())
        .map(|name| name.to_string())
        .unwrap_or_else(|| "VALUE".into());
    let repeatable = matches!(arg.get_action(), ArgAction::Append | ArgAction::Count);
    let optional_value = arg.get_num_args().is_some_and(|n| n.min_values() == 0);
    Opt {
        shorts,
        longs,
        help: first_line(&help),
        values: values(arg, &value_name),
        value_name,
        repeatable,
        detached: !arg.is_require_equals_set() && !optional_value,
    }
}

fn values(arg: &Arg, value_name: &str) -> Values {
    if !arg.get_action().takes_values() {
        return Values::Flag;
    }
    let choices: Vec<(String, String)> = arg
        .get_possible_values()
        .iter()
        .filter(|value| !value.is_hide_set())
        .map(|value| {
            let help = value.get_help().map(|h| h.to_string()).unwrap_or_default();
            (value.get_name().to_string(), first_line(&help))
        })
        .collect();
    if !choices.is_empty() {
        return Values::Choices(choices);
    }
    match arg.get_value_hint() {
        ValueHint::FilePath | ValueHint::AnyPath => Values::Files,
        ValueHint::DirPath => Values::Dirs,
        // Options defined without a hint still say FILE or DIR in their value name.
        ValueHint::Unknown if value_name == "FILE" || value_name == "PATH" => Values::Files,
        ValueHint::Unknown if value_name == "DIR" => Values::Dirs,
        _ => Values::Free,
    }
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().trim().to_string()
}

fn command() -> Command {
    let mut cmd = <crate::cli::Cli as clap::CommandFactory>::command();
    // Building adds clap's own --help and --version.
    cmd.build();
    cmd
}

/// `retry`'s bash completion.
pub fn bash() -> String {
    let opts = options(&command());
    let all: Vec<String> = opts.iter().flat_map(Opt::names).collect();
    let next_word: Vec<&Opt> = opts.iter().filter(|o| o.takes_next_word()).collect();
    let value_longs: Vec<String> = next_word
        .iter()
        .flat_map(|o| o.longs.iter().map(|l| format!("--{l}")))
        .collect();
    let value_shorts: String = next_word.iter().flat_map(|o| o.shorts.clone()).collect();
    let cases: String = opts.iter().filter_map(bash_value_case).collect();
    include_str!("retry.bash")
        .replace("@OPTIONS@", &format!("{} --", all.join(" ")))
        .replace("@VALUE_LONGS@", &pattern_or_never(&value_longs.join("|")))
        .replace(
            "@VALUE_SHORTS@",
            &pattern_or_never(&format!("[{value_shorts}]")),
        )
        .replace("@VALUE_CASES@\n", &cases)
}

/// A case pattern that matches nothing when the alternatives are empty.
fn pattern_or_never(pattern: &str) -> String {
    if pattern.is_empty() || pattern == "[]" {
        "''".into()
    } else {
        pattern.into()
    }
}

fn bash_value_case(opt: &Opt) -> Option<String> {
    let action = match &opt.values {
        Values::Choices(choices) => {
            let words: Vec<&str> = choices.iter().map(|(v, _)| v.as_str()).collect();
            format!("_retry_reply \"$2\" -W '{}'", words.join(" "))
        }
        Values::Files => "compopt -o filenames; _retry_reply \"$2\" -f".into(),
        Values::Dirs => "compopt -o filenames; _retry_reply \"$2\" -d".into(),
        Values::Free | Values::Flag => return None,
    };
    Some(format!("    {}) {action} ;;\n", opt.names().join("|")))
}

/// `retry`'s zsh completion (`_arguments` specs).
pub fn zsh() -> String {
    let specs: String = options(&command()).iter().flat_map(zsh_specs).collect();
    include_str!("retry.zsh").replace("@ARGUMENTS@\n", &specs)
}

/// One `_arguments` spec per spelling of `opt`, each excluding the others once given.
fn zsh_specs(opt: &Opt) -> Vec<String> {
    let names = opt.names();
    let exclusion = if opt.repeatable {
        "*".to_string()
    } else {
        format!("({})", names.join(" "))
    };
    let help = zsh_escape(&opt.help);
    let value = match &opt.values {
        Values::Flag => String::new(),
        Values::Choices(choices) => {
            let items: Vec<String> = choices
                .iter()
                .map(|(v, h)| {
                    format!(
                        "{v}\\:\"{}\"",
                        zsh_escape(&h.replace(['"', '\\', '`', '$'], ""))
                    )
                })
                .collect();
            format!(":{}:(({}))", zsh_escape(&opt.value_name), items.join(" "))
        }
        Values::Files => format!(":{}:_files", zsh_escape(&opt.value_name)),
        Values::Dirs => format!(":{}:_files -/", zsh_escape(&opt.value_name)),
        Values::Free => format!(":{}: ", zsh_escape(&opt.value_name)),
    };
    names
        .iter()
        .map(|name| {
            // -j+ takes -jfull or -j full; --jitter= takes --jitter=full or --jitter full.
            let suffix = match (opt.takes_value(), opt.detached, name.starts_with("--")) {
                (false, _, _) => "",
                (true, true, true) => "=",
                (true, true, false) => "+",
                (true, false, true) => "=-",
                (true, false, false) => "-",
            };
            let spec = format!("{exclusion}{name}{suffix}[{help}]{value}");
            format!("        {}\n", single_quote(&spec))
        })
        .collect()
}

/// Help text inside an `_arguments` spec's brackets and colon-separated fields.
fn zsh_escape(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('[', "\\[")
        .replace(']', "\\]")
        .replace(':', "\\:")
}

/// `text` as one single-quoted shell word.
fn single_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// `retry`'s fish completion.
pub fn fish() -> String {
    let opts = options(&command());
    let value_longs: Vec<String> = opts
        .iter()
        .filter(|o| o.takes_next_word())
        .flat_map(|o| o.longs.iter().map(|l| fish_quote(&format!("--{l}"))))
        .collect();
    let value_shorts: String = opts
        .iter()
        .filter(|o| o.takes_next_word())
        .flat_map(|o| o.shorts.clone())
        .collect();
    let lines: String = opts.iter().map(fish_line).collect();
    include_str!("retry.fish")
        .replace("@VALUE_LONGS@", &fish_case(&value_longs.join(" ")))
        .replace("@VALUE_SHORTS@", &fish_quote(&fish_chars(&value_shorts)))
        .replace("@OPTIONS@\n", &lines)
}

/// A `case` argument list for fish's `switch`; one that matches nothing when empty.
fn fish_case(patterns: &str) -> String {
    if patterns.is_empty() {
        "''".into()
    } else {
        patterns.into()
    }
}

/// A regex matching one of `chars` (and nothing when there are none).
fn fish_chars(chars: &str) -> String {
    if chars.is_empty() {
        "^$".into()
    } else {
        format!("^[{chars}]$")
    }
}

fn fish_line(opt: &Opt) -> String {
    let mut line = String::from("complete -c retry -n 'not __retry_target_start >/dev/null'");
    for short in &opt.shorts {
        line += &format!(" -s {}", fish_quote(&short.to_string()));
    }
    for long in &opt.longs {
        line += &format!(" -l {}", fish_quote(long));
    }
    match &opt.values {
        Values::Flag => {}
        Values::Choices(choices) => {
            // -a's text is split again by fish: VALUE\t'HELP' is a value with its help.
            let items: Vec<String> = choices
                .iter()
                .map(|(v, h)| format!("{v}\\t{}", fish_quote(h)))
                .collect();
            line += &format!(" -x -a {}", fish_quote(&items.join(" ")));
        }
        Values::Files => line += " -r -F",
        Values::Dirs => line += " -x -a '(__fish_complete_directories)'",
        Values::Free => line += " -x",
    }
    line += &format!(" -d {}\n", fish_quote(&opt.help));
    line
}

/// `text` as one single-quoted fish word (fish escapes \\ and \' inside them).
fn fish_quote(text: &str) -> String {
    format!("'{}'", text.replace('\\', r"\\").replace('\'', r"\'"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_options_are_left_out() {
        let opts = options(&command());
        assert!(opts.iter().all(|o| !o.longs.contains(&"generate".into())));
        assert!(opts.iter().any(|o| o.longs.contains(&"help".into())));
        for script in [bash(), zsh(), fish()] {
            assert!(!script.contains("--generate"));
        }
    }

    #[test]
    fn only_a_required_value_may_be_the_next_word() {
        let cmd = Command::new("t")
            .arg(Arg::new("plain").long("plain"))
            .arg(Arg::new("eq").long("eq").require_equals(true))
            .arg(Arg::new("opt").long("opt").num_args(0..=1))
            .arg(Arg::new("flag").long("flag").action(ArgAction::SetTrue));
        let next: Vec<bool> = options(&cmd).iter().map(Opt::takes_next_word).collect();
        assert_eq!(next, [true, false, false, false]);
    }

    #[test]
    fn values_come_from_the_definition() {
        let opts = options(&command());
        let find = |long: &str| opts.iter().find(|o| o.longs[0] == long).unwrap();
        assert!(matches!(&find("jitter").values, Values::Choices(c) if c.len() == 4));
        assert!(matches!(find("report").values, Values::Files));
        assert!(matches!(find("delay").values, Values::Free));
        assert!(matches!(find("dry-run").values, Values::Flag));
        assert!(find("verbose").repeatable && find("header").repeatable);
    }
}
