//! `referee due` (content/title.md, Running it from cron): which campaigns need a
//! confirmation or a re-measurement round now, from the title each campaign's sealed
//! rounds derive ([`receipts::rules::title`]).

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use receipts::layout::{DataDir, read_round_record};
use receipts::model::{CampaignId, Leader, RoundRecord, Timestamp};
use receipts::rules::title::{Clock, Due, Title, TitleRules};
use receipts::text::escape_untrusted;
use serde::Serialize;
use verifier::title::derive_campaign_title;
use verifier::verify_bundle;

use super::show::{TrustArgs, campaign_id};

/// What `referee due` exits with when a round is due.
pub const DUE_EXIT: u8 = 10;

/// `referee due`'s exit codes, for `--help`.
pub const DUE_EXIT_CODES: &str = "Exit status: 0 when nothing is due; 10 when a confirmation or re-measurement round is due; 1 when a sealed round does not verify or breaks the title rules, so the title cannot be derived; 2 on a usage or I/O error.";

/// `referee due [--campaign c] [--at t]`.
#[derive(clap::Args, Debug)]
pub struct DueArgs {
    /// One campaign; default every campaign of the data directory.
    #[arg(long)]
    pub campaign: Option<String>,
    /// The keyring, the data directory, `--json`, and `--at`: the instant judged (and
    /// the keys checked) at, RFC 3339 UTC; default now.
    #[command(flatten)]
    pub trust: TrustArgs,
}

/// One campaign's title and what is due.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct CampaignDue {
    campaign: CampaignId,
    /// The holder; `None` = vacant.
    holder: Option<Leader>,
    /// When it took the title.
    held_since: Option<Timestamp>,
    /// Pending challengers, earliest win first: `(challenger, won round, earliest
    /// confirmation)`.
    pending: Vec<(Leader, u64, Timestamp)>,
    /// What is due.
    due: Vec<String>,
    /// Why the title cannot be derived, when it cannot.
    error: Option<String>,
}

/// Runs `referee due`.
pub fn run(args: DueArgs) -> anyhow::Result<ExitCode> {
    let data = DataDir::new(&args.trust.data.data);
    let ids = match &args.campaign {
        Some(text) => vec![campaign_id(text)?],
        None => data
            .campaign_ids()
            .with_context(|| format!("listing the campaigns of `{}`", data.root().display()))?,
    };
    let keyring = args.trust.keyring()?;
    let options = args.trust.options();
    let now = options.at.datetime().unix_timestamp();
    let mut report = Vec::new();
    for id in ids {
        report.push(campaign_due(&data, &id, &keyring, &options, now)?);
    }
    let mut out = std::io::stdout().lock();
    if args.trust.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        out.write_all(render(&report).as_bytes())?;
    }
    Ok(if report.iter().any(|c| c.error.is_some()) {
        ExitCode::from(1)
    } else if report.iter().any(|c| !c.due.is_empty()) {
        ExitCode::from(DUE_EXIT)
    } else {
        ExitCode::SUCCESS
    })
}

/// The title of `campaign` from its sealed rounds, each verified first, and what is due
/// at `now` (Unix seconds).
fn campaign_due(
    data: &DataDir,
    campaign: &CampaignId,
    keyring: &receipts::keys::Keyring,
    options: &verifier::VerifyOptions,
    now: i64,
) -> anyhow::Result<CampaignDue> {
    let dir = data.campaign(campaign);
    let mut result = CampaignDue {
        campaign: campaign.clone(),
        holder: None,
        held_since: None,
        pending: Vec::new(),
        due: Vec::new(),
        error: None,
    };
    let numbers = dir.round_numbers()?;
    let mut records = Vec::new();
    for n in &numbers {
        let bundle = dir.round_dir(*n);
        let report = verify_bundle(&bundle, keyring, options);
        if !report.passed() {
            result.error = Some(format!(
                "round {n} does not verify (`referee verify {}`)",
                bundle.display()
            ));
            return Ok(result);
        }
        records.push(read_round_record(&bundle)?.0);
    }
    let refs: Vec<&RoundRecord> = records.iter().collect();
    let first = dir.round_dir(numbers.first().copied().unwrap_or(1));
    let (rules, title) = match derive_campaign_title(dir.root(), &first, &refs, keyring) {
        Ok(Some(derived)) => (derived.rules, derived.title),
        Ok(None) => {
            let frozen = dir
                .load_campaign()
                .with_context(|| format!("campaign `{campaign}`"))?;
            (TitleRules::of_campaign(&frozen.campaign), Title::default())
        }
        Err(error) => {
            result.error = Some(error);
            return Ok(result);
        }
    };
    let at = |s: i64| Timestamp::from_unix_seconds(s).ok();
    result.held_since = title.held_since_s.and_then(at);
    result.pending = title
        .pending
        .iter()
        .filter_map(|p| {
            Some((
                p.challenger.clone(),
                p.won_round,
                at(p.earliest_confirmation_s)?,
            ))
        })
        .collect();
    result.due = title
        .due(&rules, now)
        .into_iter()
        .map(|due| match due {
            Due::Confirmation {
                challenger,
                won_round,
            } => format!(
                "a confirmation round for {} (won round {won_round})",
                name(&challenger)
            ),
            Due::Remeasure { holder, last_s } => format!(
                "a re-measurement of {} (last {})",
                name(&holder),
                at(last_s).map_or_else(|| last_s.to_string(), |t| t.to_string())
            ),
        })
        .collect();
    result.holder = title.holder;
    Ok(result)
}

fn name(leader: &Leader) -> String {
    format!(
        "{} ({})",
        escape_untrusted(leader.miner.as_str()),
        leader.patch.short()
    )
}

fn render(report: &[CampaignDue]) -> String {
    let mut out = String::new();
    for c in report {
        let holder = match (&c.holder, &c.held_since) {
            (Some(h), Some(since)) => format!("held by {} since {since}", name(h)),
            (Some(h), None) => format!("held by {}", name(h)),
            (None, _) => "vacant".to_owned(),
        };
        out.push_str(&format!("{}: {holder}\n", c.campaign));
        for (challenger, won, earliest) in &c.pending {
            out.push_str(&format!(
                "  pending: {} won round {won}; confirmation from {earliest}\n",
                name(challenger)
            ));
        }
        if let Some(error) = &c.error {
            out.push_str(&format!("  error: {error}\n"));
        } else if c.due.is_empty() {
            out.push_str("  nothing due\n");
        }
        for due in &c.due {
            out.push_str(&format!("  due: {due}\n"));
        }
    }
    out
}

/// The title of `campaign` as `referee status` derives it: from its sealed rounds as
/// recorded (unverified) and its revocations; `None` before a round was sealed.
///
/// Errors: a sealed round or the keyring cannot be read, or the chain breaks the title
/// rules.
pub(crate) fn derived_title(
    data: &DataDir,
    campaign: &CampaignId,
) -> anyhow::Result<Option<verifier::title::DerivedTitle>> {
    recorded_title(data, campaign)?
        .map_err(|e| anyhow::anyhow!("the title of `{campaign}` cannot be derived: {e}"))
}

/// [`derived_title`], a chain that breaks the title rules as the inner error.
fn recorded_title(
    data: &DataDir,
    campaign: &CampaignId,
) -> anyhow::Result<Result<Option<verifier::title::DerivedTitle>, String>> {
    let dir = data.campaign(campaign);
    let numbers = dir.round_numbers()?;
    let Some(first) = numbers.first() else {
        return Ok(Ok(None));
    };
    let mut records = Vec::new();
    for n in &numbers {
        records.push(read_round_record(&dir.round_dir(*n))?.0);
    }
    let refs: Vec<&RoundRecord> = records.iter().collect();
    let keyring = receipts::keys::Keyring::load(&data.keyring_path())
        .with_context(|| format!("loading the keyring `{}`", data.keyring_path().display()))?;
    Ok(derive_campaign_title(
        dir.root(),
        &dir.round_dir(*first),
        &refs,
        &keyring,
    ))
}

/// The title lines `referee status` prints after its table (content/title.md): who holds
/// the title, who is pending and from when, and every step of its history with its
/// reason, derived from the campaign's sealed rounds as recorded (status reads them
/// unverified, as its table does; `referee due` and `referee verify` verify them) and
/// its revocations. Nothing before a round was sealed.
///
/// Errors: a sealed round or the keyring cannot be read.
pub(crate) fn status_lines(data: &DataDir, campaign: &CampaignId) -> anyhow::Result<Vec<String>> {
    let derived = match recorded_title(data, campaign)? {
        Ok(Some(derived)) => derived,
        Ok(None) => return Ok(Vec::new()),
        Err(error) => {
            return Ok(vec![format!(
                "title: cannot be derived: {}",
                escape_untrusted(&error)
            )]);
        }
    };
    let title = &derived.title;
    let at =
        |s: i64| Timestamp::from_unix_seconds(s).map_or_else(|_| s.to_string(), |t| t.to_string());
    let mut lines = vec![match (&title.holder, title.held_since_s) {
        (Some(h), Some(since)) => format!("title: held by {} since {}", name(h), at(since)),
        (Some(h), None) => format!("title: held by {}", name(h)),
        (None, _) => "title: vacant".to_owned(),
    }];
    if derived.clock == Clock::Virtual {
        lines.push("  (virtual clock: these rounds count for no real title)".to_owned());
    }
    for p in &title.pending {
        lines.push(format!(
            "  pending: {} won round {}; confirmation from {}",
            name(&p.challenger),
            p.won_round,
            at(p.earliest_confirmation_s)
        ));
    }
    for event in &derived.events {
        if let Some((round, text)) =
            verifier::title::event_text(event, &|t: &str| escape_untrusted(t).into_owned())
        {
            lines.push(format!("  round {round}: {text}"));
        }
    }
    Ok(lines)
}
