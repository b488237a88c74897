//! The crate's layers point one way. The module graph of `src/` is built from the
//! source text: a folder or a file directly under `src/` is one module, an edge is a
//! `crate::X` path in one module naming another (in `use crate::{a, b::c}` groups, each
//! item of the group), and test code (`#[cfg(test)]` items, `tests.rs` files),
//! comments and string literals are left out. The graph must have no cycle, and the
//! bottom layers, `domain` and `sys`, must import nothing of the crate; only `sys` (and
//! `main`) names an operating system or C library (`target_os`, `target_env`). Beside it:
//! clap's `Cli` stays in `cli/`, `config/`, `generate`, `main` and `lib`; only the
//! storage layer, `state/`, names a backend (a folder under `src/state/`, a variant of
//! its `Backend`, or a crate only a backend uses, such as `tokio_postgres`); and the time
//! libraries retry no longer uses (chrono, httpdate) stay out of Cargo.toml.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Modules and the modules each one imports.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// Where `Cli`, clap's definition, may be named.
const CLI_MAY_APPEAR_IN: [&str; 5] = ["cli", "config", "generate", "main", "lib"];
/// The storage layer: the one module that may name a backend.
const STORAGE: &str = "state";
/// Crates that only a backend uses.
const BACKEND_CRATES: [&str; 2] = ["tokio_postgres", "tokio_postgres_rustls"];
/// Dependencies that must not come back.
const GONE: [&str; 2] = ["chrono", "httpdate"];

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_module_graph_of_src_has_no_cycle_and_domain_is_the_bottom() {
    let graph = graph(&src_modules());
    let drawn = draw(&graph);
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "the modules of src/ import each other in a cycle: {}\n\n{drawn}",
            cycle.join(" -> ")
        );
    }
    for bottom in ["domain", "sys"] {
        let imports = &graph[bottom];
        assert!(
            imports.is_empty(),
            "{bottom} is a bottom layer and imports nothing of the crate, but imports {imports:?}\n\n{drawn}"
        );
    }
}

#[test]
fn only_sys_names_a_system() {
    let strays: Vec<String> = src_modules()
        .into_iter()
        .filter(|(module, _)| module != "sys" && module != "main")
        .flat_map(|(_, files)| files)
        .filter(|file| {
            identifiers(&code_only(&read(file))).any(|w| w == "target_os" || w == "target_env")
        })
        .map(|file| file.display().to_string())
        .collect();
    assert!(
        strays.is_empty(),
        "a system is named outside src/sys: {strays:?}; put what differs there, behind one face"
    );
}

#[test]
fn clap_s_cli_stays_with_the_command_line() {
    let strays: Vec<String> = src_modules()
        .into_iter()
        .filter(|(module, _)| !CLI_MAY_APPEAR_IN.contains(&module.as_str()))
        .flat_map(|(_, files)| files)
        .filter(|file| identifiers(&code_only(&read(file))).any(|word| word == "Cli"))
        .map(|file| file.display().to_string())
        .collect();
    assert!(
        strays.is_empty(),
        "`Cli` is named outside {CLI_MAY_APPEAR_IN:?}: {strays:?}; nothing after `config` sees clap"
    );
}

#[test]
fn only_the_storage_layer_names_a_backend() {
    let src = manifest_dir().join("src");
    let backends = Backends::of(&src.join(STORAGE));
    assert!(
        backends.modules.contains(&"postgres".to_string()) && backends.variants.len() >= 2,
        "the backends of src/{STORAGE}/ are not where this test looks for them: {backends:?}"
    );
    let strays = backend_names_outside_storage(&modules(&src), &backends);
    assert!(
        strays.is_empty(),
        "only src/{STORAGE}/ names a backend (its modules {:?}, the variants {:?} of Backend, \
         the crates {BACKEND_CRATES:?}); ask {STORAGE}'s face instead (its factory, Backend's \
         methods, its error types):\n{}",
        backends.modules,
        backends.variants,
        strays.join("\n")
    );
}

#[test]
fn a_backend_is_found_by_its_module_variant_or_crate_in_code_only() {
    let tree = tempfile::tempdir().unwrap();
    let src = tree.path().join("src");
    let files: &[(&str, &str)] = &[
        (
            "state/mod.rs",
            "mod file;\nmod redis;\npub enum Backend {\n    File(PathBuf),\n    #[doc = \"x\"]\n    Redis { url: String },\n}\n",
        ),
        ("state/file/mod.rs", "use tokio_postgres::Client;\n"),
        ("state/redis/mod.rs", ""),
        (
            "a.rs",
            "use crate::state::{self, Backend, redis};\nfn f(b: &Backend) -> bool {\n    \
             // state::file and Backend::File in a comment\n    let _ = \"tokio_postgres\";\n    \
             b.leases() && Backend::leases(b) && state::open_lock()\n}\n",
        ),
        (
            "b/mod.rs",
            "fn g(b: Backend) {\n    match b {\n        state::Backend::File(_) => {}\n        _ => {}\n    }\n}\n",
        ),
        (
            "b/c.rs",
            "use crate::state::Backend::{\n    Redis,\n    File as F,\n};\nuse tokio_postgres_rustls::MakeRustlsConnect;\n",
        ),
        (
            "d.rs",
            "use crate::state :: file :: fencing;\nuse crate::state::Backend::*;\n",
        ),
    ];
    for (path, text) in files {
        let path = src.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    let backends = Backends::of(&src.join(STORAGE));
    assert_eq!(backends.modules, ["file", "redis"]);
    assert_eq!(backends.variants, ["File", "Redis"]);
    let found: Vec<String> = backend_names_outside_storage(&modules(&src), &backends)
        .iter()
        .map(|line| line.replace(&format!("{}/", src.display()), ""))
        .collect();
    assert_eq!(
        found,
        [
            "a.rs: state::redis",
            "b/c.rs: Backend::Redis, Backend::File, tokio_postgres_rustls",
            "b/mod.rs: Backend::File",
            "d.rs: state::file, Backend::*",
        ]
    );
}

#[test]
fn the_time_libraries_retry_left_stay_out_of_cargo_toml() {
    let manifest = read(&manifest_dir().join("Cargo.toml"));
    for line in manifest.lines() {
        let key = line.split(['=', '#']).next().unwrap_or_default().trim();
        let key = key.trim_start_matches('[').trim_end_matches(']');
        let key = key.rsplit('.').next().unwrap_or(key);
        assert!(
            !GONE.contains(&key),
            "Cargo.toml names {key}: jiff is the one time library (humantime for durations)\n{line}"
        );
    }
}

#[test]
fn the_graph_is_read_from_paths_in_code_only() {
    let tree = tempfile::tempdir().unwrap();
    let src = tree.path().join("src");
    let files: &[(&str, &str)] = &[
        ("lib.rs", "mod a;\nmod b;\nmod c;\nuse crate::a::thing;\n"),
        (
            "a.rs",
            "use crate::{b::{self, inner}, c};\n// crate::lib in a comment\nfn f() { let s = \"crate::lib\"; let c = '\"'; }\n",
        ),
        (
            "b/mod.rs",
            "pub mod inner;\n#[cfg(test)]\nmod tests {\n    use crate::a;\n}\n",
        ),
        (
            "b/inner.rs",
            "pub fn g() { crate::c::h(); }\n/* crate::a /* nested */ */\n",
        ),
        ("b/tests.rs", "use crate::a;\n"),
        (
            "c.rs",
            "#[cfg(test)]\nuse crate::a;\npub fn h() { let r = r#\"crate::a\"#; let l: &'static str = \"\"; }\n",
        ),
    ];
    for (path, text) in files {
        let path = src.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    let graph = graph(&modules(&src));
    let edges: Vec<(&str, &str)> = graph
        .iter()
        .flat_map(|(from, to)| to.iter().map(move |t| (from.as_str(), t.as_str())))
        .collect();
    assert_eq!(edges, [("a", "b"), ("a", "c"), ("b", "c"), ("lib", "a")]);
    assert_eq!(find_cycle(&graph), None);
    let mut cyclic = graph.clone();
    cyclic.get_mut("c").unwrap().insert("a".into());
    let cycle = find_cycle(&cyclic).expect("a -> c -> a");
    assert_eq!(cycle.first(), cycle.last());
    assert!(cycle.contains(&"a".to_string()) && cycle.contains(&"c".to_string()));
    let drawn = draw(&graph);
    assert!(drawn.contains("layer 0: c"), "{drawn}");
    assert!(drawn.contains("a -> b c"), "{drawn}");
}

/// What names a backend outside the storage layer: a folder under it (a backend's
/// module), a variant of its `Backend`, or one of [`BACKEND_CRATES`].
#[derive(Debug)]
struct Backends {
    modules: Vec<String>,
    variants: Vec<String>,
}

impl Backends {
    /// The backends of the storage layer at `storage`: its folders, and the variants of
    /// the `enum Backend` its files define.
    fn of(storage: &Path) -> Backends {
        let mut modules: Vec<String> = fs::read_dir(storage)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.is_dir())
            .filter_map(|path| Some(path.file_name()?.to_str()?.to_string()))
            .collect();
        modules.sort();
        let variants = rust_files(storage)
            .iter()
            .flat_map(|file| enum_variants(&code_only(&read(file)), "Backend"))
            .collect();
        Backends { modules, variants }
    }
}

/// The variants of `enum NAME` in `code`, in order.
fn enum_variants(code: &str, name: &str) -> Vec<String> {
    let tokens = tokens(code);
    let Some(at) = tokens
        .windows(3)
        .position(|w| w[0] == "enum" && w[1] == name && w[2] == "{")
    else {
        return Vec::new();
    };
    let mut variants = Vec::new();
    let (mut depth, mut expect) = (0, true);
    for token in &tokens[at + 3..] {
        match *token {
            "{" | "(" | "[" => depth += 1,
            "}" if depth == 0 => break,
            "}" | ")" | "]" => depth -= 1,
            "," if depth == 0 => expect = true,
            "#" => {}
            word if depth == 0 && expect && is_identifier(word) => {
                variants.push(word.to_string());
                expect = false;
            }
            _ => {}
        }
    }
    variants
}

/// Each file outside the storage layer that names a backend, with what it names:
/// `src/a.rs: state::postgres, tokio_postgres`.
fn backend_names_outside_storage(
    modules: &BTreeMap<String, Vec<PathBuf>>,
    backends: &Backends,
) -> Vec<String> {
    let mut found = Vec::new();
    for (module, files) in modules {
        if module == STORAGE {
            continue;
        }
        for file in files {
            let names = backend_names(&code_only(&read(file)), backends);
            if !names.is_empty() {
                found.push(format!("{}: {}", file.display(), names.join(", ")));
            }
        }
    }
    found.sort();
    found
}

/// What `code` names of a backend, in order: a backend crate, `state::MODULE` and
/// `Backend::VARIANT` paths (each item of a `{…}` group after them, and a glob).
fn backend_names(code: &str, backends: &Backends) -> Vec<String> {
    let tokens = tokens(code);
    let mut names = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        if BACKEND_CRATES.contains(token) {
            names.push(token.to_string());
            continue;
        }
        let named = match *token {
            STORAGE => &backends.modules,
            "Backend" => &backends.variants,
            _ => continue,
        };
        if tokens.get(i + 1) != Some(&"::") {
            continue;
        }
        let items = match tokens.get(i + 2) {
            Some(&"{") => group_items(&tokens[i + 3..]),
            Some(item) => vec![*item],
            None => Vec::new(),
        };
        for item in items {
            let glob = item == "*" && *token == "Backend";
            if glob || named.iter().any(|n| n == item) {
                names.push(format!("{token}::{item}"));
            }
        }
    }
    names
}

/// The first token of each top-level item of the `{…}` group whose inside `tokens`
/// starts.
fn group_items<'a>(tokens: &[&'a str]) -> Vec<&'a str> {
    let (mut items, mut depth, mut expect) = (Vec::new(), 0, true);
    for token in tokens {
        match *token {
            "{" => depth += 1,
            "}" if depth == 0 => break,
            "}" => depth -= 1,
            "," if depth == 0 => expect = true,
            item if depth == 0 && expect => {
                items.push(item);
                expect = false;
            }
            _ => {}
        }
    }
    items
}

/// The tokens of `code`: identifiers, `::`, and every other character but whitespace.
fn tokens(code: &str) -> Vec<&str> {
    let mut tokens = Vec::new();
    let mut rest = code;
    while let Some(c) = rest.chars().next() {
        let len = if c.is_alphanumeric() || c == '_' {
            rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len())
        } else if rest.starts_with("::") {
            2
        } else {
            c.len_utf8()
        };
        if !c.is_whitespace() {
            tokens.push(&rest[..len]);
        }
        rest = &rest[len..];
    }
    tokens
}

fn is_identifier(word: &str) -> bool {
    word.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

fn src_modules() -> BTreeMap<String, Vec<PathBuf>> {
    modules(&manifest_dir().join("src"))
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Each top-level module of `src` and its files: `X.rs`, and every `.rs` file below `X/`.
fn modules(src: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    let mut modules: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for entry in fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let Some(name) = path
            .file_stem()
            .and_then(|n| n.to_str())
            .map(str::to_string)
        else {
            continue;
        };
        if path.is_dir() {
            modules.entry(name).or_default().extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            modules.entry(name).or_default().push(path);
        }
    }
    modules
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// The edges between `modules`, from the `crate::` paths in their code.
fn graph(modules: &BTreeMap<String, Vec<PathBuf>>) -> Graph {
    let mut graph = Graph::new();
    for (module, files) in modules {
        let targets = graph.entry(module.clone()).or_default();
        for file in files {
            // A `tests.rs` is a module of tests.
            if file.file_name().is_some_and(|n| n == "tests.rs") {
                continue;
            }
            let code = without_test_items(&code_only(&read(file)));
            for target in crate_paths(&code) {
                if target != *module && modules.contains_key(&target) {
                    targets.insert(target);
                }
            }
        }
    }
    graph
}

/// `source` with comments, string literals and character literals blanked out, so
/// that a path in them counts for nothing.
fn code_only(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < chars.len() {
        let rest = &chars[i..];
        let skipped = if rest.starts_with(&['/', '/']) {
            rest.iter().position(|c| *c == '\n').unwrap_or(rest.len())
        } else if rest.starts_with(&['/', '*']) {
            block_comment(rest)
        } else if let Some(len) = raw_string(rest) {
            len
        } else if rest[0] == '"' || rest.starts_with(&['b', '"']) {
            quoted(rest, '"')
        } else if rest[0] == '\'' {
            char_literal(rest).unwrap_or(0)
        } else {
            0
        };
        if skipped == 0 {
            out.push(chars[i]);
            i += 1;
        } else {
            // Lines are kept, so that a line-based reader could still count them.
            out.extend(
                rest[..skipped]
                    .iter()
                    .map(|c| if *c == '\n' { '\n' } else { ' ' }),
            );
            i += skipped;
        }
    }
    out
}

/// The length of a (nested) block comment at the start of `s`.
fn block_comment(s: &[char]) -> usize {
    let (mut depth, mut i) = (0, 0);
    while i < s.len() {
        if s[i..].starts_with(&['/', '*']) {
            depth += 1;
            i += 2;
        } else if s[i..].starts_with(&['*', '/']) {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    s.len()
}

/// The length of a raw string literal (`r"…"`, `r#"…"#`, `br"…"`) at the start of `s`.
fn raw_string(s: &[char]) -> Option<usize> {
    let start = match s {
        ['r', '"' | '#', ..] => 1,
        ['b', 'r', '"' | '#', ..] => 2,
        _ => return None,
    };
    let hashes = s[start..].iter().take_while(|c| **c == '#').count();
    if s.get(start + hashes) != Some(&'"') {
        return None;
    }
    let body = start + hashes + 1;
    (body..s.len())
        .find(|&i| {
            s[i] == '"'
                && s[i + 1..]
                    .iter()
                    .take(hashes)
                    .filter(|c| **c == '#')
                    .count()
                    == hashes
        })
        .map(|end| end + 1 + hashes)
        .or(Some(s.len()))
}

/// The length of a literal quoted by `quote` (escapes honoured) at the start of `s`.
fn quoted(s: &[char], quote: char) -> usize {
    let mut i = s.iter().position(|c| *c == quote).unwrap_or(0) + 1;
    while i < s.len() {
        match s[i] {
            '\\' => i += 2,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    s.len()
}

/// The length of a character literal at the start of `s` (`'x'`, `'\n'`, `'\u{1F600}'`);
/// `None` for a lifetime (`'a`).
fn char_literal(s: &[char]) -> Option<usize> {
    match s {
        ['\'', '\\', ..] => Some(quoted(s, '\'')),
        ['\'', _, '\'', ..] => Some(3),
        _ => None,
    }
}

/// `code` without the items `#[cfg(test)]` marks: a `mod tests { … }`, a `use`, a function.
fn without_test_items(code: &str) -> String {
    const MARK: &str = "#[cfg(test)]";
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find(MARK) {
        out.push_str(&rest[..at]);
        let item = &rest[at + MARK.len()..];
        rest = &item[item_end(item)..];
    }
    out.push_str(rest);
    out
}

/// Where the item at the start of `code` ends: after its `;`, or after the block its
/// first `{` opens, whichever comes first (a `;` inside brackets, as in `[u8; 4]`, does
/// not end it).
fn item_end(code: &str) -> usize {
    let mut depth = 0;
    for (i, c) in code.char_indices() {
        match c {
            ';' if depth == 0 => return i + 1,
            '(' | '[' | '{' => depth += 1,
            ')' | ']' => depth -= 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    code.len()
}

/// The first segment of every `crate::` path in `code`, each item of a `crate::{…}` group.
fn crate_paths(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("crate::") {
        let start = from + at;
        from = start + "crate::".len();
        let before = code[..start].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let after = &code[from..];
        if let Some(group) = after.strip_prefix('{') {
            let len = item_end(&format!("{{{group}"));
            for item in top_level_items(&group[..len.saturating_sub(2)]) {
                found.extend(identifiers(item).next().map(str::to_string));
            }
        } else {
            found.extend(identifiers(after).next().map(str::to_string));
        }
    }
    found
}

/// The comma-separated items of a `{…}` group's inside, nested groups kept whole.
fn top_level_items(group: &str) -> Vec<&str> {
    let (mut items, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&group[start..]);
    items
}

/// The identifiers of `code`, in order.
fn identifiers(code: &str) -> impl Iterator<Item = &str> {
    code.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|word| {
            word.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
        })
}

/// A cycle of the graph, its first module repeated at its end, if there is one.
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Seen {
        Open,
        Done,
    }
    fn visit(
        graph: &Graph,
        module: &str,
        seen: &mut BTreeMap<String, Seen>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        seen.insert(module.to_string(), Seen::Open);
        path.push(module.to_string());
        for next in graph.get(module).into_iter().flatten() {
            match seen.get(next) {
                Some(Seen::Open) => {
                    let from = path.iter().position(|m| m == next).expect("on the path");
                    let mut cycle = path[from..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Some(Seen::Done) => {}
                None => {
                    if let Some(cycle) = visit(graph, next, seen, path) {
                        return Some(cycle);
                    }
                }
            }
        }
        path.pop();
        seen.insert(module.to_string(), Seen::Done);
        None
    }
    let mut seen = BTreeMap::new();
    for module in graph.keys() {
        if seen.contains_key(module) {
            continue;
        }
        if let Some(cycle) = visit(graph, module, &mut seen, &mut Vec::new()) {
            return Some(cycle);
        }
    }
    None
}

/// The graph for people: its size, each module's layer (0 imports nothing; a module
/// sits one above the highest it imports; modules in a cycle have none), and its edges.
fn draw(graph: &Graph) -> String {
    let edges: usize = graph.values().map(BTreeSet::len).sum();
    let mut out = format!("{} modules, {edges} edges\n", graph.len());
    let mut layers: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
    let mut unplaced = Vec::new();
    for module in graph.keys() {
        match layer(graph, module, &mut Vec::new()) {
            Some(n) => layers.entry(n).or_default().push(module),
            None => unplaced.push(module.as_str()),
        }
    }
    for (n, modules) in &layers {
        out += &format!("layer {n}: {}\n", modules.join(" "));
    }
    if !unplaced.is_empty() {
        out += &format!("in or above a cycle: {}\n", unplaced.join(" "));
    }
    for (module, targets) in graph {
        let targets: Vec<&str> = targets.iter().map(String::as_str).collect();
        out += &format!("{module} -> {}\n", targets.join(" "));
    }
    out
}

fn layer(graph: &Graph, module: &str, path: &mut Vec<String>) -> Option<usize> {
    if path.iter().any(|m| m == module) {
        return None;
    }
    path.push(module.to_string());
    let mut highest = None;
    for next in graph.get(module).into_iter().flatten() {
        let below = layer(graph, next, path)?;
        highest = Some(highest.map_or(below, |h: usize| h.max(below)));
    }
    path.pop();
    Some(highest.map_or(0, |h| h + 1))
}
