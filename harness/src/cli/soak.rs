//! The `soak` subcommand: minutes of traffic through the emulated NIC while
//! every minute the guest changes the channels, the device's link goes down
//! and up, and mana is unloaded and loaded again; judged by the device
//! process staying flat, every byte verified, every disruption come through
//! and a clean kernel log (the rig's `soak` module; README.md *Soak*).

use super::expect::KernelGenArg;
use super::run::{print_outcome, report_rig_error, resolve_or_report, run_name, RigOptions};
use super::Exit;
use crate::rig::kernel_choice::KernelChoice;
use crate::rig::run_one;
use crate::rig::soak::{SoakOptions, DEFAULT_FLOWS, DEFAULT_MINUTES, DEFAULT_ROUND_BYTES, MAX_MINUTES, MIN_MINUTES};
use crate::verdict::Format;
use std::path::PathBuf;
use std::process::ExitCode;

/// The most flows a round takes (each round's 4-tuples are new: thousands
/// of rounds must still find ports).
const MAX_FLOWS: u32 = 256;

/// Arguments of `soak`.
#[derive(Debug, clap::Args)]
pub struct SoakArgs {
    /// Topology file (TOML).
    #[arg(default_value = "topologies/seed-002.toml")]
    pub topology: PathBuf,
    /// Kernel, as `run --kernel` (default Debian's 6.12: nothing to build).
    #[arg(long, default_value = "6.12")]
    pub kernel: KernelChoice,
    /// Guest minutes of the soak (at least 2: a minute of warm-up and one judged).
    #[arg(long, default_value_t = DEFAULT_MINUTES)]
    pub minutes: u32,
    /// TCP flows per traffic round (1 to 256).
    #[arg(long, default_value_t = DEFAULT_FLOWS)]
    pub flows: u32,
    /// Bytes each flow of a round carries each way.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_ROUND_BYTES)]
    pub round_bytes: u64,
    /// Seconds a round's flows may take (a round caught by a re-probe waits for it).
    #[arg(long, value_name = "S", default_value_t = crate::rig::soak::ROUND_LIMIT.as_secs())]
    pub round_seconds: u64,
    /// The combined channels each minute's `ethtool -L` sets, in turn
    /// (default: half the topology's maximum, then a quarter; `none`: no change).
    #[arg(long, value_name = "N,N…|none")]
    pub channels: Option<String>,
    /// Judge the IRQ table against another generation's model, as `run --model`.
    #[arg(long)]
    pub model: Option<KernelGenArg>,
    /// Output format: human, ktap, junit or json.
    #[arg(long, default_value = "human")]
    pub format: Format,
    /// Rig options.
    #[command(flatten)]
    pub rig: RigOptions,
}

/// What `soak`'s arguments can get wrong, found before anything boots.
#[derive(Debug, thiserror::Error)]
pub enum SoakArgsError {
    /// The topology file cannot be loaded.
    #[error(transparent)]
    Topology(#[from] crate::topology::TopologyError),
    /// `--minutes` out of range.
    #[error("--minutes {0}: a soak runs {MIN_MINUTES} to {MAX_MINUTES} minutes")]
    Minutes(u32),
    /// `--flows` out of range.
    #[error("--flows {0}: a soak's rounds take 1 to {MAX_FLOWS} flows")]
    Flows(u32),
    /// `--round-bytes` or `--round-seconds` is 0.
    #[error("--round-bytes and --round-seconds must be above 0")]
    EmptyRound,
    /// A `--channels` entry that is not a count the NIC has.
    #[error("--channels {text}: {entry:?} is not a combined channel count from 1 to {max}")]
    Channels {
        /// The whole option.
        text: String,
        /// The bad entry.
        entry: String,
        /// The topology's maximum.
        max: u32,
    },
}

/// `--channels` as counts for a NIC of `max` combined channels.
///
/// # Errors
/// [`SoakArgsError::Channels`]: a count that is not a number from 1 to `max`.
fn channels(text: Option<&str>, max: u32) -> Result<Vec<u32>, SoakArgsError> {
    let Some(text) = text else { return Ok(SoakOptions::default_channels(max)) };
    if text == "none" {
        return Ok(Vec::new());
    }
    text.split(',')
        .map(|c| match c.trim().parse::<u32>() {
            Ok(n) if (1..=max).contains(&n) => Ok(n),
            _ => Err(SoakArgsError::Channels { text: text.to_owned(), entry: c.to_owned(), max }),
        })
        .collect()
}

/// The arguments checked against the topology: the channel counts.
///
/// # Errors
/// [`SoakArgsError`]: the first bad argument.
fn check(args: &SoakArgs) -> Result<Vec<u32>, SoakArgsError> {
    let topo = crate::topology::Topology::load(&args.topology)?;
    if !(MIN_MINUTES..=MAX_MINUTES).contains(&args.minutes) {
        return Err(SoakArgsError::Minutes(args.minutes));
    }
    if !(1..=MAX_FLOWS).contains(&args.flows) {
        return Err(SoakArgsError::Flows(args.flows));
    }
    if args.round_bytes == 0 || args.round_seconds == 0 {
        return Err(SoakArgsError::EmptyRound);
    }
    channels(args.channels.as_deref(), topo.max_channels())
}

/// `soak`: one soak of a topology on one kernel; prints the verdict in the
/// chosen format and a line of its figures. Exit 0 pass, 1 a check failed,
/// 2 rig error.
pub fn run(args: &SoakArgs) -> ExitCode {
    let name = run_name(&args.topology, &args.kernel.to_string());
    let checked = check(args);
    let channels = match checked {
        Ok(c) => c,
        Err(err) => {
            report_rig_error(&err, &name, args.format);
            return Exit::RigError.into();
        }
    };
    let model = args.model.as_ref().map(|m| m.0);
    let Ok(kernel) = resolve_or_report(&args.kernel, model, &args.rig, &args.topology, args.format) else {
        return Exit::RigError.into();
    };
    let name = run_name(&args.topology, &kernel.label);
    let mut request = args.rig.request_for(&args.topology, &kernel, model);
    request.traffic = Some(crate::traffic::TrafficOptions {
        flows: Some(args.flows),
        bytes: args.round_bytes,
        limit: std::time::Duration::from_secs(args.round_seconds),
    });
    request.soak = Some(SoakOptions { minutes: args.minutes, channels });
    eprintln!(
        "manarig: soaking {name} for {} guest minutes ({} flows a round; about {} minutes with the boot)",
        args.minutes,
        args.flows,
        args.minutes + 1
    );
    match run_one(&request) {
        Ok(outcome) => print_outcome(&outcome, args.format, outcome.verdict.soak.as_ref().map(soak_line))
            .unwrap_or(Exit::RigError)
            .into(),
        Err(err) => {
            report_rig_error(&err, &name, args.format);
            Exit::RigError.into()
        }
    }
}

/// One line of the soak's figures.
fn soak_line(r: &crate::verdict::SoakReport) -> String {
    let t = &r.traffic;
    let memory = r.flatness.as_ref().map_or_else(
        || "too few samples".to_owned(),
        |f| {
            format!(
                "RssAnon {}→{} KiB (max {}), fds {}→{}",
                f.rss_first_kib, f.rss_last_kib, f.rss_max_kib, f.fds_first, f.fds_last
            )
        },
    );
    format!(
        "manarig: soak: {} minutes, {} of {} rounds verified, {} MiB verified; device {memory}",
        r.minutes,
        t.rounds_verified,
        t.rounds,
        (t.bytes_to_guest + t.bytes_to_host) / (1 << 20)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_default_to_half_then_a_quarter_and_bad_counts_are_named() {
        assert_eq!(channels(None, 8).expect("default"), vec![4, 2]);
        assert_eq!(channels(Some("none"), 8).expect("none"), Vec::<u32>::new());
        assert_eq!(channels(Some("3, 1"), 8).expect("two"), vec![3, 1]);
        let e = channels(Some("4,9"), 8).expect_err("9 > 8");
        assert!(matches!(&e, SoakArgsError::Channels { entry, max: 8, .. } if entry == "9"), "{e}");
        assert!(channels(Some("0"), 8).is_err() && channels(Some("x"), 8).is_err());
    }
}
