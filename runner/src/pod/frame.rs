//! The agent's framed messages (content/pods.md, The agent): what `referee agent` writes
//! on its standard output, which `srun` carries back to the evaluator. A frame is a
//! header line `referee-frame/1 <length>\n`, then `length` bytes of JSON (one
//! [`AgentMessage`]), then `\n`. Anything else on the stream is an error: the agent's
//! own diagnostics go to its standard error.

use std::collections::BTreeMap;
use std::io::{self, BufRead, Read, Write};

use receipts::model::{Phase, StepStatus};
use serde::{Deserialize, Serialize};

/// The header of every frame, before its length.
pub const FRAME_MAGIC: &str = "referee-frame/1";

/// Largest frame body read, bytes (1 MiB): a frame holds one step's summary, never bulk
/// data (files go through the staging directory).
pub const MAX_FRAME_BYTES: usize = 1 << 20;

/// One message of the agent to the evaluator.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum AgentMessage {
    /// The agent started: what it is and what it sees.
    #[serde(rename_all = "camelCase")]
    Hello {
        /// sha256 of the agent's own executable, as the pod reads it.
        agent_sha256: String,
        /// The pod's host name.
        node: String,
        /// `CUDA_VISIBLE_DEVICES` as the scheduler set it (empty: none).
        gpus: String,
        /// The agent's whole environment, for the evaluator to check that nothing of its
        /// own (a key above all) reached the pod.
        environment: BTreeMap<String, String>,
    },
    /// A setup step ended on the pod.
    #[serde(rename_all = "camelCase")]
    Step {
        /// Its phase.
        phase: Phase,
        /// Its name, in the words of content/rounds.md.
        name: String,
        /// How it ended.
        status: StepStatus,
        /// What it did, one line per item (a file verified, a weight fetched).
        detail: Vec<String>,
    },
    /// A run of a pass ended on the pod (`referee agent --pass N`): its round journal
    /// record, which the evaluator checks and journals.
    #[serde(rename_all = "camelCase")]
    Run {
        /// The run's journal record (`runner::round::record::EntryRecord`), as JSON.
        record: serde_json::Value,
        /// How long its engines ran on the pod (start to stop), ms: the round's engine
        /// time, as a local round counts it (0 from an agent of an older build).
        #[serde(default)]
        engine_ms: u64,
    },
    /// The agent finished everything it was asked to do.
    Done,
}

/// Why a stream of frames could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// Reading the stream failed.
    #[error("reading the agent's output: {0}")]
    Io(#[from] io::Error),
    /// A line that is not a frame header.
    #[error("the agent wrote `{line}` where a frame header `{FRAME_MAGIC} <length>` belongs")]
    NotAFrame {
        /// The line, at most 80 characters of it, escaped.
        line: String,
    },
    /// A frame longer than [`MAX_FRAME_BYTES`].
    #[error("a frame of {length} bytes is over the {MAX_FRAME_BYTES}-byte limit")]
    TooLarge {
        /// The length its header claims.
        length: usize,
    },
    /// The stream ended inside a frame.
    #[error("the agent's output ended inside a frame")]
    Truncated,
    /// A frame whose body is not a message.
    #[error("a frame that is not an agent message: {0}")]
    Json(#[from] serde_json::Error),
}

/// Writes `message` as one frame and flushes it, so the evaluator sees each step as it
/// ends.
///
/// Errors: the I/O error of `out`.
pub fn write_frame(out: &mut dyn Write, message: &AgentMessage) -> io::Result<()> {
    let body = serde_json::to_vec(message).map_err(io::Error::other)?;
    writeln!(out, "{FRAME_MAGIC} {}", body.len())?;
    out.write_all(&body)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Reads the next frame of `input`: `Ok(None)` at the end of the stream between frames.
///
/// Errors: [`FrameError`] for anything but whole frames.
pub fn read_frame(input: &mut dyn BufRead) -> Result<Option<AgentMessage>, FrameError> {
    let mut header = Vec::new();
    // The header is short: read at most a line of 64 bytes.
    Read::take(&mut *input, 64).read_until(b'\n', &mut header)?;
    if header.is_empty() {
        return Ok(None);
    }
    let not_a_frame = |header: &[u8]| FrameError::NotAFrame {
        line: receipts::text::escape_untrusted(
            &String::from_utf8_lossy(header.strip_suffix(b"\n").unwrap_or(header))
                .chars()
                .take(80)
                .collect::<String>(),
        )
        .into_owned(),
    };
    let text = std::str::from_utf8(&header).map_err(|_| not_a_frame(&header))?;
    let length = text
        .strip_suffix('\n')
        .and_then(|line| line.strip_prefix(FRAME_MAGIC))
        .and_then(|rest| rest.strip_prefix(' '))
        .filter(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|digits| digits.parse::<usize>().ok())
        .ok_or_else(|| not_a_frame(&header))?;
    if length > MAX_FRAME_BYTES {
        return Err(FrameError::TooLarge { length });
    }
    let mut body = vec![0; length + 1];
    input.read_exact(&mut body).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => FrameError::Truncated,
        _ => FrameError::Io(e),
    })?;
    if body.pop() != Some(b'\n') {
        return Err(FrameError::Truncated);
    }
    Ok(Some(serde_json::from_slice(&body)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step() -> AgentMessage {
        AgentMessage::Step {
            phase: Phase::DownloadingModel,
            name: "Downloading model weights".into(),
            status: StepStatus::Ok,
            detail: vec!["w.bin: cached".into()],
        }
    }

    #[test]
    fn frames_read_back_as_written() {
        let mut out = Vec::new();
        write_frame(&mut out, &step()).unwrap();
        write_frame(&mut out, &AgentMessage::Done).unwrap();
        let done = b"{\"kind\":\"done\"}";
        assert!(out.ends_with(&[b"referee-frame/1 15\n".as_slice(), done, b"\n"].concat()));
        let mut input = out.as_slice();
        assert_eq!(read_frame(&mut input).unwrap(), Some(step()));
        assert_eq!(read_frame(&mut input).unwrap(), Some(AgentMessage::Done));
        assert_eq!(read_frame(&mut input).unwrap(), None);
    }

    #[test]
    fn anything_but_whole_frames_is_refused() {
        let refused = |bytes: &[u8]| read_frame(&mut &bytes[..]).unwrap_err().to_string();
        assert_eq!(
            refused(b"hello\n"),
            "the agent wrote `hello` where a frame header `referee-frame/1 <length>` belongs"
        );
        assert_eq!(
            refused(b"referee-frame/1 -3\n"),
            "the agent wrote `referee-frame/1 -3` where a frame header `referee-frame/1 <length>` belongs"
        );
        assert_eq!(
            refused(b"referee-frame/1 1048577\n"),
            "a frame of 1048577 bytes is over the 1048576-byte limit"
        );
        assert_eq!(
            refused(b"referee-frame/1 15\n{\"kind\":\"do"),
            "the agent's output ended inside a frame"
        );
        assert_eq!(
            refused(b"referee-frame/1 15\n{\"kind\":\"done\"}X"),
            "the agent's output ended inside a frame"
        );
        assert!(
            refused(b"referee-frame/1 2\n{}\n").starts_with("a frame that is not an agent message")
        );
    }
}
