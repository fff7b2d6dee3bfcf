//! The report's irqbalance items (`manarig.irqbalance=S`, guest-images/README.md):
//! how Debian's irqbalance ended in the guest and the NIC's IRQs sampled while it ran.

use std::collections::BTreeMap;

/// How irqbalance ended (`irqbalance: …`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum IrqbalanceState {
    /// It ran through the sampling and the agent stopped it with SIGTERM.
    Stopped,
    /// It ran through the sampling and ignored SIGTERM for 5 s: SIGKILL.
    Killed,
    /// It exited by itself during the sampling, with this status.
    Exited(i32),
    /// The initramfs had no `/sbin/irqbalance`.
    Absent,
    /// The kernel has no AF_UNIX sockets (no `/proc/net/unix`: CONFIG_UNIX), without
    /// which irqbalance 1.9 exits at start ("Socket couldn't be created."): not started.
    NoAfUnix,
}

impl IrqbalanceState {
    /// The report's value; `-` (not run) and anything unknown are None.
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim() {
            "stopped" => Some(Self::Stopped),
            "killed" => Some(Self::Killed),
            "absent" => Some(Self::Absent),
            "no-af-unix" => Some(Self::NoAfUnix),
            v => v.strip_prefix("exited ").and_then(|rc| rc.trim().parse().ok()).map(Self::Exited),
        }
    }

    /// Whether irqbalance ran for the whole sampling.
    pub fn ran_throughout(self) -> bool {
        matches!(self, Self::Stopped | Self::Killed)
    }
}

impl std::fmt::Display for IrqbalanceState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Stopped => f.write_str("stopped by the agent after the sampling"),
            Self::Killed => f.write_str("killed (SIGTERM ignored for 5 s) after the sampling"),
            Self::Exited(rc) => write!(f, "exited by itself with status {rc} during the sampling"),
            Self::Absent => f.write_str("not in the initramfs"),
            Self::NoAfUnix => f.write_str("not started: the kernel has no AF_UNIX sockets (CONFIG_UNIX)"),
        }
    }
}

/// One IRQ in a sample: `smp_affinity_list` and `effective_affinity_list`, expanded.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SampledIrq {
    /// `/proc/irq/N/smp_affinity_list`.
    pub affinity: Vec<u32>,
    /// `/proc/irq/N/effective_affinity_list`.
    pub effective: Vec<u32>,
}

/// One `irqbalance-sample <k>: <uptime> <IRQ>=<smp>/<effective> …` line.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct IrqbalanceSample {
    /// The sample's index: 0 just before irqbalance started, then one per guest second.
    pub index: u32,
    /// Guest uptime in seconds (`/proc/uptime`) when it was read.
    pub time: f64,
    /// The NIC's IRQs by Linux IRQ number.
    pub irqs: BTreeMap<u32, SampledIrq>,
}

impl IrqbalanceSample {
    /// Parse a line's id (`k`) and value.
    ///
    /// # Errors
    /// A one-line description of the first part that is not of the form.
    pub fn parse(id: &str, value: &str) -> Result<Self, String> {
        let index = id.trim().parse().map_err(|_| format!("sample index {id:?} is not a number"))?;
        let mut words = value.split_whitespace();
        let time = words.next().unwrap_or_default();
        let time = time.parse().map_err(|_| format!("uptime {time:?} is not a number"))?;
        let mut irqs = BTreeMap::new();
        for w in words {
            let form = || format!("{w:?} is not IRQ=SMP_AFFINITY_LIST/EFFECTIVE_AFFINITY_LIST");
            let (irq, lists) = w.split_once('=').ok_or_else(form)?;
            let (smp, eff) = lists.split_once('/').ok_or_else(form)?;
            let list = |t: &str| {
                crate::cpulist::CpuMask::parse_cpulist(t)
                    .map(|m| m.iter().collect::<Vec<u32>>())
                    .map_err(|e| format!("IRQ {irq}: {t:?}: {e}"))
            };
            let irq: u32 = irq.parse().map_err(|_| form())?;
            irqs.insert(irq, SampledIrq { affinity: list(smp)?, effective: list(eff)? });
        }
        Ok(Self { index, time, irqs })
    }
}

/// What `manarig.irqbalance=S` did: empty (`state` None, no samples) without it.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct GuestIrqbalance {
    /// How irqbalance ended; None when it was not run.
    pub state: Option<IrqbalanceState>,
    /// The samples in the order taken (index 0 before irqbalance started).
    pub samples: Vec<IrqbalanceSample>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_line_reads_each_irqs_two_lists() {
        let s = IrqbalanceSample::parse("3", "12.50 24=0-3/1 25=2/2").expect("parses");
        assert_eq!((s.index, s.time), (3, 12.5));
        assert_eq!(s.irqs[&24], SampledIrq { affinity: vec![0, 1, 2, 3], effective: vec![1] });
        assert_eq!(s.irqs[&25].effective, vec![2]);
        let e = IrqbalanceSample::parse("1", "1.0 24=0-3").expect_err("no effective list");
        assert!(e.contains("\"24=0-3\" is not IRQ="), "{e}");
    }

    #[test]
    fn states_read_as_the_agent_writes_them() {
        assert_eq!(IrqbalanceState::parse("stopped"), Some(IrqbalanceState::Stopped));
        assert_eq!(IrqbalanceState::parse("exited 1"), Some(IrqbalanceState::Exited(1)));
        assert_eq!(IrqbalanceState::parse("-"), None);
        assert!(!IrqbalanceState::Exited(0).ran_throughout());
    }
}
