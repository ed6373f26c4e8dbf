//! Archive mode (content/verifying.md, Archives): many bundles verified in parallel, one
//! corrupted bundle among them reported alone, the others unaffected.

use std::path::PathBuf;

use crate::forge::*;
use verifier::VerifyOptions;
use verifier::archive::{ArchiveSummary, find_bundles, verify_archive};

#[test]
fn one_corrupted_bundle_among_several_is_the_only_one_reported() {
    let archive = tempfile::tempdir().expect("tempdir");
    for name in ["a", "b", "c", "d"] {
        forge_into(&archive.path().join(name), |_| {}, |_| {}, |_| {});
    }
    // A byte appended to one signed log of `c`, and a directory that is no bundle.
    let corrupted = archive.path().join("c");
    let log = corrupted.join("logs/engines/baseline.log");
    let mut bytes = std::fs::read(&log).expect("log");
    bytes.push(b'x');
    std::fs::write(&log, bytes).expect("write");
    std::fs::create_dir_all(archive.path().join("notes")).expect("mkdir");

    let bundles = find_bundles(archive.path()).expect("bundles");
    let names: Vec<PathBuf> = ["a", "b", "c", "d"]
        .iter()
        .map(|n| archive.path().join(n))
        .collect();
    assert_eq!(bundles, names);
    let done = std::sync::atomic::AtomicUsize::new(0);
    let reports = verify_archive(&bundles, &keyring(), &VerifyOptions::default(), &|| {
        done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    });
    assert_eq!(done.into_inner(), 4);
    let summary = ArchiveSummary::of(&reports);
    assert_eq!((summary.verified, summary.failed), (3, 1));
    assert_eq!(
        summary.failures_by_check.into_iter().collect::<Vec<_>>(),
        vec![("subject", vec![corrupted])]
    );
}
