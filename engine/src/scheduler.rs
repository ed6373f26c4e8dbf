//! Continuous batching on a dedicated engine thread (not a tokio worker: a step is
//! seconds of CPU at worst and must not stall the HTTP side).
//!
//! Requests wait in a first-come-first-served queue. Before every step, waiting requests
//! join the running batch while fewer than `max_num_seqs` are running (each takes one
//! full-context KV cache slot). A step computes one row per decoding sequence, then fills
//! what is left of `max_num_batched_tokens` with prompt tokens of sequences still in
//! prefill, oldest first — so a long prompt is prefilled in chunks across steps while
//! the others keep decoding (vLLM's chunked prefill). All rows go through one
//! [`Model::forward`], whose matrix products are real batched products: that is what
//! makes 16 sequences cost far less than 16 × one. Each step logs one line at debug level.
//!
//! Results do not depend on the batch (module docs of [`crate::model`]): a request's
//! tokens and logprobs are the same whether it ran alone or with 15 others.

use std::collections::VecDeque;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc::UnboundedSender, watch};

use crate::config::EngineConfig;
use crate::model::{KvCache, Model, Row};
use crate::sampling::{self, Sampler};
use crate::tokenizer::{EOS, token_bytes};

/// What to generate for one request; built and validated by [`crate::api`].
#[derive(Clone, Debug, PartialEq)]
pub struct GenerationRequest {
    /// Prompt token ids (at least one; prompt + `max_tokens` fits in `context`).
    pub prompt: Vec<u32>,
    /// The most tokens to generate.
    pub max_tokens: usize,
    /// 0 = greedy; above 0, sampled from softmax(logits / temperature).
    pub temperature: f32,
    /// Seed of the sampling stream; `None` uses the request's arrival number.
    pub seed: Option<u64>,
    /// Stop strings as bytes (non-empty); generation stops when the output ends with one.
    pub stop: Vec<Vec<u8>>,
    /// Top-k logprobs to return per generated token, if any.
    pub logprobs: Option<usize>,
    /// Top-k logprobs to return per prompt token (echo + logprobs), if any.
    pub prompt_logprobs: Option<usize>,
    /// Keep generating after EOS.
    pub ignore_eos: bool,
    /// EOS and stop strings are ignored until this many tokens are generated.
    pub min_tokens: usize,
}

/// The logprob of one token and the top-k alternatives at its position.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenLogprob {
    /// Logprob of the token itself (nats).
    pub logprob: f32,
    /// The k most likely tokens `(id, logprob)`, best first.
    pub top: Vec<(u32, f32)>,
}

/// Why generation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinishReason {
    /// `max_tokens` reached.
    Length,
    /// EOS or a stop string.
    Stop,
}

/// How a request finished.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finish {
    /// `length` or `stop`.
    pub reason: FinishReason,
    /// The stop string that matched and the byte offset in the output where it starts.
    pub stop: Option<(String, usize)>,
}

/// What the engine thread reports for a request, in this order: prompt logprobs (if
/// asked), one `Token` per generated token (the last carrying its finish), or a lone
/// `Finished` when nothing is generated.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// Per prompt position: `None` for the first token, then the logprob of each prompt
    /// token given the ones before it.
    PromptLogprobs(Vec<Option<TokenLogprob>>),
    /// One generated token.
    Token {
        /// Its id.
        token: u32,
        /// Its logprob and top-k, when asked.
        logprob: Option<TokenLogprob>,
        /// Set on the last token.
        finish: Option<Finish>,
    },
    /// Generation ended without a token (`max_tokens` 0).
    Finished(Finish),
}

/// The sending side of the engine thread's queue; cloneable, cheap.
#[derive(Clone, Debug)]
pub struct EngineHandle {
    jobs: mpsc::Sender<Job>,
}

/// The engine thread has exited (it only does when every handle is dropped, or it
/// panicked).
#[derive(Debug, thiserror::Error)]
#[error("the engine thread has stopped")]
pub struct EngineStopped;

impl EngineHandle {
    /// Queues `request`; its [`Event`]s go to `events`. Dropping the receiver cancels it.
    pub fn submit(
        &self,
        request: GenerationRequest,
        events: UnboundedSender<Event>,
    ) -> Result<(), EngineStopped> {
        self.jobs
            .send(Job { request, events })
            .map_err(|_| EngineStopped)
    }
}

/// Starts the engine thread: it draws the weights, allocates the KV cache, waits
/// `startup_delay_ms`, sends `true` on `ready` and serves until every [`EngineHandle`] is
/// dropped. Errors: the OS refused a thread.
pub fn start(
    config: &EngineConfig,
    ready: watch::Sender<bool>,
) -> std::io::Result<(EngineHandle, std::thread::JoinHandle<()>)> {
    let (jobs, queue) = mpsc::channel();
    let config = config.clone();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(config.threads)
        .thread_name(|i| format!("engine-compute-{i}"))
        .build()
        .map_err(std::io::Error::other)?;
    let thread = std::thread::Builder::new()
        .name("engine".into())
        .spawn(move || {
            pool.install(move || {
                let started = Instant::now();
                let model = Model::new(&config);
                let cache = KvCache::new(&config, config.max_num_seqs);
                tracing::info!(
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "weights drawn and KV cache allocated"
                );
                std::thread::sleep(Duration::from_millis(config.startup_delay_ms));
                let _ = ready.send(true);
                Scheduler::new(config, model, cache).run(&queue);
            });
        })?;
    Ok((EngineHandle { jobs }, thread))
}

struct Job {
    request: GenerationRequest,
    events: UnboundedSender<Event>,
}

struct Sequence {
    job: Job,
    slot: usize,
    /// Prompt then generated tokens.
    tokens: Vec<u32>,
    /// Positions already in the KV cache.
    computed: usize,
    generated: usize,
    /// Finished (reported); retired after the step.
    done: bool,
    output_bytes: Vec<u8>,
    sampler: Option<Sampler>,
    prompt_logprobs: Vec<Option<TokenLogprob>>,
}

/// What a row's logits are for.
#[derive(Clone, Copy)]
enum LogitUse {
    /// Prompt position `pos` predicting prompt token `pos + 1`.
    PromptLogprob { seq: usize, pos: usize },
    /// The next token of sequence `seq`.
    Generate { seq: usize },
}

struct Scheduler {
    config: EngineConfig,
    model: Model,
    cache: KvCache,
    waiting: VecDeque<Job>,
    running: Vec<Sequence>,
    free_slots: Vec<usize>,
    arrivals: u64,
    steps: u64,
}

impl Scheduler {
    fn new(config: EngineConfig, model: Model, cache: KvCache) -> Self {
        let free_slots = (0..config.max_num_seqs).rev().collect();
        Self {
            config,
            model,
            cache,
            waiting: VecDeque::new(),
            running: Vec::new(),
            free_slots,
            arrivals: 0,
            steps: 0,
        }
    }

    fn run(mut self, queue: &mpsc::Receiver<Job>) {
        loop {
            if self.running.is_empty() && self.waiting.is_empty() {
                match queue.recv() {
                    Ok(job) => self.waiting.push_back(job),
                    Err(_) => return,
                }
            }
            while let Ok(job) = queue.try_recv() {
                self.waiting.push_back(job);
            }
            self.admit();
            if !self.running.is_empty() {
                self.step();
            }
        }
    }

    /// Moves waiting requests into the batch, oldest first, while slots are free; drops
    /// cancelled ones and answers requests that need no computation at once.
    fn admit(&mut self) {
        self.waiting.retain(|job| !job.events.is_closed());
        while !self.free_slots.is_empty() {
            let Some(job) = self.waiting.pop_front() else {
                break;
            };
            self.arrivals += 1;
            let request = &job.request;
            if request.max_tokens == 0 && request.prompt_logprobs.is_none() {
                let _ = job.events.send(Event::Finished(Finish {
                    reason: FinishReason::Length,
                    stop: None,
                }));
                continue;
            }
            let sampler = (request.temperature > 0.0)
                .then(|| Sampler::new(request.seed.unwrap_or(self.arrivals)));
            let Some(slot) = self.free_slots.pop() else {
                break;
            };
            self.running.push(Sequence {
                tokens: request.prompt.clone(),
                job,
                slot,
                computed: 0,
                generated: 0,
                done: false,
                output_bytes: Vec::new(),
                sampler,
                prompt_logprobs: vec![None],
            });
        }
    }

    fn step(&mut self) {
        let started = Instant::now();
        let mut rows = Vec::new();
        let mut uses = Vec::new();
        let mut logit_rows = Vec::new();
        // Decode rows first: one per sequence past its prompt.
        for (i, seq) in self.running.iter().enumerate() {
            if seq.computed >= seq.job.request.prompt.len() {
                logit_rows.push(rows.len());
                uses.push(LogitUse::Generate { seq: i });
                rows.push(Row {
                    slot: seq.slot,
                    pos: seq.computed,
                    token: seq.tokens[seq.computed],
                });
            }
        }
        let decode_rows = rows.len();
        // Then prompt chunks, oldest sequence first, up to the token budget.
        for (i, seq) in self.running.iter().enumerate() {
            let prompt_len = seq.job.request.prompt.len();
            let budget = self.config.max_num_batched_tokens - rows.len();
            if seq.computed >= prompt_len || budget == 0 {
                continue;
            }
            let end = prompt_len.min(seq.computed + budget);
            for pos in seq.computed..end {
                let last = pos + 1 == prompt_len;
                if last && seq.job.request.max_tokens > 0 {
                    logit_rows.push(rows.len());
                    uses.push(LogitUse::Generate { seq: i });
                } else if !last && seq.job.request.prompt_logprobs.is_some() {
                    logit_rows.push(rows.len());
                    uses.push(LogitUse::PromptLogprob { seq: i, pos });
                }
                rows.push(Row {
                    slot: seq.slot,
                    pos,
                    token: seq.tokens[pos],
                });
            }
        }
        let logits = self.model.forward(&mut self.cache, &rows, &logit_rows);
        for row in &rows {
            if let Some(seq) = self.running.iter_mut().find(|s| s.slot == row.slot) {
                seq.computed = seq.computed.max(row.pos + 1);
            }
        }
        let vocab = crate::tokenizer::VOCAB_SIZE;
        for (use_, logits) in uses.iter().zip(logits.chunks_exact(vocab)) {
            match *use_ {
                LogitUse::PromptLogprob { seq, pos } => {
                    let seq = &mut self.running[seq];
                    let k = seq.job.request.prompt_logprobs.unwrap_or(0);
                    let next = seq.tokens[pos + 1];
                    seq.prompt_logprobs
                        .push(Some(token_logprob(logits, next, k)));
                }
                LogitUse::Generate { seq } => self.generate(seq, logits),
            }
        }
        // Sequences whose prompt ended with max_tokens 0 (echo + logprobs only).
        for seq in &mut self.running {
            let request = &seq.job.request;
            if request.max_tokens == 0 && seq.computed == request.prompt.len() && !seq.done {
                let logprobs = std::mem::take(&mut seq.prompt_logprobs);
                let _ = seq.job.events.send(Event::PromptLogprobs(logprobs));
                let _ = seq.job.events.send(Event::Finished(Finish {
                    reason: FinishReason::Length,
                    stop: None,
                }));
                seq.done = true;
            }
        }
        self.retire();
        self.steps += 1;
        tracing::debug!(
            step = self.steps,
            decode_rows,
            prefill_rows = rows.len() - decode_rows,
            running = self.running.len(),
            waiting = self.waiting.len(),
            elapsed_us = started.elapsed().as_micros() as u64,
            "scheduler step"
        );
    }

    /// Chooses sequence `index`'s next token from `logits` and reports it.
    fn generate(&mut self, index: usize, logits: &[f32]) {
        let seq = &mut self.running[index];
        let request = &seq.job.request;
        if seq.generated == 0 && request.prompt_logprobs.is_some() {
            let logprobs = std::mem::take(&mut seq.prompt_logprobs);
            let _ = seq.job.events.send(Event::PromptLogprobs(logprobs));
        }
        let banned = (seq.generated < request.min_tokens).then_some(EOS);
        let token = match &mut seq.sampler {
            Some(sampler) => sampler.sample(logits, request.temperature, banned),
            None => sampling::greedy(logits, banned),
        };
        let logprob = request.logprobs.map(|k| token_logprob(logits, token, k));
        seq.tokens.push(token);
        seq.generated += 1;
        seq.output_bytes.extend(token_bytes(token));
        let may_stop = seq.generated >= request.min_tokens;
        let finish = if token == EOS && !request.ignore_eos {
            Some(Finish {
                reason: FinishReason::Stop,
                stop: None,
            })
        } else if let Some(stop) = request.stop.iter().find(|stop| {
            may_stop && token_bytes(token).is_some() && seq.output_bytes.ends_with(stop)
        }) {
            let at = seq.output_bytes.len() - stop.len();
            Some(Finish {
                reason: FinishReason::Stop,
                stop: Some((String::from_utf8_lossy(stop).into_owned(), at)),
            })
        } else if seq.generated >= request.max_tokens {
            Some(Finish {
                reason: FinishReason::Length,
                stop: None,
            })
        } else {
            None
        };
        seq.done = finish.is_some();
        let _ = seq.job.events.send(Event::Token {
            token,
            logprob,
            finish,
        });
    }

    /// Frees the slots of finished and cancelled sequences.
    fn retire(&mut self) {
        let free_slots = &mut self.free_slots;
        self.running.retain(|seq| {
            let keep = !seq.done && !seq.job.events.is_closed();
            if !keep {
                free_slots.push(seq.slot);
            }
            keep
        });
    }
}

/// Logprob of `token` and the top `k` under `logits`.
fn token_logprob(logits: &[f32], token: u32, k: usize) -> TokenLogprob {
    let logprobs = sampling::log_softmax(logits);
    TokenLogprob {
        logprob: logprobs[token as usize],
        top: sampling::top_k(&logprobs, k),
    }
}
