//! Publication as of a witnessed log (content/transparency-log.md, Witnesses): the v6
//! fixture round, marked logged and re-signed with a key the keyring retires, in a data
//! directory with its proofs beside it. The site checks its keys as of the earliest
//! witness cosignature on its receipt's checkpoint: a backdated bundle (its `endedAt`
//! inside the key's window, its cosignature after it) is refused; cosigned inside the
//! window it is published as of the cosignature; without a cosignature it is published
//! as of its `endedAt`, "time not witnessed", unless its campaign's `[log] required`
//! asks for one.

use std::path::Path;

use receipts::bundle::ENVELOPE_FILE;
use receipts::keys::{KeyRole, Keyring, PrivateKey, RoleKey, TrustedKey};
use receipts::layout::{DataDir, read_sealed_round};
use receipts::model::Timestamp;
use receipts::tlog::checkpoint::Checkpoint;
use receipts::tlog::cosignature;
use receipts::tlog::entry::{EntryKind, LogEntry};
use receipts::tlog::merkle::{Hash, prove_inclusion, tree_root};
use receipts::tlog::proof::{TlogProof, round_proof_path};
use serde_json::{Value, json};
use site::archive::{Archive, AsOf};
use testkit::forge;

const ORIGIN: &str = "referee.example/log";
const WITNESS: &str = "witness.example";

/// The fixture round's `endedAt`, and the instants around it the tests use.
const ENDED_AT: &str = "2026-12-07T10:25:53.22424Z";
const RETIRED_AT: &str = "2026-12-08T00:00:00Z";

fn ts(text: &str) -> Timestamp {
    text.parse().expect("timestamp")
}

fn unix(text: &str) -> u64 {
    ts(text).datetime().unix_timestamp() as u64
}

fn log_key() -> PrivateKey {
    PrivateKey::from_seed(&[0x10; 32])
}

fn witness_key() -> PrivateKey {
    PrivateKey::from_seed(&[0x20; 32])
}

/// A data directory `<root>/data` holding campaign `by-hand` with the v6 fixture as its
/// round 1, logged at index 0 (its opening) and 1 (its receipt) of [`ORIGIN`], both
/// envelopes re-signed with [`forge::key`]; `[log]` of its campaign copy set to
/// `log` (`None`: absent). Its `rounds/1.proof` holds the receipt's proof against a
/// checkpoint of the two entries, cosigned by [`WITNESS`] at `cosigned` (Unix seconds)
/// when given. The campaign copy is edited, so its digest is re-recorded in the receipt.
fn data_dir(root: &Path, log: Option<Value>, cosigned: Option<u64>) -> DataDir {
    let campaign_dir = root.join("data/by-hand");
    let bundle = campaign_dir.join("rounds/1");
    std::fs::create_dir_all(campaign_dir.join("rounds")).expect("mkdir");
    forge::forge_from(
        &forge::fixture_named("v6-round"),
        &bundle,
        |dir| {
            if let Some(log) = log {
                // The frozen campaign copy: canonical JSON, keys sorted, no whitespace.
                let path = dir.join("inputs/campaign.json");
                let mut campaign: Value =
                    serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
                campaign["log"] = log;
                let bytes = receipts::canonical::to_canonical_vec(&campaign).expect("canonical");
                std::fs::write(&path, bytes).expect("write");
            }
        },
        |_| {},
        |_| {},
    );
    let campaign_bytes = std::fs::read(bundle.join("inputs/campaign.json")).expect("campaign");
    let digest = receipts::model::Sha256Hex::digest(&campaign_bytes).to_string();
    std::fs::write(campaign_dir.join("campaign.json"), &campaign_bytes).expect("write");
    forge::resign(&bundle, forge::OPENED, |s| {
        s["predicate"]["campaign"]["digest"] = json!(digest);
    });
    forge::resign(&bundle, ENVELOPE_FILE, |s| {
        s["predicate"]["campaign"]["digest"] = json!(digest);
        s["predicate"]["inputs"][0]["digest"]["sha256"] = json!(digest);
        s["predicate"]["transparencyLog"] =
            json!({"status": "logged", "origin": ORIGIN, "roundOpenedIndex": 0});
    });
    let sealed = read_sealed_round(&bundle).expect("sealed");
    let entry = |kind, file: &str| {
        let bytes = std::fs::read(bundle.join(file)).expect("envelope");
        LogEntry::for_envelope(sealed.record.campaign.id.clone(), Some(1), kind, &bytes)
            .leaf_hash()
            .expect("leaf")
    };
    let leaves: Vec<Hash> = vec![
        entry(EntryKind::RoundOpened, forge::OPENED),
        entry(EntryKind::Receipt, ENVELOPE_FILE),
    ];
    let checkpoint = Checkpoint {
        origin: ORIGIN.to_owned(),
        size: 2,
        root: tree_root(&leaves[..], 2).expect("root"),
        extensions: Vec::new(),
    };
    let mut note = checkpoint.sign(&log_key()).expect("signs");
    if let Some(at) = cosigned {
        note.signatures
            .push(cosignature::cosign(&note.text, WITNESS, &witness_key(), at).expect("cosigns"));
    }
    let proof = TlogProof {
        extra: Some(b"receipt".to_vec()),
        index: 1,
        proof: prove_inclusion(&leaves[..], 1, 2).expect("proof"),
        checkpoint: note.to_bytes(),
    };
    std::fs::write(round_proof_path(&bundle), proof.to_bytes()).expect("proof file");
    DataDir::new(root.join("data"))
}

/// The forger's key valid from the epoch until [`RETIRED_AT`], the log's key and the
/// witness's.
fn keyring() -> Keyring {
    let mut keyring = Keyring::new(vec![TrustedKey {
        key: forge::key().public().clone(),
        valid_from: ts("1970-01-01T00:00:00Z"),
        valid_until: Some(ts(RETIRED_AT)),
    }])
    .expect("keyring");
    for (key, role, origin) in [
        (log_key(), KeyRole::Log, ORIGIN),
        (witness_key(), KeyRole::Witness, WITNESS),
    ] {
        keyring
            .add_role_key(RoleKey {
                trusted: TrustedKey {
                    key: key.public().clone(),
                    valid_from: ts("1970-01-01T00:00:00Z"),
                    valid_until: None,
                },
                role,
                origin: origin.to_owned(),
            })
            .expect("role key");
    }
    keyring
}

fn load(data: &DataDir) -> Archive {
    site::load::load_archive(data, &keyring(), Vec::new(), None).expect("loads")
}

/// The failed checks of the one rejected bundle, `name: reason`.
fn rejected_failures(archive: &Archive) -> Vec<String> {
    assert_eq!(archive.rejected.len(), 1, "{:?}", archive.rejected);
    (archive.rejected[0].report.failures())
        .map(|c| {
            format!(
                "{}: {}",
                c.name.as_str(),
                c.reason
                    .as_ref()
                    .map_or_else(String::new, |r| r.to_string())
            )
        })
        .collect()
}

#[test]
fn a_backdated_bundle_signed_with_a_retired_key_is_refused_by_the_site() {
    // Its endedAt lies inside the key's window: as of it, the bundle verifies.
    assert!(ts(ENDED_AT) < ts(RETIRED_AT));
    let tmp = tempfile::tempdir().expect("tempdir");
    let archive = load(&data_dir(tmp.path(), None, None));
    assert!(
        archive.rejected.is_empty(),
        "{:?}",
        rejected_failures(&archive)
    );
    let round = &archive.campaigns[0].rounds[0];
    assert_eq!(round.verified_at, ts(ENDED_AT));
    assert_eq!(round.as_of, AsOf::NotWitnessed);
    assert_eq!(
        round.as_of.describe(),
        "its own endedAt: time not witnessed"
    );

    // A witness first saw its receipt a day after the key was retired: as of then, the
    // signature does not count, whatever endedAt says.
    let tmp = tempfile::tempdir().expect("tempdir");
    let cosigned = "2026-12-09T00:00:00Z";
    let archive = load(&data_dir(tmp.path(), None, Some(unix(cosigned))));
    assert!(archive.campaigns[0].rounds.is_empty());
    let rejected = &archive.rejected[0];
    assert_eq!(rejected.verified_at, ts(cosigned));
    assert!(
        matches!(&rejected.as_of, AsOf::Witnessed(w) if w.name == WITNESS && w.checkpoint_size == 2)
    );
    let failures = rejected_failures(&archive);
    assert!(
        failures.iter().any(|f| f.starts_with("signature.trusted")),
        "{failures:?}"
    );

    // Cosigned while the key was valid: published as of the cosignature.
    let tmp = tempfile::tempdir().expect("tempdir");
    let cosigned = "2026-12-07T12:00:00Z";
    let archive = load(&data_dir(tmp.path(), None, Some(unix(cosigned))));
    assert!(
        archive.rejected.is_empty(),
        "{:?}",
        rejected_failures(&archive)
    );
    let round = &archive.campaigns[0].rounds[0];
    assert_eq!(round.verified_at, ts(cosigned));
    assert_eq!(
        round.as_of.describe(),
        "the earliest witness cosignature on its receipt's log checkpoint (witness.example, checkpoint of 2 entries)"
    );
}

#[test]
fn a_campaign_that_requires_witnesses_gets_no_unwitnessed_bundle_published() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let archive = load(&data_dir(tmp.path(), Some(json!({"required": true})), None));
    assert!(archive.campaigns[0].rounds.is_empty());
    assert_eq!(archive.rejected[0].as_of, AsOf::NotWitnessed);
    assert_eq!(
        rejected_failures(&archive),
        vec![
            "log.publication: round 1's publication is not witnessed: no counted witness, valid at its cosignature's time, cosigned a checkpoint of its proofs that holds its receipt"
        ]
    );

    // A cosignature by a witness the campaign does not name counts for nothing.
    let tmp = tempfile::tempdir().expect("tempdir");
    let log = json!({"required": true, "witnesses": ["other.example"]});
    let cosigned = unix("2026-12-07T12:00:00Z");
    let archive = load(&data_dir(tmp.path(), Some(log), Some(cosigned)));
    assert_eq!(
        rejected_failures(&archive),
        vec![
            "log.publication: round 1's publication is not witnessed: the keyring trusts none of the campaign's witnesses (other.example)"
        ]
    );

    // By the witness it names: published.
    let tmp = tempfile::tempdir().expect("tempdir");
    let log = json!({"required": true, "witnesses": [WITNESS]});
    let archive = load(&data_dir(tmp.path(), Some(log), Some(cosigned)));
    assert!(
        archive.rejected.is_empty(),
        "{:?}",
        rejected_failures(&archive)
    );
    assert!(matches!(
        &archive.campaigns[0].rounds[0].as_of,
        AsOf::Witnessed(w) if w.name == WITNESS
    ));
}
