//! The site's files for machines (`site::machine`) over a small archive built from the
//! committed v2 fixture round (`verifier/tests/fixtures/v2-round`), verified as of its own
//! seal time like the site build does: the exact bytes of `api/index.json` and of the
//! Atom feed, well-formed Atom with its required elements, XML escaping of hostile text,
//! determinism, the bundle tarball extracted and verified again, symlinks left out, the
//! sitemaps (an index of each segment's, split past 50,000 URLs), `robots.txt` and the
//! schemas.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use testkit::copy_dir;

use receipts::keys::Keyring;
use receipts::layout::read_sealed_round;
use receipts::model::{
    FrozenCampaign, Leader, MinerRegistry, RERUN_PREDICATE_TYPES, ROUND_PREDICATE_TYPES, Sha256Hex,
    Timestamp,
};
use site::archive::{Archive, CampaignArchive, RejectedBundle, RoundListing, VerifiedRound};
use site::machine::{
    self, MachineFile, SitemapPage, SitemapSegment, SkippedEntry, bundle_tar, campaign_feed,
    round_files, segment_sitemap, site_files, sitemap_index,
};
use site::paths::SiteDir;
use site::segment::Segment;
use verifier::VerifyOptions;

const BASE: &str = "https://scores.example/referee/";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../verifier/tests/fixtures")
        .join(name)
}

fn keyring(version: &str) -> Keyring {
    Keyring::load(&fixture(&format!("{version}-keyring.json"))).expect("keyring loads")
}

fn time(s: &str) -> Timestamp {
    s.parse().expect("a time")
}

/// The bundle in `dir` verified against the v2 keyring as of its own seal time.
fn verified(dir: &Path, number: u64) -> VerifiedRound {
    let sealed = read_sealed_round(dir).expect("a round record");
    let (record, subjects, statement_digest) =
        (sealed.record, sealed.subjects, sealed.statement_digest);
    let report = verifier::verify_bundle(dir, &keyring("v2"), &VerifyOptions::at(record.ended_at));
    assert!(
        report.passed(),
        "{:#?}",
        report.failures().collect::<Vec<_>>()
    );
    let verified_at = record.ended_at;
    VerifiedRound::new(
        number,
        dir,
        record,
        &report,
        &subjects,
        statement_digest,
        verified_at,
    )
}

/// What the archive holds of `round`.
fn summary(round: &VerifiedRound) -> RoundListing {
    RoundListing::of(round).expect("a summary")
}

/// Campaign `tiny`: round 1 is the fixture; round 2 is round 1 sealed again a day later
/// with the challenger taking the seat (hand-edited values, as a page model sees them);
/// round 3 is the fixture checked against the v1 keyring, which does not trust its key:
/// rejected.
fn archive() -> Archive {
    let dir = fixture("v2-round");
    let round1 = verified(&dir, 1);
    let mut round2 = round1.clone();
    round2.number = 2;
    round2.record.round = 2;
    round2.view.round.value = 2;
    round2.record.started_at = time("2026-12-02T08:00:00Z");
    round2.record.ended_at = time("2026-12-02T08:00:03.5Z");
    let fast = Leader {
        patch: round1.record.entries[1].patch.expect("a patch"),
        miner: "fast".parse().expect("a miner id"),
    };
    round2.record.outcome.leader_after = Some(fast.clone());
    round2.record.outcome.changed = true;
    round2.view.leader_after.value = Some(fast);
    round2.view.leader_changed.value = true;
    round2.statement_digest = Sha256Hex::digest(b"round 2");
    round2.verified_at = round2.record.ended_at;

    let report = verifier::verify_bundle(
        &dir,
        &keyring("v1"),
        &VerifyOptions::at(round1.record.ended_at),
    );
    assert!(!report.passed());
    let rejected = RejectedBundle {
        campaign: "tiny".parse().expect("an id"),
        number: 3,
        dir: dir.clone(),
        report,
        recorded_round: None,
        verified_at: round1.record.ended_at,
        as_of: site::archive::AsOf::NotWitnessed,
    };
    let campaign = FrozenCampaign::from_json(
        "campaign.json",
        &std::fs::read(dir.join("inputs/campaign.json")).expect("campaign.json"),
    )
    .expect("a frozen campaign");
    let miners: MinerRegistry =
        serde_json::from_slice(&std::fs::read(dir.join("inputs/miners.json")).expect("read"))
            .expect("miners.json");
    Archive {
        campaigns: vec![CampaignArchive {
            id: "tiny".parse().expect("an id"),
            campaign,
            rounds: vec![summary(&round1), summary(&round2)],
            submissions: Vec::new(),
            miners,
            title: None,
        }],
        rejected: vec![rejected],
        keyring_json: std::fs::read(fixture("v2-keyring.json")).expect("keyring bytes"),
        log: site::tlog::LogState::Absent,
    }
}

fn text(file: &MachineFile) -> &str {
    std::str::from_utf8(&file.1).expect("UTF-8")
}

fn find<'a>(files: &'a [MachineFile], path: &str) -> &'a MachineFile {
    files
        .iter()
        .find(|(p, _)| p.as_str() == path)
        .unwrap_or_else(|| panic!("no {path}"))
}

/// `actual` equals the expected file `tests/machine/<name>`; with `REFEREE_BLESS=1` the
/// file is rewritten instead (review the diff).
fn assert_golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/machine")
        .join(name);
    if testkit::blessing() {
        std::fs::write(&path, actual).expect("write the expected file");
    }
    let expected = std::fs::read_to_string(&path).expect("the expected file");
    assert_eq!(actual, expected, "{name}");
}

#[test]
fn api_index_json_is_exactly_as_documented() {
    let (path, bytes) = machine::api_index(&archive()).expect("index");
    assert_eq!(path.as_str(), "api/index.json");
    assert_golden("index.json", std::str::from_utf8(&bytes).expect("UTF-8"));
}

/// Rounds numbered 1 to 205 but 150: `api/index.json` lists the newest 100 (105–205)
/// and the three pages of rounds, each of which lists its own; the feed holds the newest
/// 100, its `updated` the newest seal time of all.
#[test]
fn the_index_and_the_feed_hold_the_newest_hundred_rounds_and_the_pages_every_round() {
    let mut archive = archive();
    let campaign = &mut archive.campaigns[0];
    let template = campaign.rounds[0].clone();
    campaign.rounds = (1..=205)
        .filter(|n| *n != 150)
        .map(|number| RoundListing {
            number,
            ended_at: Timestamp::from_unix_seconds(1_800_000_000 + number as i64).expect("t"),
            ..template.clone()
        })
        .collect();
    // The oldest sealed last: the feed's `updated` is the newest seal time of all.
    campaign.rounds[0].ended_at = time("2027-06-01T00:00:00Z");
    let campaign = &archive.campaigns[0];
    let numbers = |rounds: &serde_json::Value| -> Vec<u64> {
        (rounds.as_array().expect("rounds").iter())
            .map(|r| r["round"].as_u64().expect("a number"))
            .collect()
    };

    let (_, bytes) = machine::api_index(&archive).expect("index");
    let index: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
    let c = &index["campaigns"][0];
    assert_eq!(index["version"], 2);
    assert_eq!(c["roundsTotal"], 204);
    let newest: Vec<u64> = (105..=205).filter(|n| *n != 150).collect();
    assert_eq!(numbers(&c["rounds"]), newest);
    let pages: Vec<(u64, u64, &str)> = (c["roundPages"].as_array().expect("pages").iter())
        .map(|p| {
            (
                p["first"].as_u64().expect("first"),
                p["last"].as_u64().expect("last"),
                p["path"].as_str().expect("path"),
            )
        })
        .collect();
    assert_eq!(
        pages,
        [
            (1, 100, "api/c/tiny/rounds/1.json"),
            (101, 200, "api/c/tiny/rounds/2.json"),
            (201, 300, "api/c/tiny/rounds/3.json"),
        ]
    );
    let mut every = Vec::new();
    for k in 1..=3 {
        let (path, bytes) = machine::api_rounds_page(campaign, k).expect("page");
        assert_eq!(path.as_str(), pages[k as usize - 1].2);
        let page: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
        assert_eq!(page["campaign"], "tiny");
        every.extend(numbers(&page["rounds"]));
    }
    assert_eq!(every, (1..=205).filter(|n| *n != 150).collect::<Vec<_>>());

    let feed = campaign_feed(campaign, BASE).expect("feed");
    let doc = roxmltree::Document::parse(text(&feed)).expect("well-formed XML");
    let entries: Vec<String> = (doc.descendants())
        .filter(|n| n.has_tag_name("title") && n.parent().is_some_and(|p| p.has_tag_name("entry")))
        .filter_map(|n| n.text().map(str::to_owned))
        .collect();
    assert_eq!(entries.len(), 100);
    assert!(entries[0].starts_with("Round 205 "), "{}", entries[0]);
    assert!(entries[99].starts_with("Round 105 "), "{}", entries[99]);
    let updated = (doc.root_element().children())
        .find(|n| n.has_tag_name("updated"))
        .and_then(|n| n.text());
    assert_eq!(updated, Some("2027-06-01T00:00:00Z"));
}

#[test]
fn the_feed_is_exact_and_valid_atom_newest_first() {
    let archive = archive();
    let feed = campaign_feed(&archive.campaigns[0], BASE).expect("feed");
    assert_eq!(feed.0.as_str(), "c/tiny/feed.xml");
    assert_golden("feed.xml", text(&feed));

    let doc = roxmltree::Document::parse(text(&feed)).expect("well-formed XML");
    let atom = "http://www.w3.org/2005/Atom";
    let root = doc.root_element();
    assert!(root.has_tag_name((atom, "feed")));
    let child = |node: roxmltree::Node<'_, '_>, name: &str| {
        node.children()
            .find(|c| c.has_tag_name((atom, name)))
            .and_then(|c| c.text().map(str::to_owned))
    };
    // RFC 4287: a feed has exactly one id, title and updated, an author (no entry has
    // one), each entry an id, a title, an updated and an alternate link.
    for name in ["id", "title", "updated"] {
        let count = root
            .children()
            .filter(|c| c.has_tag_name((atom, name)))
            .count();
        assert_eq!(count, 1, "{name}");
    }
    assert!(root.children().any(|c| c.has_tag_name((atom, "author"))));
    let entries: Vec<_> = root
        .children()
        .filter(|c| c.has_tag_name((atom, "entry")))
        .collect();
    let titles: Vec<_> = entries.iter().map(|e| child(*e, "title")).collect();
    assert_eq!(
        titles,
        [
            Some("Round 2 · complete".to_owned()),
            Some("Round 1 · complete".to_owned())
        ]
    );
    let updated: Vec<_> = entries.iter().map(|e| child(*e, "updated")).collect();
    assert_eq!(
        updated,
        [
            Some("2026-12-02T08:00:03.5Z".to_owned()),
            Some("2026-12-01T22:12:46.807363Z".to_owned())
        ]
    );
    assert_eq!(
        child(root, "updated").as_deref(),
        Some("2026-12-02T08:00:03.5Z")
    );
    for entry in &entries {
        assert!(child(*entry, "id").is_some_and(|id| id.starts_with("tag:referee.dev,2026:")));
        let link = entry
            .children()
            .find(|c| c.has_tag_name((atom, "link")))
            .expect("a link");
        assert_eq!(link.attribute("rel"), Some("alternate"));
    }
}

#[test]
fn without_a_base_url_the_feed_links_relative_to_itself() {
    let archive = archive();
    let feed = campaign_feed(&archive.campaigns[0], "").expect("feed");
    let links: Vec<&str> = text(&feed)
        .lines()
        .filter(|l| l.contains("<link "))
        .map(str::trim)
        .collect();
    assert_eq!(
        links,
        [
            r#"<link rel="self" type="application/atom+xml" href="feed.xml"/>"#,
            r#"<link rel="alternate" type="text/html" href="./"/>"#,
            r#"<link rel="alternate" type="text/html" href="r/2/"/>"#,
            r#"<link rel="alternate" type="text/html" href="r/1/"/>"#,
        ]
    );
}

/// Issue 43: `api/index.json` shows a campaign's title as `campaigns.json` and every
/// page do: a bidi override or a control as an escape, never the raw character.
#[test]
fn api_index_escapes_bidi_and_controls_like_campaigns_json() {
    let mut archive = archive();
    archive.campaigns[0].campaign.campaign.title = "a\u{202e}b\u{1b}c".to_owned();
    let (_, bytes) = machine::api_index(&archive).expect("index");
    let json: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
    assert_eq!(json["campaigns"][0]["title"], "a\\u{202e}b\\u{1b}c");
    assert!(!String::from_utf8_lossy(&bytes).contains('\u{202e}'));
}

#[test]
fn hostile_text_in_the_feed_is_escaped_and_nothing_breaks_out() {
    let mut archive = archive();
    archive.campaigns[0].campaign.campaign.title =
        "</subtitle><script>alert(1)</script>\" onload='x' & \u{202e}txt.exe\u{1b}[31m\u{fffe}"
            .to_owned();
    let feed = campaign_feed(&archive.campaigns[0], "https://x.example/?a=1&b=<2>/").expect("feed");
    let xml = text(&feed);
    assert!(!xml.contains("<script"));
    assert!(xml.contains(
        "<subtitle>&lt;/subtitle&gt;&lt;script&gt;alert(1)&lt;/script&gt;&quot; onload=&apos;x&apos; \
         &amp; \\u{202e}txt.exe\\u{1b}[31m\\u{fffe}</subtitle>"
    ));
    let doc = roxmltree::Document::parse(xml).expect("still well-formed");
    let subtitle = doc
        .descendants()
        .find(|n| n.has_tag_name("subtitle"))
        .and_then(|n| n.text());
    assert_eq!(
        subtitle,
        Some(
            "</subtitle><script>alert(1)</script>\" onload='x' & \\u{202e}txt.exe\\u{1b}[31m\\u{fffe}"
        )
    );
    assert!(doc.descendants().all(|n| !n.has_tag_name("script")));
    let self_link = doc
        .descendants()
        .find(|n| n.attribute("rel") == Some("self"))
        .and_then(|n| n.attribute("href"));
    assert_eq!(
        self_link,
        Some("https://x.example/?a=1&b=<2>/c/tiny/feed.xml")
    );
}

#[test]
fn xml_escape_covers_markup_and_characters_xml_cannot_hold() {
    assert_eq!(
        machine::xml_escape("a<b>&\"'\u{0}\u{8}\t\n\u{ffff}é"),
        "a&lt;b&gt;&amp;&quot;&apos;\\u{0}\\u{8}\t\n\\u{ffff}é"
    );
    assert_eq!(machine::untrusted_xml("\u{202e}<\n"), "\\u{202e}&lt;\\n");
}

#[test]
fn identical_input_gives_identical_bytes() {
    let first = site_files(&archive(), BASE).expect("files");
    let second = site_files(&archive(), BASE).expect("files");
    assert_eq!(first, second);
    let paths: Vec<&str> = first.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        [
            "api/index.json",
            "keys/keyring.json",
            "schemas/round/v1.schema.json",
            "schemas/round/v2.schema.json",
            "schemas/round/v3.schema.json",
            "schemas/round/v4.schema.json",
            "schemas/round/v5.schema.json",
            "schemas/round/v6.schema.json",
            "schemas/round/v7.schema.json",
            "schemas/round/v8.schema.json",
            "schemas/round/v9.schema.json",
            "schemas/rerun/v1.schema.json",
            "schemas/rerun/v2.schema.json",
            "c/tiny/feed.xml",
            "robots.txt",
        ]
    );
    let archive = archive();
    let round = &verified(&fixture("v2-round"), 1);
    let id = &archive.campaigns[0].id;
    assert_eq!(
        round_files(id, round).expect("round files"),
        round_files(id, round).expect("round files")
    );
}

#[test]
fn the_keyring_and_the_receipts_are_published_as_stored() {
    let archive = archive();
    let files = site_files(&archive, "").expect("files");
    assert_eq!(find(&files, "keys/keyring.json").1, archive.keyring_json);

    let round = &verified(&fixture("v2-round"), 1);
    let out = round_files(&archive.campaigns[0].id, round).expect("round files");
    let paths: Vec<&str> = out.files.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        [
            "receipts/tiny/1/receipt.dsse.json",
            "receipts/tiny/1/round-opened.dsse.json",
            "c/tiny/r/1/receipt.dsse.json",
            "c/tiny/r/1/bundle.tar",
        ]
    );
    let receipt = std::fs::read(fixture("v2-round/receipt.dsse.json")).expect("read");
    let opened = std::fs::read(fixture("v2-round/round-opened.dsse.json")).expect("read");
    assert_eq!(out.files[0].1, receipt);
    assert_eq!(out.files[1].1, opened);
    assert_eq!(out.files[2].1, receipt);
    assert!(out.skipped.is_empty());
}

/// Every regular file under `dir`, bundle-relative, sorted.
fn files_under(dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("list") {
            let entry = entry.expect("entry");
            let path = entry.path();
            if entry.file_type().expect("type").is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).expect("under dir");
                out.insert(rel.to_string_lossy().into_owned());
            }
        }
    }
    out
}

#[test]
fn the_bundle_tarball_extracts_into_a_bundle_that_verifies() {
    let dir = fixture("v2-round");
    let round = verified(&dir, 1);
    let tar = bundle_tar(&dir, "tiny-round-1", None).expect("tar");
    assert!(tar.skipped.is_empty());
    assert_eq!(tar.bytes.len() % 512, 0);

    // Deterministic headers, sorted paths, every path under the root directory.
    let mut archive = tar::Archive::new(tar.bytes.as_slice());
    let mut paths = Vec::new();
    for entry in archive.entries().expect("entries") {
        let entry = entry.expect("an entry");
        let h = entry.header();
        let path = entry.path().expect("a path").to_string_lossy().into_owned();
        assert!(h.as_ustar().is_some(), "{path} is ustar");
        assert_eq!(h.mtime().expect("mtime"), 0, "{path}");
        assert_eq!(
            (h.uid().expect("uid"), h.gid().expect("gid")),
            (0, 0),
            "{path}"
        );
        assert_eq!(h.username().expect("utf-8"), Some(""), "{path}");
        assert_eq!(h.groupname().expect("utf-8"), Some(""), "{path}");
        let expected_mode = if h.entry_type().is_dir() {
            0o755
        } else {
            0o644
        };
        assert_eq!(h.mode().expect("mode"), expected_mode, "{path}");
        paths.push(path);
    }
    let mut sorted = paths.clone();
    sorted.sort();
    assert_eq!(paths, sorted);
    assert_eq!(
        &paths[..3],
        [
            "tiny-round-1/",
            "tiny-round-1/correctness/",
            "tiny-round-1/correctness/candidate-1-fast.json"
        ]
    );
    // 25 files in 8 directories.
    assert_eq!(paths.len(), 25 + 8);

    let tmp = tempfile::tempdir().expect("tempdir");
    tar::Archive::new(tar.bytes.as_slice())
        .unpack(tmp.path())
        .expect("extracts");
    let extracted = tmp.path().join("tiny-round-1");
    assert_eq!(files_under(&extracted), files_under(&dir));
    let report = verifier::verify_bundle(
        &extracted,
        &keyring("v2"),
        &VerifyOptions::at(round.record.ended_at),
    );
    assert!(
        report.passed(),
        "{:#?}",
        report.failures().collect::<Vec<_>>()
    );
    let outcomes = |r: &verifier::VerifyReport| {
        r.checks
            .iter()
            .map(|c| (c.name, c.target.clone(), c.passed, c.not_applicable))
            .collect::<Vec<_>>()
    };
    let original = verifier::verify_bundle(
        &dir,
        &keyring("v2"),
        &VerifyOptions::at(round.record.ended_at),
    );
    assert_eq!(outcomes(&report), outcomes(&original));
    assert_eq!(report.statement_digest, original.statement_digest);
    assert_eq!(
        report.statement_digest.as_ref(),
        Some(&round.statement_digest)
    );
}

#[test]
fn symlinks_are_left_out_of_the_tarball_and_reported() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("bundle");
    copy_dir(&fixture("v2-round"), &dir);
    let outside = tmp.path().join("secret.txt");
    std::fs::write(&outside, b"not part of the bundle").expect("write");
    std::os::unix::fs::symlink(&outside, dir.join("logs/secret.txt")).expect("symlink");
    std::os::unix::fs::symlink(tmp.path(), dir.join("outside")).expect("symlink");

    let tar = bundle_tar(&dir, "b", None).expect("tar");
    assert_eq!(
        tar.skipped,
        [
            SkippedEntry {
                name: "logs/secret.txt".to_owned(),
                kind: "symlink",
            },
            SkippedEntry {
                name: "outside".to_owned(),
                kind: "symlink",
            },
        ]
    );
    let mut archive = tar::Archive::new(tar.bytes.as_slice());
    for entry in archive.entries().expect("entries") {
        let entry = entry.expect("an entry");
        let path = entry.path().expect("a path").to_string_lossy().into_owned();
        assert!(
            !path.contains("secret") && !path.starts_with("b/outside"),
            "{path}"
        );
    }
    assert_eq!(
        tar.bytes,
        bundle_tar(&fixture("v2-round"), "b", None)
            .expect("tar")
            .bytes
    );
}

#[test]
fn a_segment_sitemap_lists_absolute_urls_sorted_and_robots_names_the_index() {
    let tiny = "tiny".parse().expect("an id");
    let pages = [
        SitemapPage {
            dir: SiteDir::round(&tiny, 1),
            lastmod: Some(time("2026-12-01T22:12:46.807363Z")),
        },
        SitemapPage {
            dir: SiteDir::root(),
            lastmod: None,
        },
        SitemapPage {
            dir: SiteDir::glossary(),
            lastmod: None,
        },
    ];
    let files = segment_sitemap(BASE, &Segment::Site, &pages).expect("sitemap");
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].0.as_str(), "sitemap-site.xml");
    assert_eq!(
        text(&files[0]),
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n\
         \x20 <url><loc>https://scores.example/referee/</loc></url>\n\
         \x20 <url><loc>https://scores.example/referee/c/tiny/r/1/</loc><lastmod>2026-12-01T22:12:46.807363Z</lastmod></url>\n\
         \x20 <url><loc>https://scores.example/referee/glossary/</loc></url>\n\
         </urlset>\n"
    );
    roxmltree::Document::parse(text(&files[0])).expect("well-formed");
    assert!(
        segment_sitemap("", &Segment::Site, &pages)
            .expect("no sitemap")
            .is_empty()
    );
    assert!(
        segment_sitemap(BASE, &Segment::Site, &[])
            .expect("no pages")
            .is_empty()
    );

    // The index lists each segment's file, none for a segment without pages.
    let index = sitemap_index(
        BASE,
        &[
            SitemapSegment {
                segment: Segment::Site,
                pages: 3,
                lastmod: Some(time("2026-12-01T22:12:46.807363Z")),
            },
            SitemapSegment {
                segment: Segment::of_round(&tiny, 1),
                pages: 2,
                lastmod: None,
            },
            SitemapSegment {
                segment: Segment::Submissions { prefix: 0xab },
                pages: 0,
                lastmod: None,
            },
        ],
    )
    .expect("index");
    assert_eq!(index.len(), 1);
    assert_eq!(index[0].0.as_str(), "sitemap.xml");
    assert_eq!(
        text(&index[0]),
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n\
         \x20 <sitemap><loc>https://scores.example/referee/sitemap-site.xml</loc><lastmod>2026-12-01T22:12:46.807363Z</lastmod></sitemap>\n\
         \x20 <sitemap><loc>https://scores.example/referee/sitemap-rounds.tiny.1.xml</loc></sitemap>\n\
         </sitemapindex>\n"
    );
    roxmltree::Document::parse(text(&index[0])).expect("well-formed");
    assert!(sitemap_index("", &[]).expect("no index").is_empty());

    let robots = machine::robots_txt(BASE).expect("robots");
    assert_eq!(robots.0.as_str(), "robots.txt");
    assert_eq!(
        text(&robots),
        "User-agent: *\nAllow: /\nSitemap: https://scores.example/referee/sitemap.xml\n"
    );
    assert_eq!(
        text(&machine::robots_txt("").expect("robots")),
        "User-agent: *\nAllow: /\n"
    );
}

#[test]
fn past_50000_urls_a_segment_sitemap_is_split_and_the_index_lists_each_part() {
    let tiny = "tiny".parse().expect("an id");
    let pages: Vec<SitemapPage> = (1..=50_001)
        .map(|n| SitemapPage {
            dir: SiteDir::round(&tiny, n),
            lastmod: Some(Timestamp::from_unix_seconds(1_800_000_000 + n as i64).expect("t")),
        })
        .collect();
    let segment = Segment::of_round(&tiny, 1);
    let files = segment_sitemap(BASE, &segment, &pages).expect("sitemap");
    let paths: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        ["sitemap-rounds.tiny.1.1.xml", "sitemap-rounds.tiny.1.2.xml"]
    );
    // Sorted by directory as text: `c/tiny/r/9999/` comes last.
    assert_eq!(text(&files[0]).matches("<url>").count(), 50_000);
    assert_eq!(
        text(&files[1]),
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n\
         \x20 <url><loc>https://scores.example/referee/c/tiny/r/9999/</loc><lastmod>2027-01-15T10:46:39Z</lastmod></url>\n\
         </urlset>\n"
    );
    let index = sitemap_index(
        BASE,
        &[SitemapSegment {
            segment,
            pages: pages.len(),
            lastmod: Some(time("2027-01-15T21:53:21Z")),
        }],
    )
    .expect("index");
    assert_eq!(
        text(&index[0]),
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n\
         \x20 <sitemap><loc>https://scores.example/referee/sitemap-rounds.tiny.1.1.xml</loc><lastmod>2027-01-15T21:53:21Z</lastmod></sitemap>\n\
         \x20 <sitemap><loc>https://scores.example/referee/sitemap-rounds.tiny.1.2.xml</loc><lastmod>2027-01-15T21:53:21Z</lastmod></sitemap>\n\
         </sitemapindex>\n"
    );
}

#[test]
fn every_predicate_has_its_schema_at_a_stable_path() {
    let files = machine::schema_files().expect("schemas");
    let types: Vec<&str> = ROUND_PREDICATE_TYPES
        .into_iter()
        .chain(RERUN_PREDICATE_TYPES)
        .collect();
    let paths: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        [
            "schemas/round/v1.schema.json",
            "schemas/round/v2.schema.json",
            "schemas/round/v3.schema.json",
            "schemas/round/v4.schema.json",
            "schemas/round/v5.schema.json",
            "schemas/round/v6.schema.json",
            "schemas/round/v7.schema.json",
            "schemas/round/v8.schema.json",
            "schemas/round/v9.schema.json",
            "schemas/rerun/v1.schema.json",
            "schemas/rerun/v2.schema.json",
        ]
    );
    for ((path, bytes), predicate_type) in files.iter().zip(&types) {
        let schema: serde_json::Value = serde_json::from_slice(bytes).expect("JSON");
        assert_eq!(schema["$id"], *predicate_type, "{path}");
    }
    // The round schemas are the committed files, as published.
    for (path, bytes) in &files[..ROUND_PREDICATE_TYPES.len()] {
        let version = path.as_str().trim_start_matches("schemas/round/");
        let committed = std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../receipts/schema")
                .join(format!("round-{version}")),
        )
        .expect("the committed schema");
        assert_eq!(bytes, &committed, "{path}");
    }
}
