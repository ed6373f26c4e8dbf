//! The optional LLM review: a reviewer behind [`LlmReviewer`] reads the tree and the static
//! findings and answers a verdict and a transcript. The one implementation,
//! [`CommandReviewer`], runs a command the campaign names (none by default).

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use receipts::fsutil::read_to_limit;
use receipts::model::Sha256Hex;
use receipts::text::log_tail_for_display;
use serde::Serialize;

use crate::{Finding, Verdict};

/// The most stdout a reviewer may print (its transcript), in bytes.
pub const MAX_TRANSCRIPT_BYTES: usize = 1 << 20;

/// How much of a failed reviewer's stderr its error keeps, in characters.
const STDERR_TAIL_CHARS: usize = 2000;

/// What a reviewer is given.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LlmRequest<'a> {
    /// The submission's tree.
    pub tree: &'a Path,
    /// The digest of the rules file the findings come from.
    pub rules_digest: Sha256Hex,
    /// The static findings.
    pub findings: &'a [Finding],
}

pub use receipts::model::LlmReview;

/// Why a reviewer gave no verdict.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The command could not be started or its pipes failed.
    #[error("LLM review command `{command}` could not run")]
    Spawn {
        /// The command.
        command: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The command exited unsuccessfully.
    #[error("LLM review command `{command}` exited with {status}; stderr ends: {stderr_tail}")]
    Exited {
        /// The command.
        command: String,
        /// Its exit status, as the OS words it.
        status: String,
        /// The end of its stderr, escaped for a terminal.
        stderr_tail: String,
    },
    /// Its first line is not `PASS`, `FAIL` or `NEEDS-HUMAN`.
    #[error(
        "LLM review command `{command}` printed no verdict: its first line is {first_line:?}, not PASS, FAIL or NEEDS-HUMAN"
    )]
    NoVerdict {
        /// The command.
        command: String,
        /// The first line, escaped and cut to 200 characters.
        first_line: String,
    },
    /// It printed more than [`MAX_TRANSCRIPT_BYTES`], or bytes that are not UTF-8.
    #[error("LLM review command `{command}` printed {what}")]
    BadTranscript {
        /// The command.
        command: String,
        /// `more than 1048576 bytes` or `text that is not UTF-8`.
        what: String,
    },
}

/// A reviewer of a tree and its static findings.
pub trait LlmReviewer {
    /// Reviews `request`.
    ///
    /// Errors: [`LlmError`] when no verdict comes back.
    fn review(&self, request: &LlmRequest<'_>) -> Result<LlmReview, LlmError>;
}

/// A reviewer that runs a command through `sh -c`, with the tree's path appended as its last
/// argument and the [`LlmRequest`] as JSON on stdin. Its stdout is the transcript: the first
/// line is the verdict (`PASS`, `FAIL` or `NEEDS-HUMAN`, surrounding whitespace ignored),
/// the rest its reasons. It inherits referee's environment (it is the evaluator's own
/// command, and may need its model's credentials); it has no time limit of its own, so the
/// campaign bounds it (`timeout 600 my-reviewer`).
#[derive(Clone, Debug)]
pub struct CommandReviewer {
    command: String,
}

impl CommandReviewer {
    /// A reviewer running `command` (a shell command line).
    pub fn new(command: impl Into<String>) -> Self {
        Self {
            command: command.into(),
        }
    }

    fn spawn_error(&self) -> impl FnOnce(std::io::Error) -> LlmError + '_ {
        move |source| LlmError::Spawn {
            command: self.command.clone(),
            source,
        }
    }
}

impl LlmReviewer for CommandReviewer {
    fn review(&self, request: &LlmRequest<'_>) -> Result<LlmReview, LlmError> {
        let input = serde_json::to_vec(request)
            .map_err(|e| (self.spawn_error())(std::io::Error::other(e)))?;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!("{} \"$@\"", self.command))
            .arg("referee-review")
            .arg(request.tree)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(self.spawn_error())?;
        let (Some(mut stdin), Some(stdout), Some(mut stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err((self.spawn_error())(std::io::Error::other(
                "a pipe is missing",
            )));
        };
        // stdin and stderr on their own threads, so that no pipe fills while another waits.
        let writer = std::thread::spawn(move || match stdin.write_all(&input) {
            // A reviewer that does not read its findings is free not to.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            other => other,
        });
        let error_reader = std::thread::spawn(move || {
            let mut bytes = Vec::new();
            stderr.read_to_end(&mut bytes).map(|_| bytes)
        });
        let transcript = read_to_limit(stdout, 0, MAX_TRANSCRIPT_BYTES);
        let too_long = transcript
            .as_ref()
            .is_ok_and(|t| t.len() > MAX_TRANSCRIPT_BYTES);
        if too_long {
            // Unread, it would block on its full pipe forever. A kill that fails found it
            // already gone, which is what the kill is for.
            let _ = child.kill();
        }
        let status = child.wait().map_err(self.spawn_error())?;
        let panicked = |_| Err(std::io::Error::other("a pipe thread panicked"));
        writer
            .join()
            .unwrap_or_else(panicked)
            .map_err(self.spawn_error())?;
        let stderr_bytes = error_reader
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("a pipe thread panicked")))
            .map_err(self.spawn_error())?;
        let transcript = transcript.map_err(self.spawn_error())?;
        if too_long {
            return Err(LlmError::BadTranscript {
                command: self.command.clone(),
                what: format!("more than {MAX_TRANSCRIPT_BYTES} bytes"),
            });
        }
        if !status.success() {
            return Err(LlmError::Exited {
                command: self.command.clone(),
                status: status.to_string(),
                stderr_tail: log_tail_for_display(&stderr_bytes, STDERR_TAIL_CHARS),
            });
        }
        let transcript_sha256 = Sha256Hex::digest(&transcript);
        let transcript = String::from_utf8(transcript).map_err(|_| LlmError::BadTranscript {
            command: self.command.clone(),
            what: "text that is not UTF-8".to_owned(),
        })?;
        let first = transcript.lines().next().unwrap_or("").trim();
        let verdict = Verdict::parse(first).ok_or_else(|| LlmError::NoVerdict {
            command: self.command.clone(),
            first_line: receipts::text::escape_untrusted(first)
                .chars()
                .take(200)
                .collect(),
        })?;
        Ok(LlmReview {
            command: self.command.clone(),
            verdict,
            transcript_sha256,
            transcript,
        })
    }
}
