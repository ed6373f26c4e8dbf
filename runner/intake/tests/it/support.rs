//! Shared fixtures of the gate tests: a baseline repository built with git2 (fixed
//! author and time, so its commit id is the same on every machine), a data directory
//! with the campaign frozen and one miner registered, and helpers to ingest corpus files.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};

use git2::{Index, IndexEntry, IndexTime, Oid, Repository, Signature, Time};
use intake::gates::BuiltinBuilder;
use intake::ingest::{IngestOutcome, IngestRequest, add_campaign, add_miner, ingest};
use receipts::layout::{CampaignDir, DataDir};
use receipts::model::{Campaign, MinerId, Sha256Hex, Submission};

/// The registered miner of every fixture.
pub const MINER: &str = "miner-a";

/// A file of a baseline tree: path, raw git mode, content (a symlink's content is its
/// target).
pub type TreeFile = (String, u32, Vec<u8>);

/// The corpus baseline (runner/tests/corpus/*.diff are written against it): an engine
/// config, a few sources, an executable script, a denied workflow file, and two
/// symlinks — `vendor` pointing out of the tree, `cfg-link` into it.
pub fn corpus_baseline() -> Vec<TreeFile> {
    let text = |p: &str, s: &str| (p.to_owned(), 0o100644, s.as_bytes().to_vec());
    vec![
        text(
            "engine.toml",
            "# The reference engine's knobs (demo baseline).\nmodel_seed = 7\nlayers = 2\nd_model = 64\nheads = 4\ncontext = 256\nmax_num_seqs = 16\nmax_num_batched_tokens = 8192\nthreads = 1\n",
        ),
        text("README.md", "baseline engine\n"),
        text(
            "src/util.rs",
            "pub fn add(a: u32, b: u32) -> u32 {\n    a + b\n}\n",
        ),
        text(
            "src/main.rs",
            "mod util;\n\nfn main() {\n    println!(\"{}\", util::add(1, 2));\n}\n",
        ),
        (
            "scripts/run.sh".into(),
            0o100755,
            b"#!/bin/sh\nexec cargo run\n".to_vec(),
        ),
        text(".github/workflows/ci.yml", "on: push\n"),
        ("vendor".into(), 0o120000, b"../outside".to_vec()),
        ("cfg-link".into(), 0o120000, b"engine.toml".to_vec()),
    ]
}

/// Creates a repository at `path` holding one commit of `files` (author and committer
/// `referee-tests`, time 1 700 000 000 s UTC) and returns the commit id. No ref points at
/// it: `campaign add` must copy it by id.
pub fn build_repo(path: &Path, files: &[TreeFile]) -> Oid {
    let repo = Repository::init(path).expect("init baseline repo");
    let mut index = Index::new().expect("in-memory index");
    for (file_path, mode, content) in files {
        let id = repo.blob(content).expect("write blob");
        index
            .add(&IndexEntry {
                ctime: IndexTime::new(0, 0),
                mtime: IndexTime::new(0, 0),
                dev: 0,
                ino: 0,
                mode: *mode,
                uid: 0,
                gid: 0,
                file_size: 0,
                id,
                flags: 0,
                flags_extended: 0,
                path: file_path.as_bytes().to_vec(),
            })
            .expect("index entry");
    }
    let tree_id = index.write_tree_to(&repo).expect("write tree");
    let tree = repo.find_tree(tree_id).expect("tree");
    let signature = Signature::new(
        "referee-tests",
        "tests@referee.invalid",
        &Time::new(1_700_000_000, 0),
    )
    .expect("signature");
    repo.commit(None, &signature, &signature, "baseline", &tree, &[])
        .expect("commit")
}

/// A data directory with a frozen campaign over a baseline of `files`, and [`MINER`]
/// registered.
pub struct Fixture {
    /// Holds everything; removed on drop.
    pub tmp: tempfile::TempDir,
    /// `tmp/data`.
    pub data: DataDir,
    /// `tmp/data/gates-test`.
    pub campaign_dir: CampaignDir,
    /// The frozen campaign.
    pub campaign: Campaign,
}

/// The `[surface]` limits of the fixtures: small, so the corpus can exceed them (set
/// explicitly: no corpus case relies on a default).
pub const SMALL_LIMITS: &str = "max_diff_bytes = 16384\nmax_line_bytes = 1024\n";

/// The campaign TOML of the fixtures: small limits so the corpus can exceed them.
pub fn campaign_toml(commit: Oid) -> String {
    campaign_toml_with(commit, SMALL_LIMITS)
}

/// The campaign TOML of the fixtures with `surface` as the body of its `[surface]` table
/// (empty: every default).
pub fn campaign_toml_with(commit: Oid, surface: &str) -> String {
    format!(
        "id = \"gates-test\"\n\n[model]\nname = \"ref-tiny\"\n\n[baseline]\nrepo = \"src-repo\"\ncommit = \"{commit}\"\n\n[surface]\n{surface}"
    )
}

/// Builds a [`Fixture`] over `files`.
pub fn fixture(files: &[TreeFile]) -> Fixture {
    fixture_with(files, SMALL_LIMITS)
}

/// Builds a [`Fixture`] over `files` whose `[surface]` table is `surface` (empty: the
/// default limits).
pub fn fixture_with(files: &[TreeFile], surface: &str) -> Fixture {
    let tmp = tempfile::tempdir().expect("tempdir");
    let commit = build_repo(&tmp.path().join("src-repo"), files);
    let toml_path = tmp.path().join("campaign.toml");
    fs::write(&toml_path, campaign_toml_with(commit, surface)).expect("write campaign.toml");
    let data = DataDir::new(tmp.path().join("data"));
    let added = add_campaign(&data, &toml_path).expect("campaign add");
    let campaign_dir = data.campaign(&added.campaign.id);
    add_miner(&campaign_dir, &MINER.parse().expect("miner id")).expect("miner add");
    Fixture {
        tmp,
        data,
        campaign_dir,
        campaign: added.campaign,
    }
}

/// The bytes of corpus file `name` (`runner/tests/corpus/<name>.diff`).
pub fn corpus(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(format!("{name}.diff"));
    fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// Ingests `bytes` from `miner` with the honest commitment.
pub fn ingest_bytes(fx: &Fixture, bytes: &[u8], miner: &str) -> IngestOutcome {
    let miner: MinerId = miner.parse().expect("miner id");
    let commitment = Sha256Hex::digest(bytes);
    ingest(
        &fx.campaign_dir,
        &IngestRequest {
            diff: bytes,
            miner: &miner,
            commitment: &commitment,
        },
        &BuiltinBuilder,
    )
    .expect("ingest")
}

/// Ingests `bytes` from [`MINER`] and returns the record.
pub fn ingest_ok(fx: &Fixture, bytes: &[u8]) -> Submission {
    ingest_bytes(fx, bytes, MINER).submission().clone()
}

/// sha256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256Hex::digest(bytes).to_string()
}
