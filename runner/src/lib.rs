//! referee's round executor: seats the baseline, the incumbent and the queued challengers,
//! runs each on an engine (`engines`) under open-loop load (`loadgen`), gates correctness
//! through the reference runtime, decides with `receipts::rules` and seals the round
//! through `receipts`; a journal makes a crashed round resume, and preflight refuses a
//! round whose previous receipt, key or campaign does not check out (`verifier`). The
//! s1-fast-speed track's sealed capability scorer is `sealed`.

pub mod correctness;
pub mod decide;
pub mod journal;
pub mod pod;
pub mod round;
pub mod sealed;
pub mod weights;
