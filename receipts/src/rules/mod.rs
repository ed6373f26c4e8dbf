//! The competition's arithmetic, pure: plain values in, plain values out — no I/O, no
//! async, no clock. The runner computes every number a round records with these
//! functions, the verifier recomputes them with the same functions, and the site renders
//! what they return: one implementation of each formula in the whole tree.
//!
//! - [`workload`]: the seeded items, their order and arrival schedule, and the
//!   request-sequence digest (content/measurement.md, Seeds);
//! - [`sla`]: nearest-rank percentiles, over-bound counts, MLPerf's early-stopping rule,
//!   the probe verdict and the probe budget of a run;
//! - [`histogram`]: the HdrHistogram V2+DEFLATE codec, with size limits on decode;
//! - [`score`]: median/min/max of runs, the score in ppm, drift, the overtake test;
//! - [`correctness`]: the logit distance per position, item and group, and the verdict;
//! - [`leader`]: the leader rule and the round's outcome.

pub mod correctness;
pub mod histogram;
pub mod leader;
pub mod score;
pub mod sla;
pub mod workload;
