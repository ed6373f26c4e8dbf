//! referee's data model and trust core. No network, no async: everything here is plain
//! values in, plain values (or files) out, so the verifier and the site can depend on it
//! without pulling a runtime.
#![deny(missing_docs)]

pub mod fsutil;
pub mod model;
