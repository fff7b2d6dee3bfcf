//! Every kernel the tests boot, built by `cargo xtask test` before nextest
//! starts, so that no test builds one (the tests run with
//! `MANARIG_NO_KERNEL_BUILD`, which turns a build into an error).
//!
//! The list is the tests' own: the minimal kernels of the three pinned sources
//! (`--kernel 6.1-min`, `6.12-min`, `7.x-min`), README's worked example
//! (6.12 with examples/patches/revert-irq-setup; harness/tests/kbuild.rs,
//! matrix_cli.rs), and for the slow tier the arm64 minimal kernels of 6.12,
//! 4 KiB and 64 KiB pages, cross-compiled (harness/tests/arm64.rs), and the
//! debug kernels with their two bug patches each (harness/tests/debug_kernel.rs).

use harness::kbuild::target::{PageSize, Target};
use harness::kbuild::{self, build, minimal, BuildRequest};
use harness::model::KernelGen;
use std::path::Path;
use std::time::Duration;

/// One kernel the tests boot.
#[derive(Debug, Clone, Copy)]
pub struct TestKernel {
    /// Its source's generation.
    pub gen: KernelGen,
    /// A debug kernel (guest-images/kernel-config/debug.config).
    pub debug: bool,
    /// A folder of examples/patches applied to the source.
    pub patches: Option<&'static str>,
    /// Only the slow tier boots it.
    pub slow: bool,
    /// What it is built for (x86_64, or arm64 with its page size).
    pub target: Target,
}

impl TestKernel {
    const fn stock(gen: KernelGen) -> TestKernel {
        TestKernel { gen, debug: false, patches: None, slow: false, target: Target::X86_64 }
    }
    const fn debug(gen: KernelGen, patches: Option<&'static str>) -> TestKernel {
        TestKernel { gen, debug: true, patches, slow: true, target: Target::X86_64 }
    }
    /// Slow tier for now: a cold cross build is about 1,500 objects, and these
    /// kernels have not yet been seen to boot in a test run.
    const fn arm64(gen: KernelGen, pages: PageSize) -> TestKernel {
        TestKernel { target: Target::Arm64 { pages }, slow: true, ..TestKernel::stock(gen) }
    }

    /// `6.12-min`, `6.12-min + revert-irq-setup`, `7.x-debug + leak-irq-array-7.3`,
    /// `6.12-min (arm64)`, `6.12-min-64k (arm64)`.
    pub fn name(&self) -> String {
        let kind = match (self.debug, self.target.pages()) {
            (true, _) => "debug",
            (false, PageSize::K4) => "min",
            (false, PageSize::K64) => "min-64k",
        };
        let arch = if self.target == Target::X86_64 { "" } else { " (arm64)" };
        let base = format!("{}-{kind}{arch}", self.gen);
        match self.patches {
            Some(p) => format!("{base} + {p}"),
            None => base,
        }
    }

    /// Its build request in `cache` (as the tests make it: all host CPUs, ccache).
    fn request(&self, cache: &Path) -> anyhow::Result<BuildRequest> {
        let mut req = minimal::request_for(self.gen, cache, self.debug, self.target)?;
        req.patches = self.patches.map(|p| Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/patches").join(p));
        if self.debug {
            req.deadline = Duration::from_secs(4 * 3600);
        }
        Ok(req)
    }

    /// Minutes a cold build takes on a 2-core machine (`cargo xtask bench kernel`:
    /// minimal 557 s, debug about 45 min; a patched build after its stock one
    /// recompiles what the patch touches, about 2 minutes).
    /// An arm64 cross build compiles about 1,500 objects (`make -n`, 6.12 with
    /// arm64.config), more than x86's minimal one: about 12 minutes, an estimate
    /// from that count, not yet measured on a quiet machine.
    fn cold_minutes(&self) -> u32 {
        match (self.debug, self.patches.is_some(), self.target) {
            (_, true, _) => 2,
            (false, false, Target::Arm64 { .. }) => 12,
            (false, false, Target::X86_64) => 9,
            (true, false, _) => 45,
        }
    }
}

/// The kernels every tier boots, in build order (a patched build reuses its
/// stock build's work copy).
pub const TEST_KERNELS: [TestKernel; 18] = [
    TestKernel::stock(KernelGen::V6_12),
    TestKernel { patches: Some("revert-irq-setup"), ..TestKernel::stock(KernelGen::V6_12) },
    TestKernel::stock(KernelGen::V6_1),
    TestKernel::stock(KernelGen::V7),
    TestKernel::arm64(KernelGen::V6_12, PageSize::K4),
    TestKernel::arm64(KernelGen::V6_12, PageSize::K64),
    TestKernel::debug(KernelGen::V6_12, None),
    TestKernel::debug(KernelGen::V6_12, Some("leak-irq-array-6.12")),
    TestKernel::debug(KernelGen::V6_12, Some("freed-affinity-hint-6.12")),
    TestKernel::debug(KernelGen::V6_12, Some("uaf-in-teardown-6.12")),
    TestKernel::debug(KernelGen::V6_12, Some("leak-tx-skb-6.12")),
    TestKernel::debug(KernelGen::V6_1, None),
    TestKernel::debug(KernelGen::V6_1, Some("leak-irq-array-6.1")),
    TestKernel::debug(KernelGen::V6_1, Some("freed-affinity-hint-6.1")),
    TestKernel::debug(KernelGen::V7, None),
    TestKernel::debug(KernelGen::V7, Some("leak-irq-array-7.3")),
    TestKernel::debug(KernelGen::V7, Some("freed-affinity-hint-7.3")),
    TestKernel::debug(KernelGen::V7, Some("uaf-in-teardown-7.3")),
];

/// Whether `k`'s build is in `cache` already.
fn cached(k: &TestKernel, cache: &Path) -> anyhow::Result<bool> {
    Ok(kbuild::is_cached(&k.request(cache)?)?)
}

/// Build every kernel the tier boots (`slow`: also the debug ones), saying
/// first which are cached and which will be built, with a time estimate.
///
/// # Errors
/// A build that fails.
pub fn ensure(cache: &Path, slow: bool) -> anyhow::Result<()> {
    let wanted: Vec<&TestKernel> = TEST_KERNELS.iter().filter(|k| slow || !k.slow).collect();
    let mut missing = Vec::new();
    for k in &wanted {
        if !cached(k, cache)? {
            missing.push(*k);
        }
    }
    let names = |ks: &[&TestKernel]| ks.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ");
    if missing.is_empty() {
        eprintln!("kernel: the {} kernels the tests boot are built: {}", wanted.len(), names(&wanted));
        return Ok(());
    }
    let minutes: u32 = missing.iter().map(|k| k.cold_minutes()).sum();
    eprintln!(
        "kernel: the tests boot {} kernels; building {} first: {} (about {minutes} minutes cold on 2 cores, less \
         from ccache; cached afterwards)",
        wanted.len(),
        missing.len(),
        names(&missing)
    );
    for k in missing {
        let name = k.name();
        let started = std::time::Instant::now();
        let built = build(&k.request(cache)?, &mut |line| eprintln!("kernel {name}: {line}"))?;
        eprintln!(
            "kernel {name}: {} ready in {:.0} s ({})",
            built.stamp.release,
            started.elapsed().as_secs_f64(),
            built.dir.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
    }

    #[test]
    fn every_minimal_and_debug_kernel_a_test_names_is_built_first() {
        let mut names = std::collections::BTreeSet::new();
        for entry in std::fs::read_dir(repo().join("harness/tests")).expect("tests").flatten() {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            // A file that builds its kernels for arm64 guests (harness/tests/arm64.rs).
            let arch = if text.contains("request_on_arm64(") { " (arm64)" } else { "" };
            for gen in ["6.1", "6.12", "7.x"] {
                for kind in ["min", "min-64k", "debug"] {
                    if text.contains(&format!("\"{gen}-{kind}\"")) {
                        names.insert(format!("{gen}-{kind}{arch}"));
                    }
                }
            }
        }
        let built: Vec<String> = TEST_KERNELS.iter().filter(|k| k.patches.is_none()).map(TestKernel::name).collect();
        for n in &names {
            assert!(built.contains(n), "a test boots {n}, which xtask/src/test_kernels.rs does not build first");
        }
        for k in TEST_KERNELS.iter().filter_map(|k| k.patches) {
            assert!(repo().join("examples/patches").join(k).is_dir(), "examples/patches/{k}");
        }
    }

    #[test]
    fn the_quick_and_vm_tiers_split_the_default_one() {
        let text = std::fs::read_to_string(repo().join(".config/nextest.toml")).expect("nextest.toml");
        let doc: toml::Value = toml::from_str(&text).expect("parses");
        let filter = |p: &str| doc["profile"][p]["default-filter"].as_str().expect("filter").to_owned();
        let binaries = |f: &str| f.split("binary_id(").nth(1).and_then(|r| r.split(')').next()).map(str::to_owned);
        let (quick, vm) = (filter("quick"), filter("vm"));
        assert_eq!(binaries(&quick), binaries(&vm), "quick leaves out exactly the VM binaries vm runs");
        assert!(quick.starts_with("not (") && vm.ends_with("& not test(/^slow_/)"), "{quick} / {vm}");
    }
}
