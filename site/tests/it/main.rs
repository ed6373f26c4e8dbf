//! The site's integration tests, one test binary: each file under `tests/` used to
//! be its own binary, linking the whole dependency graph again (issue 38). A new test
//! file goes here as a module (`mod name;`), its helpers shared through `crate::…`.

mod autoescape;
mod escaping;
mod golden;
mod incremental;
mod machine;
mod models;
mod pages;
mod publication;
