//! Words for user-facing text: a count with its noun in the right number, and an
//! error with its causes on one line.

use std::fmt::Display;

/// `n` and `word`, `word` taking an `s` unless `n` is 1: `plural(1, "pair")` →
/// `1 pair`, `plural(3, "pair")` → `3 pairs`, `plural(0, "flow")` → `0 flows`.
/// For nouns whose plural is not `word` + `s`, see [`plural_as`].
pub fn plural(n: impl Display, word: &str) -> String {
    let n = n.to_string();
    let s = if n == "1" { "" } else { "s" };
    format!("{n} {word}{s}")
}

/// `n` and `one` when `n` is 1, else `n` and `many`: `plural_as(2, "topology",
/// "topologies")` → `2 topologies`.
pub fn plural_as(n: impl Display, one: &str, many: &str) -> String {
    let n = n.to_string();
    let word = if n == "1" { one } else { many };
    format!("{n} {word}")
}

/// `one` when `n` is 1, else `many`: the word that agrees with a count, such as the
/// verb after a list of CPUs (`CPU 7 is`, `CPUs 4-7 are`; see
/// [`CpuMask::named`](crate::cpulist::CpuMask::named)).
pub fn agree<'a>(n: impl Display, one: &'a str, many: &'a str) -> &'a str {
    if n.to_string() == "1" {
        one
    } else {
        many
    }
}

/// `err` and its causes (its [`source`](std::error::Error::source) chain),
/// outermost first, joined by `: ` — `booting seed-002 on Linux 6.12: QEMU exited
/// (exit status: 1)`: the one way an error becomes a line for a user.
///
/// The project's errors print a cause in their own message or return it as their
/// source, never both (ARCHITECTURE.md, "Errors"), so each cause appears once.
pub fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("booting {0}")]
    struct Booting(&'static str, #[source] std::io::Error);

    #[test]
    fn a_chain_is_every_cause_outermost_first() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no qemu");
        assert_eq!(chain(&Booting("seed-002", io)), "booting seed-002: no qemu");
        assert_eq!(chain(&std::io::Error::other("alone")), "alone");
    }

    #[test]
    fn one_takes_the_singular_and_every_other_count_the_plural() {
        assert_eq!(plural(1usize, "pair"), "1 pair");
        assert_eq!(plural(0u32, "pair"), "0 pairs");
        assert_eq!(plural(2u64, "document"), "2 documents");
        assert_eq!(plural(11usize, "check"), "11 checks");
        assert_eq!(plural_as(1u32, "topology", "topologies"), "1 topology");
        assert_eq!(plural_as(21u32, "topology", "topologies"), "21 topologies");
        assert_eq!(agree(1u32, "is", "are"), "is");
        assert_eq!(agree(4u32, "is", "are"), "are");
    }
}
