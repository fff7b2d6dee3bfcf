//! The guest side of one boot as QEMU's [`BootRequest`] carries it: the
//! agent's options (`manarig.*`), the kernel command line, the initramfs's
//! extra files (ethtool, the flows tool, irqbalance) and the deadlines, from
//! the run's request and the topology's scenario.

use super::debug_kernel;
use super::irqbalance::{add_irqbalance, IrqbalanceError, IRQBALANCE_SAMPLE_S};
use super::request::RunRequest;
use crate::guest_protocol::AgentOptions;
use crate::provision::tools::GuestFile;
use crate::provision::Provisioned;
use crate::qemu::BootRequest;
use crate::topology::Topology;
use crate::traffic;
use std::time::Duration;

/// The guest agent's deadline (guest seconds from mana's `insmod`) in a run with
/// fault injection: past it, a probe that has not returned counts as hung.
pub const INJECT_AGENT_DEADLINE_S: u32 = 240;

/// What the guest of one boot is set up with.
pub(super) struct GuestSetup<'a> {
    pub(super) req: &'a RunRequest,
    pub(super) prov: &'a Provisioned,
    /// The topology in the guest's numbering (QEMU's): its scenario's CPUs.
    pub(super) guest: &'a Topology,
    /// Combined channels to set with `ethtool -L` (`--channels`, else the topology's).
    pub(super) channels: Option<u32>,
    /// The run injects faults (the agent unloads the driver at the end and
    /// waits longer for the probe).
    pub(super) injecting: bool,
    /// The flows tool's initramfs files (`/sbin/manarig-flows` and, on arm64,
    /// what runs it: [`super::flows_guest::guest_files`]), for a run with traffic.
    pub(super) flows: Option<&'a [GuestFile]>,
}

impl GuestSetup<'_> {
    /// Set `boot`'s agent options, kernel command line (the scenario's
    /// parameters, a debug kernel's, then the request's own), extra files and
    /// deadlines, its console log and speed-ups.
    ///
    /// # Errors
    /// [`IrqbalanceError::NotProvisioned`] when irqbalance is asked for but not
    /// provisioned ([`add_irqbalance`]).
    pub(super) fn apply(&self, boot: &mut BootRequest<'_>) -> Result<(), IrqbalanceError> {
        let (req, prov) = (self.req, self.prov);
        // The scenario in the guest's numbering: CPUs to hotplug, kernel parameters.
        let scenario = self.guest.scenario();
        let cpus = |m: &crate::cpulist::CpuMask| (!m.is_empty()).then(|| m.clone());
        boot.agent = AgentOptions {
            load_mana: true,
            channels: self.channels,
            reprobe: req.reprobe,
            // A debug kernel unloads the driver too: its teardown is checked like its probe.
            unload: self.injecting || req.debug,
            offline: cpus(&scenario.offline),
            offline_after: cpus(&scenario.offline_after),
            online_after: cpus(&scenario.online_after),
            ..boot.agent.clone()
        };
        boot.extra_cmdline.extend(self.guest.scenario_cmdline());
        if self.channels.is_some() || self.flows.is_some() {
            // ethtool and its libraries are half the initramfs: only when used.
            boot.extra_files.clone_from(&prov.ethtool.files);
        }
        if let Some(files) = self.flows {
            boot.extra_files.extend_from_slice(files);
            boot.agent.addr = Some((traffic::GUEST, traffic::PREFIX));
            boot.agent.traffic = Some(traffic::control_address());
            // The guest tool gives up at the agent's deadline: past the flows' limit.
            if let Some(t) = &req.traffic {
                let needed = u32::try_from(t.limit.as_secs()).unwrap_or(u32::MAX).saturating_add(60);
                boot.agent.deadline_s = boot.agent.deadline_s.max(needed);
                if let Some(soak) = &req.soak {
                    boot.agent.soak = Some(soak.minutes);
                    boot.agent.soak_channels = (!soak.channels.is_empty()).then(|| soak.channels.clone());
                    boot.agent.deadline_s = boot.agent.deadline_s.max(soak.agent_deadline_s(t.limit));
                }
            }
        }
        if scenario.irqbalance {
            add_irqbalance(boot, prov, &req.topology)?;
        }
        if req.debug {
            boot.agent.debug = true;
            boot.agent.deadline_s = debug_kernel::agent_deadline_s(boot.agent.deadline_s);
            boot.extra_cmdline.extend(debug_kernel::CMDLINE.iter().map(|s| (*s).to_owned()));
        }
        if self.injecting {
            // The driver's own waits on a faulty device are long (30 s per
            // mana_gd_test_eq(), 60 s for the HWC's INIT_DONE): a probe slower
            // than that is not yet a hang.
            boot.agent.deadline_s = boot.agent.deadline_s.max(INJECT_AGENT_DEADLINE_S);
        }
        boot.extra_cmdline.extend(req.extra_cmdline.iter().cloned());
        boot.deadline = if req.debug { debug_kernel::host_deadline(req.deadline) } else { req.host_deadline() };
        if scenario.irqbalance {
            // The sampling, irqbalance's stop (at most 5 s) and TCG's slower guest seconds.
            boot.deadline += Duration::from_secs(u64::from(IRQBALANCE_SAMPLE_S) * 3 + 15);
        }
        boot.console_log.clone_from(&req.console_log);
        boot.monitor.clone_from(&req.monitor);
        boot.speedups = if req.debug { debug_kernel::speedups(req.speedups) } else { req.speedups };
        Ok(())
    }
}
