//! Bootstrapping a pod (content/pods.md): the `referee` binary, the campaign and the
//! round's public inputs copied into the staging directory both sides see, with the
//! agent's order (`order.json`) listing each file and its sha256. Never a private key:
//! a file named `*.key`, or holding a key seed, is refused before anything is copied,
//! and the staging directory is scanned again after.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use receipts::fsutil::{IoError, write_atomic, write_atomic_with};
use receipts::model::{CampaignId, Sha256Hex};
use serde::{Deserialize, Serialize};

use super::PodError;
use super::weights::WeightOrder;

/// The agent's order's name in the staging directory.
pub const ORDER_FILE: &str = "order.json";

/// The shipped binary's path in the staging directory.
pub const AGENT_BINARY: &str = "bin/referee";

/// One file shipped to the pod.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShippedFile {
    /// Its path relative to the staging directory (`[A-Za-z0-9._-]` components).
    pub path: String,
    /// Its sha256 as shipped.
    pub sha256: Sha256Hex,
}

/// What `referee agent` is asked to do: the staging directory's `order.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentOrder {
    /// The shipped binary's sha256: the agent reports its own, which must equal it.
    pub agent_sha256: Sha256Hex,
    /// Every other shipped file, for the agent to verify before use.
    pub files: Vec<ShippedFile>,
    /// Engine images to pull, each `name@sha256:<digest>`.
    pub images: Vec<String>,
    /// Weight files to make ready in the node's cache.
    pub weights: Vec<WeightOrder>,
    /// The node's weights cache, absolute.
    pub weights_cache: PathBuf,
    /// The round whose passes the agent runs (`referee agent --pass N`), its data
    /// directory shipped under `data/`; absent for a setup check (`referee pod check`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<RoundOrder>,
}

/// The round an agent's passes belong to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RoundOrder {
    /// The campaign.
    pub campaign: CampaignId,
    /// The round number.
    pub round: u64,
    /// The host uid and gid engines run as on the pod when the agent is root
    /// (`referee round --engine-uid`).
    pub engine_uid: u32,
}

/// What bootstrapping shipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shipment {
    /// The binary on the pod.
    pub agent: PathBuf,
    /// The order on the pod.
    pub order_path: PathBuf,
    /// The order itself.
    pub order: AgentOrder,
}

/// Whether `name` is a safe relative path: `[A-Za-z0-9._-]` components, none `.`/`..`.
fn is_plain_relative(name: &str) -> bool {
    !name.is_empty()
        && name.split('/').all(|part| {
            !part.is_empty()
                && part != "."
                && part != ".."
                && part
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        })
}

/// Whether the file at `path` is a private key: named `*.key`, or small enough to hold
/// a seed and holding one ([`receipts::keys::is_private_key_seed`]).
fn holds_private_key(path: &Path) -> Result<bool, PodError> {
    if path.extension().is_some_and(|e| e == "key") {
        return Ok(true);
    }
    let meta = fs::metadata(path).map_err(IoError::at("reading", path))?;
    if meta.len() > receipts::layout::MAX_SNIFFED_KEY_FILE_BYTES {
        return Ok(false);
    }
    let bytes = fs::read(path).map_err(IoError::at("reading", path))?;
    Ok(receipts::keys::is_private_key_seed(&bytes))
}

/// Copies `source` to `dest` whole (mode `mode`) and returns the copy's sha256.
fn copy_file(source: &Path, dest: &Path, mode: u32) -> Result<Sha256Hex, PodError> {
    if let Some(parent) = dest.parent() {
        fs::create_dir_all(parent).map_err(IoError::at("creating", parent))?;
    }
    let mut input = fs::File::open(source).map_err(IoError::at("opening", source))?;
    write_atomic_with(dest, mode, &mut |file| io::copy(&mut input, file).map(drop))
        .map_err(IoError::at("writing", dest))?;
    Ok(receipts::bundle::file_sha256(dest).map_err(IoError::at("reading", dest))?)
}

/// Ships `binary` and `files` (each its name in the staging directory and its source)
/// into `staging`, and writes the agent's order asking for `images` and `weights` in
/// `weights_cache`, and the passes of `round` when it is given.
///
/// Errors: [`PodError::PrivateKey`] before anything is copied when a file holds a
/// private key (and after, if the staging directory holds one); [`PodError::Agent`] for
/// a name that is not a plain relative path; [`PodError::Io`].
pub fn ship(
    staging: &Path,
    binary: &Path,
    files: &[(String, PathBuf)],
    images: Vec<String>,
    weights: Vec<WeightOrder>,
    weights_cache: PathBuf,
    round: Option<RoundOrder>,
) -> Result<Shipment, PodError> {
    for (name, source) in files {
        if !is_plain_relative(name) || name == ORDER_FILE || name == AGENT_BINARY {
            return Err(PodError::Agent(format!(
                "would be shipped a file under the name `{}`, which is not a plain relative path of its own",
                receipts::text::escape_untrusted(name)
            )));
        }
        if holds_private_key(source)? {
            return Err(PodError::PrivateKey {
                path: source.clone(),
            });
        }
    }
    if holds_private_key(binary)? {
        return Err(PodError::PrivateKey {
            path: binary.to_path_buf(),
        });
    }
    fs::create_dir_all(staging).map_err(IoError::at("creating", staging))?;
    let agent = staging.join(AGENT_BINARY);
    let agent_sha256 = copy_file(binary, &agent, 0o755)?;
    let mut shipped = Vec::with_capacity(files.len());
    for (name, source) in files {
        let sha256 = copy_file(source, &staging.join(name), 0o644)?;
        shipped.push(ShippedFile {
            path: name.clone(),
            sha256,
        });
    }
    let order = AgentOrder {
        agent_sha256,
        files: shipped,
        images,
        weights,
        weights_cache,
        round,
    };
    let order_path = staging.join(ORDER_FILE);
    let bytes =
        serde_json::to_vec_pretty(&order).map_err(|e| PodError::Agent(format!("order: {e}")))?;
    write_atomic(&order_path, &bytes, 0o644).map_err(IoError::at("writing", &order_path))?;
    let keys = receipts::layout::find_private_keys(staging)
        .map_err(|e| PodError::Agent(format!("staging directory scan: {e}")))?;
    if let Some(path) = keys.into_iter().next() {
        return Err(PodError::PrivateKey { path });
    }
    Ok(Shipment {
        agent,
        order_path,
        order,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_shipped_with_their_digests_and_keys_never() {
        let dir = tempfile::tempdir().unwrap();
        let binary = dir.path().join("referee");
        fs::write(&binary, b"#!/bin/sh\n").unwrap();
        let campaign = dir.path().join("campaign.json");
        fs::write(&campaign, b"{}").unwrap();
        let staging = dir.path().join("staging");
        let shipment = ship(
            &staging,
            &binary,
            &[("inputs/campaign.json".into(), campaign.clone())],
            Vec::new(),
            Vec::new(),
            staging.join("weights-cache"),
            None,
        )
        .unwrap();
        assert_eq!(shipment.agent, staging.join("bin/referee"));
        assert_eq!(
            shipment.order.agent_sha256,
            Sha256Hex::digest(b"#!/bin/sh\n")
        );
        assert_eq!(
            shipment.order.files,
            [ShippedFile {
                path: "inputs/campaign.json".into(),
                sha256: Sha256Hex::digest(b"{}"),
            }]
        );
        let read: AgentOrder =
            serde_json::from_slice(&fs::read(&shipment.order_path).unwrap()).unwrap();
        assert_eq!(read, shipment.order);

        let seed = dir.path().join("evaluator");
        fs::write(&seed, format!("{}\n", "ab".repeat(32))).unwrap();
        let named = dir.path().join("log.key");
        fs::write(&named, b"anything").unwrap();
        let other = dir.path().join("staging-2");
        for key in [&seed, &named] {
            match ship(
                &other,
                &binary,
                &[("k".into(), key.clone())],
                Vec::new(),
                Vec::new(),
                other.clone(),
                None,
            ) {
                Err(PodError::PrivateKey { path }) => assert_eq!(&path, key),
                got => panic!("expected a refusal, got {got:?}"),
            }
        }
        assert!(!other.exists(), "nothing is copied before the refusal");
        assert!(matches!(
            ship(
                &other,
                &binary,
                &[("../x".into(), campaign)],
                Vec::new(),
                Vec::new(),
                other.clone(),
                None,
            ),
            Err(PodError::Agent(_))
        ));
    }
}
