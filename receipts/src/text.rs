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
    // Most text is ASCII, where only controls, DEL and the backslash are escaped: one
    // pass over the bytes decides it without decoding characters.
    let clean = if text.is_ascii() {
        !text.bytes().any(|b| b < b' ' || b == 0x7f || b == b'\\')
    } else {
        !text.chars().any(needs_escape)
    };
    if clean {
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

/// A log tail for people, from the bytes a log holds: invalid UTF-8 is shown as U+FFFD;
/// terminal escape sequences are removed — CSI (`ESC [` … final byte, colours and cursor
/// moves), OSC (`ESC ]` … BEL or `ESC \`, window titles and OSC 8 hyperlinks, whose
/// visible text stays), DCS/SOS/PM/APC strings (`ESC P`/`X`/`^`/`_` … `ESC \`), the
/// 8-bit C1 forms of these (U+009B, U+009D, U+0090, U+0098, U+009E, U+009F), and the
/// two- and three-character `ESC` sequences; a string sequence left open ends at the
/// line's end, so it hides no later line. `\r\n` becomes `\n`. Then the last `max_chars`
/// characters are kept (cut on a character boundary, `…` in front when something was
/// cut), and every line is escaped with [`escape_untrusted`] (lone CRs, other controls,
/// bidi and invisible code points shown visibly), the lines joined by real `\n`s for a
/// `<pre>`. The result is plain text: an HTML renderer still HTML-escapes it.
pub fn log_tail_for_display(bytes: &[u8], max_chars: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let stripped = strip_terminal_escapes(&text);
    let count = stripped.chars().count();
    let kept = match count.checked_sub(max_chars) {
        Some(cut) if cut > 0 => {
            let start = stripped
                .char_indices()
                .nth(cut)
                .map_or(stripped.len(), |(i, _)| i);
            format!("…{}", &stripped[start..])
        }
        _ => stripped,
    };
    kept.split('\n')
        .map(escape_untrusted)
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text` without terminal escape sequences, `\r\n` as `\n` ([`log_tail_for_display`]).
fn strip_terminal_escapes(text: &str) -> String {
    /// Where a sequence being skipped stands.
    #[derive(Clone, Copy)]
    enum State {
        Text,
        /// After ESC.
        Escape,
        /// After `ESC` and intermediate bytes (`ESC ( B`): one final byte ends it.
        Intermediate,
        /// Inside a CSI: parameters and intermediates until a final byte.
        Csi,
        /// Inside an OSC (`osc`: BEL ends it too) or a DCS, SOS, PM or APC string, until
        /// ST; `escape`: just after an ESC, whose `\` makes the ST.
        Str {
            osc: bool,
            escape: bool,
        },
    }
    let mut out = String::with_capacity(text.len());
    let mut state = State::Text;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        state = match state {
            State::Text => match c {
                '\u{1b}' => State::Escape,
                '\u{9b}' => State::Csi,
                '\u{9d}' => State::Str {
                    osc: true,
                    escape: false,
                },
                '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => State::Str {
                    osc: false,
                    escape: false,
                },
                '\r' if chars.peek() == Some(&'\n') => State::Text,
                c => {
                    out.push(c);
                    State::Text
                }
            },
            State::Escape => match c {
                '[' => State::Csi,
                ']' => State::Str {
                    osc: true,
                    escape: false,
                },
                'P' | 'X' | '^' | '_' => State::Str {
                    osc: false,
                    escape: false,
                },
                '\u{20}'..='\u{2f}' => State::Intermediate,
                '\u{30}'..='\u{7e}' => State::Text,
                // A lone ESC: dropped, what follows is text again.
                '\u{1b}' => State::Escape,
                c => {
                    out.push(c);
                    State::Text
                }
            },
            State::Intermediate => match c {
                '\u{20}'..='\u{2f}' => State::Intermediate,
                '\u{30}'..='\u{7e}' => State::Text,
                c => {
                    out.push(c);
                    State::Text
                }
            },
            State::Csi => match c {
                '\u{20}'..='\u{3f}' => State::Csi,
                '\u{40}'..='\u{7e}' => State::Text,
                // Malformed: the sequence ends, the character is text.
                '\u{1b}' => State::Escape,
                c => {
                    out.push(c);
                    State::Text
                }
            },
            State::Str { osc, escape } => match c {
                '\n' => {
                    out.push('\n');
                    State::Text
                }
                '\u{7}' if osc => State::Text,
                '\u{9c}' => State::Text,
                '\\' if escape => State::Text,
                '\u{1b}' => State::Str { osc, escape: true },
                _ => State::Str { osc, escape: false },
            },
        };
    }
    out
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
    fn the_ascii_shortcut_escapes_exactly_the_characters_needs_escape_names() {
        for b in 0u8..=0x7f {
            let c = char::from(b);
            let text = format!("ok{c}ok");
            assert_eq!(
                matches!(escape_untrusted(&text), Cow::Owned(_)),
                needs_escape(c),
                "{b:#04x}"
            );
        }
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
    fn log_tails_lose_terminal_escapes_and_keep_their_lines() {
        // Colours (CSI), a window title (OSC ended by BEL), an OSC 8 hyperlink (ended by
        // ST) whose text stays, a charset switch (ESC ( B) and a cursor save (ESC 7).
        let log = b"\x1b[31;1mERROR\x1b[0m boom\r\n\x1b]0;pwned\x07title gone\n\
            see \x1b]8;;https://evil.example/\x1b\\the docs\x1b]8;;\x1b\\ now\n\
            \x1b(Bcharset\x1b7 saved";
        assert_eq!(
            log_tail_for_display(log, 1000),
            "ERROR boom\ntitle gone\nsee the docs now\ncharset saved"
        );
    }

    #[test]
    fn log_tails_strip_c1_forms_and_open_strings_end_at_the_line() {
        // 8-bit CSI (U+009B) and OSC (U+009D, ended by U+009C); a DCS left open swallows
        // the rest of its line only.
        let log = "\u{9b}32mgreen\u{9d}2;t\u{9c}!\n\u{1b}Pq#0;2;0;0;0 sixel\nnext line";
        assert_eq!(
            log_tail_for_display(log.as_bytes(), 1000),
            "green!\n\nnext line"
        );
    }

    #[test]
    fn log_tails_show_bad_utf8_controls_and_bidi_visibly() {
        let log = b"bad \xff\xfe byte\ta\rb \xe2\x80\xae evil\x08";
        assert_eq!(
            log_tail_for_display(log, 1000),
            "bad \u{fffd}\u{fffd} byte\\ta\\rb \\u{202e} evil\\u{8}"
        );
    }

    #[test]
    fn log_tails_keep_the_end_cut_on_a_character_boundary() {
        // 8 characters, 3 of them multi-byte: the last 5 are kept whole.
        let log = "éé\nabç€z".as_bytes();
        assert_eq!(log_tail_for_display(log, 5), "…abç€z");
        assert_eq!(log_tail_for_display(log, 6), "…\nabç€z");
        assert_eq!(log_tail_for_display(log, 8), "éé\nabç€z");
        assert_eq!(log_tail_for_display(log, 0), "…");
        assert_eq!(log_tail_for_display(b"", 0), "");
        // A truncated escape never shows: the cut is made after stripping.
        assert_eq!(log_tail_for_display(b"\x1b[31mred", 3), "red");
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
