//! referee's data model and trust core. No network, no async: everything here is plain
//! values in, plain values (or files) out, so the verifier and the site can depend on it
//! without pulling a runtime.

pub mod bundle;
pub mod canonical;
pub mod dsse;
pub mod fsutil;
pub mod keys;
pub mod layout;
pub mod model;
pub mod rules;
pub mod schema;
pub mod statement;
pub mod text;
pub mod tlog;
