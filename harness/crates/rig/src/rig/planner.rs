//! The traffic planner the peer calls when the guest says hello: flows
//! planned from the device's RSS state, each round (a soak's guest says
//! hello again and again) on other ports than the rounds before.

use super::device;
use crate::traffic::peer::Planner;
use crate::traffic::plan::{self, PlanRequest, PlannedFlow};
use crate::traffic::{self, TrafficOptions};
use std::collections::{BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Slot shared with the planner closure: the planned flows or why there are none.
pub(super) type PlanSlot = Arc<Mutex<(Option<Vec<PlannedFlow>>, Option<String>)>>;

/// How long after a round was planned its 4-tuples stay out of new plans,
/// beyond its flows' limit: TIME_WAIT's 60 s (include/net/tcp.h
/// `TCP_TIMEWAIT_LEN`) with a margin.
const TUPLES_KEPT_AFTER_LIMIT: Duration = Duration::from_secs(120);

/// The planner the peer calls when the guest says hello: the device's RSS
/// state now (the driver has programmed it by then) → [`plan::plan`]; the
/// slot keeps the latest round's flows. Every round avoids the 4-tuples of
/// the rounds that may still hold them, those planned within the flows'
/// limit plus [`TUPLES_KEPT_AFTER_LIMIT`] ([`PlanRequest::avoid`]), so that
/// a soak of any length finds ports.
pub(super) fn planner(status: device::DeviceStatusHandle, options: TrafficOptions, slot: PlanSlot) -> Planner {
    let mut round = 0u32;
    let mut recent: VecDeque<(Instant, Vec<(u16, u16)>)> = VecDeque::new();
    let keep = options.limit + TUPLES_KEPT_AFTER_LIMIT;
    Box::new(move |hello| {
        let now = Instant::now();
        while recent.front().is_some_and(|(at, _)| now.duration_since(*at) > keep) {
            recent.pop_front();
        }
        let used: BTreeSet<(u16, u16)> = recent.iter().flat_map(|(_, tuples)| tuples.iter().copied()).collect();
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
                avoid: used,
            };
            plan::plan(core.steering.iter().find(|s| s.vport == 0), &request).map_err(|e| e.to_string())
        })();
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        match result {
            Ok((plan, planned)) => {
                recent.push_back((now, plan.flows.iter().map(|f| (f.guest_port, f.host_port)).collect()));
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
