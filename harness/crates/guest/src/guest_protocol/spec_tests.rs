//! The written spec (guest-images/README.md), the agent (guest-images/init.sh)
//! and this module name the same command-line items, keys, markers and version.

use super::markers::{Version, GO_AHEAD, REPORT_BEGIN, REPORT_END, SELFTEST, SOAK, STAGE_BEGIN, STAGE_END, UNLOAD};
use super::options::{NAMES, PREFIX};
use super::Key;
use std::collections::BTreeSet;

const README: &str = include_str!("../../../../../guest-images/README.md");
const INIT: &str = include_str!("../../../../../guest-images/init.sh");

/// The lines of README's section `## <title>` (up to the next `## `).
fn section(title: &str) -> Vec<&'static str> {
    let heading = format!("## {title}");
    let start = README.lines().position(|l| l == heading).unwrap_or_else(|| panic!("README has no {heading:?}"));
    README.lines().skip(start + 1).take_while(|l| !l.starts_with("## ")).collect()
}

/// The item names in the first column of README's command-line table
/// (`` | `manarig.NAME=…` | ``).
fn readme_items() -> BTreeSet<String> {
    section("Kernel command-line items")
        .iter()
        .filter_map(|l| l.strip_prefix("| `")?.strip_prefix(PREFIX))
        .map(|rest| rest.split(['=', '`']).next().unwrap_or_default().to_string())
        .collect()
}

/// The item names init.sh's command-line loop reads (`manarig.NAME=*)`).
fn init_items() -> BTreeSet<String> {
    INIT.lines()
        .filter_map(|l| l.trim().strip_prefix(PREFIX)?.split_once("=*)"))
        .map(|(name, _)| name.to_string())
        .collect()
}

#[test]
fn the_options_readme_and_init_sh_name_the_same_command_line_items() {
    let code: BTreeSet<String> = NAMES.iter().map(|n| n.to_string()).collect();
    assert_eq!(readme_items(), code, "guest-images/README.md's table vs guest_protocol::options::NAMES");
    assert_eq!(init_items(), code, "guest-images/init.sh's case arms vs guest_protocol::options::NAMES");
}

#[test]
fn every_report_key_is_documented_and_every_current_one_is_printed_by_init_sh() {
    let block = section("Report lines");
    for key in Key::ALL {
        let name = key.name();
        let documented = block.iter().any(|l| l.starts_with(&format!("{name}:")) || l.starts_with(&format!("{name} ")));
        assert!(documented, "report key {name:?} is not in guest-images/README.md's report lines");
        if key.in_version(Version::CURRENT) {
            let printed = INIT.contains(&format!("\"{name}:")) || INIT.contains(&format!("\"{name} "));
            assert!(
                printed,
                "report key {name:?} of version {} is not printed by guest-images/init.sh",
                Version::CURRENT
            );
        }
    }
}

#[test]
fn markers_and_the_version_agree() {
    for marker in [REPORT_BEGIN, REPORT_END, STAGE_BEGIN, STAGE_END, SOAK, SELFTEST, UNLOAD, GO_AHEAD] {
        assert!(README.contains(marker), "{marker} is not in guest-images/README.md");
        assert!(INIT.contains(marker), "{marker} is not in guest-images/init.sh");
    }
    let current = Version::CURRENT.number();
    assert!(
        INIT.contains(&format!("\nPROTOCOL_VERSION={current}\n")),
        "init.sh does not set PROTOCOL_VERSION={current}"
    );
    assert!(
        INIT.contains(&format!("\"{REPORT_BEGIN} $PROTOCOL_VERSION\"")),
        "init.sh's begin line does not carry the version"
    );
    let versions = section("Versions");
    for v in Version::KNOWN {
        assert!(
            versions.iter().any(|l| l.starts_with(&format!("| {} |", v.number()))),
            "version {v} is not in README's table"
        );
    }
}
