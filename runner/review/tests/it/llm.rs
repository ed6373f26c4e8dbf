//! The LLM review through a fake command: each verdict, the combined verdict, what the
//! command is given, and the typed errors of a command that fails or prints garbage.

use review::llm::{CommandReviewer, LlmError};
use review::{Verdict, review};

use super::{input, rules, tree};

/// A reviewer script in `dir` that saves its stdin and arguments, then prints `output`
/// and exits with `status`.
fn script(dir: &std::path::Path, output: &str, status: u8) -> CommandReviewer {
    let path = dir.join("reviewer.sh");
    let body = format!(
        "#!/bin/sh\ncat > '{stdin}'\necho \"$#:$1\" > '{args}'\nprintf '%s' '{output}'\nexit {status}\n",
        stdin = dir.join("stdin.json").display(),
        args = dir.join("args").display(),
    );
    std::fs::write(&path, body).expect("write script");
    CommandReviewer::new(format!("sh '{}' --model fake", path.display()))
}

#[test]
fn each_verdict_is_recorded_with_its_transcript_digest_and_combined() {
    let submission = tree(&[("a.py", b"import socket\n")]);
    let scripts = tempfile::tempdir().expect("temp dir");
    let rules = rules();
    for (answer, llm, combined) in [
        ("PASS", Verdict::Pass, Verdict::NeedsHuman),
        ("NEEDS-HUMAN", Verdict::NeedsHuman, Verdict::NeedsHuman),
        ("FAIL", Verdict::Fail, Verdict::Fail),
    ] {
        let transcript = format!("{answer}\nthe socket serves 127.0.0.1 only\n");
        let reviewer = script(scripts.path(), &transcript, 0);
        let result = review(&input(submission.path()), &rules, Some(&reviewer)).expect("review");
        let recorded = result.llm.expect("an LLM review");
        assert_eq!(recorded.verdict, llm);
        assert_eq!(recorded.transcript, transcript);
        assert_eq!(
            recorded.transcript_sha256,
            receipts::model::Sha256Hex::digest(transcript.as_bytes())
        );
        assert!(
            recorded.command.ends_with("reviewer.sh' --model fake"),
            "{}",
            recorded.command
        );
        assert_eq!(result.static_review.verdict, Verdict::NeedsHuman);
        assert_eq!(result.verdict, combined, "{answer}");
    }
    // The command got the tree as its last argument and the findings on stdin.
    let args = std::fs::read_to_string(scripts.path().join("args")).expect("args");
    assert_eq!(args, format!("3:--model\n"));
    let stdin: serde_json::Value =
        serde_json::from_slice(&std::fs::read(scripts.path().join("stdin.json")).expect("stdin"))
            .expect("json");
    assert_eq!(stdin["tree"], submission.path().display().to_string());
    assert_eq!(stdin["rulesDigest"], rules.digest.as_str());
    assert_eq!(stdin["findings"][0]["rule"], "network.raw-socket");
    assert_eq!(stdin["findings"][0]["line"], 1);
}

#[test]
fn a_clean_tree_with_a_passing_reviewer_passes_and_a_failing_one_fails() {
    let submission = tree(&[("a.py", b"x = 1\n")]);
    let scripts = tempfile::tempdir().expect("temp dir");
    let rules = rules();
    let pass = script(scripts.path(), "  PASS  \nok\n", 0);
    assert_eq!(
        review(&input(submission.path()), &rules, Some(&pass))
            .expect("review")
            .verdict,
        Verdict::Pass
    );
    let fail = script(scripts.path(), "FAIL\nreads the workload\n", 0);
    assert_eq!(
        review(&input(submission.path()), &rules, Some(&fail))
            .expect("review")
            .verdict,
        Verdict::Fail
    );
    assert_eq!(
        review(&input(submission.path()), &rules, None)
            .expect("review")
            .verdict,
        Verdict::Pass
    );
}

#[test]
fn a_reviewer_that_fails_or_prints_garbage_gives_a_typed_error() {
    let submission = tree(&[("a.py", b"x = 1\n")]);
    let scripts = tempfile::tempdir().expect("temp dir");
    let rules = rules();
    let garbage = script(scripts.path(), "looks fine to me\nPASS\n", 0);
    match review(&input(submission.path()), &rules, Some(&garbage)) {
        Err(review::ReviewError::Llm(LlmError::NoVerdict { first_line, .. })) => {
            assert_eq!(first_line, "looks fine to me");
        }
        other => panic!("expected NoVerdict, got {other:?}"),
    }
    let failing = CommandReviewer::new("echo quota exceeded >&2; echo PASS; exit 3; true");
    match review(&input(submission.path()), &rules, Some(&failing)) {
        Err(review::ReviewError::Llm(LlmError::Exited {
            status,
            stderr_tail,
            ..
        })) => {
            assert_eq!(status, "exit status: 3");
            assert_eq!(stderr_tail, "quota exceeded\n");
        }
        other => panic!("expected Exited, got {other:?}"),
    }
}

#[test]
fn a_reviewer_that_never_stops_printing_is_stopped_at_the_transcript_bound() {
    let submission = tree(&[("a.py", b"x = 1\n")]);
    let endless = CommandReviewer::new("yes PASS");
    match review(&input(submission.path()), &rules(), Some(&endless)) {
        Err(review::ReviewError::Llm(LlmError::BadTranscript { what, .. })) => {
            assert_eq!(what, "more than 1048576 bytes");
        }
        other => panic!("expected BadTranscript, got {other:?}"),
    }
}
