//! The NIC's `/proc/interrupts` lines in the report: the compact `irqcount:` form
//! (guest-images/init.sh `IRQ_AWK`; every version) and the raw
//! `interrupts-header:` + `interrupts:` form of version 1 agents.

/// One IRQ's line: the IRQ, its counts indexed by CPU, and the action name (`-` if none).
pub(super) type IrqLine = (u32, Vec<u64>, String);

/// One compact `/proc/interrupts` line as the guest agent prints it after
/// `irqcount: `: `IRQ CPU=COUNT,… | CHIP HWIRQ NAME`, with only the CPUs whose count
/// is not zero (`-` for none). Returns the IRQ, the counts indexed by CPU (at
/// least `nr_cpus` long) and the action name (`-` if the line has none).
pub(super) fn parse_irq_counts(text: &str, nr_cpus: usize) -> Result<IrqLine, String> {
    let (counts_part, rest) = text.split_once('|').ok_or("no `|` between the counts and the chip")?;
    let mut it = counts_part.split_whitespace();
    let irq: u32 = it.next().and_then(|n| n.parse().ok()).ok_or("no IRQ number")?;
    let list = it.next().ok_or("no counts")?;
    if let Some(extra) = it.next() {
        return Err(format!("{extra:?} after the counts: CPU=COUNT pairs are separated by commas"));
    }
    let counts = parse_cpu_counts(list, nr_cpus)?;
    // CHIP HWIRQ NAME: the name is the last field when there are three or more.
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let name = if fields.len() >= 3 { fields[fields.len() - 1].to_string() } else { "-".to_string() };
    Ok((irq, counts, name))
}

/// A compact count list, `CPU=COUNT,…` with only the non-zero CPUs (`-` for
/// none), as counts indexed by CPU (at least `nr_cpus` long).
pub(super) fn parse_cpu_counts(list: &str, nr_cpus: usize) -> Result<Vec<u64>, String> {
    let mut pairs: Vec<(usize, u64)> = Vec::new();
    let mut listed = std::collections::HashSet::new();
    if list != "-" {
        for pair in list.split(',') {
            let (cpu, count) = pair.split_once('=').ok_or_else(|| format!("count {pair:?} is not CPU=COUNT"))?;
            let cpu: u32 = cpu.parse().map_err(|_| format!("CPU {cpu:?} is not a number"))?;
            let count: u64 = count.parse().map_err(|_| format!("count {count:?} is not a number"))?;
            if cpu >= crate::cpulist::MAX_CPUS {
                return Err(format!("CPU {cpu} is beyond {}", crate::cpulist::MAX_CPUS));
            }
            if !listed.insert(cpu) {
                return Err(format!("CPU {cpu} is listed twice"));
            }
            pairs.push((cpu as usize, count));
        }
    }
    let len = pairs.iter().map(|(c, _)| c + 1).max().unwrap_or(0).max(nr_cpus);
    let mut counts = vec![0u64; len];
    for (cpu, count) in pairs {
        counts[cpu] = count;
    }
    Ok(counts)
}

/// The CPU columns of a version 1 `interrupts-header:` value (`CPU0 CPU1 …`:
/// the online CPUs, as /proc/interrupts' first line names them).
pub(super) fn header_columns(header: &str) -> Vec<u32> {
    header.split_whitespace().filter_map(|c| c.strip_prefix("CPU").and_then(|n| n.parse().ok())).collect()
}

/// One raw /proc/interrupts line of a version 1 report (`IRQ: COUNT… CHIP HWIRQ
/// NAME`), with one count per column of [`header_columns`].
pub(super) fn parse_raw_interrupts(text: &str, columns: &[u32]) -> Result<IrqLine, String> {
    let mut it = text.split_whitespace();
    let irq: u32 = it
        .next()
        .and_then(|f| f.strip_suffix(':'))
        .and_then(|n| n.parse().ok())
        .ok_or("interrupts line without an IRQ number")?;
    let rest: Vec<&str> = it.collect();
    if rest.len() < columns.len() {
        return Err(format!("fewer counts than the {} CPU columns", columns.len()));
    }
    let max_cpu = columns.iter().max().map_or(0, |m| *m as usize + 1);
    let mut counts = vec![0u64; max_cpu];
    for (col, cpu) in columns.iter().enumerate() {
        counts[*cpu as usize] = rest[col].parse().map_err(|_| format!("count {:?} is not a number", rest[col]))?;
    }
    let name = rest.last().filter(|_| rest.len() > columns.len()).map_or("-".into(), |n| n.to_string());
    Ok((irq, counts, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_irq_lines_parse_sparse_counts_and_reject_garbage() {
        let (irq, counts, name) =
            parse_irq_counts("61 3=1,255=7 | IR-PCI-MSIX-0000:41:00.0 5-edge mana_q4@pci:0000:41:00.0", 256)
                .expect("line");
        assert_eq!((irq, counts.len(), counts[3], counts[255], counts.iter().sum::<u64>()), (61, 256, 1, 7, 8));
        assert_eq!(name, "mana_q4@pci:0000:41:00.0");
        let (_, counts, _) = parse_irq_counts("30 - | PCI-MSIX-0000:41:00.0 1-edge mana_q0", 8).expect("never fired");
        assert_eq!(counts, vec![0; 8]);
        for bad in [
            "30 0=1 PCI-MSIX",
            "x 0=1 | a b c",
            "30 | a b c",
            "30 0:1 | a b c",
            "30 0=x | a b c",
            "30 99999=1 | a b c",
            "30 0=1 1=1 | a b c",
            "30 7=1,7=2 | a b c",
        ] {
            assert!(parse_irq_counts(bad, 8).is_err(), "{bad}");
        }
    }

    #[test]
    fn raw_version_1_lines_parse_by_the_header_columns() {
        let columns = header_columns("CPU0 CPU1 CPU3");
        assert_eq!(columns, [0, 1, 3]);
        let (irq, counts, name) =
            parse_raw_interrupts("24: 3 0 5 PCI-MSIX-0000:41:00.0 0-edge mana_hwc", &columns).expect("line");
        assert_eq!((irq, counts, name.as_str()), (24, vec![3, 0, 0, 5], "mana_hwc"));
        assert!(parse_raw_interrupts("24: 3", &columns).is_err());
        assert!(parse_raw_interrupts("x: 1 2 3", &columns).is_err());
        assert!(parse_raw_interrupts("24: 1 x 3 chip", &columns).is_err());
    }
}
