//! Fault injection for the guest driver: `mana-device --inject SPEC` makes the
//! device misbehave on purpose, as broken or hostile hardware would, so that
//! the rig can check the driver survives it (fails its probe cleanly, retries,
//! recovers; no oops, no hang, the module unloads).
//!
//! Not to be confused with [`crate::fault`], which makes the device *process*
//! fail (panic, exit, hang) to test the rig itself.
//!
//! Grammar of one SPEC (`--inject` is repeatable):
//!
//! | SPEC | what the device does |
//! | --- | --- |
//! | `status:CMD=CODE[@N]` | answers GDMA/BNIC command CMD with status CODE (hex `0x…` or decimal, non-zero) instead of running it; only its N-th time with `@N` (1 = the first), else every time |
//! | `hwc-delay:CMD=MS[@N]` | holds the HWC response to CMD for MS milliseconds (its N-th time with `@N`, else every time) |
//! | `spurious-irq:eq=ID` / `spurious-irq:vector=V` | after every HWC response, raises the vector of EQ ID (or vector V, when an EQ uses it) without posting an EQE; never a vector without an EQ |
//! | `owner-bits:eqe[@N]` / `owner-bits:cqe[@N]` | writes the N-th EQE (CQE) the device posts (default 1) with owner bits that are neither the old nor the new lap's |
//! | `silent-vector:V` | never raises MSI-X vector V (the events are still posted) |
//! | `rx-cqe-corrupt[@N]` | the N-th RX completion (default 1) carries an unknown CQE type (data path) |
//! | `reset@S` | S seconds after the driver first opens a vPort: a GDMA_EQE_HWC_RESET_REQUEST on the HWC EQ, then the device forgets everything, as a function-level reset does ([`timed`]) |
//! | `link-down@S` / `link-up@S` | S seconds after that first open: a link event (GDMA_EQE_HWC_SOC_RECONFIG_DATA, HWC_DATA_HW_LINK_DISCONNECT / _CONNECT) on the HWC EQ ([`timed`]) |
//!
//! In `reset@S` and the link events `@S` is seconds (0..=600), not an
//! occurrence.
//!
//! With `hwc-delay`, `owner-bits`, `silent-vector` or `reset` the device also sets the
//! driver's HWC timeout to [`INJECT_HWC_TIMEOUT_MS`], as hardware may: it
//! offers `GDMA_DRV_CAP_FLAG_1_HWC_TIMEOUT_RECONFIG` in its
//! VERIFY_VF_DRIVER_VERSION answer and answers GDMA_QUERY_HWC_TIMEOUT with
//! that value (`mana_gd_verify_vf_version()`, gdma_main.c, Linux 6.1.192 and
//! 6.12.117; a SOC_RECONFIG_DATA EQE would not do: 6.12's
//! `mana_gd_process_eqe()` drops it). A delay above that is past the
//! driver's timeout, and a request whose completion is lost fails in 2 s, not 30.
//!
//! CMD names a command the way the driver's enums do, lower case without the
//! `GDMA_`/`MANA_` prefix: `create_queue`, `create_dma_region`, `config_vport`
//! (= `config_vport_tx`, what the driver's `mana_cfg_vport()` sends),
//! `config_vport_rx`, `register_device`, `query_max_resources`, … (see
//! [`command_names`]). A parse error is one line naming the spec and the valid
//! choices.
#![forbid(unsafe_code)]

pub mod timed;

use crate::defs::Command;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

/// The HWC timeout the device gives the driver when an `hwc-delay` injection
/// is on (ms): the driver's default is 30 000 ms
/// (`HW_CHANNEL_WAIT_RESOURCE_TIMEOUT_MS`, include/net/mana/hw_channel.h), too
/// long for a test; hardware may set it with `HWC_DATA_CFG_HWC_TIMEOUT`.
pub const INJECT_HWC_TIMEOUT_MS: u32 = 2000;

/// The `cqe_type` of a corrupted RX completion: no `enum mana_cqe_type`
/// value (mana.h), so `mana_process_rx_cqe()` logs "Unknown RX CQE type".
pub const CORRUPT_RX_CQE_TYPE: u8 = 0x3F;

/// `GDMA_DRV_CAP_FLAG_1_HWC_TIMEOUT_RECONFIG` (include/net/mana/gdma.h): the
/// device answers GDMA_QUERY_HWC_TIMEOUT.
const HWC_TIMEOUT_RECONFIG: u64 = 1 << 3;

/// The fault kinds, as the first word of a SPEC.
pub const KINDS: [&str; 9] = [
    "status",
    "hwc-delay",
    "spurious-irq",
    "owner-bits",
    "silent-vector",
    "rx-cqe-corrupt",
    "reset",
    "link-down",
    "link-up",
];

/// Which producer ring an `owner-bits` injection spoils.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// Event-queue entries.
    Eqe,
    /// Completion-queue entries.
    Cqe,
}

/// The EQ whose vector a spurious interrupt raises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpuriousTarget {
    /// By EQ id.
    Eq(u32),
    /// By MSI-X vector (raised only while some EQ uses it).
    Vector(u16),
}

/// One injected fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InjectSpec {
    /// `status:CMD=CODE[@N]`.
    Status {
        /// The command.
        command: Command,
        /// The status the device answers (non-zero).
        code: u32,
        /// Only its N-th occurrence (1-based); None = every time.
        nth: Option<u64>,
    },
    /// `hwc-delay:CMD=MS[@N]`.
    HwcDelay {
        /// The command.
        command: Command,
        /// How long the response is held.
        delay: Duration,
        /// Only its N-th occurrence; None = every time.
        nth: Option<u64>,
    },
    /// `spurious-irq:eq=ID|vector=V`.
    SpuriousIrq(SpuriousTarget),
    /// `owner-bits:eqe|cqe[@N]`.
    OwnerBits {
        /// EQE or CQE.
        kind: EntryKind,
        /// The N-th entry of that kind the device posts (1-based).
        nth: u64,
    },
    /// `silent-vector:V`.
    SilentVector(u16),
    /// `rx-cqe-corrupt[@N]`.
    RxCqeCorrupt {
        /// The N-th RX completion (1-based).
        nth: u64,
    },
    /// `reset@S`, `link-down@S`, `link-up@S` ([`timed`]).
    Timed {
        /// The event.
        event: timed::DeviceEvent,
        /// How long after the driver first opens a vPort (whole seconds).
        after: Duration,
    },
}

impl InjectSpec {
    /// Whether the device needs a clock for this spec (`mana-device` then
    /// calls [`crate::ManaDevice::tick`] every 50 ms): held responses, timed events.
    pub fn needs_clock(&self) -> bool {
        matches!(self, Self::HwcDelay { .. } | Self::Timed { .. })
    }
}

/// Every command name CMD may take, with its code.
pub fn command_names() -> Vec<(String, Command)> {
    let mut names: Vec<(String, Command)> = (0..0x40u32)
        .map(Command)
        .chain((0x20000..0x20010).map(Command))
        .filter_map(|c| {
            let name = c.name()?;
            Some((name.strip_prefix("MANA_").unwrap_or(name).to_ascii_lowercase(), c))
        })
        .collect();
    names.push(("config_vport".into(), Command::MANA_CONFIG_VPORT_TX));
    names.push(("query_hwc_timeout".into(), Command::QUERY_HWC_TIMEOUT));
    names.sort();
    names
}

/// The name [`command_names`] gives `command` (its canonical one).
fn command_name(command: Command) -> String {
    command
        .name()
        .map_or_else(|| format!("{:#x}", command.0), |n| n.strip_prefix("MANA_").unwrap_or(n).to_ascii_lowercase())
}

fn parse_command(spec: &str, name: &str) -> Result<Command, String> {
    command_names().into_iter().find(|(n, _)| n == name).map(|(_, c)| c).ok_or_else(|| {
        let all: Vec<String> = command_names().into_iter().map(|(n, _)| n).collect();
        format!("{spec:?}: unknown command {name:?} (one of: {})", all.join(", "))
    })
}

fn parse_u64(spec: &str, what: &str, text: &str) -> Result<u64, String> {
    let value = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    value.map_err(|_| format!("{spec:?}: {text:?} is not a number ({what})"))
}

/// Splits `X@N` into `X` and N ≥ 1.
fn split_nth<'a>(spec: &str, text: &'a str) -> Result<(&'a str, Option<u64>), String> {
    match text.split_once('@') {
        None => Ok((text, None)),
        Some((head, n)) => match parse_u64(spec, "the occurrence after @", n)? {
            0 => Err(format!("{spec:?}: @0: occurrences count from 1")),
            n => Ok((head, Some(n))),
        },
    }
}

fn command_and_value<'a>(spec: &str, args: &'a str, form: &str) -> Result<(Command, &'a str, Option<u64>), String> {
    let (body, nth) = split_nth(spec, args)?;
    let (name, value) = body.split_once('=').ok_or_else(|| format!("{spec:?}: expected {form}"))?;
    Ok((parse_command(spec, name)?, value, nth))
}

impl FromStr for InjectSpec {
    type Err = String;

    /// Parses one SPEC (module docs). The error is one line naming the spec.
    fn from_str(spec: &str) -> Result<Self, String> {
        let (kind, args) = spec.split_once(':').unwrap_or((spec, ""));
        if let Some(timed) = timed::parse(spec, kind, args) {
            return timed.map(|(event, after)| Self::Timed { event, after });
        }
        let (kind_only, nth_only) = split_nth(spec, kind)?;
        match kind_only {
            "status" => {
                let (command, code, nth) = command_and_value(spec, args, "status:CMD=CODE[@N]")?;
                let code = parse_u64(spec, "the status code", code)?;
                let code = u32::try_from(code)
                    .ok()
                    .filter(|&c| c != 0)
                    .ok_or_else(|| format!("{spec:?}: the status must be a non-zero 32-bit value"))?;
                Ok(Self::Status { command, code, nth })
            }
            "hwc-delay" => {
                let (command, ms, nth) = command_and_value(spec, args, "hwc-delay:CMD=MS[@N]")?;
                let ms = parse_u64(spec, "milliseconds", ms)?;
                if ms > 600_000 {
                    return Err(format!("{spec:?}: a delay of more than 600000 ms"));
                }
                Ok(Self::HwcDelay { command, delay: Duration::from_millis(ms), nth })
            }
            "spurious-irq" => {
                let bad = || format!("{spec:?}: expected spurious-irq:eq=ID or spurious-irq:vector=V");
                let (what, value) = args.split_once('=').ok_or_else(bad)?;
                let value = parse_u64(spec, "an id", value)?;
                match what {
                    "eq" => Ok(Self::SpuriousIrq(SpuriousTarget::Eq(u32::try_from(value).map_err(|_| bad())?))),
                    "vector" => Ok(Self::SpuriousIrq(SpuriousTarget::Vector(u16::try_from(value).map_err(|_| bad())?))),
                    _ => Err(bad()),
                }
            }
            "owner-bits" => {
                let (which, nth) = split_nth(spec, args)?;
                let kind = match which {
                    "eqe" => EntryKind::Eqe,
                    "cqe" => EntryKind::Cqe,
                    _ => return Err(format!("{spec:?}: expected owner-bits:eqe[@N] or owner-bits:cqe[@N]")),
                };
                Ok(Self::OwnerBits { kind, nth: nth.unwrap_or(1) })
            }
            "silent-vector" => {
                let v = parse_u64(spec, "an MSI-X vector", args)?;
                let v = u16::try_from(v)
                    .ok()
                    .filter(|&v| v < 2048)
                    .ok_or_else(|| format!("{spec:?}: MSI-X vectors are 0..2047"))?;
                Ok(Self::SilentVector(v))
            }
            "rx-cqe-corrupt" => {
                if !args.is_empty() {
                    return Err(format!("{spec:?}: expected rx-cqe-corrupt[@N]"));
                }
                Ok(Self::RxCqeCorrupt { nth: nth_only.unwrap_or(1) })
            }
            other => Err(format!("{spec:?}: unknown fault {other:?} (one of: {})", KINDS.join(", "))),
        }
    }
}

impl fmt::Display for InjectSpec {
    /// The form [`FromStr`] reads.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = |nth: Option<u64>| nth.map_or(String::new(), |n| format!("@{n}"));
        match *self {
            Self::Status { command, code, nth } => write!(f, "status:{}={code:#x}{}", command_name(command), at(nth)),
            Self::HwcDelay { command, delay, nth } => {
                write!(f, "hwc-delay:{}={}{}", command_name(command), delay.as_millis(), at(nth))
            }
            Self::SpuriousIrq(SpuriousTarget::Eq(id)) => write!(f, "spurious-irq:eq={id}"),
            Self::SpuriousIrq(SpuriousTarget::Vector(v)) => write!(f, "spurious-irq:vector={v}"),
            Self::OwnerBits { kind: EntryKind::Eqe, nth } => write!(f, "owner-bits:eqe@{nth}"),
            Self::OwnerBits { kind: EntryKind::Cqe, nth } => write!(f, "owner-bits:cqe@{nth}"),
            Self::SilentVector(v) => write!(f, "silent-vector:{v}"),
            Self::RxCqeCorrupt { nth } => write!(f, "rx-cqe-corrupt@{nth}"),
            Self::Timed { event, after } => write!(f, "{}@{}", event.name(), after.as_secs()),
        }
    }
}

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
#[derive(Debug, Default)]
pub struct Injector {
    specs: Vec<InjectSpec>,
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
        Self { specs: specs.to_vec(), timeline: timed::Timeline::new(timed), ..Self::default() }
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
        let count = self.seen.entry(command.0).or_default();
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
                    | InjectSpec::Timed { event: timed::DeviceEvent::Reset, .. }
            )
        })
    }

    /// The timed events due at `now` ([`timed::Timeline::due`]), each
    /// counted as struck.
    pub fn due_events(&mut self, now: Instant) -> Vec<timed::DeviceEvent> {
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

    /// Holds `response` until `due`.
    pub fn hold(&mut self, due: Instant, response: Vec<u8>) {
        self.held.push((due, response));
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
    fn every_form_parses_and_prints_back() {
        for text in [
            "status:create_queue=0xc000009a",
            "status:create_dma_region=0x1@2",
            "status:config_vport_tx=0xffffffff",
            "hwc-delay:query_max_resources=5000",
            "hwc-delay:config_vport_rx=100@3",
            "spurious-irq:eq=0",
            "spurious-irq:vector=1",
            "owner-bits:eqe@12",
            "owner-bits:cqe@1",
            "silent-vector:1",
            "rx-cqe-corrupt@5",
            "reset@5",
            "link-down@0",
            "link-up@600",
        ] {
            let spec: InjectSpec = text.parse().expect(text);
            assert_eq!(spec.to_string(), text);
        }
        let alias: InjectSpec = "status:config_vport=5".parse().expect("alias");
        assert_eq!(alias.to_string(), "status:config_vport_tx=0x5");
        assert_eq!("owner-bits:cqe".parse::<InjectSpec>().expect("default").to_string(), "owner-bits:cqe@1");
    }

    #[test]
    fn bad_specs_get_one_line_naming_the_spec_and_the_choices() {
        for (text, needle) in [
            ("stall:create_queue", "unknown fault \"stall\" (one of: status, hwc-delay"),
            ("status:make_coffee=1", "unknown command \"make_coffee\" (one of: allocate_resource_range, config_vport,"),
            ("status:create_queue=0", "non-zero"),
            ("status:create_queue", "expected status:CMD=CODE[@N]"),
            ("status:create_queue=1@0", "count from 1"),
            ("owner-bits:wqe", "owner-bits:eqe[@N]"),
            ("silent-vector:4096", "0..2047"),
            ("spurious-irq:cq=1", "spurious-irq:eq=ID"),
            ("hwc-delay:create_queue=soon", "not a number"),
            ("reset", "expected reset@S (S: seconds"),
            ("link-down@601", "expected link-down@S"),
            ("link-up@1:x", "expected link-up@S"),
        ] {
            let err = text.parse::<InjectSpec>().expect_err(text);
            assert!(err.contains(needle) && err.contains(&format!("{text:?}")), "{text}: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }

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
        injector.hold(t0 + Duration::from_millis(10), vec![1]);
        injector.hold(t0 + Duration::from_millis(20), vec![2]);
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
