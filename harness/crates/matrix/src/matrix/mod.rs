//! A matrix of runs: every (topology file, kernel) pair, run up to `--jobs`
//! guests at once, judged by an oracle, reported as one document; split into
//! cost-balanced shards for a CI engine's job matrix and merged back.
//!
//! - [`spec`]: the topology files (folders expanded), kernels and oracle, and
//!   the plan of pairs with their [`cost`] and [`shard`];
//!   [`kernels`]: kernels as asked for, their identity, made bootable;
//! - [`limits`]: jobs and the TCG vCPU limits; [`executor`]: runs the pairs,
//!   several at once; [`pair_runner`]: boots (or models) one pair; [`oracle`]:
//!   the seam of who judges it and the model's oracle ([`other_oracles`]:
//!   properties, baseline, auto); [`search`]: random topologies and shrinking
//!   the ones the oracle fails; [`shard_run`]: one shard end to end;
//!   [`progress`]: events and the ETA;
//! - [`report`]: the matrix document (JSON, `matrix-schema.md`); [`merge`]:
//!   shards back into one; [`summary`] (Markdown), [`junit`], [`ktap`],
//!   [`kcidb`] (KCIDB v5.3) render it, [`pictures`] draws it (SVG, HTML);
//!   [`kcidb_check`] validates KCIDB
//!   output with kcidb-io.

pub mod cost;
pub mod executor;
pub mod junit;
pub mod kcidb;
pub mod kcidb_check;
pub mod kernels;
pub mod ktap;
pub mod limits;
pub mod merge;
pub mod oracle;
pub mod other_oracles;
pub mod pair_runner;
pub mod pictures;
pub mod progress;
pub mod report;
pub mod search;
pub mod shard;
pub mod shard_run;
pub mod spec;
pub mod summary;
