//! The hostile engines of record (issue 40; content/correctness.md, Cheats of record):
//! each a real `referee engine serve` behind a proxy that cheats on the timed load
//! (`tests/hostile/proxy.py`, run by the process backend), in a tiny round, with the
//! typed outcome it must end in. The tests assert statuses and reasons, never timings.
//! They need Python (the standard library only): `#[ignore]`d and named `interop_…`,
//! `scripts/test` runs them with `REFEREE_PYTHON` (else `python3` is used); without an
//! interpreter they fail, they never skip.

mod support;

use std::path::Path;

use receipts::keys::Keyring;
use receipts::layout::read_round_record;
use receipts::model::{
    DisqualificationReason, EntryStatus, FrozenCampaign, RevealedSeeds, RoundRecord, RoundStatus,
    SeatRule, Seed32, SeedReveal, TypedOrText,
};
use receipts::rules::workload::Workload;
use verifier::{VerifyOptions, verify_bundle};

use support::{Fixture, SERIAL, Tiny, ok, root};

/// The Python interpreter's own path (`sys.executable` of `REFEREE_PYTHON`, else of
/// `python3`): the sandbox's clean environment has no version manager's shims.
fn python() -> String {
    let python = std::env::var("REFEREE_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let output = std::process::Command::new(&python)
        // The interpreter itself, not a venv's link to it: the sandbox shows the engine
        // the system's `/usr`, not the venv under `target/` (the proxy needs no package).
        .args([
            "-c",
            "import os, sys; print(os.path.realpath(sys.executable))",
        ])
        .output()
        .expect("the hostile suite needs Python: set REFEREE_PYTHON or put python3 on PATH");
    assert!(output.status.success(), "python3: {output:?}");
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// The seeds a round of the suite is given (`referee round --seeds`: a practice round,
/// whose decision is recorded and whose seat does not move), so the test knows its
/// requests.
fn given_seeds() -> RevealedSeeds {
    let reveal = |byte: u8| SeedReveal::commit(Seed32([byte; 32]), Seed32([byte ^ 0xff; 32]));
    RevealedSeeds {
        item_seed: reveal(1),
        order_seed: reveal(2),
        schedule_seed: reveal(3),
        correctness_seed: reveal(4),
        prompt_salt: reveal(5),
        sample_seed: Some(reveal(6)),
        pass_seed: Some(reveal(7)),
    }
}

/// The proxy's prompt file for the campaign frozen in `data` under `seeds` (its JSONL
/// prompt source `jsonl`, if any): a line `<sha256 hex> <tag>` for every prompt of every
/// pass's sub-streams (tag `p<pass>`) and every correctness item (tag `gate`); how the
/// later-passes and gate-only classes tell requests apart by their contents alone.
fn round_prompts(data: &Path, seeds: &RevealedSeeds, jsonl: Option<&[u8]>) -> String {
    let bytes = std::fs::read(data.join("tiny/campaign.json")).unwrap();
    let frozen = FrozenCampaign::from_json("campaign.json", &bytes).unwrap();
    let workload = Workload::new(&frozen.campaign, seeds, jsonl).unwrap();
    let passes = (0..workload.runs()).flat_map(|pass| {
        let workload = &workload;
        (0..workload.max_probes()).flat_map(move |probe| {
            workload
                .sub_stream(workload.sub_stream_index(pass, probe))
                .into_iter()
                .map(move |item| format!("{} p{pass}\n", item.prompt_sha256))
        })
    });
    let gate = workload
        .correctness_items()
        .into_iter()
        .map(|item| format!("{} gate\n", item.prompt_sha256));
    passes.chain(gate).collect()
}

/// A tiny round of `runs` passes whose one challenger is the hostile class `class`
/// (the proxy's `startup_delay_ms` code), every engine run through the proxy, on the
/// seeds of [`given_seeds`]; returns the verified record.
fn hostile_round(runs: u32, class: u32) -> (Fixture, RoundRecord) {
    hostile_round_at(Tiny::default(), runs, class)
}

/// [`hostile_round`] with more `[correctness]` lines in the campaign.
fn hostile_round_with(runs: u32, class: u32, correctness: &str) -> (Fixture, RoundRecord) {
    hostile_round_at(
        Tiny {
            correctness,
            ..Tiny::default()
        },
        runs,
        class,
    )
}

/// [`hostile_round`] with the tiny campaign's knobs `tiny` (its backend replaced by the
/// proxy's, its SLA bound by a loose one).
fn hostile_round_at(tiny: Tiny<'_>, runs: u32, class: u32) -> (Fixture, RoundRecord) {
    hostile_round_of(tiny, runs, &[("cheat", class)])
}

/// [`hostile_round_at`] with one challenger per `(miner, class)` of `challengers`, in
/// that order.
fn hostile_round_of(
    tiny: Tiny<'_>,
    runs: u32,
    challengers: &[(&str, u32)],
) -> (Fixture, RoundRecord) {
    hostile_round_from(tiny, runs, challengers, None, "")
}

/// [`hostile_round_of`] on the JSONL prompt source `jsonl` when given (the campaign
/// names `prompts.jsonl` of its directory, pinned by its sha256), with the proxy's
/// `pad <class code> <tag> <ms>` lines `pads` (`tests/hostile/proxy.py`).
fn hostile_round_from(
    tiny: Tiny<'_>,
    runs: u32,
    challengers: &[(&str, u32)],
    jsonl: Option<&[u8]>,
    pads: &str,
) -> (Fixture, RoundRecord) {
    let source = jsonl.map(|bytes| {
        format!(
            "{}\n[workload.prompt_source]\nkind = \"jsonl\"\npath = \"prompts.jsonl\"\nsha256 = \"{}\"\n",
            tiny.correctness,
            receipts::model::Sha256Hex::digest(bytes)
        )
    });
    let shared = tempfile::tempdir().unwrap();
    let prompts = shared.path().join("round-prompts");
    std::fs::write(&prompts, "").unwrap();
    // The sandbox shows the engine only its program and the declared `ro_paths`: the
    // proxy, the built-in engine's binary and the round's tagged prompts.
    let proxy = root().join("tests/hostile/proxy.py");
    let referee = env!("CARGO_BIN_EXE_referee");
    let backend = format!(
        "backend = {{ kind = \"process\", ro_paths = [\"{}\", \"{referee}\", \"{}\"], command = [\"{}\", \"{}\", \"{referee}\", \"{{config}}\", \"{{listen_fd}}\", \"{}\"] }}\n",
        proxy.display(),
        prompts.display(),
        python(),
        proxy.display(),
        prompts.display()
    );
    let values: Vec<(&str, String)> = (challengers.iter())
        .map(|(miner, class)| (*miner, class.to_string()))
        .collect();
    let edits: Vec<(&str, &str, &str)> = (values.iter())
        .map(|(miner, value)| (*miner, "startup_delay_ms", value.as_str()))
        .collect();
    let tiny = Tiny {
        backend: &backend,
        runs,
        // The `[correctness]` table is the campaign's last: the source's table follows it.
        correctness: source.as_deref().unwrap_or(tiny.correctness),
        // A loose SLA: the suite tests verdicts, and shares its CPUs with other tests (at
        // 1 s, a load average of 10 on 2 cores once left a challenger `sla_unmet`).
        bound_ms: 3000,
        ..tiny
    };
    let fixture = Fixture::new(&tiny, &edits);
    if let Some(bytes) = jsonl {
        std::fs::write(fixture.data.join("tiny/prompts.jsonl"), bytes).unwrap();
    }
    let seeds = given_seeds();
    let lines = round_prompts(&fixture.data, &seeds, jsonl) + pads;
    std::fs::write(&prompts, lines).unwrap();
    let seeds_file = shared.path().join("seeds.json");
    std::fs::write(&seeds_file, serde_json::to_vec(&seeds).unwrap()).unwrap();
    ok(&fixture
        .round_command()
        .arg("--seeds")
        .arg(&seeds_file)
        .output()
        .unwrap());
    let record = verified(&fixture.data.join("tiny/rounds/1"));
    drop(shared);
    (fixture, record)
}

/// The sealed round at `bundle`, which must verify.
fn verified(bundle: &Path) -> RoundRecord {
    let keyring = Keyring::load(&bundle.join("../../../keyring.json")).unwrap();
    let report = verify_bundle(bundle, &keyring, &VerifyOptions::default());
    assert!(
        report.passed(),
        "the round does not verify: {:?}",
        report.failures().collect::<Vec<_>>()
    );
    read_round_record(bundle).unwrap().0
}

/// Regression (issue 40): only the run that took the correctness outputs was sampled,
/// so an engine honest in pass 1 and streaming garbage in passes 2–3 was scored. Every
/// run that enters a score is sampled now: it is disqualified in a later pass. The proxy
/// tells the passes apart by their prompts (the first pass's, from the given seeds), not
/// by state the sandbox would let outlive a run.
#[test]
#[ignore = "needs python3: run scripts/test"]
fn interop_hostile_garbage_after_the_first_pass_is_disqualified() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (_fixture, record) = hostile_round(3, 102);
    // Three passes on shared CPUs may be `inconclusive` (the A/A spread is timing): the
    // entry's own disqualification stands in any round status.
    let cheat = &record.entries[1];
    assert_eq!(cheat.status, EntryStatus::Disqualified, "{cheat:#?}");
    let reason = cheat.disqualification.as_ref().unwrap().reason;
    assert!(
        matches!(reason, DisqualificationReason::LoadOutputsDiverge { run, .. } if run >= 1),
        "{reason:?}"
    );
}

/// Regression (issue 40): ids the reference rejects made the scorer fail and the round
/// `infra_failed` (a free requeue). They disqualify the entry, typed.
#[test]
#[ignore = "needs python3: run scripts/test"]
fn interop_hostile_out_of_vocabulary_ids_disqualify_the_entry_not_the_round() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (_fixture, record) = hostile_round(1, 101);
    assert_eq!(
        record.outcome.status,
        RoundStatus::Complete,
        "{:?}\n{:#?}",
        record.outcome,
        record.entries
    );
    let cheat = &record.entries[1];
    assert_eq!(cheat.status, EntryStatus::Disqualified, "{cheat:#?}");
    let reason = cheat.disqualification.as_ref().unwrap().reason;
    assert!(
        matches!(
            reason,
            DisqualificationReason::InvalidTokenId {
                run: Some(0),
                status: 400,
                ..
            }
        ),
        "{reason:?}"
    );
}

/// Regression (issue 40): an engine that widened its CPU affinity onto the load
/// generator's CPU made its own client lag, and over a tight bound the round was
/// `infra_failed` with everyone requeued for free — a veto. Its threads' affinity is
/// read while it is measured and after: the entry is disqualified `left_cpu_set` in the
/// pass it did so, the round decides. On a host with one CPU nothing is pinned, so there
/// is no set to leave and the entry is not disqualified for it.
#[test]
#[ignore = "needs python3: run scripts/test"]
fn interop_hostile_cpu_grab_is_the_entrys_fault_not_the_rounds() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (_fixture, record) = hostile_round(1, 103);
    let cheat = &record.entries[1];
    let pinned = cheat
        .engine
        .isolation
        .as_ref()
        .is_some_and(|i| i.pinning == receipts::model::CpuPinning::SchedAffinity);
    let reason = cheat.disqualification.as_ref().map(|d| d.reason);
    if !pinned {
        assert!(
            !matches!(reason, Some(DisqualificationReason::LeftCpuSet { .. })),
            "{cheat:#?}"
        );
        return;
    }
    assert_ne!(
        record.outcome.status,
        RoundStatus::InfraFailed,
        "{:?}",
        record.outcome
    );
    assert_eq!(cheat.status, EntryStatus::Disqualified, "{cheat:#?}");
    let client = record.entries[1]
        .engine
        .isolation
        .as_ref()
        .map(|i| i.client_cpus.clone())
        .unwrap_or_default();
    assert!(
        matches!(
            reason,
            Some(DisqualificationReason::LeftCpuSet { pass: 0, cpu }) if client.contains(&cpu)
        ),
        "{reason:?}"
    );
}

/// The one disqualified challenger of a hostile round, in a round that decided (not
/// `infra_failed`): its typed reason.
fn disqualified_challenger(record: &RoundRecord) -> DisqualificationReason {
    assert_ne!(
        record.outcome.status,
        RoundStatus::InfraFailed,
        "{:?}\n{:#?}",
        record.outcome,
        record.entries
    );
    assert_ne!(
        record.entries[0].status,
        EntryStatus::Disqualified,
        "the honest baseline: {:#?}",
        record.entries[0]
    );
    let cheat = &record.entries[1];
    assert_eq!(cheat.status, EntryStatus::Disqualified, "{cheat:#?}");
    cheat.disqualification.as_ref().unwrap().reason
}

/// Regression (issue 40): eight requests a round let whole-request garbage on a small
/// share through ((1 − p)⁸ = 0.66 at 5 %). The proxy streams wrong ids on ~10 % of the
/// timed requests; the round samples every completed request of the result probe
/// (`load_sample` = 1,000: the test is about the verdict, not the odds, which
/// content/correctness.md gives at the default size), and a garbage request's gap is far
/// above the item bound: `load_outputs_diverge`.
#[test]
#[ignore = "needs python3: run scripts/test"]
fn interop_hostile_garbage_on_a_small_share_is_disqualified() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (_fixture, record) = hostile_round_with(1, 110, "load_sample = 1000\n");
    let reason = disqualified_challenger(&record);
    assert!(
        matches!(
            reason,
            DisqualificationReason::LoadOutputsDiverge {
                run: 0,
                gap_micro_nats,
                bound_micro_nats: 1_500_000,
                ..
            } if gap_micro_nats > 1_500_000
        ),
        "{reason:?}"
    );
}

/// Regression (issue 40): a stream whose text is `z` everywhere, with the right ids, was
/// scored — the text was never compared with the ids. Each sampled request's streamed
/// text is held against the reference's text of its ids: `text_not_ids`.
#[test]
#[ignore = "needs python3: run scripts/test"]
fn interop_hostile_text_that_is_not_its_ids_is_disqualified() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (_fixture, record) = hostile_round(1, 104);
    let cheat = &record.entries[1];
    assert_eq!(cheat.status, EntryStatus::Disqualified, "{cheat:#?}");
    let reason = cheat.disqualification.as_ref().unwrap().reason;
    assert!(
        matches!(reason, DisqualificationReason::TextNotIds { run: 0, .. }),
        "{reason:?}"
    );
}

/// Regression (issue 40): int4 weights under load, full precision for the correctness
/// gate's requests (which are not streamed), was scored: each request's gap stays under
/// the item bound. The run's mean gap does not: `load_group_diverges`, at least 3 × the
/// bound (issue 40: the suite's degraded engines sit at ≥ 3 × the bound). The tiny
/// model's campaign calibrates its own group bound (content/correctness.md, The bounds
/// of the sample: honest 8-request means ≤ 0.01 nats, int4's ≥ 0.078 in 99.9 % of
/// runs): 0.025 nats. The round's requests are the given seeds', so the mean is the same
/// in every run of this test, loaded or quiet.
#[test]
#[ignore = "needs python3: run scripts/test"]
fn interop_hostile_degraded_weights_under_load_are_disqualified() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (_fixture, record) = hostile_round_with(1, 111, TINY_GROUP_BOUND);
    let reason = disqualified_challenger(&record);
    eprintln!("degraded weights: {reason:?}");
    assert!(
        matches!(
            reason,
            DisqualificationReason::LoadGroupDiverges {
                run: 0,
                mean_micro_nats,
                bound_micro_nats: 25_000,
            } if mean_micro_nats >= 3 * 25_000
        ),
        "{reason:?}"
    );
}

/// The tiny model's calibrated group bound, 0.025 nats (content/correctness.md, The
/// bounds of the sample), as a `[correctness]` line.
const TINY_GROUP_BOUND: &str = "load_group_bound_micro_nats = 25000\n";

/// Regression (issue 40): 8 % filler tokens in every timed request was scored +13 %.
/// Each filler is a token the reference ranks far below its top one: more positions of
/// the run's sample above the position bound (8 nats) than allowed (2),
/// `load_positions_over`.
#[test]
#[ignore = "needs python3: run scripts/test"]
fn interop_hostile_filler_tokens_are_disqualified() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // The item and group bounds out of the way: at 1.4 nats a request on the tiny model
    // the fillers fail those first (the defaults catch them so, content/correctness.md),
    // and this round is about the count.
    let (_fixture, record) = hostile_round_with(
        1,
        112,
        "load_item_bound_micro_nats = 100000000\nload_group_bound_micro_nats = 100000000\n",
    );
    let reason = disqualified_challenger(&record);
    assert!(
        matches!(
            reason,
            DisqualificationReason::LoadPositionsOver {
                run: 0,
                positions,
                max_positions: 2,
            } if positions > 2
        ),
        "{reason:?}"
    );
}

/// Regression (issue 40; MLPerf TEST06/TEST09): an engine that ends a share of the timed
/// requests early (an end of sequence under `ignore_eos`) saves their time, and the
/// failed requests alone did not stop it being scored under a p50 SLA. Every request
/// asks for an exact length: a counted run with a short one is `output_length`.
#[test]
#[ignore = "needs python3: run scripts/test"]
fn interop_hostile_early_end_of_sequence_is_disqualified() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Short requests at 60 requests/s: a 400 ms probe of about 24, which certifies p50
    // with a few failed (MLPerf early stopping), so the run is scored but for the check.
    let tiny = Tiny {
        rates: "min_rate_milli_rps = 60000\nmax_rate_milli_rps = 60000",
        input_len: "min = 8, max = 16",
        output_len: "min = 4, max = 8",
        ..Tiny::default()
    };
    let (_fixture, record) = hostile_round_at(tiny, 1, 105);
    let cheat = &record.entries[1];
    assert_eq!(cheat.status, EntryStatus::Disqualified, "{cheat:#?}");
    let reason = cheat.disqualification.as_ref().unwrap().reason;
    assert!(
        matches!(
            reason,
            DisqualificationReason::OutputLength { pass: 0, short, long: 0 } if short > 0
        ),
        "{reason:?}"
    );
}

/// Regression (issue 40): the correctness gate's requests can be told apart (by their
/// text, or by coming first), and an engine honest on exactly those was scored when the
/// gate alone judged it. The proxy knows every gate prompt by its text and is honest on
/// it even streamed, and on the first three streamed requests of its process (a
/// position tell); the judged timed requests are ordinary ones drawn after the run, so
/// the garbage it streams on the others is judged: `load_outputs_diverge`.
#[test]
#[ignore = "needs python3: run scripts/test"]
fn interop_hostile_honest_only_on_the_gates_prompts_is_disqualified() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (_fixture, record) = hostile_round_with(1, 106, "load_sample = 1000\n");
    let reason = disqualified_challenger(&record);
    assert!(
        matches!(
            reason,
            DisqualificationReason::LoadOutputsDiverge {
                run: 0,
                gap_micro_nats,
                bound_micro_nats: 1_500_000,
                ..
            } if gap_micro_nats > 1_500_000
        ),
        "{reason:?}"
    );
}

/// Short requests at 60 requests/s, each asking for 8 tokens: a probe of about 24, for
/// the cache classes.
fn cache_round(class: u32) -> (Fixture, RoundRecord) {
    let tiny = Tiny {
        rates: "min_rate_milli_rps = 60000\nmax_rate_milli_rps = 60000",
        input_len: "min = 8, max = 16",
        output_len: "min = 8, max = 8",
        correctness: "load_sample = 1000\n",
        ..Tiny::default()
    };
    hostile_round_at(tiny, 1, class)
}

/// Regression (issue 40; GPU MODE's "results cached or replayed"): an engine that
/// answers a prompt from the answer it gave an earlier, similar one (here: the same first
/// letter and length) saves the work and streams at once. The replayed ids are another
/// prompt's answer, and the sample judges every completed request against the reference
/// on its own prompt: `load_outputs_diverge`.
#[test]
#[ignore = "needs python3: run scripts/test"]
fn interop_hostile_replayed_answers_are_disqualified() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (_fixture, record) = cache_round(108);
    let reason = disqualified_challenger(&record);
    assert!(
        matches!(
            reason,
            DisqualificationReason::LoadOutputsDiverge {
                run: 0,
                gap_micro_nats,
                bound_micro_nats: 1_500_000,
                ..
            } if gap_micro_nats > 1_500_000
        ),
        "{reason:?}"
    );
}

/// Regression (issue 40; MLPerf TEST04): an engine that caches answers per exact prompt
/// and replays a repeat gains nothing in a round (no prompt of a round is sent twice),
/// so only a probe that repeats prompts shows the cache. Every counted run of a
/// challenger ends with its caching probe: fresh prompts, each sent again after the next
/// one, one at a time. The cache replays every repeat (its own log says so) in no time:
/// `caching`, its speed-up far above the bound. The honest control — the same proxy
/// without a cache, in the same round — is faster on no repeat by more than the bound and
/// is not disqualified. Statuses and reasons only, never timings: the control's speed-up
/// is noise under the bound (twice as fast), the cache's a replay.
#[test]
#[ignore = "needs python3: run scripts/test"]
fn interop_hostile_answer_cache_is_caught_by_the_caching_probe() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // The tiny campaign's 24–32 output tokens: an honest decode span of a millisecond or
    // so, against a replay's few dozen microseconds.
    let tiny = Tiny {
        correctness: "load_sample = 1000\n",
        ..Tiny::default()
    };
    let (fixture, record) = hostile_round_of(tiny, 1, &[("honest", 100), ("cheat", 109)]);
    assert_ne!(
        record.outcome.status,
        RoundStatus::InfraFailed,
        "{:?}",
        record.outcome
    );
    let entry = |miner: &str| {
        (record.entries.iter())
            .find(|e| e.miner.as_ref().is_some_and(|m| m.as_str() == miner))
            .unwrap()
    };
    let bundle = fixture.data.join("tiny/rounds/1");
    // Each run's caching probe as its probe log holds it, for the messages.
    let probes = |entry: &receipts::model::Entry| -> Vec<String> {
        (entry.passes.iter())
            .filter_map(|pass| pass.probe_log.as_ref())
            .map(|log| {
                let log: receipts::model::EntryMeasurement =
                    serde_json::from_slice(&std::fs::read(bundle.join(log)).unwrap()).unwrap();
                let probe = log.caching.unwrap();
                format!("repeats faster by {:?} bp", probe.speedup_bp)
            })
            .collect()
    };
    let honest = entry("honest");
    assert_ne!(
        honest.status,
        EntryStatus::Disqualified,
        "{honest:#?}\n{:?}",
        probes(honest)
    );
    let cheat = entry("cheat");
    // The figures, for the CI log (content/correctness.md, Caching, quotes them).
    eprintln!(
        "caching probes: honest {:?}, cache {:?}",
        probes(honest),
        probes(cheat)
    );
    assert_eq!(
        cheat.status,
        EntryStatus::Disqualified,
        "{cheat:#?}\n{:?}",
        probes(cheat)
    );
    let reason = cheat.disqualification.as_ref().unwrap().reason;
    assert!(
        matches!(
            reason,
            DisqualificationReason::Caching {
                pass: 0,
                speedup_bp,
                bound_bp: 10_000,
            } if speedup_bp > 10_000
        ),
        "{reason:?}"
    );
    // The cache stored every answer (the timed load's and the probe's fresh prompts) and
    // replayed exactly the probe's 8 repeats: nothing of the timed load came twice.
    let logs: Vec<String> = cheat
        .passes
        .iter()
        .filter_map(|pass| pass.engine_log.as_ref())
        .map(|log| std::fs::read_to_string(bundle.join(log)).unwrap())
        .collect();
    assert!(!logs.is_empty(), "{cheat:#?}");
    let count = |what: &str| {
        logs.iter()
            .map(|log| log.matches(what).count())
            .sum::<usize>()
    };
    assert!(count("cache: stored") >= 16, "{logs:?}");
    assert_eq!(count("cache: replayed"), 8, "{logs:?}");
}

/// Regression (issue 40; MLPerf TEST04): a JSONL prompt source is a finite file, so its
/// lines come back many times in a round, each behind its own per-item tag; a cache that
/// strips the tag replays a line's first answer for every later request of that line.
/// With two lines and one output length, that is nearly every timed request, and the
/// caching probe's fresh prompts too: each of its pairs is two replays, no faster than
/// each other, so the probe cannot see this cache (content/correctness.md, Caching). The
/// sample does: a replay is the answer to the same line behind another tag, not this
/// prompt's (0.01–0.60 nats a request on the tiny model, 0.30 on average), and the run's mean is above the
/// tiny model's calibrated group bound: `load_group_diverges`. Its log shows the timed
/// load replayed, beyond the probe's 16 requests.
#[test]
#[ignore = "needs python3: run scripts/test"]
fn interop_hostile_tag_stripping_cache_on_a_jsonl_source_is_disqualified() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Short lines: the tag is most of the prompt, so another tag's answer is far from
    // this prompt's (a long line's replay is closer: content/correctness.md, Caching).
    let jsonl = b"{\"prompt\": \"the river\"}\n{\"prompt\": \"stone\"}\n";
    let correctness = format!("load_sample = 1000\n{TINY_GROUP_BOUND}");
    let tiny = Tiny {
        output_len: "min = 24, max = 24",
        correctness: &correctness,
        ..Tiny::default()
    };
    let (fixture, record) = hostile_round_from(tiny, 1, &[("cheat", 113)], Some(jsonl), "");
    let reason = disqualified_challenger(&record);
    let cheat = &record.entries[1];
    let bundle = fixture.data.join("tiny/rounds/1");
    let logs: Vec<String> = (cheat.passes.iter())
        .filter_map(|pass| pass.engine_log.as_ref())
        .map(|log| std::fs::read_to_string(bundle.join(log)).unwrap())
        .collect();
    let count = |what: &str| {
        logs.iter()
            .map(|log| log.matches(what).count())
            .sum::<usize>()
    };
    // The figures, for the CI log (content/correctness.md, Caching, quotes them).
    eprintln!(
        "tag-stripping cache: {reason:?}, {} stored, {} replayed",
        count("cache: stored"),
        count("cache: replayed")
    );
    assert!(
        matches!(
            reason,
            DisqualificationReason::LoadGroupDiverges {
                run: 0,
                mean_micro_nats,
                bound_micro_nats: 25_000,
            } if mean_micro_nats > 25_000
        ),
        "{reason:?}"
    );
    assert!(count("cache: replayed") > 16, "{logs:?}");
}

/// Regression (issue 40): only the best challenger by median was tested against the
/// margin, so a decoy — the best median and one slow pass, which fails the every-pass
/// condition — kept an honest faster challenger out of the seat. Every scored challenger
/// is tested now: the faster one, which clears the margin in every pass, is seated and
/// the decoy ends `scored`. The proxy fixes each answer's latency to the timed load
/// (`pad` lines) whatever the machine's load: the baseline (and its A/A control) 1,000 ms,
/// the faster challenger 400 ms, the decoy 100 ms in passes 1 and 3 and 2,500 ms in pass
/// 2; a run's throughput is its requests over the span to its last completion (about
/// 0.8 s of sends plus that latency), so the faster one is about 1.5 × the baseline in
/// every pass and the decoy 2 × in two and 0.6 × in one. Statuses and the seat only,
/// never timings; the caching probe is off (its requests are not padded, and it costs
/// time here).
#[test]
#[ignore = "needs python3: run scripts/test"]
fn interop_hostile_decoy_does_not_keep_the_faster_challenger_out() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Short requests, so that the engine (a debug build on a loaded machine) answers
    // each well inside the shortest pad and no queue forms behind it.
    let tiny = Tiny {
        input_len: "min = 8, max = 16",
        output_len: "min = 4, max = 8",
        correctness: "caching_prompts = 0\n",
        ..Tiny::default()
    };
    let pads = "pad 0 * 1000\npad 100 * 400\npad 114 p0 100\npad 114 p1 2500\npad 114 p2 100\n";
    let (_fixture, record) =
        hostile_round_from(tiny, 3, &[("decoy", 114), ("faster", 100)], None, pads);
    let entry = |miner: &str| {
        (record.entries.iter())
            .find(|e| e.miner.as_ref().is_some_and(|m| m.as_str() == miner))
            .unwrap()
    };
    let (decoy, faster) = (entry("decoy"), entry("faster"));
    eprintln!(
        "decoy round: {:?}; decoy {:?}, faster {:?}",
        record.outcome, decoy.paired_score, faster.paired_score
    );
    assert_eq!(
        record.outcome.status,
        RoundStatus::Complete,
        "{:?}\n{:#?}",
        record.outcome,
        record.entries
    );
    assert_eq!(decoy.status, EntryStatus::Scored, "{decoy:#?}");
    assert_eq!(faster.status, EntryStatus::Scored, "{faster:#?}");
    // A practice round (`--seeds`) records its decision and moves no seat.
    assert!(
        matches!(
            &record.outcome.decision,
            TypedOrText::Typed(SeatRule::MarginMet { winner }) if winner.miner.as_str() == "faster"
        ),
        "{:?}",
        record.outcome
    );
}
