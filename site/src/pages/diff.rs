//! A miner's diff as highlighted HTML for the entry page: one `<span>` per line, its class
//! saying what the line is — `d-file` (a file header: `diff --git`, `index`, `---`,
//! `+++`, mode and rename lines), `d-hunk` (`@@ … @@`), `d-add`, `d-del`, `d-ctx` (context)
//! and `d-meta` (`\ No newline at end of file`) — inside the `<pre><code>` the template
//! writes.
//!
//! The diff is untrusted (a miner wrote it) and shown faithfully: printable text as it is
//! (a backslash is one backslash), HTML-escaped; every character a reader could be fooled
//! by — controls, bidi overrides, invisible code points, as
//! [`receipts::text::escape_untrusted`] decides, a tab included so that a whitespace
//! change is visible — and every byte that is not UTF-8 becomes a styled marker,
//! `<span class="d-ctl">\u{1b}</span>`, `<span class="d-ctl">\t</span>`, `<span
//! class="d-ctl">\xff</span>`. Each marker's text names exactly one character or byte,
//! so the page's text with its markers mapped back is the diff's bytes. The markup is
//! ours, so the template may emit [`HighlightedDiff::html`] with `| safe`. A line longer
//! than [`MAX_LINE_CHARS`] characters is cut on a character boundary and says how much
//! was cut; lines after [`MAX_LINES`] are left out and counted.

use serde::Serialize;

use receipts::text::escape_untrusted;

/// Lines shown; the rest are counted in [`HighlightedDiff::lines_left_out`].
pub const MAX_LINES: usize = 5_000;

/// Characters shown of one line; the rest are cut and counted in the line's marker.
pub const MAX_LINE_CHARS: usize = 1_000;

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
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let mut out = HighlightedDiff {
        html: String::new(),
        lines: 0,
        added: 0,
        removed: 0,
        lines_left_out: 0,
        lines_cut: 0,
    };
    if bytes.is_empty() {
        return out;
    }
    let mut hunk = Hunk::default();
    for raw in body.split(|b| *b == b'\n') {
        out.lines += 1;
        let line = String::from_utf8_lossy(raw);
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
        } else if let Some(header) = Hunk::parse(&line) {
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
        let chars = units(raw).count();
        if chars > MAX_LINE_CHARS {
            out.lines_cut += 1;
        }
        out.html.push_str("<span class=\"");
        out.html.push_str(kind.class());
        out.html.push_str("\">");
        push_marked(&mut out.html, raw);
        if chars > MAX_LINE_CHARS {
            out.html.push_str("<span class=\"d-clip\">… (");
            out.html.push_str(&(chars - MAX_LINE_CHARS).to_string());
            out.html.push_str(" more characters)</span>");
        }
        out.html.push_str("</span>\n");
    }
    out
}

/// One unit of a diff line as shown: a character, or a byte that is not UTF-8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unit {
    Char(char),
    Byte(u8),
}

/// The units of `line`, in order.
fn units(line: &[u8]) -> impl Iterator<Item = Unit> + '_ {
    line.utf8_chunks().flat_map(|chunk| {
        chunk
            .valid()
            .chars()
            .map(Unit::Char)
            .chain(chunk.invalid().iter().map(|b| Unit::Byte(*b)))
    })
}

/// The marker text of `unit` when it is shown as a marker: a byte that is not UTF-8
/// (`\xff`), or a character [`escape_untrusted`] escapes other than the backslash
/// (`\t`, `\u{1b}`, `\u{202e}`); `None` for a character shown as it is.
fn marker(unit: Unit) -> Option<String> {
    match unit {
        Unit::Byte(b) => Some(format!("\\x{b:02x}")),
        Unit::Char('\\') => None,
        Unit::Char(c) => {
            let mut buf = [0; 4];
            match escape_untrusted(c.encode_utf8(&mut buf)) {
                std::borrow::Cow::Owned(escaped) => Some(escaped),
                std::borrow::Cow::Borrowed(_) => None,
            }
        }
    }
}

/// The first [`MAX_LINE_CHARS`] units of `line` onto `out`: text HTML-escaped, each
/// [`marker`] in a `d-ctl` span.
fn push_marked(out: &mut String, line: &[u8]) {
    let mut text = String::new();
    for unit in units(line).take(MAX_LINE_CHARS) {
        match (marker(unit), unit) {
            (Some(marker), _) => {
                push_html(out, &text);
                text.clear();
                out.push_str("<span class=\"d-ctl\">");
                out.push_str(&marker);
                out.push_str("</span>");
            }
            (None, Unit::Char(c)) => text.push(c),
            // Every byte that is not UTF-8 has a marker.
            (None, Unit::Byte(_)) => {}
        }
    }
    push_html(out, &text);
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
    fn every_byte_is_escaped_and_controls_are_markers() {
        let diff = b"@@ -1 +1 @@\n-<script>alert(1)</script>\n+\" onmouseover=\"x\xff\x1b[31m\xe2\x80\xae\t\\n";
        let d = highlight(diff);
        assert_eq!(
            d.html,
            "<span class=\"d-hunk\">@@ -1 +1 @@</span>\n\
             <span class=\"d-del\">-&lt;script&gt;alert(1)&lt;/script&gt;</span>\n\
             <span class=\"d-add\">+&quot; onmouseover=&quot;x<span class=\"d-ctl\">\\xff</span>\
             <span class=\"d-ctl\">\\u{1b}</span>[31m<span class=\"d-ctl\">\\u{202e}</span>\
             <span class=\"d-ctl\">\\t</span>\\n</span>\n"
        );
    }

    /// The page's text of `html` with every marker mapped back and the markup and
    /// entities removed: the bytes the diff shows.
    fn shown_bytes(html: &str) -> Vec<u8> {
        let mut out = Vec::new();
        let mut rest = html;
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix("<span class=\"d-ctl\">") {
                let (marker, tail) = after.split_once("</span>").expect("a closed marker");
                match marker {
                    "\\t" => out.push(b'\t'),
                    "\\r" => out.push(b'\r'),
                    "\\n" => out.push(b'\n'),
                    m if m.starts_with("\\x") => {
                        out.push(u8::from_str_radix(&m[2..], 16).expect("a byte"));
                    }
                    m => {
                        let hex = m
                            .strip_prefix("\\u{")
                            .and_then(|h| h.strip_suffix('}'))
                            .expect("a code point");
                        let c = char::from_u32(u32::from_str_radix(hex, 16).expect("hex"))
                            .expect("a char");
                        out.extend_from_slice(c.to_string().as_bytes());
                    }
                }
                rest = tail;
            } else if rest.starts_with('<') {
                rest = &rest[rest.find('>').expect("a tag") + 1..];
            } else if rest.starts_with('&') {
                let end = rest.find(';').expect("an entity");
                out.push(match &rest[..=end] {
                    "&amp;" => b'&',
                    "&lt;" => b'<',
                    "&gt;" => b'>',
                    "&quot;" => b'"',
                    "&#39;" => b'\'',
                    other => panic!("entity {other}"),
                });
                rest = &rest[end + 1..];
            } else {
                let end = rest.find(['<', '&']).unwrap_or(rest.len());
                out.extend_from_slice(&rest.as_bytes()[..end]);
                rest = &rest[end..];
            }
        }
        out
    }

    /// Issue 43: backslashes stay single, git's quoted octal paths keep their escapes as
    /// written, a new file's name with a space is shown as it is, controls and a byte
    /// that is not UTF-8 are markers; the page's text, markers mapped back, is the diff.
    #[test]
    fn the_page_text_with_markers_mapped_back_is_the_diff_byte_for_byte() {
        let diff: &[u8] = b"diff --git \"a/caf\\303\\251 \\342\\200\\256.c\" \"b/caf\\303\\251 \\342\\200\\256.c\"\n\
index 1111111..2222222 100644\n\
--- \"a/caf\\303\\251 \\342\\200\\256.c\"\n\
+++ \"b/caf\\303\\251 \\342\\200\\256.c\"\n\
@@ -1,2 +1,2 @@\n\
-printf(\"hello\\n\");\n\
+printf(\"hello\\n\\t\\\\\");\t// <b>&amp;</b> 'q'\x1b]0;x\x07\xfe\n\
 return 0;\r\n\
diff --git a/new file.txt b/new file.txt\n\
new file mode 100644\n\
index 0000000..3333333\n\
--- /dev/null\n\
+++ b/new file.txt\n\
@@ -0,0 +1 @@\n\
+C:\\path\\to \xe2\x80\xae\n\
\\ No newline at end of file\n";
        let d = highlight(diff);
        assert_eq!(shown_bytes(&d.html), diff);
        assert!(
            d.html.contains("printf(&quot;hello\\n&quot;);"),
            "{}",
            d.html
        );
        assert!(
            d.html.contains("\\303\\251 \\342\\200\\256.c"),
            "{}",
            d.html
        );
        assert!(
            !d.html.contains("\\\\n"),
            "no doubled backslash: {}",
            d.html
        );
        assert_eq!((d.lines, d.added, d.removed), (16, 2, 1));
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
