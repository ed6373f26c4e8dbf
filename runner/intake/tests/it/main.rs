//! The intake crate's integration tests, one test binary: each file under `tests/` used to
//! be its own binary, linking the whole dependency graph again (issue 38). A new test
//! file goes here as a module (`mod name;`), its helpers shared through `crate::…`.

mod support;

mod gates_canary;
mod gates_corpus;
mod gates_ingest;
mod repository;
mod repository_https;
mod repository_review;
mod repository_verify;
