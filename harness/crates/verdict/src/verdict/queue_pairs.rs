//! The `queue_pairs` check: once the netdev is up, `ndo_open` (`mana_open()`)
//! created a queue pair per channel. mana's open makes, for each of the
//! `apc->num_queues` channels, one SQ (`mana_create_txq()`) and one RQ
//! (`mana_add_rx_queues()`) on its vPort, and the netdev shows that count as
//! `queues/tx-N` (drivers/net/ethernet/microsoft/mana/mana_en.c, Linux 6.1 to
//! 7.3). A failed open leaves the netdev registered with its channel count and
//! no queue on the device; the probe's IRQs are all there, so the IRQ checks
//! alone pass such a run (seen with 64 KiB pages on 6.12 at 256 MiB per node:
//! "Failed to create RXQ: err = -12", README "Minimal arm64 kernels").
//!
//! Each stage the rig attached ([`Verdict::add_stages`]) is judged where the
//! guest brought its first netdev up and the device's state was taken: vPort
//! 0's SQs and RQs (the first NIC's first port: `eth0`) against the netdev's
//! channel count. A failure quotes the driver's own line about it from the
//! kernel log, when there is one.

use super::check::{Check, CheckStatus};
use super::outcome::Verdict;
use super::stages::{QueueStage, VportQueues};
use crate::text::plural;

/// Name of the check that `ndo_open` created a queue pair per channel.
pub const QUEUE_PAIRS_CHECK: &str = "queue_pairs";

/// The vPort of the guest's first netdev: port 0 of the first NIC (mana
/// probes its ports in order, `mana_probe()`, and the guest agent brings up
/// the first `eth*`: guest-images/init.sh).
const FIRST_VPORT: u16 = 0;

/// What one stage shows: its netdev, the channel count and the vPort's queues.
struct Seen<'a> {
    stage: &'a str,
    netdev: &'a str,
    channels: u32,
    queues: VportQueues,
}

impl Seen<'_> {
    fn complete(&self) -> bool {
        self.queues.sqs == self.channels && self.queues.rqs == self.channels
    }

    fn counts(&self) -> String {
        format!(
            "{} has {} and vPort {} {} and {}",
            self.netdev,
            plural(self.channels, "channel"),
            self.queues.vport,
            plural(self.queues.sqs, "SQ"),
            plural(self.queues.rqs, "RQ")
        )
    }
}

/// `stage` as the check judges it, or why it cannot (`report_moved`: what
/// changed the queues of the report stage after the agent counted the channels).
fn seen<'a>(stage: &'a QueueStage, report_moved: Option<&str>) -> Result<Seen<'a>, String> {
    let name = stage.stage.as_str();
    let link = &stage.facts.link;
    let Some(netdev) = link.netdev.as_deref() else {
        return Err(format!("{name}: no netdev (the probe's checks say why)"));
    };
    if link.ifup_s.is_none() {
        return Err(format!("{name}: {netdev} was not brought up"));
    }
    if let (super::stages::REPORT_STAGE, Some(what)) = (name, report_moved) {
        return Err(format!("{name}: {what} changed the queues after the channels were counted"));
    }
    let Some(channels) = link.channels else {
        return Err(format!("{name}: the guest did not count {netdev}'s channels"));
    };
    let Some(table) = &stage.facts.table else {
        return Err(format!("{name}: the device status was not taken"));
    };
    Ok(Seen { stage: name, netdev, channels, queues: table.vport(FIRST_VPORT) })
}

/// Whether a driver line says that something failed: mana's messages on the
/// open path read `Failed to create RXQ: err = %d`, `Create page pool
/// err:%d`, `Failed to create WQ object: %d`, `mana_attach failed: %d`
/// (mana_en.c, Linux 6.12.117).
fn says_failure(line: &str) -> bool {
    let l = line.to_ascii_lowercase();
    ["fail", "err =", "err:", "error"].iter().any(|w| l.contains(w))
}

/// The check over `stages` (run order), quoting the failure lines of `dmesg`
/// (the driver's kernel log lines, oldest first).
fn queue_pairs(stages: &[QueueStage], dmesg: &[String], report_moved: Option<&str>) -> Check {
    let (judged, unjudged): (Vec<_>, Vec<_>) = stages.iter().map(|s| seen(s, report_moved)).partition(Result::is_ok);
    let judged: Vec<Seen<'_>> = judged.into_iter().filter_map(Result::ok).collect();
    let unjudged: Vec<String> = unjudged.into_iter().filter_map(Result::err).collect();
    if judged.is_empty() {
        let why = if unjudged.is_empty() { "the run has no stages".to_owned() } else { unjudged.join("; ") };
        return Check::new(QUEUE_PAIRS_CHECK, CheckStatus::Skip, format!("no stage to judge: {why}"));
    }
    let short: Vec<&Seen<'_>> = judged.iter().filter(|s| !s.complete()).collect();
    let Some(first) = short.first() else {
        let each: Vec<String> = judged.iter().map(|s| format!("{}: {}", s.stage, s.counts())).collect();
        let mut c = Check::new(
            QUEUE_PAIRS_CHECK,
            CheckStatus::Pass,
            format!("ndo_open created a queue pair per channel ({})", each.join("; ")),
        );
        c.detail = unjudged.into_iter().map(|u| format!("not judged: {u}")).collect();
        return c;
    };
    let failures: Vec<&String> = dmesg.iter().filter(|l| says_failure(l)).collect();
    let said =
        failures.first().map_or("no driver line names a failure".to_owned(), |l| format!("the kernel said: {l}"));
    let mut c = Check::new(
        QUEUE_PAIRS_CHECK,
        CheckStatus::Fail,
        format!("at the {} {}: ndo_open did not create a queue pair per channel; {said}", first.stage, first.counts()),
    );
    c.detail = short[1..].iter().map(|s| format!("at the {} {}", s.stage, s.counts())).collect();
    c.detail.extend(failures.iter().skip(1).map(|l| format!("dmesg: {l}")));
    c
}

impl Verdict {
    /// Appends [`QUEUE_PAIRS_CHECK`] on the stages [`Verdict::add_stages`]
    /// attached (without them the check skips): at each stage where the guest
    /// brought its first netdev up and the device's state was taken, vPort 0
    /// has one SQ and one RQ per channel of that netdev (`queues/tx-N`). A
    /// failure names the first stage that falls short with its counts and
    /// quotes the first line of [`Verdict::dmesg_mana`] that names a failure
    /// (the others in `detail`). `report_moved` names what ran between the
    /// agent's channel count and the device's state at the report and may
    /// change the queues (`the selftests`, `a soak`): the report stage is not
    /// judged then. The status becomes Fail if the check fails.
    pub fn add_queue_pairs(&mut self, report_moved: Option<&str>) {
        let check = queue_pairs(self.queues.as_deref().unwrap_or_default(), &self.dmesg_mana, report_moved);
        self.add_check(check);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::{QueueTable, StageFacts, StageLink, Status, REPORT_STAGE};

    /// A stage where `eth0` came up with `channels` channels and the device
    /// holds `sqs` SQs and `rqs` RQs on vPort 0 (the guest times are
    /// illustrative).
    fn stage(name: &str, channels: u32, sqs: u32, rqs: u32) -> QueueStage {
        let table = QueueTable {
            vports: if sqs + rqs == 0 { Vec::new() } else { vec![VportQueues { vport: 0, sqs, rqs }] },
            ..QueueTable::default()
        };
        QueueStage {
            stage: name.to_owned(),
            status: Status::Pass,
            facts: StageFacts {
                link: StageLink {
                    netdev: Some("eth0".to_owned()),
                    ifup_s: Some(3.1),
                    channels: Some(channels),
                    ..StageLink::default()
                },
                table: Some(table),
                ..StageFacts::default()
            },
        }
    }

    /// The driver's lines of the 64 KiB-page 6.12 build at 256 MiB per node
    /// (arm64 cobalt-16, 2026-12-03: README "Minimal arm64 kernels").
    fn failed_open_dmesg() -> Vec<String> {
        [
            "mana 0000:41:00.0: enabling device (0000 -> 0002)",
            "mana 0000:41:00.0: Microsoft Azure Network Adapter protocol version: 0.1.1",
            "mana 0000:41:00.0 eth0: Configured vPort 22016 PD 258 DB 0",
            "mana 0000:41:00.0 eth0: Failed to create RXQ: err = -12",
        ]
        .map(str::to_owned)
        .to_vec()
    }

    #[test]
    fn a_queue_pair_per_channel_at_every_stage_passes() {
        let c = queue_pairs(&[stage("first-probe", 16, 16, 16), stage(REPORT_STAGE, 4, 4, 4)], &[], None);
        assert_eq!(c.status, CheckStatus::Pass, "{}", c.message);
        assert!(c.message.contains("report: eth0 has 4 channels and vPort 0 4 SQs and 4 RQs"), "{}", c.message);
    }

    #[test]
    fn a_failed_open_fails_quoting_the_kernel_s_own_line() {
        let c = queue_pairs(&[stage(REPORT_STAGE, 16, 0, 0)], &failed_open_dmesg(), None);
        assert_eq!(c.status, CheckStatus::Fail);
        assert_eq!(
            c.message,
            "at the report eth0 has 16 channels and vPort 0 0 SQs and 0 RQs: ndo_open did not create a queue pair \
             per channel; the kernel said: mana 0000:41:00.0 eth0: Failed to create RXQ: err = -12"
        );
    }

    #[test]
    fn sqs_without_their_rqs_fail_and_a_silent_kernel_is_said_to_be_silent() {
        let c = queue_pairs(&[stage(REPORT_STAGE, 16, 16, 3)], &failed_open_dmesg()[..3], None);
        assert_eq!(c.status, CheckStatus::Fail);
        assert!(c.message.ends_with("no driver line names a failure"), "{}", c.message);
    }

    #[test]
    fn every_short_stage_and_every_failure_line_is_in_the_detail() {
        let mut dmesg = failed_open_dmesg();
        dmesg.push("mana 0000:41:00.0 eth0: mana_attach failed: -12".to_owned());
        let c = queue_pairs(&[stage("first-probe", 16, 0, 0), stage(REPORT_STAGE, 4, 4, 0)], &dmesg, None);
        assert!(c.message.starts_with("at the first-probe eth0 has 16 channels"), "{}", c.message);
        assert_eq!(
            c.detail,
            [
                "at the report eth0 has 4 channels and vPort 0 4 SQs and 0 RQs",
                "dmesg: mana 0000:41:00.0 eth0: mana_attach failed: -12"
            ]
        );
    }

    #[test]
    fn stages_without_an_open_netdev_a_count_or_the_device_state_are_not_judged() {
        let mut down = stage("first-probe", 16, 0, 0);
        down.facts.link.ifup_s = None;
        let mut no_status = stage(REPORT_STAGE, 16, 0, 0);
        no_status.facts.table = None;
        let c = queue_pairs(&[down.clone(), no_status], &failed_open_dmesg(), None);
        assert_eq!(c.status, CheckStatus::Skip);
        assert_eq!(
            c.message,
            "no stage to judge: first-probe: eth0 was not brought up; report: the device status was not taken"
        );
        let mut no_netdev = stage(REPORT_STAGE, 16, 0, 0);
        no_netdev.facts.link.netdev = None;
        let c = queue_pairs(&[no_netdev], &[], None);
        assert!(c.message.contains("report: no netdev"), "{}", c.message);
        let mut uncounted = stage(REPORT_STAGE, 16, 0, 0);
        uncounted.facts.link.channels = None;
        assert_eq!(queue_pairs(&[uncounted], &[], None).status, CheckStatus::Skip);
        assert_eq!(queue_pairs(&[], &[], None).message, "no stage to judge: the run has no stages");
    }

    /// The selftests may take the link down or change the channels before the
    /// report's device state: only the stages before them are judged.
    #[test]
    fn the_report_is_not_judged_after_something_changed_its_queues() {
        let stages = [stage("first-probe", 16, 16, 16), stage(REPORT_STAGE, 16, 0, 0)];
        let c = queue_pairs(&stages, &[], Some("the selftests"));
        assert_eq!(c.status, CheckStatus::Pass, "{}", c.message);
        assert_eq!(c.detail, ["not judged: report: the selftests changed the queues after the channels were counted"]);
        assert_eq!(queue_pairs(&stages[1..], &[], Some("a soak")).status, CheckStatus::Skip);
    }

    /// Only vPort 0 (eth0) counts: another vPort's queues do not make up for it.
    #[test]
    fn another_vport_s_queues_do_not_count_for_eth0() {
        let mut s = stage(REPORT_STAGE, 4, 0, 0);
        s.facts.table.as_mut().expect("table").vports = vec![VportQueues { vport: 1, sqs: 4, rqs: 4 }];
        assert_eq!(queue_pairs(&[s], &[], None).status, CheckStatus::Fail);
    }

    #[test]
    fn a_failing_check_fails_the_verdict_and_no_stages_skip() {
        let mut v = crate::verdict::fixtures::Run::new("seed-002", "6.12").judge();
        assert_eq!(v.status, Status::Pass);
        v.add_queue_pairs(None);
        assert_eq!((v.status, v.checks.last().map(|c| c.status)), (Status::Pass, Some(CheckStatus::Skip)));
        v.queues = Some(vec![stage(REPORT_STAGE, 16, 0, 0)]);
        v.dmesg_mana = failed_open_dmesg();
        v.add_queue_pairs(None);
        assert_eq!(v.status, Status::Fail);
        assert_eq!(v.checks.last().map(|c| c.name.as_str()), Some(QUEUE_PAIRS_CHECK));
    }
}
