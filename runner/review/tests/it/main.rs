//! The review crate's tests: one binary (tree-sitter links once).

mod copy;
mod docs;
mod llm;
mod rules;

use std::path::Path;

use review::{ReviewInput, RuleSet, WeightFile};

/// A temp tree holding `files` (path, bytes).
pub fn tree(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (path, bytes) in files {
        let full = dir.path().join(path);
        std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
        std::fs::write(full, bytes).expect("write");
    }
    dir
}

/// An input over `root` with no weights, no origin and no markers.
pub fn input(root: &Path) -> ReviewInput {
    ReviewInput {
        root: root.to_path_buf(),
        weights: Vec::new(),
        derived_from: None,
        campaign_markers: Vec::new(),
    }
}

/// A weights file entry.
pub fn weight(path: &str, sha: &str) -> WeightFile {
    WeightFile {
        path: path.to_owned(),
        sha256: sha.parse().expect("digest"),
    }
}

/// The built-in rules.
pub fn rules() -> RuleSet {
    RuleSet::builtin().expect("builtin rules parse")
}

/// The findings of the built-in rules on `input`, as `file:line rule detail` lines.
pub fn findings_of(input: &ReviewInput) -> Vec<String> {
    review::scan::findings(input, &rules())
        .expect("review")
        .into_iter()
        .map(|f| {
            let line = f.line.map_or(String::new(), |l| format!(":{l}"));
            format!("{}{line} {} {}", f.file, f.rule, f.detail)
        })
        .collect()
}

/// [`findings_of`] a tree of `files` with the default input.
pub fn findings(files: &[(&str, &str)]) -> Vec<String> {
    let files: Vec<(&str, &[u8])> = files.iter().map(|(p, t)| (*p, t.as_bytes())).collect();
    let dir = tree(&files);
    findings_of(&input(dir.path()))
}

/// `n` pseudo-random characters of `alphabet`, the same on every run.
pub fn noise(alphabet: &[u8], n: usize) -> String {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            char::from(alphabet[(state >> 33) as usize % alphabet.len()])
        })
        .collect()
}
