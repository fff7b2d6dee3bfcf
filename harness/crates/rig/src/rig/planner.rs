//! The traffic planner the peer calls when the guest says hello: flows
//! planned from the device's RSS state, each round (a soak's guest says
//! hello again and again) on other ports than the rounds before.

use super::device;
use crate::traffic::peer::Planner;
use crate::traffic::plan::{self, PlanRequest, PlannedFlow};
use crate::traffic::{self, TrafficOptions};
use std::sync::{Arc, Mutex};

/// Slot shared with the planner closure: the planned flows or why there are none.
pub(super) type PlanSlot = Arc<Mutex<(Option<Vec<PlannedFlow>>, Option<String>)>>;

/// The planner the peer calls when the guest says hello: the device's RSS
/// state now (the driver has programmed it by then) → [`plan::plan`]; the
/// slot keeps the latest round's flows. Every round avoids the 4-tuples of
/// the rounds before it ([`PlanRequest::avoid`]).
pub(super) fn planner(status: device::DeviceStatusHandle, options: TrafficOptions, slot: PlanSlot) -> Planner {
    let mut round = 0u32;
    let mut used = std::collections::BTreeSet::new();
    Box::new(move |hello| {
        let result = (|| {
            let snapshot = status.snapshot().map_err(|e| e.to_string())?;
            let core = snapshot.core.ok_or("the device status has no core")?;
            let request = PlanRequest {
                host: traffic::HOST,
                guest: hello.guest,
                flows: options.flows,
                to_guest: options.bytes,
                to_host: options.bytes,
                limit_ms: u64::try_from(options.limit.as_millis()).unwrap_or(u64::MAX),
                round,
                avoid: used.clone(),
            };
            plan::plan(core.steering.iter().find(|s| s.vport == 0), &request).map_err(|e| e.to_string())
        })();
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        match result {
            Ok((plan, planned)) => {
                used.extend(plan.flows.iter().map(|f| (f.guest_port, f.host_port)));
                round += 1;
                slot.0 = Some(planned);
                Ok(plan)
            }
            Err(e) => {
                slot.1 = Some(e.clone());
                Err(e)
            }
        }
    })
}
