//! What the launcher reads while the guest runs: the serial console and, when
//! the agent reports on its own channel, that channel ([`super::report_port`]).
//! Reader threads ([`spawn_reader`]) turn each stream into lines; a small state
//! machine ([`Watch::line`]) decides from each line whether to keep waiting,
//! whether the report has ended (its end marker, [`crate::guest_protocol::markers`])
//! or whether the guest panicked. It never parses the report: that is done once
//! afterwards, on [`Watch::agent_output`].

use super::go_ahead::GoAheadPort;
use crate::guest_protocol::Marker;
use std::collections::VecDeque;
use std::io::{BufRead, Write};
use std::sync::mpsc::Sender;
use std::time::Instant;

/// Console lines kept for error messages.
const TAIL_LINES: usize = 40;

/// The kernel's panic line (kernel/panic.c `panic()`).
const PANIC: &str = "Kernel panic - not syncing";

/// Where a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The serial console (ttyS0): kernel messages and the agent's own notes.
    Console,
    /// The report channel (ttyS1), when the agent reports there.
    Report,
}

/// A reader thread's message.
#[derive(Debug)]
pub enum Msg {
    /// One line, without its line ending, and when its reader read it.
    Line(Source, String, Instant),
    /// The stream ended (QEMU closed it: it is exiting).
    Eof(Source),
    /// The caller ended the boot ([`super::BootAbort::abort`]).
    Abort,
}

/// What the launcher does after a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Keep reading.
    Wait,
    /// The report's end marker arrived: stop QEMU.
    ReportEnded,
    /// The kernel panicked (first panic line): collect the rest of its message briefly.
    Panicked,
}

/// The lines read so far and what they mean.
pub struct Watch {
    console: String,
    report: String,
    last: VecDeque<String>,
    log: Option<std::fs::File>,
    panicked: bool,
    moments: Moments,
}

/// When the lines that mark a boot's phases were read (host clock, the moment
/// their reader thread read them): the boot's split in `cargo xtask bench boot`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Moments {
    /// The first console line: the kernel's first message that passes `quiet`
    /// (with the speed-ups' command line, 6.12-min's early `mitigations` notice).
    pub first_output: Option<Instant>,
    /// The report's begin marker (the agent starts its report).
    pub report_begin: Option<Instant>,
}

impl Watch {
    /// A watch that also writes every line to `log` as it arrives (`--console`).
    pub fn new(log: Option<std::fs::File>) -> Watch {
        Watch {
            console: String::new(),
            report: String::new(),
            last: VecDeque::new(),
            log,
            panicked: false,
            moments: Moments::default(),
        }
    }

    /// Take one line from `source`, read now.
    pub fn line(&mut self, source: Source, line: &str) -> Step {
        self.line_read_at(source, line, Instant::now())
    }

    /// Take one line from `source` that its reader read at `at` (the boot's
    /// moments are when lines were read, not when the watch got to them).
    pub fn line_read_at(&mut self, source: Source, line: &str, at: Instant) -> Step {
        self.keep(source, line, at);
        match Marker::parse(line) {
            Some(Marker::ReportEnd) => return Step::ReportEnded,
            Some(Marker::ReportBegin(_)) if self.moments.report_begin.is_none() => {
                self.moments.report_begin = Some(at);
            }
            _ => {}
        }
        if source == Source::Console {
            self.remember_in_tail(line);
            if line.contains(PANIC) && !self.panicked {
                self.panicked = true;
                return Step::Panicked;
            }
        }
        Step::Wait
    }

    /// Keep a console line its reader read at `at` but the wait had not taken
    /// when the report ended (the readers run on their own threads): it goes
    /// to the console and its log, and may be the first console line, but
    /// nothing after the report's end is judged (a marker, a panic).
    pub fn keep_late_console_line(&mut self, line: &str, at: Instant) {
        self.keep(Source::Console, line, at);
        self.remember_in_tail(line);
    }

    /// Writes `line` to the log and its source's text; the first console line's moment.
    fn keep(&mut self, source: Source, line: &str, at: Instant) {
        if let Some(f) = self.log.as_mut() {
            // A failing log must not fail the boot; the console is still kept.
            let _ = writeln!(f, "{line}");
        }
        let text = match source {
            Source::Console => &mut self.console,
            Source::Report => &mut self.report,
        };
        text.push_str(line);
        text.push('\n');
        if source == Source::Console {
            self.moments.first_output.get_or_insert(at);
        }
    }

    /// The console's last [`TAIL_LINES`] lines, for error messages.
    fn remember_in_tail(&mut self, line: &str) {
        if self.last.len() == TAIL_LINES {
            self.last.pop_front();
        }
        self.last.push_back(line.to_string());
    }

    /// Nothing has arrived on the console yet.
    pub fn silent(&self) -> bool {
        self.console.is_empty()
    }

    /// When the first console line and the report's begin marker were taken.
    pub fn moments(&self) -> Moments {
        self.moments
    }

    /// The kernel printed its panic line.
    pub fn panicked(&self) -> bool {
        self.panicked
    }

    /// The last console lines, for error messages.
    pub fn tail(&self) -> String {
        if self.last.iter().all(|l| l.trim().is_empty()) {
            return "(none: the guest printed nothing on its console)".to_string();
        }
        self.last.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    /// The text that holds the agent's stages and report: the report channel when
    /// a block began there, else the console (the agent reports there when it was
    /// not asked to use the channel or could not open it).
    pub fn agent_output(&self) -> (Source, &str) {
        let began = |text: &str| text.lines().any(|l| Marker::parse(l).is_some_and(|m| m.is_begin()));
        if began(&self.report) {
            (Source::Report, &self.report)
        } else {
            (Source::Console, &self.console)
        }
    }

    /// The whole console.
    pub fn into_console(self) -> String {
        self.console
    }
}

/// Read `stream` line by line into `tx` as `source` until it ends (or until a line
/// ends with `stop`: what came before it on that line is the last), calling `hook`
/// with every begin marker and soak mark ([`Marker::is_live`]) as soon as it is
/// read (so that the caller's snapshot is as close to the guest's moment as the
/// stream allows, and a soak's link event comes when the guest asks), then
/// answering a mark the agent waits at on `answer`, the same port's input
/// ([`GoAheadPort::answer`]); [`Msg::Eof`] at the end. Once `tx`'s receiver is
/// gone the stream is still read to its end, so that its writer never waits on it.
pub fn forward_lines(
    source: Source,
    stream: impl std::io::Read,
    tx: &Sender<Msg>,
    hook: Option<&MarkerHook>,
    stop: Option<&str>,
    mut answer: Option<GoAheadPort>,
) {
    let mut r = std::io::BufReader::new(stream);
    let mut buf = Vec::new();
    let mut receiving = true;
    while matches!(r.read_until(b'\n', &mut buf), Ok(n) if n > 0) {
        let mut line = String::from_utf8_lossy(&buf).trim_end_matches(['\n', '\r']).to_string();
        buf.clear();
        let last = stop.and_then(|s| line.strip_suffix(s)).map(str::len);
        if let Some(len) = last {
            line.truncate(len);
            if line.is_empty() {
                break;
            }
        }
        // The line goes to the watch first (it notes when the report began),
        // then to the hook, whose snapshot holds this reader up, and only then
        // is a waiting agent answered.
        let marker = Marker::parse(&line).map(|m| (m, line.trim_end().to_owned()));
        receiving = receiving && tx.send(Msg::Line(source, line, Instant::now())).is_ok();
        if let Some((marker, line)) = marker {
            if let (Some(hook), true) = (hook, marker.is_live()) {
                (hook.0)(&line);
            }
            if let Some(port) = answer.as_mut() {
                port.answer(&marker, &line);
            }
        }
        if last.is_some() {
            break;
        }
    }
    let _ = tx.send(Msg::Eof(source));
}

/// [`forward_lines`] on a thread of its own.
pub fn spawn_reader(
    source: Source,
    stream: impl std::io::Read + Send + 'static,
    tx: Sender<Msg>,
    hook: Option<MarkerHook>,
    answer: Option<GoAheadPort>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || forward_lines(source, stream, &tx, hook.as_ref(), None, answer))
}

/// A hook that records the lines it is called with (tests).
/// A callback for [`super::BootRequest::on_marker`].
#[derive(Clone)]
pub struct MarkerHook(pub std::sync::Arc<dyn Fn(&str) + Send + Sync>);

impl std::fmt::Debug for MarkerHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MarkerHook")
    }
}

#[cfg(test)]
pub(crate) fn recording_hook() -> (MarkerHook, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let hook = {
        let seen = std::sync::Arc::clone(&seen);
        MarkerHook(std::sync::Arc::new(move |line: &str| seen.lock().expect("lock").push(line.to_owned())))
    };
    (hook, seen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_end_stops_the_wait_from_either_source_and_only_it() {
        let mut w = Watch::new(None);
        assert_eq!(w.line(Source::Console, "[    0.1] booting"), Step::Wait);
        assert_eq!(w.line(Source::Report, "MANARIG-REPORT-BEGIN 2"), Step::Wait);
        assert_eq!(w.line(Source::Report, "kernel: 6.12"), Step::Wait);
        assert_eq!(w.line(Source::Console, "MANARIG-REPORT-END x"), Step::Wait);
        assert_eq!(w.line(Source::Report, "MANARIG-REPORT-END\r"), Step::ReportEnded);
        assert_eq!(w.agent_output().0, Source::Report);
        let mut fallback = Watch::new(None);
        fallback.line(Source::Console, "MANARIG-REPORT-BEGIN 2");
        assert_eq!(fallback.line(Source::Console, "MANARIG-REPORT-END"), Step::ReportEnded);
        assert_eq!(fallback.agent_output(), (Source::Console, "MANARIG-REPORT-BEGIN 2\nMANARIG-REPORT-END\n"));
    }

    #[test]
    fn the_first_console_line_and_the_report_begin_are_stamped_once_in_order() {
        let mut w = Watch::new(None);
        w.line(Source::Report, "MANARIG-STAGE-BEGIN first-probe");
        assert_eq!(w.moments(), Moments::default(), "a stage and the report channel stamp nothing");
        w.line(Source::Console, "Kernel compiled without mitigations, ignoring 'mitigations'");
        let first = w.moments().first_output.expect("first console line");
        w.line(Source::Console, "second line");
        w.line(Source::Report, "MANARIG-REPORT-BEGIN 3");
        let begin = w.moments().report_begin.expect("report begin");
        w.line(Source::Report, "MANARIG-REPORT-BEGIN 3");
        assert_eq!(w.moments(), Moments { first_output: Some(first), report_begin: Some(begin) });
        assert!(first <= begin);
    }

    #[test]
    fn a_panic_on_the_console_is_seen_once_and_kept_in_the_tail() {
        let mut w = Watch::new(None);
        assert!(w.silent());
        assert_eq!(w.line(Source::Console, "Kernel panic - not syncing: VFS"), Step::Panicked);
        assert_eq!(w.line(Source::Console, "Kernel panic - not syncing: again"), Step::Wait);
        assert!(w.panicked() && !w.silent());
        assert!(w.tail().contains("VFS"));
        assert_eq!(Watch::new(None).tail(), "(none: the guest printed nothing on its console)");
        for i in 0..100 {
            w.line(Source::Console, &format!("line {i}"));
        }
        assert_eq!(w.tail().lines().count(), TAIL_LINES);
        assert!(w.tail().ends_with("line 99"));
    }

    #[test]
    fn the_reader_calls_the_hook_at_begin_markers_and_ends_with_eof() {
        let (hook, seen) = recording_hook();
        let (tx, rx) = std::sync::mpsc::channel();
        let text = "a\r\nMANARIG-STAGE-BEGIN first-probe\r\nMANARIG-STAGE-END\r\nMANARIG-REPORT-BEGIN 2\r\nlast";
        spawn_reader(Source::Report, std::io::Cursor::new(text), tx, Some(hook), None).join().expect("reader");
        let msgs: Vec<Msg> = rx.iter().collect();
        assert_eq!(msgs.len(), 6);
        assert!(matches!(&msgs[4], Msg::Line(Source::Report, l, _) if l == "last"));
        assert!(matches!(msgs[5], Msg::Eof(Source::Report)));
        assert_eq!(*seen.lock().expect("lock"), ["MANARIG-STAGE-BEGIN first-probe", "MANARIG-REPORT-BEGIN 2"]);
    }

    #[test]
    fn a_stop_line_ends_the_stream_keeping_what_came_before_it_on_its_line() {
        let (tx, rx) = std::sync::mpsc::channel();
        forward_lines(Source::Report, std::io::Cursor::new("a\r\nb<stop>\nignored\n"), &tx, None, Some("<stop>"), None);
        let lines: Vec<String> =
            rx.try_iter().filter_map(|m| if let Msg::Line(_, l, _) = m { Some(l) } else { None }).collect();
        assert_eq!(lines, ["a", "b"]);
        forward_lines(Source::Report, std::io::Cursor::new("a\n<stop>\nignored\n"), &tx, None, Some("<stop>"), None);
        let msgs: Vec<Msg> = rx.try_iter().collect();
        assert!(matches!(&msgs[..], [Msg::Line(_, a, _), Msg::Eof(Source::Report)] if a == "a"), "{msgs:?}");
        // Without a receiver the stream is still read to its end.
        drop(rx);
        forward_lines(Source::Console, std::io::Cursor::new("x\ny\n"), &tx, None, None, None);
    }
}
