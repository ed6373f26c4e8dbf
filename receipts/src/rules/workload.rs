//! The seeded workload (content/measurement.md, Seeds): the items every entry of a round is sent,
//! their order, their arrival offsets, and the request-sequence digest a verifier
//! regenerates offline.
//!
//! All randomness comes from ChaCha20 (`rand_chacha` 0.3) and is mapped to values with
//! integer arithmetic only: uniform integers by rejection sampling, exponential (Poisson
//! process) gaps by an exact fixed-point `log2` computed bit by bit with integer squaring
//! ([`exponential_gap_ns`]). No floating point and no `rand` distribution helper is used,
//! so the same seeds give the same workload on every machine and every crate version.
//!
//! # Sub-streams
//! The rate search of one entry runs `runs` searches of at most
//! [`crate::rules::sla::max_probes_per_run`] probes. Probe `p` of run `r` sends the items of
//! sub-stream `r × max_probes + p`; every sub-stream has the same, fixed size
//! ([`Workload::sub_stream_len`]), so the set of sub-streams depends on the campaign only
//! and never on which rates a search visited. The correctness items form one more list,
//! drawn from `correctnessSeed` ([`Workload::correctness_items`]).
//!
//! Within sub-stream `s` (ChaCha20 stream number `s` of each seed):
//! - `itemSeed` draws, for item `i = 0, 1, …`, its input length then its output length;
//! - the prompt words come from ChaCha20 keyed by sha256(`referee.prompt.v1` ‖ itemSeed ‖
//!   promptSalt), so the per-round prompt salt changes every prompt (no cache across
//!   rounds) while the lengths stay those of `itemSeed`; a JSONL source instead draws a
//!   line index with `itemSeed` and prefixes the line with a per-item salt tag;
//! - `orderSeed` shuffles the items (Fisher–Yates from the last position down);
//! - `scheduleSeed` draws the arrival gaps (Poisson) or none (constant: 1 s apart).
//!
//! # Prompt lengths
//! The built-in engine's tokenizer is byte-level (one token per byte, plus BOS), so a
//! generated prompt is exactly the drawn input length in bytes (ASCII words and spaces)
//! and the engine sees that many tokens plus BOS. For other servers the drawn length is
//! only approximate in tokens; JSONL prompts have the length of their line.

use std::borrow::Cow;

use crate::canonical::{MAX_SAFE_INTEGER, push_integer};
use crate::model::{
    Arrival, Campaign, CorrectnessSpec, LengthDist, PromptSource, RateSearchSpec, RevealedSeeds,
    Sha256Hex, WorkloadSpec,
};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use sha2::{Digest, Sha256};

use crate::rules::sla::max_probes_per_run;

/// Nanoseconds between arrivals at 1 request/s: the unit of [`Item::arrival_unit_ns`].
pub const UNIT_GAP_NS: u64 = 1_000_000_000;

/// One request of the workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// Index of the item in its sub-stream before the order shuffle (its identity).
    pub item_index: u32,
    /// The prompt text.
    pub prompt: String,
    /// sha256 of the prompt's UTF-8 bytes.
    pub prompt_sha256: Sha256Hex,
    /// Output tokens requested (`max_tokens` = `min_tokens`, `ignore_eos`).
    pub max_tokens: u32,
    /// Arrival offset from the first item of its sub-stream at a rate of 1 request/s, in
    /// ns; at rate R the offset is this ÷ R ([`scheduled_offset_ns`]). 0 for correctness
    /// items, which are sent one at a time.
    pub arrival_unit_ns: u64,
}

/// Errors building a workload; each names the file or field concerned.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// The JSONL prompt file's sha256 is not the one the campaign pins.
    #[error("prompt file `{path}` has sha256 `{actual}`, the campaign pins `{expected}`")]
    JsonlDigest {
        /// The file, as the campaign names it.
        path: String,
        /// The campaign's `workload.prompt_source.sha256` (boxed, as is `actual`: two
        /// inline digests would make every `Result` of this module 150 bytes).
        expected: Box<Sha256Hex>,
        /// The file's digest.
        actual: Box<Sha256Hex>,
    },
    /// A line of the JSONL prompt file is not `{"prompt": "<text>"}`.
    #[error("prompt file `{path}` line {line}: {message}")]
    JsonlLine {
        /// The file, as the campaign names it.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The JSONL prompt file holds no prompt.
    #[error("prompt file `{path}` holds no prompt")]
    JsonlEmpty {
        /// The file, as the campaign names it.
        path: String,
    },
    /// The campaign's prompts come from a JSONL file but its bytes were not given.
    #[error("workload.prompt_source is a JSONL file `{path}`; its contents are needed")]
    JsonlNeedsFile {
        /// The path as the campaign writes it.
        path: String,
    },
    /// The workload is too large to describe: an arrival offset or an index overflows.
    #[error("workload too large: {what}")]
    TooLarge {
        /// Which quantity overflowed.
        what: String,
    },
    /// Canonical JSON could not be produced for the digest.
    #[error("canonical JSON of the request sequence: {message}")]
    Canonical {
        /// Why.
        message: String,
    },
}

/// A round's workload: the campaign's mix bound to the revealed seeds. Built once per
/// round and shared by every entry, so all entries see the same requests.
#[derive(Clone, Debug)]
pub struct Workload {
    spec: WorkloadSpec,
    correctness: CorrectnessSpec,
    seeds: RevealedSeeds,
    prompts: Prompts,
    rate_search: RateSearchSpec,
    runs: u32,
    max_probes: u32,
    sub_stream_len: u32,
}

/// The parts of a campaign that shape its workload.
#[derive(Clone, Copy, Debug)]
pub struct WorkloadParts<'a> {
    /// The mix: lengths, prompt source, arrival process.
    pub workload: &'a WorkloadSpec,
    /// The rate search: sizes the sub-streams and their number per run.
    pub rate_search: &'a RateSearchSpec,
    /// Runs per entry.
    pub runs: u32,
    /// The correctness items.
    pub correctness: &'a CorrectnessSpec,
}

/// Where prompt text comes from, resolved.
#[derive(Clone, Debug)]
enum Prompts {
    /// The seeded word generator.
    Generated,
    /// The lines of a JSONL file, verified against the campaign's digest.
    Lines(Vec<String>),
}

/// An item of a sub-stream as the request-sequence digest needs it: no prompt text,
/// only its sha256.
struct Drawn {
    item_index: u32,
    max_tokens: u32,
    prompt_sha256: [u8; 32],
}

/// The request-sequence list (content/measurement.md) written as RFC 8785 canonical JSON
/// straight into its hash: `[`, then each element `{"arrivalUnitNs":…,"itemIndex":…,
/// "maxTokens":…,"promptSha256":"…"}` (keys in canonical order, integers in decimal, the
/// digest in lowercase hex, which needs no escaping) joined by `,`, then `]`. One buffer
/// is reused for every element.
struct SequenceHasher {
    hasher: Sha256,
    element: Vec<u8>,
    first: bool,
}

impl SequenceHasher {
    fn new() -> Self {
        let mut hasher = Sha256::new();
        hasher.update(b"[");
        Self {
            hasher,
            element: Vec::with_capacity(160),
            first: true,
        }
    }

    /// Adds one element.
    ///
    /// Errors: [`WorkloadError::TooLarge`] when `arrival_unit_ns` exceeds 2^53 − 1 (the
    /// largest integer canonical JSON holds exactly).
    fn add(
        &mut self,
        item_index: u32,
        prompt_sha256: &[u8; 32],
        max_tokens: u32,
        arrival_unit_ns: u64,
    ) -> Result<(), WorkloadError> {
        if arrival_unit_ns > MAX_SAFE_INTEGER {
            return Err(WorkloadError::TooLarge {
                what: format!("arrival offset {arrival_unit_ns} ns"),
            });
        }
        let mut hex = [0u8; 64];
        hex::encode_to_slice(prompt_sha256, &mut hex).map_err(|e| WorkloadError::Canonical {
            message: e.to_string(),
        })?;
        let out = &mut self.element;
        out.clear();
        if !self.first {
            out.push(b',');
        }
        self.first = false;
        out.extend_from_slice(b"{\"arrivalUnitNs\":");
        push_integer(out, arrival_unit_ns);
        out.extend_from_slice(b",\"itemIndex\":");
        push_integer(out, u64::from(item_index));
        out.extend_from_slice(b",\"maxTokens\":");
        push_integer(out, u64::from(max_tokens));
        out.extend_from_slice(b",\"promptSha256\":\"");
        out.extend_from_slice(&hex);
        out.extend_from_slice(b"\"}");
        self.hasher.update(&self.element);
        Ok(())
    }

    fn finish(mut self) -> Sha256Hex {
        self.hasher.update(b"]");
        Sha256Hex::from_bytes(self.hasher.finalize().into())
    }
}

/// The arrival offsets at 1 request/s of a sub-stream's items in send order: 0 for the
/// first, then one gap more for each next (Poisson: drawn from `scheduleSeed`; constant:
/// [`UNIT_GAP_NS`]).
struct Schedule {
    rng: ChaCha20Rng,
    arrival: Arrival,
    next_ns: Option<u64>,
}

impl Iterator for Schedule {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        let offset = match self.next_ns {
            None => 0,
            Some(previous) => {
                let gap = match self.arrival {
                    Arrival::Poisson => exponential_gap_ns(&mut self.rng),
                    Arrival::Constant => UNIT_GAP_NS,
                };
                previous.saturating_add(gap)
            }
        };
        self.next_ns = Some(offset);
        Some(offset)
    }
}

impl Workload {
    /// Binds `campaign`'s workload to `seeds`; a `decide` campaign's correctness items are
    /// its gate's `gate_items` fresh items. `prompt_file` holds the bytes of a JSONL
    /// prompt source (the caller reads it: this module does no I/O); `None` for
    /// generated prompts.
    ///
    /// Errors: [`WorkloadError::JsonlNeedsFile`] without the bytes of a JSONL source;
    /// the other `Jsonl*` variants for an altered or malformed file;
    /// [`WorkloadError::TooLarge`] when the sub-streams cannot be indexed in 32 bits.
    pub fn new(
        campaign: &Campaign,
        seeds: &RevealedSeeds,
        prompt_file: Option<&[u8]>,
    ) -> Result<Self, WorkloadError> {
        // A `decide` campaign's gate draws its fresh items as the correctness items.
        let correctness = match &campaign.decide {
            Some(decide) => Cow::Owned(CorrectnessSpec {
                items: decide.gate_items,
                ..campaign.correctness.clone()
            }),
            None => Cow::Borrowed(&campaign.correctness),
        };
        Self::from_parts(
            &WorkloadParts {
                workload: &campaign.workload,
                rate_search: &campaign.rate_search,
                runs: campaign.runs,
                correctness: &correctness,
            },
            seeds,
            prompt_file,
        )
    }

    /// As [`Workload::new`], from the campaign's parts that shape the workload (for
    /// `referee bench serve`, which has no full campaign).
    ///
    /// Errors: as [`Workload::new`].
    pub fn from_parts(
        parts: &WorkloadParts<'_>,
        seeds: &RevealedSeeds,
        prompt_file: Option<&[u8]>,
    ) -> Result<Self, WorkloadError> {
        let prompts = match &parts.workload.prompt_source {
            PromptSource::Generated => Prompts::Generated,
            PromptSource::Jsonl { path, sha256 } => {
                let bytes = prompt_file
                    .ok_or_else(|| WorkloadError::JsonlNeedsFile { path: path.clone() })?;
                Prompts::Lines(parse_jsonl(path, bytes, sha256)?)
            }
        };
        let rs = parts.rate_search;
        // Measured requests a probe at the highest rate needs for its minimum duration.
        let at_max_rate = rs
            .max_rate_milli_rps
            .saturating_mul(rs.min_probe_duration_ms)
            .div_ceil(1_000_000);
        let measured = at_max_rate.max(u64::from(rs.min_probe_requests));
        // Twice the expected need plus 64: the chance that 2m + 64 exponential gaps of
        // mean 1 sum to less than m is negligible for every m ≥ 1, so a probe practically
        // never runs out of items (it then stops at the last one; see `ProbePlan`).
        let len = u64::from(rs.warmup_requests) + 2 * measured + 64;
        let sub_stream_len = u32::try_from(len).map_err(|_| WorkloadError::TooLarge {
            what: format!("{len} items per sub-stream"),
        })?;
        let max_probes = max_probes_per_run(rs);
        parts
            .runs
            .checked_mul(max_probes)
            .ok_or_else(|| WorkloadError::TooLarge {
                what: format!("{} runs × {max_probes} probes", parts.runs),
            })?;
        Ok(Self {
            spec: parts.workload.clone(),
            correctness: parts.correctness.clone(),
            seeds: seeds.clone(),
            prompts,
            rate_search: rs.clone(),
            runs: parts.runs,
            max_probes,
            sub_stream_len,
        })
    }

    /// Items in every sub-stream (warm-up included).
    pub fn sub_stream_len(&self) -> u32 {
        self.sub_stream_len
    }

    /// Sub-streams reserved per run: the most probes one run's search may send.
    pub fn max_probes(&self) -> u32 {
        self.max_probes
    }

    /// Runs per entry (the campaign's `runs`).
    pub fn runs(&self) -> u32 {
        self.runs
    }

    /// The campaign's rate search the sub-streams were sized for.
    pub fn rate_search(&self) -> &RateSearchSpec {
        &self.rate_search
    }

    /// The sub-stream number of probe `probe` of run `run`: `run × max_probes + probe`.
    pub fn sub_stream_index(&self, run: u32, probe: u32) -> u32 {
        run * self.max_probes + probe
    }

    /// The sub-stream whose first items are run `run`'s caching probe (content/correctness.md,
    /// Caching): `runs × max_probes + run`, past every timed probe's, so no timed request
    /// sends its prompts.
    pub fn caching_sub_stream(&self, run: u32) -> u32 {
        self.runs
            .saturating_mul(self.max_probes)
            .saturating_add(run)
    }

    /// The items of sub-stream `sub_stream`, in send order, each with its arrival offset
    /// at 1 request/s (the first at 0).
    pub fn sub_stream(&self, sub_stream: u32) -> Vec<Item> {
        let stream = u64::from(sub_stream);
        let mut items = Vec::with_capacity(self.sub_stream_len as usize);
        let mut prompt = Vec::new();
        self.draw_sub_stream(sub_stream, &mut prompt, |item_index, max_tokens, prompt| {
            items.push(Item {
                item_index,
                prompt_sha256: Sha256Hex::digest(prompt),
                prompt: String::from_utf8_lossy(prompt).into_owned(),
                max_tokens,
                arrival_unit_ns: 0,
            });
        });
        shuffle(
            &mut items,
            &mut chacha(&self.seeds.order_seed.seed.0, stream),
        );
        for (item, offset) in items.iter_mut().zip(self.schedule(stream)) {
            item.arrival_unit_ns = offset;
        }
        items
    }

    /// The correctness items (content/correctness.md, Correctness): `correctness.items` fresh
    /// items from `correctnessSeed`, prompt lengths from `correctness.input_len`, each
    /// asking for `correctness.output_tokens`; arrival offsets are 0 (sent one at a time).
    pub fn correctness_items(&self) -> Vec<Item> {
        let mut items = Vec::with_capacity(self.correctness.items as usize);
        let mut prompt = Vec::new();
        self.draw_correctness(&mut prompt, |item_index, prompt| {
            items.push(Item {
                item_index,
                prompt_sha256: Sha256Hex::digest(prompt),
                prompt: String::from_utf8_lossy(prompt).into_owned(),
                max_tokens: self.correctness.output_tokens,
                arrival_unit_ns: 0,
            });
        });
        items
    }

    /// The request-sequence digest (content/measurement.md): sha256 of the RFC 8785 canonical JSON
    /// list of `{itemIndex, promptSha256, maxTokens, arrivalUnitNs}` for every item of
    /// sub-streams `0 .. runs × max_probes` in order, each in send order, followed by the
    /// correctness items. It depends on the seeds and the campaign only.
    ///
    /// It draws exactly what [`Workload::sub_stream`] and [`Workload::correctness_items`]
    /// draw, but keeps only each prompt's sha256 (one prompt buffer reused throughout) and
    /// writes the canonical JSON straight into the hash.
    ///
    /// Errors: [`WorkloadError::TooLarge`] when an offset exceeds 2^53 − 1 ns;
    /// [`WorkloadError::Canonical`] if an element cannot be written.
    pub fn request_sequence_digest(&self) -> Result<Sha256Hex, WorkloadError> {
        let mut list = SequenceHasher::new();
        let mut prompt = Vec::new();
        let mut drawn: Vec<Drawn> = Vec::with_capacity(self.sub_stream_len as usize);
        for sub_stream in 0..self.runs * self.max_probes {
            let stream = u64::from(sub_stream);
            drawn.clear();
            self.draw_sub_stream(sub_stream, &mut prompt, |item_index, max_tokens, prompt| {
                drawn.push(Drawn {
                    item_index,
                    max_tokens,
                    prompt_sha256: Sha256::digest(prompt).into(),
                });
            });
            shuffle(
                &mut drawn,
                &mut chacha(&self.seeds.order_seed.seed.0, stream),
            );
            for (item, offset) in drawn.iter().zip(self.schedule(stream)) {
                list.add(
                    item.item_index,
                    &item.prompt_sha256,
                    item.max_tokens,
                    offset,
                )?;
            }
        }
        let mut result = Ok(());
        self.draw_correctness(&mut prompt, |item_index, prompt| {
            if result.is_ok() {
                let digest: [u8; 32] = Sha256::digest(prompt).into();
                result = list.add(item_index, &digest, self.correctness.output_tokens, 0);
            }
        });
        result?;
        Ok(list.finish())
    }

    /// Draws the items of sub-stream `sub_stream` in item order (before the order
    /// shuffle): for each, from `itemSeed` its input length, then its output length (and,
    /// for a JSONL source, its line), then its prompt's UTF-8 bytes, which are written into
    /// `prompt` and handed to `each` with the item's index and output tokens.
    fn draw_sub_stream(
        &self,
        sub_stream: u32,
        prompt: &mut Vec<u8>,
        mut each: impl FnMut(u32, u32, &[u8]),
    ) {
        let stream = u64::from(sub_stream);
        let mut lengths = chacha(&self.seeds.item_seed.seed.0, stream);
        let mut words = chacha(&prompt_key(&self.seeds.item_seed.seed.0, self), stream);
        for index in 0..self.sub_stream_len {
            let input_len = draw_length(&mut lengths, &self.spec.input_len);
            let max_tokens = draw_length(&mut lengths, &self.spec.output_len);
            let text = self.prompt(
                &mut words,
                &mut lengths,
                input_len,
                sub_stream,
                index,
                prompt,
            );
            each(index, max_tokens, text);
        }
    }

    /// Draws the correctness items in order from `correctnessSeed` (an input length, then
    /// a prompt each), handing each index and prompt bytes to `each`.
    fn draw_correctness(&self, prompt: &mut Vec<u8>, mut each: impl FnMut(u32, &[u8])) {
        let seed = &self.seeds.correctness_seed.seed.0;
        let mut lengths = chacha(seed, 0);
        let mut words = chacha(&prompt_key(seed, self), 0);
        for index in 0..self.correctness.items {
            let input_len = draw_length(&mut lengths, &self.correctness.input_len);
            let text = self.prompt(&mut words, &mut lengths, input_len, u32::MAX, index, prompt);
            each(index, text);
        }
    }

    /// The arrival offsets of sub-stream `stream` in send order.
    fn schedule(&self, stream: u64) -> Schedule {
        Schedule {
            rng: chacha(&self.seeds.schedule_seed.seed.0, stream),
            arrival: self.spec.arrival,
            next_ns: None,
        }
    }

    /// Draws one prompt of `input_len` bytes (generated) or one JSONL line (salted) into
    /// `out`; returns its UTF-8 bytes (part of `out`).
    fn prompt<'b>(
        &self,
        words: &mut ChaCha20Rng,
        lengths: &mut ChaCha20Rng,
        input_len: u32,
        sub_stream: u32,
        index: u32,
        out: &'b mut Vec<u8>,
    ) -> &'b [u8] {
        out.clear();
        match &self.prompts {
            Prompts::Generated => generated_prompt(words, input_len as usize, out),
            Prompts::Lines(lines) => {
                let line = &lines[uniform(lengths, lines.len() as u64) as usize];
                // A per-item tag from the prompt salt: no two rounds send the same text,
                // and no two items share a prefix an engine could cache.
                let mut tag = Sha256::new();
                tag.update(self.seeds.prompt_salt.seed.0);
                tag.update(sub_stream.to_be_bytes());
                tag.update(index.to_be_bytes());
                out.push(b'[');
                out.extend_from_slice(hex::encode(&tag.finalize()[..4]).as_bytes());
                out.extend_from_slice(b"] ");
                out.extend_from_slice(line.as_bytes());
                out
            }
        }
    }
}

/// The scheduled offset of an item at `rate_milli_rps`, in ns from the first item:
/// `arrival_unit_ns × 1000 ÷ rate_milli_rps`, rounded down (u128, no overflow).
/// `rate_milli_rps` must be at least 1.
pub fn scheduled_offset_ns(arrival_unit_ns: u64, rate_milli_rps: u64) -> u64 {
    let ns = u128::from(arrival_unit_ns) * 1000 / u128::from(rate_milli_rps.max(1));
    u64::try_from(ns).unwrap_or(u64::MAX)
}

/// How many items of a sub-stream one probe sends (content/measurement.md, Probe), from
/// their scheduled `offsets_ns` (in send order, [`scheduled_offset_ns`] at the probe's
/// rate): the first `warmup` (at most all) are warm-up; then the fewest measured items,
/// at least `min_requests`, whose scheduled span (first to last measured send) reaches
/// `min_duration_ms`; every item when the sub-stream runs out first. The load generator
/// plans each probe with it and the verifier recomputes each probe's counts with it.
pub fn probe_request_count(
    offsets_ns: &[u64],
    warmup: u32,
    min_requests: u32,
    min_duration_ms: u64,
) -> usize {
    let warmup = (warmup as usize).min(offsets_ns.len());
    let min_duration_ns = min_duration_ms.saturating_mul(1_000_000);
    let Some(&first) = offsets_ns.get(warmup) else {
        return offsets_ns.len();
    };
    offsets_ns
        .iter()
        .enumerate()
        .skip(warmup)
        .find(|&(i, &offset)| {
            i + 1 - warmup >= min_requests as usize && offset - first >= min_duration_ns
        })
        .map_or(offsets_ns.len(), |(i, _)| i + 1)
}

/// The vocabulary of generated prompts: common short English words, so prompts look like
/// text to a tokenizer that is not byte-level.
const WORDS: [&str; 64] = [
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by",
    "on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an",
    "had", "they", "you", "were", "their", "one", "all", "we", "can", "her", "has", "there",
    "been", "if", "more", "when", "will", "would", "who", "so", "no", "time", "river", "stone",
    "light", "north", "garden", "engine", "signal", "market", "winter", "letter", "number",
    "copper", "island", "window", "morning",
];

/// A ChaCha20 generator keyed by `key` on stream `stream`.
pub(crate) fn chacha(key: &[u8; 32], stream: u64) -> ChaCha20Rng {
    let mut rng = ChaCha20Rng::from_seed(*key);
    rng.set_stream(stream);
    rng
}

/// The key of the prompt-word generator: sha256(`referee.prompt.v1` ‖ seed ‖ promptSalt).
fn prompt_key(seed: &[u8; 32], workload: &Workload) -> [u8; 32] {
    let mut key = Sha256::new();
    key.update(b"referee.prompt.v1");
    key.update(seed);
    key.update(workload.seeds.prompt_salt.seed.0);
    key.finalize().into()
}

/// A uniform integer in `0..n` (`n` ≥ 1) by rejection sampling: draws below the largest
/// multiple of `n` that fits in 2^64 are kept, so every residue is equally likely.
pub fn uniform(rng: &mut ChaCha20Rng, n: u64) -> u64 {
    let n = n.max(1);
    let zone = u64::MAX - (u64::MAX - n + 1) % n;
    loop {
        let draw = rng.next_u64();
        if draw <= zone {
            return draw % n;
        }
    }
}

/// A length from `dist`, in tokens.
fn draw_length(rng: &mut ChaCha20Rng, dist: &LengthDist) -> u32 {
    match *dist {
        LengthDist::Fixed { value } => value,
        LengthDist::Uniform { min, max } => {
            let span = u64::from(max.saturating_sub(min)) + 1;
            min + uniform(rng, span) as u32
        }
    }
}

/// Each of [`WORDS`] after one space, in 8 bytes (no word has more than 7 letters: a
/// longer one fails to compile here), with that length.
const SPACED_WORDS: [([u8; 8], usize); 64] = spaced_words();

const fn spaced_words() -> [([u8; 8], usize); 64] {
    let mut out = [([b' '; 8], 0); 64];
    let mut i = 0;
    while i < WORDS.len() {
        let word = WORDS[i].as_bytes();
        let mut j = 0;
        while j < word.len() {
            out[i].0[j + 1] = word[j];
            j += 1;
        }
        out[i].1 = word.len() + 1;
        i += 1;
    }
    out
}

/// Words from [`WORDS`] separated by spaces, cut to exactly `len` bytes (ASCII), drawn
/// into `buffer` (empty); returns them (part of `buffer`). Every word is copied as its 8
/// bytes of [`SPACED_WORDS`], space first, so the text starts at the buffer's second byte.
fn generated_prompt<'b>(rng: &mut ChaCha20Rng, len: usize, buffer: &'b mut Vec<u8>) -> &'b [u8] {
    if len == 0 {
        return buffer;
    }
    buffer.resize(len + 8, 0);
    // Bytes written, the leading space included: the text is `filled - 1` bytes long.
    let mut filled = 0;
    while filled < len + 1 {
        let (word, length) = &SPACED_WORDS[uniform(rng, WORDS.len() as u64) as usize];
        buffer[filled..filled + 8].copy_from_slice(word);
        filled += length;
    }
    &buffer[1..len + 1]
}

/// Fisher–Yates from the last position down: position `i` swaps with a uniform `j ≤ i`.
pub(crate) fn shuffle<T>(items: &mut [T], rng: &mut ChaCha20Rng) {
    for i in (1..items.len()).rev() {
        let j = uniform(rng, i as u64 + 1) as usize;
        items.swap(i, j);
    }
}

/// Fractional bits of the fixed-point logarithm.
const LOG_FRACTION_BITS: u32 = 32;

/// ln(2) × 10⁹ × 2³², rounded to nearest: converts a Q32 base-2 logarithm to ns of a
/// mean-1 s exponential gap.
const LN2_NS_Q32: u128 = 2_977_044_471_819_572_071;

/// An exponential gap of mean 1 s, in ns, by inversion: gap = −ln(U) s with
/// U = u ÷ 2^64 and u a ChaCha20 draw in 1..2^64 (0 is redrawn).
///
/// −ln(U) = (64 − log2 u) × ln 2. `log2 u` is computed exactly in integers: its integer
/// part is the position of u's top bit; its 32 fractional bits come from repeatedly
/// squaring the mantissa y ∈ [1, 2) held in Q63 (u128 products, truncated), emitting a 1
/// and halving whenever the square reaches 2. The Q32 result times `LN2_NS_Q32` (ln 2 in ns, Q32) is the
/// gap in ns (Q64, shifted down). Largest gap: 64 × ln 2 s ≈ 44.4 s.
pub fn exponential_gap_ns(rng: &mut ChaCha20Rng) -> u64 {
    let u = loop {
        let draw = rng.next_u64();
        if draw != 0 {
            break draw;
        }
    };
    let neg_log2_q32 = (64u128 << LOG_FRACTION_BITS) - log2_q32(u);
    ((neg_log2_q32 * LN2_NS_Q32) >> 64) as u64
}

/// log2(u) in Q32 fixed point (truncated), for u ≥ 1. The mantissa y ∈ [1, 2) in Q63
/// fits in 64 bits before and after each step, so each square is one 64 × 64 → 128-bit
/// product.
fn log2_q32(u: u64) -> u128 {
    let top = 63 - u.leading_zeros();
    let two: u128 = 1 << 64;
    let mut y: u64 = u << (63 - top);
    let mut fraction: u128 = 0;
    for _ in 0..LOG_FRACTION_BITS {
        let square = (u128::from(y) * u128::from(y)) >> 63;
        fraction <<= 1;
        // square < 2^65: halved when it reaches 2 (2^64 in Q63), it fits in 64 bits.
        y = if square >= two {
            fraction |= 1;
            (square >> 1) as u64
        } else {
            square as u64
        };
    }
    (u128::from(top) << LOG_FRACTION_BITS) | fraction
}

/// Verifies and parses the bytes of the JSONL prompt file the campaign names `path`: one
/// `{"prompt": "<text>"}` a line, blank lines skipped.
fn parse_jsonl(
    path: &str,
    bytes: &[u8],
    expected: &Sha256Hex,
) -> Result<Vec<String>, WorkloadError> {
    let actual = Sha256Hex::digest(bytes);
    if &actual != expected {
        return Err(WorkloadError::JsonlDigest {
            path: path.to_owned(),
            expected: Box::new(*expected),
            actual: Box::new(actual),
        });
    }
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Line {
        prompt: String,
    }
    let text = std::str::from_utf8(bytes).map_err(|e| WorkloadError::JsonlLine {
        path: path.to_owned(),
        line: 0,
        message: format!("not UTF-8: {e}"),
    })?;
    let mut prompts = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let parsed: Line = serde_json::from_str(line).map_err(|e| WorkloadError::JsonlLine {
            path: path.to_owned(),
            line: number + 1,
            message: e.to_string(),
        })?;
        prompts.push(parsed.prompt);
    }
    if prompts.is_empty() {
        return Err(WorkloadError::JsonlEmpty {
            path: path.to_owned(),
        });
    }
    Ok(prompts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log2_of_powers_of_two_is_exact() {
        for k in 0..64 {
            assert_eq!(log2_q32(1u64 << k), u128::from(k as u32) << 32);
        }
        // log2(3) = 1.584962500721156…; × 2^32 = 6807362105.5… truncated.
        assert_eq!(log2_q32(3), 6_807_362_105);
    }

    #[test]
    fn uniform_covers_range() {
        let mut rng = chacha(&[7; 32], 0);
        let mut seen = [0u32; 5];
        for _ in 0..1000 {
            seen[uniform(&mut rng, 5) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c > 150), "{seen:?}");
    }

    #[test]
    fn exponential_gaps_have_mean_one_second() {
        let mut rng = chacha(&[9; 32], 3);
        let total: u64 = (0..20_000).map(|_| exponential_gap_ns(&mut rng)).sum();
        let mean = total / 20_000;
        assert!((950_000_000..1_050_000_000).contains(&mean), "{mean}");
    }

    /// One element of the request-sequence list, as the spec names its fields.
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct DigestEntry<'a> {
        item_index: u32,
        prompt_sha256: &'a str,
        max_tokens: u32,
        arrival_unit_ns: u64,
    }

    /// The digest written straight into the hash is sha256 of the list of every item
    /// [`Workload::sub_stream`] and [`Workload::correctness_items`] build, canonicalised
    /// by `serde_json_canonicalizer`: for generated prompts with Poisson and constant
    /// arrivals, and for a JSONL prompt source.
    #[test]
    fn streamed_digest_is_the_canonical_list() {
        use crate::model::{Seed32, SeedReveal};
        let text = r#"
id = "c"
runs = 1
[model]
name = "m"
[baseline]
repo = "b"
commit = "0123456789abcdef0123456789abcdef01234567"
[rate_search]
min_rate_milli_rps = 1000
max_rate_milli_rps = 2000
min_probe_duration_ms = 1
min_probe_requests = 3
warmup_requests = 1
[correctness]
items = 3
"#;
        let poisson = Campaign::from_toml("c.toml", text).unwrap();
        let mut constant = poisson.clone();
        constant.workload.arrival = Arrival::Constant;
        let jsonl_bytes = b"{\"prompt\": \"alpha\"}\n\n{\"prompt\": \"beta \\\"gamma\\\"\"}\n";
        let mut jsonl = poisson.clone();
        jsonl.workload.prompt_source = PromptSource::Jsonl {
            path: "p.jsonl".into(),
            sha256: Sha256Hex::digest(jsonl_bytes),
        };
        let reveal = |b: u8| SeedReveal::commit(Seed32([b; 32]), Seed32([0; 32]));
        let seeds = RevealedSeeds {
            item_seed: reveal(1),
            order_seed: reveal(2),
            schedule_seed: reveal(3),
            correctness_seed: reveal(4),
            prompt_salt: reveal(5),
            sample_seed: None,
            pass_seed: None,
        };
        for (campaign, file) in [
            (&poisson, None),
            (&constant, None),
            (&jsonl, Some(&jsonl_bytes[..])),
        ] {
            let workload = Workload::new(campaign, &seeds, file).unwrap();
            let mut items = Vec::new();
            for s in 0..workload.runs() * workload.max_probes() {
                items.extend(workload.sub_stream(s));
            }
            items.extend(workload.correctness_items());
            let list: Vec<DigestEntry<'_>> = items
                .iter()
                .map(|i| DigestEntry {
                    item_index: i.item_index,
                    prompt_sha256: i.prompt_sha256.as_str(),
                    max_tokens: i.max_tokens,
                    arrival_unit_ns: i.arrival_unit_ns,
                })
                .collect();
            let canonical = serde_json_canonicalizer::to_vec(&list).unwrap();
            assert!(canonical.starts_with(b"[{\"arrivalUnitNs\":0,\"itemIndex\":"));
            assert_eq!(
                workload.request_sequence_digest().unwrap(),
                Sha256Hex::digest(&canonical)
            );
        }
    }

    /// Issue 40 (MLPerf TEST04): a JSONL source of two lines repeats them in every
    /// sub-stream, each behind its own tag, so no prompt of a round is sent twice — in a
    /// run's timed probes, across runs, or in the caching probes' sub-streams
    /// ([`Workload::caching_sub_stream`]), which only repeat a prompt on purpose.
    #[test]
    fn a_jsonl_source_repeats_its_lines_behind_tags_and_never_a_prompt() {
        use crate::model::{Seed32, SeedReveal};
        let text = r#"
id = "c"
runs = 3
[model]
name = "m"
[baseline]
repo = "b"
commit = "0123456789abcdef0123456789abcdef01234567"
[rate_search]
min_rate_milli_rps = 1000
max_rate_milli_rps = 2000
min_probe_duration_ms = 1
min_probe_requests = 3
warmup_requests = 1
"#;
        let bytes = b"{\"prompt\": \"alpha\"}\n{\"prompt\": \"beta\"}\n";
        let mut campaign = Campaign::from_toml("c.toml", text).unwrap();
        campaign.workload.prompt_source = PromptSource::Jsonl {
            path: "p.jsonl".into(),
            sha256: Sha256Hex::digest(bytes),
        };
        let reveal = |b: u8| SeedReveal::commit(Seed32([b; 32]), Seed32([0; 32]));
        let seeds = RevealedSeeds {
            item_seed: reveal(1),
            order_seed: reveal(2),
            schedule_seed: reveal(3),
            correctness_seed: reveal(4),
            prompt_salt: reveal(5),
            sample_seed: None,
            pass_seed: None,
        };
        let workload = Workload::new(&campaign, &seeds, Some(&bytes[..])).unwrap();
        let timed = 0..workload.runs() * workload.max_probes();
        let caching = (0..workload.runs()).map(|run| workload.caching_sub_stream(run));
        assert_eq!(
            caching.clone().collect::<Vec<_>>(),
            [timed.end, timed.end + 1, timed.end + 2]
        );
        let prompts: Vec<String> = (timed.chain(caching))
            .flat_map(|s| workload.sub_stream(s))
            .map(|item| item.prompt)
            .collect();
        let lines = |line: &str| (prompts.iter()).filter(|p| p.ends_with(line)).count();
        // Every prompt is `[8 hex digits] ` and one of the two lines, each many times.
        assert!((prompts.iter()).all(|p| p.starts_with('[') && p.get(9..11) == Some("] ")));
        assert_eq!(lines("] alpha") + lines("] beta"), prompts.len());
        assert!(
            lines("] alpha") > 100 && lines("] beta") > 100,
            "{}",
            prompts.len()
        );
        let distinct: std::collections::BTreeSet<&String> = prompts.iter().collect();
        assert_eq!(distinct.len(), prompts.len());
    }

    #[test]
    fn generated_prompt_has_exact_length() {
        let mut rng = chacha(&[1; 32], 0);
        for len in [1, 2, 7, 64, 255] {
            let mut buffer = Vec::new();
            let prompt = generated_prompt(&mut rng, len, &mut buffer);
            assert_eq!(prompt.len(), len);
        }
    }
}
