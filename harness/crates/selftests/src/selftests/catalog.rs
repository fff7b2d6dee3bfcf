//! Which drivers/net selftests a run runs: the ones the rig knows to judge
//! the emulated MANA (docs/selftests.md says what each checks), the sets CI
//! uses, and `--tests GLOB,…` over the test files a tree has.

/// How a test reaches the NIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// `NetDrvEnv`: the local interface only (`NETIF`).
    Local,
    /// `NetDrvEpEnv`: traffic with the remote end (the second NIC in netns `remote`).
    Endpoint,
}

/// A test the rig runs by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownTest {
    /// Path relative to `tools/testing/selftests/drivers/net/`.
    pub file: &'static str,
    /// Local or with the remote end.
    pub reach: Reach,
    /// In the quick set CI runs on every change ([`QUICK`]).
    pub quick: bool,
}

/// The tests the rig runs without `--tests` (those of them a tree has: Linux
/// 6.12 has queues.py, stats.py, ping.py and hw/csum.py).
pub const KNOWN: &[KnownTest] = &[
    KnownTest { file: "queues.py", reach: Reach::Local, quick: true },
    KnownTest { file: "stats.py", reach: Reach::Local, quick: true },
    KnownTest { file: "napi_threaded.py", reach: Reach::Local, quick: true },
    KnownTest { file: "hw/rss_api.py", reach: Reach::Local, quick: true },
    KnownTest { file: "hw/rss_drv.py", reach: Reach::Local, quick: true },
    KnownTest { file: "ping.py", reach: Reach::Endpoint, quick: true },
    KnownTest { file: "hw/toeplitz.py", reach: Reach::Endpoint, quick: true },
    KnownTest { file: "hw/csum.py", reach: Reach::Endpoint, quick: false },
    KnownTest { file: "ring_reconfig.py", reach: Reach::Endpoint, quick: false },
    KnownTest { file: "napi_id.py", reach: Reach::Endpoint, quick: false },
    KnownTest { file: "gro.py", reach: Reach::Endpoint, quick: false },
];

/// `--tests quick`: the local-only tests, ping.py and hw/toeplitz.py (what CI
/// runs on seed 002 in its default profile).
pub const QUICK: &str = "quick";

/// Errors selecting tests.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SelectError {
    /// A pattern matched no test file of the tree.
    #[error("--tests {pattern}: no test file of {source_label} matches (it has: {have})")]
    NoMatch {
        /// The pattern.
        pattern: String,
        /// The tree's source.
        source_label: String,
        /// The test files there are.
        have: String,
    },
}

/// The tests to run from a tree with `tests` (relative to drivers/net):
/// without patterns the [`KNOWN`] ones it has, in that order; with patterns
/// (`*` matches any run of characters, `?` one; [`QUICK`] names the quick
/// set) every matching file, known ones first in their order, then the rest
/// sorted.
///
/// # Errors
/// [`SelectError::NoMatch`] for a pattern that matches nothing.
pub fn select(tests: &[String], patterns: &[String], source_label: &str) -> Result<Vec<String>, SelectError> {
    let has = |f: &str| tests.iter().any(|t| t == f);
    if patterns.is_empty() {
        return Ok(KNOWN.iter().filter(|k| has(k.file)).map(|k| k.file.to_owned()).collect());
    }
    let mut chosen: Vec<String> = Vec::new();
    for p in patterns {
        let matched: Vec<String> = if p == QUICK {
            KNOWN.iter().filter(|k| k.quick && has(k.file)).map(|k| k.file.to_owned()).collect()
        } else {
            tests.iter().filter(|t| glob(p, t)).cloned().collect()
        };
        if matched.is_empty() {
            return Err(SelectError::NoMatch {
                pattern: p.clone(),
                source_label: source_label.to_owned(),
                have: tests.join(", "),
            });
        }
        for m in matched {
            if !chosen.contains(&m) {
                chosen.push(m);
            }
        }
    }
    let rank = |f: &String| KNOWN.iter().position(|k| k.file == f).unwrap_or(KNOWN.len());
    chosen.sort_by(|a, b| rank(a).cmp(&rank(b)).then(a.cmp(b)));
    Ok(chosen)
}

/// Shell-style matching of `name` against `pattern` (`*`, `?`).
pub fn glob(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    // Backtracking on the last `*`: linear in practice for short names.
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[&str]) -> Vec<String> {
        files.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn without_patterns_the_known_tests_the_tree_has_run_in_their_order() {
        // Linux 6.12's drivers/net: the four of the known tests it has.
        let t = tree(&["hw/csum.py", "hw/pp_alloc_fail.py", "hw/rss_ctx.py", "ping.py", "queues.py", "stats.py"]);
        assert_eq!(select(&t, &[], "6.12").expect("select"), ["queues.py", "stats.py", "ping.py", "hw/csum.py"]);
    }

    #[test]
    fn patterns_and_the_quick_set_select_files_and_a_pattern_matching_nothing_is_refused() {
        let t = tree(&["gro.py", "hw/csum.py", "hw/rss_ctx.py", "hw/toeplitz.py", "ping.py", "queues.py"]);
        let p = |s: &[&str]| s.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        assert_eq!(select(&t, &p(&["hw/*"]), "x").expect("glob"), ["hw/toeplitz.py", "hw/csum.py", "hw/rss_ctx.py"]);
        assert_eq!(select(&t, &p(&[QUICK]), "x").expect("quick"), ["queues.py", "ping.py", "hw/toeplitz.py"]);
        let e = select(&t, &p(&["xdp.py"]), "linux-source-6.12").expect_err("no match");
        assert!(e.to_string().contains("--tests xdp.py: no test file of linux-source-6.12"), "{e}");
    }

    #[test]
    fn glob_matches_like_a_shell() {
        assert!(glob("hw/*.py", "hw/csum.py"));
        assert!(!glob("hw/*.py", "ping.py"));
        assert!(glob("*", "anything"));
        assert!(glob("p?ng.py", "ping.py"));
        assert!(!glob("ping", "ping.py"));
        assert!(glob("*a*b", "xaxxb"));
    }
}
