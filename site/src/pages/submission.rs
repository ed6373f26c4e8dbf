//! A submission's page `/s/<patch sha256>/`: its pipeline events from the evaluator's
//! local record (the gate and reason of a rejection included) and the verified rounds
//! the patch ran in. Submission records are unsigned (a rejected diff appears in no
//! bundle): the page says so visibly, unlike the pages built from verified receipts.

use std::ops::Range;

use rayon::prelude::*;
use receipts::model::{CampaignId, EventKind, MinerId, Sha256Hex, Submission, Timestamp};
use rustc_hash::FxHashMap;
use serde::Serialize;
use verifier::view::{format_gate, format_score_percent};

use crate::archive::{Archive, EntrySummary, RoundListing, SubmissionSummary};
use crate::error::SiteError;
use crate::pages::index::opt;
use crate::pages::{PageOut, TableLinks, TableRow, table_files, untrusted};
use crate::paths::SiteDir;
use crate::segment::first_byte;

/// The model of `/s/<sha256>/`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SubmissionModel {
    /// The patch's sha256.
    pub sha256: String,
    /// Abbreviated, `e5595a3…88ea1`.
    pub short: String,
    /// The evaluator's records of the patch, one per campaign it was committed to, by
    /// campaign id (unsigned).
    pub records: Vec<RecordView>,
    /// Every event of every record, oldest first (unsigned).
    pub events: Vec<EventRow>,
    /// The events table as CSV and JSON.
    pub events_table: TableLinks,
    /// The verified rounds the patch ran in, by campaign and round.
    pub rounds: Vec<Appearance>,
}

/// One record of the patch (the evaluator's unsigned local file).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RecordView {
    /// The campaign it was committed to.
    pub campaign: String,
    /// The campaign's page.
    pub campaign_href: SiteDir,
    /// The miner whose commitment came first.
    pub miner: String,
    /// The miner's page.
    pub miner_href: SiteDir,
    /// The published commitment.
    pub commitment: String,
    /// Size of the diff, bytes.
    pub size_bytes: u64,
    /// The current pipeline state (`bench_queued`, `rejected`, …).
    pub state: String,
    /// Requeues used after its own infrastructure failure.
    pub requeues: u32,
    /// For a rejected submission: the gate that failed and why.
    pub rejection: Option<Rejection>,
    /// For a repository submission: its commitment, digests and manifest validation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repository: Option<RepositoryView>,
}

/// What a repository submission's record holds beside the pipeline
/// (content/repository-submissions.md), made safe for the page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RepositoryView {
    /// The commitment, `<URL>@<commit>` (untrusted, made safe).
    pub commitment: String,
    /// When it was committed (RFC 3339).
    pub committed_at: String,
    /// The coldkey of its hotkey, when looked up (untrusted, made safe).
    pub coldkey: Option<String>,
    /// The fetched tree's digest, when fetched.
    pub tree_sha256: Option<String>,
    /// The manifest's sha256, when read.
    pub manifest_sha256: Option<String>,
    /// `passed`, `failed`, or `None` when not validated.
    pub validation: Option<&'static str>,
    /// Every manifest error: field, typed reason, message (untrusted, made safe).
    pub errors: Vec<[String; 3]>,
    /// The review before anything of it runs (content/review.md), once reviewed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewView>,
}

/// A repository submission's review, made safe for the page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReviewView {
    /// `PASS`, `FAIL` or `NEEDS-HUMAN`: the static and the LLM verdicts combined.
    pub verdict: &'static str,
    /// The rules file's version and digest: `v1 sha256 …`.
    pub rules: String,
    /// Every finding: place (`file:line`), rule, severity, what matched (untrusted, made
    /// safe).
    pub findings: Vec<[String; 4]>,
    /// The LLM review: `VERDICT by `command` (transcript sha256 …)`; none without one.
    pub llm: Option<String>,
    /// Copy detection's outcome in words, naming the original.
    pub copy: String,
    /// A person's resolution: `PASS: reason (statement sha256 …, log entry n)`.
    pub resolution: Option<String>,
}

/// The review `review` made safe for a page (the submission's and, from a round's input
/// copy, the entry's).
pub(crate) fn review_view(review: &receipts::model::ReviewRecord) -> ReviewView {
    use receipts::model::{CopyOutcome, CopyReason};
    let copy = match &review.copy {
        CopyOutcome::Original => "original: no earlier commitment copied".to_owned(),
        CopyOutcome::Copy { original, reason } => {
            let why = match reason {
                CopyReason::IdenticalWeights { sha256 } => {
                    format!("identical weights file sha256 {sha256}")
                }
                CopyReason::SameRuntimeCode { code } => {
                    format!("the same normalised runtime code, sha256 {code}")
                }
            };
            format!(
                "disqualified: a copy of submission {}, credited as the original ({why})",
                untrusted(original)
            )
        }
        CopyOutcome::Derived { original } => format!(
            "derived from submission {}: must beat it by the campaign's margin",
            untrusted(original)
        ),
    };
    ReviewView {
        verdict: review.verdict.as_str(),
        rules: format!("v{} sha256 {}", review.rules_version, review.rules_digest),
        findings: review
            .findings
            .iter()
            .map(|f| {
                let place = f
                    .line
                    .map_or_else(|| f.file.clone(), |l| format!("{}:{l}", f.file));
                [
                    untrusted(&place),
                    untrusted(&f.rule),
                    f.severity.as_str().to_owned(),
                    untrusted(&f.detail),
                ]
            })
            .collect(),
        llm: review.llm.as_ref().map(|l| {
            format!(
                "{} by `{}` (transcript sha256 {})",
                l.verdict.as_str(),
                untrusted(&l.command),
                l.transcript_sha256
            )
        }),
        copy,
        resolution: review.resolution.as_ref().map(|r| {
            format!(
                "{}: {} (statement sha256 {}, log entry {})",
                r.verdict.as_str(),
                untrusted(&r.reason),
                r.envelope_sha256,
                r.log_index
            )
        }),
    }
}

fn repository_view(record: &receipts::model::RepositoryRecord) -> RepositoryView {
    RepositoryView {
        commitment: untrusted(&record.commitment),
        committed_at: record.committed_at.to_string(),
        coldkey: record.coldkey.as_deref().map(untrusted),
        tree_sha256: record.tree_sha256.map(|d| d.to_string()),
        manifest_sha256: record.manifest_sha256.map(|d| d.to_string()),
        validation: record
            .validation
            .as_ref()
            .map(|v| if v.passed { "passed" } else { "failed" }),
        errors: record
            .validation
            .iter()
            .flat_map(|v| &v.errors)
            .map(|e| {
                [
                    untrusted(&e.field),
                    untrusted(&e.reason),
                    untrusted(&e.message),
                ]
            })
            .collect(),
        review: record.review.as_ref().map(review_view),
    }
}

/// Why a submission was rejected.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Rejection {
    /// The gate (`surface_ok`, `build`, …); `None` when the record names none.
    pub gate: Option<String>,
    /// What failed, for people ([`format_gate`]): `surface checks failed`.
    pub failed: Option<String>,
    /// The reason recorded (untrusted, made safe).
    pub reason: String,
}

/// One pipeline event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EventRow {
    /// The campaign whose record holds it.
    pub campaign: String,
    /// When (RFC 3339).
    pub at: String,
    /// `transition`, `duplicate` or `superseded`.
    pub kind: &'static str,
    /// For a transition, the new state.
    pub to: Option<String>,
    /// For a rejection, the gate that failed.
    pub gate: Option<String>,
    /// For a round outcome, the round.
    pub round: Option<u64>,
    /// For a round outcome, the round's page.
    pub round_href: Option<SiteDir>,
    /// For a duplicate or superseded commitment, whose it was.
    pub other_miner: Option<String>,
    /// The reason recorded (untrusted, made safe).
    pub reason: String,
}

impl TableRow for EventRow {
    const COLUMNS: &'static [&'static str] = &[
        "campaign",
        "at",
        "kind",
        "to",
        "gate",
        "round",
        "other_miner",
        "reason",
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            self.campaign.clone(),
            self.at.clone(),
            self.kind.to_owned(),
            self.to.clone().unwrap_or_default(),
            self.gate.clone().unwrap_or_default(),
            opt(self.round),
            self.other_miner.clone().unwrap_or_default(),
            self.reason.clone(),
        ]
    }
}

/// A verified round the patch ran in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Appearance {
    /// The campaign.
    pub campaign: String,
    /// The round.
    pub round: u64,
    /// The round's page.
    pub href: SiteDir,
    /// The miner the receipt names.
    pub miner: String,
    /// `baseline`, `incumbent` or `challenger`.
    pub role: String,
    /// `scored`, `disqualified` or `infra_failed`.
    pub status: String,
    /// The score, `+0.5099`, when scored.
    pub score: Option<String>,
}

/// An entry of a verified round, borrowed from the archive: where a patch ran.
#[derive(Clone, Copy, Debug)]
pub struct Seat<'a> {
    /// The campaign.
    pub campaign: &'a CampaignId,
    /// The round.
    pub round: &'a RoundListing,
    /// The entry.
    pub entry: &'a EntrySummary,
}

impl Seat<'_> {
    /// The row the submission and miner pages show.
    pub fn appearance(&self) -> Appearance {
        let e = self.entry;
        Appearance {
            campaign: self.campaign.to_string(),
            round: self.round.number,
            href: SiteDir::round(self.campaign, self.round.number),
            miner: e
                .miner
                .as_ref()
                .map(|m| untrusted(m.as_str()))
                .unwrap_or_default(),
            role: e.role.as_str().to_owned(),
            status: e.status.as_str().to_owned(),
            score: e.score_ppm.map(format_score_percent),
        }
    }
}

/// What the submission and miner pages look up, built once per build: every patch's
/// records and verified appearances with their fingerprint, and every miner's patches in
/// the order its pages list them. Held as sorted vectors and ranges rather than maps of vectors, and built in parallel
/// by the first byte of the patches' sha256: at 10,000 rounds of the benchmark it indexes
/// 80,000 records and 70,000 seats, and a build that adds one round reads all of them.
pub struct PatchIndex<'a> {
    /// Every patch the site has a page for, sorted, with its records and seats.
    patches: Vec<Patch<'a>>,
    /// The records, by patch (in [`PatchIndex::patches`] order), then campaign order.
    records: Vec<&'a SubmissionSummary>,
    /// The seats, by patch, then campaign and round order.
    seats: Vec<Seat<'a>>,
    /// Every miner, sorted, with its patches in [`PatchIndex::of_miner`] order.
    miners: Vec<(&'a MinerId, Vec<MinerPatch>)>,
    /// The positions of the patches of each first byte that has any, in byte order.
    by_first_byte: Vec<Range<usize>>,
}

/// A patch's fingerprint ([`PatchIndex::fingerprint`]): raw sha256 bytes.
pub type Fingerprint = [u8; 32];

/// One patch of a [`PatchIndex`]: its sha256, where its records and seats lie, and its
/// fingerprint.
struct Patch<'a> {
    sha256: &'a Sha256Hex,
    records: Range<usize>,
    seats: Range<usize>,
    fingerprint: Fingerprint,
}

/// One of a miner's patches in one campaign ([`PatchIndex::of_miner`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MinerPatch {
    /// Its campaign's index in [`Archive::campaigns`].
    pub campaign: usize,
    /// Its position in [`PatchIndex::patches`].
    pub position: usize,
    /// When the miner's record of it in that campaign has its first event: the record's
    /// `committed_at`, copied here so that sorting a miner's patches reads no record.
    committed_at: Option<Timestamp>,
    /// The miner's record of it in that campaign, if any: its index in
    /// [`PatchIndex::records`]. Found while indexing, so that listing a miner's pages
    /// compares no miner or campaign ids (18 ms at 10,000 rounds of the benchmark).
    record: Option<usize>,
}

/// The patches of one first byte, indexed on their own ([`PatchIndex::new`]): positions
/// and ranges from 0, shifted when the parts are joined.
#[derive(Default)]
struct PartIndex<'a> {
    patches: Vec<Patch<'a>>,
    records: Vec<&'a SubmissionSummary>,
    seats: Vec<Seat<'a>>,
    by_miner: FxHashMap<&'a MinerId, Vec<MinerPatch>>,
}

impl<'a> PatchIndex<'a> {
    /// Indexes `archive`.
    pub fn new(archive: &'a Archive) -> Self {
        // Each seat, by its patch's first byte, in campaign then round order.
        let mut seats_by_byte: Vec<Vec<(usize, Seat<'a>)>> = vec![Vec::new(); 256];
        for (ci, campaign) in archive.campaigns.iter().enumerate() {
            for round in &campaign.rounds {
                for e in &round.entries {
                    let Some(patch) = &e.patch else { continue };
                    let seat = Seat {
                        campaign: &campaign.id,
                        round,
                        entry: e,
                    };
                    seats_by_byte[usize::from(first_byte(patch))].push((ci, seat));
                }
            }
        }
        let parts: Vec<PartIndex<'a>> = seats_by_byte
            .into_par_iter()
            .enumerate()
            .map(|(byte, seats)| PartIndex::new(archive, byte, seats))
            .collect();

        let mut index = Self {
            patches: Vec::with_capacity(parts.iter().map(|p| p.patches.len()).sum()),
            records: Vec::with_capacity(parts.iter().map(|p| p.records.len()).sum()),
            seats: Vec::with_capacity(parts.iter().map(|p| p.seats.len()).sum()),
            miners: Vec::new(),
            by_first_byte: Vec::new(),
        };
        let mut by_miner: FxHashMap<&MinerId, Vec<MinerPatch>> = FxHashMap::default();
        for campaign in &archive.campaigns {
            for m in &campaign.miners.miners {
                by_miner.entry(&m.id).or_default();
            }
        }
        for part in parts {
            let (p0, r0, s0) = (index.patches.len(), index.records.len(), index.seats.len());
            if !part.patches.is_empty() {
                index.by_first_byte.push(p0..p0 + part.patches.len());
            }
            index
                .patches
                .extend(part.patches.into_iter().map(|p| Patch {
                    records: p.records.start + r0..p.records.end + r0,
                    seats: p.seats.start + s0..p.seats.end + s0,
                    ..p
                }));
            index.records.extend(part.records);
            index.seats.extend(part.seats);
            for (miner, patches) in part.by_miner {
                let all = by_miner.entry(miner).or_default();
                all.extend(patches.into_iter().map(|p| MinerPatch {
                    position: p.position + p0,
                    record: p.record.map(|r| r + r0),
                    ..p
                }));
            }
        }
        let mut miners: Vec<(&MinerId, Vec<MinerPatch>)> = by_miner.into_iter().collect();
        miners.sort_unstable_by(|a, b| a.0.cmp(b.0));
        miners.par_iter_mut().for_each(|(_, patches)| {
            // Once per campaign and patch, with the miner's record where there is one ...
            patches.sort_unstable_by_key(|p| (p.campaign, p.position, p.record.is_none()));
            patches.dedup_by_key(|p| (p.campaign, p.position));
            // ... in the order its pages list them.
            patches.sort_unstable_by_key(|p| {
                (
                    p.campaign,
                    p.committed_at.is_none(),
                    p.committed_at,
                    p.position,
                )
            });
        });
        index.miners = miners;
        index
    }

    /// Every patch the site has a page for: those with a local record and those a
    /// verified round names, sorted; its position is its index in this order.
    pub fn patches(&self) -> impl ExactSizeIterator<Item = &'a Sha256Hex> + '_ {
        self.patches.iter().map(|p| p.sha256)
    }

    /// The patch at `position` ([`PatchIndex::patches`]).
    pub fn patch(&self, position: usize) -> Option<&'a Sha256Hex> {
        self.patches.get(position).map(|p| p.sha256)
    }

    /// The positions ([`PatchIndex::patches`]) of the patches that share a first byte
    /// ([`crate::segment::first_byte`]), for each byte that has any, in byte order.
    pub fn by_first_byte(&self) -> &[Range<usize>] {
        &self.by_first_byte
    }

    /// Every miner the site has a page for: registered in a campaign, named by a
    /// submission record or by an entry of a verified round; sorted.
    pub fn miners(&self) -> impl Iterator<Item = &'a MinerId> + '_ {
        self.miners.iter().map(|(m, _)| *m)
    }

    /// What the archive holds of the local records of `patch`.
    pub fn records(&self, patch: &Sha256Hex) -> &[&'a SubmissionSummary] {
        self.position(patch).map_or(&[], |i| self.records_at(i))
    }

    /// The entries of verified rounds `patch` ran as, in campaign then round order.
    pub fn seats(&self, patch: &Sha256Hex) -> &[Seat<'a>] {
        self.position(patch).map_or(&[], |i| self.seats_at(i))
    }

    /// The records of the patch at `position` ([`PatchIndex::patches`]).
    pub fn records_at(&self, position: usize) -> &[&'a SubmissionSummary] {
        self.patches
            .get(position)
            .map_or(&[], |p| &self.records[p.records.clone()])
    }

    /// The seats of the patch at `position` ([`PatchIndex::patches`]).
    pub fn seats_at(&self, position: usize) -> &[Seat<'a>] {
        self.patches
            .get(position)
            .map_or(&[], |p| &self.seats[p.seats.clone()])
    }

    /// The fingerprint of the patch at `position` ([`PatchIndex::patches`]): the sha256 of
    /// what its submission page shows, its sha256, its local records' file digests and
    /// the Statement digests of the rounds it ran in with its entry there. Its page, its
    /// segment and its miner's pages are keyed by it.
    pub fn fingerprint(&self, position: usize) -> Option<&Fingerprint> {
        self.patches.get(position).map(|p| &p.fingerprint)
    }

    /// `miner`'s patches, once per campaign each was committed to or ran in, in the order
    /// its pages list them: by campaign (the archive's order: sorted by id), then the
    /// time the miner's record of it was committed (patches without a record last), then
    /// sha256.
    pub fn of_miner(&self, miner: &MinerId) -> &[MinerPatch] {
        self.miners
            .binary_search_by(|(m, _)| (*m).cmp(miner))
            .map_or(&[], |i| &self.miners[i].1)
    }

    /// The miner's record of `patch` in its campaign, if any.
    pub fn miner_record(&self, patch: &MinerPatch) -> Option<&'a SubmissionSummary> {
        patch.record.and_then(|i| self.records.get(i).copied())
    }

    /// The position of `patch` in [`PatchIndex::patches`].
    fn position(&self, patch: &Sha256Hex) -> Option<usize> {
        self.patches.binary_search_by(|p| p.sha256.cmp(patch)).ok()
    }
}

impl<'a> PartIndex<'a> {
    /// The patches whose sha256 starts with `byte`: the records of `archive` that are of
    /// them (each campaign's are sorted by sha256), and `seats`, theirs, in campaign then
    /// round order.
    fn new(archive: &'a Archive, byte: usize, seats: Vec<(usize, Seat<'a>)>) -> Self {
        let mut records: Vec<(&Sha256Hex, usize, &SubmissionSummary)> = Vec::new();
        for (ci, campaign) in archive.campaigns.iter().enumerate() {
            let all = &campaign.submissions;
            let start = all.partition_point(|s| usize::from(first_byte(&s.sha256)) < byte);
            let end = start
                + all[start..].partition_point(|s| usize::from(first_byte(&s.sha256)) <= byte);
            records.extend(all[start..end].iter().map(|s| (&s.sha256, ci, s)));
        }
        // Stable: a patch's records stay in campaign order, its seats in campaign then
        // round order.
        records.sort_by(|a, b| a.0.cmp(b.0));
        let mut seats: Vec<(&Sha256Hex, usize, Seat<'a>)> = (seats.into_iter())
            .filter_map(|(ci, seat)| Some((seat.entry.patch.as_ref()?, ci, seat)))
            .collect();
        seats.sort_by(|a, b| a.0.cmp(b.0));

        let mut part = Self::default();
        let (mut r, mut s) = (0, 0);
        let mut buf = Vec::new();
        while r < records.len() || s < seats.len() {
            let next = match (records.get(r), seats.get(s)) {
                (Some(a), Some(b)) => a.0.min(b.0),
                (Some(a), None) => a.0,
                (None, Some(b)) => b.0,
                (None, None) => break,
            };
            let position = part.patches.len();
            let start = (part.records.len(), part.seats.len());
            while let Some(&(_, ci, record)) = records.get(r).filter(|x| x.0 == next) {
                part.by_miner
                    .entry(&record.miner)
                    .or_default()
                    .push(MinerPatch {
                        campaign: ci,
                        position,
                        committed_at: record.committed_at,
                        record: Some(part.records.len()),
                    });
                part.records.push(record);
                r += 1;
            }
            while let Some(&(_, ci, seat)) = seats.get(s).filter(|x| x.0 == next) {
                if let Some(miner) = &seat.entry.miner {
                    part.by_miner.entry(miner).or_default().push(MinerPatch {
                        campaign: ci,
                        position,
                        committed_at: None,
                        record: None,
                    });
                }
                part.seats.push(seat);
                s += 1;
            }
            let (records, seats) = (start.0..part.records.len(), start.1..part.seats.len());
            let fingerprint = fingerprint(
                &mut buf,
                next,
                &part.records[records.clone()],
                &part.seats[seats.clone()],
            );
            part.patches.push(Patch {
                sha256: next,
                records,
                seats,
                fingerprint,
            });
        }
        part
    }
}

/// The fingerprint of `patch` with its `records` and `seats`: one sha256 over a buffer
/// (`buf`, reused) of its sha256, its records' file digests and its seats' Statement
/// digests with their entry index, each list behind its count (every digest is 64 hex
/// characters, so the parts cannot run into one another).
fn fingerprint(
    buf: &mut Vec<u8>,
    patch: &Sha256Hex,
    records: &[&SubmissionSummary],
    seats: &[Seat<'_>],
) -> Fingerprint {
    use sha2::Digest;
    buf.clear();
    buf.extend_from_slice(patch.as_str().as_bytes());
    buf.extend_from_slice(&(records.len() as u64).to_le_bytes());
    for s in records {
        buf.extend_from_slice(s.file_sha256.as_str().as_bytes());
    }
    // What its rows show is read from the rounds' Statements.
    buf.extend_from_slice(&(seats.len() as u64).to_le_bytes());
    for seat in seats {
        buf.extend_from_slice(seat.round.statement_digest.as_str().as_bytes());
        buf.extend_from_slice(&seat.entry.index.to_le_bytes());
    }
    sha2::Sha256::digest(&buf[..]).into()
}

/// Builds `/s/<patch>/`, reading its records again.
///
/// Errors: [`SiteError::RecordChanged`] when a record changed since the archive was
/// loaded; [`SiteError::Serialize`] when the events table does not serialise.
pub fn page(
    index: &PatchIndex<'_>,
    patch: &Sha256Hex,
) -> Result<PageOut<SubmissionModel>, SiteError> {
    let dir = SiteDir::submission(patch);
    let records = (index.records(patch).iter())
        .map(|s| s.load())
        .collect::<Result<Vec<Submission>, SiteError>>()?;
    let mut timed: Vec<(Timestamp, EventRow)> = records.iter().flat_map(event_rows).collect();
    // Oldest first; a record's own events keep their order (the sort is stable).
    timed.sort_by(|(a_at, a), (b_at, b)| (a_at, &a.campaign).cmp(&(b_at, &b.campaign)));
    let events: Vec<EventRow> = timed.into_iter().map(|(_, e)| e).collect();
    let (events_table, files) = table_files(&dir, "events", &events)?;
    Ok(PageOut {
        dir,
        template: "submission.html",
        model: SubmissionModel {
            sha256: patch.to_string(),
            short: patch.short(),
            records: records.iter().map(record_view).collect(),
            events,
            events_table,
            rounds: index.seats(patch).iter().map(Seat::appearance).collect(),
        },
        files: files.into(),
    })
}

fn record_view(s: &Submission) -> RecordView {
    let rejection = (s.state == receipts::model::PipelineState::Rejected).then(|| {
        let last = s.events.iter().rev().find_map(|e| match &e.kind {
            EventKind::Transition { gate, .. } => Some((gate, &e.reason)),
            _ => None,
        });
        Rejection {
            gate: last.and_then(|(g, _)| g.map(|g| g.to_string())),
            failed: last.and_then(|(g, _)| g.map(|g| format!("{} failed", format_gate(g)))),
            reason: last.map(|(_, r)| untrusted(r)).unwrap_or_default(),
        }
    });
    RecordView {
        campaign: s.campaign.to_string(),
        campaign_href: SiteDir::campaign(&s.campaign),
        miner: s.miner.to_string(),
        miner_href: SiteDir::miner(&s.miner),
        commitment: s.commitment.to_string(),
        size_bytes: s.size_bytes,
        state: s.state.to_string(),
        requeues: s.requeues,
        rejection,
        repository: s.repository.as_ref().map(repository_view),
    }
}

/// The events of `s` with their times.
fn event_rows(s: &Submission) -> Vec<(Timestamp, EventRow)> {
    s.events
        .iter()
        .map(|e| {
            let base = EventRow {
                campaign: s.campaign.to_string(),
                at: e.at.to_string(),
                kind: "transition",
                to: None,
                gate: None,
                round: None,
                round_href: None,
                other_miner: None,
                reason: untrusted(&e.reason),
            };
            let other = |m: &MinerId| Some(m.to_string());
            let row = match &e.kind {
                EventKind::Transition { to, gate, round } => EventRow {
                    to: Some(to.to_string()),
                    gate: gate.map(|g| g.to_string()),
                    round: *round,
                    round_href: round.map(|n| SiteDir::round(&s.campaign, n)),
                    ..base
                },
                EventKind::Duplicate { miner, .. } => EventRow {
                    kind: "duplicate",
                    other_miner: other(miner),
                    ..base
                },
                EventKind::Superseded { miner, .. } => EventRow {
                    kind: "superseded",
                    other_miner: other(miner),
                    ..base
                },
            };
            (e.at, row)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use receipts::model::{ManifestFieldError, ManifestValidation, RepositoryRecord};

    #[test]
    fn a_repository_record_is_shown_with_its_miner_text_made_safe() {
        let record = RepositoryRecord {
            commitment: format!("file:///r@{}", "a".repeat(40)),
            committed_at: Timestamp::from_unix_seconds(1_800_000_000).unwrap(),
            coldkey: Some("cold-1".into()),
            tree_sha256: Some(Sha256Hex::digest(b"tree")),
            manifest_sha256: None,
            validation: Some(ManifestValidation {
                passed: false,
                errors: vec![ManifestFieldError {
                    field: "runtime.dockerfile".into(),
                    reason: "unpinned_base_image".into(),
                    message: "base image `x\u{1b}[2J` is not pinned".into(),
                }],
            }),
            review: None,
        };
        let view = repository_view(&record);
        assert_eq!(view.validation, Some("failed"));
        assert_eq!(view.manifest_sha256, None);
        assert_eq!(
            view.tree_sha256.as_deref(),
            Some(Sha256Hex::digest(b"tree").as_str())
        );
        assert_eq!(view.committed_at, "2027-01-15T08:00:00Z");
        assert_eq!(
            view.errors,
            [[
                "runtime.dockerfile".to_owned(),
                "unpinned_base_image".to_owned(),
                "base image `x\\u{1b}[2J` is not pinned".to_owned()
            ]]
        );
    }

    #[test]
    fn a_review_lists_its_findings_made_safe_and_names_the_original() {
        use receipts::model::review::{Finding, Severity};
        use receipts::model::{CopyOutcome, CopyReason, Fingerprint, ReviewRecord, Verdict};
        let code = Sha256Hex::digest(b"code");
        let review = ReviewRecord {
            rules_version: 1,
            rules_digest: Sha256Hex::digest(b"rules"),
            findings: vec![Finding {
                file: "src/\u{1b}[2Jserver.py".into(),
                line: Some(3),
                rule: "llm.endpoint".into(),
                severity: Severity::Fail,
                detail: "api.openai.com".into(),
            }],
            static_verdict: Verdict::Fail,
            llm: None,
            verdict: Verdict::Fail,
            reviewed_at: Timestamp::from_unix_seconds(1_800_000_000).unwrap(),
            derived_from: None,
            fingerprint: Fingerprint {
                weights: Default::default(),
                code,
                code_files: 1,
            },
            copy: CopyOutcome::Copy {
                original: "abc".into(),
                reason: CopyReason::SameRuntimeCode { code },
            },
            resolution: None,
        };
        let view = review_view(&review);
        assert_eq!(view.verdict, "FAIL");
        assert_eq!(
            view.rules,
            format!("v1 sha256 {}", Sha256Hex::digest(b"rules"))
        );
        assert_eq!(
            view.findings,
            [[
                "src/\\u{1b}[2Jserver.py:3".to_owned(),
                "llm.endpoint".to_owned(),
                "fail".to_owned(),
                "api.openai.com".to_owned()
            ]]
        );
        assert_eq!(
            view.copy,
            format!(
                "disqualified: a copy of submission abc, credited as the original (the same normalised runtime code, sha256 {code})"
            )
        );
    }
}
