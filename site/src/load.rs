//! Loading the archive the site is built from: every campaign of a data directory, its
//! frozen campaign, miners and submission records, and every sealed round verified with
//! the offline verifier as of the earliest witness cosignature on its receipt's log
//! checkpoint, else its own seal time (its `endedAt`, "time not witnessed"), or as of
//! `--at`, so the output does not change with the clock; a campaign whose `[log]
//! required` asks for a witness gets none of its unwitnessed bundles published. Bundles are verified in parallel, each once a
//! build ([`OwnChecks`]), then checked as a chain per campaign; one that fails any check
//! is a [`RejectedBundle`], never a [`RoundListing`] of the archive ([`load_round`] loads
//! a verified round again, as a [`VerifiedRound`], for its own pages, its own checks read
//! back, not verified again).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use receipts::fsutil::IoError;
use receipts::keys::Keyring;
use receipts::layout::{DataDir, find_private_keys, read_sealed_round};
use receipts::model::{Sha256Hex, Timestamp};
use verifier::ChainLink;
use verifier::VerifyReport;
use verifier::view::Verification;

use crate::archive::{
    Archive, AsOf, CampaignArchive, RejectedBundle, RoundListing, SubmissionSummary, VerifiedRound,
};
use crate::error::SiteError;
use crate::incremental::{Checked, OwnChecks};
use crate::verdicts::Verdicts;

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
/// `keyring_json`): [`load_archive_cached`] without a verdict cache. The own checks it
/// keeps are dropped with it: its rounds cannot be loaded again ([`load_round`]).
///
/// Errors: as [`load_archive_cached`].
pub fn load_archive(
    data: &DataDir,
    keyring: &Keyring,
    keyring_json: Vec<u8>,
    at: Option<Timestamp>,
) -> Result<Archive, SiteError> {
    let verdicts = Verdicts::default();
    load_archive_cached(data, &OwnChecks::new(keyring, &keyring_json, &verdicts), at)
}

/// What is known of one bundle once its own checks ran (on its verifying thread: its
/// record is read there, not before, so that no more records are held at once than
/// there are threads).
struct Prepared {
    /// The round its record states.
    claimed_round: Option<u64>,
    /// sha256 of its Statement.
    statement_digest: Option<Sha256Hex>,
    /// The instant it is verified at.
    at: Timestamp,
    /// Why that instant.
    as_of: AsOf,
    /// What was made of it when its own checks passed: its report is not kept past that.
    built: Option<Built>,
}

/// What a bundle whose own checks passed keeps of them, its record and its view, until
/// the checks across rounds say whether it is verified.
struct Built {
    /// The round its record states.
    round: u64,
    /// The key its own checks are kept under ([`Checked::key`]).
    key: Option<Sha256Hex>,
    /// Its summary, made from its view (built from its own report: no field the summary
    /// takes rests on a check across rounds), or why it could not be.
    summary: Result<RoundListing, SiteError>,
}

/// `own` (the summary of a bundle's own checks) with the checks across rounds of
/// `chain` (a report holding only those) added, as [`Verification::of`] the report
/// holding both (own checks first) says.
fn with_chain_checks(own: Verification, chain: &VerifyReport) -> Verification {
    let chain = Verification::of(chain);
    let mut failures = own.failures;
    failures.extend(chain.failures);
    Verification {
        passed: own.passed && chain.passed,
        checks: own.checks + chain.checks,
        failed: failures.len(),
        not_applicable: own.not_applicable + chain.not_applicable,
        failures,
        ..own
    }
}

/// `report` without its checks: what the checks across rounds read of it (its bundle,
/// Statement digest and type), and where they are recorded.
fn without_checks(report: &VerifyReport) -> VerifyReport {
    VerifyReport {
        bundle: report.bundle.clone(),
        checks: Vec::new(),
        statement_digest: report.statement_digest,
        predicate_type: report.predicate_type.clone(),
        signed_by: report.signed_by.clone(),
    }
}

/// Loads and verifies everything under `data` with `own` (its keyring, verdicts and
/// the bundles' own checks, [`OwnChecks`]). Each bundle is verified as of `at` when
/// given, else as of the earliest witness cosignature on its receipt's log checkpoint
/// (`verifier::publication::earliest_witness`), else as of the `endedAt` its own record
/// states, "time not witnessed" ([`AsOf`]; a bundle whose record cannot be read is
/// verified as of the Unix epoch: it fails either way). A bundle with no witness
/// cosignature of a campaign whose `[log] required` asks for one fails
/// `log.publication` and is rejected. Its own checks are
/// found once ([`OwnChecks::check`]: a verdict an earlier build kept for it, else the
/// verifier's); the checks across rounds run on every build, on every bundle.
/// A bundle is verified only when every check passed and it records the round its
/// directory names. A bundle's report, record and view are held only while its
/// [`RoundListing`] and [`ChainLink`] are made (one bundle per verifying thread): the
/// checks across rounds run on the links, and [`load_round`] loads a round again for its
/// own pages. A bundle whose own checks passed but whose checks across rounds failed has
/// its own checks read back ([`OwnChecks::recall`]) for the rejected page's list of
/// checks.
///
/// Errors: [`SiteError::PrivateKeyInside`] when the data directory holds a private key
/// file (it must not be published); [`SiteError::Data`] when a campaign, its miners or a
/// submission record cannot be read or parsed (naming the file); [`SiteError::Io`] when
/// a directory cannot be listed; [`SiteError::InvalidId`] when a verified round's entry
/// cannot name a path; [`SiteError::VerdictLost`] when a rejected bundle's own checks
/// cannot be read back.
pub fn load_archive_cached(
    data: &DataDir,
    own: &OwnChecks<'_>,
    at: Option<Timestamp>,
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
    for id in data.campaign_ids()? {
        let dir = data.campaign(&id);
        let campaign = dir.load_campaign()?;
        let miners = dir.load_miners()?;
        let mut submissions = dir.list_submissions_by(|path, bytes, record| {
            SubmissionSummary::of(path, bytes, &record)
        })?;
        submissions.sort_by_key(|a| a.sha256);
        for n in dir.round_numbers()? {
            bundles.push((campaigns.len(), n, dir.round_dir(n)));
        }
        campaigns.push(CampaignArchive {
            id,
            campaign,
            rounds: Vec::new(),
            submissions,
            miners,
            title: None,
        });
    }

    let epoch = Timestamp::from_unix_seconds(0).map_err(|e| SiteError::InvalidOption {
        field: "at",
        value: "0".to_owned(),
        message: e.to_string(),
    })?;
    let prepared: Vec<Mutex<Prepared>> = (bundles.iter())
        .map(|_| {
            Mutex::new(Prepared {
                claimed_round: None,
                statement_digest: None,
                at: at.unwrap_or(epoch),
                as_of: if at.is_some() {
                    AsOf::Given
                } else {
                    AsOf::NotWitnessed
                },
                built: None,
            })
        })
        .collect();
    let dirs: Vec<PathBuf> = bundles.iter().map(|(_, _, d)| d.clone()).collect();
    let place: BTreeMap<&Path, usize> = dirs
        .iter()
        .enumerate()
        .map(|(i, d)| (d.as_path(), i))
        .collect();
    let verify = |dir: &Path| -> (VerifyReport, Option<ChainLink>) {
        let Some((i, mut p)) = place
            .get(dir)
            .and_then(|i| Some((*i, prepared[*i].lock().ok()?)))
        else {
            let checked = own.check(dir, epoch, None, None);
            return (checked.report, checked.record.as_ref().map(ChainLink::of));
        };
        // Its record, read here: it says the instant it is verified at.
        let (read, subjects, statement_digest) = match read_sealed_round(dir) {
            Ok(sealed) => (
                Some(sealed.record),
                sealed.subjects,
                Some(sealed.statement_digest),
            ),
            Err(_) => (None, Vec::new(), None),
        };
        // As of the earliest witness cosignature on its receipt's checkpoint when there
        // is one (a key retired before it signed nothing that claims an earlier time),
        // else as of its own `endedAt`; `--at` overrides both.
        let policy = campaigns[bundles[i].0].campaign.campaign.effective_log();
        let witness = read.as_ref().map_or_else(
            || Err("its record does not read".to_owned()),
            |r| verifier::publication::earliest_witness(dir, r, own.keyring(), &policy),
        );
        let ended_at = read.as_ref().map_or(epoch, |r| r.ended_at);
        (p.at, p.as_of) = match (at, &witness) {
            (Some(at), _) => (at, AsOf::Given),
            (None, Ok(w)) => (w.at, AsOf::Witnessed(w.clone())),
            (None, Err(_)) => (ended_at, AsOf::NotWitnessed),
        };
        p.claimed_round = read.as_ref().map(|r| r.round);
        p.statement_digest = statement_digest;
        let round = p.claimed_round.unwrap_or(bundles[i].1);
        let Checked {
            mut report,
            record,
            key,
        } = own.check(dir, p.at, p.statement_digest.as_ref(), read);
        if policy.required && witness.is_err() {
            // Refused: the campaign publishes only as of a witnessed log.
            verifier::publication::check_publication(&mut report, round, &witness, &policy);
        }
        let link = record.as_ref().map(ChainLink::of);
        let report = match (record, p.statement_digest) {
            (Some(record), Some(digest)) if report.passed() => {
                let round = record.round;
                let at = p.at;
                let mut verified =
                    VerifiedRound::new(bundles[i].1, dir, record, &report, &subjects, digest, at);
                verified.as_of = p.as_of.clone();
                let summary = RoundListing::of(&verified).map(|summary| RoundListing {
                    verdict_key: key,
                    ..summary
                });
                p.built = Some(Built {
                    round,
                    key,
                    summary,
                });
                without_checks(&report)
            }
            _ => report,
        };
        (report, link)
    };
    let reports = verifier::archive::check_archive_links(&dirs, &verify, &|| {});

    let mut rejected = Vec::new();
    let loaded = bundles.into_iter().zip(reports).zip(prepared);
    for (((campaign, number, dir), report), prepared) in loaded {
        let prepared = prepared.into_inner().unwrap_or_else(|e| e.into_inner());
        let verified_at = prepared.at;
        let as_of = prepared.as_of.clone();
        match prepared.built {
            Some(built) if report.passed() && built.round == number => {
                campaigns[campaign].rounds.push(RoundListing {
                    chain: report,
                    ..built.summary?
                });
            }
            built => {
                // Own checks that passed were not kept with it: read back, the checks
                // across rounds after them, as in one report.
                let report = match built {
                    Some(built) => {
                        let mut checks = own.recall(built.key.as_ref(), &dir)?;
                        checks.checks.extend(report.checks);
                        checks
                    }
                    None => report,
                };
                rejected.push(RejectedBundle {
                    campaign: campaigns[campaign].id.clone(),
                    number,
                    dir,
                    report,
                    recorded_round: prepared.claimed_round.filter(|r| *r != number),
                    verified_at,
                    as_of,
                });
            }
        }
    }
    for campaign in &mut campaigns {
        campaign.rounds.sort_by_key(|r| r.number);
        crate::archive::set_seats(&mut campaign.rounds);
        campaign.title = load_title(data, campaign, own.keyring());
    }
    rejected.sort_by(|a, b| (&a.campaign, a.number).cmp(&(&b.campaign, b.number)));
    let rounds: Vec<verifier::tlog::ArchiveRound<'_>> = (campaigns.iter())
        .flat_map(|c| &c.rounds)
        .map(|r| verifier::tlog::ArchiveRound {
            bundle: &r.dir,
            record: &r.log,
        })
        .collect();
    let log = crate::tlog::load_log(data.root(), &rounds, own.keyring());
    drop(rounds);
    Ok(Archive {
        campaigns,
        rejected,
        keyring_json: own.keyring_json().to_vec(),
        log,
    })
}

/// The title of `campaign` from its verified rounds, their records read again one
/// campaign at a time, and its revocations ([`verifier::title::derive_campaign_title`]);
/// `None` before a round verified.
fn load_title(
    data: &DataDir,
    campaign: &CampaignArchive,
    keyring: &Keyring,
) -> Option<Result<verifier::title::DerivedTitle, String>> {
    let first = campaign.rounds.first()?;
    let records = (campaign.rounds.iter())
        .map(|r| read_sealed_round(&r.dir).map(|sealed| sealed.record))
        .collect::<Result<Vec<_>, _>>();
    let records = match records {
        Ok(records) => records,
        Err(e) => return Some(Err(e.to_string())),
    };
    let refs: Vec<&receipts::model::RoundRecord> = records.iter().collect();
    let dir = data.campaign(&campaign.id);
    verifier::title::derive_campaign_title(dir.root(), &first.dir, &refs, keyring).transpose()
}

/// The round `round` of the archive, loaded again for its own pages: its record read
/// from its bundle, its own report read back from `own` (which checked it when the
/// archive was loaded, [`OwnChecks::recall`]: never verified again); its view built from
/// them and its checks across rounds ([`RoundListing::chain`]) added, exactly as when
/// the archive was loaded.
///
/// Errors: [`SiteError::BundleChanged`] when the bundle's record no longer reads or its
/// Statement is not the one verified; [`SiteError::VerdictLost`] when `own` holds no
/// report of its own checks.
pub fn load_round(round: &RoundListing, own: &OwnChecks<'_>) -> Result<VerifiedRound, SiteError> {
    let changed = |message: String| SiteError::BundleChanged {
        dir: round.dir.clone(),
        message,
    };
    let sealed = read_sealed_round(&round.dir).map_err(|e| changed(e.to_string()))?;
    let digest = sealed.statement_digest;
    if digest != round.statement_digest {
        return Err(changed(format!(
            "its Statement's sha256 is {digest}, {} when it was verified",
            round.statement_digest
        )));
    }
    let report = own.recall(round.verdict_key.as_ref(), &round.dir)?;
    if report.statement_digest != Some(digest) {
        return Err(changed(format!(
            "its Statement's sha256 was {}, not {digest}, when its own checks ran",
            report
                .statement_digest
                .map_or_else(|| "unknown".to_owned(), |d| d.to_string())
        )));
    }
    let mut loaded = VerifiedRound::new(
        round.number,
        &round.dir,
        sealed.record,
        &report,
        &sealed.subjects,
        digest,
        round.verified_at,
    );
    loaded.as_of = round.as_of.clone();
    loaded.view.verification = with_chain_checks(loaded.view.verification, &round.chain);
    Ok(loaded)
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
}
