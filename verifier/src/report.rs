//! What a verification reports: the name of every check in the order they run
//! ([`CheckName`], with the dotted wire names `referee verify --json` prints and the site's
//! verdict cache reads back), the typed reason of every failure ([`FailureReason`]), and
//! the report one bundle's verification fills ([`VerifyReport`]). Every check of the
//! verifier records into it: the envelope's (checks 1–6, [`crate::envelope`]) and the
//! round's own.

use std::path::{Path, PathBuf};

use serde::Serialize;

use receipts::model::{Sha256Hex, Timestamp};

/// The checks, in the order they run. Deserialized from the dotted names it serializes
/// to (the site's verdict cache reads them back).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub enum CheckName {
    /// Step 1: the envelope file is strict JSON of the DSSE shape within the size limit.
    #[serde(rename = "envelope.parse")]
    EnvelopeParse,
    /// Step 1 (referee's own form): the envelope file is RFC 8785 canonical JSON. Not run
    /// with [`VerifyOptions::foreign`](crate::VerifyOptions::foreign).
    #[serde(rename = "envelope.canonical")]
    EnvelopeCanonical,
    /// Step 2: `payloadType` is `application/vnd.in-toto+json`.
    #[serde(rename = "envelope.payloadType")]
    PayloadType,
    /// Step 3: a base64 field decodes strictly and is standard padded base64 (with
    /// [`VerifyOptions::foreign`](crate::VerifyOptions::foreign): decodes strictly,
    /// URL-safe or unpadded allowed).
    #[serde(rename = "envelope.base64")]
    Base64,
    /// Step 3: a signature is exactly 64 bytes.
    #[serde(rename = "signature.length")]
    SignatureLength,
    /// Step 4: enough distinct trusted keys verified the PAE.
    #[serde(rename = "signature.trusted")]
    Signatures,
    /// Step 4 (referee's own form): a verified signature's keyid is its key's keyid. Not
    /// run with [`VerifyOptions::foreign`](crate::VerifyOptions::foreign).
    #[serde(rename = "signature.keyid")]
    Keyid,
    /// Step 5: the payload is strict JSON with integers only.
    #[serde(rename = "statement.parse")]
    StatementParse,
    /// Step 5 (referee's own predicate types only): the payload bytes are their RFC 8785
    /// canonical form. Recorded only when `predicateType` is one of referee's
    /// ([`is_referee_predicate_type`](receipts::statement::is_referee_predicate_type))
    /// and `statement.parse` passed.
    #[serde(rename = "statement.canonical")]
    StatementCanonical,
    /// Step 5: `_type` is in-toto Statement v1.
    #[serde(rename = "statement.type")]
    StatementType,
    /// Step 5: `predicateType` is the expected one.
    #[serde(rename = "statement.predicateType")]
    PredicateType,
    /// Step 5: the Statement has the v1 shape with `{name, digest: {sha256}}` subjects.
    #[serde(rename = "statement.shape")]
    StatementShape,
    /// Step 5: the predicate fits its type's schema.
    #[serde(rename = "predicate.schema")]
    PredicateSchema,
    /// Step 6: one subject: valid name, unique, its file present with that sha256.
    #[serde(rename = "subject")]
    Subject,
    /// Step 6: one bundle file: named by a subject.
    #[serde(rename = "file")]
    File,
    /// Round: the round-opened envelope passes steps 1–5 (trusted signature, in-toto
    /// payload, predicate [`RoundOpened`](receipts::model::RoundOpened)); one check per
    /// failed step, the step's name as target.
    #[serde(rename = "roundOpened.signature")]
    RoundOpenedSignature,
    /// Round: round number, campaign, miners digest, previous receipt and seated entries
    /// of the receipt equal the round-opened statement's; the field as target.
    #[serde(rename = "roundOpened.matches")]
    RoundOpenedMatches,
    /// Round: a revealed seed hashes to its commitment, which the round-opened statement
    /// published (from v8, a beacon round's opening publishes none: its seeds are
    /// re-derived by `seeds.beacon`); the seed's field name as target.
    #[serde(rename = "seeds.commitments")]
    SeedCommitments,
    /// Round (v5): every seed derives from the revealed evaluator secret and the beacon
    /// value, the secret hashes to the commitment and the beacon round is the one the
    /// round-opened statement named, a signed beacon's signature verifies offline, and
    /// the receipt's `practice` flag is the round-opened statement's; the part as target.
    #[serde(rename = "seeds.beacon")]
    SeedsBeacon,
    /// Round: an entry's `scorePpm` is recomputed from its throughput and the first
    /// baseline's; `entries[i]` as target.
    #[serde(rename = "round.scores")]
    RoundScores,
    /// Round: an entry's throughput, min and max are the median (lower middle), min and
    /// max of its runs' throughputs; `entries[i]` as target.
    #[serde(rename = "round.throughput")]
    RoundThroughput,
    /// Round: the frozen campaign's copy (`inputs/campaign.json`, or a schema-1
    /// `inputs/campaign.toml`) has the campaign digest the receipt records.
    #[serde(rename = "inputs.campaign")]
    InputsCampaign,
    /// Round: `inputs/miners.json` hashes to `minersDigest`.
    #[serde(rename = "inputs.miners")]
    InputsMiners,
    /// Round: each entry's diff copy `inputs/patches/<sha256>.diff` (a repository
    /// campaign's commitment copy `inputs/commitments/<sha256>.txt`) hashes to its patch.
    #[serde(rename = "inputs.patches")]
    InputsPatches,
    /// Round: the request-sequence digest regenerated from the revealed seeds and the
    /// bundle's campaign equals `requestSequenceDigest`.
    #[serde(rename = "requestSequence.digest")]
    RequestSequence,
    /// Round (from campaigns that record `min_predicate`): the receipt's predicate
    /// version is at least the campaign's floor; `predicateType` as target.
    #[serde(rename = "round.minPredicate")]
    RoundMinPredicate,
    /// Files: a path the predicate names (a probe log, a correctness file, an engine or
    /// step log, an input copy, the round-opened file) is a subject of the envelope; the
    /// path as target.
    #[serde(rename = "files.named")]
    FilesNamed,
    /// Measurements: a probe log parses, and every run it holds is one the predicate
    /// names for that entry (and every run the predicate names is in it); the file as
    /// target.
    #[serde(rename = "probes.log")]
    ProbeLog,
    /// Measurements: each histogram of a probe decodes within the size limits, holds one
    /// sample per completed request (send lag: per measured request).
    #[serde(rename = "probe.histograms")]
    ProbeHistograms,
    /// Measurements: a probe's SLA percentile and send-lag p50/p99, recomputed from its
    /// histograms by nearest rank.
    #[serde(rename = "probe.percentile")]
    ProbePercentile,
    /// Measurements: a probe's over-bound count (failed requests plus completed ones over
    /// the bound), its failure total and its required request count, recomputed.
    #[serde(rename = "probe.overBound")]
    ProbeOverBound,
    /// Measurements: a probe's verdict, recomputed by MLPerf early stopping against the
    /// campaign's send-lag bound.
    #[serde(rename = "probe.verdict")]
    ProbeVerdict,
    /// Measurements: a probe's throughput, recomputed from its completed count and
    /// duration.
    #[serde(rename = "probe.throughput")]
    ProbeThroughput,
    /// Measurements (v5): what the seeds fix about a probe, recomputed from the
    /// regenerated workload: its sub-stream, warm-up and measured request counts and
    /// input bytes exactly, its output tokens at most the items' `max_tokens`, its
    /// duration no shorter than the scheduled span (every request completed); the probe
    /// log as target.
    #[serde(rename = "probe.plan")]
    ProbePlan,
    /// Measurements: a run's result is its highest passing probe, and it is what the
    /// predicate's run summary says.
    #[serde(rename = "run.result")]
    RunResult,
    /// Measurements: a probe log's median, min, max, validity and outcome follow from its
    /// runs, and equal the predicate's entry (or drift baseline).
    #[serde(rename = "entry.measurement")]
    EntryMeasurement,
    /// Measurements: the drift check's first and drift throughputs, its drift in basis
    /// points and its verdict against the bound, recomputed.
    #[serde(rename = "drift.recomputed")]
    DriftRecomputed,
    /// Measurements: `hardware.changed` is whether the two fingerprints differ.
    #[serde(rename = "hardware.changed")]
    HardwareChanged,
    /// Measurements (v3): the load client's self-test before the round opened kept its
    /// send-lag p99 within the bound it records, and that bound is the campaign's
    /// effective send-lag bound; `clientSelfTest` as target.
    #[serde(rename = "client.selfTest")]
    ClientSelfTest,
    /// Measurements (v3): the capability probe's findings are well formed (one per
    /// feature, in order; `not_needed` exactly on the features the campaign's API profile
    /// does not need; a missing one names a profile field that fixes it) and agree
    /// with the round: a missing finding and no entry ran, under a `process` backend
    /// only; `capabilityProbe` as target.
    #[serde(rename = "capability.probe")]
    CapabilityProbe,
    /// Measurements (v3): a run is invalid for CPU steal exactly when its recorded
    /// `hostLoad` is over the campaign's `max_steal_permille` (a pass row `invalid` while
    /// its probe log measured, an entry's `cpu_steal` failure), and a measured or scored
    /// run is not over it; `entries[i].passes[j]` or `entries[i]` as target.
    #[serde(rename = "host.steal")]
    HostSteal,
    /// Measurements (v5): a run's `hostLoad` against what it contains: `wallMs` at least
    /// the durations of the probes of its probe log (which ran one after another inside
    /// it), `stealMs` at most the whole wall time of every CPU of the host (a tick's
    /// slack each); `entries[i].passes[j]` or `drift.runs[r]` as target.
    #[serde(rename = "host.load")]
    HostLoad,
    /// Measurements (v5): the receipt's `sla` (percentile, latency, bound) is the
    /// campaign's, by which every probe is judged; `sla` as target.
    #[serde(rename = "round.sla")]
    RoundSla,
    /// Measurements (v3): the round's `tokenCount` and every probe log's are the
    /// campaign's `token_count` (absent = `ids`); `tokenCount` or the probe log as target.
    #[serde(rename = "round.tokenCount")]
    TokenCount,
    /// Correctness: an entry's verdict, recomputed from its per-item file with the
    /// campaign's bounds, every item present.
    #[serde(rename = "correctness.verdict")]
    CorrectnessVerdict,
    /// Correctness: every stored per-position distance of an entry's per-item file,
    /// recomputed from the raw top-k of the entry and of the reference the file stores
    /// (`not applicable (no raw logprobs)` for a file without them);
    /// `entries[i].correctness` as target.
    #[serde(rename = "correctness.distances")]
    CorrectnessDistances,
    /// Correctness: an entry's timed-run sample (`loadSampleFile`) recomputed: each run's
    /// selection from the revealed `sampleSeed`, each request's gap from its stored
    /// reference logprobs, the bound the campaign's, and the verdict the entry's status
    /// (`load_outputs_diverge` exactly when a request is over the bound).
    #[serde(rename = "correctness.loadSample")]
    LoadSample,
    /// Binding (v5): a correctness file and a timed-run sample file that record whose
    /// outputs they judged (`measuredFor`, from round/v6) name the entry citing them —
    /// round, index, patch, engine config — and a pass of one of its own runs;
    /// `entries[i].correctness` or `entries[i].correctness.loadSampleFile` as target.
    #[serde(rename = "correctness.entry")]
    CorrectnessEntry,
    /// Correctness (v5): every item's `promptSha256` is the sha256 of the prompt of the
    /// correctness item the revealed `correctnessSeed` draws at its index;
    /// `entries[i].correctness` as target.
    #[serde(rename = "correctness.prompts")]
    CorrectnessPrompts,
    /// Correctness (v5): every generated id is the argmax of the entry's own top-k at its
    /// position (a tie passes either id), save for one id per round that no entry ever
    /// generated, the end of sequence the fixed output length bans;
    /// `entries[i].correctness` as target.
    #[serde(rename = "correctness.greedy")]
    CorrectnessGreedy,
    /// Correctness (v5): the reference answered the same prompt length and, at every
    /// position whose prefix two entries' outputs share, the same top-k in both files;
    /// `entries[i].correctness` as target.
    #[serde(rename = "correctness.reference")]
    CorrectnessReference,
    /// Correctness (v5): each run of an entry's timed-run sample names its run's result
    /// probe, and its `completed` list is drawn from the seeded keep pool ∩ that probe's
    /// measured items (all of them when every request completed), each checked request's
    /// prompt hash its item's; `entries[i].correctness.loadSampleFile` as target.
    #[serde(rename = "correctness.samplePool")]
    LoadSamplePool,
    /// Compliance (v7): an entry's timed-run sample held its streamed texts against
    /// their ids exactly where the campaign's API profile has a detokenizer, each checked
    /// request recording both texts, and the entry is disqualified `text_not_ids` for
    /// exactly the first pair that differs (after `load_outputs_diverge`; a scored entry
    /// has none); `entries[i].correctness.loadSampleFile` as target.
    #[serde(rename = "compliance.textAgainstIds")]
    TextAgainstIds,
    /// Compliance (v7): a challenger's probe logs of the runs that enter its score hold
    /// no request that ended short or long of its exact length, or it is disqualified
    /// `output_length` for exactly the first such pass with its counts (a scored entry
    /// has none); `entries[i].disqualification` as target.
    #[serde(rename = "compliance.outputLength")]
    OutputLength,
    /// Compliance (v9; MLPerf TEST04): a challenger's probe log of each run that enters
    /// its score holds its caching probe exactly where the campaign asks for one — the
    /// first `caching_prompts` items of the run's caching sub-stream in the probe's send
    /// order, its speed-up recomputed and its bound the campaign's — and the entry is disqualified
    /// `caching` for exactly the first run whose repeats decoded faster than the bound (a
    /// scored entry has none); `entries[i].disqualification` as target.
    #[serde(rename = "compliance.caching")]
    Caching,
    /// Binding (v5): a pass row that measured (`measured`, `sla_unmet`, `invalid`) names
    /// its probe log, and every log a row names records the row's run in `measuredFor`
    /// (round, entry, patch, engine config, pass, control flag); `entries[i].passes[j]`
    /// as target.
    #[serde(rename = "probes.entry")]
    ProbeLogEntry,
    /// Binding (v5): each of an entry's run summaries names the probe log of one of its
    /// own non-control pass rows, with that row's `hostLoad`; `entries[i]` as target.
    #[serde(rename = "runs.passes")]
    RunsPasses,
    /// Decision: an entry's status agrees with what it holds (scored: a passed
    /// correctness verdict and a throughput; disqualified: a typed reason; infra_failed:
    /// a reason), and an `infra_failed` round has a reason.
    #[serde(rename = "status.consistent")]
    StatusConsistent,
    /// Decision (v5): a disqualification a run's end gives (the engine died, or no SLA
    /// met) stands on a pass row of the entry that ended so (`crashed`, `sla_unmet`);
    /// from v6 a `left_cpu_set` one on a `crashed` row of its pass with a CPU outside the
    /// engine's pinned set, and an entry is disqualified `run_invalid_twice` in a pass
    /// exactly when its rows there are invalid after a re-run beside valid baseline runs
    /// (no veto); `entries[i].status` as target.
    #[serde(rename = "status.passes")]
    StatusPasses,
    /// Decision (v5): the files withheld before sealing for holding private key material
    /// (`rules::redaction`) are exactly those cited by entries disqualified
    /// `secret_in_output`, as many as each reason's `files`; a check that needs a
    /// withheld file of such an entry is `not applicable (withheld)`.
    #[serde(rename = "secret.withheld")]
    SecretWithheld,
    /// Decision: steps in order, non-overlapping, inside the round's start and end; every
    /// entry and every step after the opening ones at or after `openedAt`.
    #[serde(rename = "timeline")]
    Timeline,
    /// Passes (v3): the round ran the campaign's `runs` passes, and each pass's order is
    /// the one redrawn from the revealed `passSeed` under the campaign's pass order;
    /// `passes` or `passes[i]` as target.
    #[serde(rename = "passes.order")]
    PassOrder,
    /// Passes (v3): a pass is `void` exactly when a baseline run of it failed;
    /// `passes[i]` as target.
    #[serde(rename = "passes.void")]
    PassVoid,
    /// Passes (v3): a run's `pairedRatioPpm` is its throughput over the same pass's first
    /// baseline run; `entries[i].passes[j]` as target.
    #[serde(rename = "paired.ratio")]
    PairedRatio,
    /// Passes (v3): an entry's paired score (median, min, max, coverage) recomputed from
    /// its runs in the counted passes; `entries[i]` as target.
    #[serde(rename = "paired.score")]
    PairedScore,
    /// Passes (v3): the baseline spread and the A/A spread in basis points, and the
    /// campaign bounds they are held to; `noise` as target.
    #[serde(rename = "noise.spread")]
    NoiseSpread,
    /// Passes (v3): the noise verdict (baseline spread against the drift bound first,
    /// then the A/A spread against the margin); `noise` as target.
    #[serde(rename = "noise.verdict")]
    NoiseVerdict,
    /// Passes (v3): the outcome (status, reason, seat, rule, margin, remeasure)
    /// recomputed by the paired decision rule from the passes, and a re-measuring round
    /// seating no challenger; `outcome` as target.
    #[serde(rename = "paired.decision")]
    PairedDecision,
    /// Engines (v3): every entry that started on the Docker backend records its image
    /// (reference, `sha256:` config id, manifest digest when present), the daemon's
    /// version, and the sandbox as inspected (read-only root, init, unprivileged, an
    /// internal network, only read-only binds, the campaign's memory limit); entries of
    /// one image reference ran one image id; `entries[i]` as target.
    #[serde(rename = "engine.docker")]
    EngineDocker,
    /// Engines (v3): every entry that started on the process backend and records its
    /// engine API profile (`engine.api`) records the campaign's (`[backend.api]`
    /// resolved, content/engines.md) and the campaign's memory limit
    /// (`engine.memoryLimitMb`); `entries[i]` as target.
    #[serde(rename = "engine.api")]
    EngineApi,
    /// Engines (v5): every entry that records how it was confined (`engine.isolation`)
    /// records the host uid it ran as and whether it was the engine uid, and was shown
    /// exactly the campaign's declared read-only paths (`[backend] ro_paths`,
    /// content/threat-model.md); `entries[i]` as target.
    #[serde(rename = "engine.sandbox")]
    EngineSandbox,
    /// Engines (v5): an entry's isolation record against the campaign: `engineThreads`
    /// is `hardware.engine_threads` on its CPUs by the runner's rule, a `trusted` sandbox
    /// only under `trusted_engines`, a Docker sandbox and cpuset only on the Docker
    /// backend, pinned CPUs not shared with the client; `entries[i]` as target.
    #[serde(rename = "engine.isolation")]
    EngineIsolation,
    /// Engine logs (v6): the receipt's `limits` are the campaign's `[limits]` (target
    /// `limits`), and every engine log it names is no longer than `engine_log_bytes` and
    /// one marker line (the log as target; content/threat-model.md, Bounded output).
    #[serde(rename = "logs.budget")]
    LogsBudget,
    /// Engine logs (v6): a disqualification's non-empty `logTail` is exactly the tail of
    /// the entry's `engineLog` by `rules::log_tail`; `entries[i]` as target.
    #[serde(rename = "logs.tail")]
    LogsTail,
    /// Chain: the round's `previousReceipt` is the Statement digest of the round before it
    /// in the same campaign, the rounds numbered 1, 2, … without a gap.
    #[serde(rename = "chain.previousReceipt")]
    ChainPrevious,
    /// Chain: the incumbent seated (and `leaderBefore`) is the previous round's
    /// `leaderAfter`; from v3, `outcome.remeasure` is the one the previous round's
    /// outcome calls for.
    #[serde(rename = "chain.incumbent")]
    ChainIncumbent,
    /// Chain: every round of a chain names the same campaign id and digest.
    #[serde(rename = "chain.campaign")]
    ChainCampaign,
    /// Chain: no round's predicate version is older than an earlier round's of the same
    /// chain (a later round cannot shed the checks a newer version added); the bundle as
    /// target.
    #[serde(rename = "chain.version")]
    ChainVersion,
    /// Submission records (archives, a campaign with `submissions/`): a record parses,
    /// is named for its `sha256`, names the campaign it lies in, and once past `fetched`
    /// its commitment is its sha256 and its stored diff has that sha256 and `sizeBytes`;
    /// the record's file as target.
    #[serde(rename = "submissions.record")]
    SubmissionRecord,
    /// Submission records: the event log follows the pipeline's transition table
    /// (`committed` first, every move one the table allows, a gate exactly on
    /// `rejected`, a round exactly on round moves and rising, times not going back) and
    /// `state` and `requeues` are what it gives; the record's file as target.
    #[serde(rename = "submissions.transitions")]
    SubmissionTransitions,
    /// Submission records against the sealed rounds: every round an event names has a
    /// receipt (or is the round in progress) that seated the submission with its miner,
    /// each outcome is its entry's status and the requeue after it the rule's, every
    /// challenger of a receipt has its record moved so, an incumbent's record stays
    /// `scored` from an earlier round, and a submission queued before a round started
    /// was seated in it; the record's file (or the round's entry) as target.
    #[serde(rename = "submissions.rounds")]
    SubmissionRounds,
    /// Submission records against the sealed rounds of a Docker campaign: every entry
    /// that ran the submission (as a challenger or the incumbent) ran the image its
    /// record holds, `engine.docker.imageId` equal to the record's `image.imageId`; the
    /// record's file as target.
    #[serde(rename = "submissions.image")]
    SubmissionImage,
    /// Submission records of a repository campaign: the copy of what the manifest
    /// checks read (`repositories/<sha256>.json`) lists a tree whose digest is the
    /// record's `treeSha256`, its texts and manifest are the listed files', and the
    /// manifest, Dockerfile and licence checks run again over it give the record's
    /// `manifestSha256` and `validation`; the record's file as target.
    #[serde(rename = "submissions.manifest")]
    SubmissionManifest,
    /// Submission records of a repository campaign: an admitted record's hotkey is a
    /// competition hotkey of its coldkey, and the coldkey's window (`max_per_window`
    /// over `rate_window_h`) had a slot for it; a record refused over the window had
    /// none; the record's file as target.
    #[serde(rename = "submissions.queue")]
    SubmissionQueue,
    /// Repository submission records with a review (content/review.md): the verdicts
    /// follow from the findings and the LLM's transcript, copy detection recomputed from
    /// the recorded fingerprints gives the recorded copy outcome, a resolution only on
    /// `NEEDS-HUMAN`, and the state follows the decision; the record's file as target.
    #[serde(rename = "submissions.review")]
    SubmissionReview,
    /// Rerun bundle: `original.statement.json` is a subject, hashes to the predicate's
    /// `original.statementDigest` and is the round Statement (type, campaign, round) it
    /// names; `original` as target.
    #[serde(rename = "rerun.original")]
    RerunOriginal,
    /// Rerun bundle: the tolerance follows from its basis, each part's verdict from its
    /// findings and the overall verdict from the parts (`receipts::rules::rerun`);
    /// `verdict` as target.
    #[serde(rename = "rerun.verdict")]
    RerunVerdict,
    /// Log (step 7): the checkpoints of the round's tlog-proofs (`rounds/<n>.proof`) are
    /// signed by the pinned log key (keyring role `log`) for the receipt's origin.
    #[serde(rename = "log.checkpoint")]
    LogCheckpoint,
    /// Log: the round-opened entry, rebuilt from `round-opened.dsse.json`, is included at
    /// the index the receipt records; fails with `--require-log` for a round not logged.
    #[serde(rename = "log.roundOpened")]
    LogRoundOpened,
    /// Log: the receipt entry, rebuilt from `receipt.dsse.json`, is included.
    #[serde(rename = "log.receipt")]
    LogReceipt,
    /// Log: the opening, sealing and current checkpoints, and an older one the verifier
    /// holds (`--checkpoint`, or remembered), are prefixes of each other.
    #[serde(rename = "log.consistency")]
    LogConsistency,
    /// Log: the witness cosignature the receipt records is on the opening checkpoint, by
    /// the pinned witness key (keyring role `witness`) of a witness the campaign's
    /// `[log] witnesses` counts, at the recorded time.
    #[serde(rename = "log.witness")]
    LogWitness,
    /// Log, archive: every logged round of every campaign is in the log exactly once, in
    /// chain order, and the log names no round the archive lacks.
    #[serde(rename = "log.archive")]
    LogArchive,
    /// Log: each pass's `measurement` entry (its proof in `rounds/<n>.proof`, its signed
    /// statement under `<campaign>/statements/measurement/`) is in the log between the
    /// round's round-opened and receipt entries, in pass order, and names every file the
    /// pass's rows cite with the digest the bundle holds.
    #[serde(rename = "log.measurements")]
    LogMeasurements,
    /// Log, archive: every logged submission is in a round, rejected by a logged
    /// `gate-rejection`, a duplicate, or still waiting; each round took exactly the
    /// queued submissions logged before its round-opened entry.
    #[serde(rename = "log.submissions")]
    LogSubmissions,
    /// Log, archive: no round-opened entry without a sealed round (an abandoned round).
    #[serde(rename = "log.abandoned")]
    LogAbandoned,
    /// Archive, a campaign's title (content/title.md): the title state, each holding
    /// period's edge, each move and each revocation recomputed from the chain of sealed
    /// rounds and signed revocations; a confirmation or re-measurement round that names
    /// another holder than the chain gives (a title moved without cause) fails here.
    #[serde(rename = "title.chain")]
    TitleChain,
    /// v7: the round says what it was for and its clock (`kind`, `clock`), and a
    /// confirmation's challenger and holder, or a re-measurement's holder, are entries it
    /// seated (content/title.md).
    #[serde(rename = "title.round")]
    TitleRound,
    /// Log, site: the instant a bundle is published as of — the earliest cosignature, by a
    /// witness the campaign's `[log] witnesses` counts, on a checkpoint of its
    /// `rounds/<n>.proof` that holds its receipt — exists when the campaign's `[log]
    /// required` asks for one; `not applicable (time not witnessed)` otherwise.
    #[serde(rename = "log.publication")]
    LogPublication,
    /// Repository entries of a round (content/review.md, In the round; required from
    /// v8 for every non-baseline entry of a repository campaign): the entry's `review` is
    /// the one its input copy of the review record gives, that record's verdicts follow
    /// from its findings and its LLM transcript, its rules digest is a known rules file's,
    /// its decision is `PASS`, and a resolution is on a `NEEDS-HUMAN` only, `PASS` or
    /// `FAIL`, in a statement copy that hashes to the record's digest, says what the
    /// record says and is signed by an evaluator key of the keyring with the keyid
    /// recorded; `entries[i].review` as target.
    #[serde(rename = "entries.review")]
    EntryReview,
    /// Round (v8): a round whose seeds derive from a drand beacon was opened before the
    /// beacon round it named was produced (quicknet: genesis + 3 s × (round − 1)), so
    /// its secret and seats could not be chosen knowing the value: the signed `openedAt`
    /// (`openedAt`), and the witness cosignature on the opening checkpoint
    /// (`openingWitness`, `not applicable` without one), each before that time.
    #[serde(rename = "seeds.beaconOrder")]
    SeedsBeaconOrder,
    /// v8, a `decide` campaign (content/s1-pro-speed.md): the round's `decide` record is
    /// there exactly for a `decide` campaign, with the campaign's track and workload kind.
    #[serde(rename = "decide.round")]
    DecideRound,
    /// v8, an s1-pro-speed campaign: every entry whose engine started has its weights
    /// identity, each file's recorded sha256 the campaign's pinned one
    /// (`receipts::rules::weights::compare`); an entry whose files differ is disqualified
    /// for it; `decide.weights[i]` per entry as target.
    #[serde(rename = "decide.weights")]
    DecideWeights,
    /// v8, a `decide` campaign: an entry's gate file recomputed — the campaign's
    /// decisions and bounds, items 0, 1, … the campaign's `gate_items` fresh items (their
    /// prompts' sha256 regenerated from the seeds), each item's distance from its two
    /// vectors, every group mean, the verdict equal to the entry's summary, and the run
    /// that answered; `entries[i].correctness` as target.
    #[serde(rename = "decide.gate")]
    DecideGate,
    /// Track s1-fast-speed (content/s1-fast-speed.md): `fastTrack` is recorded, with the
    /// campaign's agreement reference and item count and one row per entry, each row's
    /// price, cost per decision and agreement ppm recomputed from its declared resources,
    /// the campaign's prices, the entry's throughput and its matched count.
    #[serde(rename = "fastTrack.costs")]
    FastTrackCosts,
    /// Track s1-fast-speed: the challenger seated on cost, recomputed from both gates,
    /// the throughput seat, the cost margin and the round's noise floor.
    #[serde(rename = "fastTrack.decision")]
    FastTrackDecision,
    /// v9, track s1-fast-speed: each row's agreement file — its entry's, the campaign's
    /// reference, `agreementItems` items in order with the regenerated gate prompts, the
    /// same reference decisions as every other file of the round — and its
    /// `agreementMatched` recounted from it; `fastTrack.entries[i]` as target.
    #[serde(rename = "fastTrack.agreement")]
    FastTrackAgreement,
    /// v9, a round on a rented pod (content/pods.md): `pod` is recorded when the campaign
    /// rents one, and each allocation's steps are steps of the `Pod` group, renting
    /// first, its id the one the renting step's log names and its agent's sha256 the
    /// shipped binary's digest the shipping step's log names; `pod.allocations[i]` as
    /// target.
    #[serde(rename = "pod.agent")]
    PodAgent,
    /// A parallel round (v9; content/noise.md, Parallel passes): its layout is the campaign's
    /// `[parallel]` and `[isolation] pin`, each pass's placement the one redrawn from the
    /// revealed `passSeed`, each run's GPUs those of its lane; `parallel`, `passes[i]`
    /// or `entries[i].passes[j]` as target.
    #[serde(rename = "passes.placement")]
    PassPlacement,
    /// Measurements (v9): every run that reached its SLA run has a telemetry file (a
    /// subject), whose summary (`passes[j].telemetry`: samples, longest gap, extremes,
    /// software throttle counts, the violation under the campaign's
    /// `min_sm_clock_mhz`) is recomputed from it (`receipts::rules::telemetry`); a run
    /// with a violation is not `measured` or `sla_unmet`, and an entry's `telemetry`
    /// failure names a run's violation; `entries[i].passes[j]` or `entries[i]` as target.
    #[serde(rename = "host.telemetry")]
    HostTelemetry,
    /// v9, track s1-fast-speed (content/s1-fast-speed.md, The gates): a challenger whose
    /// row fails a gate against the incumbent's (capability, then agreement;
    /// `receipts::rules::cost::gate_failure`) is not scored, and a gate disqualification
    /// names the gate its row fails with both scores; `entries[i].status` as target.
    #[serde(rename = "fastTrack.gates")]
    FastTrackGates,
}

impl CheckName {
    /// The dotted name, as in `--json` output.
    pub fn as_str(&self) -> &'static str {
        match self {
            CheckName::EnvelopeParse => "envelope.parse",
            CheckName::EnvelopeCanonical => "envelope.canonical",
            CheckName::PayloadType => "envelope.payloadType",
            CheckName::Base64 => "envelope.base64",
            CheckName::SignatureLength => "signature.length",
            CheckName::Signatures => "signature.trusted",
            CheckName::Keyid => "signature.keyid",
            CheckName::StatementParse => "statement.parse",
            CheckName::StatementCanonical => "statement.canonical",
            CheckName::StatementType => "statement.type",
            CheckName::PredicateType => "statement.predicateType",
            CheckName::StatementShape => "statement.shape",
            CheckName::PredicateSchema => "predicate.schema",
            CheckName::Subject => "subject",
            CheckName::File => "file",
            CheckName::RoundOpenedSignature => "roundOpened.signature",
            CheckName::RoundOpenedMatches => "roundOpened.matches",
            CheckName::SeedCommitments => "seeds.commitments",
            CheckName::SeedsBeacon => "seeds.beacon",
            CheckName::RoundScores => "round.scores",
            CheckName::RoundThroughput => "round.throughput",
            CheckName::InputsCampaign => "inputs.campaign",
            CheckName::InputsMiners => "inputs.miners",
            CheckName::InputsPatches => "inputs.patches",
            CheckName::RequestSequence => "requestSequence.digest",
            CheckName::RoundMinPredicate => "round.minPredicate",
            CheckName::FilesNamed => "files.named",
            CheckName::ProbeLog => "probes.log",
            CheckName::ProbeHistograms => "probe.histograms",
            CheckName::ProbePercentile => "probe.percentile",
            CheckName::ProbeOverBound => "probe.overBound",
            CheckName::ProbeVerdict => "probe.verdict",
            CheckName::ProbeThroughput => "probe.throughput",
            CheckName::ProbePlan => "probe.plan",
            CheckName::RunResult => "run.result",
            CheckName::EntryMeasurement => "entry.measurement",
            CheckName::DriftRecomputed => "drift.recomputed",
            CheckName::HardwareChanged => "hardware.changed",
            CheckName::ClientSelfTest => "client.selfTest",
            CheckName::CapabilityProbe => "capability.probe",
            CheckName::HostSteal => "host.steal",
            CheckName::HostLoad => "host.load",
            CheckName::RoundSla => "round.sla",
            CheckName::TokenCount => "round.tokenCount",
            CheckName::CorrectnessVerdict => "correctness.verdict",
            CheckName::CorrectnessDistances => "correctness.distances",
            CheckName::LoadSample => "correctness.loadSample",
            CheckName::CorrectnessEntry => "correctness.entry",
            CheckName::CorrectnessPrompts => "correctness.prompts",
            CheckName::CorrectnessGreedy => "correctness.greedy",
            CheckName::CorrectnessReference => "correctness.reference",
            CheckName::LoadSamplePool => "correctness.samplePool",
            CheckName::TextAgainstIds => "compliance.textAgainstIds",
            CheckName::OutputLength => "compliance.outputLength",
            CheckName::Caching => "compliance.caching",
            CheckName::ProbeLogEntry => "probes.entry",
            CheckName::RunsPasses => "runs.passes",
            CheckName::StatusConsistent => "status.consistent",
            CheckName::StatusPasses => "status.passes",
            CheckName::SecretWithheld => "secret.withheld",
            CheckName::Timeline => "timeline",
            CheckName::PassOrder => "passes.order",
            CheckName::PassVoid => "passes.void",
            CheckName::PairedRatio => "paired.ratio",
            CheckName::PairedScore => "paired.score",
            CheckName::NoiseSpread => "noise.spread",
            CheckName::NoiseVerdict => "noise.verdict",
            CheckName::PairedDecision => "paired.decision",
            CheckName::EngineDocker => "engine.docker",
            CheckName::EngineApi => "engine.api",
            CheckName::EngineSandbox => "engine.sandbox",
            CheckName::EngineIsolation => "engine.isolation",
            CheckName::LogsBudget => "logs.budget",
            CheckName::LogsTail => "logs.tail",
            CheckName::ChainPrevious => "chain.previousReceipt",
            CheckName::ChainIncumbent => "chain.incumbent",
            CheckName::ChainCampaign => "chain.campaign",
            CheckName::ChainVersion => "chain.version",
            CheckName::SubmissionRecord => "submissions.record",
            CheckName::SubmissionTransitions => "submissions.transitions",
            CheckName::SubmissionRounds => "submissions.rounds",
            CheckName::SubmissionImage => "submissions.image",
            CheckName::SubmissionManifest => "submissions.manifest",
            CheckName::SubmissionQueue => "submissions.queue",
            CheckName::SubmissionReview => "submissions.review",
            CheckName::RerunOriginal => "rerun.original",
            CheckName::RerunVerdict => "rerun.verdict",
            CheckName::LogCheckpoint => "log.checkpoint",
            CheckName::LogRoundOpened => "log.roundOpened",
            CheckName::LogReceipt => "log.receipt",
            CheckName::LogConsistency => "log.consistency",
            CheckName::LogWitness => "log.witness",
            CheckName::LogArchive => "log.archive",
            CheckName::LogMeasurements => "log.measurements",
            CheckName::LogSubmissions => "log.submissions",
            CheckName::LogAbandoned => "log.abandoned",
            CheckName::TitleChain => "title.chain",
            CheckName::TitleRound => "title.round",
            CheckName::LogPublication => "log.publication",
            CheckName::EntryReview => "entries.review",
            CheckName::SeedsBeaconOrder => "seeds.beaconOrder",
            CheckName::DecideRound => "decide.round",
            CheckName::DecideWeights => "decide.weights",
            CheckName::DecideGate => "decide.gate",
            CheckName::FastTrackCosts => "fastTrack.costs",
            CheckName::FastTrackDecision => "fastTrack.decision",
            CheckName::FastTrackAgreement => "fastTrack.agreement",
            CheckName::PodAgent => "pod.agent",
            CheckName::PassPlacement => "passes.placement",
            CheckName::HostTelemetry => "host.telemetry",
            CheckName::FastTrackGates => "fastTrack.gates",
        }
    }
}

/// Why a check failed: a closed set; each message names the file (or envelope field) it
/// concerns.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(
    tag = "code",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum FailureReason {
    /// The envelope file cannot be read (missing, a directory, unreadable).
    #[error("`{file}` cannot be read: {message}")]
    EnvelopeUnreadable {
        /// The file.
        file: String,
        /// The I/O error.
        message: String,
    },
    /// The envelope file is over the size limit.
    #[error("`{file}` is {size} bytes, over the limit of {limit}")]
    EnvelopeTooLarge {
        /// The file.
        file: String,
        /// Its size (or limit + 1 when reading stopped there), bytes.
        size: usize,
        /// The limit, bytes.
        limit: usize,
    },
    /// Invalid UTF-8.
    #[error("`{file}` is not UTF-8 (byte {offset})")]
    InvalidUtf8 {
        /// The file (or the envelope's payload).
        file: String,
        /// Byte offset.
        offset: usize,
    },
    /// A lone surrogate escape.
    #[error("`{file}` holds a lone surrogate escape at byte {offset}")]
    LoneSurrogate {
        /// The file.
        file: String,
        /// Byte offset.
        offset: usize,
    },
    /// A duplicate object key.
    #[error("`{file}` holds key `{key}` twice in the object at `{path}`")]
    DuplicateKey {
        /// The file.
        file: String,
        /// JSON pointer of the object.
        path: String,
        /// The key.
        key: String,
    },
    /// Not JSON, too deep, or not of the expected shape.
    #[error("`{file}` is not valid: {message}")]
    InvalidJson {
        /// The file.
        file: String,
        /// The parser's message.
        message: String,
    },
    /// An envelope key equal to a known key up to case.
    #[error("`{file}` has key `{key}`, which differs from `{known}` only in case")]
    CaseFoldKey {
        /// The file.
        file: String,
        /// The key found.
        key: String,
        /// The known key.
        known: String,
    },
    /// The envelope file is not byte-identical to its canonical JSON form (not checked
    /// with [`VerifyOptions::foreign`](crate::VerifyOptions::foreign)).
    #[error("`{file}` is not canonical JSON (RFC 8785)")]
    NonCanonicalEnvelope {
        /// The file.
        file: String,
    },
    /// `payloadType` is wrong.
    #[error("`{file}` payloadType is `{found}`, expected `application/vnd.in-toto+json`")]
    PayloadTypeMismatch {
        /// The envelope file.
        file: String,
        /// What it is.
        found: String,
    },
    /// A base64 field does not decode.
    #[error("`{file}` field `{field}` is not valid base64: {message}")]
    BadBase64 {
        /// The envelope file.
        file: String,
        /// `payload` or `signatures[i].sig`.
        field: String,
        /// The decoder's message.
        message: String,
    },
    /// A base64 field decodes but is not standard padded base64 (accepted with
    /// [`VerifyOptions::foreign`](crate::VerifyOptions::foreign)).
    #[error("`{file}` field `{field}` is not standard padded base64")]
    NonStandardBase64 {
        /// The envelope file.
        file: String,
        /// The field.
        field: String,
    },
    /// A signature that is not 64 bytes.
    #[error("`{file}` field `{field}` is {length} bytes, not 64")]
    SignatureLength {
        /// The envelope file.
        file: String,
        /// `signatures[i].sig`.
        field: String,
        /// Its length in bytes.
        length: usize,
    },
    /// The envelope has no signatures.
    #[error("`{file}` has no signatures")]
    NoSignatures {
        /// The envelope file.
        file: String,
    },
    /// No signature verifies under any key of the keyring.
    #[error(
        "none of the {signatures} signatures of `{file}` verifies under a trusted key (the signatures name keyid {})",
        .keyids.join(", ")
    )]
    NoTrustedSignature {
        /// The envelope file.
        file: String,
        /// Signatures in the envelope.
        signatures: usize,
        /// The keyid each signature names (its hint: untrusted, escaped and cut to 64
        /// characters; `(none)` for an empty one), in envelope order.
        keyids: Vec<String>,
    },
    /// A signature verified under a keyring key that is not valid at the verification time.
    #[error("`{file}` is signed by key `{keyid}`, which is not valid at {at}")]
    KeyOutsideValidity {
        /// The envelope file.
        file: String,
        /// The key's keyid.
        keyid: String,
        /// The verification time.
        at: Timestamp,
    },
    /// Fewer distinct valid trusted keys than the threshold.
    #[error("`{file}` is signed by {counted} distinct trusted keys, {threshold} required")]
    ThresholdNotMet {
        /// The envelope file.
        file: String,
        /// Keys that counted.
        counted: usize,
        /// The threshold.
        threshold: usize,
    },
    /// A signature verified under a trusted key, but its keyid hint is not that key's
    /// keyid: refused for referee's own envelopes, accepted with
    /// [`VerifyOptions::foreign`](crate::VerifyOptions::foreign). The message names the
    /// file and field, like every other reason, then says
    /// `signature valid under key <keyid>; keyid hint <hint> differs` (each in backticks).
    #[error(
        "`{file}` field `{field}`: signature valid under key `{keyid}`; keyid hint `{hint}` differs"
    )]
    KeyidHintDiffers {
        /// The envelope file.
        file: String,
        /// `signatures[i].keyid`.
        field: String,
        /// The keyid of the trusted key the signature verifies under.
        keyid: String,
        /// The keyid hint written (empty when absent).
        hint: String,
    },
    /// A float or an integer of 2^53 or more in the payload.
    #[error("`{file}` payload has number `{value}` at `{path}`: integers below 2^53 only")]
    NonIntegerNumber {
        /// The envelope file.
        file: String,
        /// JSON pointer.
        path: String,
        /// The number.
        value: String,
    },
    /// A payload of one of referee's own predicate types that is not byte-identical to its
    /// RFC 8785 canonical form (whitespace, key order, escaping).
    #[error("`{file}` payload is not canonical JSON (RFC 8785), which `{predicate_type}` requires")]
    NonCanonicalPayload {
        /// The envelope file.
        file: String,
        /// The payload's predicate type.
        predicate_type: String,
    },
    /// `_type` is not in-toto Statement v1.
    #[error("`{file}` payload _type is `{found}`, expected `https://in-toto.io/Statement/v1`")]
    WrongStatementType {
        /// The envelope file.
        file: String,
        /// What it is (empty when absent or not a string).
        found: String,
    },
    /// `predicateType` is not the expected one (or missing).
    #[error("`{file}` payload predicateType is `{found}`, expected `{expected}`")]
    WrongPredicateType {
        /// The envelope file.
        file: String,
        /// What it is.
        found: String,
        /// What was expected.
        expected: String,
    },
    /// The Statement does not have the v1 shape (subjects, fields).
    #[error("`{file}` payload is not an in-toto Statement v1: {message}")]
    BadStatement {
        /// The envelope file.
        file: String,
        /// What does not fit.
        message: String,
    },
    /// The predicate does not fit its type's schema.
    #[error("`{file}` predicate does not fit `{predicate_type}`: {message}")]
    SchemaInvalid {
        /// The envelope file.
        file: String,
        /// The predicate type.
        predicate_type: String,
        /// What does not fit.
        message: String,
    },
    /// A subject name that is not a safe relative path.
    #[error("subject `{name}` is not a valid bundle path: {rule}")]
    BadSubjectName {
        /// The name.
        name: String,
        /// The rule it breaks.
        rule: String,
    },
    /// Two subjects with one name.
    #[error("subject `{name}` appears more than once")]
    DuplicateSubject {
        /// The name.
        name: String,
    },
    /// A subject whose file is not in the bundle.
    #[error("subject `{name}` has no file in the bundle")]
    SubjectMissingFile {
        /// The name.
        name: String,
    },
    /// A bundle file no subject names.
    #[error("file `{name}` is in the bundle but no subject names it")]
    FileNotInSubjects {
        /// The file.
        name: String,
    },
    /// A bundle entry that is a symlink or special file, or has a non-UTF-8 name.
    #[error("`{name}` in the bundle is a {kind}; bundles hold regular files only")]
    NotRegularFile {
        /// The entry.
        name: String,
        /// `symlink`, `special file` or `file with a non-UTF-8 name`.
        kind: String,
    },
    /// A file whose sha256 is not its subject's.
    #[error("file `{name}` has sha256 `{actual}`, its subject says `{expected}`")]
    DigestMismatch {
        /// The file.
        name: String,
        /// The subject's digest (boxed, as are the other digests of a failure: a
        /// `Result` of a check stays small).
        expected: Box<Sha256Hex>,
        /// The file's digest.
        actual: Box<Sha256Hex>,
    },
    /// A file or the bundle directory that cannot be read.
    #[error("`{name}` cannot be read: {message}")]
    FileUnreadable {
        /// The file or directory.
        name: String,
        /// The I/O error.
        message: String,
    },
    /// The round's `roundOpened` path is not a subject of the bundle (so its digest is not
    /// signed).
    #[error("round-opened file `{file}` is not a subject of the bundle")]
    RoundOpenedNotSubject {
        /// The path the predicate names.
        file: String,
    },
    /// A field of the receipt differs from the round-opened statement's.
    #[error(
        "`receipt.dsse.json` predicate field `{field}` is `{receipt}` but round-opened `{file}` says `{round_opened}`"
    )]
    RoundOpenedMismatch {
        /// The round-opened file.
        file: String,
        /// The field, e.g. `minersDigest` or `entries[2]`.
        field: String,
        /// The receipt's value, rendered (`none` when absent).
        receipt: String,
        /// The round-opened statement's value, rendered (`none` when absent).
        round_opened: String,
    },
    /// A revealed seed whose sha256(seed ‖ salt) is not its commitment.
    #[error(
        "`receipt.dsse.json` seed `{seed}`: sha256(seed ‖ salt) is `{actual}`, its commitment says `{commitment}`"
    )]
    SeedInconsistent {
        /// The seed's field, e.g. `seeds.itemSeed`.
        seed: String,
        /// The commitment written.
        commitment: Box<Sha256Hex>,
        /// sha256(seed ‖ salt).
        actual: Box<Sha256Hex>,
    },
    /// A seed commitment that is not the one published when the round opened.
    #[error(
        "`receipt.dsse.json` seed `{seed}` has commitment `{receipt}` but round-opened `{file}` published `{round_opened}`"
    )]
    SeedCommitmentMismatch {
        /// The round-opened file.
        file: String,
        /// The seed's field, e.g. `seeds.itemSeed`.
        seed: String,
        /// The receipt's commitment.
        receipt: Box<Sha256Hex>,
        /// The round-opened statement's commitment.
        round_opened: Box<Sha256Hex>,
    },
    /// An entry's `scorePpm` differs from the one recomputed from the throughputs.
    #[error(
        "`receipt.dsse.json` entries[{index}].scorePpm is {}, recomputed {} (throughput {} against first baseline {} milli-req/s)",
        show(.found), show(.expected), show(.throughput_milli_rps), show(.baseline_milli_rps)
    )]
    ScoreMismatch {
        /// The entry's index.
        index: u32,
        /// The score written, ppm.
        found: Option<i64>,
        /// The recomputed score, ppm (`None` when the entry is not scored or there is no
        /// scored baseline at index 0).
        expected: Option<i64>,
        /// The entry's throughput, milli-requests/s.
        throughput_milli_rps: Option<u64>,
        /// The first baseline's throughput, milli-requests/s.
        baseline_milli_rps: Option<u64>,
    },
    /// An entry's throughput, min or max is not the median, min or max of its runs.
    #[error(
        "`receipt.dsse.json` entries[{index}].{field} is {}, its runs give {}",
        show(.found), show(.expected)
    )]
    ThroughputMismatch {
        /// The entry's index.
        index: u32,
        /// `throughputMilliRps`, `throughputMinMilliRps` or `throughputMaxMilliRps`.
        field: String,
        /// The value written, milli-requests/s.
        found: Option<u64>,
        /// The value recomputed from the runs, milli-requests/s (`None` when a run has no
        /// throughput or there are no runs).
        expected: Option<u64>,
    },
    /// An input copy the receipt's numbers refer to is missing or unreadable.
    #[error("`{file}` cannot be read: {message}")]
    InputMissing {
        /// The bundle file.
        file: String,
        /// The I/O error.
        message: String,
    },
    /// An input copy does not hash to the digest the receipt records for it.
    #[error("`{file}` hashes to `{actual}`, but the receipt records {field} `{recorded}`")]
    InputDigestMismatch {
        /// The bundle file.
        file: String,
        /// The predicate field holding the digest (`campaign.digest`, `minersDigest`,
        /// `patch`).
        field: String,
        /// The digest recorded.
        recorded: Box<Sha256Hex>,
        /// The file's sha256.
        actual: Box<Sha256Hex>,
    },
    /// An input copy does not parse or does not fit the receipt.
    #[error("`{file}`: {message}")]
    InputInvalid {
        /// The bundle file.
        file: String,
        /// What is wrong.
        message: String,
    },
    /// The request sequence regenerated from the seeds and the campaign differs.
    #[error(
        "`receipt.dsse.json` requestSequenceDigest is `{recorded}`, the revealed seeds and the \
         bundle's campaign give `{recomputed}`"
    )]
    RequestSequenceMismatch {
        /// The digest recorded.
        recorded: Box<Sha256Hex>,
        /// The digest regenerated.
        recomputed: Box<Sha256Hex>,
    },
    /// A file the predicate names (field `field`) is not a subject of the envelope, so
    /// nothing signed says what it holds.
    #[error("`receipt.dsse.json` {field} names `{file}`, which is not a subject of the bundle")]
    FileNotNamed {
        /// The predicate field, e.g. `entries[1].runs[0].probeLog`.
        field: String,
        /// The path it names.
        file: String,
    },
    /// A raw file the verifier recomputes from was withheld before sealing: it held
    /// private key material, and holds the withheld line of `rules::redaction` instead.
    #[error("`{file}` was withheld before sealing: it held private key material ({bytes} bytes)")]
    Withheld {
        /// The bundle file.
        file: String,
        /// Its size before it was withheld, bytes.
        bytes: u64,
    },
    /// A raw file the verifier recomputes from (probe log, correctness file, histogram
    /// blob) cannot be read, parsed or decoded within its limits.
    #[error("`{file}` cannot be used: {message}")]
    ArtifactUnreadable {
        /// The bundle file (with the field inside it, for a histogram).
        file: String,
        /// What is wrong.
        message: String,
    },
    /// A value written in the predicate or a raw file differs from the one recomputed from
    /// the raw files: both shown (`none` when absent).
    #[error("`{file}` {field} is {claimed}, recomputed {recomputed}")]
    Recomputed {
        /// The file holding the claimed value (`receipt.dsse.json` for the predicate).
        file: String,
        /// The field, e.g. `runs[0].probes[2].overBound`.
        field: String,
        /// The value written.
        claimed: String,
        /// The value recomputed.
        recomputed: String,
    },
    /// A probe log holds a run the predicate does not name for its entry.
    #[error("`{file}` holds run {run}, which the predicate does not name for this entry")]
    UnknownRun {
        /// The probe log.
        file: String,
        /// The run number.
        run: u32,
    },
    /// A run the predicate names is not in its probe log.
    #[error("`{file}` has no run {run}, which the predicate names")]
    RunNotLogged {
        /// The probe log.
        file: String,
        /// The run number.
        run: u32,
    },
    /// A correctness file lacks an item (its items must be 0, 1, … and as many as the
    /// campaign's and the summary's count).
    #[error("`{file}` has no item {index} ({found} items, expected {expected})")]
    MissingItem {
        /// The correctness file.
        file: String,
        /// The first missing (or misplaced) item index.
        index: u32,
        /// Items found.
        found: u32,
        /// Items expected.
        expected: u32,
    },
    /// An entry's (or the round's) status contradicts what it holds.
    #[error("`receipt.dsse.json` {field} is `{status}` but {problem}")]
    StatusInconsistent {
        /// `entries[i].status` or `outcome.status`.
        field: String,
        /// The status written.
        status: String,
        /// What contradicts it.
        problem: String,
    },
    /// Two times of the timeline are out of order.
    #[error("`receipt.dsse.json` {field} is {at}, {rule} {bound_field} ({bound})")]
    TimelineOrder {
        /// The field whose time is wrong, e.g. `steps[3].startedAt`.
        field: String,
        /// Its time.
        at: Timestamp,
        /// `before` or `after`.
        rule: String,
        /// The field it must not precede or follow.
        bound_field: String,
        /// That field's time.
        bound: Timestamp,
    },
    /// A round of a chain is missing: the next round found has another number.
    #[error(
        "chain of `{chain}`: round {expected} is missing, the next round is {found} ({bundle})"
    )]
    ChainGap {
        /// The rounds directory.
        chain: String,
        /// The round number expected.
        expected: u64,
        /// The round number found instead.
        found: u64,
        /// The bundle found.
        bundle: String,
    },
    /// A round's predicate says another round number than its place in the chain.
    #[error("chain of `{chain}`: bundle `{bundle}` says round {round}, its place is round {place}")]
    ChainReordered {
        /// The rounds directory.
        chain: String,
        /// The bundle.
        bundle: String,
        /// The round number its predicate records.
        round: u64,
        /// The round number of its place (its directory).
        place: u64,
    },
    /// A round's `previousReceipt` is not the Statement digest of the round before it.
    #[error(
        "round {round} previousReceipt is {}, the round before it has Statement digest {}",
        show(.claimed), show(.recomputed)
    )]
    ChainFork {
        /// The round.
        round: u64,
        /// Its `previousReceipt`.
        claimed: Option<Box<Sha256Hex>>,
        /// The previous round's Statement digest (`None` for round 1).
        recomputed: Option<Box<Sha256Hex>>,
    },
    /// A round of the chain names another campaign (id or digest) than the chain's.
    #[error("round {round} {field} is `{claimed}`, the chain's campaign is `{chain_value}`")]
    ChainCampaign {
        /// The round.
        round: u64,
        /// `campaign.id` or `campaign.digest`.
        field: String,
        /// Its value.
        claimed: String,
        /// The chain's (its first round's).
        chain_value: String,
    },
    /// A round's incumbent (or `leaderBefore`) is not the previous round's `leaderAfter`.
    #[error("round {round} {field} is {claimed}, round {previous} left the seat to {recomputed}")]
    ChainIncumbent {
        /// The round.
        round: u64,
        /// `outcome.leaderBefore` or `entries[i]` (the incumbent seated).
        field: String,
        /// Its value, rendered (`baseline` for none).
        claimed: String,
        /// The previous round.
        previous: u64,
        /// The previous round's `leaderAfter`, rendered (`baseline` for none).
        recomputed: String,
    },
    /// `[log] required`: no witness the campaign counts cosigned a checkpoint holding
    /// the round's receipt (content/transparency-log.md, Witnesses).
    #[error("round {round}'s publication is not witnessed: {why}")]
    PublicationNotWitnessed {
        /// The round.
        round: u64,
        /// Why: no log, no proofs, or no cosignature by a counted witness.
        why: String,
    },
    /// `--require-log`: the round has no entry in a transparency log.
    #[error("round {round} was not logged: {why}")]
    NotLogged {
        /// The round.
        round: u64,
        /// Why: its receipt records no log, or its proofs are missing.
        why: String,
    },
    /// A transparency log file (proof, checkpoint, tile) is missing or fails a check; the
    /// message is the log library's named error.
    #[error("`{file}`: {message}")]
    Log {
        /// The file.
        file: String,
        /// What failed.
        message: String,
    },
    /// A checkpoint is not a prefix of a larger one of the same log.
    #[error("the checkpoint of size {old} is not a prefix of the one of size {new}: {message}")]
    LogInconsistent {
        /// The smaller size.
        old: u64,
        /// The larger size.
        new: u64,
        /// Why.
        message: String,
    },
    /// The log holds fewer entries than a checkpoint the verifier knows.
    #[error(
        "a checkpoint of size {known} ({source_name}) is known, the log's is {size}: the log was truncated or rewritten"
    )]
    LogShrank {
        /// The known checkpoint's size.
        known: u64,
        /// Where it came from (`--checkpoint <file>`, remembered `<file>`).
        source_name: String,
        /// The log's checkpoint size.
        size: u64,
    },
    /// An entry's `engine.docker` record is missing or not what a sandboxed container
    /// of the campaign has.
    #[error("`receipt.dsse.json` {field}: {message}")]
    DockerRecord {
        /// The field, e.g. `entries[2].engine.docker.imageId`.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// An entry's `engine.isolation` record lacks what v5 requires or is not what the
    /// campaign declares.
    #[error("`receipt.dsse.json` {field}: {message}")]
    IsolationRecord {
        /// The field, e.g. `entries[2].engine.isolation.roPaths`.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// The receipt's `limits` are not the campaign's, or an engine log is longer than
    /// they allow (v6).
    #[error("`receipt.dsse.json` {field}: {message}")]
    LimitsRecord {
        /// `limits`, or the engine log's bundle path.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A disqualification's log tail is not the tail of the entry's engine log (v6).
    #[error("`receipt.dsse.json` entries[{entry}].disqualification.logTail: {message}")]
    LogTail {
        /// The entry's index.
        entry: u32,
        /// What is wrong.
        message: String,
    },
    /// A campaign's chain of rounds and revocations breaks the title rules, or a
    /// revocation statement does not verify (content/title.md).
    #[error("campaign `{campaign}`: {message}")]
    TitleChain {
        /// The campaign's directory.
        campaign: String,
        /// What is wrong.
        message: String,
    },
    /// v7: `kind` or `clock` is missing, or `kind` names an entry the round did not seat.
    #[error("`receipt.dsse.json` {field}: {message}")]
    TitleRound {
        /// The field.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// Track s1-fast-speed: a field of `fastTrack` is missing or is not what the campaign,
    /// the entries and the track's rules give.
    #[error("`receipt.dsse.json` {field}: {message}")]
    FastTrack {
        /// The field.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A round's pod record disagrees with its campaign or its steps (content/pods.md).
    #[error("`receipt.dsse.json` {field}: {message}")]
    PodRecord {
        /// The field.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// The check could not run because an earlier one failed.
    #[error("not run: check `{}` failed", blocked_by.as_str())]
    NotRun {
        /// The check it depends on.
        blocked_by: CheckName,
    },
}

/// Renders an optional number for a reason's message: the number, or `none`.
fn show<T: std::fmt::Display>(value: &Option<T>) -> String {
    value
        .as_ref()
        .map_or_else(|| "none".to_owned(), ToString::to_string)
}

/// One check's result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Check {
    /// Which check.
    pub name: CheckName,
    /// What it concerns when the check runs per item: a file name for `subject`/`file`,
    /// a field like `signatures[0].sig` for base64 and signature checks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Whether it passed. A check that is not applicable did not pass either.
    pub passed: bool,
    /// Why it failed; `None` when it passed or is not applicable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<FailureReason>,
    /// The predicate version (`v1`) that cannot support this check: it was not run and
    /// counts neither as passed nor as failed.
    #[serde(rename = "notApplicable", skip_serializing_if = "Option::is_none")]
    pub not_applicable: Option<&'static str>,
}

/// Every check of one bundle.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyReport {
    /// The bundle directory.
    pub bundle: PathBuf,
    /// Every check, in the order run.
    pub checks: Vec<Check>,
    /// sha256 of the payload (Statement) bytes, when the payload decoded: what a later
    /// round's `previousReceipt` must equal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub statement_digest: Option<Sha256Hex>,
    /// The predicate type, when step 5 passed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicate_type: Option<String>,
    /// keyids of the trusted keys that counted toward the threshold.
    pub signed_by: Vec<String>,
}

impl VerifyReport {
    /// Whether every check passed or is not applicable (and at least one passed).
    pub fn passed(&self) -> bool {
        self.checks.iter().any(|c| c.passed)
            && self
                .checks
                .iter()
                .all(|c| c.passed || c.not_applicable.is_some())
    }

    /// The failed checks (not the ones that are not applicable).
    pub fn failures(&self) -> impl Iterator<Item = &Check> {
        self.checks
            .iter()
            .filter(|c| !c.passed && c.not_applicable.is_none())
    }

    /// Records a check that the bundle's predicate `version` cannot support.
    pub fn not_applicable(
        &mut self,
        name: CheckName,
        target: Option<String>,
        version: &'static str,
    ) {
        self.checks.push(Check {
            name,
            target,
            passed: false,
            reason: None,
            not_applicable: Some(version),
        });
    }

    /// Records a passed check.
    pub fn pass(&mut self, name: CheckName, target: Option<String>) {
        self.checks.push(Check {
            name,
            target,
            passed: true,
            reason: None,
            not_applicable: None,
        });
    }

    /// Records a failed check with its reason.
    pub fn fail(&mut self, name: CheckName, target: Option<String>, reason: FailureReason) {
        self.checks.push(Check {
            name,
            target,
            passed: false,
            reason: Some(reason),
            not_applicable: None,
        });
    }

    /// Records `result` as a passed or failed check; returns whether it passed.
    pub fn record(
        &mut self,
        name: CheckName,
        target: Option<String>,
        result: Result<(), FailureReason>,
    ) -> bool {
        match result {
            Ok(()) => {
                self.pass(name, target);
                true
            }
            Err(reason) => {
                self.fail(name, target, reason);
                false
            }
        }
    }

    /// An empty report for the bundle in `dir`.
    pub fn new(dir: &Path) -> Self {
        Self {
            bundle: dir.to_owned(),
            checks: Vec::new(),
            statement_digest: None,
            predicate_type: None,
            signed_by: Vec::new(),
        }
    }

    /// Records each of `names` as failed, not run because `blocked_by` failed.
    pub fn not_run(&mut self, names: &[CheckName], blocked_by: CheckName) {
        for &name in names {
            self.fail(name, None, FailureReason::NotRun { blocked_by });
        }
    }
}
