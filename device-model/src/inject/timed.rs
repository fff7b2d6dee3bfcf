//! Timed device events (`reset@S`, `link-down@S`, `link-up@S`): what the
//! device does S seconds after the driver first opens a vPort, that is after
//! its first MANA_CONFIG_VPORT_RX (`mana_config_rss()` from `mana_open()`,
//! drivers/net/ethernet/microsoft/mana/mana_en.c), so that with `--traffic`
//! the event comes while the flows run.
//!
//! Each is one EQE on the HWC EQ (the events hardware sends there,
//! include/net/mana/gdma.h and hw_channel.h, Linux 7.3.4):
//! - `reset`: GDMA_EQE_HWC_RESET_REQUEST, then the device forgets everything
//!   (HWC, queues, DMA regions, vPort state; the SMC back to idle) as a
//!   function-level reset does. Linux 7.3's `mana_serv_reset()` (gdma_main.c)
//!   suspends the driver, waits 10 s and sets the device up again; 6.1/6.12's
//!   `mana_gd_process_eqe()` drops the event, so their driver is left with
//!   queues the device no longer has.
//! - `link-down` / `link-up`: GDMA_EQE_HWC_SOC_RECONFIG_DATA with
//!   HWC_DATA_HW_LINK_DISCONNECT / _CONNECT. Linux 7.3's
//!   `mana_hwc_init_event_handler()` (hw_channel.c) turns them into
//!   `netif_carrier_off()` / `_on()` (`mana_link_state_handle()`,
//!   mana_en.c); 6.1/6.12 drop the EQE (no link event handling).
#![forbid(unsafe_code)]

use crate::defs::{Eqe, EqeType, HwcInitTypeData, Le32};
use mana_device_api::inject::DeviceEvent;
use std::time::{Duration, Instant};

/// `HWC_DATA_HW_LINK_CONNECT` (include/net/mana/hw_channel.h, Linux 7.3).
const HWC_DATA_HW_LINK_CONNECT: u8 = 2;
/// `HWC_DATA_HW_LINK_DISCONNECT` (include/net/mana/hw_channel.h, Linux 7.3).
const HWC_DATA_HW_LINK_DISCONNECT: u8 = 3;

/// The EQE the device posts on the HWC EQ for `event`.
pub fn eqe(event: DeviceEvent) -> Eqe {
    let link = |state| HwcInitTypeData::new().with_data_type(state).into_bits();
    let (eqe_type, detail) = match event {
        DeviceEvent::Reset => (EqeType::HWC_RESET_REQUEST, 0),
        DeviceEvent::LinkDown => (EqeType::HWC_SOC_RECONFIG_DATA, link(HWC_DATA_HW_LINK_DISCONNECT)),
        DeviceEvent::LinkUp => (EqeType::HWC_SOC_RECONFIG_DATA, link(HWC_DATA_HW_LINK_CONNECT)),
    };
    let mut eqe = Eqe::default();
    eqe.details[0] = Le32::new(detail);
    eqe.info.set_eqe_type(eqe_type.0);
    eqe
}

/// The timed events of a device and when the driver opened its first vPort.
#[derive(Debug, Default, Clone)]
pub struct Timeline {
    /// Each event, its delay and whether it was raised.
    events: Vec<(DeviceEvent, Duration, bool)>,
    opened: Option<Instant>,
}

impl Timeline {
    /// A timeline for `events` (event, delay after the first vPort open).
    pub fn new(events: impl IntoIterator<Item = (DeviceEvent, Duration)>) -> Self {
        Self { events: events.into_iter().map(|(e, d)| (e, d, false)).collect(), opened: None }
    }

    /// Whether there is an event at all (the device then needs a clock).
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The driver opened a vPort at `now`: the clock starts (the first time only).
    pub fn vport_opened(&mut self, now: Instant) {
        self.opened.get_or_insert(now);
    }

    /// The events due at `now` not raised yet, in SPEC order; each comes
    /// out once, with its delay.
    pub fn due(&mut self, now: Instant) -> Vec<(DeviceEvent, Duration)> {
        let Some(opened) = self.opened else { return Vec::new() };
        let mut due = Vec::new();
        for (event, after, raised) in &mut self.events {
            if !*raised && now >= opened + *after {
                *raised = true;
                due.push((*event, *after));
            }
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::IntoBytes;

    #[test]
    fn events_come_out_once_after_the_first_open_and_not_before() {
        let mut timeline = Timeline::new([
            (DeviceEvent::LinkDown, Duration::from_secs(1)),
            (DeviceEvent::LinkUp, Duration::from_secs(3)),
        ]);
        let t0 = Instant::now();
        assert!(timeline.due(t0 + Duration::from_secs(10)).is_empty(), "no vPort opened yet");
        timeline.vport_opened(t0);
        timeline.vport_opened(t0 + Duration::from_secs(5));
        assert!(timeline.due(t0).is_empty());
        assert_eq!(timeline.due(t0 + Duration::from_secs(2)), vec![(DeviceEvent::LinkDown, Duration::from_secs(1))]);
        assert!(timeline.due(t0 + Duration::from_secs(2)).is_empty());
        assert_eq!(timeline.due(t0 + Duration::from_secs(3)), vec![(DeviceEvent::LinkUp, Duration::from_secs(3))]);
    }

    #[test]
    fn the_eqes_carry_the_driver_s_types() {
        let bytes = |e: DeviceEvent| eqe(e).as_bytes().to_vec();
        // EQE layout (gdma.h): details[0] at byte 0, the type in bits 0-7 of the dword at 12.
        assert_eq!(bytes(DeviceEvent::Reset)[12], 135);
        assert_eq!(bytes(DeviceEvent::LinkDown)[12], 133);
        assert_eq!(bytes(DeviceEvent::LinkDown)[3], HWC_DATA_HW_LINK_DISCONNECT, "type in bits 24-31");
        assert_eq!(bytes(DeviceEvent::LinkUp)[3], HWC_DATA_HW_LINK_CONNECT);
    }
}
