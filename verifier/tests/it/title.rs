//! `title.chain` (content/title.md, What the verifier recomputes): a campaign's title
//! recomputed from its sealed rounds and signed revocations; a chain whose title moved
//! without cause, and a revocation that does not hold, fail it.

use std::path::Path;

use crate::forge::*;
use receipts::bundle::{read_statement_digest, sign_statement};
use receipts::keys::PrivateKey;
use receipts::model::{Leader, Sha256Hex, Timestamp};
use receipts::statement::Statement;
use receipts::tlog::entry::EntryKind;
use receipts::tlog::statements::{
    REVOCATION_PREDICATE_TYPE, RevocationPredicate, statement_path, submission_subject,
};
use serde_json::{Value, json};
use verifier::archive::{find_bundles, verify_data};
use verifier::{CheckName, FailureReason, VerifyOptions};

/// Forges the fixture as round `round` of `data/tiny` after `previous`, with `receipt`
/// applied; returns its Statement digest.
fn round_into(
    data: &Path,
    round: u64,
    previous: Option<&Sha256Hex>,
    receipt: impl FnOnce(&mut Value),
) -> Sha256Hex {
    let dir = data.join("tiny/rounds").join(round.to_string());
    let previous = previous.map_or(Value::Null, |d| json!(d.to_string()));
    let opened_previous = previous.clone();
    forge_from(
        &fixture_named("v6-round"),
        &dir,
        |_| {},
        |p| {
            p["round"] = json!(round);
            p["previousReceipt"] = opened_previous;
        },
        |p| {
            p["round"] = json!(round);
            p["previousReceipt"] = previous;
            receipt(p);
        },
    );
    read_statement_digest(&dir.join(receipts::bundle::ENVELOPE_FILE)).expect("digest")
}

/// Two rounds of the fixture (whose challenger `miner-fast` did not meet the margin: the
/// title stays vacant), the second with `second` applied, in a campaign directory with
/// `submissions/`; returns the data directory and `miner-fast`'s seat.
fn two_rounds(second: impl FnOnce(&mut Value, &Leader)) -> (tempfile::TempDir, Leader) {
    let data = tempfile::tempdir().expect("tempdir");
    let first = round_into(data.path(), 1, None, |_| {});
    let record = statement(
        &data.path().join("tiny/rounds/1"),
        receipts::bundle::ENVELOPE_FILE,
    );
    let entry = record["predicate"]["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .find(|e| e["miner"] == "miner-fast")
        .expect("miner-fast's entry")
        .clone();
    let fast = Leader {
        patch: entry["patch"]
            .as_str()
            .expect("patch")
            .parse()
            .expect("sha"),
        miner: "miner-fast".parse().expect("miner id"),
    };
    round_into(data.path(), 2, Some(&first), |p| second(p, &fast));
    std::fs::create_dir_all(data.path().join("tiny/submissions")).expect("mkdir");
    (data, fast)
}

/// `title.chain` of the campaign: `Ok` or its failure.
fn title_chain(data: &Path) -> Result<(), FailureReason> {
    let bundles = find_bundles(data).expect("bundles");
    let reports = verify_data(&bundles, &[], &keyring(), &VerifyOptions::default(), &|| {});
    let [campaign] = reports.submissions.as_slice() else {
        panic!("one campaign report: {:?}", reports.submissions);
    };
    let check = campaign
        .checks
        .iter()
        .find(|c| c.name == CheckName::TitleChain)
        .expect("title.chain recorded");
    match &check.reason {
        None => Ok(()),
        Some(reason) => Err(reason.clone()),
    }
}

/// Signs a revocation of `entry` of round `round`, logged after round `after`, with
/// `signer`, into the campaign's `statements/revocation/`.
fn revoke(data: &Path, round: u64, entry: &Leader, after: u64, signer: &PrivateKey) {
    let predicate = RevocationPredicate {
        campaign: "tiny".parse().expect("campaign id"),
        round,
        entry: entry.clone(),
        reason: "replayed cached outputs".to_owned(),
        after_round: after,
        revoked_at: "2026-12-02T00:00:00Z".parse::<Timestamp>().expect("time"),
    };
    let statement = Statement::new(
        vec![submission_subject(&entry.patch, &entry.patch)],
        REVOCATION_PREDICATE_TYPE,
        serde_json::to_value(&predicate).expect("json"),
    );
    let bytes = sign_statement(&statement, &[signer])
        .expect("sign")
        .to_file_bytes()
        .expect("bytes");
    let path = statement_path(
        &data.join("tiny"),
        EntryKind::Revocation,
        &Sha256Hex::digest(&bytes),
    );
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, bytes).expect("write");
}

#[test]
fn a_chain_of_regular_rounds_and_a_revocation_derives_its_title() {
    let (data, fast) = two_rounds(|p, _| p["kind"] = json!({"name": "regular"}));
    assert_eq!(title_chain(data.path()), Ok(()));
    revoke(data.path(), 1, &fast, 2, &key());
    assert_eq!(title_chain(data.path()), Ok(()));
}

/// Round 2 claims to re-measure `miner-fast` as the holder, but no round gave it the
/// title: the title moved without cause.
#[test]
fn a_round_measuring_a_holder_the_chain_does_not_give_fails_title_chain() {
    let (data, fast) = two_rounds(|p, fast| {
        p["kind"] =
            json!({"name": "remeasure", "holder": {"patch": fast.patch, "miner": fast.miner}});
    });
    let campaign = data.path().join("tiny").display().to_string();
    assert_eq!(
        title_chain(data.path()),
        Err(FailureReason::TitleChain {
            campaign,
            message: format!(
                "round 2 measured miner-fast ({}) as the title's holder, but the chain before it gives vacant: the title moved without cause",
                fast.patch
            ),
        })
    );
}

/// A revocation of an entry its round did not seat, or one its keyring does not trust,
/// fails `title.chain`.
#[test]
fn a_revocation_that_does_not_hold_fails_title_chain() {
    let (data, fast) = two_rounds(|_, _| {});
    revoke(data.path(), 3, &fast, 2, &key());
    let Err(FailureReason::TitleChain { message, .. }) = title_chain(data.path()) else {
        panic!("title.chain fails");
    };
    assert!(
        message.ends_with("of round 3, which no round sealed by round 2 seated"),
        "{message}"
    );

    let (data, fast) = two_rounds(|_, _| {});
    revoke(data.path(), 1, &fast, 2, &PrivateKey::from_seed(&[7; 32]));
    let Err(FailureReason::TitleChain { message, .. }) = title_chain(data.path()) else {
        panic!("title.chain fails");
    };
    assert!(message.contains("no evaluator key valid at"), "{message}");
}

/// `title.round` on the v7 fixture: `kind` and `clock` are required, and a kind naming an
/// entry the round did not seat fails.
#[test]
fn a_v7_round_without_its_kind_or_naming_an_unseated_holder_fails_title_round() {
    let forged_v7 = |edit: &dyn Fn(&mut Value)| {
        let dir = tempfile::tempdir().expect("tempdir");
        forge_from(
            &fixture_named("v7-round"),
            dir.path(),
            |_| {},
            |_| {},
            |p| edit(p),
        );
        only(&verify(dir.path()), CheckName::TitleRound)
    };
    assert_eq!(
        forged_v7(&|p| {
            p.as_object_mut().expect("predicate").remove("kind");
        }),
        FailureReason::TitleRound {
            field: "kind".to_owned(),
            message: "missing (required from v7)".to_owned(),
        }
    );
    assert_eq!(
        forged_v7(&|p| {
            p.as_object_mut().expect("predicate").remove("clock");
        }),
        FailureReason::TitleRound {
            field: "clock".to_owned(),
            message: "missing (required from v7)".to_owned(),
        }
    );
    let stranger = Sha256Hex::digest(b"a submission no round seated");
    assert_eq!(
        forged_v7(&|p| {
            p["kind"] =
                json!({"name": "remeasure", "holder": {"patch": stranger, "miner": "miner-fast"}});
        }),
        FailureReason::TitleRound {
            field: "kind.holder".to_owned(),
            message: format!("names miner-fast ({stranger}), which the round did not seat"),
        }
    );
}
