//! The device driven by an in-process model of Linux's `mana` driver.
mod support;

use support::*;
use device_model::config::DeviceConfig;

#[test]
fn probe_6_12_order_succeeds() {
    let mut drv = Driver::new(Kernel::V6_12, DeviceConfig::default());
    drv.probe().unwrap();
}
