//! The verifier's integration tests, one test binary: each file under `tests/` used to
//! be its own binary, linking the whole dependency graph again (issue 38). A new test
//! file goes here as a module (`mod name;`), its helpers shared through `crate::…`.

mod common;
mod forge;

mod archive;
mod bundle;
mod field_coverage;
mod forgery;
mod forgery_caching;
mod forgery_compliance;
mod forgery_correctness;
mod forgery_decide;
mod forgery_engines;
mod forgery_fast;
mod forgery_logs;
mod forgery_repository;
mod forgery_review;
mod forgery_sample;
mod forgery_secret;
mod forgery_telemetry;
mod forgery_v5;
mod interop_python;
mod older_predicates;
mod paired;
mod submissions;
mod tamper;
mod title;
mod verify_round;
mod view;
