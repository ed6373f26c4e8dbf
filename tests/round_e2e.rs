//! End-to-end tests of `referee round` (issue 6) on tiny campaigns of the built-in
//! engine: statuses and score signs, the correctness gate recomputed from its artifact,
//! the receipt verified; a kill after every journal record resumed into a valid receipt;
//! the same seeds giving the same request sequence and correctness verdicts.
//!
//! The campaigns are built here, not read from `examples/demo/`: a one-layer model, p50,
//! one run, margin 10 %, drift bound 50 %, short probes. The round is run through the
//! binary, the setup (campaign, miners, ingest) through the library.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use receipts::keys::{Keyring, PrivateKey, TrustedKey, generate_key_pair};
use receipts::layout::{DataDir, read_round_record};
use receipts::model::{
    CorrectnessItems, DisqualificationReason, EntryStatus, PipelineState, Role, RoundRecord,
    RoundStatus, SeatRule, Sha256Hex, Timestamp, TypedOrText,
};
use verifier::VerifyOptions;
use verifier::verify_bundle;

use support::{FIXED_RATE, Fixture, SERIAL, Tiny, ok};

/// A rate search from 4 to 128 requests/s: scores tell configurations apart.
const SEARCH_RATES: &str = "min_rate_milli_rps = 4000\nmax_rate_milli_rps = 128000";

/// The tiny campaign (tests/support) at `rates`, `edits` ingested (one miner each).
fn fixture(rates: &'static str, edits: &[(&str, &str, &str)]) -> Fixture {
    fixture_with(rates, "", 1, 5000, edits)
}

/// [`fixture`] with a top-level `backend = …` line, `runs` passes and a drift bound in
/// basis points.
fn fixture_with(
    rates: &'static str,
    backend: &str,
    runs: u32,
    drift_bound_bp: u32,
    edits: &[(&str, &str, &str)],
) -> Fixture {
    fixture_campaign(rates, backend, runs, drift_bound_bp, 250, edits)
}

/// [`fixture_with`] with an SLA bound of `bound_ms`.
fn fixture_campaign(
    rates: &'static str,
    backend: &str,
    runs: u32,
    drift_bound_bp: u32,
    bound_ms: u32,
    edits: &[(&str, &str, &str)],
) -> Fixture {
    let tiny = Tiny {
        rates,
        backend,
        runs,
        drift_bound_bp,
        bound_ms,
        ..Tiny::default()
    };
    Fixture::new(&tiny, edits)
}

/// `referee round` on the fixture; `abort_after` sets the kill failpoint.
fn round(
    fixture: &Fixture,
    abort_after: Option<usize>,
    seeds: Option<&Path>,
) -> std::process::Output {
    let mut command = fixture.round_command();
    if let Some(k) = abort_after {
        command.env("REFEREE_ROUND_ABORT_AFTER", k.to_string());
    }
    if let Some(seeds) = seeds {
        command.arg("--seeds").arg(seeds);
    }
    command.output().unwrap()
}

fn sealed(fixture: &Fixture, n: u64) -> (PathBuf, RoundRecord) {
    let bundle = fixture.data.join("tiny/rounds").join(n.to_string());
    let keyring = Keyring::load(&fixture.data.join("keyring.json")).unwrap();
    let report = verify_bundle(&bundle, &keyring, &VerifyOptions::default());
    assert!(
        report.passed(),
        "round {n} does not verify: {:?}",
        report.failures().collect::<Vec<_>>()
    );
    let (record, _) = read_round_record(&bundle).unwrap();
    (bundle, record)
}

#[test]
fn a_round_scores_disqualifies_and_seals() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let fixture = fixture(
        SEARCH_RATES,
        &[
            ("fast", "max_num_seqs", "8"),
            ("slow", "max_num_batched_tokens", "1"),
            ("int4", "weight_dtype", "\"int4\""),
            ("oom", "kv_cache_budget_mb", "4096"),
        ],
    );
    let output = round(&fixture, None, None);
    ok(&output);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("Role"), "no table on stdout: {stdout}");
    eprintln!("{stdout}");

    let (bundle, record) = sealed(&fixture, 1);
    assert_eq!(
        record.outcome.status,
        RoundStatus::Complete,
        "{:?}",
        record.outcome
    );
    let statuses: Vec<(Role, EntryStatus)> =
        record.entries.iter().map(|e| (e.role, e.status)).collect();
    assert_eq!(
        statuses,
        vec![
            (Role::Baseline, EntryStatus::Scored),
            (Role::Challenger, EntryStatus::Scored),
            (Role::Challenger, EntryStatus::Scored),
            (Role::Challenger, EntryStatus::Disqualified),
            (Role::Challenger, EntryStatus::Disqualified),
        ],
        "{:#?}",
        record.entries
    );
    let score = |i: usize| record.entries[i].score_ppm.unwrap();
    assert_eq!(score(0), 0);
    assert!(score(1) > 0, "faster scored {}", score(1));
    assert!(score(2) < 0, "slower scored {}", score(2));
    // The faster one wins the seat past the 10 % margin.
    assert!(record.outcome.changed);
    assert_eq!(
        record
            .outcome
            .leader_after
            .as_ref()
            .map(|l| l.miner.as_str()),
        Some("fast")
    );

    // int4 fails the correctness gate, recomputably from its artifact.
    let int4 = &record.entries[3];
    let dq = int4.disqualification.as_ref().unwrap();
    assert_eq!(dq.reason, DisqualificationReason::CorrectnessFailed);
    // The detail quotes the failing item's or group's own value.
    assert!(
        (dq.detail.starts_with("logit distance of item ")
            || dq.detail.starts_with("mean logit distance of group "))
            && dq.detail.contains(" µnat) above the "),
        "{}",
        dq.detail
    );
    for entry in &record.entries[1..4] {
        let summary = entry.correctness.as_ref().unwrap();
        let bytes = std::fs::read(bundle.join(&summary.items_file)).unwrap();
        let items: CorrectnessItems = serde_json::from_slice(&bytes).unwrap();
        let (verdict, consistent) = receipts::rules::correctness::verdict_from_artifact(&items);
        assert!(
            consistent,
            "stored item distances do not match their positions"
        );
        assert_eq!(verdict.passed, summary.passed);
        assert_eq!(verdict.max_item_micro_nats, summary.max_item_micro_nats);
        assert_eq!(items.items.len(), 3);
        // Both sides' top-k, cut to the campaign's 5, give every stored distance.
        for item in &items.items {
            let (entry_top_k, reference_top_k) = (
                item.entry_top_k.as_deref().unwrap(),
                item.reference_top_k.as_deref().unwrap(),
            );
            assert!(
                entry_top_k
                    .iter()
                    .chain(reference_top_k)
                    .all(|p| p.len() <= 5)
            );
            assert_eq!(
                receipts::rules::correctness::item_positions_micro_nats(
                    item.index,
                    5,
                    entry_top_k,
                    reference_top_k
                ),
                Ok(item.position_micro_nats.clone())
            );
        }
    }
    assert!(!int4.correctness.as_ref().unwrap().passed);
    assert!(record.entries[1].correctness.as_ref().unwrap().passed);

    // The KV cache too large for the memory limit dies at start, with its log tail.
    let oom = record.entries[4].disqualification.as_ref().unwrap();
    assert_eq!(oom.reason, DisqualificationReason::EngineDiedBeforeHealthy);
    assert!(
        oom.detail
            .starts_with("engine died before becoming healthy ("),
        "{}",
        oom.detail
    );
    assert!(
        oom.log_tail.iter().any(|l| l.contains("out of memory")),
        "{:?}",
        oom.log_tail
    );

    // The submissions moved.
    let campaign = DataDir::new(&fixture.data).campaign(&"tiny".parse().unwrap());
    let states: Vec<PipelineState> = record.entries[1..]
        .iter()
        .map(|e| {
            campaign
                .load_submission(e.patch.as_ref().unwrap())
                .unwrap()
                .state
        })
        .collect();
    assert_eq!(
        states,
        vec![
            PipelineState::Scored,
            PipelineState::Scored,
            PipelineState::Disqualified,
            PipelineState::Disqualified
        ]
    );
    // Each entry's steps carry its title, its files one slug (regression: `Candidate 1 of
    // 4` and `candidate-1` named no miner and no patch).
    let fast = &record.entries[1];
    let title = format!(
        "Candidate 1 of 4 — fast {}",
        fast.patch.as_ref().unwrap().short()
    );
    let fast_steps: Vec<_> = record.steps.iter().filter(|s| s.group == title).collect();
    assert_eq!(fast_steps.len(), 3, "{:#?}", record.steps);
    for step in &fast_steps {
        assert!(
            step.name.starts_with(&format!("{title}, ")),
            "{}",
            step.name
        );
        let log = step.log.as_deref().unwrap();
        assert!(
            log.starts_with("logs/steps/") && log.contains("-candidate-1-fast-"),
            "{log}"
        );
        // Regression: step logs printed `RunningSla`, `Ok`, `Measured`, `Pass`.
        let text = std::fs::read_to_string(bundle.join(log)).unwrap();
        for debug in [
            "RunningSla",
            "StartingEngine",
            "status: Ok",
            "Measured",
            "Pass,",
        ] {
            assert!(!text.contains(debug), "{debug} in {log}:\n{text}");
        }
    }
    assert_eq!(
        fast.engine_log.as_deref(),
        Some("logs/engines/candidate-1-fast-pass-1.log")
    );
    let sla_log =
        std::fs::read_to_string(bundle.join(fast_steps[1].log.as_deref().unwrap())).unwrap();
    assert!(sla_log.contains("phase: running SLA"), "{sla_log}");
    assert!(sla_log.contains("outcome measured"), "{sla_log}");
    // The OOM is the engine's own message, not an imitation of PyTorch's.
    assert!(
        oom.log_tail.iter().any(|l| l.contains("does not fit")),
        "{:?}",
        oom.log_tail
    );
    assert!(
        !oom.log_tail.iter().any(|l| l.contains("CUDA")),
        "{:?}",
        oom.log_tail
    );

    // `referee verify` agrees.
    let verify = Command::new(env!("CARGO_BIN_EXE_referee"))
        .arg("verify")
        .arg("--data")
        .arg(&fixture.data)
        .arg(&bundle)
        .output()
        .unwrap();
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
}

#[test]
fn a_round_killed_after_any_record_resumes_into_a_valid_receipt() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Records: setup, the runs of the one pass (the baseline's, its A/A control, the
    // candidate's; in the order drawn), scorer, teardown, sealed; then the rename (k = 7).
    for k in 0..=7 {
        let fixture = fixture(FIXED_RATE, &[("fast", "max_num_seqs", "8")]);
        let killed = round(&fixture, Some(k), None);
        assert!(
            !killed.status.success(),
            "k = {k}: the failpoint did not fire"
        );
        let stderr = String::from_utf8_lossy(&killed.stderr);
        assert!(
            stderr.contains("aborted by the failpoint"),
            "k = {k}: {stderr}"
        );
        let resumed = round(&fixture, None, None);
        ok(&resumed);
        let (_, record) = sealed(&fixture, 1);
        assert_eq!(record.entries.len(), 2, "k = {k}");
        assert!(
            !fixture.data.join("tiny/.work/round-1").exists(),
            "k = {k}: work directory left"
        );
        let campaign = DataDir::new(&fixture.data).campaign(&"tiny".parse().unwrap());
        let submission = campaign
            .load_submission(record.entries[1].patch.as_ref().unwrap())
            .unwrap();
        assert_ne!(submission.state, PipelineState::RoundAssigned, "k = {k}");
        // Step indices run 0.. without gaps or repeats.
        let indices: Vec<u32> = record.steps.iter().map(|s| s.index).collect();
        assert_eq!(
            indices,
            (0..indices.len() as u32).collect::<Vec<_>>(),
            "k = {k}"
        );
    }
}

#[test]
fn the_same_seeds_give_the_same_requests_and_verdicts() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let edits = [
        ("int4", "weight_dtype", "\"int4\""),
        ("bf16", "weight_dtype", "\"bf16\""),
    ];
    let first = fixture(FIXED_RATE, &edits);
    ok(&round(&first, None, None));
    let (first_bundle, first_record) = sealed(&first, 1);
    let seeds_file = first.dir.path().join("seeds.json");
    std::fs::write(
        &seeds_file,
        serde_json::to_vec(&first_record.seeds).unwrap(),
    )
    .unwrap();

    let second = fixture(FIXED_RATE, &edits);
    ok(&round(&second, None, Some(&seeds_file)));
    let (second_bundle, second_record) = sealed(&second, 1);
    assert_eq!(first_record.seeds, second_record.seeds);
    assert_eq!(
        first_record.request_sequence_digest,
        second_record.request_sequence_digest
    );
    for (a, b) in first_record.entries.iter().zip(&second_record.entries) {
        assert_eq!(a.status, b.status);
        assert_eq!(
            a.correctness.as_ref().map(|c| c.passed),
            b.correctness.as_ref().map(|c| c.passed)
        );
        if let (Some(a), Some(b)) = (&a.correctness, &b.correctness) {
            let read = |bundle: &Path, file: &str| -> CorrectnessItems {
                serde_json::from_slice(&std::fs::read(bundle.join(file)).unwrap()).unwrap()
            };
            // Same machine, same CPU features: the distances are bit-identical.
            assert_eq!(
                read(&first_bundle, &a.items_file),
                read(&second_bundle, &b.items_file)
            );
        }
    }
}

#[test]
fn bad_input_is_a_clear_error_and_touches_nothing() {
    let fixture = fixture(FIXED_RATE, &[]);
    let run = |campaign: &str, key: &Path| {
        Command::new(env!("CARGO_BIN_EXE_referee"))
            .args(["round", "--campaign", campaign, "--data"])
            .arg(&fixture.data)
            .arg("--key")
            .arg(key)
            .output()
            .unwrap()
    };
    let missing_key = run("tiny", &fixture.key_dir().join("nobody.key"));
    assert_eq!(missing_key.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&missing_key.stderr);
    assert!(stderr.contains("loading the evaluator key"), "{stderr}");

    let no_campaign = run("nope", &fixture.key);
    assert_eq!(no_campaign.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&no_campaign.stderr);
    assert!(stderr.contains("campaign `nope` not found"), "{stderr}");

    assert!(!fixture.data.join("tiny/rounds").exists());
    assert!(!fixture.data.join("tiny/.work").exists());
    // Regression: an unknown campaign got a `<data>/nope/.lock`.
    assert!(!fixture.data.join("nope").exists());
}

#[test]
fn a_runner_killed_mid_round_takes_its_engine_along_and_resumes() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let fixture = fixture(FIXED_RATE, &[("fast", "max_num_seqs", "8")]);
    let mut runner = Command::new(env!("CARGO_BIN_EXE_referee"))
        .args(["round", "--campaign", "tiny", "--data"])
        .arg(&fixture.data)
        .arg("--key")
        .arg(&fixture.key)
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait for the baseline to be journaled and the candidate's engine to be up.
    let work = fixture.data.join("tiny/.work/round-1");
    let pid_file = work.join("engines.pid");
    let started = std::time::Instant::now();
    let engine_pid = loop {
        let journaled =
            std::fs::read_to_string(work.join("journal.jsonl")).map_or(0, |j| j.lines().count());
        let pid = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.split_whitespace().next().map(str::to_owned));
        if journaled >= 2
            && let Some(pid) = pid
        {
            break pid;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "the candidate never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    runner.kill().unwrap();
    runner.wait().unwrap();
    // The engine dies with its runner (PR_SET_PDEATHSIG), however the kill came.
    // Gone, or a zombie nobody reaps (PID 1 of a container may not).
    let alive = || {
        std::fs::read_to_string(format!("/proc/{engine_pid}/stat")).is_ok_and(|stat| {
            !stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
    };
    let started = std::time::Instant::now();
    while alive() && started.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!alive(), "engine {engine_pid} outlived its runner");
    ok(&round(&fixture, None, None));
    let (_, record) = sealed(&fixture, 1);
    assert_eq!(record.entries.len(), 2);
}

#[test]
fn the_process_backend_runs_any_command_line() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // The built-in engine, but started as a plain command line with `{config}` and
    // `{listen_fd}` substituted, serving on the socket it inherits.
    let backend = format!(
        "backend = {{ kind = \"process\", command = [\"{}\", \"engine\", \"serve\", \"--config\", \"{{config}}\", \"--listen-fd\", \"{{listen_fd}}\", \"--threads\", \"1\"] }}\n",
        env!("CARGO_BIN_EXE_referee")
    );
    let fixture = fixture_with(
        FIXED_RATE,
        &backend,
        1,
        5000,
        &[("int4", "weight_dtype", "\"int4\"")],
    );
    ok(&round(&fixture, None, None));
    let (_, record) = sealed(&fixture, 1);
    assert_eq!(
        record.entries[0].engine.backend,
        receipts::model::BackendKind::Process
    );
    // Without `[backend.api]`: the default profile, recorded as such, and the memory the
    // engine was allowed (content/engines.md).
    assert_eq!(
        record.entries[0].engine.api,
        Some(receipts::model::EngineApi {
            profile: None,
            tested_against_real_server: false,
            token_count: receipts::model::TokenCount::Ids,
            token_ids: receipts::model::TokenIds::Array,
        })
    );
    assert_eq!(record.entries[0].engine.memory_limit_mb, Some(64));
    assert_eq!(
        record.entries[0]
            .engine
            .isolation
            .as_ref()
            .map(|i| i.engine_threads),
        Some(1)
    );
    assert_eq!(
        record.entries[0].status,
        EntryStatus::Scored,
        "{:#?}",
        record.entries[0]
    );
    let dq = record.entries[1].disqualification.as_ref().unwrap();
    assert_eq!(dq.reason, DisqualificationReason::CorrectnessFailed);
}

/// An engine that prints the evaluator's private key to its log (the test hands the key
/// to the challenger's engine: the sandbox keeps the real one out of reach,
/// content/threat-model.md) pays alone: the round seals and verifies, the log is
/// withheld, the challenger is disqualified `secret_in_output`, no bundle file holds the
/// key in any form, and `referee round` exits 4 telling the evaluator to rotate the key.
#[test]
fn an_engine_that_prints_the_evaluator_key_is_disqualified_and_the_key_is_withheld() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Only the challenger's config (its diff sets `startup_delay_ms = 1`) prints the key.
    let seed = "07".repeat(32);
    // The sandbox shows the engine its program (`sh`) and the declared `ro_paths`: the
    // built-in engine's binary here.
    let referee = env!("CARGO_BIN_EXE_referee");
    let backend = format!(
        "backend = {{ kind = \"process\", ro_paths = [\"{referee}\"], command = [\"/bin/sh\", \"-c\", \"grep -q 'startup_delay_ms = 1$' {{config}} && echo leaked {seed} >&2; exec {referee} engine serve --config {{config}} --listen-fd {{listen_fd}} --threads 1\"] }}\n"
    );
    let fixture = fixture_with(
        FIXED_RATE,
        &backend,
        1,
        5000,
        &[("leaky", "startup_delay_ms", "1")],
    );
    // The evaluator key is that seed, trusted from the epoch.
    receipts::fsutil::write_atomic(&fixture.key, format!("{seed}\n").as_bytes(), 0o600).unwrap();
    Keyring::new(vec![TrustedKey {
        key: PrivateKey::from_seed(&[7; 32]).public().clone(),
        valid_from: Timestamp::from_unix_seconds(0).unwrap(),
        valid_until: None,
    }])
    .unwrap()
    .save(&DataDir::new(&fixture.data).keyring_path())
    .unwrap();

    let output = round(&fixture, None, None);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("rotate it"), "{stderr}");
    let (bundle, record) = sealed(&fixture, 1);
    let leaky = &record.entries[1];
    assert_eq!(leaky.status, EntryStatus::Disqualified, "{leaky:#?}");
    assert_eq!(
        leaky.disqualification.as_ref().map(|d| d.reason),
        Some(DisqualificationReason::SecretInOutput { files: 1 })
    );
    let log = leaky.passes[0].engine_log.as_deref().unwrap();
    let withheld = std::fs::read(bundle.join(log)).unwrap();
    let original = receipts::rules::redaction::withheld_bytes(&withheld);
    assert!(
        original.is_some_and(|n| n > 72),
        "{}",
        String::from_utf8_lossy(&withheld)
    );
    // What the runs wrote holds the key nowhere (the inputs hold it: this test put it in
    // the campaign's command line).
    let forms = PrivateKey::from_seed(&[7; 32]).seed_forms();
    let listed = receipts::bundle::list_files(&bundle).unwrap();
    let written = listed.iter().filter(|f| !f.name.starts_with("inputs/"));
    let written: Vec<_> = written
        .filter(|f| f.name != "round-opened.dsse.json")
        .collect();
    assert!(written.len() > 10);
    for file in written {
        let bytes = std::fs::read(&file.path).unwrap();
        assert!(!forms.found_in(&bytes), "{} holds the key", file.name);
    }

    // Forged and re-signed with the evaluator's own key, each fails `secret.withheld`
    // alone: a count that is not the files withheld; a file un-withheld; a file of
    // another entry withheld without its disqualification.
    let baseline_log = record.entries[0].passes[0].engine_log.clone().unwrap();
    type Edit<'a> = Box<dyn Fn(&Path) + 'a>;
    let forgeries: [(&str, Edit<'_>); 3] = [
        ("count", Box::new(|_: &Path| {})),
        (
            "unwithheld",
            Box::new(|dir: &Path| std::fs::write(dir.join(log), "engine log\n").unwrap()),
        ),
        (
            "baseline",
            Box::new(|dir: &Path| {
                let withheld = receipts::rules::redaction::withheld(5);
                std::fs::write(dir.join(&baseline_log), withheld).unwrap();
            }),
        ),
    ];
    for (name, files) in forgeries {
        let dir = fixture.dir.path().join(format!("forged-{name}"));
        testkit::copy_dir(&bundle, &dir);
        files(&dir);
        let mut statement = testkit::forge::statement(&dir, "receipt.dsse.json");
        if name == "count" {
            statement["predicate"]["entries"][1]["disqualification"]["reason"] =
                serde_json::json!({"secret_in_output": {"files": 2}});
        }
        testkit::forge::sign_with(
            &dir,
            "receipt.dsse.json",
            statement,
            &PrivateKey::from_seed(&[7; 32]),
        );
        let keyring = Keyring::load(&fixture.data.join("keyring.json")).unwrap();
        let report = verify_bundle(&dir, &keyring, &VerifyOptions::default());
        let failed: Vec<&str> = report.failures().map(|c| c.name.as_str()).collect();
        assert_eq!(
            failed,
            ["secret.withheld"],
            "{name}: {:#?}",
            report.failures().collect::<Vec<_>>()
        );
    }
}

/// `referee round` with `key` on the fixture, plainly.
fn round_with_key(
    fixture: &Fixture,
    key: &Path,
    abort_after: Option<usize>,
) -> std::process::Output {
    let mut command = support::bin();
    command
        .args(["round", "--campaign", "tiny", "--data"])
        .arg(&fixture.data)
        .arg("--key")
        .arg(key);
    if let Some(k) = abort_after {
        command.env("REFEREE_ROUND_ABORT_AFTER", k.to_string());
    }
    command.output().unwrap()
}

/// A refused round: exit 2, `needles` in stderr, and neither round `n` nor its work
/// directory.
fn refused(fixture: &Fixture, output: &std::process::Output, n: u64, needles: &[&str]) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "`{needle}` not in: {stderr}");
    }
    assert!(!fixture.data.join(format!("tiny/rounds/{n}")).exists());
    assert!(
        !fixture.data.join(format!("tiny/.work/round-{n}")).exists(),
        "{stderr}"
    );
}

/// A new key pair `<key-dir>/<name>.{key,pub}`, trusted in the keyring from `valid_from`
/// until `valid_until` when `trust` is set.
fn extra_key(
    fixture: &Fixture,
    name: &str,
    trust: Option<(Timestamp, Option<Timestamp>)>,
) -> (PathBuf, PrivateKey) {
    generate_key_pair(&fixture.key_dir().join(name)).unwrap();
    let path = fixture.key_dir().join(format!("{name}.key"));
    let key = PrivateKey::load(&path).unwrap();
    if let Some((valid_from, valid_until)) = trust {
        let keyring_path = fixture.data.join("keyring.json");
        let mut keyring = Keyring::load(&keyring_path).unwrap();
        keyring
            .add(TrustedKey {
                key: key.public().clone(),
                valid_from,
                valid_until,
            })
            .unwrap();
        keyring.save(&keyring_path).unwrap();
    }
    (path, key)
}

/// Issue 11: a private key inside the data directory (which is published) stops the
/// round before it opens, naming the file and the commands that move it out; following
/// them, the round runs — with the key found in the default key directory.
#[test]
fn a_private_key_inside_the_data_directory_is_refused_with_the_way_out() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let fixture = fixture(FIXED_RATE, &[]);
    let home = fixture.dir.path().join("home");
    let xdg = fixture.dir.path().join("xdg");
    let run = |args: &[&std::ffi::OsStr]| {
        Command::new(env!("CARGO_BIN_EXE_referee"))
            .args(["round", "--campaign", "tiny", "--data"])
            .arg(&fixture.data)
            .args(args)
            .env("NO_COLOR", "1")
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", &xdg)
            .env_remove("REFEREE_KEY_DIR")
            .output()
            .unwrap()
    };

    // An earlier demo's layout: the signing key itself in the data directory.
    let inside = fixture.data.join("evaluator.key");
    std::fs::rename(&fixture.key, &inside).unwrap();
    let output = run(&["--key".as_ref(), inside.as_os_str()]);
    let key_dir = xdg.join("referee/keys");
    let moved = key_dir.join("evaluator.key");
    refused(
        &fixture,
        &output,
        1,
        &[&format!(
            "private key `{}` is inside the data directory `{}`, which is published; \
                 move it out: `mkdir -p -m 700 {} && mv -n {} {} && referee round --key {} …`",
            inside.display(),
            fixture.data.display(),
            key_dir.display(),
            inside.display(),
            moved.display(),
            moved.display()
        )],
    );

    // Any file holding a key seed counts, whatever its name, anywhere below; the hint
    // then moves it next to the key given with `--key`.
    std::fs::rename(&inside, &fixture.key).unwrap();
    let copy = fixture.data.join("tiny/backup/signing-seed");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(&fixture.key, &copy).unwrap();
    let output = run(&["--key".as_ref(), fixture.key.as_os_str()]);
    let keys = std::fs::canonicalize(fixture.key_dir()).unwrap();
    refused(
        &fixture,
        &output,
        1,
        &[
            &format!(
                "private key `{}` is inside the data directory",
                copy.display()
            ),
            &format!(
                "mv -n {} {}",
                copy.display(),
                keys.join("signing-seed").display()
            ),
        ],
    );
    std::fs::remove_file(&copy).unwrap();

    // Moved out as the hint says, into the default key directory: no `--key` needed.
    std::fs::create_dir_all(&key_dir).unwrap();
    std::fs::rename(&fixture.key, &moved).unwrap();
    ok(&run(&[]));
    sealed(&fixture, 1);
}

#[test]
fn keys_the_keyring_does_not_trust_now_are_refused_before_the_round_opens() {
    let fixture = fixture(FIXED_RATE, &[]);
    let (stranger, stranger_key) = extra_key(&fixture, "stranger", None);
    let output = round_with_key(&fixture, &stranger, None);
    let keyring = fixture.data.join("keyring.json").display().to_string();
    refused(
        &fixture,
        &output,
        1,
        &[stranger_key.keyid(), &keyring, "it is not in the keyring"],
    );

    let epoch = Timestamp::from_unix_seconds(0).unwrap();
    let retired_at = Timestamp::from_unix_seconds(1_000_000).unwrap();
    let (retired, retired_key) = extra_key(&fixture, "retired", Some((epoch, Some(retired_at))));
    let output = round_with_key(&fixture, &retired, None);
    refused(
        &fixture,
        &output,
        1,
        &[retired_key.keyid(), &keyring, "it is valid from"],
    );
}

#[test]
fn a_corrupt_miners_json_is_refused_before_the_round_opens() {
    let fixture = fixture(FIXED_RATE, &[]);
    let miners = fixture.data.join("tiny/miners.json");
    std::fs::write(&miners, "[\n").unwrap();
    let output = round(&fixture, None, None);
    refused(
        &fixture,
        &output,
        1,
        &[&format!("parsing `{}`", miners.display())],
    );
}

#[test]
fn a_resume_with_another_key_than_the_opening_one_is_refused() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let fixture = fixture(FIXED_RATE, &[]);
    let killed = round(&fixture, Some(0), None);
    assert!(!killed.status.success());
    let epoch = Timestamp::from_unix_seconds(0).unwrap();
    let (other, other_key) = extra_key(&fixture, "other", Some((epoch, None)));
    let opener = PrivateKey::load(&fixture.key).unwrap();
    let output = round_with_key(&fixture, &other, None);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "round 1 was opened (round-opened statement signed) by key `{}`; resume it with \
             that key, not `{}`",
            opener.keyid(),
            other_key.keyid()
        )),
        "{stderr}"
    );
    assert!(!fixture.data.join("tiny/rounds/1").exists());
    ok(&round(&fixture, None, None));
    sealed(&fixture, 1);
}

#[test]
fn a_tampered_previous_round_or_an_edited_campaign_is_refused() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let fixture = fixture(FIXED_RATE, &[]);
    ok(&round(&fixture, None, None));
    let (bundle, record) = sealed(&fixture, 1);

    // The campaign is frozen: an edit is refused, naming both digests.
    let campaign_json = fixture.data.join("tiny/campaign.json");
    let original = std::fs::read_to_string(&campaign_json).unwrap();
    std::fs::write(
        &campaign_json,
        original.replace("\"bound_ms\":250", "\"bound_ms\":5000"),
    )
    .unwrap();
    let campaign_toml = fixture.data.join("tiny/campaign.toml");
    let readable = std::fs::read_to_string(&campaign_toml).unwrap();
    std::fs::write(
        &campaign_toml,
        readable.replace("bound_ms = 250", "bound_ms = 5000"),
    )
    .unwrap();
    let edited = DataDir::new(&fixture.data)
        .campaign(&"tiny".parse().unwrap())
        .load_campaign()
        .unwrap()
        .digest;
    assert_ne!(edited, record.campaign.digest);
    let output = round(&fixture, None, None);
    refused(
        &fixture,
        &output,
        2,
        &[
            &edited.to_string(),
            &record.campaign.digest.to_string(),
            "campaigns are frozen",
        ],
    );
    std::fs::write(&campaign_json, &original).unwrap();
    std::fs::write(&campaign_toml, &readable).unwrap();

    // Round 1 resealed by an untrusted key, seating an attacker's patch.
    let mut forged = record.clone();
    forged.outcome.leader_after = Some(receipts::model::Leader {
        patch: Sha256Hex::digest(b"the attacker's diff"),
        miner: "mallory".parse().unwrap(),
    });
    let attacker = PrivateKey::from_seed(&[7; 32]);
    receipts::bundle::seal_bundle(
        &bundle,
        receipts::model::ROUND_PREDICATE_TYPE,
        &serde_json::to_value(&forged).unwrap(),
        &[&attacker],
    )
    .unwrap();
    let output = round(&fixture, None, None);
    refused(
        &fixture,
        &output,
        2,
        &[
            &format!("the previous round `{}` does not verify", bundle.display()),
            "signature.trusted",
        ],
    );
}

/// Issue 13: a previous round forged and re-signed with the evaluator's own key — every
/// signature valid, every digest matching — is refused by preflight before round 2
/// writes anything, naming the check that recomputed the forged number from the bundle:
/// the seat handed to the entry the rule did not seat (`paired.decision`), a reference
/// logprob rewritten under the stored distances (`correctness.distances`), a measured
/// pass row without its probe log (`probes.entry`) and an SLA other than the campaign's
/// (`round.sla`).
#[test]
fn a_previous_round_forged_and_re_signed_with_the_evaluator_key_is_refused() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // 4 requests/s against a bound of 750 ms (half the request deadline), so that the
    // baseline meets the SLA on a loaded machine and the challenger reaches the
    // correctness gate.
    let fixture = fixture_campaign(
        "min_rate_milli_rps = 4000\nmax_rate_milli_rps = 4000",
        "",
        1,
        5000,
        750,
        &[("fast", "max_num_seqs", "8")],
    );
    ok(&round(&fixture, None, None));
    let (bundle, record) = sealed(&fixture, 1);
    assert_eq!(
        record.outcome.status,
        RoundStatus::Complete,
        "{:?}",
        record.outcome
    );
    let pristine = fixture.dir.path().join("round-1");
    std::fs::create_dir_all(&pristine).unwrap();
    testkit::copy_dir(&bundle, &pristine);
    let evaluator = PrivateKey::load(&fixture.key).unwrap();
    let reseal = |record: &RoundRecord| {
        receipts::bundle::seal_bundle(
            &bundle,
            receipts::model::ROUND_PREDICATE_TYPE,
            &serde_json::to_value(record).unwrap(),
            &[&evaluator],
        )
        .unwrap();
    };
    let does_not_verify = format!("the previous round `{}` does not verify", bundle.display());

    // The seat handed to the entry the rule did not seat.
    let challenger = &record.entries[1];
    let other = receipts::model::Leader {
        patch: challenger.patch.unwrap(),
        miner: challenger.miner.clone().unwrap(),
    };
    let mut forged = record.clone();
    let (seat, rule) = match &record.outcome.leader_after {
        None => (Some(other.clone()), SeatRule::MarginMet { winner: other }),
        Some(_) => (None, SeatRule::MarginNotMet { best: other }),
    };
    forged.outcome.changed = seat.is_some();
    forged.outcome.leader_after = seat;
    forged.outcome.decision = TypedOrText::Typed(rule);
    reseal(&forged);
    let output = round(&fixture, None, None);
    refused(
        &fixture,
        &output,
        2,
        &[
            &does_not_verify,
            "paired.decision `outcome`: `receipt.dsse.json` outcome.leaderAfter is",
        ],
    );

    // A reference logprob rewritten (−100 nats), the stored distances left as they were.
    testkit::copy_dir(&pristine, &bundle);
    let items_file = bundle.join(&challenger.correctness.as_ref().unwrap().items_file);
    let mut items: CorrectnessItems =
        serde_json::from_slice(&std::fs::read(&items_file).unwrap()).unwrap();
    items.items[0].reference_top_k.as_mut().unwrap()[0][0].1 = -100_000_000;
    std::fs::write(&items_file, serde_json::to_vec(&items).unwrap()).unwrap();
    reseal(&record);
    let output = round(&fixture, None, None);
    refused(
        &fixture,
        &output,
        2,
        &[
            &does_not_verify,
            "correctness.distances `entries[1].correctness`: `correctness/",
            "items[0].positionMicroNats[0] is",
        ],
    );

    // Issue 41's classes: a measured pass row that no longer names its probe log (its
    // measurement then tied to no evidence), and an SLA other than the campaign's (the
    // probes judged by the receipt's own bound).
    testkit::copy_dir(&pristine, &bundle);
    let mut forged = record.clone();
    forged.entries[1].passes[0].probe_log = None;
    reseal(&forged);
    refused(
        &fixture,
        &round(&fixture, None, None),
        2,
        &[&does_not_verify, "probes.entry `entries[1].passes[0]`"],
    );
    testkit::copy_dir(&pristine, &bundle);
    let mut forged = record.clone();
    forged.sla.bound_ms += 1;
    reseal(&forged);
    refused(
        &fixture,
        &round(&fixture, None, None),
        2,
        &[&does_not_verify, "round.sla `sla`"],
    );

    // Restored, round 1 verifies again.
    testkit::copy_dir(&pristine, &bundle);
    sealed(&fixture, 1);
}

/// Every file the receipt names is in the bundle: step logs, engine logs, probe logs and
/// correctness artifacts.
fn assert_named_files_exist(bundle: &Path, record: &RoundRecord) {
    let mut named: Vec<String> = record.steps.iter().filter_map(|s| s.log.clone()).collect();
    assert_eq!(named.len(), record.steps.len(), "a step names no log");
    for entry in &record.entries {
        named.extend(entry.engine_log.clone());
        named.extend(entry.runs.iter().map(|r| r.probe_log.clone()));
        named.extend(entry.correctness.iter().map(|c| c.items_file.clone()));
    }
    for name in named {
        assert!(
            bundle.join(&name).is_file(),
            "`{name}` is named but missing"
        );
    }
}

/// Issue 11: a temp file a killed writer left in the bundle is never sealed, and a step
/// log that cannot be written stops the round naming it (rather than a step naming no
/// log); the resume after it seals.
#[test]
fn a_resumed_round_seals_no_temp_file_and_stops_on_a_step_log_it_cannot_write() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let fixture = fixture(FIXED_RATE, &[]);
    let killed = round(&fixture, Some(0), None);
    assert!(!killed.status.success());
    let work_bundle = fixture.data.join("tiny/.work/round-1/bundle");
    // What writers killed between creating their temp file and renaming it leave:
    // tempfile's `.tmpXXXXXX` and the `.<name>.tmp<pid>` of earlier versions.
    let temps = [
        ".tmpK1lled",
        "inputs/.tmpAbCdEf",
        "logs/steps/.01-drawing-seeds-and-opening-the-round.log.tmp4242",
    ];
    for temp in temps {
        std::fs::write(work_bundle.join(temp), b"half a file").unwrap();
    }
    // A directory where the baseline's first step log goes.
    let blocked = work_bundle.join("logs/steps/02-baseline-pass-1-starting-the-engine.log");
    std::fs::create_dir(&blocked).unwrap();
    let stopped = round(&fixture, None, None);
    let stderr = String::from_utf8_lossy(&stopped.stderr);
    assert_eq!(stopped.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("writing the step log `{}`", blocked.display())),
        "{stderr}"
    );
    assert!(!fixture.data.join("tiny/rounds/1").exists());

    std::fs::remove_dir(&blocked).unwrap();
    ok(&round(&fixture, None, None));
    let (bundle, record) = sealed(&fixture, 1);
    for temp in temps {
        assert!(!bundle.join(temp).exists(), "`{temp}` was sealed");
    }
    let files = receipts::bundle::list_files(&bundle).unwrap();
    assert!(
        files
            .iter()
            .all(|f| !f.name.rsplit('/').next().unwrap_or("").starts_with('.')),
        "{:?}",
        files.iter().map(|f| &f.name).collect::<Vec<_>>()
    );
    assert_named_files_exist(&bundle, &record);
}

/// Issue 11: a probe log that cannot be written fails the SLA step and the entry
/// (`infra_failed`, naming the file), and the sealed receipt names no probe log that is
/// not there.
#[test]
fn a_probe_log_that_cannot_be_written_fails_its_step_typed_and_is_not_named() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let fixture = fixture(FIXED_RATE, &[]);
    let killed = round(&fixture, Some(0), None);
    assert!(!killed.status.success());
    // A file where the probe logs' directory goes: no probe log can be written.
    let probes = fixture.data.join("tiny/.work/round-1/bundle/probes");
    std::fs::write(&probes, b"").unwrap();
    ok(&round(&fixture, None, None));
    let (bundle, record) = sealed(&fixture, 1);
    let baseline = &record.entries[0];
    assert_eq!(baseline.status, EntryStatus::InfraFailed, "{baseline:#?}");
    let detail = baseline.infra_failure.as_ref().unwrap().to_string();
    assert!(
        detail.contains(&probes.display().to_string()),
        "{detail} does not name {}",
        probes.display()
    );
    assert!(baseline.runs.is_empty(), "{:?}", baseline.runs);
    let sla = record
        .steps
        .iter()
        .find(|s| s.name == "Baseline, pass 1, running SLA")
        .unwrap();
    assert_eq!(sla.status, receipts::model::StepStatus::Failed);
    assert_named_files_exist(&bundle, &record);
}

/// Regression (issue 17): with round 1's sealed bundle deleted, `referee round` opened a
/// new round 1 with new seeds without a word, though the submission's record names round
/// 1. It refuses, naming the round and the submission, and writes nothing.
#[test]
fn a_round_number_named_by_a_submission_is_never_reused() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let fixture = fixture(FIXED_RATE, &[("fast", "max_num_seqs", "8")]);
    ok(&round(&fixture, None, None));
    let (_, record) = sealed(&fixture, 1);
    let patch = record.entries[1].patch.unwrap();
    let rounds = fixture.data.join("tiny/rounds");
    std::fs::remove_dir_all(rounds.join("1")).unwrap();
    let output = round(&fixture, None, None);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("round 1 is named by submission"),
        "{stderr}"
    );
    assert!(stderr.contains(patch.as_str()), "{stderr}");
    assert!(!rounds.join("1").exists());
    assert!(!fixture.data.join("tiny/.work/round-1").exists());
}

/// Issue 12: a load client that cannot keep the campaign's schedule (here: a send-lag
/// bound of 1 µs, which no client meets) refuses the round at setup, before any engine
/// starts: exit 2 with the bound missed and a hint, nothing sealed, no work directory,
/// the challenger still queued (not seated, not charged); with the bound restored the
/// round runs and its receipt records the self-test.
#[test]
fn a_client_that_cannot_keep_the_schedule_refuses_the_round_at_setup() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let fixture = fixture(FIXED_RATE, &[("fast", "max_num_seqs", "8")]);
    // The campaign as added (its TOML and its frozen JSON), with a bound of 1 µs.
    let files = [
        (
            fixture.data.join("tiny/campaign.toml"),
            "send_lag_bound_us = 250000",
            "send_lag_bound_us = 1",
        ),
        (
            fixture.data.join("tiny/campaign.json"),
            "\"send_lag_bound_us\":250000",
            "\"send_lag_bound_us\":1",
        ),
    ];
    let originals: Vec<String> = files
        .iter()
        .map(|(path, from, to)| {
            let original = std::fs::read_to_string(path).unwrap();
            let tiny = original.replace(from, to);
            assert_ne!(tiny, original, "`{from}` not in {}", path.display());
            std::fs::write(path, tiny).unwrap();
            original
        })
        .collect();
    let output = round(&fixture, None, None);
    refused(
        &fixture,
        &output,
        1,
        &[
            "round 1 did not open: the load client cannot keep its schedule: send-lag p99 ",
            " µs > bound 1 µs at 10 req/s with ",
            "run the round on a dedicated client machine",
            "`rate_search.send_lag_bound_us`",
        ],
    );
    let campaign = DataDir::new(&fixture.data).campaign(&"tiny".parse().unwrap());
    let submissions = campaign.list_submissions().unwrap();
    assert_eq!(submissions.len(), 1);
    assert_eq!(submissions[0].state, PipelineState::BenchQueued);
    assert_eq!(submissions[0].requeues, 0);

    for ((path, _, _), original) in files.iter().zip(&originals) {
        std::fs::write(path, original).unwrap();
    }
    let output = round(&fixture, None, None);
    ok(&output);
    let (_, record) = sealed(&fixture, 1);
    let test = record.client_self_test.unwrap();
    assert_eq!(
        (test.rate_milli_rps, test.send_lag_bound_us, test.failed),
        (10_000, 250_000, 0)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(&verifier::view::format_client_self_test(&test)),
        "{stdout}"
    );
}

/// Regression guard of the scorer's artifacts kept in memory: a round resumed after its
/// scorer was journaled reads the failing entry's per-item artifact back from the bundle,
/// and its disqualification still quotes the failing value from it.
#[test]
fn a_round_resumed_after_its_scorer_quotes_the_distance_it_read_back() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let fixture = fixture(FIXED_RATE, &[("int4", "weight_dtype", "\"int4\"")]);
    // Records: setup, the three runs of the one pass, then the scorer (k = 4).
    let killed = round(&fixture, Some(4), None);
    assert!(!killed.status.success(), "the failpoint did not fire");
    ok(&round(&fixture, None, None));
    let (bundle, record) = sealed(&fixture, 1);
    let int4 = &record.entries[1];
    let dq = int4.disqualification.as_ref().unwrap();
    assert_eq!(dq.reason, DisqualificationReason::CorrectnessFailed);
    let summary = int4.correctness.as_ref().unwrap();
    let bytes = std::fs::read(bundle.join(&summary.items_file)).unwrap();
    let items: CorrectnessItems = serde_json::from_slice(&bytes).unwrap();
    let (verdict, _) = receipts::rules::correctness::verdict_from_artifact(&items);
    let quoted = match (verdict.first_failing_item, verdict.first_failing_group) {
        (Some(position), _) => items.items[position as usize].distance_micro_nats,
        (None, Some(group)) => verdict.group_means_micro_nats[group as usize],
        (None, None) => panic!("int4 passed: {verdict:?}"),
    };
    assert!(
        dq.detail.contains(&format!("({quoted} µnat) above the ")),
        "{}",
        dq.detail
    );
}

/// The receipt of a round pinned before a refactor of the round executor, so that the
/// refactor provably changes nothing a receipt records (issue 38).
///
/// The seam: every input of the round is fixed — the evaluator key (a fixed seed), the
/// round's seeds (`--seeds`), the miners' registration times, and the clock every time
/// the receipt records is read from (the debug build's `REFEREE_ROUND_VIRTUAL_CLOCK`:
/// each reading one millisecond after the last, so the times also pin the order in which
/// the round reads them) — and the entries are chosen so that their statuses do not
/// depend on speed: the baseline at one fixed rate far under its SLA, an `int4`
/// challenger that fails the correctness gate, and one whose KV cache cannot fit the
/// memory limit, which dies before it is healthy. The engines are the built-in engine,
/// deterministic in what it answers but not in how fast, so the Statement is pinned as
/// JSON (`tests/snapshots/round_e2e__pinned-receipt.snap`) with these replaced:
/// - `[measured]`: what the load client measured on real time ([`MEASURED`] keys:
///   throughputs, paired ratios, send lags, the host's steal, each run's telemetry) and the
///   digests of the files that hold such numbers or engine-log times (`logs/`, `probes/`,
///   `telemetry/`);
/// - `[host]`: what describes this machine or this build ([`HOST`] keys: the hardware
///   fingerprint, CPU features, the sandbox's command line and CPU split, the build's git
///   commit; a log tail's time-stamped engine lines);
/// - `[floats]`: the correctness distances and what quotes them (the `int4` entry's
///   summary and detail, the `correctness/` artifacts' digests): the engine promises
///   bit-identical logprobs only on identical CPU features (engine/src/lib.rs), so these
///   are pinned in their own snapshot (`round_e2e__pinned-receipt-floats.snap`), checked
///   on a host with the CPU features they were recorded under ([`FLOATS_PINNED_ON`]).
///
/// Everything else — every step's name, phase, status, log name and times, each entry's
/// status, reasons and engine config digest, the passes and their order, the outcome,
/// the seeds, the request sequence digest, the inputs and the round-opened statement's
/// digest — is compared byte for byte.
#[test]
fn a_round_on_fixed_inputs_seals_the_pinned_receipt() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let fixture = fixture(
        FIXED_RATE,
        &[
            ("int4", "weight_dtype", "\"int4\""),
            ("oom", "kv_cache_budget_mb", "4096"),
        ],
    );
    // A fixed evaluator key, trusted from the epoch.
    let key = PrivateKey::from_seed(&[7; 32]);
    std::fs::remove_file(&fixture.key).unwrap();
    // A `.key` file is the seed in hex.
    receipts::fsutil::write_atomic(&fixture.key, "07".repeat(32).as_bytes(), 0o600).unwrap();
    let data = DataDir::new(&fixture.data);
    Keyring::new(vec![TrustedKey {
        key: key.public().clone(),
        valid_from: Timestamp::from_unix_seconds(0).unwrap(),
        valid_until: None,
    }])
    .unwrap()
    .save(&data.keyring_path())
    .unwrap();
    // Fixed registration times: `miners.json` is an input of the round.
    let campaign = data.campaign(&"tiny".parse().unwrap());
    let mut miners = campaign.load_miners().unwrap();
    for miner in &mut miners.miners {
        miner.registered_at = Timestamp::from_unix_seconds(1_767_225_600).unwrap();
    }
    intake::store::write_json(&campaign.miners_json(), &miners).unwrap();
    // Fixed seeds.
    let reveal = |n: u8| {
        receipts::model::SeedReveal::commit(
            receipts::model::Seed32([n; 32]),
            receipts::model::Seed32([n.wrapping_add(100); 32]),
        )
    };
    let seeds = receipts::model::RevealedSeeds {
        item_seed: reveal(1),
        order_seed: reveal(2),
        schedule_seed: reveal(3),
        correctness_seed: reveal(4),
        prompt_salt: reveal(5),
        sample_seed: Some(reveal(6)),
        pass_seed: Some(reveal(7)),
    };
    let seeds_file = fixture.dir.path().join("seeds.json");
    std::fs::write(&seeds_file, serde_json::to_vec(&seeds).unwrap()).unwrap();

    let output = fixture
        .round_command()
        .arg("--seeds")
        .arg(&seeds_file)
        .env("REFEREE_ROUND_VIRTUAL_CLOCK", "2026-01-01T00:00:00Z")
        .output()
        .unwrap();
    ok(&output);
    let (bundle, _) = sealed(&fixture, 1);
    let bytes = std::fs::read(bundle.join(receipts::bundle::ENVELOPE_FILE)).unwrap();
    let envelope: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let payload = receipts::dsse::decode_base64(envelope["payload"].as_str().unwrap()).unwrap();
    let mut statement: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    let floats = take_floats(&mut statement);
    redact(&mut statement);
    insta::assert_json_snapshot!("pinned-receipt", statement);
    let features = floats["cpuFeatures"].as_array().unwrap().iter();
    let features: Vec<&str> = features.map(|f| f.as_str().unwrap()).collect();
    if features.join(" ") == FLOATS_PINNED_ON {
        insta::assert_json_snapshot!("pinned-receipt-floats", floats);
    } else {
        eprintln!("CPU features `{features:?}`: the correctness distances are not compared");
    }
}

/// The CPU features (the receipt's `tool.cpuFeatures`) under which the correctness
/// distances of `round_e2e__pinned-receipt-floats.snap` were recorded.
const FLOATS_PINNED_ON: &str = "sse2 sse4.1 avx avx2 fma f16c avx512f avx512bw avx512vl";

/// Keys whose values the load client measured on real time.
const MEASURED: &[&str] = &[
    "throughputMilliRps",
    "throughputMinMilliRps",
    "throughputMaxMilliRps",
    "pairedRatioPpm",
    "pairedScore",
    "hostLoad",
    "telemetry",
    "achievedMilliRps",
    "sendLagP50Us",
    "sendLagP99Us",
    "inFlightMax",
    "connections",
    "aaSpreadBp",
    "baselineSpreadBp",
    "driftBp",
];

/// Keys whose values describe this machine or this build.
const HOST: &[&str] = &[
    "hardware",
    "cpuFeatures",
    "gitCommit",
    "command",
    "isolation",
];

/// Moves what the engines' floating point on this host's CPU features decides out of
/// `statement` (leaving `[floats]`): each entry's correctness summary and a
/// `correctness_failed` detail, and the `correctness/` artifacts' digests; returns them
/// with the CPU features they were computed under.
fn take_floats(statement: &mut serde_json::Value) -> serde_json::Value {
    let mut floats = serde_json::json!({
        "cpuFeatures": statement["predicate"]["tool"]["cpuFeatures"].clone(),
        "entries": [],
        "subjects": [],
    });
    let placeholder = serde_json::Value::from("[floats]");
    for entry in statement["predicate"]["entries"].as_array_mut().unwrap() {
        let mut taken = serde_json::json!({ "index": entry["index"].clone() });
        if !entry["correctness"].is_null() {
            taken["correctness"] =
                std::mem::replace(&mut entry["correctness"], placeholder.clone());
        }
        if entry["disqualification"]["reason"] == "correctness_failed" {
            taken["detail"] = std::mem::replace(
                &mut entry["disqualification"]["detail"],
                placeholder.clone(),
            );
        }
        floats["entries"].as_array_mut().unwrap().push(taken);
    }
    for subject in statement["subject"].as_array_mut().unwrap() {
        let name = subject["name"].as_str().unwrap().to_owned();
        if name.starts_with("correctness/") {
            floats["subjects"]
                .as_array_mut()
                .unwrap()
                .push(subject.clone());
            subject["digest"] = placeholder.clone();
        } else if ["logs/", "probes/", "telemetry/"]
            .iter()
            .any(|dir| name.starts_with(dir))
        {
            subject["digest"] = "[measured]".into();
        }
    }
    floats
}

/// Replaces the values of [`MEASURED`] and [`HOST`] keys wherever they appear, and the
/// time-stamped engine lines of a log tail.
fn redact(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if MEASURED.contains(&key.as_str()) {
                    *value = "[measured]".into();
                } else if HOST.contains(&key.as_str()) {
                    *value = "[host]".into();
                } else if key == "logTail" {
                    for line in value.as_array_mut().into_iter().flatten() {
                        // `2026-12-07T02:46:29.241862Z  INFO …`: the engine's own times,
                        // paths and CPU features.
                        if line.as_str().is_some_and(|l| {
                            l.get(..4)
                                .is_some_and(|y| y.bytes().all(|b| b.is_ascii_digit()))
                                && l.get(4..5) == Some("-")
                        }) {
                            *line = "[host]".into();
                        }
                    }
                } else {
                    redact(value);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(redact),
        _ => {}
    }
}

/// A round never publishes what its own verifier refuses (issue 39): killed after its
/// last record before sealing, its work bundle's probe log edited (as another writer or a
/// bad disk would), the resumed round seals, verifies, refuses — exit 2 naming the failed
/// check, nothing in `rounds/` — and stays resumable: with the probe log restored, the
/// next run seals and publishes it.
#[test]
fn a_round_whose_sealed_bundle_does_not_verify_is_not_published() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let fixture = fixture(SEARCH_RATES, &[]);
    let work = fixture.data.join("tiny/.work/round-1");
    // Setup, the baseline and its A/A control in the one pass, the scorer, teardown.
    let teardown = 4;
    let out = round(&fixture, Some(teardown), None);
    assert!(!out.status.success(), "the failpoint did not fire");
    let journal = std::fs::read_to_string(work.join("journal.jsonl")).unwrap();
    assert_eq!(journal.lines().count(), teardown + 1, "{journal}");
    assert!(
        journal.lines().last().unwrap().contains("\"teardown\""),
        "the last record is not the teardown: {journal}"
    );
    let probes = work.join("bundle/probes");
    let probe = std::fs::read_dir(&probes)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("a probe log");
    let original = std::fs::read_to_string(&probe).unwrap();
    let edited = original.replacen("\"overBound\":", "\"overBound\":1", 1);
    assert_ne!(
        edited,
        original,
        "no over-bound count to edit in {}",
        probe.display()
    );
    std::fs::write(&probe, &edited).unwrap();

    let out = round(&fixture, None, None);
    assert_eq!(out.status.code(), Some(2), "{}", support::text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("round 1's sealed bundle") && stderr.contains("it was not published"),
        "{stderr}"
    );
    assert!(!fixture.data.join("tiny/rounds/1").exists());
    assert!(work.join("journal.jsonl").exists());

    std::fs::write(&probe, &original).unwrap();
    ok(&round(&fixture, None, None));
    sealed(&fixture, 1);
    assert!(!work.exists());
}

/// A parallel round (issue 50; content/noise.md, Parallel passes): `[parallel] gpus = 2` with
/// `[isolation] pin = false` on this GPU-less host. Each pass's runs are placed from the
/// pass seed, the baseline and its A/A control in different waves on different lanes;
/// each run names its lane's GPU (placeholders here); every engine ran unpinned; the
/// receipt verifies. The runs of a wave run at once, their steps numbered in the
/// journal's order. Forged placements, GPUs and pinning, re-signed with the evaluator
/// key, each fail `passes.placement` and nothing else; a run's step moved before the
/// step of its own run, or before the setup, fails `timeline`. Statuses only, never
/// timings.
#[test]
fn a_parallel_round_places_its_runs_from_the_pass_seed_and_verifies() {
    use receipts::model::{CpuPinning, GpuDevice, Phase, RunPlacement};
    // Two engines' worth of runs share this loaded 2-core host unpinned: an SLA of
    // 5 s at 5 requests/s that any run meets, so the statuses are the round's, not the
    // machine's.
    let tiny = Tiny {
        runs: 2,
        rates: "min_rate_milli_rps = 5000\nmax_rate_milli_rps = 5000",
        bound_ms: 5000,
        correctness: "\n[parallel]\ngpus = 2\n\n[isolation]\npin = false\n",
        ..Tiny::default()
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let fixture = Fixture::new(&tiny, &[("fast", "max_num_seqs", "8")]);
    ok(&round(&fixture, None, None));
    let (bundle, record) = sealed(&fixture, 1);
    let statuses: Vec<EntryStatus> = record.entries.iter().map(|e| e.status).collect();
    // Unpinned on a loaded host, a pass can run several times faster than the other: the
    // drift check then voids the round (`infra_failed`, drift), which records and
    // verifies the placement all the same. Any other status is a failure.
    let drifted = record.entries.iter().any(|e| {
        matches!(
            &e.infra_failure,
            Some(TypedOrText::Typed(
                receipts::model::EntryInfraFailure::RoundInfraFailed {
                    failure: receipts::model::RoundFailure::Drift { .. }
                }
            ))
        )
    });
    let expected = if drifted {
        [EntryStatus::Scored, EntryStatus::InfraFailed]
    } else {
        [EntryStatus::Scored, EntryStatus::Scored]
    };
    assert_eq!(
        statuses,
        expected,
        "{:?}",
        record
            .entries
            .iter()
            .map(|e| (&e.infra_failure, &e.passes))
            .collect::<Vec<_>>()
    );
    let parallel = record.parallel.clone().expect("a parallel layout");
    assert_eq!(
        (
            parallel.gpus,
            parallel.gpus_per_entry,
            parallel.lanes,
            parallel.pin
        ),
        (2, 1, 2, false)
    );
    if record.hardware.at_start.gpus.is_empty() {
        assert_eq!(
            parallel.devices,
            [GpuDevice::placeholder(0), GpuDevice::placeholder(1)]
        );
    }
    for pass in &record.passes {
        assert_eq!(pass.placement.len(), pass.order.len(), "{pass:?}");
        let at = |control: bool| {
            let i = (pass.order.iter())
                .position(|s| s.entry == 0 && s.control == control)
                .unwrap();
            pass.placement[i]
        };
        let (run, control) = (at(false), at(true));
        assert_ne!(run.wave, control.wave, "{pass:?}");
        assert_ne!(run.lane, control.lane, "{pass:?}");
    }
    for entry in &record.entries {
        assert!(
            entry.passes.iter().all(|row| row.gpus.len() == 1),
            "{entry:?}"
        );
        assert_eq!(
            entry.engine.isolation.as_ref().map(|i| i.pinning),
            Some(CpuPinning::None)
        );
    }

    // Forgeries re-signed with the evaluator key.
    let evaluator = PrivateKey::load(&fixture.key).unwrap();
    let keyring = Keyring::load(&fixture.data.join("keyring.json")).unwrap();
    let pristine = fixture.dir.path().join("pristine");
    std::fs::create_dir_all(&pristine).unwrap();
    testkit::copy_dir(&bundle, &pristine);
    let fails = |forged: &RoundRecord, what: &str, check: &str, besides: &[&str]| {
        testkit::copy_dir(&pristine, &bundle);
        receipts::bundle::seal_bundle(
            &bundle,
            receipts::model::ROUND_PREDICATE_TYPE,
            &serde_json::to_value(forged).unwrap(),
            &[&evaluator],
        )
        .unwrap();
        let report = verify_bundle(&bundle, &keyring, &VerifyOptions::default());
        let failed: Vec<&str> = report.failures().map(|c| c.name.as_str()).collect();
        assert!(
            failed.contains(&check)
                && (failed.iter()).all(|name| *name == check || besides.contains(name)),
            "{what}: {failed:?}"
        );
    };
    let fails_only_placement = |forged: &RoundRecord, what: &str| {
        fails(forged, what, "passes.placement", &[]);
    };
    // The baseline and its control moved onto one lane of one wave.
    let mut forged = record.clone();
    let pass = &mut forged.passes[0];
    let (run, control) = (
        pass.order
            .iter()
            .position(|s| s.entry == 0 && !s.control)
            .unwrap(),
        pass.order
            .iter()
            .position(|s| s.entry == 0 && s.control)
            .unwrap(),
    );
    pass.placement[control] = RunPlacement {
        wave: pass.placement[run].wave,
        lane: pass.placement[run].lane,
    };
    fails_only_placement(&forged, "the control on the baseline's lane and wave");
    // A run claiming the other GPU.
    let mut forged = record.clone();
    let row = &mut forged.entries[1].passes[0];
    row.gpus = vec![GpuDevice {
        index: 1 - row.gpus[0].index,
        ..row.gpus[0].clone()
    }];
    fails_only_placement(&forged, "a run on the other GPU");
    // Pinning claimed though the campaign unpinned the engines.
    let mut forged = record.clone();
    forged.parallel.as_mut().unwrap().pin = true;
    fails_only_placement(&forged, "pinning claimed");
    // The layout dropped: the campaign is parallel (and the runs of a wave that overlap
    // no longer fit a serial timeline).
    let mut forged = record.clone();
    forged.parallel = None;
    fails(
        &forged,
        "the layout dropped",
        "passes.placement",
        &["timeline"],
    );
    // A run's SLA step started before the engine of its run was healthy.
    let sla = (record.steps.iter())
        .position(|s| s.phase == Phase::RunningSla)
        .expect("an SLA step");
    let start = (record.steps[..sla].iter())
        .rposition(|s| s.group == record.steps[sla].group)
        .expect("its start step");
    let mut forged = record.clone();
    forged.steps[sla].started_at = forged.steps[start].started_at;
    fails(
        &forged,
        "an SLA step before its engine's start ended",
        "timeline",
        &[],
    );
    // The first run's start step started before the setup ended.
    let first = (record.steps.iter())
        .position(|s| s.phase == Phase::StartingEngine)
        .expect("a run");
    let mut forged = record.clone();
    forged.steps[first].started_at = forged.steps[first - 1].started_at;
    fails(&forged, "a run before the setup ended", "timeline", &[]);
    testkit::copy_dir(&pristine, &bundle);
    sealed(&fixture, 1);
}
