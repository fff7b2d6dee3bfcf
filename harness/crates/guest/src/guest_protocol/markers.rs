//! The lines that frame the agent's output, and the protocol version the report's
//! first line carries (guest-images/README.md, "Markers" and "Versions").

use super::soak::SoakMark;
use super::ReportError;

/// First line of the report, followed by a space and the [`Version`]
/// (`MANARIG-REPORT-BEGIN 2`).
pub const REPORT_BEGIN: &str = "MANARIG-REPORT-BEGIN";
/// Last line of the report: the host stops QEMU when it arrives.
pub const REPORT_END: &str = "MANARIG-REPORT-END";
/// First line of a stage, followed by a space and the stage's name
/// (`MANARIG-STAGE-BEGIN first-probe`): the same items as the report, printed
/// before a later step (`rmmod`) changes them.
pub const STAGE_BEGIN: &str = "MANARIG-STAGE-BEGIN";
/// Last line of a stage.
pub const STAGE_END: &str = "MANARIG-STAGE-END";
/// A soak's moment (`MANARIG-SOAK link-down 3`, [`SoakMark`]): outside any
/// block, on the report channel; the rig acts on it as soon as it arrives.
pub const SOAK: &str = "MANARIG-SOAK";
/// A selftest run's mark (`MANARIG-SELFTEST 3`): outside any block, on the
/// report channel, with `manarig.selftests`; mark 0 before the first test
/// program, mark k after the k-th. The agent read the MANA netdev's and the
/// remote end's counters just before it (the report's `selftest-netdev-at k`,
/// `selftest-remote-at k`); the rig takes the device's status when it
/// arrives, so that each program's counters are the difference of its two marks.
pub const SELFTEST: &str = "MANARIG-SELFTEST";
/// The final unload's mark (`MANARIG-UNLOAD`): outside any block, on the
/// report channel, with `manarig.unload=1`, just before the agent's last
/// `rmmod`; the rig takes the device's status when it arrives, so that the
/// report's queue table shows the queues the teardown is about to destroy
/// (the report itself comes after the rmmod), then answers with [`GO_AHEAD`].
pub const UNLOAD: &str = "MANARIG-UNLOAD";
/// The host's answer to a mark the agent waits at
/// ([`Marker::awaits_go_ahead`]): this line and a line feed, written to the
/// input of the port the mark came on (the report channel's, or the console's),
/// once the host has done what the mark asks for. The agent waits a few guest
/// seconds for it (the report's `unload-handshake: go | timeout`) and then goes
/// on without it: a host that never answers (one older than the handshake)
/// costs that wait, not a hang.
pub const GO_AHEAD: &str = "MANARIG-GO";

/// A report format version (the number after [`REPORT_BEGIN`]).
///
/// The rule (guest-images/README.md, "Versions"): the number goes up when a line
/// the parser reads changes its shape or meaning or goes away; a new key that
/// older parsers may skip does not need a new number. The parser reads every
/// version in [`Version::KNOWN`] and refuses the others, naming both sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub enum Version {
    /// The agents before 2026-12-01: the report's lines changed under this number
    /// (raw `interrupts-header:`/`interrupts:` lines, then compact `irqcount:` ones);
    /// the recorded consoles in harness/tests/fixtures are of this version, but
    /// for console-seed002-6.12-v3.txt.
    V1,
    /// Agents of 2026-12: `/proc/interrupts` only in the compact `irqcount:` form.
    V2,
    /// The current agent (guest-images/init.sh; recorded in
    /// harness/tests/fixtures/console-seed002-6.12-v3.txt): also the traffic items
    /// (`addr:`, `ping:`, `traffic:`, `traffic-irq`, `traffic-softirq`,
    /// `traffic-stats`), which a version 2 host would not read.
    V3,
}

impl Version {
    /// The version guest-images/init.sh of this tree prints.
    pub const CURRENT: Version = Version::V3;
    /// Every version the parser reads, oldest first.
    pub const KNOWN: [Version; 3] = [Version::V1, Version::V2, Version::V3];

    /// The number as the begin line prints it.
    pub fn number(self) -> u32 {
        match self {
            Version::V1 => 1,
            Version::V2 => 2,
            Version::V3 => 3,
        }
    }

    /// The version named by the text after [`REPORT_BEGIN`].
    ///
    /// # Errors
    /// [`ReportError::Version`] for a version this parser does not know (with the
    /// text as the guest printed it).
    pub fn parse(text: &str) -> Result<Version, ReportError> {
        Version::KNOWN
            .into_iter()
            .find(|v| text.trim() == v.number().to_string())
            .ok_or_else(|| ReportError::Version { got: text.trim().to_string() })
    }

    /// The known versions as text, for error messages: `1, 2`.
    pub fn known_list() -> String {
        Version::KNOWN.iter().map(|v| v.number().to_string()).collect::<Vec<_>>().join(", ")
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.number())
    }
}

/// One marker line as the agent prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Marker {
    /// [`REPORT_BEGIN`] with the version text as printed (checked by the parser,
    /// not here: an unknown version must still end the wait).
    ReportBegin(String),
    /// [`REPORT_END`].
    ReportEnd,
    /// [`STAGE_BEGIN`] with the stage's name.
    StageBegin(String),
    /// [`STAGE_END`].
    StageEnd,
    /// [`SOAK`] with its step and minute.
    Soak(SoakMark),
    /// [`SELFTEST`] with its mark's number (0 before the first program, k
    /// after the k-th).
    Selftest(u32),
    /// [`UNLOAD`].
    Unload,
}

impl Marker {
    /// The marker on `line` (line endings and trailing blanks ignored), None for
    /// any other line. A begin line needs its word after a space: a kernel
    /// message glued to a marker is not one.
    pub fn parse(line: &str) -> Option<Marker> {
        let line = line.trim_end();
        let word = |prefix: &str| {
            let rest = line.strip_prefix(prefix)?.strip_prefix(' ')?.trim();
            (!rest.is_empty() && !rest.contains(char::is_whitespace)).then(|| rest.to_string())
        };
        match line {
            REPORT_END => Some(Marker::ReportEnd),
            STAGE_END => Some(Marker::StageEnd),
            UNLOAD => Some(Marker::Unload),
            _ => word(REPORT_BEGIN)
                .map(Marker::ReportBegin)
                .or_else(|| word(STAGE_BEGIN).map(Marker::StageBegin))
                .or_else(|| line.strip_prefix(SOAK)?.strip_prefix(' ').and_then(SoakMark::parse).map(Marker::Soak))
                .or_else(|| word(SELFTEST)?.parse().ok().map(Marker::Selftest)),
        }
    }

    /// True for the lines after which the guest changes nothing until the
    /// matching end line (the moments the rig snapshots the device at).
    pub fn is_begin(&self) -> bool {
        matches!(self, Marker::ReportBegin(_) | Marker::StageBegin(_))
    }

    /// True for the lines the rig acts on as soon as they are read (the
    /// launcher's marker hook): the begin lines, a selftest run's marks and the
    /// final unload's (a device snapshot) and a soak's marks.
    pub fn is_live(&self) -> bool {
        self.is_begin() || matches!(self, Marker::Soak(_) | Marker::Selftest(_) | Marker::Unload)
    }

    /// True for the marks after which the agent waits for the host's
    /// [`GO_AHEAD`] (the final unload's: its rmmod must not race the host's
    /// read of the device); a live mark ([`Marker::is_live`]).
    pub fn awaits_go_ahead(&self) -> bool {
        matches!(self, Marker::Unload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_lines_parse_and_other_lines_do_not() {
        assert_eq!(Marker::parse("MANARIG-REPORT-BEGIN 2\r"), Some(Marker::ReportBegin("2".into())));
        assert_eq!(Marker::parse("MANARIG-REPORT-END\r\n"), Some(Marker::ReportEnd));
        assert_eq!(Marker::parse("MANARIG-STAGE-BEGIN first-probe"), Some(Marker::StageBegin("first-probe".into())));
        assert_eq!(Marker::parse("MANARIG-STAGE-END"), Some(Marker::StageEnd));
        for other in
            ["MANARIG-REPORT-BEGIN", "MANARIG-REPORT-BEGIN2", "MANARIG-REPORT-END x", "x MANARIG-REPORT-END", ""]
        {
            assert_eq!(Marker::parse(other), None, "{other:?}");
        }
        assert!(Marker::parse("MANARIG-STAGE-BEGIN a").is_some_and(|m| m.is_begin()));
        assert!(!Marker::ReportEnd.is_begin());
        let soak = Marker::parse("MANARIG-SOAK sample 4\r").expect("a soak mark");
        assert_eq!(soak, Marker::Soak(SoakMark { step: super::super::soak::SoakStep::Sample, minute: 4 }));
        assert!(soak.is_live() && !soak.is_begin() && !Marker::StageEnd.is_live());
        assert_eq!(Marker::parse("MANARIG-SOAK sample"), None);
        let mark = Marker::parse("MANARIG-SELFTEST 3\r").expect("a selftest mark");
        assert_eq!(mark, Marker::Selftest(3));
        assert!(mark.is_live() && !mark.is_begin());
        for other in ["MANARIG-SELFTEST", "MANARIG-SELFTEST x", "MANARIG-SELFTEST 3 4", "MANARIG-SELFTEST -1"] {
            assert_eq!(Marker::parse(other), None, "{other:?}");
        }
        let unload = Marker::parse("MANARIG-UNLOAD\r").expect("the unload's mark");
        assert_eq!(unload, Marker::Unload);
        assert!(unload.is_live() && !unload.is_begin() && unload.awaits_go_ahead());
        assert!(!Marker::Selftest(1).awaits_go_ahead() && !Marker::ReportBegin("3".into()).awaits_go_ahead());
        assert_eq!(Marker::parse(GO_AHEAD), None, "the host's answer is not a mark");
        for other in ["MANARIG-UNLOAD x", "MANARIG-UNLOADED", "x MANARIG-UNLOAD"] {
            assert_eq!(Marker::parse(other), None, "{other:?}");
        }
    }

    #[test]
    fn versions_parse_by_number_and_unknown_ones_are_refused_naming_both() {
        assert_eq!(Version::parse("2").expect("v2"), Version::V2);
        assert_eq!(Version::parse(" 1 ").expect("v1"), Version::V1);
        let e = Version::parse("4").expect_err("unknown");
        assert_eq!(e, ReportError::Version { got: "4".into() });
        let text = e.to_string();
        assert!(text.contains("\"4\"") && text.contains("1, 2, 3"), "{text}");
        assert_eq!(Version::CURRENT, *Version::KNOWN.last().expect("known"));
    }
}
