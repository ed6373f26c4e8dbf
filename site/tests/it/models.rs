//! Snapshots (insta) of the scoreboard's own page models — the front page, the campaign,
//! miner, submission and rejected pages — over the `two-rounds` case, verified as of a
//! pinned instant, and the exact CSV of the tables they publish. The leader-history
//! chart is drawn by `site::svg` and tested there; here it is redacted to its presence.

use std::path::Path;

use receipts::layout::DataDir;
use receipts::model::Timestamp;
use site::archive::Archive;
use site::pages::submission::PatchIndex;
use site::pages::{self, ExtraFile};

fn archive() -> Archive {
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases/two-rounds/in");
    let (keyring, json) = site::load::load_keyring(&input.join("keyring.json")).unwrap();
    let at: Timestamp = "2026-12-02T00:00:00Z".parse().unwrap();
    site::load_archive(&DataDir::new(input.join("data")), &keyring, json, Some(at)).unwrap()
}

fn text(file: &ExtraFile) -> (&str, String) {
    (
        file.path.as_str(),
        String::from_utf8(file.bytes.clone()).unwrap(),
    )
}

#[test]
fn the_archive_of_two_verified_rounds_and_one_rejected() {
    let archive = archive();
    let campaign = &archive.campaigns[0];
    assert_eq!(campaign.id.as_str(), "tiny");
    assert_eq!(
        campaign.rounds.iter().map(|r| r.number).collect::<Vec<_>>(),
        [1, 2]
    );
    assert_eq!(
        archive
            .rejected
            .iter()
            .map(|r| (r.campaign.as_str(), r.number))
            .collect::<Vec<_>>(),
        [("tiny", 3)]
    );
    assert_eq!(
        campaign.rounds[0].verified_at.to_string(),
        "2026-12-02T00:00:00Z"
    );
}

#[test]
fn index_model() {
    let archive = archive();
    let page = pages::index::page(&archive).unwrap();
    assert_eq!(page.dir.page().as_str(), "index.html");
    insta::assert_json_snapshot!("index", page.model);
    assert_eq!(
        text(&page.files[0]),
        (
            "campaigns.csv",
            "campaign,title,rounds,leader,score_ppm,last_round,last_round_status,queued_unsigned\r\n\
             tiny,tiny,2,the baseline,0,2,complete,1\r\n"
                .to_owned()
        )
    );
}

#[test]
fn campaign_model() {
    let archive = archive();
    let page = pages::campaign::page(&archive, &archive.campaigns[0]).unwrap();
    assert!(page.model.history_svg.starts_with("<svg "));
    insta::assert_json_snapshot!("campaign", page.model, { ".history_svg" => "[svg]" });
    let files: Vec<_> = page.files.iter().map(text).collect();
    assert_eq!(files[0].0, "c/tiny/rounds.csv");
    assert_eq!(
        files[0].1,
        "round,status,scored,disqualified,infra_failed,top_score_ppm,leader_after,\
         leader_score_ppm,leader_changed,settled_in_ms,ended_at\r\n\
         2,complete,2,0,0,0,the baseline,0,false,3205,2026-12-01T22:12:46.807363Z\r\n\
         1,complete,2,0,0,0,the baseline,0,false,3205,2026-12-01T22:12:46.807363Z\r\n"
    );
    assert_eq!(files[2].0, "c/tiny/leader-history.csv");
    assert_eq!(
        files[2].1,
        "round,leader,score_ppm,seat_changed\r\n1,the baseline,0,false\r\n2,the baseline,0,false\r\n"
    );
}

#[test]
fn miner_and_submission_models() {
    let archive = archive();
    let index = PatchIndex::new(&archive);
    assert_eq!(
        index.miners().map(|m| m.as_str()).collect::<Vec<_>>(),
        ["fast", "later"]
    );
    let later = index.miners().nth(1).unwrap();
    let page = pages::miner::page(&archive, &index, later).unwrap();
    insta::assert_json_snapshot!("miner_later", page.model);
    let rejected = index
        .patches()
        .into_iter()
        .find(|p| {
            index
                .records(p)
                .iter()
                .any(|s| s.state.as_str() == "rejected")
        })
        .unwrap();
    let page = pages::submission::page(&index, rejected).unwrap();
    let record = &page.model.records[0];
    let rejection = record.rejection.as_ref().unwrap();
    assert_eq!(rejection.gate.as_deref(), Some("surface_ok"));
    // The bidi override is shown, not applied.
    assert!(
        !rejection.reason.contains('\u{202e}'),
        "{}",
        rejection.reason
    );
    insta::assert_json_snapshot!("submission_rejected", page.model);
    let fast = index
        .patches()
        .into_iter()
        .find(|p| p.as_str().starts_with("f98bb88"))
        .unwrap();
    let page = pages::submission::page(&index, fast).unwrap();
    assert_eq!(
        page.model
            .rounds
            .iter()
            .map(|a| (a.round, a.status.as_str()))
            .collect::<Vec<_>>(),
        [(1, "scored"), (2, "scored")]
    );
}

#[test]
fn rejected_model() {
    let archive = archive();
    let page = pages::rejected::page(&archive).unwrap();
    insta::assert_json_snapshot!("rejected", page.model);
}

/// Rounds numbered 1 to 205 but 150: the campaign page shows the newest 100 (105–205) and links
/// three pages of 100 round numbers each; page 2 holds 101–200 without 150, newest
/// first, between pages 1 and 3; the last has no next page; each page's CSV and the API
/// page beside it hold its rows, and the campaign's CSV the rows it shows.
#[test]
fn rounds_pages_hold_a_hundred_round_numbers_each() {
    let mut archive = archive();
    let campaign = &mut archive.campaigns[0];
    let template = campaign.rounds[0].clone();
    campaign.rounds = (1..=205)
        .filter(|n| *n != 150)
        .map(|number| site::archive::RoundListing {
            number,
            ..template.clone()
        })
        .collect();
    let campaign = &archive.campaigns[0];
    let numbers =
        |rows: &[pages::campaign::RoundRow]| -> Vec<u64> { rows.iter().map(|r| r.round).collect() };

    assert_eq!(site::segment::rounds_page_count(campaign), 3);
    let page = pages::campaign::page(&archive, campaign).unwrap();
    let newest: Vec<u64> = (105..=205).rev().filter(|n| *n != 150).collect();
    assert_eq!(numbers(&page.model.rounds), newest);
    assert_eq!(page.model.rounds_total, 204);
    let links: Vec<(u64, u64, &str)> = (page.model.round_pages.iter())
        .map(|p| (p.first, p.last, p.href.as_str()))
        .collect();
    assert_eq!(
        links,
        [
            (1, 100, "c/tiny/rounds/1/"),
            (101, 200, "c/tiny/rounds/2/"),
            (201, 300, "c/tiny/rounds/3/"),
        ]
    );
    let csv = String::from_utf8(page.files[0].bytes.clone()).unwrap();
    assert_eq!(csv.lines().count(), 1 + 100);
    assert!(csv.lines().nth(1).unwrap().starts_with("205,"), "{csv}");

    let second = pages::campaign::rounds_page(campaign, 2).unwrap();
    assert_eq!(second.dir.as_str(), "c/tiny/rounds/2/");
    assert_eq!(second.model.title, "Rounds 101–200 · tiny");
    let expected: Vec<u64> = (101..=200).rev().filter(|n| *n != 150).collect();
    assert_eq!(numbers(&second.model.rounds), expected);
    assert_eq!(second.model.previous.as_ref().map(|p| p.first), Some(1));
    assert_eq!(second.model.next.as_ref().map(|p| p.first), Some(201));
    let files: Vec<_> = second.files.iter().map(text).collect();
    assert_eq!(files[0].0, "c/tiny/rounds/2/rounds.csv");
    assert_eq!(files[1].0, "c/tiny/rounds/2/rounds.json");
    let rows: Vec<u64> = (files[0].1.lines().skip(1))
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(rows, expected);
    assert_eq!(second.model.api.as_str(), "api/c/tiny/rounds/2.json");
    let (path, bytes) = site::machine::api_rounds_page(campaign, 2).unwrap();
    assert_eq!(path.as_str(), "api/c/tiny/rounds/2.json");
    let api: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        (
            api["version"].as_u64(),
            api["first"].as_u64(),
            api["last"].as_u64()
        ),
        (Some(2), Some(101), Some(200))
    );
    let api_rounds: Vec<u64> = (api["rounds"].as_array().unwrap().iter())
        .map(|r| r["round"].as_u64().unwrap())
        .collect();
    assert_eq!(
        api_rounds,
        (101..=200).filter(|n| *n != 150).collect::<Vec<_>>()
    );
    let last = pages::campaign::rounds_page(campaign, 3).unwrap();
    assert_eq!(numbers(&last.model.rounds), [205, 204, 203, 202, 201]);
    assert!(last.model.next.is_none());
    for k in [0, 4] {
        assert!(
            pages::campaign::rounds_page(campaign, k).is_err(),
            "page {k}"
        );
    }
}

#[test]
fn a_miner_with_more_than_a_hundred_submissions_has_pages_of_a_hundred() {
    let mut archive = archive();
    let campaign = &mut archive.campaigns[0];
    // Miner `later` has 2 submissions (23:01 and 23:02); 248 more, one a second from
    // 23:10, come after them.
    for i in 0..248u32 {
        let sha = receipts::model::Sha256Hex::digest(format!("patch {i}").as_bytes());
        campaign.submissions.push(site::archive::SubmissionSummary {
            sha256: sha,
            campaign: campaign.id.clone(),
            miner: "later".parse().unwrap(),
            state: receipts::model::PipelineState::Committed,
            committed_at: Some(
                format!("2026-12-01T23:{}:{:02}Z", 10 + i / 60, i % 60)
                    .parse()
                    .unwrap(),
            ),
            path: format!("{sha}.json").into(),
            file_sha256: sha,
        });
    }
    campaign.submissions.sort_by_key(|a| a.sha256);
    let index = PatchIndex::new(&archive);
    let later: receipts::model::MinerId = "later".parse().unwrap();

    let page = pages::miner::page(&archive, &index, &later).unwrap();
    let m = &page.model;
    assert_eq!(
        (m.total, m.first_shown, m.submissions.len()),
        (250, 151, 100)
    );
    assert_eq!(
        m.pages
            .iter()
            .map(|p| (p.first, p.last, p.href.as_str()))
            .collect::<Vec<_>>(),
        [
            (1, 100, "m/later/submissions/1/"),
            (101, 200, "m/later/submissions/2/"),
            (201, 250, "m/later/submissions/3/"),
        ]
    );
    // The last 100 in commitment order: from the 149th added (23:12:28) to the last.
    assert_eq!(
        m.submissions[0].committed_at.as_deref(),
        Some("2026-12-01T23:12:28Z")
    );
    assert_eq!(
        m.submissions[99].committed_at.as_deref(),
        Some("2026-12-01T23:14:07Z")
    );
    // The CSV holds the rows shown.
    assert_eq!(text(&page.files[0]).1.lines().count(), 101);

    let first = pages::miner::submissions_page(&archive, &index, &later, 1).unwrap();
    let f = &first.model;
    assert_eq!(f.title, "Submissions 1–100 of miner later");
    assert_eq!(
        (
            f.submissions.len(),
            f.previous.is_none(),
            f.next.as_ref().map(|n| n.first)
        ),
        (100, true, Some(101))
    );
    // The case's own two first, then the added ones from 23:10:00.
    assert_eq!(
        f.submissions
            .iter()
            .take(3)
            .map(|s| s.committed_at.as_deref().unwrap())
            .collect::<Vec<_>>(),
        [
            "2026-12-01T23:01:00Z",
            "2026-12-01T23:02:00Z",
            "2026-12-01T23:10:00Z"
        ]
    );
    let last = pages::miner::submissions_page(&archive, &index, &later, 3).unwrap();
    let l = &last.model;
    assert_eq!(last.dir.as_str(), "m/later/submissions/3/");
    assert_eq!(
        (
            l.submissions.len(),
            l.previous.as_ref().map(|p| p.last),
            l.next.is_none()
        ),
        (50, Some(200), true)
    );
    assert_eq!(l.submissions[49], m.submissions[99]);
    for k in [0, 4] {
        assert!(matches!(
            pages::miner::submissions_page(&archive, &index, &later, k),
            Err(site::SiteError::InvalidId { .. })
        ));
    }
}

/// The index against a plain reading of the archive: two campaigns sharing patches,
/// records whose miner is not the one a round names, and patches without a record.
#[test]
fn the_patch_index_is_what_a_plain_reading_of_the_archive_gives() {
    use receipts::model::{MinerId, Sha256Hex};
    let mut archive = archive();
    let mut second = archive.campaigns[0].clone();
    second.id = "tiny2".parse().unwrap();
    // The second campaign: its records are the first's committed by another miner, an hour
    // later; and 300 more patches of three miners, to fill many first bytes.
    for s in &mut second.submissions {
        s.campaign = second.id.clone();
        s.miner = "other".parse().unwrap();
        s.committed_at = s
            .committed_at
            .map(|t| Timestamp::from_unix_seconds(t.datetime().unix_timestamp() + 3600).unwrap());
    }
    for i in 0..300u32 {
        let sha = Sha256Hex::digest(format!("patch {i}").as_bytes());
        let summary = site::archive::SubmissionSummary {
            sha256: sha,
            campaign: second.id.clone(),
            miner: ["fast", "later", "other"][i as usize % 3].parse().unwrap(),
            state: receipts::model::PipelineState::Committed,
            // Every seventh without events: no commitment time.
            committed_at: (i % 7 != 0).then(|| {
                Timestamp::from_unix_seconds(1_796_000_000 + i64::from(i * 37 % 101)).unwrap()
            }),
            path: format!("{sha}.json").into(),
            file_sha256: sha,
        };
        if i % 2 == 0 {
            second.submissions.push(summary.clone());
        }
        if i % 5 == 0 {
            let mut first = summary;
            first.campaign = archive.campaigns[0].id.clone();
            archive.campaigns[0].submissions.push(first);
        }
    }
    for c in [&mut archive.campaigns[0], &mut second] {
        c.submissions.sort_by_key(|a| a.sha256);
    }
    archive.campaigns.push(second);
    let index = PatchIndex::new(&archive);

    // Every patch, sorted, with its records in campaign order and its seats in campaign
    // then round order.
    // Per patch: its records' campaigns and its seats' (campaign index, round).
    type Expected<'a> = (Vec<&'a str>, Vec<(usize, u64)>);
    let mut expected: std::collections::BTreeMap<&Sha256Hex, Expected<'_>> = Default::default();
    for (ci, c) in archive.campaigns.iter().enumerate() {
        for s in &c.submissions {
            expected
                .entry(&s.sha256)
                .or_default()
                .0
                .push(s.campaign.as_str());
        }
        for r in &c.rounds {
            for e in &r.entries {
                if let Some(p) = &e.patch {
                    expected.entry(p).or_default().1.push((ci, r.number));
                }
            }
        }
    }
    assert_eq!(
        index.patches().collect::<Vec<_>>(),
        expected.keys().copied().collect::<Vec<_>>()
    );
    for (position, (patch, (records, seats))) in expected.iter().enumerate() {
        assert_eq!(index.patch(position), Some(*patch));
        let got: Vec<&str> = index
            .records(patch)
            .iter()
            .map(|s| s.campaign.as_str())
            .collect();
        assert_eq!(&got, records, "{patch}");
        let got: Vec<(usize, u64)> = index
            .seats(patch)
            .iter()
            .map(|s| {
                let ci = archive
                    .campaigns
                    .iter()
                    .position(|c| &c.id == s.campaign)
                    .unwrap();
                (ci, s.round.number)
            })
            .collect();
        assert_eq!(&got, seats, "{patch}");
    }
    // Each miner's patches once per campaign, its own record's commitment time first.
    let miners: Vec<&MinerId> = index.miners().collect();
    assert_eq!(
        miners.iter().map(|m| m.as_str()).collect::<Vec<_>>(),
        ["fast", "later", "other"]
    );
    for miner in miners {
        let mut want: Vec<(usize, bool, Option<Timestamp>, &Sha256Hex)> = Vec::new();
        for (ci, c) in archive.campaigns.iter().enumerate() {
            let mut patches: Vec<&Sha256Hex> = (c.submissions.iter())
                .filter(|s| &s.miner == miner)
                .map(|s| &s.sha256)
                .collect();
            for r in &c.rounds {
                for e in &r.entries {
                    if e.miner.as_ref() == Some(miner) {
                        patches.extend(&e.patch);
                    }
                }
            }
            patches.sort();
            patches.dedup();
            for p in patches {
                let at = (c.submissions.iter())
                    .find(|s| &s.sha256 == p && &s.miner == miner)
                    .and_then(|s| s.committed_at);
                want.push((ci, at.is_none(), at, p));
            }
        }
        want.sort();
        let got: Vec<(usize, bool, Option<Timestamp>, &Sha256Hex)> = index
            .of_miner(miner)
            .iter()
            .map(|p| {
                let at = index.miner_record(p).and_then(|s| s.committed_at);
                assert!(index.miner_record(p).is_none_or(|s| &s.miner == miner));
                (
                    p.campaign,
                    at.is_none(),
                    at,
                    index.patch(p.position).unwrap(),
                )
            })
            .collect();
        assert_eq!(got, want, "{miner}");
    }
}

/// Issue 43: each round knows when the holder of its seat after it took the seat — the
/// latest round up to it whose seat changed to that holder, as `referee leader` reads it;
/// the baseline never unseated has none.
#[test]
fn each_round_knows_when_its_seat_was_taken() {
    use receipts::model::{Leader, Sha256Hex};
    use site::archive::{SeatTaken, set_seats};
    let mut archive = archive();
    let campaign = &mut archive.campaigns[0];
    let template = campaign.rounds[0].clone();
    let fast = Leader {
        patch: Sha256Hex::digest(b"fast"),
        miner: "fast".parse().unwrap(),
    };
    let slow = Leader {
        patch: Sha256Hex::digest(b"slow"),
        miner: "slow".parse().unwrap(),
    };
    // The seat after each of rounds 1–6, and whether it changed in it.
    let seats = [
        (None, false),
        (Some(&fast), true),
        (Some(&fast), false),
        (Some(&slow), true),
        (Some(&fast), true),
        (Some(&fast), false),
    ];
    campaign.rounds = (1..=6u64)
        .zip(seats)
        .map(|(number, (seat, changed))| {
            let mut round = template.clone();
            round.number = number;
            round.ended_at = Timestamp::from_unix_seconds(1_800_000_000 + number as i64).unwrap();
            round.headline.leader_after = seat.cloned();
            round.headline.leader_changed = changed;
            round.leader_after = seat.cloned();
            round.changed = changed;
            round
        })
        .collect();
    set_seats(&mut campaign.rounds);
    let taken = |round: u64| SeatTaken {
        round,
        at: Timestamp::from_unix_seconds(1_800_000_000 + round as i64).unwrap(),
    };
    assert_eq!(
        campaign.rounds.iter().map(|r| r.seated).collect::<Vec<_>>(),
        [
            None,
            Some(taken(2)),
            Some(taken(2)),
            Some(taken(4)),
            Some(taken(5)),
            Some(taken(5))
        ]
    );
    // The campaign page's box says so, with the round's page.
    let campaign = &archive.campaigns[0];
    let page = pages::campaign::page(&archive, campaign).unwrap();
    let html = site::render::render(page.template, &page.dir.page(), &page.model).unwrap();
    let expected = format!(
        "The seat is held by <a href=\"../../s/{}/\">{}…{} (fast)</a>, seated in \
         <a href=\"../../c/tiny/r/5/\">round 5</a> (<time datetime=\"2027-01-15T08:00:05.000Z\">",
        fast.patch,
        &fast.patch.as_str()[..7],
        &fast.patch.as_str()[59..]
    );
    assert!(html.contains(&expected), "{expected}\n{html}");
}

/// Issue 43: the campaign page's box names the next round's expected entries: the
/// baseline, the seat holder, then the queue in commitment order.
#[test]
fn the_seat_box_names_the_next_rounds_expected_entries() {
    let archive = archive();
    let campaign = &archive.campaigns[0];
    let page = pages::campaign::page(&archive, campaign).unwrap();
    let next = page
        .model
        .seat
        .next_round
        .expect("the campaign page names it");
    let entries: Vec<(&str, Option<&str>, Option<&str>)> = (next.entries.iter())
        .map(|e| (e.role, e.patch_short.as_deref(), e.miner.as_deref()))
        .collect();
    assert_eq!(
        entries,
        [
            ("baseline", None, None),
            ("candidate", Some("deeb9b6…8ddc5"), Some("later")),
        ]
    );
    assert_eq!(next.more, 0);
    assert_eq!(next.submissions_href.as_str(), "c/tiny/submissions/");
}
