//! The data model's rules: campaign parsing, defaults and validation; the pipeline's
//! transition table; id and percentile rules.

use receipts::model::*;

const MINIMAL: &str = r#"
id = "demo"
[model]
name = "tiny"
[baseline]
repo = "baseline"
commit = "0123456789abcdef0123456789abcdef01234567"
"#;

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

#[test]
fn minimal_campaign_gets_every_default() {
    let c = Campaign::from_toml("campaign.toml", MINIMAL).unwrap();
    assert_eq!(c.runs, 3);
    assert_eq!(c.overtake_margin_bp, 100);
    assert_eq!(c.sla.percentile.permille(), 950);
    assert_eq!(c.sla.latency, LatencyKind::E2e);
    assert_eq!(c.sla.bound_ms, 1000);
    assert_eq!(c.correctness.items, 2000);
    assert_eq!(c.correctness.group_size, 3);
    assert_eq!(c.correctness.group_mean_bound_micro_nats, 200_000);
    assert_eq!(c.correctness.item_bound_micro_nats, 2_000_000);
    assert_eq!(c.correctness.top_k, 20);
    assert_eq!(c.baseline.engine_config_path, "engine.toml");
    assert_eq!(c.backend, Backend::Builtin);
    // content/measurement.md: send-lag bound max(2 ms, 1 % of the SLA bound).
    assert_eq!(c.rate_search.effective_send_lag_bound_us(&c.sla), 10_000);
    let small = Sla {
        bound_ms: 100,
        ..c.sla.clone()
    };
    assert_eq!(c.rate_search.effective_send_lag_bound_us(&small), 2_000);
}

#[test]
fn frozen_toml_round_trips_to_the_same_digest() {
    let c = Campaign::from_toml("campaign.toml", MINIMAL).unwrap();
    let frozen = c.to_toml().unwrap();
    let again = Campaign::from_toml("frozen.toml", &frozen).unwrap();
    assert_eq!(c, again);
    let digest = |c: &Campaign| FrozenCampaign::freeze(c.clone()).unwrap().digest;
    assert_eq!(digest(&c), digest(&again));
    let other = Campaign {
        runs: 5,
        ..c.clone()
    };
    assert_ne!(digest(&c), digest(&other));
}

fn invalid(extra_toml: &str, field: &str) {
    let text = format!("{MINIMAL}\n{extra_toml}");
    let err = Campaign::from_toml("campaign.toml", &text)
        .unwrap_err()
        .to_string();
    assert!(err.contains(field), "error `{err}` should name `{field}`");
}

#[test]
fn bad_values_are_named() {
    invalid("runs = 0", "runs");
    invalid("[sla]\npercentile = \"p100\"", "sla.percentile");
    invalid("[sla]\nlatency = \"p95\"", "latency");
    invalid("[correctness]\nitems = 2", "correctness.items");
    invalid("[correctness]\ntop_k = 21", "correctness.top_k");
    invalid(
        "[correctness]\nitems = 2001\noutput_tokens = 20",
        "`correctness.items` has invalid value `2001 (× output_tokens 20)`: items × output_tokens at \
         most 40000",
    );
    invalid(
        "[rate_search]\nmin_rate_milli_rps = 9000\nmax_rate_milli_rps = 10",
        "min_rate_milli_rps",
    );
    invalid(
        "[surface]\nallowed_modes = [\"120000\"]",
        "surface.allowed_modes",
    );
    invalid("surprise = 1", "surprise");
    invalid("health_deadline_s = 0", "health_deadline_s");
    invalid("drift_bound_bp = 1000000", "drift_bound_bp");
    invalid(
        "[hardware]\nmemory_limit_mb = 0",
        "hardware.memory_limit_mb",
    );
    invalid(
        "[hardware]\nengine_threads = 1000000",
        "hardware.engine_threads",
    );
    invalid("[correctness]\ngroup_size = 0", "correctness.group_size");
    let bad_commit = MINIMAL.replace("0123456789abcdef0123456789abcdef01234567", "HEAD");
    let err = Campaign::from_toml("c.toml", &bad_commit)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("baseline.commit") && err.contains("`HEAD`"),
        "{err}"
    );
    let bad_id = MINIMAL.replace("\"demo\"", "\"../etc\"");
    let err = Campaign::from_toml("c.toml", &bad_id)
        .unwrap_err()
        .to_string();
    assert!(err.contains("../etc"), "{err}");
}

#[test]
fn percentiles_parse_print_and_rank() {
    for (text, permille, shown) in [
        ("p95", 950, "p95"),
        ("p99.9", 999, "p99.9"),
        ("50", 500, "p50"),
        ("p0.1", 1, "p0.1"),
    ] {
        let p: Percentile = text.parse().unwrap();
        assert_eq!((p.permille(), p.to_string().as_str()), (permille, shown));
    }
    for bad in ["p100", "p", "p9.99", "p-1", "p95.", "q95"] {
        assert!(bad.parse::<Percentile>().is_err(), "{bad}");
    }
    let p95: Percentile = "p95".parse().unwrap();
    // Nearest rank ⌈q·N⌉ (content/measurement.md).
    assert_eq!(p95.nearest_rank(100), 95);
    assert_eq!(p95.nearest_rank(101), 96);
    assert_eq!(p95.nearest_rank(1), 1);
    assert_eq!("p50".parse::<Percentile>().unwrap().nearest_rank(3), 2);
    assert_eq!(
        "p99.9".parse::<Percentile>().unwrap().nearest_rank(1000),
        999
    );
    let sla: Sla = "p95:e2e:300ms".parse().unwrap();
    assert_eq!(
        (sla.percentile.permille(), sla.latency, sla.bound_ms),
        (950, LatencyKind::E2e, 300)
    );
    assert_eq!(sla.to_string(), "p95:e2e:300ms");
    assert!("p95:e2e".parse::<Sla>().is_err());
}

#[test]
fn ids_follow_their_alphabets() {
    assert!("demo-1".parse::<CampaignId>().is_ok());
    for bad in ["", "Demo", "a/b", "..", &"a".repeat(65)] {
        assert!(bad.parse::<CampaignId>().is_err(), "{bad}");
    }
    assert!("miner_1.A-b".parse::<MinerId>().is_ok());
    for bad in ["", ".", "..", "a/b", "<script>", "-x", ".hidden"] {
        assert!(bad.parse::<MinerId>().is_err(), "{bad}");
    }
    assert!("AB".repeat(32).parse::<Sha256Hex>().is_err());
    assert!("ab".repeat(32).parse::<Sha256Hex>().is_ok());
}

#[test]
fn timestamps_are_rfc3339_utc() {
    let t = ts("2026-09-17T15:03:46.123456Z");
    assert_eq!(t.to_string(), "2026-09-17T15:03:46.123456Z");
    assert!("2026-09-17T15:03:46+02:00".parse::<Timestamp>().is_err());
    assert_eq!(
        ts("2026-09-17T15:03:46Z").millis_until(ts("2026-09-17T15:03:47.5Z")),
        1500
    );
}

fn submission() -> Submission {
    Submission::committed(
        Sha256Hex::digest(b"diff"),
        "demo".parse().unwrap(),
        "alice".parse().unwrap(),
        Sha256Hex::digest(b"diff"),
        4,
        ts("2026-09-17T12:00:00Z"),
    )
}

#[test]
fn pipeline_walks_the_linear_path_and_records_reasons() {
    use PipelineState::*;
    let mut s = submission();
    let at = ts("2026-09-17T12:00:01Z");
    for to in [
        PickedUp,
        Fetched,
        Verified,
        SurfaceOk,
        Applied,
        Building,
        Built,
        BenchQueued,
        RoundAssigned,
        Scored,
    ] {
        s.transition(to, at, format!("to {to}")).unwrap();
    }
    assert_eq!(s.state, Scored);
    assert_eq!(s.events.len(), 11);
    assert_eq!(s.last_reason(), Some("to scored"));
    assert!(s.transition(BenchQueued, at, "again").is_err());
}

/// Regression: an event appended with a time earlier than the last one (a step back of
/// the wall clock, a superseded trace copied from an earlier record) made the log go
/// back in time; it is dated at the last event's time instead.
#[test]
fn events_are_never_dated_before_the_last_one() {
    use PipelineState::*;
    let mut s = submission();
    let later = ts("2026-09-17T12:00:05Z");
    let earlier = ts("2026-09-17T11:00:00Z");
    s.transition(PickedUp, later, "claimed").unwrap();
    s.transition(Fetched, earlier, "hashed").unwrap();
    s.record_duplicate("miner-b".parse().unwrap(), Sha256Hex::digest(b"x"), earlier);
    let mut other = submission();
    other.record_superseded(&submission(), earlier);
    s.record_superseded(&other, earlier);
    let times: Vec<Timestamp> = s.events.iter().map(|e| e.at).collect();
    assert_eq!(
        times,
        [
            ts("2026-09-17T12:00:00Z"),
            later,
            later,
            later,
            later,
            later
        ]
    );
}

#[test]
fn transition_table_is_exactly_design_section_2() {
    use PipelineState::*;
    let legal = [
        (Committed, PickedUp),
        (PickedUp, Fetched),
        (Fetched, Verified),
        (Verified, SurfaceOk),
        (SurfaceOk, Applied),
        (Applied, Building),
        (Building, ImagePushed),
        (Building, Built),
        (ImagePushed, Built),
        (Built, BenchQueued),
        (BenchQueued, RoundAssigned),
        (RoundAssigned, Scored),
        (RoundAssigned, Disqualified),
        (RoundAssigned, InfraFailed),
        (InfraFailed, BenchQueued),
        (PickedUp, Rejected),
        (Fetched, Rejected),
        (Verified, Rejected),
        (Applied, Rejected),
        (SurfaceOk, Rejected),
        (Building, Rejected),
    ];
    let mut count = 0;
    for from in PipelineState::ALL {
        for to in PipelineState::ALL {
            let expected = legal.contains(&(from, to));
            assert_eq!(from.can_move_to(to), expected, "{from} → {to}");
            count += usize::from(expected);
        }
    }
    assert_eq!(count, legal.len());
}

#[test]
fn infra_failed_requeues_once() {
    use PipelineState::*;
    let mut s = submission();
    let at = ts("2026-09-17T12:00:01Z");
    for to in [
        PickedUp,
        Fetched,
        Verified,
        SurfaceOk,
        Applied,
        Building,
        Built,
        BenchQueued,
    ] {
        s.transition(to, at, "").unwrap();
    }
    s.round_transition(RoundAssigned, 1, at, "seated").unwrap();
    s.round_transition(InfraFailed, 1, at, "drift").unwrap();
    assert!(s.can_requeue());
    s.transition(BenchQueued, at, "requeued once").unwrap();
    s.round_transition(RoundAssigned, 2, at, "seated").unwrap();
    s.round_transition(InfraFailed, 2, at, "drift again")
        .unwrap();
    assert!(!s.can_requeue());
    let err = s
        .transition(BenchQueued, at, "twice")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("infra_failed") && err.contains("bench_queued"),
        "{err}"
    );
}

#[test]
fn rejection_keeps_gate_and_reason_and_duplicates_are_events() {
    let mut s = submission();
    let at = ts("2026-09-17T12:00:01Z");
    s.transition(PipelineState::PickedUp, at, "claimed")
        .unwrap();
    s.reject(
        Gate::Fetched,
        at,
        "sha256 of the diff does not match the commitment",
    )
    .unwrap();
    assert_eq!(s.state, PipelineState::Rejected);
    s.record_duplicate("bob".parse().unwrap(), Sha256Hex::digest(b"x"), at);
    assert_eq!(s.state, PipelineState::Rejected);
    assert_eq!(
        s.last_reason(),
        Some("sha256 of the diff does not match the commitment")
    );
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["events"][2]["kind"], "transition");
    assert_eq!(json["events"][2]["gate"], "fetched");
    assert_eq!(json["events"][3]["kind"], "duplicate");
    assert_eq!(json["events"][3]["miner"], "bob");
    let back: Submission = serde_json::from_value(json).unwrap();
    assert_eq!(back, s);
}

#[test]
fn seed_commitment_is_sha256_of_seed_then_salt() {
    let reveal = SeedReveal::commit(Seed32([1; 32]), Seed32([2; 32]));
    let mut bytes = vec![1u8; 32];
    bytes.extend([2u8; 32]);
    assert_eq!(reveal.commitment, Sha256Hex::digest(&bytes));
    assert!(reveal.is_consistent());
    let forged = SeedReveal {
        seed: Seed32([3; 32]),
        ..reveal
    };
    assert!(!forged.is_consistent());
}

/// A campaign frozen before `campaign.json` existed (`fixtures/v1-campaign.toml`, written
/// by `referee campaign add` of commit `ec7952f`) keeps the digest its round recorded
/// (`fixtures/v1-campaign.digest`), read from the file and from a data directory that has
/// only that file.
#[test]
fn a_schema_1_campaign_keeps_the_digest_its_rounds_recorded() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let text = std::fs::read_to_string(root.join("v1-campaign.toml")).unwrap();
    let recorded: Sha256Hex = std::fs::read_to_string(root.join("v1-campaign.digest"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let frozen = FrozenCampaign::from_legacy_toml("v1-campaign.toml", &text).unwrap();
    assert_eq!(frozen.schema_version, 1);
    assert_eq!(frozen.digest, recorded);

    let data = tempfile::tempdir().unwrap();
    let dir = receipts::layout::DataDir::new(data.path()).campaign(&frozen.campaign.id);
    std::fs::create_dir_all(dir.root()).unwrap();
    std::fs::write(dir.campaign_toml(), &text).unwrap();
    let loaded = dir.load_campaign().unwrap();
    assert_eq!(loaded.digest, recorded);
    assert_eq!(loaded.campaign, frozen.campaign);
}

/// `campaign.json` is digested as stored: freezing writes canonical JSON with its
/// `schemaVersion`, reading it back gives the same bytes and digest, and an edit that
/// keeps it canonical changes the digest, one that does not is refused.
#[test]
fn campaign_json_is_digested_as_stored() {
    let frozen = FrozenCampaign::freeze(Campaign::from_toml("c.toml", MINIMAL).unwrap()).unwrap();
    let text = String::from_utf8(frozen.bytes.clone()).unwrap();
    assert!(text.contains("\"schemaVersion\":2"), "{text}");
    let again = FrozenCampaign::from_json("campaign.json", &frozen.bytes).unwrap();
    assert_eq!(again, frozen);
    let edited = text.replace("\"runs\":3", "\"runs\":5");
    assert_ne!(edited, text);
    let edited = FrozenCampaign::from_json("campaign.json", edited.as_bytes()).unwrap();
    assert_ne!(edited.digest, frozen.digest);
    let pretty = serde_json::to_vec_pretty(
        &serde_json::from_slice::<serde_json::Value>(&frozen.bytes).unwrap(),
    )
    .unwrap();
    let error = FrozenCampaign::from_json("campaign.json", &pretty).unwrap_err();
    assert!(error.to_string().contains("canonical"), "{error}");
    let future = text.replace("\"schemaVersion\":2", "\"schemaVersion\":9");
    let error = FrozenCampaign::from_json("campaign.json", future.as_bytes()).unwrap_err();
    assert!(error.to_string().contains("schemaVersion"), "{error}");
}

#[test]
fn engine_trust_and_steal_bound_default_validate_and_stay_out_of_the_digest() {
    let c = Campaign::from_toml("campaign.toml", MINIMAL).unwrap();
    assert_eq!(
        (c.trusted_engines, c.trusts_engines(), c.max_steal_permille),
        (None, false, None)
    );
    assert_eq!(c.effective_max_steal_permille(), 50);
    // Absent fields are not written, so an existing campaign's bytes do not move.
    let json = String::from_utf8(FrozenCampaign::freeze(c.clone()).unwrap().bytes).unwrap();
    assert!(!json.contains("trusted_engines") && !json.contains("max_steal_permille"));
    let set = Campaign {
        trusted_engines: Some(true),
        max_steal_permille: Some(1000),
        ..c
    };
    assert!(set.trusts_engines());
    assert_eq!(set.effective_max_steal_permille(), 1000);
    let err = Campaign {
        max_steal_permille: Some(1001),
        ..set
    }
    .validate()
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("max_steal_permille") && err.contains("1001"),
        "{err}"
    );
}

/// `[log]` (issue 42): absent, nothing required and nothing in the frozen bytes; written,
/// frozen as written (a `false` left out); which witnesses count; too many or empty names
/// refused, naming the field.
#[test]
fn log_policy_defaults_counts_and_validates() {
    let c = Campaign::from_toml("campaign.toml", MINIMAL).unwrap();
    assert_eq!(c.log, None);
    assert_eq!(c.effective_log(), LogPolicy::default());
    assert!(c.effective_log().counts("anyone"));
    let json = String::from_utf8(FrozenCampaign::freeze(c).unwrap().bytes).unwrap();
    assert!(!json.contains("\"log\""), "{json}");
    let set = Campaign::from_toml(
        "campaign.toml",
        &format!("{MINIMAL}\n[log]\nrequired = true\nwitnesses = [\"w.example\"]\n"),
    )
    .unwrap();
    let policy = set.effective_log();
    assert_eq!(
        policy,
        LogPolicy {
            required: true,
            witnesses: vec!["w.example".to_owned()],
            witness_each_pass: false,
        }
    );
    assert!(policy.counts("w.example") && !policy.counts("other.example"));
    let json = String::from_utf8(FrozenCampaign::freeze(set.clone()).unwrap().bytes).unwrap();
    assert!(
        json.contains(r#""log":{"required":true,"witnesses":["w.example"]}"#),
        "{json}"
    );
    let with_names = |witnesses: Vec<String>| Campaign {
        log: Some(LogPolicy {
            witnesses,
            ..policy.clone()
        }),
        ..set.clone()
    };
    assert_eq!(
        with_names((0..17).map(|i| format!("w{i}")).collect())
            .validate()
            .unwrap_err()
            .to_string(),
        "field `log.witnesses` has invalid value `17`: at most 16 names"
    );
    assert_eq!(
        with_names(vec![String::new()])
            .validate()
            .unwrap_err()
            .to_string(),
        "field `log.witnesses` has invalid value `\"\"`: each a witness key's name, 1 to 256 bytes"
    );
    assert!(
        with_names((0..16).map(|i| format!("w{i}")).collect())
            .validate()
            .is_ok()
    );
}

/// `[limits]` (issue 39): absent, the documented defaults and nothing in the frozen bytes;
/// written in part, the rest defaulted and every value frozen; out of range, named.
#[test]
fn limits_default_validate_and_stay_out_of_the_digest_when_absent() {
    let c = Campaign::from_toml("campaign.toml", MINIMAL).unwrap();
    assert_eq!(c.limits, None);
    assert_eq!(
        c.effective_limits(),
        Limits {
            engine_log_bytes: 64 << 20,
            response_bytes: 16 << 20,
            response_events: 65_536,
        }
    );
    let json = String::from_utf8(FrozenCampaign::freeze(c).unwrap().bytes).unwrap();
    assert!(!json.contains("limits"), "{json}");
    let set = Campaign::from_toml(
        "campaign.toml",
        &format!("{MINIMAL}\n[limits]\nengine_log_bytes = 65536\n"),
    )
    .unwrap();
    assert_eq!(
        set.limits,
        Some(Limits {
            engine_log_bytes: 65_536,
            response_bytes: 16 << 20,
            response_events: 65_536,
        })
    );
    let json = String::from_utf8(FrozenCampaign::freeze(set).unwrap().bytes).unwrap();
    assert!(
        json.contains(
            r#""limits":{"engine_log_bytes":65536,"response_bytes":16777216,"response_events":65536}"#
        ),
        "{json}"
    );
    for (line, field, value) in [
        ("engine_log_bytes = 4095", "limits.engine_log_bytes", "4095"),
        (
            "response_bytes = 1073741825",
            "limits.response_bytes",
            "1073741825",
        ),
        ("response_events = 0", "limits.response_events", "0"),
    ] {
        let err = Campaign::from_toml("campaign.toml", &format!("{MINIMAL}\n[limits]\n{line}\n"))
            .unwrap_err()
            .to_string();
        assert!(err.contains(field) && err.contains(value), "{err}");
    }
    let unknown = Campaign::from_toml(
        "campaign.toml",
        &format!("{MINIMAL}\n[limits]\nlog_bytes = 1\n"),
    )
    .unwrap_err()
    .to_string();
    assert!(unknown.contains("log_bytes"), "{unknown}");
}

#[test]
fn submission_kind_and_repository_limits_default_validate_and_stay_out_of_the_digest() {
    let c = Campaign::from_toml("campaign.toml", MINIMAL).unwrap();
    assert_eq!(
        (c.submission, c.submission_kind()),
        (None, SubmissionKind::Diff)
    );
    let json = String::from_utf8(FrozenCampaign::freeze(c).unwrap().bytes).unwrap();
    assert!(!json.contains("submission") && !json.contains("repository"));
    let repo = Campaign::from_toml(
        "campaign.toml",
        &format!("submission = \"repository\"\n{MINIMAL}"),
    )
    .unwrap();
    assert_eq!(repo.submission_kind(), SubmissionKind::Repository);
    let spec = repo.repository_spec();
    assert_eq!(
        (
            spec.max_file_bytes,
            spec.max_pending_per_coldkey,
            spec.max_per_window,
            spec.rate_window_h
        ),
        (53_687_091_200, 2, 4, 24)
    );
    let zero = Campaign {
        repository: Some(RepositorySpec {
            rate_window_h: 0,
            ..spec.clone()
        }),
        ..repo.clone()
    };
    let err = zero.validate().unwrap_err().to_string();
    assert!(err.contains("repository.rate_window_h"), "{err}");
    let on_diff = Campaign {
        submission: None,
        repository: Some(spec),
        ..repo
    };
    let err = on_diff.validate().unwrap_err().to_string();
    assert!(err.contains("field `repository`"), "{err}");
    let err = Campaign::from_toml(
        "campaign.toml",
        &format!("submission = \"tarball\"\n{MINIMAL}"),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("submission"), "{err}");
}

#[test]
fn only_a_repository_submission_goes_from_surface_ok_to_bench_queued() {
    let sha = Sha256Hex::digest(b"x");
    let at = Timestamp::from_unix_seconds(1_800_000_000).unwrap();
    let mut diff = Submission::committed(
        sha,
        "demo".parse().unwrap(),
        "m".parse().unwrap(),
        sha,
        1,
        at,
    );
    for to in [
        PipelineState::PickedUp,
        PipelineState::Fetched,
        PipelineState::Verified,
        PipelineState::SurfaceOk,
    ] {
        diff.transition(to, at, "").unwrap();
    }
    let mut repository = diff.clone();
    assert!(diff.transition(PipelineState::BenchQueued, at, "").is_err());
    repository.repository = Some(RepositoryRecord {
        commitment: format!("/r@{}", "a".repeat(40)),
        committed_at: at,
        coldkey: None,
        tree_sha256: None,
        manifest_sha256: None,
        validation: None,
        review: None,
    });
    repository
        .transition(PipelineState::BenchQueued, at, "")
        .unwrap();
    assert_eq!(repository.state, PipelineState::BenchQueued);
}

#[test]
fn pass_order_defaults_to_interleaved_and_an_unknown_one_is_named() {
    let c = Campaign::from_toml("campaign.toml", MINIMAL).unwrap();
    assert_eq!(c.pass_order, None);
    assert_eq!(c.effective_pass_order(), PassOrder::Interleaved);
    // Absent, it is not written into the frozen bytes: old digests do not move.
    let frozen = FrozenCampaign::freeze(c).unwrap();
    assert!(!String::from_utf8_lossy(&frozen.bytes).contains("pass_order"));
    let sequential = Campaign::from_toml(
        "campaign.toml",
        &format!("pass_order = \"sequential\"\n{MINIMAL}"),
    )
    .unwrap();
    assert_eq!(sequential.effective_pass_order(), PassOrder::Sequential);
    let err = Campaign::from_toml(
        "campaign.toml",
        &format!("pass_order = \"shuffled\"\n{MINIMAL}"),
    )
    .unwrap_err()
    .to_string();
    for needle in ["campaign.toml", "pass_order", "shuffled"] {
        assert!(err.contains(needle), "error `{err}` should name `{needle}`");
    }
}

#[test]
fn a_load_sample_check_reads_its_kind_in_any_order_and_names_what_is_missing() {
    let request = LoadSampleRequest {
        item_index: 7,
        prompt_sha256: Sha256Hex::digest(b"prompt"),
        output_token_ids: vec![1, 2],
        reference_top1_micro_nats: vec![-1, -2],
        reference_token_micro_nats: vec![-3, -4],
        gap_micro_nats: 2,
        streamed_text: None,
        reference_text: None,
    };
    for check in [
        LoadSampleCheck::Checked {
            requests: vec![request.clone()],
        },
        LoadSampleCheck::NotApplicable {
            reason: "no token ids".to_owned(),
        },
    ] {
        let json = serde_json::to_string(&check).unwrap();
        assert_eq!(
            serde_json::from_str::<LoadSampleCheck>(&json).unwrap(),
            check
        );
    }
    let request_json = serde_json::to_string(&request).unwrap();
    // `kind` last, and a field of the other variant, are read as the derive read them.
    let late = format!(r#"{{"requests":[{request_json}],"reason":"x","kind":"checked"}}"#);
    assert_eq!(
        serde_json::from_str::<LoadSampleCheck>(&late).unwrap(),
        LoadSampleCheck::Checked {
            requests: vec![request]
        }
    );
    for (json, error) in [
        (r#"{"kind":"checked"}"#, "missing field `requests`"),
        (r#"{"kind":"not_applicable"}"#, "missing field `reason`"),
        (r#"{"requests":[]}"#, "missing field `kind`"),
        (
            r#"{"kind":"skipped","reason":"x"}"#,
            "unknown variant `skipped`",
        ),
    ] {
        let e = serde_json::from_str::<LoadSampleCheck>(json).unwrap_err();
        assert!(e.to_string().contains(error), "{json}: {e}");
    }
}

#[test]
fn title_rules_default_to_000_parse_001_and_stay_out_of_the_digest() {
    use receipts::rules::title::TitleRules;
    let c = Campaign::from_toml("campaign.toml", MINIMAL).unwrap();
    assert_eq!(
        TitleRules::of_campaign(&c),
        TitleRules {
            seat_rule: SeatRuleKind::Immediate,
            holding_period_s: 86_400,
            remeasure_every_s: 604_800,
            successor_rounds: 4,
            margin_bp: 100,
        }
    );
    let frozen = FrozenCampaign::freeze(c).unwrap();
    let json = String::from_utf8_lossy(&frozen.bytes);
    assert!(!json.contains("seat_rule") && !json.contains("holding_period_h"));
    let text = format!(
        "seat_rule = \"001\"\nholding_period_h = 12\nremeasure_every_days = 1\nsuccessor_rounds = 2\n{MINIMAL}"
    );
    let c = Campaign::from_toml("campaign.toml", &text).unwrap();
    assert_eq!(
        TitleRules::of_campaign(&c),
        TitleRules {
            seat_rule: SeatRuleKind::Confirmed,
            holding_period_s: 43_200,
            remeasure_every_s: 86_400,
            successor_rounds: 2,
            margin_bp: 100,
        }
    );
    let err = Campaign::from_toml("campaign.toml", &format!("seat_rule = \"002\"\n{MINIMAL}"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("002") && err.contains("seat_rule"), "{err}");
}

#[test]
fn campaigns_are_the_directories_holding_a_frozen_campaign() {
    let tmp = tempfile::tempdir().unwrap();
    for dir in ["b", "a", "Not-An-Id", ".hidden", "empty"] {
        std::fs::create_dir_all(tmp.path().join(dir)).unwrap();
    }
    for dir in ["b", "a", "Not-An-Id", ".hidden"] {
        std::fs::write(tmp.path().join(dir).join("campaign.json"), "{}").unwrap();
    }
    std::fs::write(tmp.path().join("keyring.json"), "[]").unwrap();
    let data = receipts::layout::DataDir::new(tmp.path());
    let ids: Vec<String> = data
        .campaign_ids()
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(ids, ["a", "b"]);
    let missing = receipts::layout::DataDir::new(tmp.path().join("nothing-here"));
    assert_eq!(missing.campaign_ids().unwrap(), vec![]);
}
