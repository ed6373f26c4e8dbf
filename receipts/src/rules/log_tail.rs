//! The log tail a disqualification carries (content/rounds.md, Log tails): the end of an
//! engine's log, bounded so that nothing an engine prints can make a receipt too large to
//! verify. An engine is a miner's code: one 16 MiB line, or 300 MiB of output, must cost
//! the receipt at most [`LOG_TAIL_BYTES`].
//!
//! The rule, over the bytes of the kept log:
//! 1. the window is the last [`LOG_TAIL_WINDOW_BYTES`] bytes (all of a shorter log); a
//!    window that starts inside a line marks that line's start as cut ([`CUT_BEFORE`]);
//! 2. the window is split into lines at `\n` (a trailing `\r` is kept as text; the empty
//!    piece after a final `\n` is not a line), each decoded as UTF-8 with U+FFFD for
//!    invalid bytes;
//! 3. at most the last [`LOG_TAIL_LINES`] lines are kept;
//! 4. a line over [`LOG_TAIL_LINE_BYTES`] bytes keeps its longest prefix of whole
//!    characters that fits, followed by the marker `… [N bytes cut]`, N being the bytes
//!    of decoded text dropped;
//! 5. while the lines' bytes (markers included) sum to more than [`LOG_TAIL_BYTES`], the
//!    oldest line is dropped.
//!
//! Step 1 needs only the log's last [`LOG_TAIL_READ_BYTES`]: the runner and the verifier
//! each read those from the file and call [`log_tail_of_end`], the one function both use,
//! so a huge log costs one bounded read and the verifier recomputes exactly what the
//! runner sealed (its check `logs.tail`).

/// Most lines a log tail keeps.
pub const LOG_TAIL_LINES: usize = 50;

/// Most bytes one line of a log tail keeps before its marker.
pub const LOG_TAIL_LINE_BYTES: usize = 1024;

/// Most bytes a whole log tail holds, markers included (UTF-8 bytes of its lines).
pub const LOG_TAIL_BYTES: usize = 8 * 1024;

/// How many bytes at the end of a log the tail is taken from: enough for
/// [`LOG_TAIL_LINES`] lines of [`LOG_TAIL_LINE_BYTES`] with room to spare.
pub const LOG_TAIL_WINDOW_BYTES: u64 = 64 * 1024;

/// How many bytes at the end of a log [`log_tail_of_end`] needs: the window and the byte
/// before it, which tells whether the window starts inside a line.
pub const LOG_TAIL_READ_BYTES: u64 = LOG_TAIL_WINDOW_BYTES + 1;

/// The marker that starts a line whose beginning lies before the window.
pub const CUT_BEFORE: &str = "[… earlier bytes cut] ";

/// The most bytes a log tail takes in a receipt's canonical JSON: every byte of its
/// [`LOG_TAIL_BYTES`] escaped at worst as `\u00XX` (6 bytes), each line's quotes and
/// comma, the brackets. What one disqualification's tail can cost the envelope, whose
/// read limit (`bundle::MAX_ENVELOPE_BYTES`) the verifier applies.
pub const MAX_LOG_TAIL_JSON_BYTES: usize = 6 * LOG_TAIL_BYTES + 3 * LOG_TAIL_LINES + 2;

/// The log tail of a log whose last bytes are `end`: its last [`LOG_TAIL_READ_BYTES`]
/// (all of a shorter log; fewer means `end` is the whole log). The module's whole rule,
/// steps 1–5: at most [`LOG_TAIL_LINES`] lines, together at most [`LOG_TAIL_BYTES`].
pub fn log_tail_of_end(end: &[u8]) -> Vec<String> {
    let window = usize::try_from(LOG_TAIL_WINDOW_BYTES).unwrap_or(usize::MAX);
    match end.len().checked_sub(window) {
        Some(before) if before > 0 => log_tail_of_window(&end[before..], end[before - 1] != b'\n'),
        _ => log_tail_of_window(end, false),
    }
}

/// The log tail of a log whose last bytes are `window`, `window_starts_mid_line` when the
/// byte before the window exists and is not `\n` (steps 2–5 of the module's rule).
fn log_tail_of_window(window: &[u8], window_starts_mid_line: bool) -> Vec<String> {
    let body = window.strip_suffix(b"\n").unwrap_or(window);
    if body.is_empty() && !window.is_empty() {
        return vec![String::new()];
    }
    if body.is_empty() {
        return Vec::new();
    }
    let pieces: Vec<&[u8]> = body.split(|&b| b == b'\n').collect();
    let first_kept = pieces.len().saturating_sub(LOG_TAIL_LINES);
    let mut lines: Vec<String> = pieces[first_kept..]
        .iter()
        .enumerate()
        .map(|(i, piece)| {
            let text = bounded_line(&String::from_utf8_lossy(piece));
            if i == 0 && first_kept == 0 && window_starts_mid_line {
                format!("{CUT_BEFORE}{text}")
            } else {
                text
            }
        })
        .collect();
    let mut total: usize = lines.iter().map(String::len).sum();
    let mut drop = 0;
    while total > LOG_TAIL_BYTES && drop < lines.len() {
        total -= lines[drop].len();
        drop += 1;
    }
    lines.drain(..drop);
    lines
}

/// Step 4: `line` cut to [`LOG_TAIL_LINE_BYTES`] on a character boundary, with the marker.
fn bounded_line(line: &str) -> String {
    if line.len() <= LOG_TAIL_LINE_BYTES {
        return line.to_owned();
    }
    let mut end = LOG_TAIL_LINE_BYTES;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} bytes cut]", &line[..end], line.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The tail of a whole log in memory: its last [`LOG_TAIL_READ_BYTES`], as the runner
    /// and the verifier read them from the file.
    fn log_tail(log: &[u8]) -> Vec<String> {
        let read = usize::try_from(LOG_TAIL_READ_BYTES).unwrap_or(usize::MAX);
        log_tail_of_end(&log[log.len().saturating_sub(read)..])
    }

    #[test]
    fn a_short_log_is_its_lines() {
        assert_eq!(log_tail(b""), Vec::<String>::new());
        assert_eq!(log_tail(b"\n"), vec![String::new()]);
        assert_eq!(log_tail(b"a\nb\n"), vec!["a", "b"]);
        assert_eq!(log_tail(b"a\n\nb"), vec!["a", "", "b"]);
        assert_eq!(log_tail(b"a\r\n"), vec!["a\r"]);
    }

    #[test]
    fn only_the_last_fifty_lines_are_kept() {
        let log: String = (0..120).map(|i| format!("line {i}\n")).collect();
        let tail = log_tail(log.as_bytes());
        assert_eq!(tail.len(), LOG_TAIL_LINES);
        assert_eq!(tail[0], "line 70");
        assert_eq!(tail[49], "line 119");
    }

    #[test]
    fn a_long_line_is_cut_on_a_character_boundary_with_its_marker() {
        // 1023 ASCII bytes then a 3-byte character straddling the 1 KiB limit: it goes
        // whole, with the 4 bytes after it.
        let line = format!("{}€tail", "x".repeat(1023));
        let tail = log_tail(line.as_bytes());
        assert_eq!(tail, vec![format!("{}… [7 bytes cut]", "x".repeat(1023))]);
    }

    #[test]
    fn invalid_utf8_is_replaced_not_refused() {
        assert_eq!(
            log_tail(b"ok \xff\xfe end\n"),
            vec!["ok \u{fffd}\u{fffd} end"]
        );
    }

    /// One 16 MiB line and exit (the attack of issue 39): the tail is its last window,
    /// marked as cut at both ends, and far under the receipt's budget.
    #[test]
    fn a_sixteen_mebibyte_line_costs_one_kibibyte() {
        let log = vec![b'A'; 16 << 20];
        let tail = log_tail(&log);
        let window = usize::try_from(LOG_TAIL_WINDOW_BYTES).expect("fits");
        assert_eq!(
            tail,
            vec![format!(
                "{CUT_BEFORE}{}… [{} bytes cut]",
                "A".repeat(LOG_TAIL_LINE_BYTES),
                window - LOG_TAIL_LINE_BYTES
            )]
        );
    }

    /// Fifty lines of 1 KiB each would be 50 KiB: the oldest go until 8 KiB remain.
    #[test]
    fn the_whole_tail_fits_its_byte_budget() {
        let line = "y".repeat(2000);
        let log: String = (0..60).map(|_| format!("{line}\n")).collect();
        let tail = log_tail(log.as_bytes());
        let one = format!("{}… [976 bytes cut]", "y".repeat(1024));
        assert_eq!(tail.len(), LOG_TAIL_BYTES / one.len());
        assert!(tail.iter().all(|l| *l == one));
        assert!(tail.iter().map(String::len).sum::<usize>() <= LOG_TAIL_BYTES);
    }

    /// A window that starts at a line's beginning marks nothing.
    #[test]
    fn a_window_on_a_line_boundary_is_not_marked() {
        let window = usize::try_from(LOG_TAIL_WINDOW_BYTES).expect("fits");
        let mut log = vec![b'z'; 100];
        log.push(b'\n');
        let mut rest = vec![b'q'; window - 1];
        rest.push(b'\n');
        log.extend_from_slice(&rest);
        let tail = log_tail(&log);
        assert_eq!(tail.len(), 1);
        assert!(tail[0].starts_with("qqq"));
    }

    /// A log of exactly the window is whole (nothing before it to mark); one byte more
    /// and its first line is marked as cut, by the byte before the window.
    #[test]
    fn the_byte_before_the_window_decides_the_mark() {
        let window = usize::try_from(LOG_TAIL_WINDOW_BYTES).expect("fits");
        let whole = vec![b'w'; window];
        assert_eq!(
            log_tail_of_end(&whole),
            vec![format!(
                "{}… [{} bytes cut]",
                "w".repeat(1024),
                window - 1024
            )]
        );
        let mut longer = vec![b'v'];
        longer.extend_from_slice(&whole);
        assert_eq!(
            log_tail_of_end(&longer),
            vec![format!(
                "{CUT_BEFORE}{}… [{} bytes cut]",
                "w".repeat(1024),
                window - 1024
            )]
        );
        longer[0] = b'\n';
        assert_eq!(log_tail_of_end(&longer), log_tail_of_end(&whole));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Whatever an engine printed — lines of any length, control bytes, invalid UTF-8,
        /// characters straddling every cut — its tail keeps the receipt's bounds: at most
        /// 50 lines and 8 KiB, and at most [`MAX_LOG_TAIL_JSON_BYTES`] of canonical JSON.
        #[test]
        fn any_log_gives_a_tail_within_the_receipts_bounds(
            pieces in proptest::collection::vec(
                prop_oneof![
                    proptest::collection::vec(any::<u8>(), 0..64),
                    (1usize..4000).prop_map(|n| vec![b'\n'; n]),
                    (1usize..70_000).prop_map(|n| "é€\u{1}".repeat(n / 6 + 1).into_bytes()),
                    (1usize..70_000).prop_map(|n| vec![0x1f; n]),
                ],
                0..8,
            ),
        ) {
            let log = pieces.concat();
            let tail = log_tail(&log);
            prop_assert!(tail.len() <= LOG_TAIL_LINES);
            prop_assert!(tail.iter().map(String::len).sum::<usize>() <= LOG_TAIL_BYTES);
            let json = crate::canonical::to_canonical_vec(&tail).expect("strings serialize");
            prop_assert!(json.len() <= MAX_LOG_TAIL_JSON_BYTES, "{}", json.len());
        }
    }
}
