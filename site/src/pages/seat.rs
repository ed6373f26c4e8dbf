//! "To take the seat": what a challenger must beat, in a campaign's own numbers — the
//! seat holder and its throughput, the median and every-pass conditions of the decision
//! rule with the campaign's overtake margin (content/noise.md, The decision rule), the
//! A/A rule that makes a round inconclusive, how often that happened, when the holder
//! took the seat, and (on the campaign page) the entries the next round is expected to
//! seat. The campaign page shows it for the seat now; the round page for the seat after
//! that round.

use serde::Serialize;

use receipts::model::{Leader, MinerId, PipelineState, RoundStatus, Sha256Hex};
use verifier::view::{format_bp_percent, format_leader, format_milli_rps};

use crate::archive::{CampaignArchive, RoundListing, SeatTaken};
use crate::paths::SiteDir;

use super::round::{format_utc_minute, html_datetime};
use super::{keep_percent, untrusted};

/// Most queued submissions the box names; the campaign's submissions page lists them all.
pub const NEXT_ROUND_SHOWN: usize = 20;

/// The box's model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SeatBox {
    /// `e5595a3…88ea1 (miner-fast)` or `the baseline`.
    pub leader: String,
    /// The seat holder's submission page; `None` for the baseline.
    pub leader_href: Option<SiteDir>,
    /// `30.099 req/s in round 3` (its median run throughput in the round named);
    /// `None` when no round measured it.
    pub throughput: Option<String>,
    /// The median condition: `the median of your paired ratios over the leader, pass by
    /// pass, at least +10 %`.
    pub median: String,
    /// The every-pass condition: `every pass at least +5 % (half the margin)`.
    pub every_pass: String,
    /// The A/A rule: when a round decides nothing.
    pub aa_rule: String,
    /// `2 of 7 verified rounds (28.57 %) were inconclusive`; `None` where the page
    /// shows one round only.
    pub inconclusive: Option<String>,
    /// When the holder took the seat; `None` for the baseline holding it since the
    /// campaign began.
    pub seated: Option<SeatedView>,
    /// The entries the next round is expected to seat, in its order; `None` where the
    /// page is about a past round.
    pub next_round: Option<NextRound>,
}

/// The round in which the seat was taken.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SeatedView {
    /// Its number.
    pub round: u64,
    /// Its page.
    pub href: SiteDir,
    /// When it settled, to the minute: `Dec 2, 2026, 01:22 UTC`.
    pub at: String,
    /// The same for a `datetime` attribute.
    pub at_iso: String,
}

impl SeatedView {
    /// The view of `taken`, a round of campaign `campaign`.
    pub fn of(campaign: &receipts::model::CampaignId, taken: SeatTaken) -> Self {
        Self {
            round: taken.round,
            href: SiteDir::round(campaign, taken.round),
            at: format_utc_minute(taken.at),
            at_iso: html_datetime(taken.at),
        }
    }
}

/// What the next round is expected to seat: the baseline, the seat holder (unless it is
/// the baseline), then every queued submission in commitment order, as `referee round`
/// takes them (content/leader-rule.md) — unless the queue changes before it runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NextRound {
    /// The first [`NEXT_ROUND_SHOWN`] entries, in order.
    pub entries: Vec<NextEntry>,
    /// Queued submissions beyond those named.
    pub more: usize,
    /// The campaign's submissions page, which lists the whole queue.
    pub submissions_href: SiteDir,
}

/// One expected entry of the next round.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NextEntry {
    /// `baseline`, `incumbent` or `candidate`.
    pub role: &'static str,
    /// Its patch, `e5595a3…88ea1`; `None` for the baseline.
    pub patch_short: Option<String>,
    /// Its miner (a validated id); `None` for the baseline.
    pub miner: Option<String>,
    /// Its submission page; `None` for the baseline.
    pub href: Option<SiteDir>,
}

/// The next round of `campaign` whose seat is held by `leader` (`None`: the baseline):
/// its queue is every `bench_queued` submission but the leader's, by commitment time,
/// then patch.
pub fn next_round(campaign: &CampaignArchive, leader: Option<&Leader>) -> NextRound {
    let mut queued: Vec<_> = (campaign.submissions.iter())
        .filter(|s| s.state == PipelineState::BenchQueued)
        .filter(|s| leader.is_none_or(|l| l.patch != s.sha256))
        .collect();
    queued.sort_by_key(|s| (s.committed_at, s.sha256));
    let seat = |role, patch: &Sha256Hex, miner: &MinerId| NextEntry {
        role,
        patch_short: Some(patch.short()),
        miner: Some(untrusted(miner.as_str())),
        href: Some(SiteDir::submission(patch)),
    };
    let mut entries = vec![NextEntry {
        role: "baseline",
        patch_short: None,
        miner: None,
        href: None,
    }];
    entries.extend(leader.map(|l| seat("incumbent", &l.patch, &l.miner)));
    entries.extend(
        (queued.iter().take(NEXT_ROUND_SHOWN)).map(|s| seat("candidate", &s.sha256, &s.miner)),
    );
    NextRound {
        entries,
        more: queued.len().saturating_sub(NEXT_ROUND_SHOWN),
        submissions_href: SiteDir::campaign_submissions(&campaign.id),
    }
}

/// The seat holder's median run throughput in `round`, milli-requests/s: the entry
/// of its patch (the baseline's for `None`), when measured.
pub fn seat_throughput(leader: Option<&Leader>, round: &RoundListing) -> Option<u64> {
    round
        .entries
        .iter()
        .find(|e| e.patch.as_ref() == leader.map(|l| &l.patch))
        .and_then(|e| e.throughput_milli_rps)
}

/// The box for the seat `leader` (`None`: the baseline) under the overtake margin
/// `margin_bp`, with its throughput (milli-requests/s) and the round that measured it,
/// and the share of inconclusive rounds among `rounds` when given.
pub fn seat_box(
    leader: Option<&Leader>,
    margin_bp: u32,
    throughput: Option<(u64, u64)>,
    rounds: Option<&[RoundListing]>,
) -> SeatBox {
    let margin = u64::from(margin_bp);
    let throughput =
        throughput.map(|(t, round)| format!("{} in round {round}", format_milli_rps(t)));
    SeatBox {
        leader: untrusted(&format_leader(leader)),
        leader_href: leader.map(|l| SiteDir::submission(&l.patch)),
        throughput,
        seated: None,
        next_round: None,
        median: keep_percent(format!(
            "the median of your paired ratios over the leader, pass by pass, at least +{} \
             (the overtake margin)",
            format_bp_percent(margin)
        )),
        every_pass: keep_percent(format!(
            "and every pass at least +{} (half the margin)",
            format_bp_percent(margin / 2)
        )),
        aa_rule: keep_percent(format!(
            "A round decides only when the baseline's A/A control (the baseline run twice \
             in every pass) spreads at most {} across passes; above, it is inconclusive: \
             no one is scored, the seat stays, and every challenger is requeued without \
             using its one requeue",
            format_bp_percent(margin)
        )),
        inconclusive: rounds.map(|rounds| {
            let total = rounds.len();
            let count = rounds
                .iter()
                .filter(|r| r.status == RoundStatus::Inconclusive)
                .count();
            let share_bp = (count * 10_000).checked_div(total).unwrap_or(0);
            keep_percent(format!(
                "{count} of {total} verified {} of this campaign ({}) {} inconclusive",
                if total == 1 { "round" } else { "rounds" },
                format_bp_percent(u64::try_from(share_bp).unwrap_or(0)),
                if count == 1 { "was" } else { "were" }
            ))
        }),
    }
}
