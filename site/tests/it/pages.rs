//! Snapshots of the round and entry page models over the committed v2 fixture bundle
//! (`verifier/tests/fixtures/v2-round`), verified with its keyring as of its seal time, and
//! the exact tables they publish beside them. Charts are drawn by `site::svg` and tested
//! there; here they are redacted to their presence.

use std::path::{Path, PathBuf};

use testkit::copy_dir;

use receipts::keys::Keyring;
use receipts::layout::read_sealed_round;
use site::archive::VerifiedRound;
use site::pages::{entry, round};
use verifier::VerifyOptions;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../verifier/tests/fixtures")
}

/// The v2 fixture round, verified as of its seal time (`endedAt`).
fn v2_round() -> VerifiedRound {
    verified_round(&fixtures().join("v2-round"))
}

/// The round bundle in `dir` (the v2 fixture or a copy), verified as of its seal time.
fn verified_round(dir: &Path) -> VerifiedRound {
    let keyring = Keyring::load(&fixtures().join("v2-keyring.json")).unwrap();
    let sealed = read_sealed_round(dir).unwrap();
    let (record, subjects, statement_digest) =
        (sealed.record, sealed.subjects, sealed.statement_digest);
    let report = verifier::verify_bundle(dir, &keyring, &VerifyOptions::at(record.ended_at));
    assert!(
        report.passed(),
        "{:?}",
        report.failures().collect::<Vec<_>>()
    );
    let verified_at = record.ended_at;
    VerifiedRound::new(
        record.round,
        dir,
        record,
        &report,
        &subjects,
        statement_digest,
        verified_at,
    )
}

#[test]
fn round_page_model_of_the_v2_fixture() {
    let round = v2_round();
    let campaign = round.record.campaign.id.clone();
    let page = round::round_page(&campaign, &round, None, None, None).unwrap();
    assert_eq!(page.dir.as_str(), "c/tiny/r/1/");
    assert_eq!(page.template, "round.html");
    insta::assert_json_snapshot!("round_v2", page.model);
    let files: Vec<(&str, String)> = page
        .files
        .iter()
        .map(|f| (f.path.as_str(), String::from_utf8(f.bytes.clone()).unwrap()))
        .collect();
    assert_eq!(files[0].0, "c/tiny/r/1/entries.csv");
    assert_eq!(
        files[0].1,
        "index,slug,role,miner,patch,status,scorePpm,scoreMinPpm,scoreMaxPpm,passes,\
         throughputMilliRps,throughputMinMilliRps,throughputMaxMilliRps,runs,durationMs,reason,\
         verified\r\n\
         0,baseline,baseline,,,scored,0,,,,10853,10853,10853,1,931,,true\r\n\
         1,candidate-1-fast,challenger,fast,\
         f98bb8888a2454cec792fdb3057f7a3f604e2afd317a4b644b9913f86e318dfc,scored,-11057,,,,\
         10733,10733,10733,1,1013,,true\r\n"
    );
    assert_eq!(files[1].0, "c/tiny/r/1/entries.json");
}

#[test]
fn entry_page_models_of_the_v2_fixture() {
    let round = v2_round();
    let campaign = round.record.campaign.id.clone();
    let pages = entry::entry_pages(&campaign, &round).unwrap();
    let dirs: Vec<&str> = pages.iter().map(|p| p.dir.as_str()).collect();
    assert_eq!(
        dirs,
        ["c/tiny/r/1/e/baseline/", "c/tiny/r/1/e/candidate-1-fast/"]
    );
    for page in &pages {
        assert_eq!(page.template, "entry.html");
        for run in &page.model.runs {
            assert!(run.chart.starts_with("<svg"), "{}", run.chart);
        }
        assert!(page.model.percentile_chart.starts_with("<svg"));
    }
    let redactions = |settings: &mut insta::Settings| {
        settings.add_redaction(".runs[].chart", "[svg]");
        settings.add_redaction(".percentile_chart", "[svg]");
        settings.add_redaction(".correctness.chart", "[svg]");
    };
    let mut settings = insta::Settings::clone_current();
    redactions(&mut settings);
    settings.bind(|| {
        insta::assert_json_snapshot!("entry_v2_baseline", pages[0].model);
        insta::assert_json_snapshot!("entry_v2_candidate", pages[1].model);
    });
    let names: Vec<&str> = pages[1].files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        names,
        [
            "c/tiny/r/1/e/candidate-1-fast/probes.csv",
            "c/tiny/r/1/e/candidate-1-fast/probes.json",
            "c/tiny/r/1/e/candidate-1-fast/latency.csv",
            "c/tiny/r/1/e/candidate-1-fast/latency.json",
            "c/tiny/r/1/e/candidate-1-fast/correctness.csv",
            "c/tiny/r/1/e/candidate-1-fast/correctness.json",
        ]
    );
    let probes = String::from_utf8(pages[1].files[0].bytes.clone()).unwrap();
    assert_eq!(
        probes,
        "runLabel,run,probe,rateMilliRps,requests,completed,overBound,percentileUs,boundUs,\
         verdict,throughputMilliRps,durationUs,sendLagP50Us,sendLagP99Us,errors\r\n\
         run 1,0,0,10000,8,8,0,47039,250000,pass,10733,745350,301,367,0\r\n"
    );
}

/// A probe log or correctness file rewritten after its bundle verified (still JSON that
/// fits, with other numbers), a diff or an engine log with a line added, is not shown: its
/// entry page names the file, its sha256 and the signed one instead, and the other entry's
/// page is unchanged.
#[test]
fn a_file_changed_after_verification_is_not_shown() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("v2-round");
    copy_dir(&fixtures().join("v2-round"), &dir);
    let round = verified_round(&dir);
    let campaign = round.record.campaign.id.clone();
    let before = entry::entry_pages(&campaign, &round).unwrap();

    // The same JSON, re-indented and with one throughput changed: it parses as before.
    for file in [
        "probes/candidate-1-fast.json",
        "correctness/candidate-1-fast.json",
    ] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
        if let Some(t) = value.pointer_mut("/runs/0/probes/0/throughputMilliRps") {
            *t = serde_json::json!(99_999_999);
        }
        std::fs::write(dir.join(file), serde_json::to_vec(&value).unwrap()).unwrap();
    }
    let diff =
        "inputs/patches/f98bb8888a2454cec792fdb3057f7a3f604e2afd317a4b644b9913f86e318dfc.diff";
    let engine_log = "logs/engines/candidate-1-fast.log";
    for file in [diff, engine_log] {
        let mut bytes = std::fs::read(dir.join(file)).unwrap();
        bytes.extend_from_slice(b"+FORGED LINE\n");
        std::fs::write(dir.join(file), bytes).unwrap();
    }
    let after = entry::entry_pages(&campaign, &round).unwrap();
    assert_eq!(
        serde_json::to_value(&after[0].model).unwrap(),
        serde_json::to_value(&before[0].model).unwrap(),
        "the baseline's page reads none of the changed files"
    );
    let candidate = &after[1].model;
    let signed = |file: &str| round.verified_files.get(file).unwrap().to_string();
    let probe_error = candidate.runs[0].error.as_deref().unwrap();
    assert!(
        probe_error.starts_with("`probes/candidate-1-fast.json` cannot be used: its sha256 is ")
            && probe_error.ends_with(&format!(
                ", the signed Statement records {}: it changed since it was verified",
                signed("probes/candidate-1-fast.json")
            )),
        "{probe_error}"
    );
    assert!(candidate.runs[0].probes.is_empty());
    let correctness = candidate.correctness.as_ref().unwrap();
    let correctness_error = correctness.error.as_deref().unwrap();
    assert!(
        correctness_error.contains(&signed("correctness/candidate-1-fast.json")),
        "{correctness_error}"
    );
    assert!(correctness.items.is_empty());
    for (file, error) in [
        (diff, candidate.provenance.diff_error.as_deref()),
        (
            engine_log,
            candidate.engine_log.as_ref().map(|l| l.tail.as_str()),
        ),
    ] {
        let error = error.unwrap();
        assert!(
            error.starts_with(&format!("`{file}` cannot be used: its sha256 is "))
                && error.ends_with(&format!(
                    ", the signed Statement records {}: it changed since it was verified",
                    signed(file)
                )),
            "{error}"
        );
    }
    assert!(candidate.provenance.diff.is_none());
    let text = serde_json::to_string(candidate).unwrap();
    assert!(
        !text.contains("99,999") && !text.contains("99999") && !text.contains("FORGED"),
        "{text}"
    );
}

#[test]
fn both_pages_render_through_their_templates() {
    let round = v2_round();
    let campaign = round.record.campaign.id.clone();
    let page = round::round_page(&campaign, &round, None, None, None).unwrap();
    let html = site::render::render(page.template, &page.dir.page(), &page.model).unwrap();
    for expected in [
        "<title>Round 1 · complete · tiny · referee</title>",
        "Round 1 · <span class=\"ok\">complete</span>",
        "2 scored · 0 disqualified",
        "-1.10 %",
        "0 is baseline speed",
        "Unchanged",
        "held by the baseline",
        "first baseline 10.853 req/s → drift baseline 10.491 req/s: 334 bp (bound 5000 bp)",
        "href=\"../../../../c/tiny/r/1/e/candidate-1-fast/\"",
        "href=\"entries.csv\"",
        "href=\"../../../../c/tiny/r/1/bundle.tar\"",
        "href=\"../../../../keys/keyring.json\"",
        "referee verify --keyring keyring.json --at 2026-12-01T22:12:46.807363Z tiny-round-1",
        "Run <span class=\"muted\">12/12 steps</span>",
    ] {
        assert!(html.contains(expected), "{expected}\n{html}");
    }
    for entry in entry::entry_pages(&campaign, &round).unwrap() {
        let html = site::render::render(entry.template, &entry.dir.page(), &entry.model).unwrap();
        assert!(
            html.contains("<h2 id=\"rate-search\">Rate search</h2>"),
            "{html}"
        );
    }
}

#[test]
fn entry_slugs_are_the_bundle_file_names() {
    let mut record = v2_round().record;
    let mut challenger = record.entries[1].clone();
    record.entries[1].role = receipts::model::Role::Incumbent;
    challenger.index = 2;
    challenger.miner = Some("miner-b.2".parse().unwrap());
    record.entries.push(challenger);
    let slugs: Vec<String> = (0..3)
        .map(|i| {
            site::paths::EntrySlug::of(&record, i)
                .unwrap()
                .as_str()
                .to_owned()
        })
        .collect();
    assert_eq!(
        slugs,
        ["baseline", "incumbent-fast", "candidate-1-miner-b.2"]
    );
    assert!(site::paths::EntrySlug::of(&record, 3).is_err());
}

/// The v3 fixture round made `inconclusive` ([`testkit::forge::make_inconclusive`]),
/// with the fixture's own verification report (the display is under test).
fn inconclusive_round() -> VerifiedRound {
    let dir = fixtures().join("v3-round");
    let keyring = Keyring::load(&fixtures().join("v3-keyring.json")).unwrap();
    let sealed = read_sealed_round(&dir).unwrap();
    let mut record = sealed.record;
    let report = verifier::verify_bundle(&dir, &keyring, &VerifyOptions::at(record.ended_at));
    assert!(report.passed());
    testkit::forge::make_inconclusive(&mut record);
    let verified_at = record.ended_at;
    VerifiedRound::new(
        record.round,
        &dir,
        record,
        &report,
        &sealed.subjects,
        sealed.statement_digest,
        verified_at,
    )
}

/// Issue 43: the round page of an inconclusive round says so in words that match its
/// status (never infra_failed), and shows every entry's paired ratios, median and
/// interval, marked "not decided"; the whole page is golden
/// (`tests/it/snapshots/round-inconclusive.html`, `REFEREE_BLESS=1` rewrites it).
#[test]
fn the_inconclusive_round_page_says_not_decided_and_keeps_the_numbers() {
    let round = inconclusive_round();
    let campaign = round.record.campaign.id.clone();
    let page = round::round_page(&campaign, &round, None, None, None).unwrap();
    let html = site::render::render(page.template, &page.dir.page(), &page.model).unwrap();
    let golden =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/snapshots/round-inconclusive.html");
    if testkit::blessing() {
        std::fs::write(&golden, &html).unwrap();
    }
    assert_eq!(html, std::fs::read_to_string(&golden).unwrap());
    for expected in [
        "<title>Round 1 · inconclusive · by-hand · referee</title>",
        "<p class=\"notice\">inconclusive — not decided: A/A 30.78 % &gt; margin 10 %</p>",
        "1 scored · 0 disqualified · 1 not decided",
        "<td class=\"warn\">not decided</td>",
        "<td class=\"num\">+0.47 % <span class=\"badge warn\">not decided</span></td>",
        "<td>[+0.4, +0.5] (0\u{a0}% coverage, 1 pass)</td>",
    ] {
        assert!(html.contains(expected), "{expected}\n{html}");
    }
    assert!(!html.contains("infra_failed"), "{html}");
}

/// Issue 43: an entry page lists the entry's own steps across its passes, each with the
/// pass it ran in (from 1), not the round's steps grouped by pass.
#[test]
fn an_entry_page_lists_its_own_steps_pass_by_pass() {
    let round = inconclusive_round();
    let campaign = round.record.campaign.id.clone();
    let pages = entry::entry_pages(&campaign, &round).unwrap();
    let steps: Vec<(u32, Option<u32>, &str)> = pages[1]
        .model
        .steps
        .iter()
        .map(|s| (s.step.index, s.pass, s.step.name.as_str()))
        .collect();
    assert_eq!(
        steps,
        [
            (7, Some(1), "starting the engine"),
            (8, Some(1), "running SLA"),
            (9, Some(1), "running correctness"),
        ]
    );
    // The baseline's include its A/A control runs.
    assert_eq!(pages[0].model.steps.len(), 5);
}

/// Issue 43: the round page names the beacon the seeds derive from (a file beacon flagged
/// unsigned) and a practice round; the entry page gives the engine's uid and the declared
/// read-only paths, and marks the CPU sets it shows "attested". The v6 fixture's record,
/// given a file beacon, the practice flag and a declared path after it was verified.
#[test]
fn the_round_page_names_the_beacon_and_practice_and_the_entry_page_the_engines_uid() {
    use receipts::model::{BeaconRecord, BeaconSource, Seed32};
    let dir = fixtures().join("v6-round");
    let keyring = Keyring::load(&fixtures().join("v6-keyring.json")).unwrap();
    let sealed = read_sealed_round(&dir).unwrap();
    let mut record = sealed.record;
    let report = verifier::verify_bundle(&dir, &keyring, &VerifyOptions::at(record.ended_at));
    assert!(report.passed());
    record.beacon = Some(BeaconRecord {
        source: BeaconSource::File,
        round: 7,
        value: Seed32([0xab; 32]),
        signature: None,
    });
    record.practice = true;
    if let Some(isolation) = record.entries[1].engine.isolation.as_mut() {
        isolation.ro_paths = vec!["/opt/models".to_owned()];
    }
    let verified_at = record.ended_at;
    let campaign = record.campaign.id.clone();
    let round = VerifiedRound::new(
        record.round,
        &dir,
        record,
        &report,
        &sealed.subjects,
        sealed.statement_digest,
        verified_at,
    );
    let page = round::round_page(&campaign, &round, None, None, None).unwrap();
    assert_eq!(
        page.model.beacon.as_ref().map(|b| b.text.as_str()),
        Some(
            "The seeds derive from the evaluator's committed secret and a beacon: source file, \
             round 7, value abababa…babab: unsigned, a file the evaluator wrote, whose value \
             the evaluator could have chosen"
        )
    );
    assert!(page.model.beacon_unsigned);
    assert_eq!(
        page.model.practice.as_ref().map(|p| p.text.as_str()),
        Some("Practice round: the evaluator gave its seeds (--seeds), so it moves no seat")
    );
    let html = site::render::render(page.template, &page.dir.page(), &page.model).unwrap();
    assert!(
        html.contains("<p id=\"beacon\" class=\"unsigned\">"),
        "{html}"
    );

    let pages = entry::entry_pages(&campaign, &round).unwrap();
    let facts: Vec<(&str, &str, bool)> = (pages[1].model.provenance.isolation.iter())
        .map(|f| (f.label, f.value.as_str(), f.attested))
        .collect();
    for fact in [
        ("Engine CPUs", facts[2].1, true),
        ("Client CPUs", facts[3].1, true),
        ("Engine uid", "990000 (its own unprivileged uid)", false),
        ("Declared read-only paths", "/opt/models", false),
    ] {
        assert!(facts.contains(&fact), "{fact:?} in {facts:?}");
    }
}

/// The decide fixture (`v9-decide-round`, the s1-pro-speed demo's round sealed with the
/// CLI): the round page names its track and each entry's weight files, the entry page
/// the gate over the declared vector with every item's decision, all verified. In a copy
/// whose gate file's decisions are rewritten to markup and re-signed, that text is
/// escaped on the entry page.
#[test]
fn a_decide_round_shows_its_track_weights_and_gate_escaped() {
    use testkit::forge;
    let dir = fixtures().join("v9-decide-round");
    let keyring = Keyring::load(&fixtures().join("v9-decide-keyring.json")).unwrap();
    let render = |dir: &Path, keyring: &Keyring| {
        let sealed = read_sealed_round(dir).unwrap();
        let record = sealed.record;
        let report = verifier::verify_bundle(dir, keyring, &VerifyOptions::at(record.ended_at));
        let verified_at = record.ended_at;
        let campaign = record.campaign.id.clone();
        let round = VerifiedRound::new(
            record.round,
            dir,
            record,
            &report,
            &sealed.subjects,
            sealed.statement_digest,
            verified_at,
        );
        let page = round::round_page(&campaign, &round, None, None, None).unwrap();
        let html = site::render::render(page.template, &page.dir.page(), &page.model).unwrap();
        let entries = entry::entry_pages(&campaign, &round).unwrap();
        let challenger = &entries[1];
        let entry_html = site::render::render(
            challenger.template,
            &challenger.dir.page(),
            &challenger.model,
        )
        .unwrap();
        (report.passed(), page.model, html, entry_html)
    };
    let (passed, model, html, entry_html) = render(&dir, &keyring);
    assert!(passed);
    let decide = model.decide.as_ref().expect("the decide section");
    assert!(decide.verified);
    assert_eq!(
        decide.track,
        "s1-pro-speed · workload decide: one decision per request, throughput in decisions \
         per second"
    );
    let pinned = "model.weights sha256 \
                  891a9b413b886aad528a92a0f98655aafe2212bf5c23abe180f9b2c315a92914 \
                  (byte-identical to the pins)";
    assert_eq!(
        decide.weights,
        [
            format!("entry 0 (baseline): {pinned}"),
            format!("entry 1 (challenger): {pinned}"),
        ]
    );
    assert!(html.contains("<dt>Track</dt>"), "{html}");
    // A decide round's throughputs count decisions, on both pages.
    let throughputs: Vec<&str> = (model.entries.iter())
        .map(|e| e.throughput.text.as_str())
        .collect();
    // Each entry ran at the campaign's top rate: its cell is the receipt's own figure.
    let ceilings: Vec<String> = (read_sealed_round(&dir).unwrap().record.entries.iter())
        .map(|e| {
            let milli = e.throughput_milli_rps.expect("a scored entry's throughput");
            format!(
                "≥ {}.{:03} decisions/s (ceiling)",
                milli / 1000,
                milli % 1000
            )
        })
        .collect();
    assert_eq!(throughputs, ceilings);
    for ceiling in &ceilings {
        assert!(html.contains(ceiling.as_str()), "{ceiling} in {html}");
    }
    let probe = model
        .capability_probe
        .as_ref()
        .expect("the sidecar's probe");
    assert!(probe.verified);
    assert_eq!(probe.findings.len(), 4);
    assert!(
        entry_html.contains("over the declared decisions (a, e, i, o)"),
        "{entry_html}"
    );
    assert!(entry_html.contains("<th scope=\"col\">Decision</th>"));
    assert!(!entry_html.contains("unverified"), "{entry_html}");
    assert!(entry_html.contains(ceilings[1].as_str()), "{entry_html}");
    assert!(!entry_html.contains("req/s"), "{entry_html}");

    let forged = tempfile::tempdir().unwrap();
    let gate = "correctness/candidate-1-miner-fast.json";
    forge::forge_from(
        &dir,
        forged.path(),
        |d| {
            forge::edit_json(d, gate, |file| {
                file["decisions"][0] = "<script>alert(1)</script>".into();
                file["items"][0]["decision"] = "<img src=x onerror=alert(1)>".into();
            })
        },
        |_| {},
        |_| {},
    );
    let (_, _, _, entry_html) = render(forged.path(), &forge::keyring());
    assert!(!entry_html.contains("<script>alert"), "{entry_html}");
    assert!(!entry_html.contains("<img src=x"), "{entry_html}");
    assert!(
        entry_html.contains("(&lt;script&gt;alert(1)&lt;/script&gt;, e, i, o)"),
        "{entry_html}"
    );
}
