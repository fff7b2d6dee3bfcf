//! One end's side of a plan's flows, on the kernel's own TCP stack (std
//! sockets; `socket2` to bind a connection's source port and to give
//! `accept()` a timeout).
//!
//! The opener connects from its port to the other end's, sends its bytes,
//! shuts its sending half, then reads and checks the answer up to end of
//! file. The acceptor reads and checks up to end of file, then sends its
//! bytes and shuts. One thread per flow; every socket operation has the
//! plan's deadline as its timeout.

use crate::proto::{FlowResult, FlowSpec, Plan, Side};
use crate::stream::{sha256_of, Stream, Verifier};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::collections::BTreeMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// Chunk size of reads and writes.
const CHUNK: usize = 16 * 1024;
/// Shortest timeout given to a socket (a zero timeout means "none" to the kernel).
const MIN_TIMEOUT: Duration = Duration::from_millis(1);

/// This end's address and the other end's.
fn addresses(plan: &Plan, me: Side) -> (Ipv4Addr, Ipv4Addr) {
    match me {
        Side::Guest => (plan.guest, plan.host),
        Side::Host => (plan.host, plan.guest),
    }
}

/// This end's and the other end's port of `flow`.
fn ports(flow: &FlowSpec, me: Side) -> (u16, u16) {
    match me {
        Side::Guest => (flow.guest_port, flow.host_port),
        Side::Host => (flow.host_port, flow.guest_port),
    }
}

/// Bytes `me` sends in `flow`, and whether that is the peer → guest stream.
fn outgoing(flow: &FlowSpec, me: Side) -> (u64, bool) {
    match me {
        Side::Guest => (flow.to_host, false),
        Side::Host => (flow.to_guest, true),
    }
}

/// The listeners for the flows the other end opens, by flow id, and the
/// flows whose port could not be bound (with why).
pub fn listen(plan: &Plan, me: Side) -> (BTreeMap<u32, TcpListener>, Vec<(u32, String)>) {
    let (local, _) = addresses(plan, me);
    let mut listeners = BTreeMap::new();
    let mut failed = Vec::new();
    for flow in plan.flows.iter().filter(|f| f.opener != me) {
        let (port, _) = ports(flow, me);
        match bound(SocketAddrV4::new(local, port)).and_then(|s| s.listen(1).map(|()| s)) {
            Ok(socket) => {
                listeners.insert(flow.id, TcpListener::from(socket));
            }
            Err(e) => failed.push((flow.id, format!("listen on {local}:{port}: {e}"))),
        }
    }
    (listeners, failed)
}

/// A TCP socket bound to `addr` (SO_REUSEADDR: a port of an earlier run in
/// TIME_WAIT does not stop this one).
fn bound(addr: SocketAddrV4) -> std::io::Result<Socket> {
    let socket = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.bind(&SockAddr::from(addr))?;
    Ok(socket)
}

/// One flow's end on the calling thread: `listener` is its listener (the
/// flows the other end opens), `refused` why it cannot run.
fn one_flow(
    plan: &Plan,
    flow: &FlowSpec,
    me: Side,
    listener: Option<TcpListener>,
    refused: Option<String>,
    deadline: Instant,
) -> FlowResult {
    let start = Instant::now();
    let mut end = End::new(flow, me);
    let error = match refused {
        Some(why) => Some(why),
        None => end.run(plan, listener, deadline).err().map(|e| e.to_string()),
    };
    end.result(error, start.elapsed())
}

/// Runs `me`'s side of every flow of `plan` until `deadline`; results in
/// plan order. `listeners` are those [`listen`] opened; `failed` flows are
/// reported failed without running.
pub fn run(
    plan: &Plan,
    me: Side,
    mut listeners: BTreeMap<u32, TcpListener>,
    failed: &BTreeMap<u32, String>,
    deadline: Instant,
) -> Vec<FlowResult> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = plan
            .flows
            .iter()
            .map(|flow| {
                let listener = listener_of(&mut listeners, flow);
                let refused = failed.get(&flow.id).cloned();
                scope.spawn(move || one_flow(plan, flow, me, listener, refused, deadline))
            })
            .collect();
        handles
            .into_iter()
            .zip(&plan.flows)
            .map(|(h, flow)| h.join().unwrap_or_else(|_| thread_lost(flow, me, "flow thread panicked")))
            .collect()
    })
}

/// How long [`run_parked`] waits for a flow's result past the deadline:
/// every socket operation of a flow ends by the deadline.
const RESULT_GRACE: Duration = Duration::from_secs(5);

/// [`run`] for a process that exits right after: each flow's thread sends
/// its result and then parks until the process ends, instead of returning.
///
/// Why: glibc gives a finished thread's stack back with
/// `madvise(MADV_DONTNEED)` up to 16 KiB below the thread's stack pointer,
/// in the 4 KiB pages `qemu-x86_64` reports as AT_PAGESZ; on an arm64
/// kernel with 64 KiB pages the emulator passes the call on, the kernel
/// rounds its length up to 64 KiB and zeroes the live top of the stack, and
/// the thread's last steps fault (seen 2026-12-03: the guest end under
/// `qemu-x86_64` 11.1.3 on Linux 6.12 with `CONFIG_ARM64_64K_PAGES`,
/// `-strace`: `madvise(…, 2076672, MADV_DONTNEED)`, then SIGSEGV at NULL). A
/// thread that never ends never frees its stack. The guest end runs once per
/// process (harness/crates/rig/src/rig/flows_guest.rs), so the parked
/// threads end with it; a long-lived peer uses [`run`].
pub fn run_parked(
    plan: &Plan,
    me: Side,
    mut listeners: BTreeMap<u32, TcpListener>,
    failed: &BTreeMap<u32, String>,
    deadline: Instant,
) -> Vec<FlowResult> {
    let (tx, rx) = std::sync::mpsc::channel::<(usize, FlowResult)>();
    let shared = std::sync::Arc::new(plan.clone());
    let mut results: Vec<Option<FlowResult>> = vec![None; plan.flows.len()];
    for (i, flow) in plan.flows.iter().enumerate() {
        let (listener, refused) = (listener_of(&mut listeners, flow), failed.get(&flow.id).cloned());
        let (plan, tx) = (std::sync::Arc::clone(&shared), tx.clone());
        let spawned = std::thread::Builder::new().spawn(move || {
            let result = one_flow(&plan, &plan.flows[i], me, listener, refused, deadline);
            // The receiver may have given up at its deadline: nothing to tell then.
            let _ = tx.send((i, result));
            drop(plan);
            loop {
                std::thread::park();
            }
        });
        if let Err(e) = spawned {
            results[i] = Some(thread_lost(flow, me, &format!("cannot start the flow's thread: {e}")));
        }
    }
    drop(tx);
    while results.iter().any(Option::is_none) {
        let wait = deadline.saturating_duration_since(Instant::now()) + RESULT_GRACE;
        match rx.recv_timeout(wait) {
            Ok((i, r)) => results[i] = Some(r),
            // A thread panicked (its sender dropped) or is past the deadline.
            Err(_) => break,
        }
    }
    results
        .into_iter()
        .zip(&plan.flows)
        .map(|(r, flow)| r.unwrap_or_else(|| thread_lost(flow, me, "the flow's thread gave no result")))
        .collect()
}

/// `flow`'s listener, taken out of `listeners`.
fn listener_of(listeners: &mut BTreeMap<u32, TcpListener>, flow: &FlowSpec) -> Option<TcpListener> {
    listeners.remove(&flow.id)
}

/// The result of a flow whose thread did not give one.
fn thread_lost(flow: &FlowSpec, me: Side, why: &str) -> FlowResult {
    End::new(flow, me).result(Some(why.to_owned()), Duration::ZERO)
}

/// One end of one flow while it runs.
struct End<'a> {
    flow: &'a FlowSpec,
    me: Side,
    sent: u64,
    verifier: Verifier,
    expected: u64,
}

impl<'a> End<'a> {
    fn new(flow: &'a FlowSpec, me: Side) -> Self {
        let (_, out_to_guest) = outgoing(flow, me);
        let (expected, _) = outgoing(flow, other(me));
        Self { flow, me, sent: 0, verifier: Verifier::new(flow.id, !out_to_guest), expected }
    }

    fn run(&mut self, plan: &Plan, listener: Option<TcpListener>, deadline: Instant) -> std::io::Result<()> {
        let (local, remote) = addresses(plan, self.me);
        let (lport, rport) = ports(self.flow, self.me);
        if self.flow.opener == self.me {
            let socket = bound(SocketAddrV4::new(local, lport))?;
            let to = SockAddr::from(SocketAddr::V4(SocketAddrV4::new(remote, rport)));
            socket.connect_timeout(&to, left(deadline)?)?;
            let mut stream = TcpStream::from(socket);
            stream.set_nodelay(true)?;
            self.send(&mut stream, deadline)?;
            stream.shutdown(Shutdown::Write)?;
            self.receive(&mut stream, deadline)
        } else {
            let listener = listener.ok_or_else(|| std::io::Error::other("no listener"))?;
            let socket = Socket::from(listener);
            socket.set_read_timeout(Some(left(deadline)?))?;
            let (conn, _) = socket.accept()?;
            let mut stream = TcpStream::from(conn);
            stream.set_nodelay(true)?;
            self.receive(&mut stream, deadline)?;
            self.send(&mut stream, deadline)?;
            stream.shutdown(Shutdown::Write)
        }
    }

    fn send(&mut self, stream: &mut TcpStream, deadline: Instant) -> std::io::Result<()> {
        let (len, to_guest) = outgoing(self.flow, self.me);
        let mut source = Stream::new(self.flow.id, to_guest);
        let mut buf = vec![0u8; CHUNK];
        while self.sent < len {
            stream.set_write_timeout(Some(left(deadline)?))?;
            let n = (len - self.sent).min(CHUNK as u64) as usize;
            source.fill(&mut buf[..n]);
            stream.write_all(&buf[..n])?;
            self.sent += n as u64;
        }
        Ok(())
    }

    fn receive(&mut self, stream: &mut TcpStream, deadline: Instant) -> std::io::Result<()> {
        let mut buf = vec![0u8; CHUNK];
        loop {
            stream.set_read_timeout(Some(left(deadline)?))?;
            match stream.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => self.verifier.take(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    fn result(&self, error: Option<String>, elapsed: Duration) -> FlowResult {
        let (_, to_guest) = outgoing(self.flow, self.me);
        let v = &self.verifier;
        let error = error.or_else(|| match v.first_mismatch {
            Some(at) => Some(format!("byte {at} differs from the expected stream")),
            None if v.seen != self.expected => Some(format!("received {} of {} bytes", v.seen, self.expected)),
            None => None,
        });
        FlowResult {
            id: self.flow.id,
            sent: self.sent,
            received: v.seen,
            sent_sha256: sha256_of(self.flow.id, to_guest, self.sent),
            received_sha256: v.sha256(),
            verified: error.is_none(),
            error,
            elapsed_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
        }
    }
}

fn other(side: Side) -> Side {
    match side {
        Side::Guest => Side::Host,
        Side::Host => Side::Guest,
    }
}

/// Time left until `deadline` (at least [`MIN_TIMEOUT`]), or a timeout error.
fn left(deadline: Instant) -> std::io::Result<Duration> {
    let d = deadline.saturating_duration_since(Instant::now());
    if d.is_zero() {
        return Err(std::io::Error::new(ErrorKind::TimedOut, "the plan's time limit passed"));
    }
    Ok(d.max(MIN_TIMEOUT))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::PROTOCOL_VERSION;

    /// Both ends on the loopback interface: 127.0.0.1 plays the peer,
    /// 127.0.0.2 the guest (the whole 127/8 is local).
    #[test]
    fn both_ends_of_every_flow_verify_each_others_bytes() {
        let base = 20_000 + (std::process::id() % 10_000) as u16;
        let flows = (0..4u32)
            .map(|id| FlowSpec {
                id,
                opener: if id % 2 == 0 { Side::Guest } else { Side::Host },
                guest_port: base + id as u16,
                host_port: base + 100 + id as u16,
                to_guest: 50_000 + u64::from(id),
                to_host: 70_000,
            })
            .collect();
        let plan = Plan {
            version: PROTOCOL_VERSION,
            host: Ipv4Addr::new(127, 0, 0, 1),
            guest: Ipv4Addr::new(127, 0, 0, 2),
            flows,
            limit_ms: 20_000,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        let (hl, hf) = listen(&plan, Side::Host);
        let (gl, gf) = listen(&plan, Side::Guest);
        assert!(hf.is_empty() && gf.is_empty(), "{hf:?} {gf:?}");
        let none = BTreeMap::new();
        let (host, guest) = std::thread::scope(|s| {
            let h = s.spawn(|| run(&plan, Side::Host, hl, &none, deadline));
            // The guest end as the guest runs it: threads parked once done.
            let g = s.spawn(|| run_parked(&plan, Side::Guest, gl, &none, deadline));
            (h.join().expect("host"), g.join().expect("guest"))
        });
        for (h, g) in host.iter().zip(&guest) {
            assert!(h.verified && g.verified, "{h:?} {g:?}");
            assert_eq!(h.sent_sha256, g.received_sha256);
            assert_eq!(g.sent_sha256, h.received_sha256);
            assert_eq!(g.sent, 70_000);
        }
    }

    #[test]
    fn a_flow_whose_other_end_never_comes_fails_by_the_deadline() {
        let flow = FlowSpec { id: 0, opener: Side::Host, guest_port: 0, host_port: 0, to_guest: 1, to_host: 1 };
        let plan = Plan::one(Ipv4Addr::new(127, 0, 0, 1), Ipv4Addr::new(127, 0, 0, 3), flow, 200);
        let (gl, _) = listen(&plan, Side::Guest);
        let got = run(&plan, Side::Guest, gl, &BTreeMap::new(), Instant::now() + Duration::from_millis(200));
        assert!(!got[0].verified && got[0].error.is_some(), "{got:?}");
    }
}
