//! An engine's log under the campaign's byte budget (`limits.engine_log_bytes`), written
//! as it arrives by `receipts::rules::engine_log`'s rule: the log keeps the first half of
//! the budget as it arrives and the last half in memory; when the stream ends, a stream
//! that fit is written whole, and one that did not gets one marker line — the bytes
//! dropped, the whole stream's length and sha256 — then its last half. A stream within
//! the budget is written byte for byte, as it arrives.

use std::collections::VecDeque;
use std::fs;
use std::io::Write;

use receipts::rules::engine_log::marker_line;
use sha2::{Digest, Sha256};

/// The engine's output as it goes to its log file: the head written through, the tail
/// held until [`BoundedLog::finish`].
#[derive(Debug)]
pub struct BoundedLog {
    file: fs::File,
    head_limit: u64,
    tail_limit: usize,
    head_written: u64,
    tail: VecDeque<u8>,
    dropped: u64,
    total: u64,
    digest: Sha256,
}

impl BoundedLog {
    /// A log writing to `file` that keeps at most `budget` bytes of output: the first
    /// `budget / 2` (rounded up) and the last `budget / 2`.
    pub fn new(file: fs::File, budget: u64) -> Self {
        let tail_limit = usize::try_from(budget / 2).unwrap_or(usize::MAX);
        Self {
            file,
            head_limit: budget - budget / 2,
            tail_limit,
            head_written: 0,
            tail: VecDeque::new(),
            dropped: 0,
            total: 0,
            digest: Sha256::new(),
        }
    }

    /// Takes `bytes` of output. Errors: writing the head to the file.
    pub fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.total += bytes.len() as u64;
        self.digest.update(bytes);
        let room = usize::try_from(self.head_limit - self.head_written).unwrap_or(usize::MAX);
        let (head, rest) = bytes.split_at(room.min(bytes.len()));
        if !head.is_empty() {
            self.file.write_all(head)?;
            self.head_written += head.len() as u64;
        }
        self.tail.extend(rest);
        let over = self.tail.len().saturating_sub(self.tail_limit);
        if over > 0 {
            self.tail.drain(..over);
            self.dropped += over as u64;
        }
        Ok(())
    }

    /// Ends the stream: writes the held tail, after the marker line when bytes were
    /// dropped. Returns the bytes of output dropped. Errors: writing the file.
    pub fn finish(&mut self) -> std::io::Result<u64> {
        if self.dropped > 0 {
            let digest = hex::encode(std::mem::take(&mut self.digest).finalize());
            let marker = marker_line(self.dropped, self.total, &digest);
            self.file.write_all(marker.as_bytes())?;
        }
        let (a, b) = self.tail.as_slices();
        self.file.write_all(a)?;
        self.file.write_all(b)?;
        self.tail.clear();
        Ok(self.dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use receipts::rules::engine_log::{kept_log, max_file_bytes};

    fn written(budget: u64, chunks: &[&[u8]]) -> (Vec<u8>, u64) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("engine.log");
        let mut log = BoundedLog::new(fs::File::create(&path).unwrap(), budget);
        for chunk in chunks {
            log.write(chunk).unwrap();
        }
        let dropped = log.finish().unwrap();
        (fs::read(&path).unwrap(), dropped)
    }

    #[test]
    fn a_stream_within_the_budget_is_written_whole() {
        assert_eq!(
            written(10, &[b"hello", b" you"]),
            (b"hello you".to_vec(), 0)
        );
        assert_eq!(written(10, &[b"0123456789"]), (b"0123456789".to_vec(), 0));
    }

    #[test]
    fn a_stream_over_the_budget_keeps_its_ends_and_says_what_went() {
        let stream = b"0123456789abcdefghij";
        let (bytes, dropped) = written(10, &[&stream[..7], &stream[7..]]);
        assert_eq!(dropped, 10);
        let digest = hex::encode(Sha256::digest(stream));
        let mut expected = b"01234".to_vec();
        expected.extend_from_slice(marker_line(10, 20, &digest).as_bytes());
        expected.extend_from_slice(b"fghij");
        assert_eq!(bytes, expected);
    }

    #[test]
    fn an_odd_budget_gives_the_head_the_extra_byte() {
        let (bytes, dropped) = written(5, &[b"abcdefgh"]);
        assert_eq!(dropped, 3);
        let digest = hex::encode(Sha256::digest(b"abcdefgh"));
        assert_eq!(
            bytes,
            [
                b"abc".as_slice(),
                marker_line(3, 8, &digest).as_bytes(),
                b"gh"
            ]
            .concat()
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Whatever an engine writes, in whatever chunks, its log is the rule's kept log
        /// (`receipts::rules::engine_log::kept_log`, which the verifier's read limit is
        /// derived from) and never longer than `max_file_bytes` of its budget.
        #[test]
        fn the_log_written_is_the_rules_kept_log(
            chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 0..12),
            budget in 1u64..1200,
        ) {
            let refs: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
            let stream = chunks.concat();
            let (bytes, dropped) = written(budget, &refs);
            prop_assert_eq!(&bytes, &kept_log(&stream, budget));
            prop_assert_eq!(dropped, (stream.len() as u64).saturating_sub(budget));
            prop_assert!(bytes.len() as u64 <= max_file_bytes(budget));
        }
    }
}
