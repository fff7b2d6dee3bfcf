//! What a matrix runs: its topology files (folders expanded), kernels and
//! oracle, the number of shards, and from those every (topology, kernel) pair
//! with its cost and shard. Shards of one matrix have equal specs; the
//! [`MatrixSpec::digest`] names one.

use super::cost::{self, KernelKind};
use super::kernels::{hex, KernelSpec};
use super::shard::{self, Shard};
use crate::topology::{Arch, Topology};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// One topology file, as read when the matrix was planned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputFile {
    /// The path as given, or found in a given folder (`topologies/seed-002.toml`).
    pub path: String,
    /// The topology's `name`, or the file stem when the file does not load.
    pub name: String,
    /// SHA-256 of the file's bytes (hex); empty when it cannot be read.
    pub sha256: String,
    /// CPUs of the machine; `None` when the file does not load.
    pub vcpus: Option<u32>,
    /// Whether the file marks the machine slow (`slow`, default from 96 CPUs).
    pub slow: bool,
    /// The file's one-line error when it does not load (its pairs are rig errors).
    pub error: Option<String>,
    /// Its `[machine] arch`: the guest's architecture of its pairs off the
    /// arch axis (absent from the JSON for x86_64, so older digests stand).
    #[serde(default, skip_serializing_if = "Arch::is_x86_64")]
    pub arch: Arch,
}

impl InputFile {
    /// Read and check `path` (valid, and in the node order a guest on x86 shows:
    /// [`Topology::check_guest_node_ids`]). Never fails: a bad file is an input with an
    /// `error`.
    pub fn read(path: &Path) -> Self {
        let shown = path.display().to_string();
        let stem = path.file_stem().map_or_else(|| shown.clone(), |s| s.to_string_lossy().into_owned());
        let broken = |sha256: String, error: String| InputFile {
            path: shown.clone(),
            name: stem.clone(),
            sha256,
            vcpus: None,
            slow: false,
            error: Some(error.replace(['\n', '\r'], " ")),
            arch: Arch::default(),
        };
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) => return broken(String::new(), format!("{shown}: cannot read the topology file: {e}")),
        };
        let sha256 = hex(&Sha256::digest(&bytes));
        let text = match String::from_utf8(bytes) {
            Ok(t) => t,
            Err(_) => return broken(sha256, format!("{shown}: not UTF-8 text")),
        };
        // Every pair boots a QEMU x86 guest: a file whose node ids such a guest would not
        // show is refused up front, like an invalid one, instead of after a boot per kernel.
        match Topology::from_toml_str(&shown, &text).and_then(|t| t.check_guest_node_ids(&shown).map(|()| t)) {
            Ok(t) => InputFile {
                path: shown,
                name: t.name().to_owned(),
                sha256,
                vcpus: Some(t.ncpu()),
                slow: t.slow(),
                error: None,
                arch: t.arch(),
            },
            Err(e) => broken(sha256, e.to_string()),
        }
    }
}

/// Errors of the matrix's inputs as a whole (single files are never errors: see [`InputFile`]).
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// A folder cannot be listed.
    #[error("{path}: cannot list the folder: {error}")]
    Folder {
        /// The folder.
        path: String,
        /// The OS error.
        error: std::io::Error,
    },
    /// A folder holds no `*.toml`.
    #[error("{0}: no topology files (*.toml) in the folder")]
    EmptyFolder(String),
    /// No topology given at all.
    #[error("no topology files given")]
    Nothing,
}

/// The topology files named by `args`: a folder stands for its `*.toml` files
/// (not its subfolders) by name; a file for itself, even one that does not
/// exist (it becomes a rig error). The same path twice counts once.
///
/// # Errors
/// [`InputError`] for an unreadable or empty folder, or no arguments.
pub fn expand(args: &[PathBuf]) -> Result<Vec<PathBuf>, InputError> {
    let mut out: Vec<PathBuf> = Vec::new();
    for a in args {
        if a.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(a)
                .map_err(|source| InputError::Folder { path: a.display().to_string(), error: source })?
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "toml"))
                .collect();
            if files.is_empty() {
                return Err(InputError::EmptyFolder(a.display().to_string()));
            }
            files.sort();
            out.extend(files);
        } else {
            out.push(a.clone());
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|p| seen.insert(p.clone()));
    if out.is_empty() {
        return Err(InputError::Nothing);
    }
    Ok(out)
}

/// Read every file; pair names must be unique. Valid files claim their
/// topology names first, in order: a second valid file with a name already
/// taken becomes a broken input, and a broken file that shares a name keeps
/// its own error under a new name (it never keeps a valid file from running).
pub fn read_inputs(paths: &[PathBuf]) -> Vec<InputFile> {
    let mut inputs: Vec<InputFile> = paths.iter().map(|p| InputFile::read(p)).collect();
    let (valid, broken): (Vec<usize>, Vec<usize>) = (0..inputs.len()).partition(|&i| inputs[i].error.is_none());
    let mut taken: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    for i in valid.into_iter().chain(broken) {
        let f = &mut inputs[i];
        match taken.get(&f.name) {
            Some(first) => {
                if f.error.is_none() {
                    f.error = Some(format!("{}: its topology name {:?} is also the name of {first}", f.path, f.name));
                    f.vcpus = None;
                }
                f.name = format!("{}~{}", f.name, i + 1);
            }
            None => {
                taken.insert(f.name.clone(), f.path.clone());
            }
        }
    }
    inputs
}

/// Everything that decides which pairs a matrix runs and how they are judged:
/// equal on every shard of one matrix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatrixSpec {
    /// The topology files, in the order given (folders expanded by name).
    pub inputs: Vec<InputFile>,
    /// The kernels, in the order given.
    pub kernels: Vec<KernelSpec>,
    /// The oracle's identity ([`super::oracle::Oracle::identity`]; `model` by default).
    pub oracle: String,
    /// Shards the matrix is split into (1 = not split).
    pub shards: u32,
    /// `--random N --seed S --max-cpus C`: the generated topologies (their
    /// inputs are `random/<name>.toml`, under the `--out` folder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub random: Option<RandomSpec>,
    /// `--inject SPEC`s, as written back (device_model::inject): every pair's
    /// device misbehaves so, and is judged by `driver_survived`. Empty (and
    /// absent from the JSON, so older digests stand) without.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inject: Vec<String>,
    /// `--selftests [--tests …]`: every pair's guest also runs the kernel's
    /// drivers/net selftests (the patterns; empty: the rig's set). Absent
    /// from the JSON without.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selftests: Option<Vec<String>>,
    /// `--arch x86_64,arm64`: the guest architectures, an axis of the plan
    /// (every topology on every kernel on each of them, the file's own
    /// `[machine] arch` overridden as `run --arch` does). Empty (and absent
    /// from the JSON, so older digests stand): each file's own architecture.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub archs: Vec<Arch>,
}

/// What `--random` generated: part of the matrix's spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RandomSpec {
    /// `--seed`.
    pub seed: u64,
    /// `--random N`.
    pub count: u32,
    /// `--max-cpus`.
    pub max_cpus: u32,
}

/// A pair's name: `<topology>@<kernel>`, and `@<arch>` on the matrix's arch
/// axis (`seed-002@6.12@arm64`).
pub fn pair_name(topology: &str, kernel: &str, arch: Option<Arch>) -> String {
    match arch {
        Some(a) => format!("{topology}@{kernel}@{a}"),
        None => format!("{topology}@{kernel}"),
    }
}

/// One (topology, kernel) pair of the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedPair {
    /// `<topology>@<kernel>` (`seed-002@6.12-min`).
    pub name: String,
    /// The topology's name.
    pub topology: String,
    /// Its file.
    pub file: String,
    /// The kernel's label.
    pub kernel: String,
    /// The guest's architecture on the matrix's arch axis (`--arch`; then
    /// the name ends in `@<arch>`); `None`: the file's own (absent from the JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<Arch>,
    /// CPUs of the machine (`None`: the file does not load).
    pub vcpus: Option<u32>,
    /// Estimated seconds of the run ([`cost::pair_cost_s`]).
    pub cost_s: f64,
    /// The shard that runs it (1-based).
    pub shard: u32,
}

impl MatrixSpec {
    /// The spec's digest: the first 16 hex digits of the SHA-256 of its JSON.
    pub fn digest(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        hex(&Sha256::digest(&json))[..16].to_owned()
    }

    /// The cost class of `--oracle baseline`'s K0, which boots once more per pair
    /// (its identity is `baseline <label> = <kernel identity>`); `None` for other oracles.
    fn baseline_kind(&self) -> Option<KernelKind> {
        let identity = self.oracle.strip_prefix("baseline ")?.split_once(" = ")?.1;
        Some(if identity.starts_with("pinned:") || identity.starts_with("image:") {
            KernelKind::Debian
        } else {
            KernelKind::Minimal
        })
    }

    /// Every pair, topology-major in the order given (then kernel, then
    /// architecture), with its cost (with `--oracle baseline`, K0's run of
    /// the same topology included) and shard.
    pub fn plan(&self) -> Vec<PlannedPair> {
        let mut pairs = Vec::new();
        let k0 = self.baseline_kind();
        let archs: Vec<Option<Arch>> =
            if self.archs.is_empty() { vec![None] } else { self.archs.iter().copied().map(Some).collect() };
        for input in &self.inputs {
            for k in &self.kernels {
                for &arch in &archs {
                    let cost_s = match input.vcpus {
                        Some(v) if input.error.is_none() => {
                            let one = |kind| cost::pair_cost_s(v, kind) * cost::arch_factor(arch);
                            one(k.kind) + k0.map_or(0.0, one)
                        }
                        _ => cost::BROKEN_INPUT_COST_S,
                    };
                    pairs.push(PlannedPair {
                        name: pair_name(&input.name, &k.label, arch),
                        topology: input.name.clone(),
                        file: input.path.clone(),
                        kernel: k.label.clone(),
                        arch,
                        vcpus: input.vcpus,
                        cost_s,
                        shard: 1,
                    });
                }
            }
        }
        let items: Vec<(&str, f64)> = pairs.iter().map(|p| (p.name.as_str(), p.cost_s)).collect();
        let shards = shard::assign(&items, self.shards);
        for (p, s) in pairs.iter_mut().zip(shards) {
            p.shard = s;
        }
        pairs
    }

    /// The pairs of one shard, in plan order.
    pub fn shard_plan(&self, shard: Shard) -> Vec<PlannedPair> {
        self.plan().into_iter().filter(|p| p.shard == shard.index).collect()
    }

    /// The input a pair runs.
    pub fn input(&self, pair: &PlannedPair) -> Option<&InputFile> {
        self.inputs.iter().find(|i| i.path == pair.file && i.name == pair.topology)
    }

    /// The guest architecture a pair runs on: its arch axis's, else its file's.
    pub fn arch_of(&self, pair: &PlannedPair) -> Arch {
        pair.arch.or_else(|| self.input(pair).map(|i| i.arch)).unwrap_or_default()
    }

    /// The kernel a pair runs.
    pub fn kernel(&self, pair: &PlannedPair) -> Option<&KernelSpec> {
        self.kernels.iter().find(|k| k.label == pair.kernel)
    }

    /// What differs between two specs, one phrase per difference (empty: equal).
    pub fn differences(&self, other: &MatrixSpec) -> Vec<String> {
        let mut out = Vec::new();
        if self.shards != other.shards {
            out.push(format!("split into {} vs {} shards", self.shards, other.shards));
        }
        let files = |s: &MatrixSpec| {
            s.inputs.iter().map(|i| format!("{} ({})", i.path, short_hash(&i.sha256))).collect::<Vec<_>>()
        };
        let (a, b) = (files(self), files(other));
        if a != b {
            let only = |x: &[String], y: &[String]| x.iter().filter(|f| !y.contains(f)).cloned().collect::<Vec<_>>();
            let (oa, ob) = (only(&a, &b), only(&b, &a));
            out.push(if oa.is_empty() && ob.is_empty() {
                "the topology files are in another order".to_owned()
            } else {
                format!("topology files differ: only in the first {oa:?}, only in the second {ob:?}")
            });
        }
        let kernels =
            |s: &MatrixSpec| s.kernels.iter().map(|k| format!("{} = {}", k.label, k.identity)).collect::<Vec<_>>();
        if kernels(self) != kernels(other) {
            out.push(format!("kernels differ: {:?} vs {:?}", kernels(self), kernels(other)));
        }
        if self.random != other.random {
            out.push(format!("random topologies differ: {:?} vs {:?}", self.random, other.random));
        }
        if self.oracle != other.oracle {
            out.push(format!("oracles differ: {} vs {}", self.oracle, other.oracle));
        }
        if self.selftests != other.selftests {
            out.push(format!("selftests differ: {:?} vs {:?}", self.selftests, other.selftests));
        }
        if self.archs != other.archs {
            out.push(format!("architectures differ: {:?} vs {:?}", self.archs, other.archs));
        }
        if self.inject != other.inject {
            out.push(format!("injections differ: {:?} vs {:?}", self.inject, other.inject));
        }
        if out.is_empty() && self != other {
            out.push("the specs differ in details (topology names or errors, patch sets)".to_owned());
        }
        out
    }

    /// The cost class of a kernel label (Minimal when unknown).
    pub fn kind_of(&self, label: &str) -> KernelKind {
        self.kernels.iter().find(|k| k.label == label).map_or(KernelKind::Minimal, |k| k.kind)
    }
}

fn short_hash(h: &str) -> &str {
    &h[..h.len().min(12)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::kernels::KernelRequest;

    fn topologies() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../topologies")
    }

    fn spec(shards: u32) -> MatrixSpec {
        let files = expand(&[topologies()]).expect("topologies");
        let kernels = ["6.12-min", "6.1"]
            .iter()
            .map(|k| KernelRequest::Choice(k.parse().expect("kernel")).spec().expect("spec"))
            .collect();
        MatrixSpec {
            inputs: read_inputs(&files),
            kernels,
            oracle: "model".into(),
            shards,
            random: None,
            inject: vec![],
            selftests: None,
            archs: vec![],
        }
    }

    #[test]
    fn shards_with_other_selftests_do_not_merge_and_a_plain_spec_keeps_its_digest() {
        let plain = spec(1);
        let mut with = spec(1);
        with.selftests = Some(vec!["quick".into()]);
        assert!(
            plain.differences(&with).iter().any(|d| d.starts_with("selftests differ")),
            "{:?}",
            plain.differences(&with)
        );
        let json = serde_json::to_string(&plain).expect("json");
        assert!(!json.contains("\"selftests\":"), "absent without --selftests: {json}");
    }

    #[test]
    fn a_folder_expands_to_its_topology_files_by_name() {
        let files = expand(&[topologies(), topologies().join("seed-002.toml")]).expect("expand");
        assert!(files.len() >= 17, "{files:?}");
        assert!(files.windows(2).all(|w| w[0] < w[1]), "sorted, no duplicates");
        assert!(files.iter().all(|f| f.extension().is_some_and(|e| e == "toml")));
        let empty = tempfile::tempdir().expect("tempdir");
        assert!(matches!(expand(&[empty.path().to_path_buf()]), Err(InputError::EmptyFolder(_))));
        assert!(matches!(expand(&[]), Err(InputError::Nothing)));
    }

    #[test]
    fn the_baseline_oracles_second_boot_counts_in_each_pairs_cost() {
        let model = spec(1);
        let mut baseline = spec(1);
        baseline.oracle = "baseline 6.1 = pinned:6.1".into();
        for (m, b) in model.plan().iter().zip(baseline.plan()) {
            let Some(v) = m.vcpus.filter(|_| m.cost_s > 0.0) else { continue };
            let k0 = cost::pair_cost_s(v, KernelKind::Debian);
            assert!((b.cost_s - (m.cost_s + k0)).abs() < 1e-9, "{}: {} vs {} + {k0}", m.name, b.cost_s, m.cost_s);
        }
    }

    #[test]
    fn a_file_whose_node_ids_a_guest_would_not_show_is_refused_before_any_boot() {
        // Seed 002 with its nodes swapped: a guest on x86 shows CPUs 0-3 as node 0.
        let dir = tempfile::tempdir().expect("tempdir");
        let text = std::fs::read_to_string(topologies().join("seed-002.toml")).expect("seed-002");
        let swapped =
            text.replacen("cpus = \"0-3\"", "cpus = \"@\"", 1).replacen("cpus = \"4-7\"", "cpus = \"0-3\"", 1);
        let path = dir.path().join("swapped.toml");
        std::fs::write(&path, swapped.replacen("cpus = \"@\"", "cpus = \"4-7\"", 1)).expect("write");
        let f = InputFile::read(&path);
        let e = f.error.expect("refused");
        assert!(e.contains("swapped.toml: numa.nodes: a guest on x86 would show node 0 (CPUs 4-7) as node 1"), "{e}");
        assert_eq!(f.vcpus, None, "its pairs are rig errors, none boots");
    }

    #[test]
    fn a_broken_file_is_an_input_with_its_one_line_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, "name = \"bad\"\n[cpus]\nsockets = 0\n").expect("write");
        let f = InputFile::read(&bad);
        assert_eq!((f.name.as_str(), f.vcpus), ("bad", None));
        let e = f.error.expect("an error");
        assert!(e.contains("bad.toml") && !e.contains('\n'), "{e}");
        let missing = InputFile::read(&dir.path().join("missing.toml"));
        assert!(missing.error.is_some_and(|e| e.contains("cannot read")));
        // Two files with one topology name: the second is refused.
        let seed = topologies().join("seed-002.toml");
        let copy = dir.path().join("copy.toml");
        std::fs::copy(&seed, &copy).expect("copy");
        let inputs = read_inputs(&[seed, copy]);
        assert!(inputs[0].error.is_none());
        assert!(inputs[1].error.as_deref().is_some_and(|e| e.contains("also the name of")), "{:?}", inputs[1].error);
        assert_ne!(inputs[0].name, inputs[1].name);
        // A broken file first that shares the name: the valid file still runs.
        let broken = dir.path().join("a-broken-seed-002.toml");
        std::fs::write(&broken, "name = \"seed-002\"\n[cpus]\nsockets = 0\n").expect("write");
        let inputs = read_inputs(&[broken, topologies().join("seed-002.toml")]);
        assert!(inputs[0].error.as_deref().is_some_and(|e| e.contains("a-broken-seed-002.toml")), "{:?}", inputs[0]);
        assert_eq!((inputs[1].name.as_str(), inputs[1].error.as_deref()), ("seed-002", None));
        assert_ne!(inputs[0].name, inputs[1].name);
    }

    #[test]
    fn the_plan_covers_every_pair_once_and_shards_partition_it() {
        let whole = spec(1);
        let all = whole.plan();
        assert_eq!(all.len(), whole.inputs.len() * 2);
        let split = spec(3);
        let mut union: Vec<String> =
            (1..=3).flat_map(|k| split.shard_plan(Shard { index: k, count: 3 })).map(|p| p.name).collect();
        union.sort();
        let mut names: Vec<String> = all.iter().map(|p| p.name.clone()).collect();
        names.sort();
        assert_eq!(union, names);
        // Costs from the model: the 256-CPU machine on Debian's kernel is the dearest.
        let dearest = all.iter().max_by(|a, b| a.cost_s.total_cmp(&b.cost_s)).expect("pairs");
        assert_eq!(dearest.name, "seed-003-epyc-7763@6.1");
    }

    #[test]
    fn an_arch_axis_runs_every_pair_on_each_architecture_and_names_it() {
        let plain = spec(1);
        let mut both = spec(1);
        both.archs = vec![Arch::X86_64, Arch::Arm64];
        let (p, b) = (plain.plan(), both.plan());
        assert_eq!(b.len(), 2 * p.len());
        let seed: Vec<(&str, Option<Arch>)> =
            b.iter().filter(|x| x.topology == "seed-002").map(|x| (x.name.as_str(), x.arch)).collect();
        assert_eq!(
            seed,
            [
                ("seed-002@6.12-min@x86_64", Some(Arch::X86_64)),
                ("seed-002@6.12-min@arm64", Some(Arch::Arm64)),
                ("seed-002@6.1@x86_64", Some(Arch::X86_64)),
                ("seed-002@6.1@arm64", Some(Arch::Arm64)),
            ]
        );
        assert!(p.iter().all(|x| x.arch.is_none() && x.name.matches('@').count() == 1));
        // An arm64 pair costs more (UEFI, TCG's aarch64): cost::arch_factor.
        let cost = |name: &str| b.iter().find(|x| x.name == name).expect(name).cost_s;
        assert!(cost("seed-002@6.1@arm64") > cost("seed-002@6.1@x86_64"));
        assert!(plain.differences(&both).iter().any(|d| d.starts_with("architectures differ")));
        let json = serde_json::to_string(&plain).expect("json");
        assert!(!json.contains("\"archs\"") && !json.contains("\"arch\""), "absent without --arch: {json}");
    }

    #[test]
    fn differences_name_what_keeps_shards_apart() {
        let (a, mut b) = (spec(2), spec(3));
        assert!(a.differences(&a).is_empty());
        assert_eq!(a.digest(), spec(2).digest());
        assert_ne!(a.digest(), b.digest());
        let d = a.differences(&b);
        assert!(d.iter().any(|l| l.contains("2 vs 3 shards")), "{d:?}");
        b.shards = 2;
        b.inputs.pop();
        b.kernels.pop();
        let d = a.differences(&b);
        assert!(d.iter().any(|l| l.contains("topology files differ")), "{d:?}");
        assert!(d.iter().any(|l| l.contains("kernels differ")), "{d:?}");
    }
}
