//! Fuzzes what a miner controls most directly: libgit2's parse of a submitted diff and
//! every check run on it before anything is written (`intake::gates::inspect`), against
//! a baseline with regular files, an executable, a denied path and two symlinks. It must
//! never panic — `git2::DiffFile::mode()` does on unknown modes (git2 0.21), which
//! is why the gates read raw modes — and never abort.
#![no_main]

use std::sync::LazyLock;

use git2::Oid;
use libfuzzer_sys::fuzz_target;
use receipts::model::SurfaceSpec;
use intake::gates::surface::DeniedGlobs;
use intake::gates::{BaselineEntry, BaselineIndex, inspect};

struct Fixture {
    surface: SurfaceSpec,
    denied: DeniedGlobs,
    baseline: BaselineIndex,
}

static FIXTURE: LazyLock<Fixture> = LazyLock::new(|| {
    let surface = SurfaceSpec::default();
    let denied = DeniedGlobs::new(&surface.denied_paths).expect("default globs compile");
    let entry = |path: &str, mode: u32, id: &str| {
        (
            path.as_bytes().to_vec(),
            BaselineEntry {
                mode,
                id: Oid::from_str(id).expect("literal id"),
            },
        )
    };
    let baseline = BaselineIndex::from_entries(
        "05a9fb474bd10b80c8a81901cf7cde5525523502",
        [
            entry(
                "engine.toml",
                0o100644,
                "1abf94f7bb2fba42cd3cb45c4a0eebf3f99dd3db",
            ),
            entry(
                "README.md",
                0o100644,
                "119c64a2c7930ac4b36810100f205c6d95f2f996",
            ),
            entry("src", 0o040000, "0000000000000000000000000000000000000001"),
            entry(
                "src/util.rs",
                0o100644,
                "6eec06a10d046602ccd9a83b843672066c9a3bf1",
            ),
            entry(
                "src/main.rs",
                0o100644,
                "90fc3190d7a16f2e6490a4b34887220d5b91db84",
            ),
            entry(
                "scripts",
                0o040000,
                "0000000000000000000000000000000000000002",
            ),
            entry(
                "scripts/run.sh",
                0o100755,
                "4bbc32bbefd4532bb1914ec201c4b2f2d8d177d3",
            ),
            entry(
                ".github",
                0o040000,
                "0000000000000000000000000000000000000003",
            ),
            entry(
                ".github/workflows",
                0o040000,
                "0000000000000000000000000000000000000004",
            ),
            entry(
                ".github/workflows/ci.yml",
                0o100644,
                "b83836ed8c80558d4e40ea4ac5d69f4405334799",
            ),
            entry(
                "vendor",
                0o120000,
                "d09b80733baa4f6b198f2cf2d62bbfc5b6cbf1f0",
            ),
            entry(
                "cfg-link",
                0o120000,
                "ad89afffeb71cd9d2931a2dc9b138cd191eb7a24",
            ),
        ],
    );
    Fixture {
        surface,
        denied,
        baseline,
    }
});

fuzz_target!(|data: &[u8]| {
    let fixture = &*FIXTURE;
    if let Ok(inspection) = inspect(data, &fixture.surface, &fixture.denied, &fixture.baseline) {
        // An approved diff names only paths the checks accepted.
        for path in &inspection.approved.changed_paths {
            assert!(!path.starts_with('/') && !path.split('/').any(|c| c == ".."));
        }
    }
});
