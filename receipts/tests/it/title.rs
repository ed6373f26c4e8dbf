//! The title state machine over synthetic chains (content/title.md): each rule of the
//! holding period, confirmation, re-measurement, vacancy and revocation, with the exact
//! title and events it leaves.

use receipts::model::{Leader, MinerId, Sha256Hex};
use receipts::rules::title::{
    ChainItem, Clock, Due, MoveReason, Pending, Revocation, RoundFacts, RoundKind, SeatRuleKind,
    Title, TitleError, TitleEvent, TitleRules,
};

const H: i64 = 3_600;
/// 2026-12-07T00:00:00Z.
const T0: i64 = 1_796_601_600;

fn leader(miner: &str) -> Leader {
    let byte = miner.bytes().fold(0u8, |a, b| a.wrapping_add(b));
    Leader {
        patch: Sha256Hex::from_bytes([byte; 32]),
        miner: miner.parse::<MinerId>().expect("miner id"),
    }
}

fn rules() -> TitleRules {
    TitleRules::with_defaults(SeatRuleKind::Confirmed)
}

fn round(round: u64, at_h: i64, kind: RoundKind) -> ChainItem {
    ChainItem::Round(RoundFacts {
        round,
        ended_at_s: T0 + at_h * H,
        clock: Clock::Real,
        holder_claim: None,
        counted: true,
        kind,
    })
}

/// A regular round won by `winner` (if any), with `scored` challengers and their scores.
fn regular(n: u64, at_h: i64, winner: Option<&str>, scored: &[(&str, i64)]) -> ChainItem {
    round(
        n,
        at_h,
        RoundKind::Regular {
            winner: winner.map(leader),
            holder_failed: None,
            scored: scored.iter().map(|(m, s)| (leader(m), *s)).collect(),
        },
    )
}

fn confirmation(n: u64, at_h: i64, challenger: &str, reproduced: bool) -> ChainItem {
    round(
        n,
        at_h,
        RoundKind::Confirmation {
            challenger: leader(challenger),
            reproduced,
        },
    )
}

fn remeasure(n: u64, at_h: i64, failed: Option<&str>, rechecked: &[(&str, bool)]) -> ChainItem {
    round(
        n,
        at_h,
        RoundKind::Remeasure {
            holder_failed: failed.map(str::to_owned),
            rechecked: rechecked.iter().map(|(m, ok)| (leader(m), *ok)).collect(),
        },
    )
}

fn revoke(n: u64, entry: &str, at_h: i64) -> ChainItem {
    ChainItem::Revocation(Revocation {
        round: n,
        entry: leader(entry),
        reason: "replayed cached outputs".to_owned(),
        at_s: T0 + at_h * H,
    })
}

fn derive(chain: &[ChainItem]) -> (Title, Vec<TitleEvent>) {
    Title::derive(&rules(), Clock::Real, chain).expect("the chain derives")
}

fn moved(
    n: u64,
    at_h: i64,
    from: Option<&str>,
    to: Option<&str>,
    reason: MoveReason,
) -> TitleEvent {
    TitleEvent::Moved {
        round: n,
        at_s: T0 + at_h * H,
        from: from.map(leader),
        to: to.map(leader),
        reason,
    }
}

/// The chain every test starts from: `alice` won round 1 and was confirmed in round 2,
/// 24 hours later.
fn alice_holds() -> Vec<ChainItem> {
    vec![
        regular(1, 0, Some("alice"), &[("alice", 80_000)]),
        confirmation(2, 24, "alice", true),
    ]
}

#[test]
fn a_win_is_pending_until_confirmed_a_holding_period_later() {
    let (title, events) = derive(&alice_holds());
    assert_eq!(title.holder, Some(leader("alice")));
    assert_eq!(title.held_since_s, Some(T0 + 24 * H));
    assert!(title.pending.is_empty());
    assert_eq!(
        events,
        vec![
            TitleEvent::Pending {
                round: 1,
                challenger: leader("alice"),
                earliest_confirmation_s: T0 + 24 * H,
            },
            moved(
                2,
                24,
                None,
                Some("alice"),
                MoveReason::Confirmed { won_round: 1 }
            ),
        ]
    );
}

#[test]
fn while_pending_the_holder_keeps_the_title() {
    let mut chain = alice_holds();
    chain.push(regular(3, 30, Some("bob"), &[("bob", 60_000)]));
    let (title, _) = derive(&chain);
    assert_eq!(title.holder, Some(leader("alice")));
    // Alice ran in round 3 as the incumbent: re-measured then.
    assert_eq!(title.last_remeasured_s, Some(T0 + 30 * H));
    assert_eq!(
        title.pending,
        vec![Pending {
            challenger: leader("bob"),
            won_round: 3,
            won_at_s: T0 + 30 * H,
            earliest_confirmation_s: T0 + 54 * H,
        }]
    );
}

#[test]
fn a_win_not_confirmed_leaves_the_title_and_requeues_the_challenger_once() {
    let mut chain = alice_holds();
    chain.extend([
        regular(3, 30, Some("bob"), &[("bob", 60_000)]),
        confirmation(4, 54, "bob", false),
        regular(5, 60, Some("bob"), &[("bob", 61_000)]),
        confirmation(6, 84, "bob", false),
    ]);
    let (title, events) = derive(&chain);
    assert_eq!(title.holder, Some(leader("alice")));
    assert!(title.pending.is_empty());
    let not_confirmed: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, TitleEvent::NotConfirmed { .. }))
        .cloned()
        .collect();
    assert_eq!(
        not_confirmed,
        vec![
            TitleEvent::NotConfirmed {
                round: 4,
                challenger: leader("bob"),
                won_round: 3,
                requeue: true,
            },
            TitleEvent::NotConfirmed {
                round: 6,
                challenger: leader("bob"),
                won_round: 5,
                requeue: false,
            },
        ]
    );
}

#[test]
fn the_holding_period_ends_at_exactly_24_hours() {
    let chain = vec![
        regular(1, 0, Some("alice"), &[]),
        ChainItem::Round(RoundFacts {
            round: 2,
            ended_at_s: T0 + 24 * H - 1,
            clock: Clock::Real,
            holder_claim: None,
            counted: true,
            kind: RoundKind::Confirmation {
                challenger: leader("alice"),
                reproduced: true,
            },
        }),
    ];
    assert_eq!(
        Title::derive(&rules(), Clock::Real, &chain),
        Err(TitleError::TooEarly {
            round: 2,
            at_s: T0 + 24 * H - 1,
            earliest_s: T0 + 24 * H,
        })
    );
    let (title, _) = derive(&[
        regular(1, 0, Some("alice"), &[]),
        confirmation(2, 24, "alice", true),
    ]);
    assert_eq!(title.holder, Some(leader("alice")));
    // `referee due`: nothing one second before, the confirmation at exactly 24 h.
    let (pending, _) = derive(&[regular(1, 0, Some("alice"), &[])]);
    assert_eq!(pending.due(&rules(), T0 + 24 * H - 1), vec![]);
    assert_eq!(
        pending.due(&rules(), T0 + 24 * H),
        vec![Due::Confirmation {
            challenger: leader("alice"),
            won_round: 1,
        }]
    );
}

#[test]
fn two_pending_challengers_are_confirmed_in_the_order_they_won() {
    let mut chain = alice_holds();
    chain.extend([
        regular(3, 30, Some("bob"), &[("bob", 60_000)]),
        regular(4, 40, Some("carol"), &[("carol", 70_000)]),
    ]);
    // Carol first is refused: Bob won earlier.
    let mut out_of_order = chain.clone();
    out_of_order.push(confirmation(5, 70, "carol", true));
    assert_eq!(
        Title::derive(&rules(), Clock::Real, &out_of_order),
        Err(TitleError::NotEarliestPending {
            round: 5,
            got: format!("carol ({})", leader("carol").patch),
            expected: format!("bob ({})", leader("bob").patch),
        })
    );
    chain.extend([
        confirmation(5, 54, "bob", true),
        confirmation(6, 64, "carol", true),
    ]);
    let (title, events) = derive(&chain);
    assert_eq!(title.holder, Some(leader("carol")));
    let moves: Vec<_> = events
        .into_iter()
        .filter(|e| matches!(e, TitleEvent::Moved { .. }))
        .collect();
    assert_eq!(
        moves,
        vec![
            moved(
                2,
                24,
                None,
                Some("alice"),
                MoveReason::Confirmed { won_round: 1 }
            ),
            moved(
                5,
                54,
                Some("alice"),
                Some("bob"),
                MoveReason::Confirmed { won_round: 3 }
            ),
            moved(
                6,
                64,
                Some("bob"),
                Some("carol"),
                MoveReason::Confirmed { won_round: 4 }
            ),
        ]
    );
}

#[test]
fn a_holder_that_fails_its_remeasurement_loses_the_title_to_the_best_valid_challenger() {
    let mut chain = alice_holds();
    chain.extend([
        regular(3, 30, None, &[("bob", 40_000), ("carol", 30_000)]),
        regular(4, 40, None, &[("dave", 45_000)]),
        // Dave (best) is gone when re-checked; Bob is next and still passes.
        remeasure(
            5,
            24 * 7 + 24,
            Some("repository disappeared"),
            &[("dave", false), ("bob", true)],
        ),
    ]);
    let (title, events) = derive(&chain);
    assert_eq!(title.holder, Some(leader("bob")));
    assert_eq!(
        events.last(),
        Some(&moved(
            5,
            24 * 8,
            Some("alice"),
            Some("bob"),
            MoveReason::HolderFailed {
                reason: "repository disappeared".to_owned()
            }
        ))
    );
}

#[test]
fn a_successor_above_the_chosen_one_must_have_been_rechecked() {
    let mut chain = alice_holds();
    chain.extend([
        regular(3, 30, None, &[("bob", 40_000), ("dave", 45_000)]),
        remeasure(4, 200, Some("crashed"), &[("bob", true)]),
    ]);
    assert_eq!(
        Title::derive(&rules(), Clock::Real, &chain),
        Err(TitleError::SuccessorNotRechecked {
            round: 4,
            candidate: format!("dave ({})", leader("dave").patch),
        })
    );
}

#[test]
fn successors_come_from_the_last_successor_rounds_only_and_none_valid_is_vacancy() {
    let mut chain = alice_holds();
    chain.extend([
        // Five regular rounds: Erin's is beyond the window of four.
        regular(3, 30, None, &[("erin", 90_000)]),
        regular(4, 31, None, &[("bob", 40_000)]),
        regular(5, 32, None, &[]),
        regular(6, 33, None, &[]),
        regular(7, 34, None, &[]),
        remeasure(8, 200, Some("correctness failed"), &[("bob", false)]),
    ]);
    let (title, events) = derive(&chain);
    assert_eq!(title.holder, None);
    assert_eq!(title.held_since_s, None);
    assert_eq!(
        events.last(),
        Some(&moved(
            8,
            200,
            Some("alice"),
            None,
            MoveReason::HolderFailed {
                reason: "correctness failed".to_owned()
            }
        ))
    );
}

#[test]
fn a_holder_that_passes_its_remeasurement_keeps_the_title_and_is_due_again_a_week_later() {
    let mut chain = alice_holds();
    chain.push(remeasure(3, 24 + 168, None, &[]));
    let (title, events) = derive(&chain);
    assert_eq!(title.holder, Some(leader("alice")));
    assert_eq!(
        events.last(),
        Some(&TitleEvent::Remeasured {
            round: 3,
            holder: leader("alice"),
        })
    );
    let next = T0 + (24 + 168 + 168) * H;
    assert_eq!(title.due(&rules(), next - 1), vec![]);
    assert_eq!(
        title.due(&rules(), next),
        vec![Due::Remeasure {
            holder: leader("alice"),
            last_s: T0 + (24 + 168) * H,
        }]
    );
}

#[test]
fn remeasuring_a_vacant_title_is_refused() {
    let chain = vec![remeasure(1, 0, None, &[])];
    assert_eq!(
        Title::derive(&rules(), Clock::Real, &chain),
        Err(TitleError::RemeasureWithoutHolder { round: 1 })
    );
}

#[test]
fn a_revoked_pending_challenger_is_dropped_and_never_pending_again() {
    let mut chain = alice_holds();
    chain.extend([
        regular(3, 30, Some("bob"), &[("bob", 60_000)]),
        revoke(3, "bob", 31),
        regular(4, 40, Some("bob"), &[("bob", 60_000)]),
    ]);
    let (title, events) = derive(&chain);
    assert_eq!(title.holder, Some(leader("alice")));
    assert!(title.pending.is_empty());
    assert!(events.contains(&TitleEvent::RevokedEntry {
        round: 3,
        entry: leader("bob"),
    }));
}

#[test]
fn a_revoked_holder_returns_the_title_to_the_holder_before_it_or_vacancy() {
    let mut chain = alice_holds();
    chain.extend([
        regular(3, 30, Some("bob"), &[("bob", 60_000)]),
        confirmation(4, 54, "bob", true),
        revoke(3, "bob", 60),
    ]);
    let (title, events) = derive(&chain);
    assert_eq!(title.holder, Some(leader("alice")));
    assert_eq!(
        events.last(),
        Some(&moved(
            3,
            60,
            Some("bob"),
            Some("alice"),
            MoveReason::Revoked {
                reason: "replayed cached outputs".to_owned()
            }
        ))
    );
    // Alice revoked too: nobody before her, the title is vacant.
    chain.push(revoke(1, "alice", 61));
    let (title, _) = derive(&chain);
    assert_eq!(title.holder, None);
}

#[test]
fn a_revoked_successor_never_returns_the_title_to_a_holder_that_failed_its_gate() {
    let mut chain = alice_holds();
    chain.extend([
        regular(3, 30, None, &[("bob", 40_000)]),
        remeasure(4, 24 * 8, Some("crashed"), &[("bob", true)]),
        revoke(4, "bob", 24 * 9),
    ]);
    let (title, events) = derive(&chain);
    // Alice held the title before Bob, but lost it failing her re-measurement: vacant.
    assert_eq!(title.holder, None);
    assert_eq!(
        events.last(),
        Some(&moved(
            4,
            24 * 9,
            Some("bob"),
            None,
            MoveReason::Revoked {
                reason: "replayed cached outputs".to_owned()
            }
        ))
    );
}

#[test]
fn rounds_of_the_other_clock_and_rounds_that_do_not_count_move_nothing() {
    let mut chain = vec![ChainItem::Round(RoundFacts {
        round: 1,
        ended_at_s: T0,
        clock: Clock::Virtual,
        holder_claim: None,
        counted: true,
        kind: RoundKind::Regular {
            winner: Some(leader("alice")),
            holder_failed: None,
            scored: vec![],
        },
    })];
    chain.push(ChainItem::Round(RoundFacts {
        round: 2,
        ended_at_s: T0 + H,
        clock: Clock::Real,
        holder_claim: None,
        counted: false,
        kind: RoundKind::Regular {
            winner: Some(leader("bob")),
            holder_failed: None,
            scored: vec![],
        },
    }));
    let (title, events) = derive(&chain);
    assert_eq!(title, Title::default());
    assert_eq!(
        events,
        vec![
            TitleEvent::Ignored { round: 1 },
            TitleEvent::Ignored { round: 2 }
        ]
    );
    // The same virtual round counts for a virtual title.
    let (title, _) = Title::derive(&rules(), Clock::Virtual, &chain[..1]).expect("derives");
    assert_eq!(title.pending.len(), 1);
}

#[test]
fn under_rule_000_a_win_moves_the_title_at_once_and_confirmations_are_refused() {
    let immediate = TitleRules::with_defaults(SeatRuleKind::Immediate);
    let chain = vec![regular(1, 0, Some("alice"), &[])];
    let (title, events) = Title::derive(&immediate, Clock::Real, &chain).expect("derives");
    assert_eq!(title.holder, Some(leader("alice")));
    assert_eq!(
        events,
        vec![moved(1, 0, None, Some("alice"), MoveReason::Won)]
    );
    let chain = vec![
        regular(1, 0, Some("alice"), &[]),
        confirmation(2, 24, "alice", true),
    ];
    assert_eq!(
        Title::derive(&immediate, Clock::Real, &chain),
        Err(TitleError::ConfirmationUnderImmediate { round: 2 })
    );
}

#[test]
fn rounds_out_of_order_are_refused() {
    let chain = vec![regular(2, 0, None, &[]), regular(2, 1, None, &[])];
    assert_eq!(
        Title::derive(&rules(), Clock::Real, &chain),
        Err(TitleError::OutOfOrder {
            round: 2,
            previous: 2,
        })
    );
}

#[test]
fn a_holder_disqualified_in_a_regular_round_loses_the_title_under_either_rule() {
    let disqualified = |winner: Option<&str>| {
        round(
            3,
            30,
            RoundKind::Regular {
                winner: winner.map(leader),
                holder_failed: Some("the incumbent was disqualified".to_owned()),
                scored: vec![],
            },
        )
    };
    for rules in [rules(), TitleRules::with_defaults(SeatRuleKind::Immediate)] {
        let mut chain = vec![regular(1, 0, Some("alice"), &[])];
        if rules.seat_rule == SeatRuleKind::Confirmed {
            chain.push(confirmation(2, 24, "alice", true));
        }
        for (winner, after) in [(Some("bob"), Some(leader("bob"))), (None, None)] {
            let mut chain = chain.clone();
            chain.push(disqualified(winner));
            let (title, events) = Title::derive(&rules, Clock::Real, &chain).expect("derives");
            assert_eq!(title.holder, after);
            assert_eq!(
                events.last(),
                Some(&moved(
                    3,
                    30,
                    Some("alice"),
                    winner,
                    MoveReason::HolderFailed {
                        reason: "the incumbent was disqualified".to_owned()
                    }
                ))
            );
        }
    }
}

/// README's by-hand round as the last v5 build sealed it (the verifier's
/// `fixtures/v5-round`): a regular round whose challenger did not meet the margin.
#[test]
fn a_sealed_round_reads_as_a_regular_round() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../verifier/tests/fixtures/v5-round/receipt.dsse.json");
    let envelope: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).expect("fixture")).expect("json");
    let payload = receipts::dsse::decode_base64(envelope["payload"].as_str().expect("payload"))
        .expect("base64");
    let statement: serde_json::Value = serde_json::from_slice(&payload).expect("statement");
    let record: receipts::model::RoundRecord =
        serde_json::from_value(statement["predicate"].clone()).expect("round record");
    let facts = RoundFacts::from_record(&record, &rules());
    assert_eq!(
        facts,
        RoundFacts {
            round: 1,
            ended_at_s: record.ended_at.datetime().unix_timestamp(),
            clock: Clock::Real,
            holder_claim: None,
            counted: true,
            kind: RoundKind::Regular {
                winner: None,
                holder_failed: None,
                scored: vec![(leader_of("miner-fast", &record), -183)],
            },
        }
    );
}

fn leader_of(miner: &str, record: &receipts::model::RoundRecord) -> Leader {
    let entry = record
        .entries
        .iter()
        .find(|e| e.miner.as_ref().map(|m| m.as_str()) == Some(miner))
        .expect("the miner's entry");
    Leader {
        patch: entry.patch.expect("patch"),
        miner: miner.parse().expect("miner id"),
    }
}

fn fixture_record() -> receipts::model::RoundRecord {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../verifier/tests/fixtures/v5-round/receipt.dsse.json");
    let envelope: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).expect("fixture")).expect("json");
    let payload = receipts::dsse::decode_base64(envelope["payload"].as_str().expect("payload"))
        .expect("base64");
    let statement: serde_json::Value = serde_json::from_slice(&payload).expect("statement");
    serde_json::from_value(statement["predicate"].clone()).expect("round record")
}

/// A confirmation round's receipt: the margin reproduced exactly when the challenger's
/// throughput overtakes the holder's (here the baseline's: the title is vacant) by the
/// campaign's margin, equality included.
#[test]
fn a_confirmation_receipt_reproduces_the_margin_from_its_throughputs() {
    let mut record = fixture_record();
    let fast = leader_of("miner-fast", &record);
    record.kind = Some(receipts::model::RoundKindRecord::Confirmation {
        challenger: fast.clone(),
        holder: None,
    });
    record.clock = Some(Clock::Virtual);
    let baseline = record
        .entries
        .iter()
        .position(|e| e.role == receipts::model::Role::Baseline)
        .expect("baseline");
    let challenger = record
        .entries
        .iter()
        .position(|e| e.miner.as_ref().map(|m| m.as_str()) == Some("miner-fast"))
        .expect("challenger");
    record.entries[baseline].throughput_milli_rps = Some(10_000);
    let facts_at =
        |record: &receipts::model::RoundRecord| RoundFacts::from_record(record, &rules());
    for (throughput, reproduced) in [(10_100, true), (10_099, false)] {
        record.entries[challenger].throughput_milli_rps = Some(throughput);
        let facts = facts_at(&record);
        assert_eq!(facts.clock, Clock::Virtual);
        assert_eq!(facts.holder_claim, Some(None));
        assert_eq!(
            facts.kind,
            RoundKind::Confirmation {
                challenger: fast.clone(),
                reproduced
            },
            "{throughput}"
        );
    }
    record.entries[challenger].status = receipts::model::EntryStatus::Disqualified;
    assert_eq!(
        facts_at(&record).kind,
        RoundKind::Confirmation {
            challenger: fast,
            reproduced: false
        }
    );
}

/// A re-measurement's receipt: the holder failed when its entry is not scored; the other
/// seated submissions are the re-checked candidates.
#[test]
fn a_remeasure_receipt_says_whether_the_holder_failed() {
    let mut record = fixture_record();
    let fast = leader_of("miner-fast", &record);
    record.kind = Some(receipts::model::RoundKindRecord::Remeasure {
        holder: fast.clone(),
    });
    let facts = RoundFacts::from_record(&record, &rules());
    assert_eq!(facts.holder_claim, Some(Some(fast.clone())));
    let RoundKind::Remeasure {
        holder_failed,
        rechecked,
    } = facts.kind
    else {
        panic!("a re-measurement");
    };
    assert_eq!(holder_failed, None);
    assert_eq!(
        rechecked.iter().filter(|(l, _)| *l == fast).count(),
        0,
        "the holder is not its own candidate"
    );
    let holder = record
        .entries
        .iter()
        .position(|e| e.miner.as_ref().map(|m| m.as_str()) == Some("miner-fast"))
        .expect("entry");
    record.entries[holder].status = receipts::model::EntryStatus::InfraFailed;
    let RoundKind::Remeasure { holder_failed, .. } =
        RoundFacts::from_record(&record, &rules()).kind
    else {
        panic!("a re-measurement");
    };
    assert_eq!(
        holder_failed.as_deref(),
        Some("its entry ended infrafailed")
    );
}

/// A confirmation or re-measurement round that measured another holder than the chain
/// gives is a title moved without cause.
#[test]
fn a_round_measuring_another_holder_than_the_chain_gives_is_refused() {
    let chain = vec![
        regular(1, 0, Some("alice"), &[]),
        confirmation(2, 24, "alice", true),
        ChainItem::Round(RoundFacts {
            round: 3,
            ended_at_s: T0 + 30 * H,
            clock: Clock::Real,
            holder_claim: Some(Some(leader("bob"))),
            counted: true,
            kind: RoundKind::Remeasure {
                holder_failed: Some("crashed".to_owned()),
                rechecked: vec![],
            },
        }),
    ];
    assert_eq!(
        Title::derive(&rules(), Clock::Real, &chain),
        Err(TitleError::HolderMismatch {
            round: 3,
            claimed: format!("bob ({})", leader("bob").patch),
            derived: format!("alice ({})", leader("alice").patch),
        })
    );
}

/// Revocations go right after the round they were logged after, whatever order they are
/// given in; rounds by number.
#[test]
fn the_chain_places_each_revocation_after_its_round() {
    let facts = |item: ChainItem| match item {
        ChainItem::Round(f) => f,
        ChainItem::Revocation(_) => unreachable!("a round"),
    };
    let revocation = |item: ChainItem| match item {
        ChainItem::Revocation(r) => r,
        ChainItem::Round(_) => unreachable!("a revocation"),
    };
    let r1 = facts(regular(1, 0, Some("alice"), &[]));
    let r2 = facts(regular(2, 1, None, &[]));
    let late = revocation(revoke(1, "alice", 5));
    let early = revocation(revoke(1, "bob", 0));
    let chain = receipts::rules::title::chain_of(
        vec![r2.clone(), r1.clone()],
        vec![(2, late.clone()), (1, early.clone())],
    );
    assert_eq!(
        chain,
        vec![
            ChainItem::Round(r1),
            ChainItem::Revocation(early),
            ChainItem::Round(r2),
            ChainItem::Revocation(late),
        ]
    );
}

/// A re-measurement seats the successor candidates best first: by score, the later round
/// on a tie, each once, never the holder or a revoked entry, within the window.
#[test]
fn successor_candidates_are_ranked_best_first() {
    let mut rules = rules();
    rules.successor_rounds = 2;
    let (title, _) = Title::derive(
        &TitleRules {
            seat_rule: SeatRuleKind::Immediate,
            ..rules
        },
        Clock::Real,
        &[
            regular(1, 0, Some("alice"), &[("alice", 90), ("old", 999)]),
            regular(2, 1, None, &[("bob", 50), ("carol", 70)]),
            revoke(2, "carol", 1),
            regular(3, 2, None, &[("dave", 50), ("alice", 10)]),
        ],
    )
    .expect("derives");
    assert_eq!(
        title.successor_candidates(&rules),
        vec![leader("dave"), leader("bob")]
    );
}
