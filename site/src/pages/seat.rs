//! "To take the seat": what a challenger must beat, in a campaign's own numbers — the
//! seat holder and its throughput, the median and every-pass conditions of the decision
//! rule with the campaign's overtake margin (content/noise.md, The decision rule), the
//! A/A rule that makes a round inconclusive, and how often that happened. The campaign
//! page shows it for the seat now; the round page for the seat after that round.

use serde::Serialize;

use receipts::model::{Leader, RoundStatus};
use verifier::view::{format_bp_percent, format_leader, format_milli_rps};

use crate::archive::RoundListing;
use crate::paths::SiteDir;

use super::untrusted;

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
        median: format!(
            "the median of your paired ratios over the leader, pass by pass, at least +{} \
             (the overtake margin)",
            format_bp_percent(margin)
        ),
        every_pass: format!(
            "and every pass at least +{} (half the margin)",
            format_bp_percent(margin / 2)
        ),
        aa_rule: format!(
            "A round decides only when the baseline's A/A control (the baseline run twice \
             in every pass) spreads at most {} across passes; above, it is inconclusive: \
             no one is scored, the seat stays, and every challenger is requeued without \
             using its one requeue",
            format_bp_percent(margin)
        ),
        inconclusive: rounds.map(|rounds| {
            let total = rounds.len();
            let count = rounds
                .iter()
                .filter(|r| r.status == RoundStatus::Inconclusive)
                .count();
            let share_bp = (count * 10_000).checked_div(total).unwrap_or(0);
            format!(
                "{count} of {total} verified {} of this campaign ({}) {} inconclusive",
                if total == 1 { "round" } else { "rounds" },
                format_bp_percent(u64::try_from(share_bp).unwrap_or(0)),
                if count == 1 { "was" } else { "were" }
            )
        }),
    }
}
