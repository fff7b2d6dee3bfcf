//! What the device does with `--inject SPEC` ([`mana_device_api::inject`]:
//! the grammar, parsing and printing of a SPEC): it misbehaves on purpose,
//! as broken or hostile hardware would, so that the rig can check the guest
//! driver survives it.
//!
//! - [`Injector`]: the command-level faults (`status`, `hwc-delay`,
//!   `spurious-irq`) and the timed device events ([`timed`]), wired in
//!   [`crate::device`];
//! - [`QueueFaults`]: the queue-level faults (`owner-bits`, `silent-vector`,
//!   `rx-cqe-corrupt`), wired in [`crate::queues`] and the data path.
//!
//! With `hwc-delay`, `owner-bits`, `silent-vector` or `reset` the device also
//! sets the driver's HWC timeout to [`INJECT_HWC_TIMEOUT_MS`]
//! ([`Injector::adjust_response`]).
//!
//! Not to be confused with [`crate::process::fault`], which makes the device
//! *process* fail (panic, exit, hang) to test the rig itself.
#![forbid(unsafe_code)]

pub mod timed;

use crate::defs::Command;
use mana_device_api::inject::{DeviceEvent, EntryKind, InjectSpec, SpuriousTarget, INJECT_HWC_TIMEOUT_MS};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The `cqe_type` of a corrupted RX completion: no `enum mana_cqe_type`
/// value (mana.h), so `mana_process_rx_cqe()` logs "Unknown RX CQE type".
pub const CORRUPT_RX_CQE_TYPE: u8 = 0x3F;

/// Responses held at once by `hwc-delay` (an `hwc-delay` without `@N` holds
/// every response to its command, and a guest can keep sending it): as many
/// as the HWC SQ holds requests (a 4096-byte ring of 32-byte WQEs, see
/// [`crate::device::hwc::HWC_RING_SIZE`]). A response beyond them is answered at once.
pub const MAX_HELD_RESPONSES: usize = 128;

/// `GDMA_DRV_CAP_FLAG_1_HWC_TIMEOUT_RECONFIG` (include/net/mana/gdma.h): the
/// device answers GDMA_QUERY_HWC_TIMEOUT.
const HWC_TIMEOUT_RECONFIG: u64 = 1 << 3;

/// What the HWC does with one command's response ([`Injector::before_command`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandFate {
    /// Run it and answer now.
    Run,
    /// Do not run it; answer with this status.
    Fail(u32),
    /// Run it and answer after this long.
    Delay(Duration),
}

/// The command-level injections of a device ([`crate::ManaDevice`]): which
/// command fails or waits, which EQ gets spurious interrupts, and the
/// responses being held. Kept across HWC teardowns (counts go on).
#[derive(Debug, Default, Clone)]
pub struct Injector {
    specs: Vec<InjectSpec>,
    /// How often each command an injection names has come, by code: only
    /// those codes, so that a guest sending every code grows nothing.
    seen: BTreeMap<u32, u64>,
    held: Vec<(Instant, Vec<u8>)>,
    timeline: timed::Timeline,
    /// Injections that struck, by SPEC text (for the status).
    pub struck: BTreeMap<String, u64>,
}

impl Injector {
    /// An injector for `specs` (the queue-level ones go to [`QueueFaults`]).
    pub fn new(specs: &[InjectSpec]) -> Self {
        let timed = specs.iter().filter_map(|s| match *s {
            InjectSpec::Timed { event, after } => Some((event, after)),
            _ => None,
        });
        let seen = specs
            .iter()
            .filter_map(|s| match *s {
                InjectSpec::Status { command, .. } | InjectSpec::HwcDelay { command, .. } => Some((command.0, 0)),
                _ => None,
            })
            .collect();
        Self { specs: specs.to_vec(), seen, timeline: timed::Timeline::new(timed), ..Self::default() }
    }

    fn strike(&mut self, spec: &InjectSpec) {
        tracing::info!(%spec, "mana device: injected fault");
        *self.struck.entry(spec.to_string()).or_default() += 1;
    }

    /// Counts one more `command` and says what happens to it.
    pub fn before_command(&mut self, command: Command) -> CommandFate {
        if command == Command::MANA_CONFIG_VPORT_RX {
            self.timeline.vport_opened(Instant::now());
        }
        let Some(count) = self.seen.get_mut(&command.0) else {
            return CommandFate::Run;
        };
        *count += 1;
        let count = *count;
        let hit = |nth: Option<u64>| nth.is_none_or(|n| n == count);
        let fate = self.specs.iter().find_map(|spec| match *spec {
            InjectSpec::Status { command: c, code, nth } if c == command && hit(nth) => {
                Some((*spec, CommandFate::Fail(code)))
            }
            InjectSpec::HwcDelay { command: c, delay, nth } if c == command && hit(nth) => {
                Some((*spec, CommandFate::Delay(delay)))
            }
            _ => None,
        });
        match fate {
            Some((spec, fate)) => {
                self.strike(&spec);
                fate
            }
            None => CommandFate::Run,
        }
    }

    /// Whether an injection is on that can leave the driver waiting for an
    /// HWC response (`hwc-delay`, `owner-bits`, `silent-vector`, `reset`,
    /// after which no request is answered until the HWC is set up again): the device
    /// then shortens the driver's HWC timeout to [`INJECT_HWC_TIMEOUT_MS`].
    pub fn shortens_hwc_timeout(&self) -> bool {
        self.specs.iter().any(|s| {
            matches!(
                s,
                InjectSpec::HwcDelay { .. }
                    | InjectSpec::OwnerBits { .. }
                    | InjectSpec::SilentVector(_)
                    | InjectSpec::Timed { event: DeviceEvent::Reset, .. }
            )
        })
    }

    /// The timed events due at `now` ([`timed::Timeline::due`]), each
    /// counted as struck.
    pub fn due_events(&mut self, now: Instant) -> Vec<DeviceEvent> {
        let due = self.timeline.due(now);
        due.into_iter()
            .map(|(event, after)| {
                self.strike(&InjectSpec::Timed { event, after });
                event
            })
            .collect()
    }

    /// The spurious-interrupt targets.
    pub fn spurious(&self) -> impl Iterator<Item = SpuriousTarget> + '_ {
        self.specs.iter().filter_map(|s| match s {
            InjectSpec::SpuriousIrq(t) => Some(*t),
            _ => None,
        })
    }

    /// Rewrites a successful `response` to `command` where the device sets
    /// the driver's HWC timeout ([`Injector::shortens_hwc_timeout`]): the
    /// HWC_TIMEOUT_RECONFIG capability (bit 3 of `pf_cap_flags1`) in
    /// VERIFY_VF_DRIVER_VERSION, [`INJECT_HWC_TIMEOUT_MS`] in QUERY_HWC_TIMEOUT.
    pub fn adjust_response(&self, command: Command, response: &mut [u8]) {
        use crate::defs::{Le32, Le64, QueryHwcTimeoutResp, VerifyVerResp};
        use zerocopy::FromBytes;
        if !self.shortens_hwc_timeout() {
            return;
        }
        match command {
            Command::VERIFY_VF_DRIVER_VERSION => {
                if let Ok((resp, _)) = VerifyVerResp::mut_from_prefix(response) {
                    if resp.hdr.status.get() == 0 {
                        resp.pf_cap_flags1 = Le64::new(resp.pf_cap_flags1.get() | HWC_TIMEOUT_RECONFIG);
                    }
                }
            }
            Command::QUERY_HWC_TIMEOUT => {
                if let Ok((resp, _)) = QueryHwcTimeoutResp::mut_from_prefix(response) {
                    if resp.hdr.status.get() == 0 {
                        resp.timeout_ms = Le32::new(INJECT_HWC_TIMEOUT_MS);
                    }
                }
            }
            _ => {}
        }
    }

    /// Holds `response` until `due`; when [`MAX_HELD_RESPONSES`] are held
    /// already, gives it back to be answered at once.
    ///
    /// # Errors
    /// The response, when it cannot be held.
    pub fn hold(&mut self, due: Instant, response: Vec<u8>) -> Result<(), Vec<u8>> {
        if self.held.len() >= MAX_HELD_RESPONSES {
            return Err(response);
        }
        self.held.push((due, response));
        Ok(())
    }

    /// The held responses due at `now`, oldest first.
    pub fn due(&mut self, now: Instant) -> Vec<Vec<u8>> {
        let (due, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut self.held).into_iter().partition(|(t, _)| *t <= now);
        self.held = keep;
        due.into_iter().map(|(_, r)| r).collect()
    }

    /// Drops the held responses (the channel they were for is gone).
    pub fn forget_held(&mut self) {
        self.held.clear();
    }

    /// How many injections there are.
    pub fn specs(&self) -> usize {
        self.specs.len()
    }

    /// How many command codes are counted (those the injections name).
    pub fn counted_commands(&self) -> usize {
        self.seen.len()
    }

    /// Responses being held.
    pub fn held(&self) -> usize {
        self.held.len()
    }
}

/// The queue-level injections: owner bits, silent vectors, corrupt RX CQEs.
/// Lives in [`crate::queues::Queues`] and survives HWC teardowns.
#[derive(Debug, Clone, Default)]
pub struct QueueFaults {
    owner: Vec<(EntryKind, u64)>,
    silent: Vec<u16>,
    rx_corrupt: Vec<u64>,
    eqes: u64,
    cqes: u64,
    rx_cqes: u64,
    /// Vectors not raised because of `silent-vector`.
    pub silenced: u64,
    /// Entries written with bad owner bits, RX CQEs corrupted.
    pub spoiled: u64,
}

impl QueueFaults {
    /// The queue-level part of `specs`.
    pub fn new(specs: &[InjectSpec]) -> Self {
        let mut faults = Self::default();
        for spec in specs {
            match *spec {
                InjectSpec::OwnerBits { kind, nth } => faults.owner.push((kind, nth)),
                InjectSpec::SilentVector(v) => faults.silent.push(v),
                InjectSpec::RxCqeCorrupt { nth } => faults.rx_corrupt.push(nth),
                _ => {}
            }
        }
        faults
    }

    /// Counts one more entry of `kind` and says whether it gets bad owner bits.
    pub fn next_entry_spoiled(&mut self, kind: EntryKind) -> bool {
        let count = match kind {
            EntryKind::Eqe => &mut self.eqes,
            EntryKind::Cqe => &mut self.cqes,
        };
        *count += 1;
        let n = *count;
        let hit = self.owner.iter().any(|&(k, nth)| k == kind && nth == n);
        if hit {
            self.spoiled += 1;
            tracing::info!(?kind, n, "mana device: injected fault: bad owner bits");
        }
        hit
    }

    /// Whether vector `vector` is kept silent.
    pub fn silences(&mut self, vector: u16) -> bool {
        let hit = self.silent.contains(&vector);
        if hit {
            self.silenced += 1;
        }
        hit
    }

    /// Counts one more RX completion and says whether to corrupt it.
    pub fn next_rx_cqe_corrupt(&mut self) -> bool {
        self.rx_cqes += 1;
        let hit = self.rx_corrupt.contains(&self.rx_cqes);
        if hit {
            self.spoiled += 1;
            tracing::info!(n = self.rx_cqes, "mana device: injected fault: corrupt RX CQE");
        }
        hit
    }
}

/// Owner bits that are neither the lap's (`owner`) nor the previous lap's:
/// the driver reads them as an overflow (`mana_gd_process_eq_events()`,
/// `mana_gd_read_cqe()` in drivers/net/ethernet/microsoft/mana/gdma_main.c).
pub fn spoiled_owner(owner: u8) -> u8 {
    (owner + 4) & 7
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_with_an_occurrence_strikes_only_that_time() {
        let spec: InjectSpec = "status:create_queue=0x5@2".parse().expect("spec");
        let mut injector = Injector::new(&[spec]);
        assert_eq!(injector.before_command(Command::CREATE_QUEUE), CommandFate::Run);
        assert_eq!(injector.before_command(Command::CREATE_DMA_REGION), CommandFate::Run);
        assert_eq!(injector.before_command(Command::CREATE_QUEUE), CommandFate::Fail(5));
        assert_eq!(injector.before_command(Command::CREATE_QUEUE), CommandFate::Run);
        assert_eq!(injector.struck.get("status:create_queue=0x5@2"), Some(&1));
    }

    #[test]
    fn held_responses_come_out_when_due_and_not_before() {
        let mut injector = Injector::default();
        let t0 = Instant::now();
        injector.hold(t0 + Duration::from_millis(10), vec![1]).expect("room");
        injector.hold(t0 + Duration::from_millis(20), vec![2]).expect("room");
        assert!(injector.due(t0).is_empty());
        assert_eq!(injector.due(t0 + Duration::from_millis(15)), vec![vec![1]]);
        assert_eq!(injector.held(), 1);
        injector.forget_held();
        assert!(injector.due(t0 + Duration::from_secs(1)).is_empty());
    }

    #[test]
    fn spoiled_owner_bits_are_neither_this_lap_nor_the_last() {
        for owner in 0..8u8 {
            let bad = spoiled_owner(owner);
            assert!(bad != owner && bad != (owner + 7) % 8 && bad < 8, "{owner} → {bad}");
        }
    }
}
