//! referee's public site: a static directory rendered only from bundles that verify.
//!
//! The build ([`build::build_site`]) loads every sealed round of a data directory and
//! verifies each bundle with the offline verifier as of its own seal time
//! ([`load::load_archive`]), builds plain page models ([`pages`]), renders them through
//! the tera templates of `templates/`, embedded in the binary ([`render`]), in parallel,
//! and writes the output atomically, skipping what an earlier build already wrote the same
//! way ([`cache`]); bundles that did not change since the last build are not verified
//! again ([`verdicts`]), and none is verified twice in one build. What a build takes from
//! the previous one and leaves for the next — each bundle's own checks, the plan of what
//! to list and run, the commit of the manifest — is [`incremental`]. Every output path is
//! made from validated ids ([`paths`]).
//! It links `receipts` and `verifier` only: no HTTP stack (`referee site serve` lives in
//! the binary).

pub mod archive;
pub mod build;
pub mod cache;
pub mod check;
pub mod docs;
pub mod error;
pub mod incremental;
pub mod load;
pub mod machine;
pub mod names;
pub mod pages;
pub mod paths;
pub mod render;
pub mod segment;
pub mod svg;
pub mod tlog;
pub mod verdicts;

pub use build::{BuildOptions, BuildSummary, build_site};
pub use error::SiteError;
pub use load::load_archive;
