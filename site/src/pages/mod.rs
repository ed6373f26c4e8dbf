//! Page models: plain `#[derive(Serialize)]` structs built by pure functions from the
//! [`crate::archive`] types, one module per kind of page.
//!
//! Every builder returns a [`PageOut`]: where the page goes (its [`SiteDir`]; the page is
//! `<dir>index.html`), the template that renders it, its model, and the files it
//! publishes beside it ([`ExtraFile`]: the CSV/JSON of its tables, made by
//! [`table_files`]). The build renders the model with `{ page: model, site }`
//! ([`crate::render`]) and writes everything; builders write nothing.
//!
//! Links in models are [`SiteDir`]s relative to the site root (`c/demo/r/2/`); templates
//! prefix them with `site.root`. Strings from a receipt, a record, a diff or a log pass
//! through `receipts::text::escape_untrusted` when the model is built.

pub mod campaign;
pub mod diff;
pub mod entry;
pub mod fast;
pub mod index;
pub mod miner;
pub mod rejected;
pub mod round;
pub mod seat;
pub mod submission;
pub mod submissions;

use receipts::model::Leader;
use serde::Serialize;

use crate::error::SiteError;
use crate::paths::{SiteDir, SitePath};

/// Whether the verifier only attests the predicate field at `path` (its name in
/// [`verifier::ATTESTED_FIELDS`], `entries[].startedAt`): signed, but recomputed by no
/// offline check. Pages mark such values "attested" (the `_attested.html` marker).
pub fn attested(path: &str) -> bool {
    verifier::ATTESTED_FIELDS.iter().any(|f| f.path == path)
}

/// `text` with a no-break space before each `%`, so `+10 %` never breaks across lines.
pub fn keep_percent(text: String) -> String {
    text.replace(" %", "\u{a0}%")
}

/// One page to render, and the files it publishes beside it.
#[derive(Clone, Debug)]
pub struct PageOut<M> {
    /// The page's directory; the page itself is `dir.page()` (`<dir>index.html`).
    pub dir: SiteDir,
    /// The template that renders it (`round.html`).
    pub template: &'static str,
    /// The page model, `page` in the template.
    pub model: M,
    /// Files published beside the page (CSV/JSON of its tables), written as they are.
    pub files: Vec<ExtraFile>,
}

/// A file written as it is (not rendered): a table's CSV or JSON, a receipt, a schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtraFile {
    /// Where it goes, relative to the site root.
    pub path: SitePath,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// A row of a table published as CSV beside its page: the columns in order and the
/// row's cells as text. The JSON file is the rows serialised as they are.
pub trait TableRow: Serialize {
    /// The CSV header, in column order.
    const COLUMNS: &'static [&'static str];
    /// The row's cells, one per column, as the CSV shows them.
    fn cells(&self) -> Vec<String>;
}

/// Links to a table's downloads, relative to its page (`rounds.csv`, `rounds.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TableLinks {
    /// The CSV file's name.
    pub csv: String,
    /// The JSON file's name.
    pub json: String,
}

/// The CSV and JSON files of a table named `stem` beside the page in `dir`
/// (`<dir><stem>.csv`, `<dir><stem>.json`), and the links the page shows.
///
/// The CSV is RFC 4180 (comma, CRLF, fields quoted when they hold a comma, a quote or a
/// line break); a cell a spreadsheet would run as a formula (starting with `=`, `+`, `@`,
/// a tab, a carriage return, or `-` not followed by a digit) is prefixed with `'`. The
/// JSON is the rows as an array, pretty-printed, ending in a newline.
///
/// Errors: [`SiteError::InvalidId`] for a `stem` that is no file name,
/// [`SiteError::Serialize`] when a row does not serialise.
pub fn table_files<R: TableRow>(
    dir: &SiteDir,
    stem: &str,
    rows: &[R],
) -> Result<(TableLinks, [ExtraFile; 2]), SiteError> {
    let csv_name = format!("{stem}.csv");
    let json_name = format!("{stem}.json");
    let csv_path = dir.file(&csv_name)?;
    let json_path = dir.file(&json_name)?;
    let mut csv = String::new();
    push_csv_line(&mut csv, R::COLUMNS.iter().map(|c| (*c).to_owned()));
    for row in rows {
        push_csv_line(&mut csv, row.cells());
    }
    let mut json = serde_json::to_vec_pretty(rows).map_err(|e| SiteError::Serialize {
        path: json_path.to_string(),
        message: e.to_string(),
    })?;
    json.push(b'\n');
    Ok((
        TableLinks {
            csv: csv_name,
            json: json_name,
        },
        [
            ExtraFile {
                path: csv_path,
                bytes: csv.into_bytes(),
            },
            ExtraFile {
                path: json_path,
                bytes: json,
            },
        ],
    ))
}

/// Characters of one untrusted sentence or name shown (the start is kept).
pub const TEXT_CHARS: usize = 1_000;

/// Untrusted text (from a receipt, a record, a log) as a model string: control, bidi and
/// invisible characters made visible by `receipts::text::escape_untrusted` (the template
/// HTML-escapes the rest), cut to [`TEXT_CHARS`] characters (on a character boundary,
/// `…` appended) so a 64 KiB token cannot swamp a page.
pub fn untrusted(text: &str) -> String {
    untrusted_clipped(text, TEXT_CHARS)
}

/// [`untrusted`] with another limit: `text` cut to `max` characters (on a character
/// boundary, `…` appended when cut), then escaped with `escape_untrusted`.
pub fn untrusted_clipped(text: &str, max: usize) -> String {
    let escape = receipts::text::escape_untrusted;
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", escape(&text[..end])),
        None => escape(text).into_owned(),
    }
}

/// A seat for people, `e5595a3…88ea1 (miner-fast)` or `the baseline`, made safe with
/// [`untrusted`] (a miner id is untrusted text).
pub fn seat_label(leader: Option<&Leader>) -> String {
    untrusted(&verifier::view::format_leader(leader))
}

pub use crate::names::wire_name;

fn push_csv_line(out: &mut String, cells: impl IntoIterator<Item = String>) {
    for (i, cell) in cells.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let cell = defuse_formula(cell);
        if cell.contains([',', '"', '\r', '\n']) {
            out.push('"');
            out.push_str(&cell.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(&cell);
        }
    }
    out.push_str("\r\n");
}

/// Prefixes `'` to a cell a spreadsheet would evaluate.
fn defuse_formula(cell: String) -> String {
    let mut chars = cell.chars();
    let risky = match chars.next() {
        Some('=' | '+' | '@' | '\t' | '\r') => true,
        Some('-') => !chars.next().is_some_and(|c| c.is_ascii_digit()),
        _ => false,
    };
    if risky { format!("'{cell}") } else { cell }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Row {
        name: String,
        score: i64,
    }

    impl TableRow for Row {
        const COLUMNS: &'static [&'static str] = &["name", "score"];
        fn cells(&self) -> Vec<String> {
            vec![self.name.clone(), self.score.to_string()]
        }
    }

    #[test]
    fn csv_quotes_and_defuses() {
        let rows = [
            Row {
                name: "a,b \"c\"".into(),
                score: -5,
            },
            Row {
                name: "=HYPERLINK(1)".into(),
                score: 7,
            },
            Row {
                name: "-x".into(),
                score: 0,
            },
        ];
        let dir = SiteDir::campaign(&"demo".parse().unwrap());
        let (links, [csv, json]) = table_files(&dir, "rounds", &rows).unwrap();
        assert_eq!(links.csv, "rounds.csv");
        assert_eq!(csv.path.as_str(), "c/demo/rounds.csv");
        assert_eq!(
            String::from_utf8(csv.bytes).unwrap(),
            "name,score\r\n\"a,b \"\"c\"\"\",-5\r\n'=HYPERLINK(1),7\r\n'-x,0\r\n"
        );
        assert_eq!(json.path.as_str(), "c/demo/rounds.json");
        let parsed: serde_json::Value = serde_json::from_slice(&json.bytes).unwrap();
        assert_eq!(parsed[0]["name"], "a,b \"c\"");
        assert_eq!(parsed[2]["score"], 0);
        assert!(table_files(&dir, "../x", &rows).is_err());
    }
}
