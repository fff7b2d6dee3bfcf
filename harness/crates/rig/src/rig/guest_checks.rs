//! The rig errors a guest report can show before any verdict: the guest's
//! topology differs from the machine's, a lifecycle step the run asked for
//! (`ethtool -L`, `rmmod`) or a CPU hotplug write failed.

use crate::qemu;
use crate::text::plural;
use crate::topology::Topology;
use anyhow::{bail, Result};
use std::path::Path;

/// The steps the run asked the guest for (`ethtool -L`, `rmmod`) must have
/// succeeded whenever the driver gave a netdev: a failure there is a broken
/// rig or driver, not an IRQ-placement verdict.
///
/// # Errors
/// Which step failed, with its exit status and the driver's last messages.
pub(super) fn lifecycle_steps_ran(
    report: &crate::guest_protocol::GuestReport,
    channels: Option<u32>,
    reprobe: bool,
) -> Result<()> {
    let tail = || report.dmesg.iter().rev().take(5).rev().cloned().collect::<Vec<_>>().join("\n  ");
    // The tool's own words, when it wrote any: `: <stderr lines>`.
    let said = |tool: &str| report.stderr.get(tool).map_or(String::new(), |l| format!(": {}", l.join(" / ")));
    let Some(netdev) = &report.netdev else { return Ok(()) };
    if let Some(n) = channels {
        if report.ethtool_status != Some(0) {
            bail!(
                "`ethtool -L {netdev} combined {n}` failed in the guest (exit {}){}; last driver messages:\n  {}",
                report.ethtool_status.map_or("-".into(), |rc| rc.to_string()),
                said("ethtool"),
                tail()
            );
        }
        if report.channels != Some(n) {
            bail!(
                "`ethtool -L {netdev} combined {n}` returned 0 but {netdev} has {} (queues/tx-N); \
                 last driver messages:\n  {}",
                report.channels.map_or("no count of combined channels".into(), |c| plural(c, "combined channel")),
                tail()
            );
        }
    }
    if reprobe && report.rmmod_status != Some(0) {
        bail!(
            "`rmmod mana` failed in the guest (exit {}){}; last driver messages:\n  {}",
            report.rmmod_status.map_or("-".into(), |rc| rc.to_string()),
            said("rmmod"),
            tail()
        );
    }
    Ok(())
}

/// The guest's topology at one moment (`stage`: the report's is the topology's
/// [`Topology::last_stage`]) is the machine's, with the CPUs the scenario leaves
/// online then.
///
/// # Errors
/// Every difference, one per line, naming the topology file.
pub(super) fn guest_topology_matches(
    file: &Path,
    spec: &qemu::MachineSpec,
    guest: &Topology,
    stage: &str,
    report: &crate::guest_protocol::GuestReport,
) -> Result<()> {
    let diffs = crate::guest_topology::compare(spec, report, &guest.online_at(stage));
    if !diffs.is_empty() {
        bail!(
            "the guest's topology differs from {}:\n{}",
            file.display(),
            diffs.iter().map(|d| format!("  {d}")).collect::<Vec<_>>().join("\n")
        );
    }
    Ok(())
}

/// The agent's CPU hotplug writes (`manarig.offline`, `offline_after`,
/// `online_after`) all succeeded.
///
/// # Errors
/// The failed writes, in the agent's words.
pub(super) fn hotplug_ran(report: &crate::guest_protocol::GuestReport) -> Result<()> {
    if report.hotplug_status.is_some_and(|rc| rc != 0) {
        let said = report.stderr.get("hotplug").map_or(String::new(), |l| l.join(" / "));
        bail!("CPU hotplug through /sys/devices/system/cpu/cpuN/online failed in the guest: {said}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guest_protocol::GuestReport;

    #[test]
    fn a_failed_ethtool_or_rmmod_is_a_rig_error_naming_the_step() {
        let mut r = GuestReport { netdev: Some("eth0".into()), ethtool_status: Some(1), ..GuestReport::default() };
        r.dmesg.push("mana 0000:41:00.0 eth0: mana_attach failed: -22".into());
        r.stderr.insert("ethtool".into(), vec!["netlink error: Invalid argument".into()]);
        let e = lifecycle_steps_ran(&r, Some(4), false).expect_err("ethtool failed");
        assert!(
            e.to_string().contains("ethtool -L eth0 combined 4") && e.to_string().contains("mana_attach failed"),
            "{e}"
        );
        assert!(e.to_string().contains("(exit 1): netlink error: Invalid argument"), "{e}");
        r.ethtool_status = Some(0);
        let e = lifecycle_steps_ran(&r, Some(4), false).expect_err("no channel count");
        assert!(e.to_string().contains("returned 0 but eth0 has no count of combined channels"), "{e}");
        r.channels = Some(8);
        let e = lifecycle_steps_ran(&r, Some(4), false).expect_err("still 8 channels");
        assert!(e.to_string().contains("has 8 combined channels"), "{e}");
        r.channels = Some(4);
        assert!(lifecycle_steps_ran(&r, Some(4), false).is_ok());
        let e = lifecycle_steps_ran(&r, Some(4), true).expect_err("rmmod did not run");
        assert!(e.to_string().contains("rmmod mana"), "{e}");
        r.rmmod_status = Some(1);
        r.stderr
            .insert("rmmod".into(), vec!["rmmod: can't unload module 'mana': Resource temporarily unavailable".into()]);
        let e = lifecycle_steps_ran(&r, Some(4), true).expect_err("rmmod failed");
        assert!(e.to_string().contains("(exit 1): rmmod: can't unload module 'mana'"), "{e}");
        // Without a netdev the probe failed: the verdict says so, not these steps.
        r.netdev = None;
        assert!(lifecycle_steps_ran(&r, Some(4), true).is_ok());
    }
}
