//! Autoescape is on for every template of ours: each template is rendered with a real
//! page model (built from the `two-rounds` case) in which every string is replaced by a
//! `<script>`, an attribute breakout and a `javascript:` link, and no markup of them
//! comes out. The only strings left alone are those a template prints with `| safe`
//! (markup our own code produced and escaped: SVG, docs HTML, the highlighted diff),
//! found by reading the templates themselves.

use std::collections::BTreeSet;
use std::path::Path;

use receipts::layout::DataDir;
use receipts::model::Timestamp;
use serde::Serialize;
use serde_json::Value;
use site::incremental::OwnChecks;
use site::pages::PageOut;
use site::pages::miner::{SubmissionsPageLink, SubmissionsPageModel};
use site::pages::submission::PatchIndex;
use site::paths::SiteDir;
use site::render::{TEMPLATES, render};
use site::verdicts::Verdicts;

const HOSTILE: &str = "<script>alert(1)</script>\"' onmouseover=alert(2) x='javascript:alert(3)";

/// The last path segment of every expression a template prints with `| safe`
/// (`page.provenance.diff.html | safe` → `html`).
fn safe_fields(template: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for piece in template.split("{{").skip(1) {
        let Some((expr, _)) = piece.split_once("}}") else {
            continue;
        };
        let mut parts = expr.split('|');
        let value = parts.next().unwrap_or_default();
        if parts.any(|filter| filter.trim() == "safe")
            && let Some(last) = value.trim().rsplit('.').next()
        {
            out.insert(last.to_owned());
        }
    }
    out
}

/// `value` with every string replaced by [`HOSTILE`], except under the keys in `safe`
/// (emptied: our own markup is not what this test is about).
fn poison(value: &mut Value, safe: &BTreeSet<String>) {
    match value {
        Value::String(s) => *s = HOSTILE.to_owned(),
        Value::Array(items) => items.iter_mut().for_each(|v| poison(v, safe)),
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if safe.contains(key) {
                    *v = Value::String(String::new());
                } else {
                    poison(v, safe);
                }
            }
        }
        _ => {}
    }
}

fn check<M: Serialize>(page: &PageOut<M>, covered: &mut BTreeSet<&'static str>) {
    let source = TEMPLATES
        .iter()
        .find(|(n, _)| *n == page.template)
        .map(|(_, s)| *s)
        .unwrap();
    let safe = safe_fields(source);
    let mut model = serde_json::to_value(&page.model).unwrap();
    poison(&mut model, &safe);
    let html = render(page.template, &page.dir.page(), &model).unwrap();
    for bad in [
        "<script",
        "\"' onmouseover",
        "x='javascript",
        "href=\"javascript:",
    ] {
        assert!(
            !html.contains(bad),
            "{}: `{bad}` came out unescaped:\n{html}",
            page.template
        );
    }
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;"),
        "{}",
        page.template
    );
    covered.insert(page.template);
}

#[test]
fn every_template_escapes_every_string_of_its_model() {
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases/two-rounds/in");
    let (keyring, json) = site::load::load_keyring(&input.join("keyring.json")).unwrap();
    let at: Timestamp = "2026-12-02T00:00:00Z".parse().unwrap();
    let verdicts = Verdicts::default();
    let own = OwnChecks::new(&keyring, &json, &verdicts);
    let archive =
        site::load::load_archive_cached(&DataDir::new(input.join("data")), &own, Some(at)).unwrap();
    let index = PatchIndex::new(&archive);
    let campaign = &archive.campaigns[0];
    // Loaded again from its bundle, as a build does for its pages.
    let round = &site::load::load_round(&campaign.rounds[1], &own).unwrap();
    let mut covered = BTreeSet::new();
    check(&site::pages::index::page(&archive).unwrap(), &mut covered);
    check(
        &site::pages::campaign::page(&archive, campaign).unwrap(),
        &mut covered,
    );
    check(
        &site::pages::campaign::rounds_page(campaign, 1).unwrap(),
        &mut covered,
    );
    check(
        &site::pages::rejected::page(&archive).unwrap(),
        &mut covered,
    );
    check(
        &site::pages::submissions::page(campaign).unwrap(),
        &mut covered,
    );
    let miner = index.miners().next().unwrap();
    check(
        &site::pages::miner::page(&archive, &index, miner).unwrap(),
        &mut covered,
    );
    // A page of submissions, with both links, from the miner page's rows (the case's
    // miners have too few submissions for pages of their own).
    let miner_page = site::pages::miner::page(&archive, &index, miner).unwrap();
    let link = |k: usize| SubmissionsPageLink {
        first: 100 * k - 99,
        last: 100 * k,
        href: SiteDir::miner_submissions(miner, k),
    };
    check(
        &PageOut {
            dir: SiteDir::miner_submissions(miner, 2),
            template: "miner-submissions.html",
            model: SubmissionsPageModel {
                miner: miner.to_string(),
                title: "Submissions 101–200".to_owned(),
                miner_href: SiteDir::miner(miner),
                range: link(2),
                submissions: miner_page.model.submissions.clone(),
                previous: Some(link(1)),
                next: Some(link(3)),
                table: miner_page.model.table.clone(),
            },
            files: Vec::new(),
        },
        &mut covered,
    );
    // And the miner page with links to its pages of submissions.
    let mut paged = miner_page;
    paged.model.pages = vec![link(1), link(2)];
    check(&paged, &mut covered);
    let patch = index.patches().next().unwrap();
    check(
        &site::pages::submission::page(&index, patch).unwrap(),
        &mut covered,
    );
    check(
        &site::pages::round::round_page(&campaign.id, round, campaign.rounds.first(), None, None)
            .unwrap(),
        &mut covered,
    );
    for page in site::pages::entry::entry_pages(&campaign.id, round).unwrap() {
        check(&page, &mut covered);
    }
    let docs = site::docs::load().unwrap();
    let doc = docs.all().next().unwrap();
    check(
        &PageOut {
            dir: doc.dir.clone(),
            template: "doc.html",
            model: doc.clone(),
            files: Vec::new(),
        },
        &mut covered,
    );
    // base.html is in every page, the partials in the two pages of rounds and the two
    // of submissions above, the seat box in the campaign and round pages, the attested
    // marker in the round and entry pages; every other template was rendered above.
    covered.insert("base.html");
    covered.insert("_rounds-table.html");
    covered.insert("_submissions-table.html");
    covered.insert("_seat-box.html");
    covered.insert("_attested.html");
    // The review partial has no model in this case (no repository submission): the entry
    // page renders it with hostile review text in `escaping.rs`.
    covered.insert("_review.html");
    let all: BTreeSet<&str> = TEMPLATES.iter().map(|(n, _)| *n).collect();
    assert_eq!(covered, all);
}

#[test]
fn safe_fields_are_read_from_the_templates() {
    assert_eq!(
        safe_fields("{{ a.b }} {{ page.history_svg | safe }} {{ r.chart|safe }}{{x | safe}}"),
        ["chart", "history_svg", "x"]
            .into_iter()
            .map(str::to_owned)
            .collect()
    );
}
