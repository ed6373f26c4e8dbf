//! content/review.md lists the rules of `rules/v1.toml` as the rules file says them:
//! the table between its markers is generated (`REFEREE_BLESS=1` rewrites it).

use std::path::Path;

use super::rules;

const BEGIN: &str = "<!-- rules:begin -->\n";
const END: &str = "<!-- rules:end -->";

#[test]
fn content_review_md_lists_the_rules_of_the_rules_file() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../content/review.md");
    let text = std::fs::read_to_string(&path).expect("content/review.md");
    let (head, rest) = text.split_once(BEGIN).expect("a rules:begin marker");
    let (table, tail) = rest.split_once(END).expect("a rules:end marker");
    let want = rules().markdown_table();
    if table != want && std::env::var_os("REFEREE_BLESS").is_some() {
        let blessed = format!("{head}{BEGIN}{want}{END}{tail}");
        receipts::fsutil::write_atomic(&path, blessed.as_bytes(), 0o644).expect("bless");
        return;
    }
    assert_eq!(
        table, want,
        "content/review.md's rules table is stale: rerun with REFEREE_BLESS=1"
    );
}
