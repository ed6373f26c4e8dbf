//! referee's round machinery: submissions and their gates, engines, the seeded workload,
//! the open-loop load generator and SLA rate search, correctness, scoring and the round
//! executor that seals it all through `receipts`.
#![deny(missing_docs)]

pub mod correctness;
pub mod datadir;
pub mod demo;
pub mod engines;
pub mod gates;
pub mod hardware;
pub mod ingest;
pub mod journal;
pub mod leader;
pub mod load;
pub mod ratesearch;
pub mod round;
pub mod workload;
