//! Which MANA IRQ-spreading algorithm a kernel source tree runs, read from
//! drivers/net/ethernet/microsoft/mana/gdma_main.c, so the reference model
//! judges a built kernel by its own code rather than by its version number.

use crate::model::KernelGen;
use std::path::Path;

/// The driver file the detection reads, relative to the tree.
pub const GDMA_MAIN: &str = "drivers/net/ethernet/microsoft/mana/gdma_main.c";

/// The generation detected and the evidence, for the report.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Detected {
    /// The model generation (`6.1`, `6.12`, `7.x`).
    pub model: String,
    /// Why, in one line (which function the file defines).
    pub evidence: String,
}

impl Detected {
    /// The generation as the model's type.
    ///
    /// # Errors
    /// Only for a hand-edited stamp holding an unknown name.
    pub fn generation(&self) -> Result<KernelGen, crate::model::UnknownKernel> {
        self.model.parse()
    }
}

/// Detection failed.
#[derive(Debug, thiserror::Error)]
pub enum DetectError {
    /// The tree has no MANA driver (not a kernel tree, or older than 5.13).
    #[error("{path}: cannot read the MANA driver ({source}); is this a Linux source tree with MANA (5.13 or later)?")]
    NoDriver {
        /// The file looked for.
        path: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The driver spreads IRQs in a way none of the models recognise.
    #[error(
        "{path}: neither irq_setup(), mana_irq_setup_numa_aware() / mana_irq_setup_linear() \
         nor a cpumask_local_spread() call: the model does not know this MANA IRQ code; \
         pass --model 6.1|6.12|7.x to choose one"
    )]
    Unknown {
        /// The file read.
        path: String,
    },
}

/// True if `text` has a C function definition of `name` (a line starting the
/// definition: return type, then `name(` — not a call or a prototype ending in `;`).
fn defines(text: &str, name: &str) -> bool {
    let needle = format!("{name}(");
    let mut lines = text.lines().peekable();
    while let Some(l) = lines.next() {
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
        while !sig.trim_end().ends_with(')') && !sig.contains(';') && !sig.contains('{') {
            match lines.peek() {
                Some(next) => {
                    sig.push_str(next);
                    lines.next();
                }
                None => break,
            }
        }
        if sig.contains(';') {
            continue;
        }
        if sig.contains('{') || lines.peek().is_some_and(|n| n.trim_start().starts_with('{')) {
            return true;
        }
    }
    false
}

/// Detect the generation from the text of gdma_main.c.
///
/// - `mana_irq_setup_numa_aware()` or `mana_irq_setup_linear()` defined:
///   [`KernelGen::V7`] (6.17 and later: dynamic MSI-X);
/// - `irq_setup()` defined: [`KernelGen::V6_12`] (6.8–6.16: sibling groups per
///   NUMA hop);
/// - else a `cpumask_local_spread(` call: [`KernelGen::V6_1`] (one CPU per
///   vector; note that from 6.3 on `cpumask_local_spread()` itself is
///   NUMA-hop-aware, which the 6.1 model's flat order matches on machines
///   whose nodes are all one hop apart, e.g. any 2-node machine).
///
/// # Errors
/// [`DetectError::Unknown`] when none of these is found (`path` names the file).
pub fn detect_text(text: &str, path: &str) -> Result<Detected, DetectError> {
    let found = |model: KernelGen, evidence: String| Detected { model: model.as_str().to_string(), evidence };
    for f in ["mana_irq_setup_numa_aware", "mana_irq_setup_linear"] {
        if defines(text, f) {
            return Ok(found(KernelGen::V7, format!("{GDMA_MAIN} defines {f}()")));
        }
    }
    if defines(text, "irq_setup") {
        return Ok(found(KernelGen::V6_12, format!("{GDMA_MAIN} defines irq_setup() (sibling groups per NUMA hop)")));
    }
    if text.contains("cpumask_local_spread(") {
        return Ok(found(
            KernelGen::V6_1,
            format!(
                "{GDMA_MAIN} defines no irq_setup() and calls cpumask_local_spread() (one CPU per vector; \
                 on 6.3+ sources that spread is NUMA-hop-aware, equal to the 6.1 model when all nodes are one hop apart)"
            ),
        ));
    }
    Err(DetectError::Unknown { path: path.to_string() })
}

/// Detect the generation of the kernel source tree at `tree`.
///
/// # Errors
/// [`DetectError`]: no driver file, or unrecognised IRQ code.
pub fn detect_tree(tree: &Path) -> Result<Detected, DetectError> {
    let p = tree.join(GDMA_MAIN);
    let text = std::fs::read_to_string(&p)
        .map_err(|source| DetectError::NoDriver { path: p.display().to_string(), source })?;
    detect_text(&text, &p.display().to_string())
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
    const V61: &str = "static int mana_gd_setup_irqs(struct pci_dev *pdev)\n{\n\
                       \t\tcpu = cpumask_local_spread(i, gc->numa_node);\n}\n";

    #[test]
    fn each_generation_is_recognised_by_its_definitions() {
        assert_eq!(detect_text(V612, "f").expect("6.12").model, "6.12");
        assert_eq!(detect_text(V7, "f").expect("7").model, "7.x");
        let d = detect_text(V61, "f").expect("6.1");
        assert_eq!(d.model, "6.1");
        assert!(d.evidence.contains("no irq_setup()"), "{}", d.evidence);
    }

    #[test]
    fn calls_and_prototypes_are_not_definitions() {
        // Only a call to irq_setup() and a prototype: not the 6.12 algorithm.
        let t = "static int irq_setup(unsigned int *irqs, unsigned int len, int node);\n\
                 int f(void)\n{\n\terr = irq_setup(irqs, n, node);\n\treturn cpumask_local_spread(0, 0);\n}\n";
        assert_eq!(detect_text(t, "f").expect("6.1").model, "6.1");
        assert!(!defines("\tx = mana_irq_setup_linear(a);\n", "mana_irq_setup_linear"));
    }

    #[test]
    fn unknown_code_says_to_pass_model() {
        let e = detect_text("int main(void) { return 0; }\n", "gdma_main.c").expect_err("unknown");
        assert!(e.to_string().contains("--model"), "{e}");
    }

    #[test]
    fn a_tree_without_the_driver_is_a_clear_error() {
        let d = tempfile::tempdir().expect("tmp");
        let e = detect_tree(d.path()).expect_err("no driver");
        assert!(e.to_string().contains("Linux source tree"), "{e}");
        let f = d.path().join(GDMA_MAIN);
        std::fs::create_dir_all(f.parent().expect("parent")).expect("mkdir");
        std::fs::write(&f, V612).expect("write");
        assert_eq!(detect_tree(d.path()).expect("6.12").model, "6.12");
    }
}
