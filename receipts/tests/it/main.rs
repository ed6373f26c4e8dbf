//! The receipts crate's integration tests, one test binary: each file under `tests/` used to
//! be its own binary, linking the whole dependency graph again (issue 38). A new test
//! file goes here as a module (`mod name;`), its helpers shared through `crate::…`.

mod api_profile;
mod canonical;
mod crypto;
mod decide;
mod docker_backend;
mod fast;
mod model;
mod operating_characteristic;
mod outcome;
mod paired;
mod parallel_characteristic;
mod rerun_characteristic;
mod rules_workload;
mod schema;
mod telemetry;
mod title;
mod tlog;
