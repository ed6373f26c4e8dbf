//! Hostile text on the round and entry pages, asserted on the HTML the templates produce:
//! nothing a miner or an engine wrote executes or reorders text.
//!
//! The pages are built from a copy of the committed v2 fixture bundle whose record and
//! files carry `<script>`, attribute breakouts, `javascript:` links, ANSI and OSC 8
//! sequences, invalid UTF-8, a 64 KiB token and bidi overrides: in disqualification
//! details and log tails, step names, decision and failure sentences, hardware strings,
//! an engine's command line, bundle paths, the diff (its file names and lines) and the
//! engine log. Miner ids cannot carry any of it (their alphabet is closed,
//! `receipts::model::MinerId`), so the record is edited in memory where a signed bundle
//! could not carry the text; the view is rebuilt from the edited record with the
//! fixture's own verification report.

use std::path::{Path, PathBuf};

use testkit::copy_dir;

use receipts::keys::Keyring;
use receipts::layout::read_sealed_round;
use receipts::model::review::{Finding, Severity};
use receipts::model::{
    CopyOutcome, Disqualification, DisqualificationReason, EntryStatus, Fingerprint, LlmReview,
    ReviewRecord, ReviewResolution, Sha256Hex, TypedOrText, Verdict,
};
use site::archive::VerifiedRound;
use site::pages::{entry, round};
use verifier::VerifyOptions;

const SCRIPT: &str = "<script>alert(1)</script><SCRIPT src=x></SCRIPT>";
const BREAKOUT: &str = "\" onmouseover=\"alert(2)\" x=\"";
const SINGLE_BREAKOUT: &str = "' onfocus='alert(3)";
const LINK: &str = "<a href=\"javascript:alert(4)\">click</a> javascript:alert(5)";
const OSC8: &str = "\u{1b}]8;;javascript:alert(6)\u{1b}\\osc link text\u{1b}]8;;\u{1b}\\";
const ANSI: &str = "\u{1b}[31;1mred\u{1b}[0m \u{1b}]0;title\u{7}";
const BIDI: &str = "exe.\u{202e}txt\u{200b}.pdf";

/// 64 KiB of two-byte characters: a cut inside one would break it.
fn token() -> String {
    "é".repeat(32 * 1024)
}

fn hostile() -> String {
    format!(
        "{SCRIPT} {BREAKOUT} {SINGLE_BREAKOUT} {LINK} {OSC8} {ANSI} {BIDI} {}",
        token()
    )
}

/// The v2 fixture, copied to `tmp`, with hostile text in its record and files.
fn hostile_round(tmp: &Path) -> VerifiedRound {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../verifier/tests/fixtures");
    let dir: PathBuf = tmp.join("bundle");
    copy_dir(&fixtures.join("v2-round"), &dir);
    let keyring = Keyring::load(&fixtures.join("v2-keyring.json")).unwrap();
    let sealed = read_sealed_round(&dir).unwrap();
    let (mut record, subjects, statement_digest) =
        (sealed.record, sealed.subjects, sealed.statement_digest);
    let report = verifier::verify_bundle(&dir, &keyring, &VerifyOptions::at(record.ended_at));
    assert!(report.passed());

    let text = hostile();
    record.tool.name = text.clone();
    record.hardware.at_start.cpu_model = format!("{BIDI} {SCRIPT}");
    record.outcome.decision = TypedOrText::Text(text.clone());
    record.outcome.reason = Some(TypedOrText::Text(text.clone()));
    record.steps[0].group = text.clone();
    record.steps[1].name = format!("{}, pass 1, {BREAKOUT}", record.steps[1].group);
    record.steps[2].log = Some(format!("logs/{SCRIPT}{BREAKOUT}.log"));
    let candidate = &mut record.entries[1];
    candidate.status = EntryStatus::Disqualified;
    candidate.disqualification = Some(Disqualification {
        reason: DisqualificationReason::EngineCrashed,
        detail: text.clone(),
        log_tail: vec![
            token(),
            SCRIPT.to_owned(),
            BREAKOUT.to_owned(),
            OSC8.to_owned(),
            ANSI.to_owned(),
            BIDI.to_owned(),
        ],
    });
    candidate.engine.command = Some(vec![text.clone(), "--ok".to_owned()]);
    candidate.runs[0].probe_log = format!("probes/{BREAKOUT}{SCRIPT}.json");
    if let Some(c) = candidate.correctness.as_mut() {
        c.items_file = format!("../{SINGLE_BREAKOUT}/{BIDI}.json");
    }
    record.entries[0].infra_failure = Some(TypedOrText::Text(text.clone()));

    // The diff: hostile file names and lines, invalid UTF-8, the token.
    let patch = record.entries[1].patch.unwrap();
    let mut diff = format!(
        "diff --git a/{SCRIPT}.py b/{BREAKOUT}.py\n--- a/{LINK}\n+++ b/{BIDI}\n\
         @@ -0,0 +1,4 @@\n+{SCRIPT}\n+{OSC8}{ANSI}\n+"
    )
    .into_bytes();
    diff.extend_from_slice(b"bad \xff\xfe\xc3 bytes\n+");
    diff.extend_from_slice(token().as_bytes());
    diff.push(b'\n');
    let diff_file = receipts::layout::patch_input(&patch);
    std::fs::write(dir.join(&diff_file), diff).unwrap();
    // The engine log the entry page tails.
    let mut log = text.clone().into_bytes();
    log.extend_from_slice(b"\n\xff\xfe invalid \x1b[2J\x1b]8;;javascript:x\x07tail\n");
    log.extend_from_slice(token().as_bytes());
    let log_file = record.entries[1].engine_log.clone().unwrap();
    std::fs::write(dir.join(&log_file), log).unwrap();

    // The entry's review: its findings, its LLM reviewer and the person's reason are the
    // miner's and the person's text.
    let review = hostile_review(&text);
    let review_file = receipts::layout::review_input(&patch);
    std::fs::create_dir_all(dir.join("inputs/reviews")).unwrap();
    std::fs::write(
        dir.join(&review_file),
        serde_json::to_vec_pretty(&review).unwrap(),
    )
    .unwrap();
    record.entries[1].review = Some(receipts::rules::review::entry_review(
        &patch, &review, "keyid",
    ));

    let verified_at = record.ended_at;
    let mut round = VerifiedRound::new(
        record.round,
        &dir,
        record,
        &report,
        &subjects,
        statement_digest,
        verified_at,
    );
    // Rewritten since the bundle verified, so no longer its signed files: the pages read
    // them as they read any file outside the verified set (a verified file whose bytes
    // changed is not shown at all: `pages.rs`).
    for file in [&diff_file, &log_file] {
        assert!(
            round.verified_files.remove(file.as_str()).is_some(),
            "{file}"
        );
    }
    round
}

/// A resolved review whose every text is `text` or hostile.
fn hostile_review(text: &str) -> ReviewRecord {
    let at = receipts::model::Timestamp::from_unix_seconds(1_800_000_000).unwrap();
    ReviewRecord {
        rules_version: 1,
        rules_digest: Sha256Hex::digest(b"rules"),
        findings: vec![Finding {
            file: format!("{SCRIPT}.py"),
            line: Some(1),
            rule: BREAKOUT.to_owned(),
            severity: Severity::NeedsHuman,
            detail: text.to_owned(),
        }],
        static_verdict: Verdict::NeedsHuman,
        llm: Some(LlmReview {
            command: LINK.to_owned(),
            verdict: Verdict::NeedsHuman,
            transcript_sha256: Sha256Hex::digest(text.as_bytes()),
            transcript: text.to_owned(),
        }),
        verdict: Verdict::NeedsHuman,
        reviewed_at: at,
        derived_from: Some(format!("{BIDI}{SCRIPT}")),
        fingerprint: Fingerprint {
            weights: Default::default(),
            code: Sha256Hex::digest(b"code"),
            code_files: 1,
        },
        copy: CopyOutcome::Original,
        resolution: Some(ReviewResolution {
            verdict: Verdict::Pass,
            reason: text.to_owned(),
            resolved_at: at,
            envelope_sha256: Sha256Hex::digest(b"envelope"),
            log_index: 0,
        }),
    }
}

/// Every tag of `html` with its attributes, names and values as written.
fn tags(html: &str) -> Vec<(String, Vec<(String, String)>)> {
    let bytes = html.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'<' {
            i += 1;
            continue;
        }
        i += 1;
        let start = i;
        while i < bytes.len() && !bytes[i].is_ascii_whitespace() && bytes[i] != b'>' {
            i += 1;
        }
        let name = html[start..i].to_owned();
        let mut attrs = Vec::new();
        loop {
            while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            if i >= bytes.len() || bytes[i] == b'>' {
                i += 1;
                break;
            }
            if bytes[i] == b'/' {
                i += 1;
                continue;
            }
            let start = i;
            while i < bytes.len()
                && !bytes[i].is_ascii_whitespace()
                && !matches!(bytes[i], b'=' | b'>' | b'/')
            {
                i += 1;
            }
            let attr = html[start..i].to_owned();
            let mut value = String::new();
            if i < bytes.len() && bytes[i] == b'=' {
                i += 1;
                let quote = bytes.get(i).copied();
                if matches!(quote, Some(b'"' | b'\'')) {
                    i += 1;
                    let start = i;
                    while i < bytes.len() && Some(bytes[i]) != quote {
                        i += 1;
                    }
                    value = html[start..i].to_owned();
                    i += 1;
                } else {
                    let start = i;
                    while i < bytes.len() && !bytes[i].is_ascii_whitespace() && bytes[i] != b'>' {
                        i += 1;
                    }
                    value = html[start..i].to_owned();
                }
            }
            attrs.push((attr, value));
        }
        out.push((name, attrs));
    }
    out
}

/// The longest run of `c` in `text`.
fn longest_run(text: &str, c: char) -> usize {
    let (mut best, mut run) = (0, 0);
    for x in text.chars() {
        run = if x == c { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

/// Nothing from the input executes, breaks out of an attribute, links to script, moves
/// the terminal or reorders text; the token is cut.
fn assert_safe(page: &str, html: &str) {
    let lower = html.to_ascii_lowercase();
    assert!(!lower.contains("<script"), "{page}: a <script> tag");
    assert!(!html.contains('\u{1b}'), "{page}: an ESC byte");
    for c in ['\u{202e}', '\u{200b}', '\u{7}'] {
        assert!(!html.contains(c), "{page}: raw {c:?}");
    }
    for (tag, attrs) in tags(html) {
        assert!(
            tag.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'!' | b'-')),
            "{page}: tag {tag:?}"
        );
        for (name, value) in attrs {
            assert!(
                !name.is_empty()
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b':')),
                "{page}: attribute {name:?} of <{tag}>"
            );
            assert!(
                !name.to_ascii_lowercase().starts_with("on"),
                "{page}: event handler {name}={value:?} on <{tag}>"
            );
            let v = value.trim().to_ascii_lowercase();
            assert!(
                !v.starts_with("javascript:") && !v.starts_with("data:"),
                "{page}: {name}={value:?} on <{tag}>"
            );
        }
    }
    let run = longest_run(html, 'é');
    assert!(
        (100..=8_000).contains(&run),
        "{page}: the 64 KiB token shows {run} characters"
    );
}

#[test]
fn hostile_text_is_shown_inert_on_the_round_page() {
    let tmp = tempfile::tempdir().unwrap();
    let round = hostile_round(tmp.path());
    let campaign = round.record.campaign.id.clone();
    let page = round::round_page(&campaign, &round, None, None, None).unwrap();
    let html = site::render::render(page.template, &page.dir.page(), &page.model).unwrap();
    assert_safe("round", &html);
    // Shown, escaped and visible, not dropped.
    for shown in [
        "&lt;script&gt;alert(1)&lt;/script&gt;",
        "&quot; onmouseover=&quot;alert(2)&quot;",
        "&#39; onfocus=&#39;alert(3)",
        "exe.\\u{202e}txt\\u{200b}.pdf",
        // The receipt's log tail, terminal escapes stripped, OSC 8's text kept.
        "osc link text",
        "red ",
    ] {
        assert!(html.contains(shown), "{shown}");
    }
    // Text that is no log shows its escapes visibly; a log tail loses them.
    assert!(html.contains("\\u{1b}]8;;javascript:alert(6)"));
    let tail = page.model.entries[1].disqualification.as_ref().unwrap();
    let tail = &tail.log_tail.as_ref().unwrap().text;
    // The last 4 000 characters, cut on a character boundary, ESC sequences gone (the OSC 8
    // link's text and the coloured word kept), bidi and invisible code points shown.
    assert!(tail.starts_with("…é"), "{tail:.40}");
    assert!(
        tail.ends_with(&format!(
            "é\n{SCRIPT}\n{BREAKOUT}\nosc link text\nred \nexe.\\u{{202e}}txt\\u{{200b}}.pdf"
        )),
        "{tail}"
    );
    assert_eq!(tail.chars().count(), 1 + 4_000 + 2 * 7);
    // The detail and the decision are cut to 1 000 characters, whole characters.
    assert!(html.contains(&format!("{}…", "é".repeat(20))));
}

#[test]
fn hostile_text_is_shown_inert_on_the_entry_pages() {
    let tmp = tempfile::tempdir().unwrap();
    let round = hostile_round(tmp.path());
    let campaign = round.record.campaign.id.clone();
    for page in entry::entry_pages(&campaign, &round).unwrap() {
        let html = site::render::render(page.template, &page.dir.page(), &page.model).unwrap();
        if page.model.slug == "baseline" {
            assert_safe("baseline", &html);
            continue;
        }
        assert_safe(&page.model.slug, &html);
        // The diff: its lines escaped and classed, each byte that is not UTF-8 a marker
        // naming it, the token cut.
        let diff = page.model.provenance.diff.as_ref().unwrap();
        assert!(diff.html.contains(
            "<span class=\"d-add\">+&lt;script&gt;alert(1)&lt;/script&gt;&lt;SCRIPT src=x&gt;"
        ));
        assert!(html.contains(
            "<span class=\"d-add\">+bad <span class=\"d-ctl\">\\xff</span><span class=\"d-ctl\">\\xfe</span><span class=\"d-ctl\">\\xc3</span> bytes</span>"
        ));
        assert!(html.contains("… (31769 more characters)</span>"));
        assert_eq!(diff.lines_cut, 1);
        // The engine log: ANSI and OSC 8 gone, bad bytes as U+FFFD, the end kept.
        let log = &page.model.engine_log.as_ref().unwrap().tail;
        assert!(log.starts_with('…'), "{}", &log[..40]);
        assert!(!log.contains('\u{1b}'));
        // The review: shown from the bundle's copy, every text escaped.
        let review = page.model.review.as_ref().unwrap();
        assert_eq!(review.decision, "PASS (resolved by the evaluator)");
        assert_eq!(review.shown.as_ref().unwrap().findings.len(), 1);
        assert!(html.contains("Review before it ran"));
        assert!(html.contains("<code>&lt;script&gt;alert(1)&lt;/script&gt;"));
        // Unreadable files named, escaped: a path outside the bundle and a missing log.
        let correctness = page.model.correctness.as_ref().unwrap();
        assert!(correctness.error.as_deref().unwrap().contains("../"));
        assert!(page.model.runs[0].error.is_some());
    }
}
