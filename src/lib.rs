//! The parts of the `referee` binary that its end-to-end tests use too: the demo's
//! baseline builder, and the re-run of a sealed round (`rerun`, which needs both the
//! runner and the verifier). Everything else of the binary lives in `src/cli/`.

pub mod demo;
pub mod rerun;
