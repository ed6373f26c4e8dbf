//! Untrusted text in human output: the one escaping rule every human-facing output of
//! referee applies to text a miner or an engine controls (miner ids, diff paths, log
//! tails, engine messages) — the CLI now, the site's pages later. JSON output carries
//! the raw string, JSON-escaped: data for machines is not altered.
//!
//! A terminal interprets control characters (a CR rewrites the line, ESC starts an ANSI
//! or OSC sequence that can retitle the window or fake output), and bidi controls and
//! invisible code points make a path read differently from what it is. So every such
//! character is shown as a Rust-style escape: `\r`, `\n`, `\t`, `\\`, and `\u{…}` for the
//! rest.
//!
//! Numbers in the same output read as people write them: [`format_grouped`].

use std::borrow::Cow;

/// `text` with every character a terminal or a reader could be fooled by shown escaped:
/// C0 and C1 controls and DEL (`\r`, `\n`, `\t`, else `\u{1b}`-style), bidi controls
/// (U+061C, U+200E–U+200F, U+202A–U+202E, U+2066–U+2069), invisible and zero-width code
/// points (U+00AD, U+180E, U+200B–U+200D, U+2060–U+2064, U+FEFF), and the backslash
/// itself (`\\`, so an escape in the output is never ambiguous). Borrowed when nothing
/// needs escaping.
pub fn escape_untrusted(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\r' => out.push_str("\\r"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if needs_escape(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Whether [`escape_untrusted`] escapes `c`.
fn needs_escape(c: char) -> bool {
    c == '\\'
        || c.is_control()
        || matches!(
            c,
            '\u{00ad}'
                | '\u{061c}'
                | '\u{180e}'
                | '\u{200b}'..='\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{2069}'
                | '\u{feff}'
        )
}

/// `n` with its digits grouped in threes by spaces, as people write large numbers in
/// human output: `2 840`, `10 000 000`.
pub fn format_grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        assert!(matches!(
            escape_untrusted("engine.toml — ok é"),
            Cow::Borrowed("engine.toml — ok é")
        ));
    }

    #[test]
    fn controls_bidi_and_invisible_code_points_are_escaped() {
        assert_eq!(escape_untrusted("a\rb"), "a\\rb");
        assert_eq!(
            escape_untrusted("\u{1b}]0;pwned\u{7}"),
            "\\u{1b}]0;pwned\\u{7}"
        );
        assert_eq!(
            escape_untrusted(".g\u{200c}it/hooks"),
            ".g\\u{200c}it/hooks"
        );
        assert_eq!(escape_untrusted("x\u{202e}txt.exe"), "x\\u{202e}txt.exe");
        assert_eq!(escape_untrusted("line\nnext\ttab"), "line\\nnext\\ttab");
        assert_eq!(escape_untrusted("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(escape_untrusted("\u{feff}bom"), "\\u{feff}bom");
        // The backslash is escaped too, so `\u{1b}` in the output is never literal text.
        assert_eq!(escape_untrusted("a\\u{1b}"), "a\\\\u{1b}");
    }

    #[test]
    fn numbers_are_grouped_in_threes() {
        assert_eq!(format_grouped(0), "0");
        assert_eq!(format_grouped(999), "999");
        assert_eq!(format_grouped(2_840), "2 840");
        assert_eq!(format_grouped(10_000_000), "10 000 000");
        assert_eq!(format_grouped(u64::MAX), "18 446 744 073 709 551 615");
    }
}
