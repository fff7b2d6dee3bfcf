//! The house rules of ARCHITECTURE.md the compiler cannot see, checked on the
//! sources and manifests: the harness crates depend only downward in their
//! layer order, none of them links the device's vfio-user or guest-memory
//! stacks, only the command line knows exit codes, no import cycles between the
//! modules of a crate (siblings under one parent, at every level), the
//! model crate stays pure, and no error prints a cause it also returns as its
//! source.
//!
//! An import is any `crate::a::b` or `super::…` path in code (comments and the
//! `#[cfg(test)] mod tests` block at the end of a file are left out: tests may
//! reach anywhere).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Module path of a source file relative to its crate's `src/` (`rig/mod.rs` → `rig`).
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel.with_extension("").iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib" || p == "main") {
        parts.pop();
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).flatten() {
        let p = entry.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The code of a file without comments and without its trailing test module.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// The lower-case path segments at the start of `tail` (`rig::queues::X` → rig, queues).
fn segments(tail: &str) -> Vec<&str> {
    tail.split("::")
        .map(|s| s.split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')).next().unwrap_or(""))
        .take_while(|s| !s.is_empty())
        .collect()
}

/// Lower-case path segments after `prefix` in `text` (`crate::rig::queues::x` → rig, queues, x).
fn paths_after<'a>(text: &'a str, prefix: &str) -> Vec<Vec<&'a str>> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(prefix) {
        let before_ok = i == 0 || !rest.as_bytes()[i - 1].is_ascii_alphanumeric() && rest.as_bytes()[i - 1] != b'_';
        let tail = &rest[i + prefix.len()..];
        rest = tail;
        if !before_ok {
            continue;
        }
        out.push(segments(tail));
    }
    out
}

/// Every `super::…::x` path in `text`: how many `super`s, then the lower-case segments.
fn super_paths(text: &str) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("super::") {
        let word_start = i == 0 || !(rest.as_bytes()[i - 1].is_ascii_alphanumeric() || rest.as_bytes()[i - 1] == b'_');
        let mut tail = &rest[i..];
        let mut ups = 0;
        while let Some(t) = tail.strip_prefix("super::") {
            ups += 1;
            tail = t;
        }
        rest = tail;
        if word_start {
            out.push((ups, segments(tail).into_iter().map(str::to_owned).collect()));
        }
    }
    out
}

/// Module → the module paths it names.
fn imports(src: &Path) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut graph: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(src).expect("under src");
        if rel.starts_with("bin") {
            continue;
        }
        let module = module_of(rel);
        let text = code(&std::fs::read_to_string(&f).expect("readable source"));
        let entry = graph.entry(module.clone()).or_default();
        for segs in paths_after(&text, "crate::") {
            entry.insert(segs.iter().map(|s| (*s).to_owned()).collect());
        }
        for (ups, segs) in super_paths(&text) {
            let base = module.iter().take(module.len().saturating_sub(ups)).cloned();
            entry.insert(base.chain(segs).collect());
        }
    }
    graph
}

/// Sibling edges: for an import from `a` of `b`, the children of their common
/// parent that lead to each (parent/child and self imports are not edges).
fn sibling_edges(graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (a, targets) in graph {
        for b in targets {
            let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
            if common >= a.len() || common >= b.len() {
                continue;
            }
            edges.entry(a[..=common].to_vec()).or_default().insert(b[..=common].to_vec());
        }
    }
    edges
}

/// A cycle in `edges`, if there is one (depth-first search with colours).
fn find_cycle(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Option<Vec<Vec<String>>> {
    fn visit(
        v: &Vec<String>,
        edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        state: &mut BTreeMap<Vec<String>, u8>,
        stack: &mut Vec<Vec<String>>,
    ) -> Option<Vec<Vec<String>>> {
        state.insert(v.clone(), 1);
        stack.push(v.clone());
        for w in edges.get(v).into_iter().flatten() {
            match state.get(w).copied().unwrap_or(0) {
                0 => {
                    if let Some(c) = visit(w, edges, state, stack) {
                        return Some(c);
                    }
                }
                1 => {
                    let start = stack.iter().position(|x| x == w).unwrap_or(0);
                    return Some(stack[start..].to_vec());
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(v.clone(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for v in edges.keys() {
        if state.get(v).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(v, edges, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// Every crate's folder (the workspace's members, `harness/crates/*` expanded).
fn crates() -> Vec<PathBuf> {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml");
    let doc: toml::Value = toml::from_str(&manifest).expect("workspace manifest");
    let members = doc["workspace"]["members"].as_array().expect("members");
    let mut out = Vec::new();
    for m in members.iter().filter_map(toml::Value::as_str) {
        match m.strip_suffix("/*") {
            Some(dir) => {
                let mut sub: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
                    .expect("members folder")
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.join("Cargo.toml").is_file())
                    .collect();
                sub.sort();
                out.extend(sub);
            }
            None => out.push(root().join(m)),
        }
    }
    out
}

#[test]
fn no_crate_has_an_import_cycle_between_its_modules() {
    let all = crates();
    assert!(all.len() >= 16, "the workspace's crates: {all:?}");
    for krate in all {
        let graph = imports(&krate.join("src"));
        if let Some(cycle) = find_cycle(&sibling_edges(&graph)) {
            let names: Vec<String> = cycle.iter().map(|m| m.join("::")).collect();
            panic!(
                "{}: modules import each other in a circle: {} -> (back to the first)",
                krate.display(),
                names.join(" -> ")
            );
        }
    }
}

/// The harness's crates from the bottom up (ARCHITECTURE.md, *Crates*): each may
/// depend on the ones before it only.
const HARNESS_LAYERS: [&str; 12] = [
    "manarig-model",
    "manarig-proc",
    "manarig-guest",
    "manarig-provision",
    "manarig-selftests",
    "manarig-qemu",
    "manarig-traffic",
    "manarig-verdict",
    "manarig-import",
    "manarig-rig",
    "manarig-matrix",
    "harness",
];

/// (package name, its normal dependencies) of a crate folder.
fn manifest_deps(dir: &Path) -> (String, Vec<String>) {
    let text = std::fs::read_to_string(dir.join("Cargo.toml")).expect("manifest");
    let doc: toml::Value = toml::from_str(&text).expect("manifest parses");
    let name = doc["package"]["name"].as_str().expect("name").to_owned();
    let deps = doc
        .get("dependencies")
        .and_then(toml::Value::as_table)
        .map(|t| t.keys().cloned().collect())
        .unwrap_or_default();
    (name, deps)
}

#[test]
fn the_harness_crates_depend_only_on_the_layers_below_them() {
    let mut seen = 0;
    for dir in crates() {
        let (name, deps) = manifest_deps(&dir);
        let Some(level) = HARNESS_LAYERS.iter().position(|l| *l == name) else { continue };
        seen += 1;
        for d in deps.iter().filter(|d| HARNESS_LAYERS.contains(&d.as_str())) {
            let dl = HARNESS_LAYERS.iter().position(|l| l == d).unwrap_or(usize::MAX);
            assert!(dl < level, "{name} depends on {d}, which is not below it in HARNESS_LAYERS");
        }
    }
    assert_eq!(seen, HARNESS_LAYERS.len(), "every layer is a workspace crate");
}

#[test]
fn no_harness_crate_links_the_devices_vfio_user_or_guest_memory_stacks() {
    // The dependency closure of each harness crate, from Cargo.lock.
    let lock = std::fs::read_to_string(root().join("Cargo.lock")).expect("Cargo.lock");
    let doc: toml::Value = toml::from_str(&lock).expect("lock parses");
    let mut graph: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in doc["package"].as_array().expect("packages") {
        let name = p["name"].as_str().expect("name").to_owned();
        let deps = p.get("dependencies").and_then(toml::Value::as_array).map_or_else(Vec::new, |a| {
            a.iter().filter_map(toml::Value::as_str).map(|d| d.split(' ').next().unwrap_or(d).to_owned()).collect()
        });
        graph.entry(name).or_default().extend(deps);
    }
    for krate in HARNESS_LAYERS {
        let mut stack = vec![krate.to_owned()];
        let mut reach = BTreeSet::new();
        while let Some(n) = stack.pop() {
            if reach.insert(n.clone()) {
                stack.extend(graph.get(&n).cloned().unwrap_or_default());
            }
        }
        for banned in ["device-model", "vfio_user", "vfio-user", "vm-memory", "vfio-bindings"] {
            assert!(!reach.contains(banned), "{krate} links {banned}: use mana-device-api's types instead");
        }
    }
}

#[test]
fn only_the_command_line_knows_exit_codes() {
    for dir in crates() {
        let (name, _) = manifest_deps(&dir);
        if !HARNESS_LAYERS.contains(&name.as_str()) || name == "harness" {
            continue;
        }
        let mut files = Vec::new();
        rust_files(&dir.join("src"), &mut files);
        for f in files {
            let text = code(&std::fs::read_to_string(&f).expect("source"));
            // children.rs ends the process on Ctrl-C after reaping its children: a signal's exit, not a verdict's.
            let allowed = f.ends_with("children.rs") && !text.contains("ExitCode");
            assert!(
                allowed || !(text.contains("ExitCode") || text.contains("process::exit")),
                "{}: exit codes belong to harness/src/cli",
                f.display()
            );
        }
    }
}

#[test]
fn the_model_crate_does_no_io_but_reading_a_topology_file() {
    let manifest = std::fs::read_to_string(root().join("model/Cargo.toml")).expect("model/Cargo.toml");
    let deps = manifest.split("[dependencies]").nth(1).and_then(|s| s.split("\n[").next()).unwrap_or("");
    let names: Vec<&str> =
        deps.lines().filter_map(|l| l.split(['.', '=', ' ']).next()).filter(|n| !n.trim().is_empty()).collect();
    // serde_path_to_error: a wrongly typed field in a topology file names its TOML path.
    assert_eq!(names, ["serde", "toml", "serde_path_to_error", "thiserror"], "the model crate's dependencies");
    let mut files = Vec::new();
    rust_files(&root().join("model/src"), &mut files);
    for f in files {
        let text = code(&std::fs::read_to_string(&f).expect("source"));
        for io in ["std::process", "std::net", "std::env", "std::thread", "libc::", "File::create", "fs::write"] {
            assert!(!text.contains(io), "{}: uses {io}; the model crate is pure", f.display());
        }
    }
}

#[test]
fn the_checker_sees_a_cycle_when_there_is_one() {
    let m = |s: &str| s.split("::").map(str::to_owned).collect::<Vec<_>>();
    let mut graph = BTreeMap::new();
    graph.insert(m("verdict::judge"), BTreeSet::from([m("verdict::observed::Observed")]));
    graph.insert(m("verdict::observed"), BTreeSet::from([m("verdict::judge::hint")]));
    graph.insert(m("rig"), BTreeSet::from([m("verdict")]));
    let cycle = find_cycle(&sibling_edges(&graph)).expect("a cycle");
    assert_eq!(cycle.len(), 2);
    graph.remove(&m("verdict::observed"));
    assert!(find_cycle(&sibling_edges(&graph)).is_none());
}

#[test]
fn no_text_in_the_repository_points_outside_it() {
    // Code and docs stand on their own: no tracker numbers, no private notes, no
    // files of another checkout. Checked on every tracked text file.
    let out = std::process::Command::new("git")
        .args(["ls-files", "*.rs", "*.md", "*.sh", "*.toml", "*.yml"])
        .current_dir(root())
        .output()
        .expect("git ls-files");
    let files = String::from_utf8_lossy(&out.stdout).into_owned();
    let patterns = [
        "issue 1",
        "issue 2",
        "issue 3",
        "issue 4",
        "issue 5",
        "issue 6",
        "issue 7",
        "issue 8",
        "issue 9",
        "the brief",
        "devshell",
        "/work/scratch",
        "/work/main",
        "../shared/",
        "DESIGN.md",
        "mana-gdma.md",
        "cases/public-reports.md",
    ];
    let mut found = Vec::new();
    for f in files.lines().filter(|f| !f.ends_with("architecture.rs")) {
        let Ok(text) = std::fs::read_to_string(root().join(f)) else { continue };
        for (n, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            if let Some(p) = patterns.iter().find(|p| lower.contains(&p.to_lowercase())) {
                found.push(format!("{f}:{}: {p}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "text pointing outside the repository:\n{}", found.join("\n"));
}

/// The end of the bracketed text that opens at `open` (`(`, `[`, `{` or `<`
/// counted alike), skipping string literals: the index just past its closer.
fn closing(text: &str, open: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let (mut depth, mut i, mut in_str) = (0i32, open, false);
    while i < bytes.len() {
        let c = bytes[i];
        if in_str {
            match c {
                b'\\' => i += 1,
                b'"' => in_str = false,
                _ => {}
            }
        } else {
            match c {
                b'"' => in_str = true,
                b'(' | b'[' | b'{' | b'<' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                b'>' if i > 0 && bytes[i - 1] != b'-' && bytes[i - 1] != b'=' => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                return Some(i + 1);
            }
        }
        i += 1;
    }
    None
}

/// The item after an attribute that ends at `end`: past doc comments and
/// other attributes, `[pub] [struct] Name {…}` or `Name(…)`; its name, its
/// fields' text and whether it is a tuple. None for a unit variant or an enum.
fn item_after(text: &str, end: usize) -> Option<(String, &str, bool)> {
    let mut rest = text[end..].trim_start_matches([']', ' ', '\n']);
    loop {
        rest = rest.trim_start();
        if rest.starts_with("//") {
            rest = rest.split_once('\n').map_or("", |(_, r)| r);
        } else if rest.starts_with("#[") {
            rest = &rest[closing(rest, 1).unwrap_or(rest.len())..];
        } else {
            break;
        }
    }
    let rest = rest.trim_start_matches("pub(crate) ").trim_start_matches("pub ").trim_start_matches("struct ");
    let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    let after = rest[name.len()..].trim_start();
    if !(after.starts_with('{') || after.starts_with('(')) {
        return None;
    }
    let offset = text.len() - after.len();
    let close = closing(text, offset)?;
    Some((name, &text[offset + 1..close - 1], after.starts_with('(')))
}

/// The fields of an item's `body` (split at top-level commas, comments left
/// out) as (name, returned as its source): a tuple's are named by index.
fn fields(body: &str, tuple: bool) -> Vec<(String, bool)> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (k, c) in body.char_indices() {
        match c {
            '(' | '[' | '{' | '<' => depth += 1,
            ')' | ']' | '}' | '>' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&body[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    parts.push(&body[start..]);
    parts
        .into_iter()
        .filter(|f| !f.trim().is_empty())
        .enumerate()
        .map(|(index, field)| {
            let field: String =
                field.lines().map(str::trim).filter(|l| !l.starts_with("//")).collect::<Vec<_>>().join(" ");
            let attribute = field.contains("#[source]") || field.contains("#[from]");
            let name = if tuple {
                index.to_string()
            } else {
                let decl = field.rsplit("] ").next().unwrap_or(&field).trim_start_matches("pub ");
                decl.split(':').next().unwrap_or("").trim().to_owned()
            };
            let returned = attribute || (!tuple && name == "source");
            (name, returned)
        })
        .collect()
}

/// `text`'s error types (`#[error("…")]` on a struct or a variant) whose message
/// prints a field that the type also returns as its source (`#[source]`,
/// `#[from]`, or a field named `source`): `Name.field` each.
fn printed_and_returned(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = text[at..].find("#[error(").map(|i| at + i) {
        at = i + 1;
        let Some(end) = closing(text, i + "#[error".len()) else { continue };
        let message = &text[i + "#[error(".len()..end - 1];
        if message.trim() == "transparent" {
            continue;
        }
        let Some((name, body, tuple)) = item_after(text, end) else { continue };
        for (field, returned) in fields(body, tuple) {
            let printed = message.contains(&format!("{{{field}}}"))
                || message.contains(&format!("{{{field}:"))
                || message.contains(&format!(".{field}"));
            if returned && printed {
                out.push(format!("{name}.{field}"));
            }
        }
    }
    out
}

#[test]
fn no_error_prints_a_cause_it_also_returns() {
    // ARCHITECTURE.md, "Errors": a variant names its cause in its message or
    // returns it as its source, never both, so that text::chain prints each
    // cause once.
    let mut found = Vec::new();
    for dir in crates() {
        let mut files = Vec::new();
        rust_files(&dir.join("src"), &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f).expect("source");
            found.extend(printed_and_returned(&text).into_iter().map(|e| format!("{}: {e}", f.display())));
        }
    }
    assert!(found.is_empty(), "errors that print their source and return it too:\n{}", found.join("\n"));
}

#[test]
fn the_cause_checker_sees_a_cause_printed_and_returned() {
    let both = r#"
        #[derive(Debug, thiserror::Error)]
        pub enum E {
            /// Doc.
            #[error("{path}: {source}")]
            Io {
                /// The path.
                path: String,
                source: std::io::Error,
            },
            #[error("cannot run make: {0}")]
            Spawn(#[source] std::io::Error),
            #[error("booting {name}")]
            Boot {
                name: String,
                #[source]
                cause: Inner,
            },
            #[error("{path}: {error}")]
            Read { path: String, error: std::io::Error },
            #[error(transparent)]
            Other(#[from] Inner),
        }
    "#;
    assert_eq!(printed_and_returned(both), ["Io.source", "Spawn.0"]);
}
