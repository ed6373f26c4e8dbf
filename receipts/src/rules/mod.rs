//! The competition's arithmetic, pure: plain values in, plain values out — no I/O, no
//! async, no clock. The runner computes every number a round records with these
//! functions, the verifier recomputes them with the same functions, and the site renders
//! what they return: one implementation of each formula in the whole tree.
//!
//! - [`workload`]: the seeded items, their order and arrival schedule, and the
//!   request-sequence digest (content/measurement.md, Seeds);
//! - [`sla`]: nearest-rank percentiles, over-bound counts, MLPerf's early-stopping rule,
//!   the probe verdict and the probe budget of a run;
//! - [`search`]: the path of a run's rate search (the rate of each probe, where it
//!   stops), its two starts, and the unreachable and ceiling tests;
//! - [`histogram`]: the HdrHistogram V2+DEFLATE codec, with size limits on decode;
//! - [`score`]: median/min/max of runs, the score in ppm, drift, the overtake test;
//! - [`correctness`]: the logit distance per position, item and group, and the verdict;
//! - [`sample`]: the check of the timed run's outputs (which requests, their gap, the
//!   verdict);
//! - [`compliance`]: the compliance tests of record on the timed runs (streamed text
//!   against the ids, exact output lengths);
//! - [`host`]: whether CPU steal over a run makes it invalid;
//! - [`telemetry`]: whether a run's GPU telemetry (a hardware throttle, an XID, a slow SM
//!   clock) makes it invalid, and the summary its pass row records;
//! - [`engine_log`]: what an engine's log keeps of its output under the campaign's budget;
//! - [`log_tail`]: the bounded end of an engine's log a disqualification carries;
//! - [`redaction`]: the line a bundle file that held private key material becomes;
//! - [`leader`]: the seat rules: the margin, a disqualified or infra-failed incumbent, its
//!   re-measure;
//! - [`paired`]: paired ratios over interleaved passes, their interval and coverage, the
//!   noise verdicts, the per-pass failure table and the paired decision rule;
//! - [`passes`]: the order of the runs in each pass, drawn from the pass seed;
//! - [`seeds`]: each seed derived from the evaluator's committed secret and a public
//!   beacon's value;
//! - [`outcome`]: the round's outcome (status, typed reason, seat decision) from the
//!   paired decision and the round's other causes, in their order of precedence;
//! - [`rerun`]: a re-run's speed tolerance from both rounds' noise floors, its
//!   comparison rules and verdicts;
//! - [`title`]: the title over a campaign's chain of rounds and revocations (holding
//!   period, confirmation, re-measurement, vacancy), and what is due next;
//! - [`decide`]: the `decide` workload's declared contract (request template, decision
//!   and vector pointers) and the logit distance over the declared vector;
//! - [`weights`]: weight files against the pinned or reproduced digests;
//! - [`review`]: the rules files a review is known by and an entry's review in a round;
//! - [`repository`]: a repository submission's commitment, tree digest, manifest,
//!   Dockerfile, licence and queue rules, run by intake and again by the verifier;
//! - [`copy`]: copy detection's decision over recorded fingerprints (content/review.md);
//! - [`cost`], [`capability`], [`agreement`]: the s1-fast-speed track's cost per decision
//!   and seat on cost, its sealed capability gate and its agreement with s1-pro
//!   (content/s1-fast-speed.md).

pub mod agreement;
pub mod capability;
pub mod compliance;
pub mod copy;
pub mod correctness;
pub mod cost;
pub mod decide;
pub mod engine_log;
pub mod histogram;
pub mod host;
pub mod leader;
pub mod log_tail;
pub mod outcome;
pub mod paired;
pub mod passes;
pub mod placement;
pub mod redaction;
pub mod repository;
pub mod rerun;
pub mod review;
pub mod sample;
pub mod score;
pub mod search;
pub mod seeds;
pub mod sla;
pub mod telemetry;
pub mod title;
pub mod weights;
pub mod workload;
