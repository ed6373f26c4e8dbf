//! `secret.withheld` (content/threat-model.md, The evaluator's key): `fixtures/v7-round`
//! derived into the round whose challenger printed private key material into its engine
//! log — the log withheld before sealing, the challenger disqualified `secret_in_output`
//! naming one file, the outcome recomputed — which passes every check; a count of
//! withheld files other than the entry's fails `secret.withheld`.

use std::path::Path;

use crate::forge::*;
use receipts::rules::redaction::withheld;
use serde_json::{Value, json};
use verifier::CheckName;

const CHALLENGER_LOG: &str = "logs/engines/candidate-1-miner-fast-pass-1.log";

/// The by-hand round (v7 or v8) in `dir` with its challenger's engine log withheld and the
/// challenger disqualified `secret_in_output` for it, the outcome recomputed.
pub(crate) fn withhold_challenger_log(dir: &Path, predicate: &mut Value) {
    let path = dir.join(CHALLENGER_LOG);
    let bytes = std::fs::metadata(&path)
        .expect("the challenger's log")
        .len();
    std::fs::write(&path, withheld(bytes)).expect("write");
    crate::forgery_logs::disqualify_challenger_for(
        dir,
        predicate,
        json!({"secret_in_output": {"files": 1}}),
        &format!("its run wrote private key material, withheld before sealing: {CHALLENGER_LOG}"),
        &[],
    );
}

/// The derived round passes; its reason claiming two withheld files, or none, fails
/// `secret.withheld` alone.
#[test]
fn a_secret_in_output_counts_the_entrys_withheld_files() {
    let report = forged_fixture("v7-round", |_| {}, withhold_challenger_log);
    assert!(report.passed(), "{:?}", failures(&report));
    for files in [0, 2] {
        let report = forged_fixture(
            "v7-round",
            |_| {},
            |dir, p| {
                withhold_challenger_log(dir, p);
                p["entries"][1]["disqualification"]["reason"]["secret_in_output"]["files"] =
                    json!(files);
            },
        );
        assert_eq!(
            failed(&report),
            [CheckName::SecretWithheld.as_str()].into(),
            "{files} files"
        );
    }
}
