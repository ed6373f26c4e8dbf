//! The checks before a round opens or resumes (content/receipts.md; content/receipts.md §Keys): no
//! private key file lies inside the data directory, which is published; the
//! signing key is trusted now by the data directory's keyring (and, when the campaign
//! lists `evaluator_keyids`, one of them); `miners.json` parses; and the previous round's
//! bundle verifies against that keyring — every number recomputed from its files, and
//! its link to the round before it (`verifier::verify_last_round`) — before its seat
//! (`outcome.leaderAfter`) and its Statement digest are taken, with the campaign
//! unchanged since that round ran (a campaign is frozen once a round has run). Each
//! refusal is a typed [`RoundError`] and happens before anything of the round is written.
//! The verified previous round also says whether the next one re-measures its incumbent
//! alone (content/leader-rule.md).

use receipts::keys::{Keyring, PrivateKey};
use receipts::model::{
    Campaign, FrozenCampaign, Leader, ROUND_PREDICATE_TYPES, Sha256Hex, Timestamp,
};
use receipts::rules::leader;
use verifier::verify_last_round;
use verifier::{VerifyOptions, VerifyReport};

use super::RoundError;
use receipts::layout::{CampaignDir, DataDir, DataError, default_key_dir, read_round_record};

/// The key directory the refusal's hint names when neither `XDG_CONFIG_HOME` nor `HOME`
/// is set.
const FALLBACK_KEY_DIR: &str = "~/.config/referee/keys";

/// Refuses a data directory that holds a private key file ([`DataDir::private_keys`]:
/// a `*.key` file, or any file holding a key seed): the data directory is published, so
/// the key would be too. The error names every file and the commands that move them into
/// the default key directory ([`default_key_dir`]).
///
/// Errors: [`RoundError::Data`] with [`DataError::PrivateKeyInside`], or
/// [`DataError::Io`] when the directory cannot be scanned.
pub(crate) fn check_no_private_keys(data: &DataDir) -> Result<(), RoundError> {
    let found = data.private_keys()?;
    if found.is_empty() {
        return Ok(());
    }
    let key_dir = default_key_dir().unwrap_or_else(|| FALLBACK_KEY_DIR.into());
    Err(RoundError::Data(DataError::private_keys_inside(
        data.root(),
        "the data directory",
        found,
        &key_dir,
        "referee round",
    )))
}

/// What a verified previous round hands the next one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Previous {
    /// sha256 of its Statement, from the verification report (`previousReceipt`).
    pub receipt: Option<Sha256Hex>,
    /// Its `outcome.leaderAfter`: the incumbent of the next round.
    pub leader: Option<Leader>,
    /// Rounds in a row, ending with it, that the incumbent's runs made `infra_failed`
    /// ([`leader::incumbent_infra_failed_rounds`] of its outcome).
    pub incumbent_infra_failed_rounds: u32,
}

impl Previous {
    /// Whether the next round seats the queued challengers: not when it re-measures the
    /// incumbent alone ([`leader::remeasures_alone`]), which seats only the baseline and
    /// the incumbent.
    pub fn seats_challengers(&self) -> bool {
        self.leader.is_none() || !leader::remeasures_alone(self.incumbent_infra_failed_rounds)
    }
}

/// Refuses a data directory that holds a private key ([`check_no_private_keys`], first),
/// and a signing key that the keyring at `data.keyring_path()` does not trust at `now`,
/// or that is outside the campaign's non-empty `evaluator_keyids`; returns the keyring.
///
/// Errors: [`DataError::PrivateKeyInside`] (as [`RoundError::Data`]),
/// [`RoundError::KeyNotAllowed`], [`RoundError::Keyring`] (the keyring file is missing or
/// invalid), [`RoundError::KeyNotTrusted`].
pub(crate) fn check_key(
    data: &DataDir,
    campaign: &Campaign,
    key: &PrivateKey,
    now: Timestamp,
) -> Result<Keyring, RoundError> {
    check_no_private_keys(data)?;
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

/// Verifies the last sealed round of `campaign_dir` (if any) against `keyring` at `now`,
/// with the checks across rounds against the round before it
/// ([`verify_last_round`]), and checks that `campaign` has the digest that round
/// recorded; returns its Statement digest and seat.
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
    let rounds = campaign_dir.round_numbers()?;
    let Some(&previous) = rounds.last() else {
        return Ok(Previous::default());
    };
    let dir = campaign_dir.round_dir(previous);
    let before = rounds
        .len()
        .checked_sub(2)
        .and_then(|i| rounds.get(i))
        .map(|&n| campaign_dir.round_dir(n));
    // A previous round of any predicate version this build verifies seats its leader, so
    // a campaign goes on across an upgrade (ARCHITECTURE.md, Predicate versions). Every
    // check of its bundle, and the chain's against the round before it.
    let report = verify_last_round(&dir, before.as_deref(), keyring, &VerifyOptions::at(now));
    let predicate_type = report.predicate_type.clone().unwrap_or_default();
    if report.passed() && !ROUND_PREDICATE_TYPES.contains(&predicate_type.as_str()) {
        return Err(RoundError::PreviousUnverified {
            bundle: dir,
            failures: vec![format!(
                "statement.predicateType: `{predicate_type}` is not a round predicate this build \
                 verifies ({})",
                ROUND_PREDICATE_TYPES.join(", ")
            )],
        });
    }
    let digest = match (&report.statement_digest, report.passed()) {
        (Some(digest), true) => *digest,
        _ => {
            return Err(RoundError::PreviousUnverified {
                bundle: dir,
                failures: failed_checks(&report),
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
            digest: Box::new(frozen.digest),
            frozen: Box::new(record.campaign.digest),
            round: previous,
        });
    }
    Ok(Previous {
        receipt: Some(digest),
        incumbent_infra_failed_rounds: leader::incumbent_infra_failed_rounds(&record.outcome),
        leader: record.outcome.leader_after,
    })
}

/// Every failed check of `report` as `name[ `target`]: reason`.
pub(crate) fn failed_checks(report: &VerifyReport) -> Vec<String> {
    report
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
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: preflight asked for the current predicate type only, so a campaign
    /// whose last round was sealed as v1 could not run its next round after an upgrade.
    #[test]
    fn a_v1_previous_round_seats_its_leader() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let data = tempfile::tempdir().unwrap();
        let campaign_dir = DataDir::new(data.path()).campaign(&"tiny".parse().unwrap());
        let round = campaign_dir.round_dir(1);
        std::fs::create_dir_all(&round).unwrap();
        let fixture = root.join("verifier/tests/fixtures/v1-round");
        copy_tree(&fixture, &round);
        std::fs::copy(
            root.join("receipts/tests/fixtures/v1-campaign.toml"),
            campaign_dir.campaign_toml(),
        )
        .unwrap();
        let frozen = campaign_dir.load_campaign().unwrap();
        let keyring = Keyring::load(&root.join("verifier/tests/fixtures/v1-keyring.json")).unwrap();
        let previous = check_previous(&campaign_dir, &frozen, &keyring, Timestamp::now()).unwrap();
        assert_eq!(
            previous.receipt.unwrap().as_str(),
            "7ca7a7a7a4aab47969e60acf17a90f699aacf2adac1d8ccd6680af65888ff97e"
        );
        assert_eq!(previous.leader, None);
    }

    /// Signs the round-opened statement and the receipt of the bundle `dir` again with
    /// `key`, `edit` applied to both predicates first and every subject rehashed: what an
    /// evaluator holding the key can do.
    fn resign(dir: &std::path::Path, key: &PrivateKey, edit: impl Fn(&mut serde_json::Value)) {
        use receipts::bundle::{ENVELOPE_FILE, MAX_ENVELOPE_BYTES, sign_statement};
        for file in ["round-opened.dsse.json", ENVELOPE_FILE] {
            let bytes = std::fs::read(dir.join(file)).unwrap();
            let envelope = receipts::dsse::Envelope::from_json(&bytes, MAX_ENVELOPE_BYTES).unwrap();
            let mut statement: serde_json::Value =
                serde_json::from_slice(&envelope.payload).unwrap();
            edit(&mut statement["predicate"]);
            for subject in statement["subject"].as_array_mut().unwrap() {
                let name = subject["name"].as_str().unwrap().to_owned();
                let digest = Sha256Hex::digest(&std::fs::read(dir.join(&name)).unwrap());
                subject["digest"]["sha256"] = serde_json::json!(digest.to_string());
            }
            let statement = serde_json::from_value(statement).unwrap();
            let envelope = sign_statement(&statement, &[key]).unwrap();
            std::fs::write(dir.join(file), envelope.to_file_bytes().unwrap()).unwrap();
        }
    }

    /// Issue 13: preflight verified the previous round alone, so a round 2 re-signed with
    /// the evaluator's key that forks off another round 1, or seats a leader round 1 did
    /// not leave, handed the next round its seat. Its link to round 1 is checked too.
    #[test]
    fn a_previous_round_that_does_not_follow_the_one_before_is_refused() {
        use receipts::keys::TrustedKey;
        use serde_json::{Value, json};
        use verifier::FailureReason;
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let fixture = root.join("verifier/tests/fixtures/v2-round");
        let data = tempfile::tempdir().unwrap();
        let campaign_dir = DataDir::new(data.path()).campaign(&"tiny".parse().unwrap());
        let key = PrivateKey::from_seed(&[0x5a; 32]);
        let keyring = Keyring::new(vec![TrustedKey {
            key: key.public().clone(),
            valid_from: Timestamp::from_unix_seconds(0).unwrap(),
            valid_until: None,
        }])
        .unwrap();
        let first = campaign_dir.round_dir(1);
        std::fs::create_dir_all(&first).unwrap();
        copy_tree(&fixture, &first);
        resign(&first, &key, |_| {});
        std::fs::copy(
            fixture.join("inputs/campaign.json"),
            campaign_dir.campaign_json(),
        )
        .unwrap();
        let frozen = campaign_dir.load_campaign().unwrap();
        let (_, first_digest) = read_round_record(&first).unwrap();
        let second = campaign_dir.round_dir(2);
        // Round 2: the fixture again, numbered 2 after `previous`, `leaderBefore` set.
        let previous_round = |previous: &Sha256Hex, leader_before: Value| {
            if second.exists() {
                std::fs::remove_dir_all(&second).unwrap();
            }
            std::fs::create_dir_all(&second).unwrap();
            copy_tree(&fixture, &second);
            resign(&second, &key, |p| {
                p["round"] = json!(2);
                p["previousReceipt"] = json!(previous.to_string());
                if let Some(outcome) = p.get_mut("outcome") {
                    outcome["leaderBefore"] = leader_before.clone();
                }
            });
            check_previous(&campaign_dir, &frozen, &keyring, Timestamp::now())
        };
        let refused = |result: Result<Previous, RoundError>| match result {
            Err(RoundError::PreviousUnverified { bundle, failures }) => {
                assert_eq!(bundle, second);
                failures
            }
            other => panic!("{other:?}"),
        };
        let at = |name: &str, reason: FailureReason| {
            vec![format!("{name} `{}`: {reason}", second.display())]
        };

        let honest = previous_round(&first_digest, Value::Null).unwrap();
        let (_, second_digest) = read_round_record(&second).unwrap();
        assert_eq!(honest.receipt, Some(second_digest));
        assert_eq!(honest.leader, None);

        let other = Sha256Hex::digest(b"another round 1");
        assert_eq!(
            refused(previous_round(&other, Value::Null)),
            at(
                "chain.previousReceipt",
                FailureReason::ChainFork {
                    round: 2,
                    claimed: Some(Box::new(other)),
                    recomputed: Some(Box::new(first_digest)),
                }
            )
        );

        let fast = json!({
            "miner": "fast",
            "patch": "f98bb8888a2454cec792fdb3057f7a3f604e2afd317a4b644b9913f86e318dfc",
        });
        assert_eq!(
            refused(previous_round(&first_digest, fast)),
            at(
                "chain.incumbent",
                FailureReason::ChainIncumbent {
                    round: 2,
                    field: "outcome.leaderBefore".into(),
                    claimed: "f98bb8888a2454cec792fdb3057f7a3f604e2afd317a4b644b9913f86e318dfc \
                              (fast)"
                        .into(),
                    previous: 1,
                    recomputed: "baseline".into(),
                }
            )
        );
    }

    fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let dest = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                std::fs::create_dir_all(&dest).unwrap();
                copy_tree(&entry.path(), &dest);
            } else {
                std::fs::copy(entry.path(), dest).unwrap();
            }
        }
    }
}
