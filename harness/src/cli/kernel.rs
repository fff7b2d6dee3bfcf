//! The `kernel` subcommand: `kernel build` and `kernel list`.

use super::Exit;
use crate::kbuild::{build, builds_dir, commits, key, list_builds, BuildRequest};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `kernel`.
#[derive(Debug, clap::Args)]
pub struct KernelArgs {
    #[command(subcommand)]
    command: KernelCommand,
}

#[derive(Debug, clap::Subcommand)]
enum KernelCommand {
    /// Build a guest kernel (bzImage + mana.ko) from a source tree and a patch
    /// series, with manarig's minimal config; prints the build key for
    /// `run --kernel-build KEY` / `compare --before build:KEY`.
    Build(BuildArgs),
    /// List the finished builds in the cache.
    List(ListArgs),
}

/// Arguments of `kernel build`.
#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    /// A Linux source tree, or debian:linux-source-6.1|6.12|7.3 (pinned in
    /// guest-images/kernel-sources.lock, downloaded into the cache).
    #[arg(long)]
    pub source: String,
    /// A folder of *.patch files (quilt `series` order if present, else by
    /// name) or an mbox, applied with `patch -p1` to a copy of the source.
    #[arg(long, value_name = "DIR|MBOX")]
    pub patches: Option<PathBuf>,
    /// A commit range of the git tree --source names: the series is `git
    /// format-patch A..B`, built on A's tree (exported with `git archive` into the
    /// cache; the checkout is only read and may be at any commit). `--commits A`
    /// alone builds A's tree without patches: the baseline of that series.
    #[arg(long, value_name = "A..B|A", conflicts_with = "patches")]
    pub commits: Option<String>,
    /// A config fragment applied after guest-images/kernel-config/manarig.config.
    #[arg(long, value_name = "FILE")]
    pub config_fragment: Option<PathBuf>,
    /// A debug kernel: also apply guest-images/kernel-config/debug.config
    /// (KASAN, kmemleak, lockdep, DEBUG_ATOMIC_SLEEP, SLUB debugging) after
    /// manarig's fragment. Runs of the build get the debug command line, longer
    /// deadlines and the `debug_reports` check.
    #[arg(long)]
    pub debug: bool,
    /// Cache folder (default: $MANARIG_CACHE, else ~/.cache/manarig).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// make -j (default: the number of CPUs).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Build without ccache even when it is installed.
    #[arg(long)]
    pub no_ccache: bool,
    /// Do not install missing host build packages (flex, bison, libelf-dev, …) with apt-get.
    #[arg(long)]
    pub no_install_deps: bool,
    /// Wall-clock limit of each make step, in minutes.
    #[arg(long, default_value_t = 120)]
    pub deadline: u64,
    /// Remove the build folder first (a cold build).
    #[arg(long)]
    pub fresh: bool,
    /// The guests' architecture: x86_64 (the default) or arm64, cross-compiled
    /// with the host's aarch64-linux-gnu-gcc (Debian's gcc-aarch64-linux-gnu,
    /// installed with apt-get like the other build tools) and
    /// guest-images/kernel-config/arm64.config instead of manarig.config.
    #[arg(long, value_name = "ARCH", default_value = "x86_64")]
    pub arch: crate::topology::Arch,
    /// The guest's page size on arm64: 4k (the default) or 64k
    /// (CONFIG_ARM64_64K_PAGES, guest-images/kernel-config/arm64-64k.config).
    #[arg(long, value_name = "4k|64k", default_value = "4k")]
    pub pages: crate::kbuild::target::PageSize,
}

/// Arguments of `kernel list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Cache folder.
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
}

/// A `kernel build` or `kernel list` that failed.
#[derive(Debug, thiserror::Error)]
pub enum KernelCommandError {
    /// No cache folder.
    #[error(transparent)]
    Cache(#[from] crate::provision::ProvisionError),
    /// `--commits` with a Debian source.
    #[error("--commits {range} needs --source to be a git tree, not {source_name}")]
    CommitsNeedTree {
        /// The range given.
        range: String,
        /// The `--source` given.
        source_name: String,
    },
    /// `--pages 64k` for x86_64, which has 4 KiB pages only.
    #[error("--pages 64k needs --arch arm64: x86_64 kernels have 4 KiB pages only")]
    PagesNeedArm64,
    /// The source, the series or the build failed.
    #[error(transparent)]
    Kbuild(#[from] crate::kbuild::KbuildError),
}

/// Run `kernel …`.
pub fn run(args: &KernelArgs) -> ExitCode {
    let result = match &args.command {
        KernelCommand::Build(b) => run_build(b),
        KernelCommand::List(l) => run_list(l),
    };
    match result {
        Ok(()) => Exit::Pass.into(),
        Err(e) => {
            eprintln!("manarig kernel: {}", crate::text::chain(&e));
            Exit::RigError.into()
        }
    }
}

fn run_build(b: &BuildArgs) -> Result<(), KernelCommandError> {
    let cache = crate::provision::cache_dir(b.cache_dir.as_deref())?;
    let mut progress = |line: &str| eprintln!("kernel: {line}");
    if let Some(range) = b.commits.as_ref().filter(|_| b.source.starts_with("debian:")) {
        return Err(KernelCommandError::CommitsNeedTree { range: range.clone(), source_name: b.source.clone() });
    }
    if b.arch == crate::topology::Arch::X86_64 && b.pages != crate::kbuild::target::PageSize::K4 {
        return Err(KernelCommandError::PagesNeedArm64);
    }
    let (source, patches) =
        commits::source_and_patches(&b.source, b.commits.as_deref(), b.patches.as_deref(), &cache, &mut progress)?;
    let req = BuildRequest {
        source,
        patches,
        fragment: b.config_fragment.clone(),
        debug: b.debug,
        cache,
        jobs: b.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get())),
        ccache: !b.no_ccache,
        install_deps: !b.no_install_deps,
        deadline: Duration::from_secs(b.deadline.saturating_mul(60)),
        fresh: b.fresh,
        target: crate::kbuild::target::Target::new(b.arch, b.pages),
    };
    let built = build(&req, &mut progress)?;
    let s = &built.stamp;
    let t = &s.timings;
    if !built.cached {
        eprintln!(
            "kernel: built {} in {:.0} s (patches {:.1} s, config {:.1} s, make {:.1} s)",
            s.release,
            t.patch_s + t.config_s + t.make_s,
            t.patch_s,
            t.config_s,
            t.make_s
        );
    }
    println!("build: {}", key::short(&s.key));
    println!("release: {}", s.release);
    println!("model: {} ({})", s.detected.model, s.detected.evidence);
    println!("image: {}", built.dir.join(s.target.image_target()).display());
    println!(
        "modules: {}",
        s.modules.iter().map(|m| built.dir.join(m).display().to_string()).collect::<Vec<_>>().join(" ")
    );
    println!("run: cargo xtask run topologies/seed-002.toml --kernel-build {}", key::short(&s.key));
    Ok(())
}

fn run_list(l: &ListArgs) -> Result<(), KernelCommandError> {
    let cache = crate::provision::cache_dir(l.cache_dir.as_deref())?;
    let builds = list_builds(&cache);
    if builds.is_empty() {
        println!("no kernel builds in {}", builds_dir(&cache).display());
    }
    for b in builds {
        let s = &b.stamp;
        println!(
            "{}  {}  model {}  {}{}",
            key::short(&s.key),
            s.release,
            s.detected.model,
            s.source,
            if s.patches.is_empty() { String::new() } else { format!(" + {}", s.patches.join(", ")) }
        );
    }
    Ok(())
}
