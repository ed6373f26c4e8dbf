//! content/review.md lists the rules of `rules/v1.toml` as the rules file says them:
//! the table under "The rules of `rules/v1.toml`" (from its header row to the first
//! blank line) is generated (`REFEREE_BLESS=1` rewrites it). No HTML comment marks it:
//! the docs renderer refuses raw HTML.

use std::path::Path;

use super::rules;

const HEADER: &str = "| Rule | Severity | What it finds |\n";

#[test]
fn content_review_md_lists_the_rules_of_the_rules_file() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../content/review.md");
    let text = std::fs::read_to_string(&path).expect("content/review.md");
    let start = text.find(HEADER).expect("the rules table's header row");
    let end = start
        + text[start..]
            .find("\n\n")
            .expect("a blank line after the table")
        + 1;
    let (head, table, tail) = (&text[..start], &text[start..end], &text[end..]);
    let want = rules().markdown_table();
    if table != want && std::env::var_os("REFEREE_BLESS").is_some() {
        let blessed = format!("{head}{want}{tail}");
        receipts::fsutil::write_atomic(&path, blessed.as_bytes(), 0o644).expect("bless");
        return;
    }
    assert_eq!(
        table, want,
        "content/review.md's rules table is stale: rerun with REFEREE_BLESS=1"
    );
}
