//! A soak's guest side (`manarig.soak=M`, guest-images/README.md): the marks
//! the agent prints while it runs ([`SoakMark`], acted on by the rig at
//! once) and the steps and traffic rounds its report lists ([`GuestSoak`]).

/// One step of a soak minute, in the order the agent takes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SoakStep {
    /// The minute begins: the rig samples the device process (a mark only).
    Sample,
    /// `ethtool -L <netdev> combined N`.
    Channels,
    /// The device's link goes down (the rig raises the event at the mark).
    LinkDown,
    /// The device's link comes back (the rig raises the event at the mark).
    LinkUp,
    /// `rmmod mana`.
    Rmmod,
    /// mana loaded again: the probe, `ip link set up`, the carrier.
    Insmod,
    /// The address again on the new netdev (`ip addr add`).
    Addr,
}

impl SoakStep {
    /// Every step with its name as the agent prints it.
    pub const ALL: [(SoakStep, &'static str); 7] = [
        (SoakStep::Sample, "sample"),
        (SoakStep::Channels, "channels"),
        (SoakStep::LinkDown, "link-down"),
        (SoakStep::LinkUp, "link-up"),
        (SoakStep::Rmmod, "rmmod"),
        (SoakStep::Insmod, "insmod"),
        (SoakStep::Addr, "addr"),
    ];

    /// The name as the agent prints it.
    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(s, _)| *s == self).map_or("?", |(_, n)| n)
    }

    /// The step a name stands for.
    pub fn parse(name: &str) -> Option<SoakStep> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(s, _)| *s)
    }
}

/// `MANARIG-SOAK <step> <minute>`: a moment of the soak the rig acts on as
/// soon as the line arrives (before `/init` goes on): [`SoakStep::Sample`]
/// (the device process's memory and descriptors), [`SoakStep::LinkDown`]
/// and [`SoakStep::LinkUp`] (the device raises the link event).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SoakMark {
    /// The step.
    pub step: SoakStep,
    /// The soak minute (0-based; sample `M` is the soak's end).
    pub minute: u32,
}

impl SoakMark {
    /// The mark in the text after `MANARIG-SOAK ` (`link-down 3`); None for
    /// anything else.
    pub fn parse(rest: &str) -> Option<SoakMark> {
        let mut words = rest.split_whitespace();
        let step = SoakStep::parse(words.next()?)?;
        let minute = words.next()?.parse().ok()?;
        words.next().is_none().then_some(SoakMark { step, minute })
    }
}

/// One `soak <minute> <step>: <status> <uptime> <detail>` line.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SoakStepResult {
    /// The soak minute.
    pub minute: u32,
    /// The step.
    pub step: SoakStep,
    /// Its exit status (`-`: a step without one, the link events: None).
    pub status: Option<i32>,
    /// Guest uptime in seconds when the step ended.
    pub time: f64,
    /// What it left: `channels`: the combined channels after it; `link-down`,
    /// `link-up`: the carrier 5 guest seconds later; `insmod`: the carrier
    /// after `ip link set up`; None for `-`.
    pub detail: Option<u32>,
}

impl SoakStepResult {
    /// Parses a line's id (`<minute> <step>`) and value.
    ///
    /// # Errors
    /// A one-line description of the first part that is not of the form.
    pub fn parse(id: &str, value: &str) -> Result<Self, String> {
        let (minute, step) = id.split_once(' ').ok_or_else(|| format!("{id:?} is not `<minute> <step>`"))?;
        let minute = minute.parse().map_err(|_| format!("soak minute {minute:?} is not a number"))?;
        let step = SoakStep::parse(step).ok_or_else(|| format!("{step:?} is not a soak step"))?;
        let mut words = value.split_whitespace();
        let mut next = |what: &str| words.next().ok_or_else(|| format!("no {what}"));
        let status = next("status")?.parse().ok();
        let time = next("uptime")?;
        let time = time.parse().map_err(|_| format!("uptime {time:?} is not a number"))?;
        let detail = next("detail")?.parse().ok();
        Ok(SoakStepResult { minute, step, status, time, detail })
    }
}

/// One `soak-round <n>: <status> <uptime>` line: a run of `manarig-flows
/// guest` in the soak's traffic loop.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SoakRound {
    /// The round (1-based).
    pub round: u32,
    /// The tool's exit status (0 every flow verified, 1 some not, 2 it could
    /// not run: e.g. no control connection before its deadline).
    pub status: i32,
    /// Guest uptime in seconds when it ended.
    pub time: f64,
}

impl SoakRound {
    /// Parses a line's id (`<n>`) and value.
    ///
    /// # Errors
    /// A one-line description of the first part that is not of the form.
    pub fn parse(id: &str, value: &str) -> Result<Self, String> {
        let round = id.trim().parse().map_err(|_| format!("round {id:?} is not a number"))?;
        let (status, time) =
            value.trim().split_once(' ').ok_or_else(|| format!("{value:?} is not `<status> <uptime>`"))?;
        let status = status.parse().map_err(|_| format!("status {status:?} is not a number"))?;
        let time = time.trim().parse().map_err(|_| format!("uptime {time:?} is not a number"))?;
        Ok(SoakRound { round, status, time })
    }
}

/// What `manarig.soak` did (empty without it).
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct GuestSoak {
    /// Every step, in the order the agent took them.
    pub steps: Vec<SoakStepResult>,
    /// Every traffic round, in order.
    pub rounds: Vec<SoakRound>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_steps_and_rounds_parse_and_malformed_ones_are_named() {
        assert_eq!(SoakMark::parse("link-down 3"), Some(SoakMark { step: SoakStep::LinkDown, minute: 3 }));
        for bad in ["link-down", "link-down x", "reboot 1", "sample 1 2", ""] {
            assert_eq!(SoakMark::parse(bad), None, "{bad:?}");
        }
        let s = SoakStepResult::parse("2 channels", "0 184.52 4").expect("a step");
        assert_eq!(
            s,
            SoakStepResult { minute: 2, step: SoakStep::Channels, status: Some(0), time: 184.52, detail: Some(4) }
        );
        let link = SoakStepResult::parse("0 link-up", "- 70.1 1").expect("a link step");
        assert_eq!((link.status, link.detail), (None, Some(1)));
        assert!(SoakStepResult::parse("2 reboot", "0 1.0 -").expect_err("unknown").contains("not a soak step"));
        assert!(SoakStepResult::parse("x rmmod", "0 1.0 -").expect_err("minute").contains("minute"));
        assert!(SoakStepResult::parse("1 rmmod", "0").expect_err("short").contains("uptime"));
        assert_eq!(SoakRound::parse("7", "0 301.25"), Ok(SoakRound { round: 7, status: 0, time: 301.25 }));
        assert!(SoakRound::parse("7", "0").is_err());
        assert_eq!(
            SoakStep::ALL.map(|(s, n)| (SoakStep::parse(n), s.name())),
            SoakStep::ALL.map(|(s, n)| (Some(s), n))
        );
    }
}
