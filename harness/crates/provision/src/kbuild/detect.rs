//! Which MANA IRQ-spreading algorithm a kernel source tree runs, read from
//! drivers/net/ethernet/microsoft/mana/gdma_main.c, so the reference model
//! judges a built kernel by its own code rather than by its version number.

use crate::model::KernelGen;
use std::path::Path;

/// The driver file the detection reads, relative to the tree.
pub const GDMA_MAIN: &str = "drivers/net/ethernet/microsoft/mana/gdma_main.c";

/// The file whose `cpumask_local_spread()` decides, for a driver without
/// `irq_setup()`, between the flat (before 6.3) and the hop-aware order.
pub const CPUMASK_C: &str = "lib/cpumask.c";

/// The version of the detection rules; a build stamp from older rules is
/// detected again (before version 2, lib/cpumask.c was not read and every
/// per-vector `cpumask_local_spread()` driver was taken for 6.1).
pub const DETECTOR: u32 = 2;

/// The generation detected and the evidence, for the report.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Detected {
    /// The model generation (`6.1`, `6.12`, `7.x`).
    pub model: String,
    /// Why, in one line (which function the file defines).
    pub evidence: String,
    /// The [`DETECTOR`] rules that produced it (0 in stamps written before the field).
    #[serde(default)]
    pub detector: u32,
}

impl Detected {
    /// `model` detected by the current [`DETECTOR`] rules, for `evidence`.
    fn new(model: KernelGen, evidence: String) -> Self {
        Detected { model: model.as_str().to_string(), evidence, detector: DETECTOR }
    }

    /// The generation as the model's type.
    ///
    /// # Errors
    /// Only for a hand-edited stamp holding an unknown name.
    pub fn generation(&self) -> Result<KernelGen, crate::model::UnknownKernel> {
        self.model.parse()
    }

    /// Whether older rules made it and it may be wrong: before [`DETECTOR`] 2 every
    /// per-vector `cpumask_local_spread()` driver was taken for 6.1, also on 6.3+ trees.
    pub fn is_stale(&self) -> bool {
        self.detector < DETECTOR && self.model == "6.1"
    }
}

/// Detection failed.
#[derive(Debug, thiserror::Error)]
pub enum DetectError {
    /// The tree has no MANA driver (not a kernel tree, or older than 5.13).
    #[error("{path}: cannot read the MANA driver ({error}); is this a Linux source tree with MANA (5.13 or later)?")]
    NoDriver {
        /// The file looked for.
        path: String,
        /// The OS error.
        error: std::io::Error,
    },
    /// The driver spreads IRQs in a way none of the models recognise.
    #[error(
        "{path}: neither irq_setup(), mana_irq_setup_numa_aware() / mana_irq_setup_linear() \
         nor a cpumask_local_spread() call: the model does not know this MANA IRQ code; \
         pass --model 6.1|6.3|6.12|7.x to choose one"
    )]
    Unknown {
        /// The file read.
        path: String,
    },
    /// The driver calls `cpumask_local_spread()`, and the tree does not say which one it has.
    #[error(
        "{path}: MANA spreads with cpumask_local_spread(), but neither lib/cpumask.c nor the Makefile says \
         whether it is the flat one (before 6.3) or the NUMA-hop-aware one; pass --model 6.1 or --model 6.3"
    )]
    NoSpread {
        /// The tree.
        path: String,
    },
}

/// The byte offset of the line that starts a C function definition of `name` in
/// `text` (return type, then `name(`; not a call, nor a prototype ending in `;`).
fn definition_at(text: &str, name: &str) -> Option<usize> {
    let needle = format!("{name}(");
    let lines: Vec<(usize, &str)> = text
        .split_inclusive('\n')
        .scan(0usize, |at, l| {
            let start = *at;
            *at += l.len();
            Some((start, l.trim_end_matches(['\n', '\r'])))
        })
        .collect();
    let mut i = 0;
    while i < lines.len() {
        let (start, l) = lines[i];
        i += 1;
        let Some(pos) = l.find(&needle) else { continue };
        let before = &l[..pos];
        // A definition starts at column 0 with its type (`static int name(`); a
        // call is indented or follows `=`/`(`/`return`.
        let starts_decl = !l.starts_with([' ', '\t'])
            && !before.is_empty()
            && before.ends_with([' ', '*'])
            && !before.contains(['=', '(', ';'])
            && !before.trim_start().starts_with("return");
        if !starts_decl {
            continue;
        }
        // The signature may wrap; it is a definition when it ends with `)` and
        // the body's `{` follows (not `;`).
        let mut sig = l.to_string();
        let mut j = i;
        while !sig.trim_end().ends_with(')') && !sig.contains(';') && !sig.contains('{') && j < lines.len() {
            sig.push_str(lines[j].1);
            j += 1;
        }
        if sig.contains(';') {
            continue;
        }
        if sig.contains('{') || lines.get(j).is_some_and(|(_, n)| n.trim_start().starts_with('{')) {
            return Some(start);
        }
    }
    None
}

/// True if `text` has a C function definition of `name` ([`definition_at`]).
fn defines(text: &str, name: &str) -> bool {
    definition_at(text, name).is_some()
}

/// The body (from its opening `{` to the matching `}`) of the C function `name`
/// defined in `text`.
fn body_of<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let rest = &text[definition_at(text, name)?..];
    let open = rest.find('{')?;
    let mut depth = 0usize;
    for (i, c) in rest[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&rest[open..=open + i]);
                }
            }
            _ => {}
        }
    }
    None
}

/// The functions whose definition marks the 6.17+ driver ([`KernelGen::V7`]: dynamic MSI-X).
const V7_IRQ_SETUP: [&str; 2] = ["mana_irq_setup_numa_aware", "mana_irq_setup_linear"];

/// Which `cpumask_local_spread()` Linux `major.minor` has, with the words
/// for the evidence: NUMA-hop-aware from 6.3 on ([`KernelGen::V6_3`]), flat
/// before ([`KernelGen::V6_1`]).
fn local_spread_of_version(major: u32, minor: u32) -> (KernelGen, &'static str) {
    if (major, minor) >= (6, 3) {
        (KernelGen::V6_3, "NUMA-hop-aware from 6.3 on")
    } else {
        (KernelGen::V6_1, "flat before 6.3")
    }
}

/// `VERSION.PATCHLEVEL` from a kernel tree's top-level Makefile.
fn makefile_version(text: &str) -> Option<(u32, u32)> {
    let field = |key: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == key).then(|| v.trim().parse().ok()).flatten()
        })
    };
    Some((field("VERSION")?, field("PATCHLEVEL")?))
}

/// What a tree's `cpumask_local_spread()` does, and the evidence.
fn local_spread_flavour(sources: &Sources<'_>) -> Result<(KernelGen, String), DetectError> {
    if let Some(body) = sources.cpumask_c.and_then(|t| body_of(t, "cpumask_local_spread")) {
        return Ok(if body.contains("sched_numa_find_nth_cpu(") {
            (
                KernelGen::V6_3,
                format!("{CPUMASK_C} cpumask_local_spread() calls sched_numa_find_nth_cpu(): NUMA-hop-aware"),
            )
        } else {
            (
                KernelGen::V6_1,
                format!("{CPUMASK_C} cpumask_local_spread() walks the node's CPUs, then all others by id: flat"),
            )
        });
    }
    match sources.makefile.and_then(makefile_version) {
        Some((major, minor)) => {
            let (gen, how) = local_spread_of_version(major, minor);
            Ok((
                gen,
                format!("no cpumask_local_spread() in {CPUMASK_C}; the Makefile says Linux {major}.{minor}: {how}"),
            ))
        }
        None => Err(DetectError::NoSpread { path: sources.path.to_string() }),
    }
}

/// The files of a kernel tree that decide the MANA IRQ model.
#[derive(Debug, Clone, Copy)]
pub struct Sources<'a> {
    /// Where the tree is, for error messages.
    pub path: &'a str,
    /// drivers/net/ethernet/microsoft/mana/gdma_main.c.
    pub gdma_main: &'a str,
    /// lib/cpumask.c, if readable.
    pub cpumask_c: Option<&'a str>,
    /// The top-level Makefile, if readable.
    pub makefile: Option<&'a str>,
}

/// Detect the generation from a tree's files.
///
/// - `mana_irq_setup_numa_aware()` or `mana_irq_setup_linear()` defined in
///   gdma_main.c: [`KernelGen::V7`] (6.17 and later: dynamic MSI-X);
/// - `irq_setup()` defined: [`KernelGen::V6_12`] (6.9–6.16: sibling groups per
///   NUMA hop);
/// - else a `cpumask_local_spread(` call: one CPU per vector, in the order of the
///   tree's own `cpumask_local_spread()`: [`KernelGen::V6_3`] when lib/cpumask.c's
///   definition calls `sched_numa_find_nth_cpu()` (Linux 6.3 on), else
///   [`KernelGen::V6_1`] (flat); without that definition, the Makefile's version
///   decides (6.3 and later: hop-aware).
///
/// # Errors
/// [`DetectError::Unknown`] when gdma_main.c has none of these;
/// [`DetectError::NoSpread`] when neither lib/cpumask.c nor the Makefile tells
/// which `cpumask_local_spread()` the tree has.
pub fn detect_sources(sources: &Sources<'_>) -> Result<Detected, DetectError> {
    let text = sources.gdma_main;
    for f in V7_IRQ_SETUP {
        if defines(text, f) {
            return Ok(Detected::new(KernelGen::V7, format!("{GDMA_MAIN} defines {f}()")));
        }
    }
    if defines(text, "irq_setup") {
        return Ok(Detected::new(
            KernelGen::V6_12,
            format!("{GDMA_MAIN} defines irq_setup() (sibling groups per NUMA hop)"),
        ));
    }
    if text.contains("cpumask_local_spread(") {
        let (gen, why) = local_spread_flavour(sources)?;
        return Ok(Detected::new(
            gen,
            format!("{GDMA_MAIN} defines no irq_setup() and calls cpumask_local_spread() (one CPU per vector); {why}"),
        ));
    }
    Err(DetectError::Unknown { path: sources.path.to_string() })
}

/// Detect the generation a built `mana.ko` runs from its symbols, for a Debian
/// image that is not the pinned one (a fallback of its track) and has no
/// source beside it:
///
/// - defines `mana_irq_setup_numa_aware()` or `mana_irq_setup_linear()`:
///   [`KernelGen::V7`];
/// - else imports `sched_numa_hop_mask` (what `for_each_numa_hop_mask()` calls:
///   `irq_setup()` inlined into `mana_gd_setup_irqs()`): [`KernelGen::V6_12`];
/// - else imports `cpumask_local_spread`: one CPU per vector, hop-aware from
///   Linux 6.3 on (`release`'s version decides: [`KernelGen::V6_3`] or
///   [`KernelGen::V6_1`]).
///
/// # Errors
/// [`DetectError::Unknown`] when the module shows none of these.
pub fn detect_module(
    symbols: &crate::provision::kernel::ModuleSymbols,
    release: &str,
    path: &str,
) -> Result<Detected, DetectError> {
    for f in V7_IRQ_SETUP {
        if symbols.defined.contains(f) {
            return Ok(Detected::new(KernelGen::V7, format!("{path} defines {f}()")));
        }
    }
    if symbols.imported.contains("sched_numa_hop_mask") {
        return Ok(Detected::new(
            KernelGen::V6_12,
            format!(
                "{path} calls sched_numa_hop_mask() (irq_setup() walking NUMA hops) and defines no mana_irq_setup_*()"
            ),
        ));
    }
    if symbols.imported.contains("cpumask_local_spread") {
        let mut numbers = release.split(['.', '-', '+']).map(str::parse::<u32>);
        let version = (numbers.next().and_then(Result::ok), numbers.next().and_then(Result::ok));
        if let (Some(major), Some(minor)) = version {
            let (gen, how) = local_spread_of_version(major, minor);
            return Ok(Detected::new(
                gen,
                format!("{path} calls cpumask_local_spread() per vector on Linux {major}.{minor}: {how}"),
            ));
        }
    }
    Err(DetectError::Unknown { path: path.to_string() })
}

/// Detect the generation of the kernel source tree at `tree`.
///
/// # Errors
/// [`DetectError`]: no driver file, or unrecognised IRQ code.
pub fn detect_tree(tree: &Path) -> Result<Detected, DetectError> {
    let p = tree.join(GDMA_MAIN);
    let gdma_main = std::fs::read_to_string(&p)
        .map_err(|source| DetectError::NoDriver { path: p.display().to_string(), error: source })?;
    let cpumask_c = std::fs::read_to_string(tree.join(CPUMASK_C)).ok();
    let makefile = std::fs::read_to_string(tree.join("Makefile")).ok();
    let path = tree.display().to_string();
    detect_sources(&Sources {
        path: &path,
        gdma_main: &gdma_main,
        cpumask_c: cpumask_c.as_deref(),
        makefile: makefile.as_deref(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Shapes of the real definitions (Debian 6.1.192, 6.12.117, 7.3.4 gdma_main.c),
    // written as small fakes.
    const V612: &str = "static int irq_setup(unsigned int *irqs, unsigned int len, int node)\n{\n\treturn 0;\n}\n\
                        static int mana_gd_setup_irqs(struct pci_dev *pdev)\n{\n\terr = irq_setup(irqs, n, node);\n\
                        \tcpu = cpumask_local_spread(i, gc->numa_node);\n}\n";
    const V7: &str = "static int mana_irq_setup_numa_aware(unsigned int *irqs, unsigned int len, int node,\n\
                      \t\t\t\t     bool skip_first_cpu)\n{\n}\n\
                      static int mana_irq_setup_linear(unsigned int *irqs, unsigned int len, int node)\n{\n}\n";
    const PER_VECTOR: &str = "static int mana_gd_setup_irqs(struct pci_dev *pdev)\n{\n\
                              \t\tcpu = cpumask_local_spread(i, gc->numa_node);\n}\n";
    // lib/cpumask.c, made-up minimal texts of both kinds: before 6.3 the function
    // walks the node's CPUs then the rest; from 6.3 it asks the scheduler's hop masks.
    const CPUMASK_FLAT: &str = "/* sched_numa_find_nth_cpu( is only named in this comment */\n\
                                unsigned int cpumask_local_spread(unsigned int i, int node)\n{\n\
                                \tif (node == NUMA_NO_NODE) {\n\t\tfor_each_cpu(cpu, cpu_online_mask)\n\
                                \t\t\tif (i-- == 0)\n\t\t\t\treturn cpu;\n\t}\n\treturn 0;\n}\n\
                                unsigned int other(void)\n{\n\treturn sched_numa_find_nth_cpu(m, 0, 0);\n}\n";
    const CPUMASK_HOPS: &str = "unsigned int cpumask_local_spread(unsigned int i, int node)\n{\n\
                                \ti %= num_online_cpus();\n\
                                \tcpu = sched_numa_find_nth_cpu(cpu_online_mask, i, node);\n\treturn cpu;\n}\n";

    fn detect(gdma_main: &str, cpumask_c: Option<&str>, makefile: Option<&str>) -> Result<Detected, DetectError> {
        detect_sources(&Sources { path: "tree", gdma_main, cpumask_c, makefile })
    }

    #[test]
    fn each_generation_is_recognised_by_its_definitions() {
        assert_eq!(detect(V612, None, None).expect("6.12").model, "6.12");
        assert_eq!(detect(V7, None, None).expect("7").model, "7.x");
        let d = detect(PER_VECTOR, Some(CPUMASK_FLAT), None).expect("6.1");
        assert_eq!((d.model.as_str(), d.detector), ("6.1", DETECTOR));
        assert!(d.evidence.contains("no irq_setup()") && d.evidence.contains("flat"), "{}", d.evidence);
    }

    #[test]
    fn a_per_vector_driver_follows_the_trees_own_cpumask_local_spread() {
        let d = detect(PER_VECTOR, Some(CPUMASK_HOPS), Some("VERSION = 6\nPATCHLEVEL = 1\n")).expect("6.3");
        assert_eq!(d.model, "6.3");
        assert!(
            d.evidence.contains("lib/cpumask.c cpumask_local_spread() calls sched_numa_find_nth_cpu()"),
            "{}",
            d.evidence
        );
        // A call elsewhere in the file (or in a comment before it) does not count.
        assert_eq!(detect(PER_VECTOR, Some(CPUMASK_FLAT), None).expect("6.1").model, "6.1");
    }

    #[test]
    fn without_the_definition_the_makefile_version_decides() {
        let mk = |minor: u32| format!("# SPDX\nVERSION = 6\nPATCHLEVEL = {minor}\nSUBLEVEL = 0\n");
        assert_eq!(detect(PER_VECTOR, None, Some(&mk(2))).expect("6.2").model, "6.1");
        let d = detect(PER_VECTOR, Some("int unrelated;\n"), Some(&mk(5))).expect("6.5");
        assert_eq!(d.model, "6.3");
        assert!(d.evidence.contains("Linux 6.5"), "{}", d.evidence);
        let e = detect(PER_VECTOR, None, None).expect_err("nothing tells");
        assert!(matches!(e, DetectError::NoSpread { .. }), "{e}");
    }

    #[test]
    fn calls_and_prototypes_are_not_definitions() {
        // Only a call to irq_setup() and a prototype: not the 6.12 algorithm.
        let t = "static int irq_setup(unsigned int *irqs, unsigned int len, int node);\n\
                 int f(void)\n{\n\terr = irq_setup(irqs, n, node);\n\treturn cpumask_local_spread(0, 0);\n}\n";
        assert_eq!(detect(t, Some(CPUMASK_FLAT), None).expect("6.1").model, "6.1");
        assert!(!defines("\tx = mana_irq_setup_linear(a);\n", "mana_irq_setup_linear"));
        assert_eq!(
            body_of("int f(void)\n{\n\tif (x) {\n\t\ty();\n\t}\n}\nint g;\n", "f"),
            Some("{\n\tif (x) {\n\t\ty();\n\t}\n}")
        );
    }

    #[test]
    fn the_hop_aware_local_spread_starts_at_linux_6_3() {
        let gen = |major, minor| local_spread_of_version(major, minor).0;
        assert_eq!(
            [gen(5, 15), gen(6, 2), gen(6, 3), gen(6, 12), gen(7, 0)],
            [KernelGen::V6_1, KernelGen::V6_1, KernelGen::V6_3, KernelGen::V6_3, KernelGen::V6_3]
        );
    }

    #[test]
    fn unknown_code_says_to_pass_model() {
        let e = detect("int main(void) { return 0; }\n", None, None).expect_err("unknown");
        assert!(matches!(e, DetectError::Unknown { .. }), "{e}");
    }

    #[test]
    fn a_modules_symbols_name_its_generation() {
        use crate::provision::kernel::ModuleSymbols;
        let syms = |defined: &[&str], imported: &[&str]| ModuleSymbols {
            defined: defined.iter().map(|s| (*s).to_owned()).collect(),
            imported: imported.iter().map(|s| (*s).to_owned()).collect(),
        };
        // As `nm` shows Debian's mana.ko of 7.3.4, 6.12.117 and 6.1.192.
        let v7 = syms(&["mana_irq_setup_numa_aware"], &["sched_numa_hop_mask", "cpumask_local_spread"]);
        let v612 = syms(&["mana_gd_remove_irqs"], &["sched_numa_hop_mask", "cpumask_local_spread"]);
        let v61 = syms(&["mana_gd_remove_irqs"], &["cpumask_local_spread"]);
        let gen = |s: &ModuleSymbols, r: &str| detect_module(s, r, "mana.ko").expect("known").model;
        assert_eq!(gen(&v7, "7.3.4+deb13-cloud-amd64"), "7.x");
        assert_eq!(gen(&v612, "6.12.119+deb13-cloud-amd64"), "6.12");
        assert_eq!(gen(&v61, "6.1.0-58-cloud-amd64"), "6.1");
        assert_eq!(gen(&v61, "6.5.0-1-cloud-amd64"), "6.3");
        assert!(detect_module(&syms(&[], &[]), "6.12.1", "mana.ko").is_err());
    }

    #[test]
    fn a_tree_without_the_driver_is_a_clear_error() {
        let d = tempfile::tempdir().expect("tmp");
        let e = detect_tree(d.path()).expect_err("no driver");
        assert!(matches!(e, DetectError::NoDriver { .. }), "{e}");
        let f = d.path().join(GDMA_MAIN);
        std::fs::create_dir_all(f.parent().expect("parent")).expect("mkdir");
        std::fs::write(&f, V612).expect("write");
        assert_eq!(detect_tree(d.path()).expect("6.12").model, "6.12");
        std::fs::write(&f, PER_VECTOR).expect("write");
        let lib = d.path().join(CPUMASK_C);
        std::fs::create_dir_all(lib.parent().expect("parent")).expect("mkdir");
        std::fs::write(&lib, CPUMASK_HOPS).expect("write");
        assert_eq!(detect_tree(d.path()).expect("6.3").model, "6.3");
    }
}
