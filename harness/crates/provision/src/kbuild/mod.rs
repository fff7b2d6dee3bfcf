//! Kernel builds for patch testing: a source tree (a user's, or Debian's
//! pinned `linux-source-*`) plus a patch series and config fragments → a
//! bzImage and `mana.ko` the rig boots, cached by content hash.
//!
//! Recipe (one build folder per [`key::cache_key`], `<cache>/kbuild/builds/<key16>/`):
//! 1. the source: the user's tree, or the pinned Debian package unpacked once
//!    into `<cache>/kbuild/src/` ([`source`]); the pristine source is never changed;
//!    for `--commits A..B` A's tree exported from the user's git tree into the cache,
//!    with `git format-patch A..B` as the series ([`commits`]); an mbox series is
//!    split by [`mbox`] (b4 cover letters and replies skipped);
//! 2. a user's tree without patches is built in place (objects in the build
//!    folder); otherwise in a work folder per (source, fragments, compiler),
//!    `<cache>/kbuild/work/<key16>/{src,obj}`: a hard-link copy of the source
//!    whose patch series is switched in place by GNU `patch` ([`patches`]), so
//!    a before/after pair of the same source rebuilds only what the patches
//!    touch (one build at a time per work folder: `flock`);
//! 3. config: `make allnoconfig` with `KCONFIG_ALLCONFIG` = guest-images/kernel-config/manarig.config
//!    (+ the user's fragment), then `make olddefconfig`; every fragment setting
//!    that did not survive is an error ([`config`]);
//! 4. `make bzImage modules` out of tree (`O=…/obj`), niced, with ccache
//!    when available, `LOCALVERSION=-<key8>` so `uname -r` names the build ([`make`]);
//! 5. `bzImage`, `mana.ko` and `build.json` (inputs, release, detected MANA
//!    algorithm, timings) in the build folder.
//!
//! The MANA IRQ algorithm the build runs is detected from its source
//! ([`detect`]) and chosen as the reference model for its runs.

pub mod commits;
pub mod config;
pub mod detect;
pub mod image;
pub mod key;
pub mod make;
pub mod mbox;
pub mod minimal;
pub mod patches;
pub mod source;
pub mod target;

use crate::provision::{KernelInstall, ProvisionError};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// manarig's guest config fragment (guest-images/kernel-config/manarig.config).
pub const BASE_FRAGMENT: &str = include_str!("../../../../../guest-images/kernel-config/manarig.config");
/// The name the base fragment is reported under.
pub const BASE_FRAGMENT_NAME: &str = "guest-images/kernel-config/manarig.config";
/// The debug fragment (guest-images/kernel-config/debug.config): KASAN,
/// kmemleak, lockdep, DEBUG_ATOMIC_SLEEP and SLUB debugging, applied after the
/// base fragment by [`BuildRequest::debug`] builds (`--kernel 6.12-debug`,
/// `kernel build --debug`).
pub const DEBUG_FRAGMENT: &str = include_str!("../../../../../guest-images/kernel-config/debug.config");
/// The name the debug fragment is reported (and keyed) under.
pub const DEBUG_FRAGMENT_NAME: &str = "guest-images/kernel-config/debug.config";

/// Errors of kernel builds and of loading built or user kernels.
#[derive(Debug, thiserror::Error)]
pub enum KbuildError {
    /// A build that is not cached, refused by [`NO_BUILD_ENV`].
    #[error("{0}")]
    Refused(String),
    /// A filesystem operation failed.
    #[error("{path}: {error}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// A tool could not be started.
    #[error("cannot run {tool}: {error}")]
    Tool {
        /// The tool.
        tool: String,
        /// The OS error.
        error: std::io::Error,
    },
    /// The source is unknown or unusable.
    #[error("source: {0}")]
    Source(String),
    /// Downloading or unpacking a pinned package failed.
    #[error(transparent)]
    Provision(Box<ProvisionError>),
    /// The patch series cannot be read or does not apply.
    #[error(transparent)]
    Patch(Box<patches::PatchError>),
    /// A config fragment is malformed.
    #[error(transparent)]
    Fragment(#[from] config::FragmentError),
    /// The generated config lacks settings the fragments asked for.
    #[error("the kernel config lost settings the fragments ask for:\n{}", .0.iter().map(|d| format!("  {d}")).collect::<Vec<_>>().join("\n"))]
    ConfigDropped(Vec<config::Dropped>),
    /// The config does not build what the rig needs.
    #[error("config: {0}")]
    Config(String),
    /// The target cannot build what was asked (an arm64 debug kernel).
    #[error("{0}")]
    Target(String),
    /// The host lacks build tools.
    #[error("host: {0}")]
    Host(String),
    /// The missing build tools could not be installed.
    #[error("host: {0}")]
    HostPackages(crate::provision::host_packages::HostPackageError),
    /// The embedded guest-images/kernel-sources.lock does not parse (a build bug).
    #[error("guest-images/kernel-sources.lock: {0}")]
    SourcesLock(toml::de::Error),
    /// A build's stamp names a generation the model does not know.
    #[error("{}: {error}", dir.display())]
    StampModel {
        /// The build's folder.
        dir: PathBuf,
        /// The generation's error.
        error: crate::model::UnknownKernel,
    },
    /// A build's record (its stamp, its applied series) cannot be written as JSON.
    #[error("{what}: {error}")]
    Record {
        /// Which record.
        what: &'static str,
        /// serde_json's error.
        error: serde_json::Error,
    },
    /// A make step failed.
    #[error("{what} failed (full log: {}):\n{tail}", log.display())]
    Make {
        /// The make invocation.
        what: String,
        /// Its log file.
        log: PathBuf,
        /// The log's last lines.
        tail: String,
    },
    /// A make step ran past its deadline and was killed.
    #[error("{what} did not finish within {after:?} and was stopped (log: {}); raise --deadline", log.display())]
    Deadline {
        /// The make invocation.
        what: String,
        /// The deadline.
        after: Duration,
        /// Its log file.
        log: PathBuf,
    },
    /// The MANA IRQ code could not be classified.
    #[error(transparent)]
    Detect(#[from] detect::DetectError),
    /// A kernel image or module is unusable.
    #[error("{0}")]
    Image(String),
    /// `--kernel-build` names no build, or several, or one that cannot be used.
    #[error(transparent)]
    NoBuild(#[from] NoBuild),
}

/// `--kernel-build WHAT` names no usable build.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoBuild {
    /// Neither a folder nor a key prefix.
    #[error(
        "--kernel-build {what}: neither a build folder nor a build key (hex, 4+ digits; see `cargo xtask kernel list`)"
    )]
    NotAKey {
        /// What was given.
        what: String,
    },
    /// No build has that key prefix.
    #[error("no kernel build {what} in {} (build one with `cargo xtask kernel build`)", builds.display())]
    NoMatch {
        /// What was given.
        what: String,
        /// The builds' folder.
        builds: PathBuf,
    },
    /// Several builds have that key prefix.
    #[error("{what} matches {count} builds; give more digits")]
    Ambiguous {
        /// What was given.
        what: String,
        /// How many match.
        count: usize,
    },
    /// The folder holds no finished build.
    #[error("{}: no finished build (build.json missing or unreadable)", dir.display())]
    Unfinished {
        /// The folder.
        dir: PathBuf,
    },
    /// The build's image is gone.
    #[error("{}: {image} missing; rebuild it", dir.display())]
    NoImage {
        /// The folder.
        dir: PathBuf,
        /// The image's file name (`bzImage`, arm64's `Image`).
        image: &'static str,
    },
    /// The build's model was detected by rules that could be wrong for it.
    #[error(
        "{}: its model ({model}) was detected by an older manarig that did not read lib/cpumask.c; run the \
         `cargo xtask kernel build` command that made it again (nothing is recompiled), or pass --model 6.1|6.3",
        dir.display()
    )]
    StaleModel {
        /// The folder.
        dir: PathBuf,
        /// The model its stamp names.
        model: String,
    },
}

impl From<ProvisionError> for KbuildError {
    fn from(e: ProvisionError) -> Self {
        KbuildError::Provision(Box::new(e))
    }
}

impl From<patches::PatchError> for KbuildError {
    fn from(e: patches::PatchError) -> Self {
        KbuildError::Patch(Box::new(e))
    }
}

impl KbuildError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        KbuildError::Io { path: path.to_path_buf(), error: source }
    }
}

/// What to build.
#[derive(Debug, Clone)]
pub struct BuildRequest {
    /// The source (`--source`).
    pub source: source::SourceSpec,
    /// A folder of patches or an mbox (`--patches`).
    pub patches: Option<PathBuf>,
    /// An extra config fragment applied after manarig's (`--config-fragment`).
    pub fragment: Option<PathBuf>,
    /// Add [`DEBUG_FRAGMENT`] after manarig's fragment (and before `fragment`):
    /// a debug kernel, with its own cache key and work copy.
    pub debug: bool,
    /// The cache folder.
    pub cache: PathBuf,
    /// `make -j`.
    pub jobs: usize,
    /// Use ccache when installed.
    pub ccache: bool,
    /// Install missing host build packages with apt-get (Debian/Ubuntu, as root).
    pub install_deps: bool,
    /// Wall-clock limit of each make step.
    pub deadline: Duration,
    /// Start from an empty build folder (a cold build; `--fresh`).
    pub fresh: bool,
    /// The architecture and page size built for (`--arch`, `--pages`):
    /// its compiler, make variables, image and base fragments.
    pub target: target::Target,
}

impl BuildRequest {
    /// The usual build of `source` in `cache`: no patches, no extra fragment,
    /// not a debug kernel, all host CPUs, ccache when installed, missing host
    /// build packages installed (as root), [`DEFAULT_MAKE_DEADLINE`] per make
    /// step, the build folder kept, for x86_64.
    pub fn new(source: source::SourceSpec, cache: PathBuf) -> Self {
        BuildRequest {
            source,
            patches: None,
            fragment: None,
            debug: false,
            cache,
            jobs: std::thread::available_parallelism().map_or(2, std::num::NonZero::get),
            ccache: true,
            install_deps: true,
            deadline: DEFAULT_MAKE_DEADLINE,
            fresh: false,
            target: target::Target::X86_64,
        }
    }
}

/// How long each make step of a build may take unless its request says otherwise.
pub const DEFAULT_MAKE_DEADLINE: Duration = Duration::from_secs(120 * 60);

/// Wall-clock times of a build.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct BuildTimings {
    /// Copying the tree and applying the patches, seconds.
    pub patch_s: f64,
    /// allnoconfig + olddefconfig, seconds (0 when the config was unchanged).
    pub config_s: f64,
    /// `make bzImage modules`, seconds.
    pub make_s: f64,
    /// The make went on from objects already in the work folder, left by an
    /// earlier build of the same source and config (another patch series, or
    /// an interrupted build): `make_s` is what this build added, not what a
    /// build from nothing costs.
    #[serde(default)]
    pub incremental: bool,
}

/// `build.json`: what a build folder holds and how it was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildStamp {
    /// The full cache key (hex SHA-256).
    pub key: String,
    /// The source label and identity.
    pub source: String,
    /// [`source::SourceSpec::identity`].
    pub source_identity: String,
    /// Patch names in the order applied.
    pub patches: Vec<String>,
    /// Fragment names in the order applied.
    pub fragments: Vec<String>,
    /// The compiler.
    pub toolchain: String,
    /// `uname -r` of the kernel.
    pub release: String,
    /// The MANA IRQ algorithm the source runs.
    pub detected: detect::Detected,
    /// Module files in the build folder, in insmod order.
    pub modules: Vec<String>,
    /// Whether ccache was used.
    pub ccache: bool,
    /// Timings of the last (re)build.
    pub timings: BuildTimings,
    /// What it was built for (x86_64 for stamps older than arm64 builds).
    #[serde(default)]
    pub target: target::Target,
}

/// A finished build.
#[derive(Debug, Clone)]
pub struct Built {
    /// Its folder (`bzImage`, `mana.ko`, `build.json`, `obj/`, `build.log`).
    pub dir: PathBuf,
    /// Its stamp.
    pub stamp: BuildStamp,
    /// True when nothing was rebuilt (a Debian source with a finished build).
    pub cached: bool,
}

impl Built {
    /// The kernel as the rig boots it.
    pub fn install(&self) -> KernelInstall {
        let image = self.dir.join(self.stamp.target.image_target());
        let mut k = image::built_kernel(&self.stamp.key, &self.stamp.release, &image, &self.dir, &self.stamp.modules);
        k.packages.extend(source::used_package(&self.stamp.source_identity));
        k
    }

    /// The model generation the build's source runs.
    ///
    /// # Errors
    /// [`KbuildError::StampModel`] for a stamp naming an unknown generation.
    pub fn model(&self) -> Result<crate::model::KernelGen, KbuildError> {
        self.stamp.detected.generation().map_err(|error| KbuildError::StampModel { dir: self.dir.clone(), error })
    }

    /// True when the build has the debug fragment ([`BuildRequest::debug`]).
    pub fn is_debug(&self) -> bool {
        self.stamp.fragments.iter().any(|f| f == DEBUG_FRAGMENT_NAME)
    }

    /// Why [`Built::model`] judges this kernel: its source, with the detection's evidence.
    pub fn model_basis(&self) -> crate::model::ModelBasis {
        crate::model::ModelBasis::Source { evidence: self.stamp.detected.evidence.clone() }
    }
}

/// Host packages (Debian names) a kernel build needs, with the file that
/// shows each is there.
const BUILD_DEPS: &[(&str, &str)] = &[
    ("make", "/usr/bin/make"),
    ("gcc", "/usr/bin/gcc"),
    ("bc", "/usr/bin/bc"),
    ("flex", "/usr/bin/flex"),
    ("bison", "/usr/bin/bison"),
    ("libelf-dev", "/usr/include/gelf.h"),
    ("libssl-dev", "/usr/include/openssl/opensslv.h"),
    ("lz4", "/usr/bin/lz4"),
    ("cpio", "/usr/bin/cpio"),
    ("patch", "/usr/bin/patch"),
    ("xz-utils", "/usr/bin/xz"),
    ("perl", "/usr/bin/perl"),
];

/// The build packages `target` needs that are missing on this host (on
/// arm64 also the cross compiler, [`target::CROSS_GCC`]).
pub fn missing_build_deps(target: target::Target) -> Vec<&'static str> {
    BUILD_DEPS
        .iter()
        .chain(target.extra_host_packages())
        .filter(|(_, f)| !Path::new(f).exists())
        .map(|(p, _)| *p)
        .collect()
}

/// Install missing build packages with the host's apt-get (the host's own
/// suite, e.g. Debian bookworm), saying so; or explain what to install.
///
/// # Errors
/// [`KbuildError::Host`] when packages are missing and cannot be installed.
pub fn ensure_build_deps(
    install: bool,
    target: target::Target,
    progress: &mut dyn FnMut(&str),
) -> Result<(), KbuildError> {
    let missing = missing_build_deps(target);
    let want_ccache = !make::have("ccache");
    if missing.is_empty() {
        if want_ccache {
            progress("host: ccache is not installed; building without it (apt-get install ccache speeds up rebuilds)");
        }
        return Ok(());
    }
    let mut pkgs: Vec<&str> = missing.clone();
    if want_ccache {
        pkgs.push("ccache");
    }
    crate::provision::host_packages::apt_install(&pkgs, "a kernel build", install, progress)
        .map_err(KbuildError::HostPackages)?;
    let still = missing_build_deps(target);
    if !still.is_empty() {
        return Err(KbuildError::Host(format!("still missing after apt-get: {}", still.join(" "))));
    }
    Ok(())
}

/// The first line of `target`'s compiler's `--version` (x86_64: `gcc (Debian
/// 12.2.0-14) 12.2.0`; arm64: `aarch64-linux-gnu-gcc (Debian 12.2.0-14) 12.2.0`),
/// or, for a cross compiler not installed yet, `<compiler> (not installed)`:
/// the build installs it, and its key is then computed again.
fn toolchain(target: target::Target) -> Result<String, KbuildError> {
    let cc = target.compiler();
    let out = match Command::new(cc).arg("--version").output() {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && target != target::Target::X86_64 => {
            return Ok(format!("{cc} (not installed)"));
        }
        Err(e) => return Err(KbuildError::Tool { tool: cc.into(), error: e }),
    };
    Ok(String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or(cc).to_string())
}

/// The builds folder of a cache.
pub fn builds_dir(cache: &Path) -> PathBuf {
    cache.join("kbuild/builds")
}

fn read_stamp(dir: &Path) -> Option<BuildStamp> {
    serde_json::from_slice(&std::fs::read(dir.join("build.json")).ok()?).ok()
}

/// Environment variable that turns every kernel build that is not already in
/// the cache into an error ([`KbuildError::Refused`]): `cargo xtask test` sets
/// it for the tests, having built every kernel they boot first.
pub const NO_BUILD_ENV: &str = "MANARIG_NO_KERNEL_BUILD";

/// What a request builds, before anything is downloaded or compiled: its
/// patch series and config fragments read and checked, and its cache key.
struct Plan {
    series: Vec<patches::Patch>,
    /// (name, text) of every fragment, manarig's first.
    fragments: Vec<(String, String)>,
    /// The fragments' settings, for the check after `olddefconfig`.
    parsed: Vec<(String, Vec<config::Setting>)>,
    inputs: key::KeyInputs,
    full_key: String,
    short: String,
    /// `<cache>/kbuild/builds/<short key>`.
    dir: PathBuf,
}

impl Plan {
    /// Read the inputs of `req` (a bad patch folder or fragment fails here,
    /// before any download) and compute its key.
    fn of(req: &BuildRequest) -> Result<Plan, KbuildError> {
        let series = match &req.patches {
            Some(p) => patches::read_series(p)?,
            None => Vec::new(),
        };
        let mut fragments: Vec<(String, String)> =
            req.target.base_fragments().iter().map(|(n, t)| ((*n).to_string(), (*t).to_string())).collect();
        if req.debug {
            fragments.push((DEBUG_FRAGMENT_NAME.to_string(), DEBUG_FRAGMENT.to_string()));
        }
        if let Some(f) = &req.fragment {
            let text = std::fs::read_to_string(f).map_err(|e| KbuildError::io(f, e))?;
            fragments.push((f.display().to_string(), text));
        }
        let mut parsed = Vec::new();
        for (name, text) in &fragments {
            parsed.push((name.clone(), config::parse_fragment(text, name)?));
        }
        let inputs = key::KeyInputs {
            source: req.source.identity(),
            patches: series.iter().map(|p| (p.name.clone(), p.text.clone())).collect(),
            fragments: fragments.clone(),
            toolchain: toolchain(req.target)?,
        };
        let full_key = key::cache_key(&inputs);
        let short = key::short(&full_key).to_string();
        let dir = builds_dir(&req.cache).join(&short);
        Ok(Plan { series, fragments, parsed, inputs, full_key, short, dir })
    }

    /// The finished build of this key, if its outputs are all there. A stamp
    /// from older detection rules goes through the build again: `make` finds
    /// nothing to do, and the model is detected anew.
    fn finished(&self) -> Option<BuildStamp> {
        read_stamp(&self.dir).filter(|s| {
            s.key == self.full_key
                && !s.detected.is_stale()
                && self.dir.join(s.target.image_target()).is_file()
                && s.modules.iter().all(|m| self.dir.join(m).is_file())
        })
    }
}

/// Whether the kernel `req` describes is built in its cache (a pinned source,
/// or the fallback a build of it took): no download, no apt.
///
/// # Errors
/// A bad patch folder or fragment; the compiler cannot be asked its version.
pub fn is_cached(req: &BuildRequest) -> Result<bool, KbuildError> {
    if Plan::of(req)?.finished().is_some() {
        return Ok(true);
    }
    match source::remembered_fallback(&req.source, &req.cache) {
        Some(used) => Ok(Plan::of(&BuildRequest { source: used, ..req.clone() })?.finished().is_some()),
        None => Ok(false),
    }
}

/// Build (or reuse) the kernel `req` describes: read its inputs and key,
/// reuse a finished build of a Debian source, else resolve the source (a gone
/// pin falls back), prepare the tree (a work copy with the series switched
/// in), configure, `make`, and collect the outputs with their stamp. `progress` gets one
/// line per step.
///
/// # Errors
/// Any [`KbuildError`]: source, patch, fragment, config, host tools, make;
/// [`KbuildError::Refused`] for a build that is not cached under [`NO_BUILD_ENV`].
pub fn build(req: &BuildRequest, progress: &mut dyn FnMut(&str)) -> Result<Built, KbuildError> {
    let plan = Plan::of(req)?;
    let immutable = matches!(req.source, source::SourceSpec::Debian(_));
    if req.fresh && plan.dir.exists() {
        progress(&format!("build {}: --fresh: removing {}", plan.short, plan.dir.display()));
        std::fs::remove_dir_all(&plan.dir).map_err(|e| KbuildError::io(&plan.dir, e))?;
    }
    if immutable {
        if let Some(stamp) = plan.finished() {
            progress(&format!("build {}: cached ({}, {})", plan.short, stamp.release, plan.dir.display()));
            return Ok(Built { dir: plan.dir, stamp, cached: true });
        }
    }
    if std::env::var_os(NO_BUILD_ENV).is_some_and(|v| !v.is_empty() && v != "0") {
        return Err(KbuildError::Refused(format!(
            "{} ({}) is not built and {NO_BUILD_ENV} is set: the tests boot only kernels `cargo xtask test` \
             built before them (its list: xtask/src/test_kernels.rs)",
            req.source.label(),
            plan.short
        )));
    }
    // A pinned source gone from the archive builds the newest of its package
    // instead, under that source's own key.
    let resolved = source::resolve(&req.source, &req.cache, progress)?;
    if resolved != req.source {
        return build(&BuildRequest { source: resolved, ..req.clone() }, progress);
    }
    ensure_build_deps(req.install_deps, req.target, progress)?;
    // A cross compiler installed just now changes the key's toolchain.
    let plan = Plan::of(req)?;
    let src = source::prepare(&req.source, &req.cache, progress)?;
    std::fs::create_dir_all(&plan.dir).map_err(|e| KbuildError::io(&plan.dir, e))?;
    let mut timings = BuildTimings::default();

    let t0 = Instant::now();
    let (tree, obj, _lock) = match work_tree(req, &plan, &src, progress)? {
        WorkTree::Ready { tree, obj, lock } => (tree, obj, lock),
        WorkTree::FinishedMeanwhile(stamp) => return Ok(Built { dir: plan.dir, stamp: *stamp, cached: true }),
    };
    timings.patch_s = t0.elapsed().as_secs_f64();
    let detected = detect::detect_tree(&tree)?;
    progress(&format!("model: {} ({})", detected.model, detected.evidence));

    std::fs::create_dir_all(&obj).map_err(|e| KbuildError::io(&obj, e))?;
    let ccache = req.ccache && make::have("ccache");
    let mk = make::Make {
        target: req.target,
        tree: tree.clone(),
        obj: obj.clone(),
        jobs: req.jobs,
        ccache_dir: ccache.then(|| req.cache.join("kbuild/ccache")),
        deadline: req.deadline,
        log: plan.dir.join("build.log"),
        localversion: Some(plan.short[..8].to_string()),
    };
    let _ = std::fs::remove_file(&mk.log);
    configure(&plan, &mk, &mut timings, progress)?;
    progress(&format!(
        "make: {} modules in {} (-j{}, nice, {}{}; log {})",
        req.target.image_target(),
        obj.display(),
        req.jobs,
        if ccache { "ccache" } else { "no ccache" },
        if req.target == target::Target::X86_64 { String::new() } else { format!(", for {}", req.target) },
        mk.log.display()
    ));
    timings.make_s = mk.run(&[req.target.image_target(), "modules"], &[])?.as_secs_f64();
    collect(req, plan, &obj, detected, ccache, timings)
}

/// The tree a build compiles, or the build that finished while this one
/// waited for the work copy's lock.
enum WorkTree {
    /// The tree, its object folder, and the work copy's lock (held while they are used).
    Ready { tree: PathBuf, obj: PathBuf, lock: Option<WorkLock> },
    /// A build of the same key finished while this one waited.
    FinishedMeanwhile(Box<BuildStamp>),
}

/// The tree and object folder of a build. A user's tree without patches is
/// built in place (obj in the build folder). Otherwise the build runs in a
/// work folder per (source, fragments, compiler): a hard-link copy of the
/// source whose patch series is switched in place, so that building another
/// series of the same source only recompiles what the patches change.
fn work_tree(
    req: &BuildRequest,
    plan: &Plan,
    src: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<WorkTree, KbuildError> {
    if plan.series.is_empty() && matches!(req.source, source::SourceSpec::Tree(_)) {
        return Ok(WorkTree::Ready { tree: src.to_path_buf(), obj: plan.dir.join("obj"), lock: None });
    }
    let work_key = key::cache_key(&key::KeyInputs {
        source: format!("{} (work copy)", plan.inputs.source),
        patches: Vec::new(),
        fragments: plan.inputs.fragments.clone(),
        toolchain: plan.inputs.toolchain.clone(),
    });
    let work = req.cache.join("kbuild/work").join(key::short(&work_key));
    std::fs::create_dir_all(&work).map_err(|e| KbuildError::io(&work, e))?;
    let lock = WorkLock::take(&work, req.deadline, progress)?;
    // A build of the same key that held the lock may have just finished it
    // (unless this one is to be cold: --fresh).
    if matches!(req.source, source::SourceSpec::Debian(_)) && !req.fresh {
        if let Some(stamp) = plan.finished() {
            progress(&format!("build {}: finished by the build waited for ({})", plan.short, plan.dir.display()));
            return Ok(WorkTree::FinishedMeanwhile(Box::new(stamp)));
        }
    }
    if req.fresh {
        for stale in [work.join("obj"), work.join("fragments.config")] {
            if stale.is_dir() {
                std::fs::remove_dir_all(&stale).map_err(|e| KbuildError::io(&stale, e))?;
            } else if stale.exists() {
                std::fs::remove_file(&stale).map_err(|e| KbuildError::io(&stale, e))?;
            }
        }
    }
    let tree = work.join("src");
    switch_series(req, plan, src, &tree, &work.join("applied.json"), progress)?;
    Ok(WorkTree::Ready { tree, obj: work.join("obj"), lock: Some(lock) })
}

/// Bring the work copy `tree` of `src` to the plan's patch series, recording
/// which series it holds in `state`. A missing or unreadable record (a crash
/// while switching) means the copy's state is unknown: it is made again.
fn switch_series(
    req: &BuildRequest,
    plan: &Plan,
    src: &Path,
    tree: &Path,
    state: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<(), KbuildError> {
    let series = &plan.series;
    let current: Option<Vec<patches::Patch>> = std::fs::read(state).ok().and_then(|b| serde_json::from_slice(&b).ok());
    let current = match current {
        Some(c) if tree.join("Makefile").is_file() => c,
        _ => {
            if tree.exists() {
                std::fs::remove_dir_all(tree).map_err(|e| KbuildError::io(tree, e))?;
            }
            progress(&format!("work: hard-link copy of {} in {}", req.source.label(), tree.display()));
            copy_tree(src, tree)?;
            Vec::new()
        }
    };
    let record = |series: &[patches::Patch]| -> Result<(), KbuildError> {
        let text =
            serde_json::to_vec(series).map_err(|error| KbuildError::Record { what: "the applied series", error })?;
        std::fs::write(state, text).map_err(|e| KbuildError::io(state, e))
    };
    if &current != series {
        let _ = std::fs::remove_file(state);
        match patches::switch_series(tree, src, &current, series) {
            Ok(()) => record(series)?,
            Err(e) => {
                record(&[])?;
                return Err(e.into());
            }
        }
        for p in series {
            progress(&format!("patches: applied {}", p.name));
        }
        if series.is_empty() && !current.is_empty() {
            progress("patches: none (the work copy is back to the pristine source)");
        }
    } else if !series.is_empty() {
        progress(&format!("patches: {} patch(es) already applied in {}", series.len(), tree.display()));
    }
    Ok(())
}

/// `make allnoconfig` with the plan's fragments, then `olddefconfig`, unless
/// the object folder already has that config (an incremental build); then
/// check that every fragment setting survived (a symbol the tree does not
/// know is allowed for the version-dependent ones) and that MANA is a module.
fn configure(
    plan: &Plan,
    mk: &make::Make,
    timings: &mut BuildTimings,
    progress: &mut dyn FnMut(&str),
) -> Result<(), KbuildError> {
    let merged: String = plan.fragments.iter().map(|(n, t)| format!("# ---- {n}\n{t}\n")).collect();
    let merged_path = mk.obj.with_file_name("fragments.config");
    let unchanged =
        std::fs::read_to_string(&merged_path).is_ok_and(|t| t == merged) && mk.obj.join(".config").is_file();
    if unchanged {
        progress("config: unchanged (make goes on from the objects of an earlier build)");
        timings.incremental = true;
    } else {
        std::fs::write(&merged_path, &merged).map_err(|e| KbuildError::io(&merged_path, e))?;
        progress("config: make allnoconfig + fragments, olddefconfig");
        let c0 = Instant::now();
        mk.run(&["allnoconfig"], &[("KCONFIG_ALLCONFIG", &merged_path)])?;
        mk.run(&["olddefconfig"], &[])?;
        timings.config_s = c0.elapsed().as_secs_f64();
    }
    let dot_path = mk.obj.join(".config");
    let dot = config::parse_dot_config(&std::fs::read_to_string(&dot_path).map_err(|e| KbuildError::io(&dot_path, e))?);
    // Later fragments override earlier ones: check each symbol against its last setting.
    let parsed = &plan.parsed;
    let base: Vec<&str> = mk.target.base_fragments().iter().map(|(n, _)| *n).collect();
    let mut lost = Vec::new();
    for (i, (name, settings)) in parsed.iter().enumerate() {
        let overridden = |sym: &str| parsed[i + 1..].iter().any(|(_, s)| s.iter().any(|x| x.symbol == sym));
        let own: Vec<_> = settings.iter().filter(|s| !overridden(&s.symbol)).cloned().collect();
        lost.extend(config::dropped(name, &own, &dot));
    }
    lost.retain(|d| {
        let skip = base.contains(&d.file.as_str())
            && config::VERSION_DEPENDENT.contains(&d.wanted.symbol.as_str())
            && !config::symbol_defined(&mk.tree, &d.wanted.symbol);
        if skip {
            progress(&format!("config: CONFIG_{} is not a symbol of this tree; built without it", d.wanted.symbol));
        }
        !skip
    });
    if !lost.is_empty() {
        let _ = std::fs::remove_file(&merged_path);
        return Err(KbuildError::ConfigDropped(lost));
    }
    if dot.get("MICROSOFT_MANA") != Some(&config::ConfigValue::Module) {
        return Err(KbuildError::Config(
            "CONFIG_MICROSOFT_MANA must be m: the guest agent loads mana.ko in the background after boot \
             (guest-images/init.sh), which a built-in driver would not allow"
                .into(),
        ));
    }
    Ok(())
}

/// Copy the bzImage and the modules out of `obj` into the build folder, check
/// their vermagic against the image, and write the stamp.
fn collect(
    req: &BuildRequest,
    plan: Plan,
    obj: &Path,
    detected: detect::Detected,
    ccache: bool,
    timings: BuildTimings,
) -> Result<Built, KbuildError> {
    let dir = plan.dir;
    let built_image = obj.join(req.target.image_in_obj());
    let out_bz = dir.join(req.target.image_target());
    std::fs::copy(&built_image, &out_bz).map_err(|e| KbuildError::io(&built_image, e))?;
    let release = match req.target {
        target::Target::X86_64 => image::bzimage_release(&out_bz)?,
        // arm64's Image has no version string at a fixed place: kbuild's own record.
        target::Target::Arm64 { .. } => image::kbuild_release(obj)?,
    };
    let found = crate::provision::kernel::collect_modules(obj, &release, &dir)?;
    let module_paths: Vec<PathBuf> = found.modules.iter().map(|m| dir.join(m)).collect();
    image::check_vermagic(&module_paths, &release, &out_bz, &|p| p.display().to_string())?;
    let stamp = BuildStamp {
        key: plan.full_key,
        source: req.source.label(),
        source_identity: req.source.identity(),
        patches: plan.series.iter().map(|p| p.name.clone()).collect(),
        fragments: plan.fragments.iter().map(|(n, _)| n.clone()).collect(),
        toolchain: plan.inputs.toolchain,
        release,
        detected,
        modules: found.modules,
        ccache,
        timings,
        target: req.target,
    };
    let text =
        serde_json::to_string_pretty(&stamp).map_err(|error| KbuildError::Record { what: "build.json", error })?;
    std::fs::write(dir.join("build.json"), text).map_err(|e| KbuildError::io(&dir, e))?;
    Ok(Built { dir, stamp, cached: false })
}

/// An exclusive lock on a work folder (`flock` on `<work>/lock`), held while
/// its tree and objects are used; released when the file closes on drop.
struct WorkLock {
    _file: std::fs::File,
}

/// How often a build waiting for a work folder's lock tries it again.
const LOCK_POLL: Duration = Duration::from_secs(2);

impl WorkLock {
    /// Take the lock; while another build of the same source and config holds
    /// it, wait (saying so once through `progress`) up to `deadline`.
    ///
    /// # Errors
    /// [`KbuildError::Io`] when the lock file cannot be opened or locked;
    /// [`KbuildError::Source`] when the other build still holds it at the deadline.
    fn take(work: &Path, deadline: Duration, progress: &mut dyn FnMut(&str)) -> Result<WorkLock, KbuildError> {
        let path = work.join("lock");
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| KbuildError::io(&path, e))?;
        let start = Instant::now();
        let mut said = false;
        while !crate::scratch::try_lock(&f).map_err(|e| KbuildError::io(&path, e))? {
            if start.elapsed() >= deadline {
                return Err(KbuildError::Source(format!(
                    "{}: another kernel build of this source and config held the work folder for {:?}; gave up \
                     (raise --deadline, or wait for it to finish)",
                    work.display(),
                    deadline
                )));
            }
            if !said {
                progress(&format!(
                    "work: another kernel build of this source and config is using {}; waiting for it (up to {} min)",
                    work.display(),
                    deadline.as_secs() / 60
                ));
                said = true;
            }
            std::thread::sleep(LOCK_POLL.min(deadline.saturating_sub(start.elapsed())).max(Duration::from_millis(10)));
        }
        Ok(WorkLock { _file: f })
    }
}

/// `cp -al`: a tree of hard links (seconds, no extra space for 1.5 GB).
///
/// # Errors
/// [`KbuildError::Tool`] when `cp` cannot run, [`KbuildError::Source`] when it fails.
pub fn copy_tree(src: &Path, dst: &Path) -> Result<(), KbuildError> {
    let out = Command::new("cp")
        .arg("-al")
        .arg(src)
        .arg(dst)
        .output()
        .map_err(|e| KbuildError::Tool { tool: "cp".into(), error: e })?;
    if !out.status.success() {
        return Err(KbuildError::Source(format!(
            "cp -al {} {}: {}",
            src.display(),
            dst.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// A finished build named by `what`: a build folder (or its `build.json`),
/// or a key prefix (at least 4 hex digits) of a build in `<cache>/kbuild/builds`.
///
/// # Errors
/// [`KbuildError::NoBuild`] when nothing or more than one build matches.
pub fn load_build(what: &str, cache: &Path) -> Result<Built, KbuildError> {
    let p = Path::new(what);
    let dir = if p.is_dir() || p.is_file() {
        if p.is_file() {
            p.parent().unwrap_or(p).to_path_buf()
        } else {
            p.to_path_buf()
        }
    } else {
        if what.len() < 4 || !what.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(NoBuild::NotAKey { what: what.to_owned() }.into());
        }
        let builds = builds_dir(cache);
        let matches: Vec<PathBuf> = std::fs::read_dir(&builds)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|d| d.file_name().is_some_and(|n| n.to_string_lossy().starts_with(&what.to_lowercase())))
                    .collect()
            })
            .unwrap_or_default();
        match matches.as_slice() {
            [one] => one.clone(),
            [] => return Err(NoBuild::NoMatch { what: what.to_owned(), builds }.into()),
            _ => return Err(NoBuild::Ambiguous { what: what.to_owned(), count: matches.len() }.into()),
        }
    };
    let Some(stamp) = read_stamp(&dir) else { return Err(NoBuild::Unfinished { dir }.into()) };
    if !dir.join(stamp.target.image_target()).is_file() {
        return Err(NoBuild::NoImage { dir, image: stamp.target.image_target() }.into());
    }
    Ok(Built { dir, stamp, cached: true })
}

/// Every finished build in the cache, newest key order not guaranteed.
pub fn list_builds(cache: &Path) -> Vec<Built> {
    let mut out: Vec<Built> = std::fs::read_dir(builds_dir(cache))
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| read_stamp(&e.path()).map(|stamp| Built { dir: e.path(), stamp, cached: true }))
                .collect()
        })
        .unwrap_or_default();
    out.sort_by(|a, b| a.dir.cmp(&b.dir));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_build_of_a_work_folder_waits_for_the_first_and_gives_up_at_its_deadline() {
        let d = tempfile::tempdir().expect("tmp");
        let first = WorkLock::take(d.path(), Duration::ZERO, &mut |_| {}).expect("free");
        let mut said = Vec::new();
        let e = WorkLock::take(d.path(), Duration::ZERO, &mut |l| said.push(l.to_string()))
            .err()
            .expect("held, no time to wait");
        assert!(e.to_string().contains("another kernel build of this source and config held"), "{e}");
        // The holder finishes while the second waits (when it says so): the
        // second gets the lock.
        let mut holder = Some(first);
        let second = WorkLock::take(d.path(), Duration::from_secs(600), &mut |l| {
            said.push(l.to_string());
            holder.take();
        });
        assert!(second.is_ok(), "the lock was released");
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(said[0].contains("is using") && said[0].contains("waiting for it (up to 10 min)"), "{said:?}");
    }

    #[test]
    fn an_unknown_build_says_how_to_make_one() {
        let d = tempfile::tempdir().expect("tmp");
        let e = load_build("abcd", d.path()).expect_err("none");
        assert!(matches!(&e, KbuildError::NoBuild(NoBuild::NoMatch { what, .. }) if what == "abcd"), "{e}");
        let e = load_build("not-hex", d.path()).expect_err("bad");
        assert!(matches!(&e, KbuildError::NoBuild(NoBuild::NotAKey { .. })), "{e}");
    }

    #[test]
    fn a_build_folder_loads_by_key_prefix_and_path() {
        let d = tempfile::tempdir().expect("tmp");
        let b = builds_dir(d.path()).join("0123456789abcdef");
        std::fs::create_dir_all(&b).expect("mkdir");
        let stamp = BuildStamp {
            key: "0123456789abcdef".repeat(4),
            source: "linux-source-6.12 6.12.117-1".into(),
            source_identity: "debian:x".into(),
            patches: vec!["0001.patch".into()],
            fragments: vec![BASE_FRAGMENT_NAME.into()],
            toolchain: "gcc".into(),
            release: "6.12.117-manarig".into(),
            detected: detect::Detected { model: "6.1".into(), evidence: "e".into(), detector: detect::DETECTOR },
            modules: vec!["mana.ko".into()],
            ccache: false,
            timings: BuildTimings::default(),
            target: target::Target::X86_64,
        };
        std::fs::write(b.join("build.json"), serde_json::to_string(&stamp).expect("json")).expect("w");
        let e = load_build("0123", d.path()).expect_err("no bzImage");
        assert!(matches!(&e, KbuildError::NoBuild(NoBuild::NoImage { dir, .. }) if *dir == b), "{e}");
        std::fs::write(b.join("bzImage"), b"x").expect("w");
        let built = load_build("0123", d.path()).expect("by key");
        assert_eq!(built.stamp, stamp);
        assert_eq!(built.model().expect("gen"), crate::model::KernelGen::V6_1);
        let inst = built.install();
        assert_eq!(inst.id, "build:0123456789abcdef");
        assert_eq!(inst.build_key(), Some("0123456789abcdef"), "the key a build's id names");
        assert!(inst.is_rig_build());
        assert_eq!(inst.modules, vec![b.join("mana.ko")]);
        assert_eq!(load_build(&b.display().to_string(), d.path()).expect("by path").stamp, stamp);
        assert_eq!(list_builds(d.path()).len(), 1);
    }
}
