//! Incremental parser of an OpenAI completions stream (`text/event-stream`): bytes in,
//! events out. Each `data:` event is one JSON chunk; `data: [DONE]` ends the stream, and
//! any byte after it is an error. A chunk reports what the client can count itself — the
//! `token_ids` of its one choice (vLLM's `return_token_ids`) and the entries of its
//! `logprobs.tokens` (each one token; its id when written `token_id:<id>`, vLLM's
//! `return_tokens_as_token_ids`) — and the engine's own `usage.completion_tokens` (vLLM's
//! `stream_options.include_usage`), never one from the other. A chunk with neither ids
//! nor logprob tokens (a finish-only chunk) carries no token. Events are parsed in place:
//! a read that holds whole events is not copied.

use std::borrow::Cow;

use receipts::model::Limits;
use serde_json::Value;

/// What one complete event of the stream carried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SseEvent {
    /// A JSON chunk.
    Chunk(Chunk),
    /// `data: [DONE]`.
    Done,
}

/// One JSON chunk of the stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chunk {
    /// The `token_ids` of the chunk's choice (possibly empty); `None` when it has no
    /// choice (a usage-only or keep-alive chunk) or its choice carries no `token_ids`.
    pub token_ids: Option<Vec<u32>>,
    /// The entries of the choice's `logprobs.tokens`, each with its id when written
    /// `token_id:<id>` (else `None`: a token given as text); `None` when the choice has
    /// no `logprobs` (or no choice).
    pub logprob_tokens: Option<Vec<Option<u32>>>,
    /// The choice's generated `text` (empty when it has none): what a client shows, held
    /// against the ids it came with (content/correctness.md, Streamed text against the
    /// ids).
    pub text: String,
    /// `usage.completion_tokens`, when the chunk reports it: the engine's own count.
    pub completion_tokens: Option<u64>,
}

impl Chunk {
    /// Whether the choice carries generated text (a non-empty `text`).
    pub fn has_text(&self) -> bool {
        !self.text.is_empty()
    }
}

/// The stream is not an OpenAI completions stream.
#[derive(Debug, thiserror::Error)]
pub enum SseError {
    /// An event that is not JSON or `[DONE]`, a chunk of the wrong shape, an `error`
    /// object from the server, or an event over 1 MiB.
    #[error("bad event stream: {message}")]
    Malformed {
        /// What is wrong, with the offending text cut to 200 bytes.
        message: String,
    },
    /// The response passed its byte or event budget ([`ResponseBudget`], comments and
    /// empty events included): an engine must not flood its own client.
    #[error("response too large: over {limit} {what}")]
    TooLarge {
        /// `bytes` or `events`.
        what: &'static str,
        /// The budget passed.
        limit: usize,
    },
    /// Bytes arrived after `data: [DONE]`.
    #[error("bad event stream: {bytes} bytes after `data: [DONE]`")]
    AfterDone {
        /// How many arrived in the read that carried them.
        bytes: usize,
    },
}

fn malformed(message: String) -> SseError {
    SseError::Malformed { message }
}

/// Buffers bytes until a blank line ends an event.
#[derive(Debug, Default)]
pub struct SseParser {
    buffer: Vec<u8>,
    done: bool,
    budget: ResponseBudget,
    /// Bytes fed so far.
    received: usize,
    /// Events completed so far, comment-only ones included.
    events: usize,
}

/// What one response may stream before its request fails (the campaign's `[limits]`
/// `response_bytes` and `response_events`; content/threat-model.md, Bounded output).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponseBudget {
    /// Most bytes, comments included.
    pub bytes: usize,
    /// Most events (blank-line separated, comment-only and empty ones included).
    pub events: usize,
}

impl ResponseBudget {
    /// The budget of a campaign's `limits` (a value past `usize` saturates).
    pub fn of(limits: &Limits) -> Self {
        Self {
            bytes: usize::try_from(limits.response_bytes).unwrap_or(usize::MAX),
            events: usize::try_from(limits.response_events).unwrap_or(usize::MAX),
        }
    }
}

impl Default for ResponseBudget {
    /// [`Limits::default`]'s: 16 MiB and 65,536 events.
    fn default() -> Self {
        Self::of(&Limits::default())
    }
}

/// Largest event accepted, bytes: a server streaming garbage without blank lines must
/// not grow the buffer without bound.
const MAX_EVENT_BYTES: usize = 1 << 20;

impl SseParser {
    /// A parser of one response held to `budget`.
    pub fn new(budget: ResponseBudget) -> Self {
        Self {
            budget,
            ..Self::default()
        }
    }

    /// Feeds `bytes`; appends every event completed by them to `out`.
    ///
    /// Errors: [`SseError::AfterDone`] for any byte after `data: [DONE]` (an event, a
    /// comment, a blank line); [`SseError::Malformed`] for an event that is not JSON or
    /// `[DONE]`, a chunk of the wrong shape (`choices` not a list, more than one choice,
    /// a choice that is not an object, `text` not a string, `token_ids` not a list of
    /// 32-bit ids, `usage` without an integer `completion_tokens`), an `error` object
    /// from the server, or an event over 1 MiB.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if self.done {
            return match bytes.len() {
                0 => Ok(()),
                n => Err(SseError::AfterDone { bytes: n }),
            };
        }
        self.received = self.received.saturating_add(bytes.len());
        if self.received > self.budget.bytes {
            return Err(SseError::TooLarge {
                what: "bytes",
                limit: self.budget.bytes,
            });
        }
        let mut events = (&mut self.events, self.budget.events);
        if self.buffer.is_empty() {
            // The usual case: parse straight from the read, keep only a partial tail.
            let rest = parse_events(bytes, out, &mut self.done, &mut events)?;
            self.buffer.extend_from_slice(rest);
        } else {
            self.buffer.extend_from_slice(bytes);
            let rest = parse_events(&self.buffer, out, &mut self.done, &mut events)?.len();
            let consumed = self.buffer.len() - rest;
            self.buffer.drain(..consumed);
        }
        if self.buffer.len() > MAX_EVENT_BYTES {
            return Err(malformed(format!(
                "event longer than {MAX_EVENT_BYTES} bytes"
            )));
        }
        Ok(())
    }
}

/// Parses every complete event of `bytes` into `out`; returns the incomplete tail. Sets
/// `done` at `[DONE]`, after which any byte is an error; counts every event, comment-only
/// ones included, into `events.0`, failing past `events.1`.
fn parse_events<'a>(
    mut bytes: &'a [u8],
    out: &mut Vec<SseEvent>,
    done: &mut bool,
    (events, limit): &mut (&mut usize, usize),
) -> Result<&'a [u8], SseError> {
    while let Some((end, sep)) = find_event_end(bytes) {
        **events += 1;
        if **events > *limit {
            return Err(SseError::TooLarge {
                what: "events",
                limit: *limit,
            });
        }
        let parsed = parse_event(&bytes[..end])?;
        bytes = &bytes[end + sep..];
        if let Some(parsed) = parsed {
            let is_done = parsed == SseEvent::Done;
            out.push(parsed);
            if is_done {
                *done = true;
                if !bytes.is_empty() {
                    return Err(SseError::AfterDone { bytes: bytes.len() });
                }
            }
        }
    }
    Ok(bytes)
}

/// Position and length of the first blank-line separator (`\n\n` or `\r\n\r\n`).
fn find_event_end(buffer: &[u8]) -> Option<(usize, usize)> {
    let lf = buffer.windows(2).position(|w| w == b"\n\n").map(|p| (p, 2));
    // A `\r\n\r\n` that comes first starts before the `\n\n`: searching only there keeps
    // a read of many small events linear (searching the whole buffer for each event made
    // 65,536 one-line events take minutes).
    let scope = lf.map_or(buffer.len(), |(p, _)| (p + 4).min(buffer.len()));
    let crlf = buffer[..scope]
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|p| (p, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

fn parse_event(event: &[u8]) -> Result<Option<SseEvent>, SseError> {
    let text = std::str::from_utf8(event).map_err(|_| malformed("event is not UTF-8".into()))?;
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
    let value: Value =
        serde_json::from_str(&data).map_err(|e| malformed(format!("`{}`: {e}", cut(&data))))?;
    parse_chunk(&value)
        .map(|chunk| Some(SseEvent::Chunk(chunk)))
        .map_err(|why| malformed(format!("{why} in `{}`", cut(&data))))
}

/// Reads a chunk's choice and usage (module docs); the error says what is wrong.
fn parse_chunk(value: &Value) -> Result<Chunk, &'static str> {
    let Value::Object(fields) = value else {
        return Err("a chunk that is not an object");
    };
    if fields.get("error").is_some() {
        return Err("a server error event");
    }
    let mut chunk = Chunk::default();
    let choices = match fields.get("choices") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(choices)) => choices.as_slice(),
        Some(_) => return Err("`choices` that is not a list"),
    };
    match choices {
        [] => {}
        [Value::Object(choice)] => {
            chunk.text = match choice.get("text") {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(text)) => text.clone(),
                Some(_) => return Err("a `text` that is not a string"),
            };
            chunk.token_ids = match choice.get("token_ids") {
                None | Some(Value::Null) => None,
                Some(Value::Array(ids)) => Some(
                    ids.iter()
                        .map(|id| id.as_u64().and_then(|id| u32::try_from(id).ok()))
                        .collect::<Option<Vec<u32>>>()
                        .ok_or("a `token_ids` entry that is not a 32-bit token id")?,
                ),
                Some(_) => return Err("`token_ids` that is not a list"),
            };
            chunk.logprob_tokens = match choice.get("logprobs") {
                None | Some(Value::Null) => None,
                Some(Value::Object(logprobs)) => match logprobs.get("tokens") {
                    None | Some(Value::Null) => None,
                    Some(Value::Array(tokens)) => Some(
                        tokens
                            .iter()
                            .map(|t| t.as_str().map(parse_token_id))
                            .collect::<Option<Vec<Option<u32>>>>()
                            .ok_or("a `logprobs.tokens` entry that is not a string")?,
                    ),
                    Some(_) => return Err("`logprobs.tokens` that is not a list"),
                },
                Some(_) => return Err("`logprobs` that is not an object"),
            };
        }
        [_] => return Err("a choice that is not an object"),
        _ => return Err("more than one choice (requests ask for one)"),
    }
    chunk.completion_tokens = match fields.get("usage") {
        None | Some(Value::Null) => None,
        Some(usage) => Some(
            usage
                .get("completion_tokens")
                .and_then(Value::as_u64)
                .ok_or("`usage` without an integer `completion_tokens`")?,
        ),
    };
    Ok(chunk)
}

/// The id of a token written `token_id:<id>` (vLLM's `return_tokens_as_token_ids`);
/// `None` for any other text.
pub fn parse_token_id(token: &str) -> Option<u32> {
    let digits = token.strip_prefix("token_id:")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
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

    /// The default budget (no `[limits]`): 16 MiB and 65,536 events.
    const MAX_RESPONSE_BYTES: usize = 16 << 20;
    const MAX_RESPONSE_EVENTS: usize = 1 << 16;

    #[test]
    fn the_default_budget_is_the_campaigns_default_limits() {
        assert_eq!(
            ResponseBudget::default(),
            ResponseBudget {
                bytes: MAX_RESPONSE_BYTES,
                events: MAX_RESPONSE_EVENTS
            }
        );
    }

    /// Issue 39's attack: SSE comments until the client gives up. Cut at the byte budget,
    /// however the comments are split into events.
    #[test]
    fn a_comment_flood_is_cut_at_the_byte_budget() {
        let mut parser = SseParser::default();
        let mut out = Vec::new();
        let comment = format!(": {}\n\n", "x".repeat(1 << 16));
        let mut fed = 0;
        let error = loop {
            match parser.feed(comment.as_bytes(), &mut out) {
                Ok(()) => fed += comment.len(),
                Err(e) => break e,
            }
        };
        assert!(matches!(
            error,
            SseError::TooLarge {
                what: "bytes",
                limit: MAX_RESPONSE_BYTES
            }
        ));
        assert!(fed <= MAX_RESPONSE_BYTES && fed + comment.len() > MAX_RESPONSE_BYTES);
        assert!(out.is_empty());
    }

    /// Tiny events, each under every other limit: cut at the event budget.
    #[test]
    fn an_event_flood_is_cut_at_the_event_budget() {
        let events = ":\n\n".repeat(MAX_RESPONSE_EVENTS);
        let mut parser = SseParser::default();
        let mut out = Vec::new();
        parser
            .feed(events.as_bytes(), &mut out)
            .expect("at the budget");
        let error = parser.feed(b":\n\n", &mut out).expect_err("one more");
        assert!(matches!(
            error,
            SseError::TooLarge {
                what: "events",
                limit: MAX_RESPONSE_EVENTS
            }
        ));
        assert_eq!(error.to_string(), "response too large: over 65536 events");
    }

    /// A campaign's own `[limits]`: the parser holds the response to them exactly.
    #[test]
    fn a_campaigns_budget_is_held_exactly() {
        let budget = ResponseBudget {
            bytes: 4096,
            events: 3,
        };
        let mut out = Vec::new();
        let mut parser = SseParser::new(budget);
        parser
            .feed(&[b':'; 4096], &mut out)
            .expect("at the byte budget");
        assert_eq!(
            parser
                .feed(b":", &mut out)
                .expect_err("one byte more")
                .to_string(),
            "response too large: over 4096 bytes"
        );
        let mut parser = SseParser::new(budget);
        parser
            .feed(b":\n\n:\n\n:\n\n", &mut out)
            .expect("at the event budget");
        assert_eq!(
            parser
                .feed(b":\n\n", &mut out)
                .expect_err("one more")
                .to_string(),
            "response too large: over 3 events"
        );
        assert!(out.is_empty());
    }

    fn ids(token_ids: &[u32], text: &str) -> SseEvent {
        SseEvent::Chunk(Chunk {
            token_ids: Some(token_ids.to_vec()),
            text: text.to_owned(),
            ..Chunk::default()
        })
    }

    fn logprobs(tokens: &[Option<u32>], text: &str) -> SseEvent {
        SseEvent::Chunk(Chunk {
            logprob_tokens: Some(tokens.to_vec()),
            text: text.to_owned(),
            ..Chunk::default()
        })
    }

    fn usage(completion_tokens: u64) -> SseEvent {
        SseEvent::Chunk(Chunk {
            completion_tokens: Some(completion_tokens),
            ..Chunk::default()
        })
    }

    #[test]
    fn events_split_across_reads() {
        let events = parse_all(&[
            b"data: {\"choices\":[{\"text\":\"a\",\"token_ids\":[7]}]}\n",
            b"\ndata: {\"choices\":[{\"text\":\"bc\",\"token_ids\":[8,9]}]}\r\n\r\n: keep-alive\n\n",
            b"data: {\"choices\":[],\"usage\":{\"completion_tokens\":3}}\n\ndata: [DONE]\n\n",
        ])
        .unwrap();
        assert_eq!(
            events,
            vec![ids(&[7], "a"), ids(&[8, 9], "bc"), usage(3), SseEvent::Done]
        );
    }

    #[test]
    fn chunk_shapes() {
        let no_ids = |text: &str| {
            SseEvent::Chunk(Chunk {
                text: text.to_owned(),
                ..Chunk::default()
            })
        };
        let cases: [(&[u8], SseEvent); 12] = [
            (b"data: {\"choices\":[]}\n\n", no_ids("")),
            (
                b"data: {\"choices\":null,\"usage\":null}\n\n",
                no_ids(""),
            ),
            (b"data: {}\n\n", no_ids("")),
            // A finish-only choice: no text, no ids.
            (
                b"data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"length\"}]}\n\n",
                no_ids(""),
            ),
            (b"data: {\"choices\":[{\"text\":\"x\"}]}\n\n", no_ids("x")),
            (
                b"data: {\"choices\":[{\"text\":\"\",\"token_ids\":[]}]}\n\n",
                ids(&[], ""),
            ),
            (
                b"data: {\"usage\":{\"completion_tokens\":2,\"completion_tokens\":3}}\n\n",
                usage(3),
            ),
            (
                b"data: {\"choices\":[{\"token_ids\":[1]}],\"choices\":[]}\n\n",
                no_ids(""),
            ),
            (
                b"data: {\"ch\\u006fices\":[{\"token_ids\":[4294967295]}]}\n\ndata: [DONE]\n\n",
                ids(&[u32::MAX], ""),
            ),
            // Logprob tokens: by id, by text, and a finish-only chunk's null logprobs.
            (
                b"data: {\"choices\":[{\"text\":\"ab\",\"logprobs\":{\"tokens\":[\"token_id:7\",\"token_id:8\"]}}]}\n\n",
                logprobs(&[Some(7), Some(8)], "ab"),
            ),
            (
                b"data: {\"choices\":[{\"text\":\" a\",\"logprobs\":{\"tokens\":[\" a\"],\"top_logprobs\":[{\" a\":-0.1}]}}]}\n\n",
                logprobs(&[None], " a"),
            ),
            (
                b"data: {\"choices\":[{\"text\":\"\",\"logprobs\":null,\"finish_reason\":\"length\"}]}\n\n",
                no_ids(""),
            ),
        ];
        for (bytes, expected) in cases {
            let events = parse_all(&[bytes]).unwrap();
            assert_eq!(events[0], expected, "{}", String::from_utf8_lossy(bytes));
        }
        // A multi-line data field is joined with newlines.
        assert_eq!(
            parse_all(&[b"data: {\"choices\":\ndata: [{\"token_ids\":[5]}]}\n\n"]).unwrap(),
            vec![ids(&[5], "")]
        );
    }

    #[test]
    fn wrong_shapes_and_garbage_are_malformed() {
        for bytes in [
            &b"data: {nope\n\n"[..],
            b"data: {\"error\":{\"message\":\"x\"}}\n\n",
            b"data: {\"error\":null}\n\n",
            b"data: [1,2]\n\n",
            b"data: {\"choices\":{\"a\":1}}\n\n",
            b"data: {\"choices\":[1]}\n\n",
            b"data: {\"choices\":[{},{}]}\n\n",
            b"data: {\"choices\":[{\"text\":5}]}\n\n",
            b"data: {\"choices\":[{\"token_ids\":7}]}\n\n",
            b"data: {\"choices\":[{\"token_ids\":[-1]}]}\n\n",
            b"data: {\"choices\":[{\"token_ids\":[4294967296]}]}\n\n",
            b"data: {\"choices\":[{\"token_ids\":[1.5]}]}\n\n",
            b"data: {\"usage\":[5]}\n\n",
            b"data: {\"usage\":{\"completion_tokens\":1.5}}\n\n",
            b"data: {\"choices\":[{\"logprobs\":[1]}]}\n\n",
            b"data: {\"choices\":[{\"logprobs\":{\"tokens\":\"a\"}}]}\n\n",
            b"data: {\"choices\":[{\"logprobs\":{\"tokens\":[3]}}]}\n\n",
        ] {
            let error = parse_all(&[bytes]).unwrap_err();
            assert!(
                matches!(error, SseError::Malformed { .. }),
                "{}: {error:?}",
                String::from_utf8_lossy(bytes)
            );
        }
    }

    #[test]
    fn token_id_strings() {
        assert_eq!(parse_token_id("token_id:0"), Some(0));
        assert_eq!(parse_token_id("token_id:4294967295"), Some(u32::MAX));
        for text in [
            "token_id:",
            "token_id:4294967296",
            "token_id:+1",
            "token_id: 1",
            "7",
            "a",
        ] {
            assert_eq!(parse_token_id(text), None, "{text}");
        }
    }

    #[test]
    fn bytes_after_done_are_an_error() {
        let after_done = |reads: &[&[u8]]| match parse_all(reads) {
            Err(SseError::AfterDone { bytes }) => bytes,
            other => panic!("{other:?}"),
        };
        // In the same read, in a later read, a comment, a lone newline.
        assert_eq!(after_done(&[b"data: [DONE]\n\ndata: {}\n\n"]), 10);
        assert_eq!(after_done(&[b"data: [DONE]\n\n", b"x"]), 1);
        assert_eq!(after_done(&[b"data: [DO", b"NE]\n\n: ping\n\n"]), 8);
        assert_eq!(after_done(&[b"data: [DONE]\n\n\n"]), 1);
        // An empty read after it is no byte.
        assert_eq!(
            parse_all(&[b"data: [DONE]\n\n", b""]).unwrap(),
            vec![SseEvent::Done]
        );
    }
}
