//! eth0's `rx_missed_errors` against the device's own count of the frames
//! it dropped for want of a posted RX WQE, at each `MANARIG-SELFTEST` mark.
//!
//! On 7.3 mana reports `rx_missed_errors` as `hc_rx_discards_no_wqe`
//! (drivers/net/ethernet/microsoft/mana/mana_en.c, 7.3.4:
//! `mana_get_stats64()`), the device's `rx_discards_nowqe` as the last
//! MANA_QUERY_GF_STAT gave it (device-model `device::gf_stats`: device-api
//! `Totals::rx_no_wqe`, which never restarts). The driver asks from a
//! delayed work item that queries, copies the answer and schedules itself
//! again 2 s later (`mana_gf_stats_work_handler()`, `MANA_GF_STATS_PERIOD`),
//! so the guest's reading lags the device by up to one period and a query:
//!
//! - upper bound: the guest read a count the device gave before the rig
//!   took the mark's status (the agent reads, then prints the mark), and
//!   the device's count only grows: `guest ≤ device at the mark`;
//! - lower bound, when the device answered at least two queries between the
//!   previous mark's status and this one's: the first of them was answered
//!   after the previous mark and copied before the second was sent, 2 s
//!   before that second answer, so before the guest's read as long as the
//!   agent's read and the rig's status of one mark are less than 2 s apart:
//!   `guest ≥ device at the previous mark`. When the program dropped
//!   nothing for want of a WQE the two bounds meet and the check is exact.
//!
//! 6.12 never sets `rx_missed_errors` (6.12.117 `mana_get_stats64()`), so
//! the check is made for 7.x runs only.

use serde::{Deserialize, Serialize};

/// One mark's comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MissedCheck {
    /// eth0's `rx_missed_errors` at the mark.
    pub guest: u64,
    /// The device's no-WQE drops at the previous mark.
    pub device_before: u64,
    /// The device's no-WQE drops at this mark.
    pub device: u64,
    /// The device answered two MANA_QUERY_GF_STAT or more between the
    /// marks: the lower bound holds.
    pub refreshed: bool,
}

impl MissedCheck {
    /// From eth0's reading at the mark (`guest`), the device's no-WQE drops
    /// at the previous mark and this one (`no_wqe`) and the MANA_QUERY_GF_STAT
    /// requests it had answered at each (`queries`).
    pub fn new(guest: u64, no_wqe: (u64, u64), queries: (u64, u64)) -> Self {
        MissedCheck {
            guest,
            device_before: no_wqe.0,
            device: no_wqe.1,
            refreshed: queries.1.saturating_sub(queries.0) >= 2,
        }
    }

    /// Whether the guest's reading is one the device can have given.
    pub fn holds(&self) -> bool {
        self.guest <= self.device && (!self.refreshed || self.guest >= self.device_before)
    }

    /// `rx_missed_errors 12 = the device's no-WQE drops 12`, `… 12 = the
    /// device's no-WQE drops at the mark (5 at the one before)`, `… 7 in the
    /// device's no-WQE drops 5..=12 (at the two marks)`, or `… 3 ≤ the
    /// device's no-WQE drops 12 (fewer than 2 GF_STAT queries …)`.
    pub fn text(&self) -> String {
        let g = self.guest;
        match (self.refreshed, self.device_before == self.device) {
            (true, true) => format!("rx_missed_errors {g} = the device's no-WQE drops {}", self.device),
            (true, false) if g == self.device => format!(
                "rx_missed_errors {g} = the device's no-WQE drops at the mark ({} at the one before)",
                self.device_before
            ),
            (true, false) => format!(
                "rx_missed_errors {g} in the device's no-WQE drops {}..={} (at the two marks)",
                self.device_before, self.device
            ),
            (false, _) => format!(
                "rx_missed_errors {g} ≤ the device's no-WQE drops {} (fewer than 2 GF_STAT queries between the marks)",
                self.device
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refreshed_reading_lies_between_the_devices_counts_at_the_two_marks() {
        let exact = MissedCheck::new(12, (12, 12), (30, 33));
        assert!(exact.holds());
        assert_eq!(exact.text(), "rx_missed_errors 12 = the device's no-WQE drops 12");
        assert!(MissedCheck::new(7, (5, 12), (30, 32)).holds(), "a query during the program's drops");
        assert_eq!(
            MissedCheck::new(12, (5, 12), (30, 32)).text(),
            "rx_missed_errors 12 = the device's no-WQE drops at the mark (5 at the one before)"
        );
        assert!(!MissedCheck::new(4, (5, 12), (30, 32)).holds(), "older than a refresh after the first mark");
        assert!(!MissedCheck::new(0, (2784, 2784), (30, 40)).holds(), "a device that answers zeros");
        assert!(!MissedCheck::new(13, (12, 12), (30, 33)).holds(), "more than the device counted");
    }

    #[test]
    fn without_two_queries_between_the_marks_only_the_upper_bound_holds() {
        let stale = MissedCheck::new(0, (5, 12), (30, 31));
        assert!(stale.holds());
        assert_eq!(
            stale.text(),
            "rx_missed_errors 0 ≤ the device's no-WQE drops 12 (fewer than 2 GF_STAT queries between the marks)"
        );
        assert!(!MissedCheck::new(13, (5, 12), (30, 30)).holds());
    }
}
