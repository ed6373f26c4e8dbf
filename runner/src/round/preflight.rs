//! The checks before a round opens or resumes (DESIGN.md §5; RECEIPTS.md §Keys): the
//! signing key is trusted now by the data directory's keyring (and, when the campaign
//! lists `evaluator_keyids`, one of them); `miners.json` parses; and the previous round's
//! bundle verifies against that keyring before its seat (`outcome.leaderAfter`) and its
//! Statement digest are taken, with the campaign unchanged since that round ran (a
//! campaign is frozen once a round has run). Each refusal is a typed [`RoundError`] and
//! happens before anything of the round is written.

use receipts::keys::{Keyring, PrivateKey};
use receipts::model::{
    Campaign, FrozenCampaign, Leader, ROUND_PREDICATE_TYPE, Sha256Hex, Timestamp,
};
use receipts::verify::VerifyOptions;
use verifier::verify_bundle;

use super::RoundError;
use receipts::layout::{CampaignDir, DataDir, read_round_record};

/// What a verified previous round hands the next one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Previous {
    /// sha256 of its Statement, from the verification report (`previousReceipt`).
    pub receipt: Option<Sha256Hex>,
    /// Its `outcome.leaderAfter`: the incumbent of the next round.
    pub leader: Option<Leader>,
}

/// Refuses a signing key that the keyring at `data.keyring_path()` does not trust at
/// `now`, or that is outside the campaign's non-empty `evaluator_keyids`; returns the
/// keyring.
///
/// Errors: [`RoundError::KeyNotAllowed`], [`RoundError::Keyring`] (the keyring file is
/// missing or invalid), [`RoundError::KeyNotTrusted`].
pub(crate) fn check_key(
    data: &DataDir,
    campaign: &Campaign,
    key: &PrivateKey,
    now: Timestamp,
) -> Result<Keyring, RoundError> {
    if !campaign.evaluator_keyids.is_empty()
        && !campaign
            .evaluator_keyids
            .iter()
            .any(|k| k.as_str() == key.keyid())
    {
        return Err(RoundError::KeyNotAllowed {
            keyid: key.keyid().to_owned(),
        });
    }
    let path = data.keyring_path();
    let keyring = Keyring::load(&path).map_err(|source| RoundError::Keyring {
        path: path.clone(),
        source,
    })?;
    let why = match keyring.find(key.public().as_bytes()) {
        None => "it is not in the keyring".to_owned(),
        Some(trusted) if !trusted.is_valid_at(now) => format!(
            "it is valid from {} until {}, not at {now}",
            trusted.valid_from,
            trusted
                .valid_until
                .map_or_else(|| "open-ended".to_owned(), |t| t.to_string())
        ),
        Some(_) => return Ok(keyring),
    };
    Err(RoundError::KeyNotTrusted {
        keyid: key.keyid().to_owned(),
        keyring: path,
        why,
    })
}

/// Verifies the last sealed round of `campaign_dir` (if any) against `keyring` at `now`
/// and checks that `campaign` has the digest that round recorded; returns its Statement
/// digest and seat.
///
/// Errors: [`RoundError::PreviousUnverified`] naming the bundle and every failed check;
/// [`RoundError::PreviousRound`] when its predicate cannot be read;
/// [`RoundError::CampaignChanged`] naming both digests; [`RoundError::Data`].
pub(crate) fn check_previous(
    campaign_dir: &CampaignDir,
    frozen: &FrozenCampaign,
    keyring: &Keyring,
    now: Timestamp,
) -> Result<Previous, RoundError> {
    let Some(&previous) = campaign_dir.round_numbers()?.last() else {
        return Ok(Previous::default());
    };
    let dir = campaign_dir.round_dir(previous);
    let options = VerifyOptions {
        expected_predicate_type: Some(ROUND_PREDICATE_TYPE.to_owned()),
        ..VerifyOptions::at(now)
    };
    let report = verify_bundle(&dir, keyring, &options);
    let digest = match (&report.statement_digest, report.passed()) {
        (Some(digest), true) => digest.clone(),
        _ => {
            return Err(RoundError::PreviousUnverified {
                bundle: dir,
                failures: report
                    .failures()
                    .map(|check| {
                        let target = check
                            .target
                            .as_ref()
                            .map_or_else(String::new, |t| format!(" `{t}`"));
                        let reason = check
                            .reason
                            .as_ref()
                            .map_or_else(String::new, |r| format!(": {r}"));
                        format!("{}{target}{reason}", check.name.as_str())
                    })
                    .collect(),
            });
        }
    };
    let (record, _) = read_round_record(&dir)?;
    if frozen.digest != record.campaign.digest {
        let path = if frozen.schema_version == 1 {
            campaign_dir.campaign_toml()
        } else {
            campaign_dir.campaign_json()
        };
        return Err(RoundError::CampaignChanged {
            path,
            digest: frozen.digest.clone(),
            frozen: record.campaign.digest,
            round: previous,
        });
    }
    Ok(Previous {
        receipt: Some(digest),
        leader: record.outcome.leader_after,
    })
}
