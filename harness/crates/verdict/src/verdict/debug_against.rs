//! What a debug run's reports are judged against ([`Against`]): the stock
//! build's report classes for a patched build, or the mana frames with the
//! stock kernel's own known findings (guest-images/debug-findings.toml).

use serde::Deserialize;
use std::collections::BTreeSet;

/// The known findings of the stock debug kernels, shipped with the source tree.
const FINDINGS: &str = include_str!("../../../../../guest-images/debug-findings.toml");

/// One known finding of a stock debug kernel.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KnownFinding {
    /// The kernel series it was seen on (`7.3`).
    pub series: String,
    /// The checker (`KASAN`, `kmemleak`, `lockdep`, `WARN`, `BUG`).
    pub checker: String,
    /// Text the report's class (`DebugReport::class`) contains.
    pub class_contains: String,
    /// The driver fact that explains it, with the file and kernel version.
    pub why: String,
}

impl KnownFinding {
    /// Whether a report of this `class` (`DebugReport::class`) is this finding.
    pub fn matches(&self, class: &str) -> bool {
        class.starts_with(&format!("{}: ", self.checker)) && class.contains(&self.class_contains)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FindingsFile {
    finding: Vec<KnownFinding>,
}

/// The known findings of a series (`7.3`, from a kernel release such as
/// `7.3.4+deb13-cloud-amd64` or `7.3.4-manarig-1a2b3c4d`).
///
/// # Errors
/// The shipped file does not parse (a build-time mistake): its TOML error.
pub fn known_findings(release: &str) -> Result<Vec<KnownFinding>, String> {
    let file: FindingsFile = toml::from_str(FINDINGS).map_err(|e| format!("guest-images/debug-findings.toml: {e}"))?;
    let mut parts = release.split(['.', '-', '+']);
    let series = match (parts.next(), parts.next()) {
        (Some(a), Some(b)) => format!("{a}.{b}"),
        _ => return Ok(Vec::new()),
    };
    Ok(file.finding.into_iter().filter(|f| f.series == series).collect())
}

/// What a debug run's reports are judged against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Against {
    /// A stock debug kernel, or a build with no stock run to compare with: a
    /// report with a mana frame fails unless it is one of `known`.
    ManaFrames {
        /// The kernel's own known findings ([`known_findings`]).
        known: Vec<KnownFinding>,
    },
    /// A patched build: the report classes (`DebugReport::class`) of the
    /// stock build of the same source on the same topology and options.
    Stock {
        /// The stock run, for messages (`6.12-debug (build 1a2b3c4d) on seed-002`).
        label: String,
        /// Its report classes.
        classes: BTreeSet<String>,
    },
}

impl Default for Against {
    fn default() -> Self {
        Against::ManaFrames { known: Vec::new() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_findings_parse_and_belong_to_their_series() {
        let f = known_findings("7.3.4+deb13-cloud-amd64").expect("parses");
        assert!(f.iter().any(|k| k.class_contains.contains("napi_disable_locked")), "{f:?}");
        assert!(f.iter().all(|k| k.why.contains("7.3.4")), "each names the kernel it was seen on");
        assert_eq!(known_findings("7.3.4-manarig-1a2b3c4d").expect("parses"), f);
        assert!(known_findings("6.12.117+deb13-cloud-amd64").expect("parses").is_empty());
    }
}
