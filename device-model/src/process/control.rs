//! The device's end of the control channel of `mana-device --control stdio`
//! ([`mana_device_api::control`]: framing and types): answers the status and
//! liveness requests of whoever started the device (the rig,
//! harness/crates/rig/src/rig/device.rs) on stdin/stdout, and raises the
//! device events it asks for.
#![forbid(unsafe_code)]

use crate::shell::server::StatusHandle;
use mana_device_api::control::{Op, Reply, Request, Response};
use mana_device_api::inject::DeviceEvent;
use std::io::{self, BufRead, Write};

/// Answers requests from `input` on `output` until `input` ends (returns
/// `Ok`), flushing after each response. [`Op::Raise`] calls `raise`, which
/// returns whether the event reached the driver
/// ([`crate::ManaDevice::raise_event`]; false before the core exists).
///
/// # Errors
/// Reading `input` or writing `output` fails (the controller is gone).
pub fn serve(
    input: impl BufRead,
    mut output: impl Write,
    device: &StatusHandle,
    raise: &dyn Fn(DeviceEvent) -> bool,
) -> io::Result<()> {
    for line in input.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let response = match serde_json::from_str::<Request>(&line) {
            Ok(Request { id, op: Op::Ping }) => {
                device.ping();
                Response { id, reply: Reply::Pong }
            }
            Ok(Request { id, op: Op::Status }) => {
                Response { id, reply: Reply::Status(Box::new(device.device_status())) }
            }
            Ok(Request { id, op: Op::Raise(event) }) => Response { id, reply: Reply::Raised(raise(event)) },
            Err(err) => Response { id: 0, reply: Reply::Error(format!("not a control request: {err}")) },
        };
        let mut text = serde_json::to_string(&response).map_err(io::Error::other)?;
        text.push('\n');
        output.write_all(text.as_bytes())?;
        output.flush()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::locked_core::mana_core;
    use crate::shell::server::DeviceServer;
    use mana_device_api::config::DeviceConfig;

    fn server(dir: &std::path::Path) -> DeviceServer {
        let config = DeviceConfig { msix_table_size: 9, ..DeviceConfig::default() };
        let (factory, core) = mana_core(&config);
        let server = DeviceServer::bind(&dir.join("dev.sock"), config, factory).expect("bind");
        server.set_core_status(core);
        server
    }

    fn responses(output: &[u8]) -> Vec<Response> {
        output
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).expect("a response line"))
            .collect()
    }

    #[test]
    fn ping_and_status_are_answered_in_order_with_their_ids_and_typed_status() {
        let dir = tempfile::tempdir().expect("tempdir");
        let server = server(dir.path());
        let input = [Request { id: 7, op: Op::Ping }, Request { id: 8, op: Op::Status }]
            .map(|r| serde_json::to_string(&r).expect("json"))
            .join("\n");
        let mut output = Vec::new();
        serve(input.as_bytes(), &mut output, &server.status_handle(), &|_| false).expect("serve");
        let got = responses(&output);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0], Response { id: 7, reply: Reply::Pong });
        let Reply::Status(status) = &got[1].reply else {
            panic!("expected a status, got {:?}", got[1]);
        };
        assert_eq!(got[1].id, 8);
        assert_eq!(status.shell.config.msix_table_size, 9);
        let core = status.core.as_ref().expect("the core is built with the server");
        assert!(core.eqs.is_empty() && core.hwc.is_none(), "{core:?}");
        // What the device sent is what its own status is, read back typed.
        assert_eq!(**status, server.status_handle().device_status());
    }

    #[test]
    fn a_line_that_is_not_a_request_gets_an_error_and_the_channel_stays_open() {
        let dir = tempfile::tempdir().expect("tempdir");
        let server = server(dir.path());
        let input = "status please\n{\"id\":3,\"op\":\"Ping\"}\n";
        let mut output = Vec::new();
        serve(input.as_bytes(), &mut output, &server.status_handle(), &|_| false).expect("serve");
        let got = responses(&output);
        assert_eq!(got.len(), 2);
        assert!(
            matches!(&got[0], Response { id: 0, reply: Reply::Error(e) } if e.contains("not a control request")),
            "{got:?}"
        );
        assert_eq!(got[1], Response { id: 3, reply: Reply::Pong });
    }

    #[test]
    fn a_raise_request_reaches_the_device_and_says_whether_the_driver_got_the_event() {
        let dir = tempfile::tempdir().expect("tempdir");
        let server = server(dir.path());
        let input = "{\"id\":4,\"op\":{\"Raise\":\"link-down\"}}\n{\"id\":5,\"op\":{\"Raise\":\"link-up\"}}\n";
        let asked = std::cell::RefCell::new(Vec::new());
        let raise = |e: DeviceEvent| {
            asked.borrow_mut().push(e);
            e == DeviceEvent::LinkDown
        };
        let mut output = Vec::new();
        serve(input.as_bytes(), &mut output, &server.status_handle(), &raise).expect("serve");
        assert_eq!(
            responses(&output),
            [Response { id: 4, reply: Reply::Raised(true) }, Response { id: 5, reply: Reply::Raised(false) }]
        );
        assert_eq!(*asked.borrow(), [DeviceEvent::LinkDown, DeviceEvent::LinkUp]);
    }
}
