//! Incremental parser of an OpenAI completions stream (`text/event-stream`): bytes in,
//! events out. Each `data:` event is one JSON chunk; `data: [DONE]` ends the stream.
//! Every chunk with a non-empty `choices` array counts as one streamed token arrival; a
//! `usage.completion_tokens` field (vLLM's `stream_options.include_usage`) overrides the
//! count when present. Events are parsed in place: a read that holds whole events is not
//! copied.

use std::borrow::Cow;

/// What one complete event of the stream carried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SseEvent {
    /// A chunk with at least one choice: one token arrival.
    Token,
    /// A chunk reporting usage: the server's count of output tokens.
    Usage {
        /// `usage.completion_tokens`.
        completion_tokens: u64,
    },
    /// A chunk with neither (e.g. an empty keep-alive object).
    Other,
    /// `data: [DONE]`.
    Done,
}

/// The stream is not an OpenAI completions stream.
#[derive(Debug, thiserror::Error)]
#[error("bad event stream: {message}")]
pub struct SseError {
    /// What is wrong, with the offending text cut to 200 bytes.
    pub message: String,
}

/// Buffers bytes until a blank line ends an event.
#[derive(Debug, Default)]
pub struct SseParser {
    buffer: Vec<u8>,
}

/// Largest event accepted, bytes: a server streaming garbage without blank lines must
/// not grow the buffer without bound.
const MAX_EVENT_BYTES: usize = 1 << 20;

impl SseParser {
    /// Feeds `bytes`; appends every event completed by them to `out`.
    ///
    /// Errors: an event that is not JSON or `[DONE]`, an `error` object from the server,
    /// or an event over 1 MiB.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if self.buffer.is_empty() {
            // The usual case: parse straight from the read, keep only a partial tail.
            let rest = parse_events(bytes, out)?;
            self.buffer.extend_from_slice(rest);
        } else {
            self.buffer.extend_from_slice(bytes);
            let consumed = self.buffer.len() - parse_events(&self.buffer, out)?.len();
            self.buffer.drain(..consumed);
        }
        if self.buffer.len() > MAX_EVENT_BYTES {
            return Err(SseError {
                message: format!("event longer than {MAX_EVENT_BYTES} bytes"),
            });
        }
        Ok(())
    }
}

/// Parses every complete event of `bytes` into `out`; returns the incomplete tail.
fn parse_events<'a>(mut bytes: &'a [u8], out: &mut Vec<SseEvent>) -> Result<&'a [u8], SseError> {
    while let Some((end, sep)) = find_event_end(bytes) {
        if let Some(parsed) = parse_event(&bytes[..end])? {
            out.push(parsed);
        }
        bytes = &bytes[end + sep..];
    }
    Ok(bytes)
}

/// Position and length of the first blank-line separator (`\n\n` or `\r\n\r\n`).
fn find_event_end(buffer: &[u8]) -> Option<(usize, usize)> {
    let lf = buffer.windows(2).position(|w| w == b"\n\n").map(|p| (p, 2));
    let crlf = buffer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|p| (p, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

fn parse_event(event: &[u8]) -> Result<Option<SseEvent>, SseError> {
    let text = std::str::from_utf8(event).map_err(|_| SseError {
        message: "event is not UTF-8".into(),
    })?;
    let mut data = Cow::Borrowed("");
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("data:") {
            let rest = rest.strip_prefix(' ').unwrap_or(rest);
            if data.is_empty() {
                data = Cow::Borrowed(rest);
            } else {
                let joined = data.to_mut();
                joined.push('\n');
                joined.push_str(rest);
            }
        }
        // Comments (`:`), `event:`, `id:` and `retry:` lines carry nothing we measure.
    }
    if data.is_empty() {
        return Ok(None);
    }
    if data.trim() == "[DONE]" {
        return Ok(Some(SseEvent::Done));
    }
    let value: serde_json::Value = serde_json::from_str(&data).map_err(|e| SseError {
        message: format!("`{}`: {e}", cut(&data)),
    })?;
    if value.get("error").is_some() {
        return Err(SseError {
            message: format!("server error event `{}`", cut(&data)),
        });
    }
    if value
        .get("choices")
        .and_then(|c| c.as_array())
        .is_some_and(|c| !c.is_empty())
    {
        return Ok(Some(SseEvent::Token));
    }
    if let Some(tokens) = value
        .get("usage")
        .and_then(|u| u.get("completion_tokens"))
        .and_then(|t| t.as_u64())
    {
        return Ok(Some(SseEvent::Usage {
            completion_tokens: tokens,
        }));
    }
    Ok(Some(SseEvent::Other))
}

fn cut(text: &str) -> &str {
    let mut end = text.len().min(200);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(chunks: &[&[u8]]) -> Result<Vec<SseEvent>, SseError> {
        let mut parser = SseParser::default();
        let mut out = Vec::new();
        for chunk in chunks {
            parser.feed(chunk, &mut out)?;
        }
        Ok(out)
    }

    #[test]
    fn events_split_across_reads() {
        let events = parse_all(&[
            b"data: {\"choices\":[{\"text\":\"a\"}]}\n",
            b"\ndata: {\"choices\":[{\"text\":\"b\"}]}\r\n\r\n: keep-alive\n\n",
            b"data: {\"choices\":[],\"usage\":{\"completion_tokens\":2}}\n\ndata: [DONE]\n\n",
        ])
        .unwrap();
        assert_eq!(
            events,
            vec![
                SseEvent::Token,
                SseEvent::Token,
                SseEvent::Usage {
                    completion_tokens: 2
                },
                SseEvent::Done
            ]
        );
    }

    #[test]
    fn odd_chunks() {
        let cases: [(&[u8], SseEvent); 9] = [
            (b"data: {\"choices\":[]}\n\n", SseEvent::Other),
            (
                b"data: {\"choices\":null,\"usage\":null}\n\n",
                SseEvent::Other,
            ),
            (b"data: {\"choices\":{\"a\":1}}\n\n", SseEvent::Other),
            (b"data: {\"usage\":[5]}\n\n", SseEvent::Other),
            (
                b"data: {\"usage\":{\"completion_tokens\":1.5}}\n\n",
                SseEvent::Other,
            ),
            (b"data: [1,2]\n\n", SseEvent::Other),
            (
                b"data: {\"usage\":{\"completion_tokens\":2,\"completion_tokens\":3}}\n\n",
                SseEvent::Usage {
                    completion_tokens: 3,
                },
            ),
            (
                b"data: {\"choices\":[1],\"choices\":[]}\n\n",
                SseEvent::Other,
            ),
            (
                b"data: {\"ch\\u006fices\":[{}]}\n\ndata: [DONE]\n\n",
                SseEvent::Token,
            ),
        ];
        for (bytes, expected) in cases {
            let events = parse_all(&[bytes]).unwrap();
            assert_eq!(events[0], expected, "{}", String::from_utf8_lossy(bytes));
        }
        assert!(parse_all(&[b"data: {\"error\":null}\n\n"]).is_err());
        // A multi-line data field is joined with newlines.
        assert_eq!(
            parse_all(&[b"data: {\"choices\":\ndata: [0]}\n\n"]).unwrap(),
            vec![SseEvent::Token]
        );
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(parse_all(&[b"data: {nope\n\n"]).is_err());
        assert!(parse_all(&[b"data: {\"error\":{\"message\":\"x\"}}\n\n"]).is_err());
    }
}
