//! Loading the archive the site is built from: every campaign of a data directory, its
//! frozen campaign, miners and submission records, and every sealed round verified with
//! the offline verifier as of its own seal time (its `endedAt`), or as of `--at`, so the
//! output does not change with the clock. Bundles are verified in parallel, then checked
//! as a chain per campaign; one that fails any check is a [`RejectedBundle`], never a
//! [`VerifiedRound`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use receipts::fsutil::IoError;
use receipts::keys::Keyring;
use receipts::layout::{DataDir, find_private_keys, read_round_record};
use receipts::model::{CampaignId, RoundRecord, Sha256Hex, Timestamp};
use receipts::verify::{VerifyOptions, VerifyReport};
use verifier::view::RoundView;

use crate::archive::{Archive, CampaignArchive, RejectedBundle, VerifiedRound};
use crate::error::SiteError;
use crate::verdicts::{Verdicts, bundle_digest, verdict_key};

/// Largest keyring file read, bytes.
const MAX_KEYRING_BYTES: usize = 1 << 20;

/// Reads the trusted keyring at `path`: the parsed keyring and the file's bytes as read
/// (published at `/keys/keyring.json`).
///
/// Errors: [`SiteError::Io`] when it cannot be read, [`SiteError::Keyring`] when it does
/// not parse.
pub fn load_keyring(path: &Path) -> Result<(Keyring, Vec<u8>), SiteError> {
    let bytes = receipts::fsutil::read_limited(path, MAX_KEYRING_BYTES)
        .map_err(IoError::at("reading keyring", path))?;
    let keyring = Keyring::load(path).map_err(|e| SiteError::Keyring {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    Ok((keyring, bytes))
}

/// Loads and verifies everything under `data` against `keyring` (whose file bytes are
/// `keyring_json`): [`load_archive_cached`] without a verdict cache.
///
/// Errors: as [`load_archive_cached`].
pub fn load_archive(
    data: &DataDir,
    keyring: &Keyring,
    keyring_json: Vec<u8>,
    at: Option<Timestamp>,
) -> Result<Archive, SiteError> {
    load_archive_cached(data, keyring, keyring_json, at, &Verdicts::default())
}

/// What is known of one bundle before it is verified.
struct Prepared {
    /// Its round record, when it reads (handed to the checks across rounds on a hit).
    record: Option<RoundRecord>,
    /// The round its record states.
    claimed_round: Option<u64>,
    /// sha256 of its Statement.
    statement_digest: Option<Sha256Hex>,
    /// The instant it is verified at.
    at: Timestamp,
    /// Its verdict's key, when its files could all be read.
    key: Option<Sha256Hex>,
    /// Its cached verdict.
    cached: Option<VerifyReport>,
}

/// Loads and verifies everything under `data` against `keyring` (whose file bytes are
/// `keyring_json`). Each bundle is verified as of `at` when given, else as of the
/// `endedAt` its own record states (a bundle whose record cannot be read is verified as
/// of the Unix epoch: it fails either way). A bundle whose own checks `verdicts` holds
/// under its key ([`crate::verdicts`]: its content digest, the keyring, the instant,
/// the version) is not verified again; the checks across rounds run on every bundle.
/// A bundle is verified only when every check passed and it records the round its
/// directory names. The verdicts found are added to `verdicts`.
///
/// Errors: [`SiteError::PrivateKeyInside`] when the data directory holds a private key
/// file (it must not be published); [`SiteError::Data`] when a campaign, its miners or a
/// submission record cannot be read or parsed (naming the file); [`SiteError::Io`] when
/// a directory cannot be listed.
pub fn load_archive_cached(
    data: &DataDir,
    keyring: &Keyring,
    keyring_json: Vec<u8>,
    at: Option<Timestamp>,
    verdicts: &Verdicts,
) -> Result<Archive, SiteError> {
    let files = find_private_keys(data.root())?;
    if !files.is_empty() {
        return Err(SiteError::PrivateKeyInside {
            data: data.root().to_owned(),
            files,
            key_dir: receipts::layout::default_key_dir()
                .unwrap_or_else(|| PathBuf::from("~/.config/referee/keys")),
        });
    }
    let mut campaigns = Vec::new();
    let mut bundles = Vec::new();
    for id in campaign_ids(data.root())? {
        let dir = data.campaign(&id);
        let campaign = dir.load_campaign()?;
        let miners = dir.load_miners()?;
        let mut submissions = dir.list_submissions()?;
        submissions.sort_by(|a, b| a.sha256.cmp(&b.sha256));
        for n in dir.round_numbers()? {
            bundles.push((campaigns.len(), n, dir.round_dir(n)));
        }
        campaigns.push(CampaignArchive {
            id,
            campaign,
            rounds: Vec::new(),
            submissions,
            miners,
        });
    }

    let epoch = Timestamp::from_unix_seconds(0).map_err(|e| SiteError::InvalidOption {
        field: "at",
        value: "0".to_owned(),
        message: e.to_string(),
    })?;
    let prepared: Vec<Mutex<Prepared>> = {
        use rayon::prelude::*;
        bundles
            .par_iter()
            .map(|(_, _, dir)| {
                let (record, statement_digest) = match read_round_record(dir) {
                    Ok((record, digest)) => (Some(record), Some(digest)),
                    Err(_) => (None, None),
                };
                let at = at.unwrap_or_else(|| record.as_ref().map_or(epoch, |r| r.ended_at));
                let key = bundle_digest(dir)
                    .ok()
                    .map(|digest| verdict_key(&keyring_json, at, &digest));
                let cached = key.as_ref().and_then(|k| verdicts.get(k, dir)).filter(|r| {
                    r.statement_digest.is_some() && r.statement_digest == statement_digest
                });
                Mutex::new(Prepared {
                    claimed_round: record.as_ref().map(|r| r.round),
                    record,
                    statement_digest,
                    at,
                    key,
                    cached,
                })
            })
            .collect()
    };
    let dirs: Vec<PathBuf> = bundles.iter().map(|(_, _, d)| d.clone()).collect();
    let place: BTreeMap<&Path, usize> = dirs
        .iter()
        .enumerate()
        .map(|(i, d)| (d.as_path(), i))
        .collect();
    let verify = |dir: &Path| -> (VerifyReport, Option<RoundRecord>) {
        let Some(mut p) = place.get(dir).and_then(|i| prepared[*i].lock().ok()) else {
            return verifier::verify_round_bundle(dir, keyring, &VerifyOptions::at(epoch));
        };
        if let Some(report) = p.cached.take() {
            return (report, p.record.take());
        }
        p.record = None;
        let (report, record) =
            verifier::verify_round_bundle(dir, keyring, &VerifyOptions::at(p.at));
        if let Some(key) = p.key.take() {
            verdicts.put(key, &report);
        }
        (report, record)
    };
    let (reports, records) = verifier::archive::check_archive_by(&dirs, &verify, &|| {});

    let mut rejected = Vec::new();
    let loaded = bundles
        .into_iter()
        .zip(reports.into_iter().zip(records))
        .zip(prepared);
    for (((campaign, number, dir), (report, record)), prepared) in loaded {
        let prepared = prepared.into_inner().unwrap_or_else(|e| e.into_inner());
        let verified_at = prepared.at;
        match (record, prepared.statement_digest) {
            (Some(record), Some(statement_digest)) if report.passed() && record.round == number => {
                let view = RoundView::from_record(&dir, &record, &report);
                campaigns[campaign].rounds.push(VerifiedRound {
                    number,
                    dir,
                    record,
                    view,
                    report,
                    statement_digest,
                    verified_at,
                });
            }
            _ => {
                rejected.push(RejectedBundle {
                    campaign: campaigns[campaign].id.clone(),
                    number,
                    dir,
                    report,
                    recorded_round: prepared.claimed_round.filter(|r| *r != number),
                    verified_at,
                });
            }
        }
    }
    for campaign in &mut campaigns {
        campaign.rounds.sort_by_key(|r| r.number);
    }
    rejected.sort_by(|a, b| (&a.campaign, a.number).cmp(&(&b.campaign, b.number)));
    let rounds: Vec<verifier::tlog::ArchiveRound<'_>> = (campaigns.iter())
        .flat_map(|c| &c.rounds)
        .map(|r| verifier::tlog::ArchiveRound {
            bundle: &r.dir,
            record: &r.record,
        })
        .collect();
    let log = crate::log::load_log(data.root(), &rounds, keyring);
    drop(rounds);
    Ok(Archive {
        campaigns,
        rejected,
        keyring_json,
        log,
    })
}

/// The campaign directories of the data directory, sorted: every subdirectory whose name
/// is a campaign id and which holds a frozen campaign (`campaign.json` or
/// `campaign.toml`). Hidden entries and other names are not campaigns.
fn campaign_ids(root: &Path) -> Result<Vec<CampaignId>, SiteError> {
    let mut ids = Vec::new();
    let entries = std::fs::read_dir(root).map_err(IoError::at("listing", root))?;
    for entry in entries {
        let entry = entry.map_err(IoError::at("listing", root))?;
        let is_dir = entry
            .file_type()
            .map_err(IoError::at("listing", root))?
            .is_dir();
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        let Ok(id) = name.parse::<CampaignId>() else {
            continue;
        };
        let dir = DataDir::new(root).campaign(&id);
        if is_dir && (dir.campaign_json().is_file() || dir.campaign_toml().is_file()) {
            ids.push(id);
        }
    }
    ids.sort();
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_data_directory_holding_a_private_key_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("demo")).unwrap();
        std::fs::write(tmp.path().join("demo/evaluator.key"), [7u8; 64]).unwrap();
        let err = load_archive(
            &DataDir::new(tmp.path()),
            &Keyring::default(),
            Vec::new(),
            None,
        )
        .unwrap_err();
        match &err {
            SiteError::PrivateKeyInside { data, files, .. } => {
                assert_eq!(data, tmp.path());
                assert_eq!(files, &[tmp.path().join("demo/evaluator.key")]);
            }
            other => panic!("{other}"),
        }
        assert!(err.to_string().starts_with(&format!(
            "refusing to publish `{}`: it holds the private key file(s) `{}`; move them out",
            tmp.path().display(),
            tmp.path().join("demo/evaluator.key").display()
        )));
    }

    #[test]
    fn campaigns_are_the_directories_holding_a_frozen_campaign() {
        let tmp = tempfile::tempdir().unwrap();
        for dir in ["b", "a", "Not-An-Id", ".hidden", "empty"] {
            std::fs::create_dir_all(tmp.path().join(dir)).unwrap();
        }
        for dir in ["b", "a", "Not-An-Id", ".hidden"] {
            std::fs::write(tmp.path().join(dir).join("campaign.json"), "{}").unwrap();
        }
        std::fs::write(tmp.path().join("keyring.json"), "[]").unwrap();
        let ids: Vec<String> = campaign_ids(tmp.path())
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(ids, ["a", "b"]);
    }
}
