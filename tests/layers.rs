//! The crate's layers point one way, at every depth. Each file under `src/` is read as
//! Rust tokens (proc-macro2's lexer: comments are gone, strings are literals) and is one
//! module (`state/postgres/db.rs` is `state::postgres::db`, a `mod.rs` is its folder's);
//! its `crate::`, `super::` and `self::` paths, in code and inside macros (each item of
//! a `{…}` group), are its imports, `#[cfg(test)]` items and `tests.rs` files left out.
//! An import counts between the two sibling modules whose subtrees hold the importer
//! and the imported (the top-level modules, or two files of one folder), and these
//! edges must have no cycle. The top-level modules import only downward in the table of
//! CONTRIBUTING.md ("The layers of `src/`"), whose bottom layer, `sys` then `domain`,
//! imports nothing of the crate but `domain`'s names of signals from `sys`, and the
//! command line imports nothing of the storage layer. Beside it:
//! only `sys` (and `main`) names an operating system or C library (`target_os`,
//! `target_env`), and only `sys` names a system's calls (`nix`, `libc`, `windows_sys`,
//! `std::os::unix`, `fd` or `windows`: a shrinking list of files is still to move);
//! clap's `Cli` stays in `cli/`,
//! `config/`, `generate`, `main` and `lib`; only the storage layer, `state/`, names a
//! backend (a folder under `src/state/`, a variant of its `Backend`, or a crate only a
//! backend uses, such as `tokio_postgres`); and the time libraries retry no longer uses
//! (chrono, httpdate) stay out of Cargo.toml.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use proc_macro2::{Delimiter, Group, Spacing, TokenStream, TokenTree};

/// Modules (`a::b`) and the sibling modules each one imports.
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

/// One file of `src/`: its module's path and its tokens.
struct Source {
    file: PathBuf,
    module: Vec<String>,
    tokens: TokenStream,
}

impl Source {
    fn top(&self) -> &str {
        &self.module[0]
    }

    /// A module of tests (`tests.rs`), whose imports are no layer's.
    fn is_tests(&self) -> bool {
        self.file.file_name().is_some_and(|n| n == "tests.rs")
    }
}

#[test]
fn no_modules_of_src_import_each_other_in_a_cycle_at_any_depth() {
    let graph = graph(&sources(&manifest_dir().join("src")));
    if let Some(cycle) = find_cycle(&graph) {
        let folder = parent(&cycle[0]);
        panic!(
            "modules of src/ import each other in a cycle: {}\n\n{}",
            cycle.join(" -> "),
            draw(&graph, folder)
        );
    }
}

#[test]
fn the_top_level_modules_import_only_downward_in_contributing_s_table() {
    let graph = graph(&sources(&manifest_dir().join("src")));
    let table = layer_table(&read(&manifest_dir().join("CONTRIBUTING.md")));
    let drawn = draw(&graph, "");
    // sys imports nothing; domain only sys (a signal's name is the system's).
    for (bottom, may) in [("sys", &[][..]), ("domain", &["sys"][..])] {
        let imports: Vec<&String> = graph[bottom]
            .iter()
            .filter(|i| !may.contains(&i.as_str()))
            .collect();
        assert!(
            imports.is_empty(),
            "{bottom} is a bottom layer and imports nothing of the crate but {may:?}, \
             yet imports {imports:?}\n\n{drawn}"
        );
    }
    let rank = |module: &str| {
        table.iter().position(|m| m == module).unwrap_or_else(|| {
            panic!("src/{module} is in no row of CONTRIBUTING.md's layer table {table:?}")
        })
    };
    let upward: Vec<String> = graph
        .iter()
        .filter(|(module, _)| parent(module).is_empty())
        .flat_map(|(module, imports)| imports.iter().map(move |i| (module, i)))
        .filter(|(module, import)| rank(import) > rank(module))
        .map(|(module, import)| format!("{module} -> {import}"))
        .collect();
    assert!(
        upward.is_empty(),
        "imports up CONTRIBUTING.md's layer table (a module imports only the rows above \
         its own, or what comes before it in its row): {upward:?}\n\n{drawn}"
    );
}

/// The command line parses text into the bottom layers' types; the configuration hands
/// it to the storage layer, so a store's needs never reach clap.
#[test]
fn the_command_line_imports_nothing_of_the_storage_layer() {
    let graph = graph(&sources(&manifest_dir().join("src")));
    assert!(
        !graph["cli"].contains(STORAGE),
        "cli imports {STORAGE}: parse to a type of `domain` and let `config` give it to the \
         storage layer\n\n{}",
        draw(&graph, "")
    );
}

#[test]
fn only_sys_names_a_system() {
    let strays = files_naming(
        |s| !["sys", "main"].contains(&s.top()),
        |word| word == "target_os" || word == "target_env",
    );
    assert!(
        strays.is_empty(),
        "a system is named outside src/sys: {strays:?}; put what differs there, behind one face"
    );
}

/// The crates and standard modules that are one system's calls.
fn names_system_calls(path: &[String]) -> bool {
    let crates = ["nix", "libc", "windows_sys"];
    let std_modules = ["unix", "fd", "windows"];
    match path {
        [first, _, ..] if crates.contains(&first.as_str()) => true,
        [std, os, module, ..] => {
            std == "std" && os == "os" && std_modules.contains(&module.as_str())
        }
        _ => false,
    }
}

/// Files whose system calls are still to move into `src/sys`, each behind the face a
/// Windows build needs of it: the list only shrinks (a file that no longer names a
/// system must leave it).
const SYSTEM_CALLS_TO_MOVE: [&str; 0] = [];

#[test]
fn only_sys_makes_system_calls() {
    let src = manifest_dir().join("src");
    let naming: BTreeSet<String> = sources(&src)
        .iter()
        .filter(|s| s.top() != "sys")
        .filter(|s| {
            paths(s.tokens.clone())
                .iter()
                .any(|p| names_system_calls(p))
        })
        .map(|s| {
            s.file
                .strip_prefix(&src)
                .unwrap_or(&s.file)
                .display()
                .to_string()
        })
        .collect();
    let pending: BTreeSet<String> = SYSTEM_CALLS_TO_MOVE.iter().map(|f| f.to_string()).collect();
    let strays: Vec<&String> = naming.difference(&pending).collect();
    assert!(
        strays.is_empty(),
        "a file outside src/sys names nix, libc, windows_sys or std::os::{{unix,fd,windows}}: \
         {strays:?}; ask src/sys's face (one function, each system's way behind it)"
    );
    let moved: Vec<&String> = pending.difference(&naming).collect();
    assert!(
        moved.is_empty(),
        "these files no longer name a system: take them off SYSTEM_CALLS_TO_MOVE: {moved:?}"
    );
}

#[test]
fn clap_s_cli_stays_with_the_command_line() {
    let strays = files_naming(|s| !CLI_MAY_APPEAR_IN.contains(&s.top()), |w| w == "Cli");
    assert!(
        strays.is_empty(),
        "`Cli` is named outside {CLI_MAY_APPEAR_IN:?}: {strays:?}; nothing after `config` sees clap"
    );
}

#[test]
fn only_the_storage_layer_names_a_backend() {
    let src = manifest_dir().join("src");
    let sources = sources(&src);
    let backends = Backends::of(&src, &sources);
    assert!(
        backends.modules.contains(&"postgres".to_string()) && backends.variants.len() >= 2,
        "the backends of src/{STORAGE}/ are not where this test looks for them: {backends:?}"
    );
    let strays = backend_names_outside_storage(&sources, &backends);
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
fn a_backend_is_found_by_its_module_variant_or_crate_in_code_only() {
    let src = tree(&[
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
    ]);
    let sources = sources(src.path());
    let backends = Backends::of(src.path(), &sources);
    assert_eq!(backends.modules, ["file", "redis"]);
    assert_eq!(backends.variants, ["File", "Redis"]);
    let found: Vec<String> = backend_names_outside_storage(&sources, &backends)
        .iter()
        .map(|line| line.replace(&format!("{}/", src.path().display()), ""))
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
fn the_graph_is_read_from_paths_in_code_at_every_depth() {
    let src = tree(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\nuse crate::a::thing;\n"),
        (
            "a.rs",
            "use crate::{b::{self, inner}, c};\n// crate::lib in a comment\nfn f() { let s = \"crate::lib\"; let c = '\"'; }\n",
        ),
        (
            "b/mod.rs",
            "pub mod inner;\nmod one;\nmod two;\npub use two::Two;\n#[cfg(test)]\nmod tests {\n    use crate::a;\n}\n",
        ),
        (
            "b/inner.rs",
            "pub fn g() { crate::c::h(); crate::b::Two::new(); }\n/* crate::a /* nested */ */\n",
        ),
        (
            "b/one.rs",
            "use super::two::x;\nfn f() { format!(\"{}\", super::inner::g()); }\n",
        ),
        ("b/two.rs", "pub(in crate::b) fn x() {}\n"),
        ("b/tests.rs", "use crate::a;\n"),
        (
            "c.rs",
            "#[cfg(test)]\nuse crate::a;\nimpl C {\n    #[cfg(test)]\n    fn t() { crate::a::f() }\n}\npub fn h() { let r = r#\"crate::a\"#; let l: &'static str = \"\"; }\n",
        ),
    ]);
    let graph = graph(&sources(src.path()));
    let edges: Vec<(&str, &str)> = graph
        .iter()
        .flat_map(|(from, to)| to.iter().map(move |t| (from.as_str(), t.as_str())))
        .collect();
    assert_eq!(
        edges,
        [
            ("a", "b"),
            ("a", "c"),
            ("b", "c"),
            ("b::inner", "b::two"),
            ("b::one", "b::inner"),
            ("b::one", "b::two"),
            ("lib", "a")
        ]
    );
    assert_eq!(find_cycle(&graph), None);
    let drawn = draw(&graph, "");
    assert!(drawn.contains("layer 0: c"), "{drawn}");
    assert!(drawn.contains("a -> b c"), "{drawn}");
    assert!(!drawn.contains("inner"), "one folder drawn: {drawn}");

    fs::write(src.path().join("b/two.rs"), "use super::one::y;\n").unwrap();
    let cycle = find_cycle(&graph_of(src.path())).expect("b::one -> b::two -> b::one");
    assert_eq!(cycle.first(), cycle.last());
    assert!(cycle.contains(&"b::one".to_string()) && cycle.contains(&"b::two".to_string()));
}

#[test]
fn the_layer_table_is_read_row_by_row_in_order() {
    let contributing = "## The layers of `src/`\n\n| layer | modules | what |\n|---|---|---|\n\
                        | bottom | `domain`, `sys` | `x` |\n| top | `run`, then `main` | y |\n\n\
                        | other | `table` |\n";
    assert_eq!(layer_table(contributing), ["domain", "sys", "run", "main"]);
}

fn graph_of(src: &Path) -> Graph {
    graph(&sources(src))
}

/// A tree of `src/` files made for a test.
fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let tree = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = tree.path().join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    tree
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Every `.rs` file under `src`, as tokens, with its module's path.
fn sources(src: &Path) -> Vec<Source> {
    let mut sources: Vec<Source> = rust_files(src)
        .into_iter()
        .map(|file| {
            let relative = file.strip_prefix(src).unwrap().with_extension("");
            let mut module: Vec<String> = relative
                .iter()
                .map(|part| part.to_string_lossy().into_owned())
                .collect();
            if module.len() > 1 && module.last().is_some_and(|m| m == "mod") {
                module.pop();
            }
            let tokens = read(&file)
                .parse()
                .unwrap_or_else(|e| panic!("{} is not Rust: {e:?}", file.display()));
            Source {
                file,
                module,
                tokens,
            }
        })
        .collect();
    sources.sort_by(|a, b| a.file.cmp(&b.file));
    sources
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

/// The files of `src/` that `kept` keeps and that name a `word` in code (test code
/// included).
fn files_naming(kept: impl Fn(&Source) -> bool, word: impl Fn(&str) -> bool) -> Vec<String> {
    sources(&manifest_dir().join("src"))
        .iter()
        .filter(|source| kept(source))
        .filter(|source| {
            paths(source.tokens.clone())
                .iter()
                .flatten()
                .any(|w| word(w))
        })
        .map(|source| source.file.display().to_string())
        .collect()
}

/// The imports between sibling modules: every module (`a::b`) with the siblings whose
/// subtrees its subtree's code names. An item a module re-exports from a child of its
/// own (`pub use burst::Burst` in `state`) counts as the child's.
fn graph(sources: &[Source]) -> Graph {
    let modules: BTreeSet<&[String]> = sources.iter().map(|s| s.module.as_slice()).collect();
    let mut graph: Graph = modules
        .iter()
        .map(|m| (m.join("::"), BTreeSet::new()))
        .collect();
    let code: Vec<(&Source, Vec<Vec<String>>)> = sources
        .iter()
        .filter(|s| !s.is_tests())
        .map(|s| (s, paths(without_test_items(s.tokens.clone()))))
        .collect();
    let mut children_items = BTreeMap::new();
    for (source, paths) in &code {
        for path in paths.iter().filter(|p| p.len() > 1) {
            let child = [source.module.as_slice(), &path[..1]].concat();
            if modules.contains(child.as_slice()) {
                children_items.insert((source.module.clone(), path[path.len() - 1].clone()), child);
            }
        }
    }
    for (source, paths) in &code {
        for named in paths.iter().filter_map(|p| absolute(&source.module, p)) {
            // The module named is the longest prefix of the path that is one.
            let Some(mut target) = (1..=named.len())
                .rev()
                .map(|n| named[..n].to_vec())
                .find(|prefix| modules.contains(prefix.as_slice()))
            else {
                continue;
            };
            if let Some(item) = named.get(target.len()) {
                if let Some(child) = children_items.get(&(target.clone(), item.clone())) {
                    target = child.clone();
                }
            }
            if let Some((from, to)) = siblings(&source.module, &target) {
                graph.entry(from).or_default().insert(to);
            }
        }
    }
    graph
}

/// `path` from the crate's root, when it is a `crate::`, `super::` or `self::` path in
/// `module`.
fn absolute(module: &[String], path: &[String]) -> Option<Vec<String>> {
    let mut base = match path.first()?.as_str() {
        "crate" => Vec::new(),
        "super" | "self" => module.to_vec(),
        _ => return None,
    };
    let mut rest = &path[1..];
    if path[0] == "super" {
        base.pop();
        while rest.first().is_some_and(|s| s == "super") {
            base.pop();
            rest = &rest[1..];
        }
    }
    base.extend(rest.iter().filter(|s| *s != "self").cloned());
    Some(base)
}

/// The two sibling modules whose subtrees hold `from` and `to`; none when one holds
/// the other.
fn siblings(from: &[String], to: &[String]) -> Option<(String, String)> {
    let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
    if common == from.len() || common == to.len() {
        return None;
    }
    Some((from[..=common].join("::"), to[..=common].join("::")))
}

/// The folder a module sits in, `""` for the top.
fn parent(module: &str) -> &str {
    module.rsplit_once("::").map_or("", |(folder, _)| folder)
}

/// `tokens` without the items `#[cfg(test)]` marks (a `mod tests { … }`, a `use`, a
/// function in an `impl`), at any depth.
fn without_test_items(tokens: TokenStream) -> TokenStream {
    let mut out = Vec::new();
    let mut tokens = tokens.into_iter().peekable();
    while let Some(token) = tokens.next() {
        match token {
            TokenTree::Punct(p) if p.as_char() == '#' && is_cfg_test(tokens.peek()) => {
                // The item ends at its `;` or with its block.
                for token in tokens.by_ref() {
                    match token {
                        TokenTree::Punct(p) if p.as_char() == ';' => break,
                        TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => break,
                        _ => {}
                    }
                }
            }
            TokenTree::Group(g) => out.push(TokenTree::Group(Group::new(
                g.delimiter(),
                without_test_items(g.stream()),
            ))),
            token => out.push(token),
        }
    }
    out.into_iter().collect()
}

fn is_cfg_test(attribute: Option<&TokenTree>) -> bool {
    matches!(attribute, Some(TokenTree::Group(g))
        if g.delimiter() == Delimiter::Bracket && g.stream().to_string().replace(' ', "") == "cfg(test)")
}

/// Every path in `tokens`, in order, inside groups and macros too: `a::b::c` as its
/// segments, each item of a `{…}` group after `::` as a path of its own, a glob as `*`.
/// A lone identifier is a path of one segment.
fn paths(tokens: TokenStream) -> Vec<Vec<String>> {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut found = Vec::new();
    let mut at = 0;
    while at < tokens.len() {
        match &tokens[at] {
            TokenTree::Ident(_) => at = path_at(&tokens, at, Vec::new(), &mut found),
            TokenTree::Group(g) => {
                found.extend(paths(g.stream()));
                at += 1;
            }
            _ => at += 1,
        }
    }
    found
}

/// Reads the path that `prefix` began and goes on at `tokens[at]` into `found`; where
/// it ends.
fn path_at(
    tokens: &[TokenTree],
    mut at: usize,
    mut path: Vec<String>,
    found: &mut Vec<Vec<String>>,
) -> usize {
    loop {
        match tokens.get(at) {
            Some(TokenTree::Ident(segment)) => path.push(segment.to_string()),
            Some(TokenTree::Punct(p)) if p.as_char() == '*' => path.push("*".into()),
            Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => {
                let items: Vec<TokenTree> = g.stream().into_iter().collect();
                for item in items.split(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ','))
                {
                    path_at(item, 0, path.clone(), found);
                }
                return at + 1;
            }
            _ => {
                found.extend((!path.is_empty()).then_some(path));
                return at;
            }
        }
        at += 1;
        match (tokens.get(at), tokens.get(at + 1)) {
            (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':' =>
            {
                at += 2
            }
            _ => {
                found.push(path);
                return at;
            }
        }
    }
}

/// The top-level modules in the order of CONTRIBUTING.md's layer table: row by row,
/// each row's modules as it lists them.
fn layer_table(contributing: &str) -> Vec<String> {
    let section = contributing
        .split("## The layers of `src/`")
        .nth(1)
        .expect("CONTRIBUTING.md has a section \"The layers of `src/`\"");
    let rows = section
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .skip(2);
    rows.flat_map(|row| {
        let modules = row.split('|').nth(2).unwrap_or_default();
        modules
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect::<Vec<_>>()
    })
    .collect()
}

/// What names a backend outside the storage layer: a folder under it (a backend's
/// module), a variant of its `Backend`, or one of [`BACKEND_CRATES`].
#[derive(Debug)]
struct Backends {
    modules: Vec<String>,
    variants: Vec<String>,
}

impl Backends {
    /// The backends of the storage layer under `src`: its folders, and the variants of
    /// the `enum Backend` its files define.
    fn of(src: &Path, sources: &[Source]) -> Backends {
        let mut modules: Vec<String> = fs::read_dir(src.join(STORAGE))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.is_dir())
            .filter_map(|path| Some(path.file_name()?.to_str()?.to_string()))
            .collect();
        modules.sort();
        let variants = sources
            .iter()
            .filter(|s| s.top() == STORAGE)
            .flat_map(|s| enum_variants(s.tokens.clone(), "Backend"))
            .collect();
        Backends { modules, variants }
    }
}

/// The variants of `enum NAME` in `tokens`, in order.
fn enum_variants(tokens: TokenStream, name: &str) -> Vec<String> {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let body = tokens.windows(3).find_map(|w| match w {
        [
            TokenTree::Ident(e),
            TokenTree::Ident(n),
            TokenTree::Group(body),
        ] if e == "enum" && n == name && body.delimiter() == Delimiter::Brace => {
            Some(body.stream().into_iter().collect::<Vec<_>>())
        }
        _ => None,
    });
    let body = body.unwrap_or_default();
    body.split(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ','))
        // A variant's first identifier outside its attributes' brackets is its name.
        .filter_map(|variant| {
            variant.iter().find_map(|t| match t {
                TokenTree::Ident(i) => Some(i.to_string()),
                _ => None,
            })
        })
        .collect()
}

/// Each file outside the storage layer that names a backend, with what it names:
/// `src/a.rs: state::postgres, tokio_postgres`.
fn backend_names_outside_storage(sources: &[Source], backends: &Backends) -> Vec<String> {
    let mut found: Vec<String> = sources
        .iter()
        .filter(|source| source.top() != STORAGE)
        .filter_map(|source| {
            let names = backend_names(source.tokens.clone(), backends);
            (!names.is_empty()).then(|| format!("{}: {}", source.file.display(), names.join(", ")))
        })
        .collect();
    found.sort();
    found
}

/// What `tokens` name of a backend, in order: a backend crate, `state::MODULE` and
/// `Backend::VARIANT` paths (or a glob of `Backend`).
fn backend_names(tokens: TokenStream, backends: &Backends) -> Vec<String> {
    let mut names = Vec::new();
    for path in paths(tokens) {
        for (at, segment) in path.iter().enumerate() {
            if BACKEND_CRATES.contains(&segment.as_str()) {
                names.push(segment.clone());
            }
            let Some(next) = path.get(at + 1) else {
                continue;
            };
            let named = match segment.as_str() {
                STORAGE => backends.modules.contains(next),
                "Backend" => backends.variants.contains(next) || next == "*",
                _ => false,
            };
            if named {
                names.push(format!("{segment}::{next}"));
            }
        }
    }
    names
}

/// A cycle of the graph, its first module repeated at its end, if there is one.
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        graph: &Graph,
        module: &str,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(from) = path.iter().position(|m| m == module) {
            let mut cycle = path[from..].to_vec();
            cycle.push(module.to_string());
            return Some(cycle);
        }
        if done.contains(module) {
            return None;
        }
        path.push(module.to_string());
        for next in graph.get(module).into_iter().flatten() {
            if let Some(cycle) = visit(graph, next, done, path) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(module.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|module| visit(graph, module, &mut done, &mut Vec::new()))
}

/// The modules of one folder (`""`: the top) for people: how many, each module's layer
/// (0 imports nothing; a module sits one above the highest it imports; modules in a
/// cycle have none), and its imports.
fn draw(graph: &Graph, folder: &str) -> String {
    let graph: Graph = graph
        .iter()
        .filter(|(module, _)| parent(module) == folder)
        .map(|(module, imports)| (module.clone(), imports.clone()))
        .collect();
    let edges: usize = graph.values().map(BTreeSet::len).sum();
    let mut out = format!("{} modules, {edges} edges\n", graph.len());
    let mut layers: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
    let mut unplaced = Vec::new();
    for module in graph.keys() {
        match layer(&graph, module, &mut Vec::new()) {
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
    for (module, targets) in &graph {
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
