//! The parts of the `referee` binary that its end-to-end tests use too: the demo's
//! baseline builder. Everything else of the binary lives in `src/cli/`.
#![deny(missing_docs)]

pub mod demo;
