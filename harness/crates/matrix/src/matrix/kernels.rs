//! The kernels of a matrix: as named on the command line (`--kernel 6.12-min,6.1`,
//! or `--source S --patches P`, built once with [`crate::kbuild`]), what decides
//! their code (the spec's identity, so that shards of different kernels refuse
//! to merge), and the same resolved to something bootable.

use super::cost::KernelKind;
use crate::kbuild::commits::GitFacts;
use crate::kbuild::{self, patches, source::SourceSpec, BuildRequest, KbuildError};
use crate::model::{KernelGen, ModelBasis};
use crate::rig::kernel_choice::{self, KernelChoice, ResolvedKernel};
use crate::text::plural_as;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A kernel as the user asked for it.
#[derive(Debug, Clone)]
pub enum KernelRequest {
    /// `--kernel K` (`6.12`, `6.12-min`, `build:KEY`, `image:…`), as `run` names kernels.
    Choice(KernelChoice),
    /// `--source S [--patches P]`: built once (cached by `kbuild`) and booted as a build.
    Source {
        /// The source (`debian:linux-source-6.12` or a tree).
        source: String,
        /// A patch folder or mbox.
        patches: Option<PathBuf>,
        /// `--commits A..B` (the series A..B on A's tree) or `--commits A` (A's
        /// tree alone) of the git tree `source` ([`kbuild::commits`]).
        commits: Option<String>,
        /// The name in pair names and tables (`patched`).
        label: String,
    },
}

/// One patch of a patch set, for the KCIDB checkout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PatchFile {
    /// The patch's name (file name, or `<mbox>#N <subject>` for an mbox message).
    pub name: String,
    /// Where it is on the machine that planned the matrix (the file, or the mbox).
    pub path: String,
    /// SHA-256 of its text (hex).
    pub sha256: String,
}

/// A patch set: its patches in order of application and its KCIDB `patchset_hash`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Patchset {
    /// The patches, in order.
    pub files: Vec<PatchFile>,
    /// SHA-256 over the newline-terminated SHA-256 hex digests of the patches,
    /// in order (KCIDB's `patchset_hash`: `sha256sum *.patch | cut -c-64 | sha256sum`).
    pub hash: String,
}

impl Patchset {
    /// Read a patch folder or mbox as `kernel build --patches` does.
    ///
    /// # Errors
    /// [`patches::PatchError`] when it cannot be read or holds no patch.
    pub fn read(path: &Path) -> Result<Self, patches::PatchError> {
        let series = patches::read_series(path)?;
        Ok(Self::of(&series, |p| if path.is_dir() { path.join(&p.name) } else { path.to_path_buf() }))
    }

    /// The patch set of a series already read; `path_of` says where each patch is.
    pub fn of(series: &[patches::Patch], path_of: impl Fn(&patches::Patch) -> PathBuf) -> Self {
        let files: Vec<PatchFile> = series
            .iter()
            .map(|p| PatchFile {
                name: p.name.clone(),
                path: path_of(p).display().to_string(),
                sha256: hex(&Sha256::digest(p.text.as_bytes())),
            })
            .collect();
        let list: String = files.iter().map(|f| format!("{}\n", f.sha256)).collect();
        Patchset { hash: hex(&Sha256::digest(list.as_bytes())), files }
    }
}

/// Lower-case hex of bytes.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A kernel as the matrix's spec records it: the same on every shard, known
/// before anything is built.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelSpec {
    /// Its name in pair names (`seed-002@6.12-min`) and tables: `6.12-min`,
    /// `build:79684e84`, or `--label` (default `patched`) for `--source`.
    pub label: String,
    /// Debian's kernel or manarig's minimal config (the cost model's class).
    pub kind: KernelKind,
    /// What decides its code: `pinned:6.12`, `minimal:6.12`, `build:KEY`,
    /// `image:PATH`, or `source:<source identity>` with `|patches:<hash>`.
    pub identity: String,
    /// The source it is built from, in words (`linux-source-6.12 6.12.117-1`), when known.
    pub source: Option<String>,
    /// The patch set, for `--source` with `--patches` or `--commits A..B`.
    pub patchset: Option<Patchset>,
    /// The base commit of `--source TREE --commits …` (KCIDB's `git_*` checkout fields).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitFacts>,
}

/// A kernel request that cannot be planned.
#[derive(Debug, thiserror::Error)]
pub enum PlanKernelError {
    /// `--source` is not a tree or a pinned Debian source.
    #[error("--source {0}")]
    Source(KbuildError),
    /// `--patches` cannot be read.
    #[error("--patches {path}: {error}")]
    Patches {
        /// The path.
        path: String,
        /// Why.
        error: patches::PatchError,
    },
}

impl KernelRequest {
    /// The label pairs are named with.
    pub fn label(&self) -> String {
        match self {
            KernelRequest::Choice(c) => c.to_string(),
            KernelRequest::Source { label, .. } => label.clone(),
        }
    }

    /// The spec entry (no build, no download).
    ///
    /// # Errors
    /// [`PlanKernelError`] for an unknown source or unreadable patches.
    pub fn spec(&self) -> Result<KernelSpec, PlanKernelError> {
        let label = self.label();
        Ok(match self {
            KernelRequest::Choice(c) => {
                let (kind, identity, source) = match c {
                    KernelChoice::Pinned(g) => (
                        KernelKind::Debian,
                        format!("pinned:{g}"),
                        Some(format!("Debian linux-image {}", g.model_version())),
                    ),
                    KernelChoice::Minimal(g) => (
                        KernelKind::Minimal,
                        format!("minimal:{g}"),
                        kbuild::minimal::source_package(*g).map(|p| format!("Debian {p} {}", g.model_version())),
                    ),
                    KernelChoice::Minimal64k(g) => (
                        KernelKind::Minimal,
                        format!("minimal-64k:{g}"),
                        kbuild::minimal::source_package(*g).map(|p| format!("Debian {p} {}", g.model_version())),
                    ),
                    // Debug kernels boot several times slower: the Debian cost class.
                    KernelChoice::Debug(g) => (
                        KernelKind::Debian,
                        format!("debug:{g}"),
                        kbuild::minimal::source_package(*g).map(|p| format!("Debian {p} {}", g.model_version())),
                    ),
                    KernelChoice::Build(key) => (KernelKind::Minimal, format!("build:{key}"), None),
                    KernelChoice::Image { image, .. } => {
                        (KernelKind::Debian, format!("image:{}", image.display()), None)
                    }
                };
                KernelSpec { label, kind, identity, source, patchset: None, git: None }
            }
            KernelRequest::Source { source, commits: Some(commits), .. } => commits_spec(label, source, commits)?,
            KernelRequest::Source { source, patches, .. } => {
                let spec = SourceSpec::parse(source).map_err(PlanKernelError::Source)?;
                let patchset = match patches {
                    Some(p) => Some(
                        Patchset::read(p)
                            .map_err(|e| PlanKernelError::Patches { path: p.display().to_string(), error: e })?,
                    ),
                    None => None,
                };
                let mut identity = format!("source:{}", spec.identity());
                if let Some(p) = &patchset {
                    identity.push_str(&format!("|patches:{}", p.hash));
                }
                KernelSpec {
                    label,
                    kind: KernelKind::Minimal,
                    identity,
                    source: Some(spec.label()),
                    patchset,
                    git: None,
                }
            }
        })
    }
}

/// The spec of `--source TREE --commits A..B` (or `A`): identity `git:<A>` plus the
/// series' hash, the series as its patch set (named as the build names them), and
/// A's git facts.
fn commits_spec(label: String, source: &str, commits: &str) -> Result<KernelSpec, PlanKernelError> {
    if source.starts_with("debian:") {
        return Err(PlanKernelError::Source(KbuildError::Source(format!(
            "--commits {commits} needs --source to be a git tree, not {source}"
        ))));
    }
    let repo = Path::new(source);
    let (base, patchset, words) = if commits.contains("..") {
        let range = kbuild::commits::resolve(repo, commits).map_err(PlanKernelError::Source)?;
        let series = kbuild::commits::series(&range).map_err(PlanKernelError::Source)?;
        let set = Patchset::of(&series, |_| repo.to_path_buf());
        let words = format!(
            "{} {} ({} on {})",
            repo.display(),
            range.spec,
            plural_as(series.len(), "patch", "patches"),
            range.base
        );
        (range.base, Some(set), words)
    } else {
        let base = kbuild::commits::resolve_commit(repo, commits).map_err(PlanKernelError::Source)?;
        let words = format!("{} at {commits} ({base})", repo.display());
        (base, None, words)
    };
    let mut identity = format!("git:{base}");
    if let Some(p) = &patchset {
        identity.push_str(&format!("|patches:{}", p.hash));
    }
    let git = Some(kbuild::commits::git_facts(repo, &base));
    Ok(KernelSpec { label, kind: KernelKind::Minimal, identity, source: Some(words), patchset, git })
}

/// What is known of a kernel once the matrix tried to make it bootable: the
/// KCIDB build's facts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelFacts {
    /// The kernel's label.
    pub label: String,
    /// Its `uname -r`, when known before boot (builds and images); pinned
    /// kernels' releases come from their runs.
    pub release: Option<String>,
    /// The model generation that judges it (`6.12`, `6.3`, …).
    pub model: Option<String>,
    /// Why that model (`the kernel's release`, `detected from the source: …`).
    pub model_note: Option<String>,
    /// The kbuild key (builds).
    pub build_key: Option<String>,
    /// The compiler (builds).
    pub compiler: Option<String>,
    /// Patches the build applied, by name (builds).
    pub patches: Vec<String>,
    /// Seconds this matrix spent building or loading it.
    pub prepare_s: Option<f64>,
    /// Seconds its build took (patches, config, `make`), when it was built from
    /// source, by this matrix or earlier (KCIDB's build `duration`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_s: Option<f64>,
    /// Why it could not be made bootable (one line); its pairs are rig errors.
    pub error: Option<String>,
    /// The patch set did not apply to the source (a KCIDB checkout that is not valid).
    pub patches_failed: bool,
    /// `make` failed: the source does not build (a KCIDB build that failed).
    pub build_failed: bool,
}

/// How the kernels are made ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// Bootable: minimal kernels and `--source` are built when missing.
    Boot,
    /// For the model alone (a dry run): nothing is built; `--source` is refused.
    ModelOnly,
}

/// Make `req` ready: resolve (and for `Boot` build) it. `progress` gets one
/// line per build step.
///
/// # Errors
/// The kernel cannot be made ready; the error is also in the returned facts'
/// `error` by the caller's choice.
pub fn prepare(
    req: &KernelRequest,
    readiness: Readiness,
    cache_dir: Option<&Path>,
    progress: &mut dyn FnMut(&str),
) -> (KernelFacts, Result<ResolvedKernel, KernelPrepareError>) {
    let start = Instant::now();
    let label = req.label();
    let mut facts = KernelFacts { label: label.clone(), ..KernelFacts::default() };
    let result = resolve(req, readiness, cache_dir, &mut facts, progress);
    facts.prepare_s = Some(start.elapsed().as_secs_f64());
    match &result {
        Ok(k) => {
            facts.model = Some(k.gen.to_string());
            facts.model_note = Some(k.model_note.clone());
            if facts.release.is_none() {
                facts.release = k.custom.as_ref().map(|c| c.release.clone());
            }
        }
        Err(e) => facts.error = Some(crate::verdict::format::error_text(e).replace(['\n', '\r'], " ")),
    }
    (facts, result)
}

fn resolve(
    req: &KernelRequest,
    readiness: Readiness,
    cache_dir: Option<&Path>,
    facts: &mut KernelFacts,
    progress: &mut dyn FnMut(&str),
) -> Result<ResolvedKernel, KernelPrepareError> {
    let label = req.label();
    match (req, readiness) {
        (
            KernelRequest::Choice(
                KernelChoice::Pinned(g)
                | KernelChoice::Minimal(g)
                | KernelChoice::Minimal64k(g)
                | KernelChoice::Debug(g),
            ),
            Readiness::ModelOnly,
        ) => Ok(model_only(*g, &label)),
        (KernelRequest::Choice(c), _) => {
            let mut k = kernel_choice::resolve(c, None, cache_dir).map_err(|e| {
                classify(&e, facts);
                KernelPrepareError::Resolve { label: c.to_string(), source: Box::new(e) }
            })?;
            build_facts(&k, cache_dir, facts);
            if let KernelChoice::Pinned(g) = c {
                // Provisioned (on first use) now rather than by every pair at once.
                let prov = crate::rig::provisioned(cache_dir).map_err(|e| KernelPrepareError::Cache(Box::new(e)))?;
                let pinned = prov.kernel(crate::rig::kernel_lock_id(*g)).map_err(KernelPrepareError::from)?;
                facts.release = Some(pinned.release.clone());
            }
            k.label = label;
            Ok(k)
        }
        (KernelRequest::Source { .. }, Readiness::ModelOnly) => Err(KernelPrepareError::SourceInDryRun { label }),
        (KernelRequest::Source { source, patches, commits, .. }, Readiness::Boot) => {
            let cache = crate::provision::cache_dir(cache_dir).map_err(KernelPrepareError::from)?;
            let (source_spec, patches) =
                kbuild::commits::source_and_patches(source, commits.as_deref(), patches.as_deref(), &cache, progress)?;
            let build_req = BuildRequest { patches, ..BuildRequest::new(source_spec, cache) };
            let built = kbuild::build(&build_req, progress).map_err(|e| {
                classify(&e, facts);
                KernelPrepareError::Build { label: label.clone(), source_name: source.clone(), source: Box::new(e) }
            })?;
            stamp_facts(&built.stamp, facts);
            let choice = KernelChoice::Build(kbuild::key::short(&built.stamp.key).to_owned());
            let mut k = kernel_choice::resolve(&choice, None, cache_dir)
                .map_err(|e| KernelPrepareError::Resolve { label: label.clone(), source: Box::new(e) })?;
            k.label = label;
            Ok(k)
        }
    }
}

/// A kernel of the matrix that could not be made ready.
#[derive(Debug, thiserror::Error)]
pub enum KernelPrepareError {
    /// The kernel choice does not resolve (no such build, an unusable image, …).
    #[error("kernel {label}")]
    Resolve {
        /// The kernel's name.
        label: String,
        /// Why.
        #[source]
        source: Box<KbuildError>,
    },
    /// The cache cannot be provisioned.
    #[error(transparent)]
    Cache(Box<crate::rig::CacheError>),
    /// The cache folder or the pinned kernel is not there.
    #[error(transparent)]
    Provision(Box<crate::provision::ProvisionError>),
    /// A `--source` kernel in a dry run.
    #[error("kernel {label}: a --source kernel's model is known only once it is built; a dry run takes --kernel only")]
    SourceInDryRun {
        /// The kernel's name.
        label: String,
    },
    /// The source or its series cannot be prepared.
    #[error(transparent)]
    Source(Box<KbuildError>),
    /// The build failed.
    #[error("kernel {label}: building {source_name}")]
    Build {
        /// The kernel's name.
        label: String,
        /// The source as given.
        source_name: String,
        /// Why.
        #[source]
        source: Box<KbuildError>,
    },
}

impl From<crate::provision::ProvisionError> for KernelPrepareError {
    fn from(e: crate::provision::ProvisionError) -> Self {
        KernelPrepareError::Provision(Box::new(e))
    }
}

impl From<KbuildError> for KernelPrepareError {
    fn from(e: KbuildError) -> Self {
        KernelPrepareError::Source(Box::new(e))
    }
}

/// Whether a build error is the patches' or the source's (KCIDB: an invalid
/// checkout, a failed build) rather than the rig's.
fn classify(e: &KbuildError, facts: &mut KernelFacts) {
    facts.patches_failed = matches!(e, KbuildError::Patch(_));
    facts.build_failed = matches!(e, KbuildError::Make { .. } | KbuildError::ConfigDropped(_));
}

/// The build stamp's facts of a resolved `-min` or `build:` kernel (its
/// install names the build); nothing for other kernels or when it cannot be read.
fn build_facts(k: &ResolvedKernel, cache_dir: Option<&Path>, facts: &mut KernelFacts) {
    let Some(key) = k.custom.as_ref().and_then(|c| c.build_key()) else {
        return;
    };
    let Ok(cache) = crate::provision::cache_dir(cache_dir) else {
        return;
    };
    if let Ok(b) = kbuild::load_build(key, &cache) {
        stamp_facts(&b.stamp, facts);
    }
}

/// A build's facts from its stamp: key, compiler, patches, release and how long
/// its build took (patches, config and `make`, whenever it ran).
fn stamp_facts(stamp: &kbuild::BuildStamp, facts: &mut KernelFacts) {
    facts.build_key = Some(stamp.key.clone());
    facts.compiler = Some(stamp.toolchain.clone());
    facts.patches = stamp.patches.clone();
    facts.release = Some(stamp.release.clone());
    let t = &stamp.timings;
    facts.build_s = Some(t.patch_s + t.config_s + t.make_s);
}

/// A kernel for a dry run: judged by `gen`'s model, nothing to boot.
fn model_only(gen: KernelGen, label: &str) -> ResolvedKernel {
    ResolvedKernel {
        gen,
        custom: None,
        debug: false,
        label: label.to_owned(),
        model_note: format!("model {gen} (dry run: no kernel boots)"),
        basis: ModelBasis::Release,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patchset_hash_is_the_sha256_of_the_patches_hashes_one_per_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("0001-a.patch"), "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n").expect("write");
        std::fs::write(dir.path().join("0002-b.patch"), "--- a/y\n+++ b/y\n@@ -1 +1 @@\n-c\n+d\n").expect("write");
        let set = Patchset::read(dir.path()).expect("patch set");
        assert_eq!(set.files.len(), 2);
        assert_eq!(set.files[0].name, "0001-a.patch");
        let h = |s: &str| hex(&Sha256::digest(s.as_bytes()));
        let expected = h(&format!("{}\n{}\n", set.files[0].sha256, set.files[1].sha256));
        assert_eq!(set.hash, expected);
        assert_eq!(set.files[0].sha256, h("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"));
        assert_eq!(set.hash.len(), 64);
    }

    #[test]
    fn specs_name_what_decides_the_kernels_code() {
        let spec = |s: &str| KernelRequest::Choice(s.parse().expect("choice")).spec().expect("spec");
        let min = spec("6.12-min");
        assert_eq!(
            (min.label.as_str(), min.kind, min.identity.as_str()),
            ("6.12-min", KernelKind::Minimal, "minimal:6.12")
        );
        let deb = spec("6.1");
        assert_eq!((deb.kind, deb.identity.as_str()), (KernelKind::Debian, "pinned:6.1"));
        assert_eq!(spec("build:79684e84").identity, "build:79684e84");
        let bad = KernelRequest::Source {
            source: "debian:linux-source-9.9".into(),
            patches: None,
            commits: None,
            label: "x".into(),
        };
        assert!(bad.spec().is_err());
    }

    #[test]
    fn a_commit_range_is_planned_as_its_series_on_the_base_commit_with_the_bases_git_facts() {
        let d = tempfile::tempdir().expect("tmp");
        let git = |args: &[&str]| manarig_test_support::git_in(d.path(), args);
        git(&["init", "-q"]);
        std::fs::write(d.path().join("gdma_main.c"), "a\n").expect("write");
        git(&["add", "-A"]);
        git(&["commit", "-qm", "base"]);
        git(&["tag", "base"]);
        git(&["remote", "add", "origin", "https://git.example.org/linux.git"]);
        for (i, line) in ["b", "c"].iter().enumerate() {
            std::fs::write(d.path().join("gdma_main.c"), format!("a\n{line}\n")).expect("write");
            git(&["commit", "-qam", &format!("net: mana: change {i}")]);
        }
        let base = git(&["rev-parse", "base"]);
        let src = d.path().display().to_string();
        let req = |commits: &str| KernelRequest::Source {
            source: src.clone(),
            patches: None,
            commits: Some(commits.into()),
            label: "patched".into(),
        };
        let spec = req("base..HEAD").spec().expect("a range plans");
        assert_eq!(spec.patchset.as_ref().map(|p| p.files.len()), Some(2));
        let hash = spec.patchset.as_ref().map(|p| p.hash.clone()).unwrap_or_default();
        assert_eq!(spec.identity, format!("git:{base}|patches:{hash}"));
        let facts = spec.git.expect("git facts");
        assert_eq!(facts.commit_hash, base);
        assert_eq!(facts.repository_url.as_deref(), Some("https://git.example.org/linux.git"));
        let alone = req("base").spec().expect("a commit alone plans");
        assert_eq!((alone.identity, alone.patchset), (format!("git:{base}"), None));
        assert!(req("HEAD..base").spec().is_err(), "a range whose base is not an ancestor of its tip");
        let debian = KernelRequest::Source {
            source: "debian:linux-source-6.12".into(),
            patches: None,
            commits: Some("a..b".into()),
            label: "x".into(),
        };
        assert!(debian.spec().is_err_and(|e| e.to_string().contains("needs --source to be a git tree")));
    }
}
