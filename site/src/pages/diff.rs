//! A miner's diff as highlighted HTML for the entry page: one `<span>` per line, its class
//! saying what the line is — `d-file` (a file header: `diff --git`, `index`, `---`,
//! `+++`, mode and rename lines), `d-hunk` (`@@ … @@`), `d-add`, `d-del`, `d-ctx` (context)
//! and `d-meta` (`\ No newline at end of file`) — inside the `<pre><code>` the template
//! writes.
//!
//! The diff is untrusted (a miner wrote it): its bytes are decoded as UTF-8 with invalid
//! sequences shown as U+FFFD, every line goes through
//! [`receipts::text::escape_untrusted`] (controls, bidi overrides and invisible code points
//! shown visibly; a tab shows as `\t`, so a whitespace change is visible) and is then
//! HTML-escaped. The markup is ours, so the template may emit [`HighlightedDiff::html`]
//! with `| safe`. A line longer than [`MAX_LINE_CHARS`] characters is cut on a character
//! boundary and says how much was cut; lines after [`MAX_LINES`] are left out and counted.

use serde::Serialize;

use receipts::text::escape_untrusted;

/// Lines shown; the rest are counted in [`HighlightedDiff::lines_left_out`].
pub const MAX_LINES: usize = 5_000;

/// Characters shown of one line; the rest are cut and counted in the line's marker.
pub const MAX_LINE_CHARS: usize = 1_000;

/// git's marker after a line that lacks its final newline.
const NO_NEWLINE: &str = "\\ No newline at end of file";

/// A diff, highlighted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HighlightedDiff {
    /// The lines as `<span class="d-…">…</span>`, each followed by a newline: markup of
    /// ours around escaped text, for `| safe` inside `<pre><code>`.
    pub html: String,
    /// Lines of the diff.
    pub lines: usize,
    /// Lines added (`+` inside a hunk).
    pub added: usize,
    /// Lines removed (`-` inside a hunk).
    pub removed: usize,
    /// Lines not shown (after [`MAX_LINES`]).
    pub lines_left_out: usize,
    /// Lines cut at [`MAX_LINE_CHARS`].
    pub lines_cut: usize,
}

/// What a line of a diff is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    File,
    Hunk,
    Add,
    Del,
    Context,
    Meta,
}

impl Kind {
    fn class(self) -> &'static str {
        match self {
            Kind::File => "d-file",
            Kind::Hunk => "d-hunk",
            Kind::Add => "d-add",
            Kind::Del => "d-del",
            Kind::Context => "d-ctx",
            Kind::Meta => "d-meta",
        }
    }
}

/// Lines still expected in the current hunk, from its header (`@@ -a,b +c,d @@`): while
/// either side has some, `+`, `-` and ` ` lines are the hunk's, so a removed line that
/// starts with `--` is never taken for a file header.
#[derive(Clone, Copy, Debug, Default)]
struct Hunk {
    old: u64,
    new: u64,
}

impl Hunk {
    /// The counts of a hunk header; `None` when it is not one.
    fn parse(line: &str) -> Option<Self> {
        let rest = line.strip_prefix("@@ -")?;
        let (ranges, _) = rest.split_once(" @@")?;
        let (old, new) = ranges.split_once(" +")?;
        let count = |range: &str| -> Option<u64> {
            match range.split_once(',') {
                Some((start, count)) => {
                    start.parse::<u64>().ok()?;
                    count.parse().ok()
                }
                None => range.parse::<u64>().ok().map(|_| 1),
            }
        };
        Some(Self {
            old: count(old)?,
            new: count(new)?,
        })
    }

    fn open(&self) -> bool {
        self.old > 0 || self.new > 0
    }
}

/// `bytes`, a unified diff (`git diff` output), as highlighted HTML.
pub fn highlight(bytes: &[u8]) -> HighlightedDiff {
    let text = String::from_utf8_lossy(bytes);
    let body = text.strip_suffix('\n').unwrap_or(&text);
    let mut out = HighlightedDiff {
        html: String::new(),
        lines: 0,
        added: 0,
        removed: 0,
        lines_left_out: 0,
        lines_cut: 0,
    };
    if text.is_empty() {
        return out;
    }
    let mut hunk = Hunk::default();
    for line in body.split('\n') {
        out.lines += 1;
        let kind = if hunk.open() {
            match line.as_bytes().first() {
                Some(b'+') => {
                    hunk.new = hunk.new.saturating_sub(1);
                    Kind::Add
                }
                Some(b'-') => {
                    hunk.old = hunk.old.saturating_sub(1);
                    Kind::Del
                }
                Some(b'\\') => Kind::Meta,
                _ => {
                    hunk.old = hunk.old.saturating_sub(1);
                    hunk.new = hunk.new.saturating_sub(1);
                    Kind::Context
                }
            }
        } else if let Some(header) = Hunk::parse(line) {
            hunk = header;
            Kind::Hunk
        } else if line.starts_with('\\') {
            Kind::Meta
        } else {
            Kind::File
        };
        match kind {
            Kind::Add => out.added += 1,
            Kind::Del => out.removed += 1,
            _ => {}
        }
        if out.lines > MAX_LINES {
            out.lines_left_out += 1;
            continue;
        }
        let chars = line.chars().count();
        let shown = match line.char_indices().nth(MAX_LINE_CHARS) {
            Some((end, _)) => {
                out.lines_cut += 1;
                &line[..end]
            }
            None => line,
        };
        out.html.push_str("<span class=\"");
        out.html.push_str(kind.class());
        out.html.push_str("\">");
        if kind == Kind::Meta && line == NO_NEWLINE {
            // git's own marker, shown as git writes it.
            out.html.push_str(NO_NEWLINE);
        } else {
            push_html(&mut out.html, &escape_untrusted(shown));
        }
        if chars > MAX_LINE_CHARS {
            out.html.push_str("<span class=\"d-clip\">… (");
            out.html.push_str(&(chars - MAX_LINE_CHARS).to_string());
            out.html.push_str(" more characters)</span>");
        }
        out.html.push_str("</span>\n");
    }
    out
}

/// `text` HTML-escaped (tera's escaping: `&`, `<`, `>`, `"`, `'`) onto `out`.
fn push_html(out: &mut String, text: &str) {
    let mut bytes = Vec::with_capacity(text.len());
    // Writing into a Vec cannot fail.
    let _ = tera::escape_html(text, &mut bytes);
    out.push_str(&String::from_utf8_lossy(&bytes));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_classified_by_hunk_counts() {
        let diff = "diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n\
                    @@ -1,3 +1,3 @@\n ctx\n--- not a header\n+++ nor this\n ctx2\n\
                    \\ No newline at end of file\n";
        let d = highlight(diff.as_bytes());
        assert_eq!(
            d.html,
            "<span class=\"d-file\">diff --git a/x b/x</span>\n\
             <span class=\"d-file\">index 1..2 100644</span>\n\
             <span class=\"d-file\">--- a/x</span>\n\
             <span class=\"d-file\">+++ b/x</span>\n\
             <span class=\"d-hunk\">@@ -1,3 +1,3 @@</span>\n\
             <span class=\"d-ctx\"> ctx</span>\n\
             <span class=\"d-del\">--- not a header</span>\n\
             <span class=\"d-add\">+++ nor this</span>\n\
             <span class=\"d-ctx\"> ctx2</span>\n\
             <span class=\"d-meta\">\\ No newline at end of file</span>\n"
        );
        assert_eq!((d.lines, d.added, d.removed), (10, 1, 1));
    }

    #[test]
    fn every_byte_is_escaped() {
        let diff = b"@@ -1 +1 @@\n-<script>alert(1)</script>\n+\" onmouseover=\"x\xff\x1b[31m\xe2\x80\xae\t";
        let d = highlight(diff);
        assert_eq!(
            d.html,
            "<span class=\"d-hunk\">@@ -1 +1 @@</span>\n\
             <span class=\"d-del\">-&lt;script&gt;alert(1)&lt;/script&gt;</span>\n\
             <span class=\"d-add\">+&quot; onmouseover=&quot;x\u{fffd}\\u{1b}[31m\\u{202e}\\t</span>\n"
        );
    }

    #[test]
    fn long_lines_are_cut_on_a_character_boundary() {
        let line = format!("+{}", "é".repeat(MAX_LINE_CHARS + 9));
        let d = highlight(format!("@@ -0,0 +1 @@\n{line}\n").as_bytes());
        let expected = format!(
            "<span class=\"d-hunk\">@@ -0,0 +1 @@</span>\n<span class=\"d-add\">+{}\
             <span class=\"d-clip\">… (10 more characters)</span></span>\n",
            "é".repeat(MAX_LINE_CHARS - 1)
        );
        assert_eq!(d.html, expected);
        assert_eq!(d.lines_cut, 1);
    }

    #[test]
    fn lines_after_the_limit_are_counted() {
        let diff = format!(
            "@@ -0,0 +1,{0} @@\n{1}",
            MAX_LINES + 1,
            "+a\n".repeat(MAX_LINES + 1)
        );
        let d = highlight(diff.as_bytes());
        assert_eq!(
            (d.lines, d.added, d.lines_left_out),
            (MAX_LINES + 2, MAX_LINES + 1, 2)
        );
        assert_eq!(d.html.matches("<span").count(), MAX_LINES);
        assert_eq!(
            highlight(b""),
            HighlightedDiff {
                html: String::new(),
                lines: 0,
                added: 0,
                removed: 0,
                lines_left_out: 0,
                lines_cut: 0,
            }
        );
    }
}
