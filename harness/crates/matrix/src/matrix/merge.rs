//! `matrix-merge`: shard documents back into one matrix document, from which
//! the same summary, JUnit, KTAP and KCIDB are rendered as from an unsharded
//! run. Documents whose specs differ (another shard count, other topology
//! files or file contents, other kernels or oracle) refuse to merge, and so
//! does a shard that appears twice; a missing shard leaves its pairs
//! `not-run` and the merge incomplete.

use super::kernels::KernelFacts;
use super::report::{Header, MatrixReport, PairRecord};
use std::collections::BTreeMap;

/// Why documents cannot be merged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    /// Nothing to merge.
    #[error("no matrix documents to merge")]
    Empty,
    /// Two documents are shards of different matrices.
    #[error("{first} and {other} are shards of different matrices (spec {first_digest} vs {other_digest}): {}", differences.join("; "))]
    SpecsDiffer {
        /// The first document.
        first: String,
        /// The one that differs.
        other: String,
        /// Their spec digests.
        first_digest: String,
        /// The other's.
        other_digest: String,
        /// What differs.
        differences: Vec<String>,
    },
    /// A shard is in two documents.
    #[error("shard {shard} is in both {first} and {other}")]
    Duplicate {
        /// The shard.
        shard: String,
        /// Where it was first.
        first: String,
        /// Where again.
        other: String,
    },
}

/// Merge `docs` (each with the name it is shown by, e.g. its path). The
/// result's pairs are in plan order; its `run_id` is `run_id` when given, else
/// the documents' own when they agree, else theirs joined by `+`.
///
/// # Errors
/// [`MergeError`].
pub fn merge(docs: &[(String, MatrixReport)], run_id: Option<&str>) -> Result<MatrixReport, MergeError> {
    let (first_name, first) = docs.first().ok_or(MergeError::Empty)?;
    let spec = &first.header.spec;
    let mut shards: BTreeMap<u32, (String, super::report::ShardRun)> = BTreeMap::new();
    let mut records: BTreeMap<String, PairRecord> = BTreeMap::new();
    for (name, doc) in docs {
        let mut differences = spec.differences(&doc.header.spec);
        if doc.header.mode != first.header.mode {
            differences.push(format!("one ran as {:?}, the other as {:?}", first.header.mode, doc.header.mode));
        }
        if !differences.is_empty() {
            return Err(MergeError::SpecsDiffer {
                first: first_name.clone(),
                other: name.clone(),
                first_digest: first.header.spec_digest.clone(),
                other_digest: doc.header.spec_digest.clone(),
                differences,
            });
        }
        for s in &doc.header.shards {
            if let Some((seen, _)) = shards.get(&s.shard.index) {
                return Err(MergeError::Duplicate {
                    shard: s.shard.to_string(),
                    first: seen.clone(),
                    other: name.clone(),
                });
            }
            shards.insert(s.shard.index, (name.clone(), s.clone()));
        }
        for r in &doc.pairs {
            records.insert(r.pair.name.clone(), r.clone());
        }
    }
    let plan = spec.plan();
    let missing: Vec<u32> = (1..=spec.shards).filter(|k| !shards.contains_key(k)).collect();
    let pairs: Vec<PairRecord> = plan
        .iter()
        .map(|p| {
            records.remove(&p.name).unwrap_or_else(|| {
                PairRecord::not_run(
                    p.clone(),
                    &format!("shard {}/{} is not among the merged documents", p.shard, spec.shards),
                )
            })
        })
        .collect();
    let mut ids: Vec<String> = docs.iter().map(|(_, d)| d.header.run_id.clone()).collect();
    ids.sort();
    ids.dedup();
    let run_id = run_id.map_or_else(|| ids.join("+"), str::to_owned);
    let complete = missing.is_empty() && shards.values().all(|(_, s)| s.complete);
    Ok(MatrixReport {
        schema_version: first.schema_version,
        kind: first.kind.clone(),
        header: Header {
            spec: spec.clone(),
            spec_digest: spec.digest(),
            plan,
            shards: shards.into_values().map(|(_, s)| s).collect(),
            kernels: merged_facts(docs),
            mode: first.header.mode.clone(),
            run_id,
            complete,
            verdict_schema_version: first.header.verdict_schema_version,
        },
        pairs,
    })
}

/// Per kernel, the facts of the first document that prepared it (a shard
/// without pairs on a kernel does not).
fn merged_facts(docs: &[(String, MatrixReport)]) -> Vec<KernelFacts> {
    let Some((_, first)) = docs.first() else {
        return Vec::new();
    };
    first
        .header
        .kernels
        .iter()
        .map(|k| {
            docs.iter()
                .filter_map(|(_, d)| d.header.kernels.iter().find(|f| f.label == k.label && f.prepare_s.is_some()))
                .next()
                .cloned()
                .unwrap_or_else(|| k.clone())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::report::PairStatus;
    use crate::matrix::shard::Shard;
    use crate::matrix::shard_run::dry_report;

    const FILES: [&str; 3] = ["seed-002", "r24-no-smt", "r06-low-vcpu"];

    fn shard(k: u32, n: u32) -> (String, MatrixReport) {
        (format!("s{k}"), dry_report(&FILES, &["6.12-min", "6.1"], Shard { index: k, count: n }))
    }

    #[test]
    fn shards_merge_in_plan_order_and_a_missing_one_is_not_run() {
        let whole = dry_report(&FILES, &["6.12-min", "6.1"], Shard::WHOLE);
        let merged = merge(&[shard(2, 2), shard(1, 2)], None).expect("merge");
        let names = |m: &MatrixReport| m.pairs.iter().map(|p| (p.pair.name.clone(), p.status)).collect::<Vec<_>>();
        assert_eq!(names(&merged), names(&whole));
        assert!(merged.header.complete);
        assert_eq!(merged.header.run_id, "test");
        let partial = merge(&[shard(1, 2)], Some("r")).expect("merge");
        assert!(!partial.header.complete);
        assert!(partial.pairs.iter().any(|p| p.status == PairStatus::NotRun));
        assert_eq!(partial.header.run_id, "r");
        assert_eq!(merge(&[], None).expect_err("nothing"), MergeError::Empty);
    }

    #[test]
    fn a_shard_twice_or_another_split_refuses_to_merge() {
        let e = merge(&[shard(1, 2), shard(1, 2)], None).expect_err("twice");
        assert!(matches!(e, MergeError::Duplicate { .. }), "{e}");
        let e = merge(&[shard(1, 2), shard(2, 3)], None).expect_err("2 vs 3");
        assert!(e.to_string().contains("split into 2 vs 3 shards"), "{e}");
    }
}
