//! The device's layers (src/lib.rs): each folder imports only the layers
//! below it, so a change to the vfio-user shell cannot reach into the wire
//! formats' users the other way round, and the core never knows the shell.
//!
//! An import is a `crate::LAYER` path in code (comments and a file's trailing
//! `#[cfg(test)] mod tests` are left out: tests may reach anywhere).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The layers from the bottom, and the seam modules every layer may use.
const LAYERS: [&str; 7] = ["defs", "inject", "queues", "datapath", "device", "shell", "process"];
const SEAM: [&str; 2] = ["bar", "interrupt"];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level modules `text` names as `crate::NAME` outside comments and tests.
fn crate_imports(text: &str) -> BTreeSet<String> {
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
    let code: String = text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
    code.match_indices("crate::")
        .filter(|(i, _)| *i == 0 || !code.as_bytes()[i - 1].is_ascii_alphanumeric() && code.as_bytes()[i - 1] != b'_')
        .map(|(i, m)| {
            code[i + m.len()..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect::<String>()
        })
        .filter(|name| !name.is_empty())
        .collect()
}

#[test]
fn every_layer_imports_only_the_layers_below_it_and_the_seam() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut offences = Vec::new();
    let mut seen = BTreeSet::new();
    for file in files {
        let rel = file.strip_prefix(src()).expect("under src");
        let first = rel.iter().next().and_then(|c| c.to_str()).unwrap_or_default().trim_end_matches(".rs");
        let Some(level) = LAYERS.iter().position(|l| *l == first) else { continue };
        seen.insert(first.to_owned());
        let text = std::fs::read_to_string(&file).expect("readable source");
        for name in crate_imports(&text) {
            let allowed = SEAM.contains(&name.as_str())
                || LAYERS.iter().position(|l| *l == name).is_some_and(|other| other <= level);
            if !allowed {
                offences.push(format!("{}: imports crate::{name}", rel.display()));
            }
        }
    }
    assert_eq!(seen.len(), LAYERS.len(), "every layer is a folder under src/: {seen:?}");
    assert!(offences.is_empty(), "imports against the layer order {LAYERS:?}:\n{}", offences.join("\n"));
}

#[test]
fn the_check_sees_an_import_that_runs_back_up() {
    let text = "//! crate::shell in a comment\nuse crate::queues::Mem;\nuse crate::shell::server;\n\
                #[cfg(test)]\nmod tests {\n    use crate::process;\n}\n";
    let got = crate_imports(text);
    assert_eq!(got, BTreeSet::from(["queues".to_owned(), "shell".to_owned()]));
}
