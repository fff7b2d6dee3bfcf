//! Fault injection for the guest driver, as it is asked for: `mana-device --inject SPEC` makes the
//! device misbehave on purpose, as broken or hostile hardware would, so that
//! the rig can check the driver survives it (fails its probe cleanly, retries,
//! recovers; no oops, no hang, the module unloads).
//!
//! This module is the spec (grammar, parsing, printing); what the device does
//! with it is device-model's `inject` module. Not to be confused with
//! [`crate::fault`], which makes the device *process* fail (panic, exit,
//! hang) to test the rig itself.
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
//! | `reset@S` | S seconds after the driver first opens a vPort: a GDMA_EQE_HWC_RESET_REQUEST on the HWC EQ, then the device forgets everything, as a function-level reset does |
//! | `link-down@S` / `link-up@S` | S seconds after that first open: a link event (GDMA_EQE_HWC_SOC_RECONFIG_DATA, HWC_DATA_HW_LINK_DISCONNECT / _CONNECT) on the HWC EQ |
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

use crate::codes::Command;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The HWC timeout the device gives the driver when an `hwc-delay` injection
/// is on (ms): the driver's default is 30 000 ms
/// (`HW_CHANNEL_WAIT_RESOURCE_TIMEOUT_MS`, include/net/mana/hw_channel.h), too
/// long for a test; hardware may set it with `HWC_DATA_CFG_HWC_TIMEOUT`.
pub const INJECT_HWC_TIMEOUT_MS: u32 = 2000;

/// The latest S an `@S` event may name (seconds).
pub const MAX_SECONDS: u64 = 600;

/// A device event raised at a time (`--inject EVENT@S`) or on the
/// controller's request ([`crate::control::Op::Raise`]); on the control
/// channel by its SPEC name (`"link-down"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceEvent {
    /// `reset`: a reset request, then everything forgotten.
    Reset,
    /// `link-down`: the link is lost.
    LinkDown,
    /// `link-up`: the link is back.
    LinkUp,
}

impl DeviceEvent {
    /// Every event, by its SPEC name.
    pub const ALL: [(&'static str, DeviceEvent); 3] =
        [("reset", Self::Reset), ("link-down", Self::LinkDown), ("link-up", Self::LinkUp)];

    /// The SPEC name.
    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(_, e)| *e == self).map_or("?", |(n, _)| n)
    }
}

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
    /// `reset@S`, `link-down@S`, `link-up@S`.
    Timed {
        /// The event.
        event: DeviceEvent,
        /// How long after the driver first opens a vPort (whole seconds).
        after: Duration,
    },
}

impl InjectSpec {
    /// Whether the device needs a clock for this spec (`mana-device` then
    /// calls device-model's `ManaDevice::tick` every 50 ms): held responses, timed events.
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
        if let Some(timed) = parse_timed(spec, kind, args) {
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

/// Parses `NAME@S` when `kind` (the SPEC before any `:`) names a device
/// event: None when it does not, else the event and S, or one error line.
fn parse_timed(spec: &str, kind: &str, args: &str) -> Option<Result<(DeviceEvent, Duration), String>> {
    let (name, seconds) = kind.split_once('@').map_or((kind, None), |(n, s)| (n, Some(s)));
    let (name, event) = DeviceEvent::ALL.into_iter().find(|(n, _)| *n == name)?;
    let form =
        || format!("{spec:?}: expected {name}@S (S: seconds after the driver opens the vPort, 0..={MAX_SECONDS})");
    let seconds = match seconds {
        Some(s) if args.is_empty() => s.parse::<u64>().ok().filter(|&s| s <= MAX_SECONDS),
        _ => None,
    };
    Some(seconds.map(|s| (event, Duration::from_secs(s))).ok_or_else(form))
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
}
