//! The rig errors a guest report can show before any verdict: the guest's
//! topology differs from the machine's, a lifecycle step the run asked for
//! (`ethtool -L`, `rmmod`) or a CPU hotplug write failed.

use crate::qemu;
use crate::text::plural;
use crate::topology::Topology;
use std::path::{Path, PathBuf};

/// A rig error the guest's report shows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuestCheckError {
    /// The guest's CPUs, nodes or distances are not the machine's.
    #[error("the guest's topology differs from {}:\n{}", file.display(), diffs.iter().map(|d| format!("  {d}")).collect::<Vec<_>>().join("\n"))]
    TopologyDiffers {
        /// The topology file.
        file: PathBuf,
        /// Every difference.
        diffs: Vec<crate::guest_topology::Difference>,
    },
    /// `ethtool -L` exited with a failure (or never ran).
    #[error("`ethtool -L {netdev} combined {channels}` failed in the guest (exit {}){}; last driver messages:\n  {tail}", exit_text(*status), said_text(said))]
    Ethtool {
        /// The netdev.
        netdev: String,
        /// The channels asked for.
        channels: u32,
        /// Its exit status, if it ran.
        status: Option<i32>,
        /// Its stderr lines.
        said: Vec<String>,
        /// The driver's last kernel messages, one a line.
        tail: String,
    },
    /// `ethtool -L` succeeded but the netdev has another count of channels.
    #[error("`ethtool -L {netdev} combined {channels}` returned 0 but {netdev} has {} (queues/tx-N); last driver messages:\n  {tail}", have.map_or("no count of combined channels".into(), |c| plural(c, "combined channel")))]
    Channels {
        /// The netdev.
        netdev: String,
        /// The channels asked for.
        channels: u32,
        /// The channels the guest counted, if any.
        have: Option<u32>,
        /// The driver's last kernel messages, one a line.
        tail: String,
    },
    /// `rmmod mana` exited with a failure (or never ran).
    #[error("`rmmod mana` failed in the guest (exit {}){}; last driver messages:\n  {tail}", exit_text(*status), said_text(said))]
    Rmmod {
        /// Its exit status, if it ran.
        status: Option<i32>,
        /// Its stderr lines.
        said: Vec<String>,
        /// The driver's last kernel messages, one a line.
        tail: String,
    },
    /// A CPU hotplug write of the agent failed.
    #[error("CPU hotplug through /sys/devices/system/cpu/cpuN/online failed in the guest: {}", said.join(" / "))]
    Hotplug {
        /// The agent's words.
        said: Vec<String>,
    },
}

/// An exit status as the messages show it (`-`: it did not run).
fn exit_text(status: Option<i32>) -> String {
    status.map_or("-".into(), |rc| rc.to_string())
}

/// A tool's own words, when it wrote any: `: <stderr lines>`.
fn said_text(said: &[String]) -> String {
    if said.is_empty() {
        String::new()
    } else {
        format!(": {}", said.join(" / "))
    }
}

/// The steps the run asked the guest for (`ethtool -L`, `rmmod`) must have
/// succeeded whenever the driver gave a netdev: a failure there is a broken
/// rig or driver, not an IRQ-placement verdict.
///
/// # Errors
/// [`GuestCheckError::Ethtool`], [`GuestCheckError::Channels`] or
/// [`GuestCheckError::Rmmod`]: the step, its exit status and the driver's last
/// messages.
pub(super) fn lifecycle_steps_ran(
    report: &crate::guest_protocol::GuestReport,
    channels: Option<u32>,
    reprobe: bool,
) -> Result<(), GuestCheckError> {
    let tail = || report.dmesg.iter().rev().take(5).rev().cloned().collect::<Vec<_>>().join("\n  ");
    let said = |tool: &str| report.stderr.get(tool).cloned().unwrap_or_default();
    let Some(netdev) = &report.netdev else { return Ok(()) };
    if let Some(n) = channels {
        if report.ethtool_status != Some(0) {
            return Err(GuestCheckError::Ethtool {
                netdev: netdev.clone(),
                channels: n,
                status: report.ethtool_status,
                said: said("ethtool"),
                tail: tail(),
            });
        }
        if report.channels != Some(n) {
            return Err(GuestCheckError::Channels {
                netdev: netdev.clone(),
                channels: n,
                have: report.channels,
                tail: tail(),
            });
        }
    }
    if reprobe && report.rmmod_status != Some(0) {
        return Err(GuestCheckError::Rmmod { status: report.rmmod_status, said: said("rmmod"), tail: tail() });
    }
    Ok(())
}

/// The guest's topology at one moment (`stage`: the report's is the topology's
/// [`Topology::last_stage`]) is the machine's, with the CPUs the scenario leaves
/// online then.
///
/// # Errors
/// [`GuestCheckError::TopologyDiffers`]: every difference, naming the topology file.
pub(super) fn guest_topology_matches(
    file: &Path,
    spec: &qemu::MachineSpec,
    guest: &Topology,
    stage: &str,
    report: &crate::guest_protocol::GuestReport,
) -> Result<(), GuestCheckError> {
    let diffs = crate::guest_topology::compare(spec, report, &guest.online_at(stage));
    if !diffs.is_empty() {
        return Err(GuestCheckError::TopologyDiffers { file: file.to_path_buf(), diffs });
    }
    Ok(())
}

/// The agent's CPU hotplug writes (`manarig.offline`, `offline_after`,
/// `online_after`) all succeeded.
///
/// # Errors
/// [`GuestCheckError::Hotplug`]: the failed writes, in the agent's words.
pub(super) fn hotplug_ran(report: &crate::guest_protocol::GuestReport) -> Result<(), GuestCheckError> {
    if report.hotplug_status.is_some_and(|rc| rc != 0) {
        return Err(GuestCheckError::Hotplug { said: report.stderr.get("hotplug").cloned().unwrap_or_default() });
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
        assert_eq!(
            e,
            GuestCheckError::Ethtool {
                netdev: "eth0".into(),
                channels: 4,
                status: Some(1),
                said: vec!["netlink error: Invalid argument".into()],
                tail: "mana 0000:41:00.0 eth0: mana_attach failed: -22".into(),
            }
        );
        r.ethtool_status = Some(0);
        let e = lifecycle_steps_ran(&r, Some(4), false).expect_err("no channel count");
        assert!(matches!(e, GuestCheckError::Channels { channels: 4, have: None, .. }), "{e}");
        r.channels = Some(8);
        let e = lifecycle_steps_ran(&r, Some(4), false).expect_err("still 8 channels");
        assert!(matches!(e, GuestCheckError::Channels { channels: 4, have: Some(8), .. }), "{e}");
        r.channels = Some(4);
        assert!(lifecycle_steps_ran(&r, Some(4), false).is_ok());
        let e = lifecycle_steps_ran(&r, Some(4), true).expect_err("rmmod did not run");
        assert!(matches!(e, GuestCheckError::Rmmod { status: None, .. }), "{e}");
        r.rmmod_status = Some(1);
        r.stderr
            .insert("rmmod".into(), vec!["rmmod: can't unload module 'mana': Resource temporarily unavailable".into()]);
        let e = lifecycle_steps_ran(&r, Some(4), true).expect_err("rmmod failed");
        assert!(matches!(&e, GuestCheckError::Rmmod { status: Some(1), said, .. } if said.len() == 1), "{e}");
        // Without a netdev the probe failed: the verdict says so, not these steps.
        r.netdev = None;
        assert!(lifecycle_steps_ran(&r, Some(4), true).is_ok());
    }
}
