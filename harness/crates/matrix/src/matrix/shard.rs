//! Shards: `--shard K/N` runs the K-th of N cost-balanced, deterministic
//! subsets of a matrix's pairs, so that a CI engine's own job matrix (GitHub
//! Actions `strategy.matrix`, GitLab `parallel`) can spread one matrix over N
//! machines and `matrix-merge` can put the results back together.
//!
//! Assignment: pairs by decreasing cost (ties by name), each to the shard
//! with the least cost so far (ties to the lowest index): the longest
//! processing time first rule, within 4/3 of the best possible maximum. It
//! depends only on the pairs' names and costs, so every shard computes the
//! same split on any machine.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Most shards a matrix may be split into.
pub const MAX_SHARDS: u32 = 1000;

/// One shard of a matrix: `index` of `count`, counting from 1 (`2/4`). An
/// unsharded run is shard `1/1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Shard {
    /// 1..=count.
    pub index: u32,
    /// How many shards the matrix is split into (1..=[`MAX_SHARDS`]).
    pub count: u32,
}

impl Shard {
    /// The whole matrix: shard 1 of 1.
    pub const WHOLE: Shard = Shard { index: 1, count: 1 };
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// A `--shard` value that is not `K/N` with 1 ≤ K ≤ N ≤ [`MAX_SHARDS`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("shard {0:?}: use K/N with 1 <= K <= N <= 1000, e.g. 2/4 (the second of four shards)")]
pub struct BadShard(pub String);

impl FromStr for Shard {
    type Err = BadShard;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadShard(s.to_owned());
        let (k, n) = s.trim().split_once('/').ok_or_else(bad)?;
        let (index, count): (u32, u32) = (k.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
        if index == 0 || index > count || count > MAX_SHARDS {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

/// The shard (1-based) of every item, for items given as (name, cost in
/// seconds), split into `count` shards by the rule of the module docs. A
/// `count` of 0 is taken as 1.
pub fn assign(items: &[(&str, f64)], count: u32) -> Vec<u32> {
    let count = count.max(1) as usize;
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&a, &b| items[b].1.total_cmp(&items[a].1).then_with(|| items[a].0.cmp(items[b].0)));
    let mut load = vec![0.0f64; count];
    let mut shard_of = vec![1u32; items.len()];
    for i in order {
        let (lightest, _) =
            load.iter().enumerate().min_by(|a, b| a.1.total_cmp(b.1).then_with(|| a.0.cmp(&b.0))).unwrap_or((0, &0.0));
        load[lightest] += items[i].1;
        shard_of[i] = u32::try_from(lightest + 1).unwrap_or(u32::MAX);
    }
    shard_of
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_refuse_what_is_not_k_of_n() {
        assert_eq!("2/4".parse(), Ok(Shard { index: 2, count: 4 }));
        assert_eq!(" 1/1 ".parse(), Ok(Shard::WHOLE));
        for bad in ["0/2", "3/2", "2", "a/b", "1/0", "1/1001", "-1/2", "1/2/3"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        assert_eq!(Shard { index: 2, count: 4 }.to_string(), "2/4");
    }

    #[test]
    fn the_split_is_balanced_by_cost_and_deterministic() {
        let items = [("big", 50.0), ("a", 2.0), ("b", 2.0), ("c", 2.0), ("mid", 15.0), ("mid2", 15.0)];
        let shards = assign(&items, 2);
        assert_eq!(shards, assign(&items, 2));
        let load = |k: u32| items.iter().zip(&shards).filter(|(_, s)| **s == k).map(|(i, _)| i.1).sum::<f64>();
        // The 50-s pair alone on one side, everything else (36 s) on the other.
        assert_eq!((load(1), load(2)), (50.0, 36.0));
        // Equal costs: ties go by name, so the order of the input does not matter.
        let ties = [("x", 1.0), ("y", 1.0), ("z", 1.0)];
        let rev = [("z", 1.0), ("y", 1.0), ("x", 1.0)];
        let (a, b) = (assign(&ties, 2), assign(&rev, 2));
        assert_eq!((a[0], a[1], a[2]), (b[2], b[1], b[0]));
        // More shards than pairs: some are empty, none has two.
        let many = assign(&ties, 5);
        assert_eq!(many, vec![1, 2, 3]);
        assert_eq!(assign(&ties, 0), vec![1, 1, 1]);
    }
}
