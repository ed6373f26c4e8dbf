//! referee's round machinery: submissions and their gates, engines, the seeded workload,
//! the open-loop load generator and SLA rate search, correctness, scoring and the round
//! executor that seals it all through `receipts`.
#![deny(missing_docs)]

pub mod datadir;
