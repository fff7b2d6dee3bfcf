//! Text as people paste it: one or more command outputs, each optionally after a shell
//! prompt line (`$ lscpu`, `# numactl -H`, `user@host:~$ cat /sys/class/net/eth0/device/numa_node`),
//! with elided lines (`..`, `...`, `[...]`) anywhere.
//!
//! The text is cut into sections: at every prompt, and where the output changes from one
//! command's to another's without a prompt (`lscpu` then `numactl -H` pasted back to
//! back). Each section is read by its command's reader: plain `lscpu`, `lscpu -p`,
//! `lscpu -e`, `numactl -H`, or the value of a `numa_node` file (the NIC's node).

use super::error::{ErrorKind, ImportError, Origin};
use super::facts::{Facts, NicFact, Sourced};
use super::{lscpu, numactl};

/// One line of an input, with its 1-based number.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Line<'a> {
    /// 1-based line number in the input.
    pub(crate) no: usize,
    /// The line, without its end-of-line characters.
    pub(crate) text: &'a str,
}

/// Whether a line stands for lines left out (`..`, `...`, `…`, `[...]`, `(..)`).
pub(crate) fn is_elision(text: &str) -> bool {
    let t = text.trim();
    !t.is_empty()
        && t.chars().any(|c| c == '.' || c == '…')
        && t.chars().all(|c| matches!(c, '.' | '…' | '[' | ']' | '(' | ')' | ' '))
}

/// Which command's output a section holds.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// Not known yet (text before any recognisable line).
    Undetected,
    /// Plain `lscpu`.
    Summary,
    /// `lscpu -p`.
    Parsable,
    /// `lscpu -e`.
    Extended,
    /// `numactl -H`.
    Numactl,
    /// `cat …/numa_node`: the interface, if the path names one.
    NumaNode(Option<String>),
}

/// The command a prompt line runs, if `text` is a prompt line: `$ cmd`, `# cmd`, or
/// `user@host:~$ cmd`. `#` lines count only when a known command follows (an `lscpu -p`
/// comment is not a prompt).
fn prompt_command(text: &str) -> Option<&str> {
    let t = text.trim();
    let known = |cmd: &str| ["lscpu", "numactl", "cat"].contains(&cmd.split_whitespace().next().unwrap_or(""));
    if let Some(cmd) = t.strip_prefix("$ ") {
        return Some(cmd.trim());
    }
    if let Some(cmd) = t.strip_prefix("# ") {
        return known(cmd).then_some(cmd.trim());
    }
    // `user@host:~$ cmd`: a prompt is one word ending in `$` or `#`.
    let (prompt, cmd) = t.split_once(' ')?;
    ((prompt.ends_with('$') || prompt.ends_with('#')) && prompt.len() > 1 && known(cmd)).then_some(cmd.trim())
}

/// The section kind a prompt's command starts.
fn kind_of_command(file: &str, no: usize, cmd: &str) -> Result<Kind, ImportError> {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let args = words.get(1..).unwrap_or(&[]);
    let has = |flags: &[&str]| args.iter().any(|a| flags.iter().any(|f| a == f || a.starts_with(&format!("{f}="))));
    match words.first().copied() {
        Some("lscpu") if has(&["-p", "--parse"]) => Ok(Kind::Parsable),
        Some("lscpu") if has(&["-e", "--extended"]) => Ok(Kind::Extended),
        Some("lscpu") => Ok(Kind::Summary),
        Some("numactl") if has(&["-H", "--hardware"]) => Ok(Kind::Numactl),
        Some("cat") if args.len() == 1 && args[0].ends_with("/numa_node") => {
            // /sys/class/net/IF/device/numa_node names the interface.
            let parts: Vec<&str> = args[0].split('/').collect();
            let interface = parts.windows(2).find(|w| w[0] == "net").map(|w| w[1].to_owned());
            Ok(Kind::NumaNode(interface))
        }
        _ => Err(ImportError::new(
            ErrorKind::Unknown,
            Origin::line(file, no),
            format!(
                "unknown command `{cmd}`: the importer reads lscpu, lscpu -p, lscpu -e, numactl -H and cat …/numa_node"
            ),
        )),
    }
}

/// The kind a line without a prompt shows, if it starts a command's output.
fn kind_of_line(text: &str) -> Option<Kind> {
    if numactl::is_numactl_line(text) {
        Some(Kind::Numactl)
    } else if lscpu::is_parsable_header(text) {
        Some(Kind::Parsable)
    } else if lscpu::is_extended_header(text) {
        Some(Kind::Extended)
    } else if lscpu::is_summary_line(text) {
        Some(Kind::Summary)
    } else {
        None
    }
}

struct Section<'a> {
    kind: Kind,
    lines: Vec<Line<'a>>,
}

fn sections<'a>(file: &str, text: &'a str) -> Result<Vec<Section<'a>>, ImportError> {
    let mut out: Vec<Section<'a>> = vec![Section { kind: Kind::Undetected, lines: Vec::new() }];
    for (i, raw) in text.lines().enumerate() {
        let line = Line { no: i + 1, text: raw.trim_end_matches('\r') };
        if let Some(cmd) = prompt_command(line.text) {
            let kind = kind_of_command(file, line.no, cmd)?;
            out.push(Section { kind, lines: Vec::new() });
            continue;
        }
        let t = line.text.trim();
        let meaningful = !t.is_empty() && !is_elision(t);
        if let (true, Some(cur)) = (meaningful, out.last_mut()) {
            {
                match (&cur.kind, kind_of_line(t)) {
                    (Kind::Undetected, Some(k)) => cur.kind = k,
                    (Kind::Undetected, None) => {
                        return Err(ImportError::new(
                            ErrorKind::Unknown,
                            Origin::line(file, line.no),
                            format!("{t:?} is not from lscpu, lscpu -p, lscpu -e or numactl -H"),
                        ))
                    }
                    // Outputs pasted back to back (with or without a prompt before the first):
                    // numactl after lscpu, or lscpu after numactl. Neither prints the other's lines.
                    (Kind::Summary, Some(Kind::Numactl)) => {
                        out.push(Section { kind: Kind::Numactl, lines: Vec::new() })
                    }
                    (Kind::Numactl, Some(Kind::Summary))
                        if lscpu::is_summary_line(t) && !numactl::is_numactl_line(t) =>
                    {
                        out.push(Section { kind: Kind::Summary, lines: Vec::new() })
                    }
                    _ => {}
                }
            }
        }
        if let Some(cur) = out.last_mut() {
            cur.lines.push(line);
        }
    }
    Ok(out)
}

/// The value of a `numa_node` file: one integer, -1 for NUMA_NO_NODE.
fn read_numa_node(file: &str, interface: Option<String>, lines: &[Line<'_>]) -> Result<Facts, ImportError> {
    let mut values = lines.iter().filter(|l| !l.text.trim().is_empty() && !is_elision(l.text));
    let Some(line) = values.next() else {
        return Err(ImportError::new(ErrorKind::Truncated, Origin::file(file), "`cat …/numa_node` without its value"));
    };
    let here = Origin::line(file, line.no);
    let value: i64 = line.text.trim().parse().map_err(|_| {
        ImportError::new(
            ErrorKind::Unknown,
            here.clone(),
            format!("{:?} is not a numa_node value (a node id or -1)", line.text.trim()),
        )
    })?;
    if let Some(extra) = values.next() {
        return Err(ImportError::new(
            ErrorKind::Unknown,
            Origin::line(file, extra.no),
            format!(
                "{:?} after the numa_node value (put each command after its own `$ command` line)",
                extra.text.trim()
            ),
        ));
    }
    let node = match value {
        -1 => None,
        v => Some(u32::try_from(v).map_err(|_| {
            ImportError::new(ErrorKind::Unknown, here.clone(), format!("numa_node {v} is neither a node id nor -1"))
        })?),
    };
    let mut facts = Facts::default();
    facts.read.push(format!("numa_node of {}", interface.as_deref().unwrap_or("the NIC")));
    facts.nics.push(Sourced::new(NicFact { interface, node, mana: false }, here));
    Ok(facts)
}

/// Read a text paste: lscpu (any form), numactl -H and `numa_node` values, in any order.
///
/// # Errors
/// [`ErrorKind::Unknown`] for an unknown command or line, and whatever the section's
/// reader or [`Facts::merge`] finds; [`ErrorKind::Truncated`] for a paste with no output.
pub(crate) fn read(file: &str, text: &str) -> Result<Facts, ImportError> {
    let mut facts = Facts::default();
    let mut any = false;
    for s in sections(file, text)? {
        let section = match s.kind {
            // A prompt always names a command kind; only leading blank or elided lines stay here.
            Kind::Undetected => continue,
            Kind::Summary => lscpu::read_summary(file, &s.lines)?,
            Kind::Parsable => lscpu::read_parsable(file, &s.lines)?,
            Kind::Extended => lscpu::read_extended(file, &s.lines)?,
            Kind::Numactl => numactl::read(file, &s.lines)?,
            Kind::NumaNode(interface) => read_numa_node(file, interface, &s.lines)?,
        };
        any = true;
        facts.merge(section)?;
    }
    if !any {
        return Err(ImportError::new(
            ErrorKind::Truncated,
            Origin::file(file),
            "no lscpu or numactl output in the file",
        ));
    }
    Ok(facts)
}
