//! A campaign's page `/c/<campaign>/`: its rules in plain words from the frozen campaign
//! (SLA, overtake margin, correctness bounds, runs, hardware), the table of its newest
//! verified rounds with links to the pages of all of them (`/c/<campaign>/rounds/<k>/`,
//! [`ROUNDS_PER_PAGE`] round numbers each), and the leader history as an SVG step chart
//! drawn at build time with the same numbers as a table beside it.
//!
//! Every table is published as CSV and JSON beside the page that shows it, and holds the
//! rows that page shows: a file of every round would grow with every round and be
//! written again with each (at 10,000 rounds the rounds and leader-history files were
//! 6 MB), so the whole history is the pages of rounds' tables, each of which stays as it
//! is once its 100 round numbers are sealed. A round's row carries the seat after it and
//! the holder's score, so those tables hold the leader history too.

use receipts::model::{Campaign, LatencyKind, LengthDist, PassOrder, Sla};
use receipts::text::format_grouped;
use serde::Serialize;
use verifier::view::{format_bp_percent, format_duration_ms, format_score_percent};

use crate::archive::{Archive, CampaignArchive, RoundListing};
use crate::error::SiteError;
use crate::pages::index::{opt, seat_score};
use crate::pages::seat::{SeatBox, SeatedView, next_round, seat_box, seat_throughput};
use crate::pages::{PageOut, TableLinks, TableRow, seat_label, table_files, untrusted};
use crate::paths::{SiteDir, SitePath};
use crate::segment::{ROUNDS_PER_PAGE, block_numbers, rounds_of_page, rounds_page_count};
use crate::svg::{LeaderPoint, leader_history};

/// The model of `/c/<campaign>/`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CampaignModel {
    /// The campaign id.
    pub id: String,
    /// Its title (untrusted), or the id.
    pub title: String,
    /// sha256 of the frozen `campaign.json` every round names.
    pub digest: String,
    /// The rules, in plain words, in reading order.
    pub rules: Vec<Rule>,
    /// The newest [`ROUNDS_PER_PAGE`] verified rounds, newest first.
    pub rounds: Vec<RoundRow>,
    /// How many rounds verified.
    pub rounds_total: usize,
    /// The pages of every verified round, oldest first (none before a round verified).
    pub round_pages: Vec<RoundsPageLink>,
    /// The rows shown as CSV and JSON (every round: the pages of rounds' tables).
    pub rounds_table: TableLinks,
    /// The leader history as SVG (from `site::svg`, escaped there).
    pub history_svg: String,
    /// The leader history's rows shown on the page, oldest round first: the first and
    /// the last round and every round the seat changed in, the latest
    /// [`HISTORY_ROWS_SHOWN`] of them (every round's seat and score is in the pages of
    /// rounds' tables).
    pub history: Vec<HistoryRow>,
    /// Rows of the whole leader history (one per verified round).
    pub history_total: usize,
    /// The history rows shown as CSV and JSON.
    pub history_table: TableLinks,
    /// Rounds of this campaign whose bundle failed verification (listed on `rejected/`).
    pub rejected_rounds: Vec<u64>,
    /// What it takes to take the seat now, in this campaign's numbers.
    pub seat: SeatBox,
    /// The title over time (content/title.md); `None` before a round verified.
    pub title_state: Option<TitleSection>,
}

/// The campaign page's title section: the holder, the pending challengers with their
/// earliest confirmation time, and every step of the title's history with its reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TitleSection {
    /// Why the chain derives no title (the rules it breaks), when it does not.
    pub error: Option<String>,
    /// Whether the title counts rounds of a virtual clock (a demo's): no real title.
    pub virtual_clock: bool,
    /// The holder (untrusted, escaped), or `vacant`.
    pub holder: String,
    /// Its submission page.
    pub holder_href: Option<SiteDir>,
    /// When it took the title.
    pub held_since: Option<String>,
    /// The pending challengers, earliest win first.
    pub pending: Vec<PendingRow>,
    /// Every move, confirmation refused, re-measurement and revocation, in chain order.
    pub history: Vec<TitleRow>,
}

/// A pending challenger.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PendingRow {
    /// The challenger (untrusted, escaped).
    pub challenger: String,
    /// The round it won.
    pub won_round: u64,
    /// The earliest time its confirmation round may end.
    pub earliest: String,
}

/// One step of the title's history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TitleRow {
    /// The round (for a revocation: the revoked entry's).
    pub round: u64,
    /// The round's page.
    pub href: SiteDir,
    /// What happened, with its reason (untrusted parts escaped).
    pub what: String,
}

/// One rule of the campaign.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Rule {
    /// What it is about (`Service level`, `Overtake margin`).
    pub term: &'static str,
    /// The rule in words (may quote the evaluator's campaign file, made safe).
    pub text: String,
}

/// A link to one page of a campaign's rounds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RoundsPageLink {
    /// The first round number it covers.
    pub first: u64,
    /// The last round number it covers.
    pub last: u64,
    /// The page.
    pub href: SiteDir,
}

impl RoundsPageLink {
    /// The link to page `k` (from 1) of campaign `id`'s rounds.
    fn of(id: &receipts::model::CampaignId, k: u64) -> Self {
        let numbers = block_numbers(k);
        Self {
            first: *numbers.start(),
            last: *numbers.end(),
            href: SiteDir::rounds_page(id, k),
        }
    }
}

/// The model of `/c/<campaign>/rounds/<k>/`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RoundsPageModel {
    /// The campaign id.
    pub id: String,
    /// `Rounds 101–200 · <campaign title>`.
    pub title: String,
    /// The page's range and permalink.
    pub range: RoundsPageLink,
    /// The campaign's page.
    pub campaign_href: SiteDir,
    /// Its verified rounds, newest first (empty when none of its numbers verified).
    pub rounds: Vec<RoundRow>,
    /// The page before (older rounds), if any.
    pub previous: Option<RoundsPageLink>,
    /// The page after (newer rounds), if any.
    pub next: Option<RoundsPageLink>,
    /// Its table as CSV and JSON, beside it.
    pub table: TableLinks,
    /// Its rounds as the API lists them (`api/c/<campaign>/rounds/<k>.json`), from the
    /// site root.
    pub api: SitePath,
}

/// Builds `/c/<campaign>/rounds/<k>/` of `campaign`.
///
/// Errors: [`SiteError::InvalidId`] when `k` is 0 or past [`rounds_page_count`].
pub fn rounds_page(
    campaign: &CampaignArchive,
    k: u64,
) -> Result<PageOut<RoundsPageModel>, SiteError> {
    let count = rounds_page_count(campaign);
    if k == 0 || k > count {
        return Err(SiteError::InvalidId {
            field: "rounds page",
            value: k.to_string(),
            rule: "a page from 1 to the campaign's page count",
        });
    }
    let id = &campaign.id;
    let range = RoundsPageLink::of(id, k);
    let mut rounds: Vec<RoundRow> = rounds_of_page(campaign, k)
        .iter()
        .map(|r| round_row(id, r))
        .collect();
    rounds.reverse();
    let campaign_dir = SiteDir::campaign(id);
    let dir = SiteDir::rounds_page(id, k);
    let (table, files) = table_files(&dir, "rounds", &rounds)?;
    let model = RoundsPageModel {
        id: id.to_string(),
        title: format!(
            "Rounds {}–{} · {}",
            range.first,
            range.last,
            campaign_title(campaign)
        ),
        range,
        rounds,
        previous: (k > 1).then(|| RoundsPageLink::of(id, k - 1)),
        next: (k < count).then(|| RoundsPageLink::of(id, k + 1)),
        table,
        api: crate::machine::api_rounds_page_path(id, k)?,
        campaign_href: campaign_dir,
    };
    Ok(PageOut {
        dir,
        template: "rounds.html",
        model,
        files: files.into(),
    })
}

/// The title of `campaign` (untrusted), or its id.
fn campaign_title(campaign: &CampaignArchive) -> String {
    let title = &campaign.campaign.campaign.title;
    if title.is_empty() {
        campaign.id.to_string()
    } else {
        untrusted(title)
    }
}

/// The rounds table's row of `r`, a round of campaign `id`.
fn round_row(id: &receipts::model::CampaignId, r: &RoundListing) -> RoundRow {
    let counts = r.headline.counts;
    let top = r.headline.top_score_ppm;
    RoundRow {
        round: r.number,
        href: SiteDir::round(id, r.number),
        status: r.status.as_str().to_owned(),
        scored: counts.scored,
        disqualified: counts.disqualified,
        infra_failed: counts.infra_failed,
        top_score: top.map(format_score_percent),
        top_score_ppm: top,
        leader_after: seat_label(r.leader_after.as_ref()),
        leader_score_ppm: seat_score(r.leader_after.as_ref(), r),
        leader_changed: r.headline.leader_changed,
        settled_in: format_duration_ms(r.settled_in_ms),
        settled_in_ms: r.settled_in_ms,
        ended_at: r.ended_at.to_string(),
    }
}

/// A row of the rounds table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RoundRow {
    /// The round number.
    pub round: u64,
    /// Its page.
    pub href: SiteDir,
    /// `complete`, `infra_failed` or `inconclusive`.
    pub status: String,
    /// Entries scored.
    pub scored: usize,
    /// Entries disqualified.
    pub disqualified: usize,
    /// Entries that failed for infrastructure.
    pub infra_failed: usize,
    /// The top score, `+0.5099`; `None` when nothing was scored.
    pub top_score: Option<String>,
    /// The top score, ppm.
    pub top_score_ppm: Option<i64>,
    /// The seat after the round.
    pub leader_after: String,
    /// The seat holder's score in the round, ppm (the baseline's is 0); `None` when the
    /// holder was not scored in it.
    pub leader_score_ppm: Option<i64>,
    /// Whether the seat changed.
    pub leader_changed: bool,
    /// How long the round took, `2h 17m`-style (`verifier::view::format_duration_ms`).
    pub settled_in: String,
    /// `endedAt − startedAt`, milliseconds.
    pub settled_in_ms: i64,
    /// When teardown ended (RFC 3339).
    pub ended_at: String,
}

impl TableRow for RoundRow {
    const COLUMNS: &'static [&'static str] = &[
        "round",
        "status",
        "scored",
        "disqualified",
        "infra_failed",
        "top_score_ppm",
        "leader_after",
        "leader_score_ppm",
        "leader_changed",
        "settled_in_ms",
        "ended_at",
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            self.round.to_string(),
            self.status.clone(),
            self.scored.to_string(),
            self.disqualified.to_string(),
            self.infra_failed.to_string(),
            opt(self.top_score_ppm),
            self.leader_after.clone(),
            opt(self.leader_score_ppm),
            self.leader_changed.to_string(),
            self.settled_in_ms.to_string(),
            self.ended_at.clone(),
        ]
    }
}

/// A row of the leader history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HistoryRow {
    /// The round number.
    pub round: u64,
    /// Its page.
    pub href: SiteDir,
    /// Who held the seat after it.
    pub leader: String,
    /// The holder's submission page (none for the baseline).
    pub leader_href: Option<SiteDir>,
    /// The holder's score in that round, `+0.5099`; `None` when it was not scored there.
    pub score: Option<String>,
    /// The same, ppm.
    pub score_ppm: Option<i64>,
    /// Whether the seat changed in that round.
    pub changed: bool,
}

impl TableRow for HistoryRow {
    const COLUMNS: &'static [&'static str] = &["round", "leader", "score_ppm", "seat_changed"];

    fn cells(&self) -> Vec<String> {
        vec![
            self.round.to_string(),
            self.leader.clone(),
            opt(self.score_ppm),
            self.changed.to_string(),
        ]
    }
}

/// Most rows of the leader history on the campaign page: a seat change is news, a kept
/// seat is not, so the page lists the changes (and the pages of rounds every round).
pub const HISTORY_ROWS_SHOWN: usize = 100;

/// The rows of `history` (oldest first) the page shows: the first, the last and each
/// that changed the seat, the latest [`HISTORY_ROWS_SHOWN`] of them.
fn history_shown(history: Vec<HistoryRow>) -> Vec<HistoryRow> {
    let last = history.len().saturating_sub(1);
    let mut shown: Vec<HistoryRow> = history
        .into_iter()
        .enumerate()
        .filter(|(i, h)| *i == 0 || *i == last || h.changed)
        .map(|(_, h)| h)
        .collect();
    let from = shown.len().saturating_sub(HISTORY_ROWS_SHOWN);
    shown.drain(..from);
    shown
}

/// Builds `/c/<campaign>/` for `campaign` of `archive`.
///
/// Errors: [`SiteError::Serialize`] when a table does not serialise.
pub fn page(
    archive: &Archive,
    campaign: &CampaignArchive,
) -> Result<PageOut<CampaignModel>, SiteError> {
    let dir = SiteDir::campaign(&campaign.id);
    let id = &campaign.id;
    let shown = usize::try_from(ROUNDS_PER_PAGE).unwrap_or(usize::MAX);
    let rounds: Vec<RoundRow> = (campaign.rounds.iter().rev().take(shown))
        .map(|r| round_row(id, r))
        .collect();
    let history: Vec<HistoryRow> = campaign
        .rounds
        .iter()
        .map(|r| {
            let seat = r.leader_after.as_ref();
            let score_ppm = seat_score(seat, r);
            HistoryRow {
                round: r.number,
                href: SiteDir::round(id, r.number),
                leader: seat_label(seat),
                leader_href: seat.map(|l| SiteDir::submission(&l.patch)),
                score: score_ppm.map(format_score_percent),
                score_ppm,
                changed: r.headline.leader_changed,
            }
        })
        .collect();
    let points: Vec<LeaderPoint> = history
        .iter()
        .filter_map(|h| {
            h.score_ppm.map(|score_ppm| LeaderPoint {
                round: h.round,
                score_ppm,
                seat: h.leader.clone(),
            })
        })
        .collect();
    let history_svg = leader_history(
        "leader-history",
        &format!("Leader history of {id}: the seat holder's score after each round"),
        &points,
    );
    let (rounds_table, rounds_files) = table_files(&dir, "rounds", &rounds)?;
    let history_total = history.len();
    let history = history_shown(history);
    let (history_table, history_files) = table_files(&dir, "leader-history", &history)?;
    let last = campaign.rounds.last();
    let leader = last.and_then(|r| r.leader_after.as_ref());
    let seat = SeatBox {
        seated: last
            .and_then(|r| r.seated)
            .map(|taken| SeatedView::of(id, taken)),
        next_round: Some(next_round(campaign, leader)),
        ..seat_box(
            leader,
            campaign.campaign.campaign.overtake_margin_bp,
            last.and_then(|r| seat_throughput(leader, r).map(|t| (t, r.number))),
            Some(&campaign.rounds),
        )
    };
    let model = CampaignModel {
        title_state: campaign.title.as_ref().map(|t| title_section(id, t)),
        seat,
        id: id.to_string(),
        title: campaign_title(campaign),
        digest: campaign.campaign.digest.to_string(),
        rules: rules(&campaign.campaign.campaign),
        rounds,
        rounds_total: campaign.rounds.len(),
        round_pages: (1..=rounds_page_count(campaign))
            .map(|k| RoundsPageLink::of(id, k))
            .collect(),
        rounds_table,
        history_svg,
        history,
        history_total,
        history_table,
        rejected_rounds: archive
            .rejected
            .iter()
            .filter(|b| b.campaign == campaign.id)
            .map(|b| b.number)
            .collect(),
    };
    Ok(PageOut {
        dir,
        template: "campaign.html",
        model,
        files: rounds_files.into_iter().chain(history_files).collect(),
    })
}

/// The title section of the campaign `id` from its derived title.
fn title_section(
    id: &receipts::model::CampaignId,
    derived: &Result<verifier::title::DerivedTitle, String>,
) -> TitleSection {
    use receipts::rules::title::Clock;
    let at = |s: i64| {
        receipts::model::Timestamp::from_unix_seconds(s)
            .map_or_else(|_| format!("{s} s"), |t| t.to_string())
    };
    let who = |l: Option<&receipts::model::Leader>| {
        l.map_or_else(|| "vacant".to_owned(), |l| seat_label(Some(l)))
    };
    let derived = match derived {
        Ok(derived) => derived,
        Err(message) => {
            return TitleSection {
                error: Some(untrusted(message)),
                virtual_clock: false,
                holder: "unknown".to_owned(),
                holder_href: None,
                held_since: None,
                pending: Vec::new(),
                history: Vec::new(),
            };
        }
    };
    let title = &derived.title;
    let history = (derived.events.iter())
        .filter_map(|event| verifier::title::event_text(event, &|t: &str| untrusted(t)))
        .map(|(round, what)| TitleRow {
            round,
            href: SiteDir::round(id, round),
            what,
        })
        .collect();
    TitleSection {
        error: None,
        virtual_clock: derived.clock == Clock::Virtual,
        holder: who(title.holder.as_ref()),
        holder_href: title.holder.as_ref().map(|l| SiteDir::submission(&l.patch)),
        held_since: title.held_since_s.map(at),
        pending: (title.pending.iter())
            .map(|p| PendingRow {
                challenger: who(Some(&p.challenger)),
                won_round: p.won_round,
                earliest: at(p.earliest_confirmation_s),
            })
            .collect(),
        history,
    }
}

/// The campaign's rules in plain words.
pub fn rules(c: &Campaign) -> Vec<Rule> {
    let correctness = &c.correctness;
    let order = match c.effective_pass_order() {
        PassOrder::Interleaved => {
            "in interleaved passes (each pass runs every entry once, in an order drawn from the round's pass seed)"
        }
        PassOrder::Sequential => "back to back",
    };
    let hardware = &c.hardware;
    let threads = match hardware.engine_threads {
        0 => "all cores but one".to_owned(),
        1 => "1 thread".to_owned(),
        n => format!("{n} threads"),
    };
    let mut rules = vec![
        Rule {
            term: "Model",
            text: format!("Every entry serves the model {}.", untrusted(&c.model.name)),
        },
        Rule {
            term: "Service level",
            text: sla_words(&c.sla),
        },
        Rule {
            term: "Throughput",
            text: format!(
                "An entry's throughput is the highest request rate (searched between {} and {}, open loop) at which it meets the service level.",
                verifier::view::format_milli_rps(c.rate_search.min_rate_milli_rps),
                verifier::view::format_milli_rps(c.rate_search.max_rate_milli_rps),
            ),
        },
        Rule {
            term: "Runs",
            text: format!(
                "Each entry runs {} {order}; its score is the median against the baseline's runs.",
                times(c.runs)
            ),
        },
        Rule {
            term: "Overtake margin",
            text: format!(
                "A challenger takes the seat only when it is at least {} faster than the current leader ({} basis points).",
                format_bp_percent(u64::from(c.overtake_margin_bp)),
                c.overtake_margin_bp
            ),
        },
        Rule {
            term: "Correctness",
            text: format!(
                "On {} fresh items ({} output tokens each, prompts of {}), grouped by {}, the distance of an entry's top-{} log-probabilities from the reference's must stay within {} nats for every group's mean and within {} nats for every single item.",
                format_grouped(u64::from(correctness.items)),
                correctness.output_tokens,
                tokens(&correctness.input_len),
                correctness.group_size,
                correctness.top_k,
                nats(correctness.group_mean_bound_micro_nats),
                nats(correctness.item_bound_micro_nats),
            ),
        },
        Rule {
            term: "Workload",
            text: format!(
                "Prompts of {}, outputs of {}.",
                tokens(&c.workload.input_len),
                tokens(&c.workload.output_len)
            ),
        },
        Rule {
            term: "Hardware",
            text: format!(
                "Hardware class {}; an engine may use {} MiB of memory and {threads}.",
                untrusted(&hardware.class),
                format_grouped(hardware.memory_limit_mb)
            ),
        },
        Rule {
            term: "Stability",
            text: format!(
                "The round does not count (infra failed) when the baseline drifts by more than {}; a run that loses more than {} of its CPU time to steal is run again once, then its entry is infra failed.",
                format_bp_percent(u64::from(c.drift_bound_bp)),
                verifier::view::format_ppm_percent(
                    u64::from(c.effective_max_steal_permille()) * 1000
                )
            ),
        },
    ];
    rules.extend(crate::pages::fast::campaign_rules(c));
    rules
}

/// `p95:e2e:300ms` in words.
fn sla_words(sla: &Sla) -> String {
    let permille = sla.percentile.permille();
    let percentile = if permille.is_multiple_of(10) {
        ordinal(permille / 10)
    } else {
        format!("{}.{}th", permille / 10, permille % 10)
    };
    let latency = match sla.latency {
        LatencyKind::E2e => "end-to-end latency (scheduled send to last byte)",
        LatencyKind::Ttft => "time to first token",
        LatencyKind::Tpot => "time per output token",
    };
    format!(
        "The {percentile} percentile of {latency} must stay within {} ms ({sla}).",
        format_grouped(sla.bound_ms)
    )
}

/// `once`, `twice`, `3 times`.
fn times(n: u32) -> String {
    match n {
        1 => "once".to_owned(),
        2 => "twice".to_owned(),
        n => format!("{n} times"),
    }
}

fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// Micro-nats as nats, trailing zeros dropped: `200_000` → `0.2`, `2_000_000` → `2`.
fn nats(micro: u64) -> String {
    let whole = micro / 1_000_000;
    let frac = micro % 1_000_000;
    if frac == 0 {
        whole.to_string()
    } else {
        let digits = format!("{frac:06}");
        format!("{whole}.{}", digits.trim_end_matches('0'))
    }
}

fn tokens(dist: &LengthDist) -> String {
    match *dist {
        LengthDist::Fixed { value } => format!("{value} tokens"),
        LengthDist::Uniform { min, max } => format!("{min} to {max} tokens"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words() {
        assert_eq!(nats(200_000), "0.2");
        assert_eq!(nats(2_000_000), "2");
        assert_eq!(nats(1_250_000), "1.25");
        assert_eq!(ordinal(1), "1st");
        assert_eq!(ordinal(12), "12th");
        assert_eq!(ordinal(95), "95th");
        assert_eq!(ordinal(52), "52nd");
        let sla: Sla = "p99.9:ttft:1500ms".parse().unwrap();
        assert_eq!(
            sla_words(&sla),
            "The 99.9th percentile of time to first token must stay within 1 500 ms (p99.9:ttft:1500ms)."
        );
    }
}
