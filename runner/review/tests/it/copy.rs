//! Copy detection: a cosmetic copy and an identical-weights copy both credited to the
//! earliest original, a genuinely different runtime not flagged, `derivedFrom` recorded.

use std::collections::BTreeSet;

use receipts::model::{Sha256Hex, Timestamp};
use review::copy::{
    Commitment, CopyOutcome, CopyReason, Fingerprint, commitment_of_tree, detect_copy,
    fingerprint_of_tree, normalise_python,
};

use super::{input, rules, tree, weight};

const ORIGINAL: &str = r#"import torch


def add_scores(values, weight):
    """Sum the weighted values."""
    total = 0
    for value in values:
        total += value * weight  # accumulate
    return total


print("ready")
"#;

/// ORIGINAL renamed, re-indented, re-quoted, re-commented, without its docstring.
const COSMETIC: &str = "# my own fast kernel\nimport torch\ndef f(xs, w):\n  t = 0\n  for x in xs: t += x*w\n  return t\nprint('ready')\n";

/// The same shape doing something else.
const DIFFERENT: &str = "import torch\n\ndef f(xs, w):\n    t = 0\n    for x in xs:\n        t = max(t, x * w)\n    return t\n\nprint('ready')\n";

fn fingerprint(files: &[(&str, &str)], weights: &[(&str, &str)]) -> Fingerprint {
    let files: Vec<(&str, &[u8])> = files.iter().map(|(p, t)| (*p, t.as_bytes())).collect();
    let dir = tree(&files);
    let mut input = input(dir.path());
    input.weights = weights.iter().map(|(p, h)| weight(p, h)).collect();
    let base: BTreeSet<Sha256Hex> = [&"b".repeat(64)]
        .iter()
        .map(|h| h.parse().expect("digest"))
        .collect();
    fingerprint_of_tree(&input, &rules(), &base).expect("fingerprint")
}

/// The commitment time `minute` minutes into 2026.
fn at(minute: u64) -> Timestamp {
    let minute = i64::try_from(minute).expect("small");
    Timestamp::from_unix_seconds(1_767_225_600 + 60 * minute).expect("time")
}

fn commitment(submission: &str, minute: u64, fingerprint: Fingerprint) -> Commitment {
    Commitment {
        submission: submission.to_owned(),
        committed_at: at(minute),
        fingerprint,
        derived_from: None,
    }
}

#[test]
fn python_normalises_to_the_same_tokens_through_cosmetics() {
    let original = normalise_python(ORIGINAL).expect("parse");
    assert_eq!(original, normalise_python(COSMETIC).expect("parse"));
    assert_eq!(
        original,
        "import _0 def _1 ( _2 , _3 ) : { _4 = 0 for _5 in _2 : { _4 += _5 * _3 } return _4 } _6 ( \"ready\" )"
    );
    assert_ne!(original, normalise_python(DIFFERENT).expect("parse"));
}

#[test]
fn a_cosmetic_copy_is_credited_to_the_earliest_original() {
    let dockerfile = "FROM python@sha256:abc\nRUN pip install torch==2.4.0\n";
    let copied_dockerfile = "# pinned\nFROM python@sha256:abc\n\nRUN  pip install torch==2.4.0\n";
    let a = commitment(
        "alice",
        10,
        fingerprint(
            &[
                ("server.py", ORIGINAL),
                ("Dockerfile", dockerfile),
                ("README.md", "Alice's"),
            ],
            &[],
        ),
    );
    let b = commitment(
        "bob",
        12,
        fingerprint(
            &[
                ("src/main.py", COSMETIC),
                ("Dockerfile", copied_dockerfile),
                ("README.md", "Bob's"),
            ],
            &[],
        ),
    );
    let c = commitment(
        "carol",
        15,
        fingerprint(&[("app.py", COSMETIC), ("Dockerfile", dockerfile)], &[]),
    );
    let d = commitment(
        "dave",
        16,
        fingerprint(&[("app.py", DIFFERENT), ("Dockerfile", dockerfile)], &[]),
    );
    let all = [a.clone(), b.clone(), c.clone(), d.clone()];
    assert_eq!(detect_copy(&a, &all), CopyOutcome::Original);
    let credited_to_alice = CopyOutcome::Copy {
        original: "alice".to_owned(),
        reason: CopyReason::SameRuntimeCode {
            code: a.fingerprint.code,
        },
    };
    assert_eq!(detect_copy(&b, &all), credited_to_alice);
    assert_eq!(detect_copy(&c, &all), credited_to_alice);
    assert_eq!(detect_copy(&d, &all), CopyOutcome::Original);
    assert_eq!(a.fingerprint.code_files, 2);
}

#[test]
fn an_identical_weights_copy_is_credited_and_the_base_weights_are_not_a_copy() {
    let quantised = "c".repeat(64);
    let base = "b".repeat(64);
    let a = commitment(
        "alice",
        10,
        fingerprint(
            &[("a.py", ORIGINAL)],
            &[
                ("w/base.safetensors", &base),
                ("w/q.safetensors", &quantised),
            ],
        ),
    );
    let b = commitment(
        "bob",
        11,
        fingerprint(&[("b.py", DIFFERENT)], &[("model.safetensors", &quantised)]),
    );
    let c = commitment(
        "carol",
        12,
        fingerprint(&[("c.py", "x = 1\n")], &[("w/base.safetensors", &base)]),
    );
    let all = [b.clone(), a.clone(), c.clone()];
    assert_eq!(
        detect_copy(&b, &all),
        CopyOutcome::Copy {
            original: "alice".to_owned(),
            reason: CopyReason::IdenticalWeights {
                sha256: quantised.parse().expect("digest")
            },
        }
    );
    assert_eq!(detect_copy(&c, &all), CopyOutcome::Original);
    assert_eq!(detect_copy(&a, &all), CopyOutcome::Original);
    assert_eq!(a.fingerprint.weights.len(), 1);
}

#[test]
fn derived_from_is_recorded_unless_the_submission_is_a_copy() {
    let of_tree = |submission: &str, minute: u64, source: &str| {
        let dir = tree(&[("a.py", source.as_bytes())]);
        let mut input = input(dir.path());
        input.derived_from = Some("alice".to_owned());
        commitment_of_tree(submission, at(minute), &input, &rules(), &BTreeSet::new())
            .expect("commitment")
    };
    let a = commitment("alice", 10, fingerprint(&[("a.py", ORIGINAL)], &[]));
    let d = of_tree("dave", 20, DIFFERENT);
    let b = of_tree("bob", 30, COSMETIC);
    assert_eq!(d.derived_from.as_deref(), Some("alice"));
    let all = [a.clone(), d.clone(), b.clone()];
    assert_eq!(
        detect_copy(&d, &all),
        CopyOutcome::Derived {
            original: "alice".to_owned()
        }
    );
    assert!(
        matches!(detect_copy(&b, &all), CopyOutcome::Copy { original, .. } if original == "alice")
    );
    let json = serde_json::to_string(&detect_copy(&d, &all)).expect("json");
    assert_eq!(json, r#"{"kind":"derived","original":"alice"}"#);
}

#[test]
fn an_empty_runtime_copies_nothing() {
    let a = commitment("alice", 10, fingerprint(&[("README.md", "a")], &[]));
    let b = commitment("bob", 11, fingerprint(&[("README.md", "b")], &[]));
    assert_eq!(b.fingerprint.code_files, 0);
    assert_eq!(detect_copy(&b, &[a, b.clone()]), CopyOutcome::Original);
}
