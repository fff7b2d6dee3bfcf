//! Searching the topology space: `--random N --seed S [--max-cpus C]` writes
//! N generated topologies ([`crate::random::generate_one`]) to
//! `<out>/random/` and runs them like files; every pair whose guest disagrees
//! with the oracle is shrunk ([`crate::random::shrink_within`], each try a
//! run of the same kernel judged by the same oracle) and the smallest machine
//! that still disagrees is written to `<out>/found/` as a topology file with
//! `[source]` and `[expect]` filled.
//!
//! The inputs of random topologies are named `random/<name>.toml` in the spec
//! (not the `--out` path), so shards writing to different folders are one
//! matrix; the seed, N and C are in the spec ([`super::spec::RandomSpec`]).

use super::executor::Ready;
use super::oracle::{Evidence, Oracle};
use super::pair_runner::{file_name, PairRunner};
use super::report::{FoundTopology, PairRecord, PairStatus};
use super::spec::{InputFile, MatrixSpec, PlannedPair, RandomSpec};
use crate::random::{generate_one, shrink_within};
use crate::text::plural;
use crate::topology::{Expectation, ExpectedVerdict, Topology, TopologyDraft};
use std::path::{Path, PathBuf};

/// `--max-cpus` by default: small machines keep TCG fast.
pub const DEFAULT_MAX_CPUS: u32 = 32;
/// Runs one shrink may make (each boots a guest).
pub const SHRINK_TRIES: u32 = 100;
/// The folder (under `--out`) of the generated topologies.
pub const RANDOM_DIR: &str = "random";
/// The folder (under `--out`) of the shrunk topologies that disagree.
pub const FOUND_DIR: &str = "found";

/// `--random` could not write its topologies.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// The generator refused a machine (a generator bug, reported).
    #[error("--random: seed {seed}, topology {index}: {message}")]
    Generate {
        /// The seed.
        seed: u64,
        /// The topology's index.
        index: u64,
        /// The validation error.
        message: String,
    },
    /// A file or folder cannot be written.
    #[error("{path}: cannot write: {error}")]
    Write {
        /// The path.
        path: String,
        /// The OS error.
        error: std::io::Error,
    },
}

fn write(path: &Path, text: &str) -> Result<(), SearchError> {
    let fail = |source| SearchError::Write { path: path.display().to_string(), error: source };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    std::fs::write(path, text).map_err(fail)
}

/// Generate `r`'s topologies, write them to `<root>/random/<name>.toml` and
/// return them as inputs named `random/<name>.toml`.
///
/// # Errors
/// [`SearchError`].
pub fn write_random(r: &RandomSpec, root: &Path) -> Result<Vec<InputFile>, SearchError> {
    (0..u64::from(r.count))
        .map(|index| {
            let t = generate_one(r.seed, index, r.max_cpus).map_err(|e| SearchError::Generate {
                seed: r.seed,
                index,
                message: e.to_string().replace('\n', " "),
            })?;
            let rel = format!("{RANDOM_DIR}/{}.toml", t.name());
            let path = root.join(&rel);
            write(&path, &t.to_toml())?;
            let mut input = InputFile::read(&path);
            input.path = rel;
            Ok(input)
        })
        .collect()
}

/// Where an input's file is: `random/…` inputs of a `--random` matrix under
/// `root` (the `--out` folder), any other as given.
pub fn on_disk(spec: &MatrixSpec, input_path: &str, root: Option<&Path>) -> PathBuf {
    match root {
        Some(r) if spec.random.is_some() && input_path.starts_with(&format!("{RANDOM_DIR}/")) => r.join(input_path),
        _ => PathBuf::from(input_path),
    }
}

/// Everything shrinking needs.
pub struct Shrinker<'a> {
    /// The matrix.
    pub spec: &'a MatrixSpec,
    /// Topologies and kernels as the shard ran them.
    pub ready: &'a Ready,
    /// Runs each try.
    pub runner: &'a dyn PairRunner,
    /// Judges each try.
    pub oracle: &'a dyn Oracle,
    /// The `--out` folder (tries under `found/.tries/`, results under `found/`).
    pub root: &'a Path,
    /// Runs per shrink.
    pub max_tries: u32,
    /// True once the matrix must stop.
    pub stop: &'a (dyn Fn() -> bool + Sync),
}

impl Shrinker<'_> {
    /// Whether the guest still disagrees with the oracle on `t` (a rig error
    /// is not a disagreement); for a kernel finding (`finding`), whether the
    /// kernel still does not bring up the machine.
    fn disagrees(&self, pair: &PlannedPair, t: &Topology, finding: &std::cell::RefCell<Option<String>>) -> bool {
        if (self.stop)() {
            return false;
        }
        let (Some(Ok(kernel)), Some(kernel_spec)) = (self.ready.kernels.get(&pair.kernel), self.spec.kernel(pair))
        else {
            return false;
        };
        let path = self.root.join(FOUND_DIR).join(".tries").join(format!("{}.toml", file_name(&pair.name)));
        if write(&path, &t.to_toml()).is_err() {
            return false;
        }
        let mut p = pair.clone();
        p.file = path.display().to_string();
        let Ok(observation) = self.runner.run(&p, t, kernel) else { return false };
        let evidence = Evidence { pair: &p, topology: t, kernel, kernel_spec, observation: &observation };
        let Ok(j) = self.oracle.judge(&evidence) else { return false };
        if j.verdict.status != crate::verdict::Status::Fail {
            return false;
        }
        if finding.borrow().is_none() {
            return true;
        }
        // A finding must stay one; the shrunk machine's own words are kept.
        match j.verdict.kernel_finding() {
            Some(c) => {
                *finding.borrow_mut() = Some(c.message.clone());
                true
            }
            None => false,
        }
    }

    /// Shrink every failed pair of a random topology in `records`; write each
    /// result to `<root>/found/`. `on_note` hears one line per result.
    pub fn shrink_failures(&self, records: &[PairRecord], on_note: &mut dyn FnMut(&str)) -> Vec<FoundTopology> {
        let mut found = Vec::new();
        let several_kernels = self.spec.kernels.len() > 1;
        for r in records {
            if r.status != PairStatus::Fail || !r.pair.file.starts_with(&format!("{RANDOM_DIR}/")) || (self.stop)() {
                continue;
            }
            let Some(Ok(topo)) = self.ready.topologies.get(&r.pair.file) else { continue };
            // A kernel that did not bring up the machine is shrunk to a machine it
            // still does not bring up, not to any disagreement.
            let finding =
                std::cell::RefCell::new(r.verdict().and_then(|v| v.kernel_finding()).map(|c| c.message.clone()));
            on_note(&format!("shrinking {} (at most {})", r.pair.name, plural(self.max_tries, "run")));
            let shrunk = shrink_within(topo, self.max_tries, |t| self.disagrees(&r.pair, t, &finding));
            let finding = finding.into_inner();
            let mut draft = TopologyDraft::from(&shrunk.topology);
            if several_kernels {
                draft.name = format!("{}-{}", draft.name, file_name(&r.pair.kernel).replace(['@', '.', ':'], "_"));
            }
            let random = self.spec.random.map_or_else(String::new, |s| {
                format!(" (--random {} --seed {} --max-cpus {})", s.count, s.seed, s.max_cpus)
            });
            draft.expect = match &finding {
                Some(words) => Expectation {
                    verdict: ExpectedVerdict::KernelFinding,
                    source: format!("manarig matrix{random}: on kernel {}: {words}", r.pair.kernel),
                    on: std::collections::BTreeMap::new(),
                },
                None => Expectation {
                    verdict: ExpectedVerdict::Mismatch,
                    source: format!(
                        "manarig matrix{random}: on kernel {} the guest disagrees with oracle {}: {}",
                        r.pair.kernel,
                        self.spec.oracle,
                        r.first_mismatch.as_deref().unwrap_or("a failed check")
                    ),
                    on: std::collections::BTreeMap::new(),
                },
            };
            let rel = format!("{FOUND_DIR}/{}.toml", draft.name);
            if let Err(e) = write(&self.root.join(&rel), &draft.to_toml()) {
                on_note(&e.to_string());
                continue;
            }
            on_note(&format!(
                "{}: {}, {} after {} ({}) -> {rel}",
                r.pair.name,
                plural(shrunk.topology.ncpu(), "CPU"),
                plural(shrunk.topology.nodes().len(), "node"),
                plural(shrunk.steps.len(), "step"),
                plural(shrunk.tries, "run")
            ));
            found.push(FoundTopology {
                pair: r.pair.name.clone(),
                kernel: r.pair.kernel.clone(),
                file: rel,
                cpus: shrunk.topology.ncpu(),
                nodes: u32::try_from(shrunk.topology.nodes().len()).unwrap_or(u32::MAX),
                steps: shrunk.steps,
                tries: shrunk.tries,
                first_mismatch: r.first_mismatch.clone(),
            });
        }
        let _ = std::fs::remove_dir_all(self.root.join(FOUND_DIR).join(".tries"));
        found
    }
}
