//! referee's intake (content/submitting.md): freezing a campaign, registering miners, and
//! walking each submitted diff through the gates — fetched, verified, surface checks on
//! libgit2's own parse, applied, built — to `bench_queued` or `rejected` with its reason;
//! plus the data directory's writers and locks ([`store`]), its transparency log's
//! writer ([`tlog`]) and the signed statements logged as they happen ([`statements`]);
//! repository submissions, a repository at a pinned commit with its manifest
//! ([`repository`]).

pub mod gates;
pub mod ingest;
pub mod repository;
pub mod statements;
pub mod store;
pub mod tlog;
