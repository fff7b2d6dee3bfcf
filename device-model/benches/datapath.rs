//! Data-path benchmark: 64-byte frames through SQ → CQ → EQ (TX) and
//! backend → RSS → RQ → CQ → EQ (RX) on one thread, in-memory guest memory,
//! no VM.
//!
//! Bring-up (probe, open with one queue pair, RSS over a 64-entry table) is
//! the in-process model of the Linux driver (tests/support). Then the bench
//! is the driver's NAPI loop at its leanest: per batch of 64 frames one SQ
//! (or RQ) doorbell, then one CQ doorbell and one EQ doorbell, both arming,
//! so every batch also writes one EQE and raises one MSI-X vector. The
//! counts are checked against the device's snapshot at the end.
//!
//! Run with `cargo xtask bench model` or `cargo bench -p device-model --bench
//! datapath`. Prints frames/s per direction (best of the runs: the build
//! machines are shared) and exits 1 below [`TARGET`]. Optional argument:
//! the number of runs (default 5), as for the model bench.
// A bench fails by panicking on a broken setup, like a test.
#![allow(clippy::unwrap_used, missing_docs)]

#[path = "../tests/support/mod.rs"]
mod support;

use device_model::datapath::backend::{BackendError, PacketBackend, Received};
use device_model::datapath::rx::RxVerdict;
use device_model::defs::*;
use mana_device_api::config::DeviceConfig;
use std::hint::black_box;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::frames::{self, Flow};
use support::{Driver, DrvCompQueue, DrvQueuePair, DrvWorkQueue, Kernel};
use zerocopy::IntoBytes;

/// Frames per second each direction must reach.
const TARGET: f64 = 1_000_000.0;
/// Frames per doorbell: the device's TX batch, and a NAPI-sized RX batch.
const BATCH: u32 = 64;
/// Runs per direction by default; the best one counts.
const RUNS: usize = 5;
/// Frames per run.
const FRAMES: u32 = 1_000_000;

/// Counts transmitted frames and bytes; receives nothing.
struct Counter(Arc<AtomicU64>);

impl PacketBackend for Counter {
    fn transmit(&mut self, _vport: u16, frame: &[u8]) -> Result<(), BackendError> {
        self.0.fetch_add(black_box(frame).len() as u64, Ordering::Relaxed);
        Ok(())
    }
    fn receive(&mut self, _buf: &mut [u8]) -> Option<Received> {
        None
    }
    fn rx_pending(&self) -> bool {
        false
    }
}

/// The driver side of one queue pair as the bench drives it.
struct Lane {
    sq: DrvWorkQueue,
    rq: DrvWorkQueue,
    sq_cq: DrvCompQueue,
    rq_cq: DrvCompQueue,
    eq: DrvCompQueue,
}

fn setup() -> (Driver, Lane, Arc<AtomicU64>) {
    let bytes = Arc::new(AtomicU64::new(0));
    let backend = Box::new(Counter(Arc::clone(&bytes)));
    let mut drv = Driver::with_backend(Kernel::V6_12, DeviceConfig::default(), backend);
    let eqs = drv.probe().unwrap();
    let pairs = drv.open(&eqs, 1).unwrap();
    let pair: DrvQueuePair = pairs[0].clone();
    // The model's interrupt handler stays out of the measurement: the bench
    // consumes completions by doorbell only.
    drv.masked.insert(drv.vector_of(&pair));
    let lane = Lane {
        sq: drv.sqs[&pair.sq.id].clone(),
        rq: drv.rqs[&pair.rq.id].clone(),
        sq_cq: drv.cqs[&pair.sq_cq.id].clone(),
        rq_cq: drv.cqs[&pair.rq_cq.id].clone(),
        eq: drv.eqs[&pair.eq].1.clone(),
    };
    (drv, lane, bytes)
}

/// Fills every SQ slot with a one-SGE short-OOB WQE sending `frame`.
fn fill_sq(drv: &mut Driver, lane: &Lane, frame: &[u8]) {
    let buf = drv.alloc(1);
    drv.write(buf, frame);
    let oob = TxShortOob::new().with_vcq_num(lane.sq_cq.id).with_vsq_frame(((lane.sq.id >> 10) & 0x3FFF) as u16);
    let sge = Sge { address: Le64::new(buf), mem_key: Le32::new(drv.gpa_mkey), size: Le32::new(frame.len() as u32) };
    let header = WqeHeader::new().with_num_sge(1).with_inline_oob_size_div4(2);
    for slot in 0..lane.sq.ring.size / 32 {
        drv.write(lane.sq.ring.addr(slot * 32), header.as_bytes());
        drv.write(lane.sq.ring.addr(slot * 32 + 8), oob.as_bytes());
        drv.write(lane.sq.ring.addr(slot * 32 + 16), sge.as_bytes());
    }
}

/// One batch's completions consumed: CQ and EQ doorbells with arm.
fn consume(drv: &mut Driver, cq: &mut DrvCompQueue, eq: &mut DrvCompQueue) {
    cq.head += BATCH;
    drv.ring_cq(cq, true);
    eq.head += 1;
    drv.ring_eq(eq, true);
}

fn tx_run(frames: u32) -> (Duration, u64) {
    let (mut drv, mut lane, bytes) = setup();
    let frame = frames::frame([2, 0, 0, 0, 0, 9], &Flow::tcp("10.0.0.1", 1, "10.0.0.2", 2).udp(), &[0x55; 22]);
    assert_eq!(frame.len(), 64);
    fill_sq(&mut drv, &lane, &frame);
    let start = Instant::now();
    for _ in 0..frames / BATCH {
        lane.sq.head += BATCH;
        drv.ring_wq(&lane.sq, true);
        consume(&mut drv, &mut lane.sq_cq, &mut lane.eq);
    }
    let elapsed = start.elapsed();
    let done = u64::from(frames / BATCH * BATCH);
    check(&drv, &lane, lane.sq_cq.id, done);
    assert_eq!(bytes.load(Ordering::Relaxed), done * 64, "every frame reached the backend");
    (elapsed, done)
}

fn rx_run(frames: u32) -> (Duration, u64) {
    let (mut drv, mut lane, _) = setup();
    let frame =
        frames::frame(DeviceConfig::default().mac, &Flow::tcp("10.0.0.2", 5201, "10.0.0.1", 40000), &[0xAA; 10]);
    assert_eq!(frame.len(), 64);
    // open() posted a full RQ (512 buffers); each batch takes 64 and the
    // driver's refill (mana_post_pkt_rxq) puts the same 64 slots back.
    let start = Instant::now();
    for _ in 0..frames / BATCH {
        for _ in 0..BATCH {
            let verdict = drv.dev.receive(0, black_box(&frame));
            debug_assert!(matches!(verdict, RxVerdict::Delivered { .. }));
        }
        lane.rq.head += BATCH;
        drv.ring_wq(&lane.rq, false);
        consume(&mut drv, &mut lane.rq_cq, &mut lane.eq);
    }
    let elapsed = start.elapsed();
    let done = u64::from(frames / BATCH * BATCH);
    check(&drv, &lane, lane.rq_cq.id, done);
    (elapsed, done)
}

/// The device did what the bench assumed: `frames` CQEs, one EQE and one
/// vector per batch, no guest error.
fn check(drv: &Driver, lane: &Lane, cq_id: u32, frames: u64) {
    let snap = drv.dev.snapshot();
    let cq = snap.cqs.iter().find(|c| c.id == cq_id).unwrap();
    assert!(cq.completions_posted >= frames, "{} CQEs", cq.completions_posted);
    let eq = snap.eqs.iter().find(|e| e.id == lane.eq.id).unwrap();
    let batches = frames / u64::from(BATCH);
    assert!(eq.events_posted >= batches, "{} EQEs for {batches} batches", eq.events_posted);
    assert!(drv.irqs.all().len() as u64 >= batches, "a vector per batch");
    assert!(snap.counters.guest_errors.is_empty(), "{:?}", snap.counters.guest_errors);
    let t = snap.counters.traffic;
    assert!(t.tx.packets + t.rx.packets >= frames && t.rx.drops == 0, "{t:?}");
}

fn measure(name: &str, runs: usize, run: fn(u32) -> (Duration, u64)) -> bool {
    let rates: Vec<f64> = (0..runs)
        .map(|_| {
            let (elapsed, done) = run(FRAMES);
            done as f64 / elapsed.as_secs_f64()
        })
        .collect();
    let best = rates.iter().copied().fold(0.0, f64::max);
    let worst = rates.iter().copied().fold(f64::INFINITY, f64::min);
    let ok = best >= TARGET;
    println!(
        "  {name}: {:>6.2} M frames/s best of {runs} (worst {:.2} M), {:>4.0} ns/frame, 64-byte frames, target {:.1} M: {}",
        best / 1e6,
        worst / 1e6,
        1e9 / best,
        TARGET / 1e6,
        if ok { "ok" } else { "BELOW TARGET" }
    );
    ok
}

fn main() -> ExitCode {
    // `cargo bench` passes `--bench`; a bare number is the run count.
    let runs = std::env::args().skip(1).find_map(|a| a.parse::<usize>().ok()).unwrap_or(RUNS).max(1);
    println!("device data-path bench: {FRAMES} frames per run, batches of {BATCH}, one thread");
    let tx = measure("TX  SQ -> backend, CQE, EQE, MSI-X", runs, tx_run);
    let rx = measure("RX  backend -> RSS -> RQ, CQE, EQE, MSI-X", runs, rx_run);
    if tx && rx {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
