//! `referee demo --days N` (content/title.md, The demo): the title over `N` days of a
//! virtual clock in campaign `demo-title` (`examples/demo/title-campaign.toml`, seat rule
//! 001, holding period 24 h, the holder re-measured daily). Each round runs for real on
//! the built-in engine; only its recorded times come from a virtual clock that starts on
//! the day the script gives it, so the receipts say `clock: virtual` and the rounds count
//! for no real title.
//!
//! - Day 0, a regular round: `miner-fast` wins by the margin and is pending.
//! - Day 1, after the holding period, a confirmation round: the margin reproduced, the
//!   title moves to it.
//! - Day 2, a re-measurement round: the holder's engine crashes as it starts (the demo
//!   kills it, as a crash would end it), so it fails a gate and the title moves to the next
//!   valid submission, `miner-noop`, re-checked in the same round.
//! - Day `N`, a revocation of the new holder's entry, logged: the holder before it failed
//!   its gate, so the title is vacant.
//!
//! After each step it prints the title as `referee status` shows it; at the end it runs
//! `referee verify` over the data directory (which recomputes the title, `title.chain`)
//! and builds the site, whose campaign page shows the title's history.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Parser;
use receipts::layout::{CampaignDir, DataDir, read_round_record};
use receipts::model::{CampaignId, Leader, Timestamp};
use referee::demo::{SUBMISSIONS, set_key, write_baseline_repo};

use super::super::revoke::RevokeArgs;
use super::super::round::{KindArg, print_summary, run_with_progress};
use super::super::verify::VerifyArgs;
use super::{
    DemoArgs, DemoKeys, add_and_ingest, build_demo_site, busy_machine_hint, demo_beacon, demo_keys,
    note, round_args, step, write_file,
};

/// The title demo's campaign (`examples/demo/title-campaign.toml`).
const TITLE_CAMPAIGN_TOML: &str = include_str!("../../../examples/demo/title-campaign.toml");

/// Its id.
const TITLE_CAMPAIGN_ID: &str = "demo-title";

/// The demo's submissions it ingests: the faster one (the challenger that wins) and the
/// one that changes nothing (scored, so a successor candidate).
const TITLE_SUBMISSIONS: [&str; 2] = ["miner-fast", "miner-noop"];

/// The origin of the title demo's log: another log than the demo's (`referee verify`
/// remembers each log's checkpoint by origin and key, and one key directory serves both).
const TITLE_LOG_ORIGIN: &str = "referee.example/title-log";

/// One virtual day, seconds.
const DAY_S: i64 = 86_400;

/// How long after a day's start its round's virtual clock starts, seconds: an hour past
/// the day before's round, whatever that round read off its clock.
const HOUR_S: i64 = 3_600;

/// How often the crash of the holder's engine looks for it.
const CRASH_POLL: Duration = Duration::from_millis(10);

/// Runs the title demo over `days` virtual days.
pub(super) fn run(args: &DemoArgs, days: u32) -> anyhow::Result<ExitCode> {
    let data = DataDir::new(&args.data.data);
    let d = args.data.data.display().to_string();
    let campaign: CampaignId = TITLE_CAMPAIGN_ID.parse().context("the title campaign id")?;
    let campaign_dir = data.campaign(&campaign);
    if campaign_dir.root().exists() && !campaign_dir.round_numbers()?.is_empty() {
        bail!(
            "`{d}` already holds rounds of `{TITLE_CAMPAIGN_ID}`: run `referee demo --days {days}` with a new --data directory"
        );
    }
    let DemoKeys { key_dir, key_path } = demo_keys(args, TITLE_LOG_ORIGIN)?;

    // The campaign: the demo's baseline under seat rule 001.
    let source = args.data.data.join(".demo-title");
    let commit = write_baseline_repo(&source.join("baseline.git"))
        .context("writing the demo's baseline repository")?;
    let campaign_toml = source.join("campaign.toml");
    write_file(
        &campaign_toml,
        set_key(TITLE_CAMPAIGN_TOML, "commit", &format!("\"{commit}\"")).as_bytes(),
    )?;
    let submissions: Vec<_> = SUBMISSIONS
        .iter()
        .filter(|s| TITLE_SUBMISSIONS.contains(&s.miner))
        .copied()
        .collect();
    add_and_ingest(args, &campaign_toml, &campaign, &submissions, &key_path)?;
    let beacon = demo_beacon(&key_dir)?;

    // Day 0 starts now: every recorded time of the demo lies on the virtual clock.
    let start = Timestamp::now().datetime().unix_timestamp() + 1;
    let day = |n: i64, offset_s: i64| {
        Timestamp::from_unix_seconds(start + n * DAY_S + offset_s).context("a virtual time")
    };
    let round = |kind: KindArg, at: Timestamp| -> anyhow::Result<()> {
        let name = match kind {
            KindArg::Regular => "regular",
            KindArg::Confirmation => "confirmation",
            KindArg::Remeasure => "remeasure",
        };
        step(&format!(
            "referee round --data {d} --campaign {TITLE_CAMPAIGN_ID} --kind {name} --key {} --beacon-file {}   # virtual clock from {at}",
            key_path.display(),
            beacon.display()
        ));
        let summary = run_with_progress(&round_args(
            args,
            TITLE_CAMPAIGN_ID,
            &key_path,
            beacon.clone(),
            kind,
            Some(at),
        ))
        .map_err(busy_machine_hint)?;
        print_summary(&summary);
        Ok(())
    };

    note(&format!(
        "day 0 ({}): a regular round; under seat rule 001 its winner is pending",
        day(0, 0)?
    ));
    round(KindArg::Regular, day(0, 0)?)?;
    print_status(&data, &campaign)?;

    note("day 1: the holding period (24 h) is over: a confirmation round");
    round(KindArg::Confirmation, day(1, HOUR_S)?)?;
    print_status(&data, &campaign)?;

    let holder = holder(&data, &campaign)?
        .context("no holder after the confirmation round: its margin did not reproduce")?;
    note(&format!(
        "day 2: the holder's re-measurement is due; its engine ({}) crashes as it starts (the \
         demo kills it), so it fails a gate",
        holder.miner
    ));
    let next_round = campaign_dir.round_numbers()?.last().copied().unwrap_or(0) + 1;
    let crash = CrashEngines::start(
        &campaign_dir,
        next_round,
        &holder,
        key_dir.join("crash.pid"),
    );
    let remeasured = round(KindArg::Remeasure, day(2, 2 * HOUR_S)?);
    let crashed = crash.stop();
    remeasured?;
    note(&format!("the holder's engine was killed {crashed} time(s)"));
    print_status(&data, &campaign)?;

    let successor = holder_entry(&data, &campaign)?;
    let Some((revoked_round, entry, successor)) = successor else {
        bail!("the title is vacant after the re-measurement: no successor to revoke");
    };
    let reason = "its diff rewords a comment: it is the baseline, so it may not hold the title";
    let at = day(i64::from(days), 0)?;
    step(&format!(
        "referee revoke --data {d} --campaign {TITLE_CAMPAIGN_ID} --round {revoked_round} --entry {entry} --reason '{reason}'   # at {at}"
    ));
    note(&format!(
        "day {days}: the evaluator revokes the new holder {}",
        successor.miner
    ));
    let revoked = super::super::revoke::run(RevokeArgs {
        data: args.data.clone(),
        campaign: TITLE_CAMPAIGN_ID.to_owned(),
        round: revoked_round,
        entry,
        reason: reason.to_owned(),
        keys: super::super::ingest::StatementKeyArgs {
            key: Some(key_path.clone()),
            log_key: None,
            key_dir: args.key_dir.clone(),
        },
        at: Some(at),
    })?;
    if revoked != ExitCode::SUCCESS {
        return Ok(revoked);
    }
    print_status(&data, &campaign)?;

    // The whole data directory verified, the title recomputed from its chain.
    step(&format!("referee verify --data {d} {d}"));
    let verify = VerifyCommand::try_parse_from([
        "verify".as_ref(),
        "--data".as_ref(),
        args.data.data.as_os_str(),
        args.data.data.as_os_str(),
    ])
    .context("the arguments of `referee verify`")?;
    let verified = super::super::verify::run(verify.args)?;
    if verified != ExitCode::SUCCESS {
        return Ok(verified);
    }
    build_demo_site(args)?;
    note(&format!(
        "the title's history is on the campaign page: {}",
        args.site
            .join(TITLE_CAMPAIGN_ID)
            .join("index.html")
            .display()
    ));
    Ok(ExitCode::SUCCESS)
}

/// `referee verify`'s arguments, parsed as the command line gives them.
#[derive(Parser)]
struct VerifyCommand {
    #[command(flatten)]
    args: VerifyArgs,
}

/// Prints the title lines of `referee status --campaign <campaign>`.
fn print_status(data: &DataDir, campaign: &CampaignId) -> anyhow::Result<()> {
    step(&format!(
        "referee status --data {} --campaign {campaign}",
        data.root().display()
    ));
    for line in super::super::due::status_lines(data, campaign)? {
        println!("{line}");
    }
    Ok(())
}

/// The title's holder as the campaign's sealed rounds derive it; `None` when vacant.
fn holder(data: &DataDir, campaign: &CampaignId) -> anyhow::Result<Option<Leader>> {
    Ok(super::super::due::derived_title(data, campaign)?.and_then(|derived| derived.title.holder))
}

/// The holder's entry in the last round that seated it: `(round, entry index, holder)`;
/// `None` when the title is vacant.
fn holder_entry(
    data: &DataDir,
    campaign: &CampaignId,
) -> anyhow::Result<Option<(u64, u32, Leader)>> {
    let Some(holder) = holder(data, campaign)? else {
        return Ok(None);
    };
    let dir = data.campaign(campaign);
    for n in dir.round_numbers()?.into_iter().rev() {
        let (record, _) = read_round_record(&dir.round_dir(n))?;
        let seated = record
            .entries
            .iter()
            .find(|e| e.patch == Some(holder.patch) && e.miner.as_ref() == Some(&holder.miner));
        if let Some(entry) = seated {
            return Ok(Some((n, entry.index, holder)));
        }
    }
    Ok(None)
}

/// The demo's crash of a holder's engine: while a round runs, every engine the round
/// starts from the holder's tree is killed as soon as it appears in the round's
/// `engines.pid`, as a crash would end it.
struct CrashEngines {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<usize>,
}

impl CrashEngines {
    /// Starts watching round `round` of `campaign_dir` for the engines of `holder`,
    /// naming each one it kills in the file `pid_file` (outside the data directory).
    fn start(campaign_dir: &CampaignDir, round: u64, holder: &Leader, pid_file: PathBuf) -> Self {
        let work = campaign_dir.work_dir().join(format!("round-{round}"));
        let suffix = format!("-{}", holder.miner);
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut killed = 0;
            while !flag.load(Ordering::SeqCst) {
                killed += kill_holder_engines(&work, &suffix, &pid_file);
                std::thread::sleep(CRASH_POLL);
            }
            killed
        });
        Self { stop, thread }
    }

    /// Stops watching; how many engines it killed.
    fn stop(self) -> usize {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().unwrap_or(0)
    }
}

/// Kills each engine of `<work>/engines.pid` whose working directory is a tree of
/// `<work>/trees/` named for the holder (`…-<miner>`), through the pid file `one`; how
/// many it killed.
fn kill_holder_engines(work: &Path, suffix: &str, one: &Path) -> usize {
    let Ok(text) = std::fs::read_to_string(work.join("engines.pid")) else {
        return 0;
    };
    let trees = work.join("trees");
    let mut killed = 0;
    for line in text.lines() {
        let Some((pid, _)) = line.split_once(' ') else {
            continue;
        };
        let Ok(cwd) = std::fs::read_link(format!("/proc/{pid}/cwd")) else {
            continue;
        };
        let holders = cwd
            .strip_prefix(&trees)
            .ok()
            .and_then(|rest| rest.components().next())
            .is_some_and(|tree| tree.as_os_str().to_string_lossy().ends_with(suffix));
        if holders {
            // `kill_leftovers` kills the process group of a pid file's line when its
            // leader still runs the program the line names: the line goes in a file. One
            // that cannot be written kills nothing, and the demo prints how many it killed.
            if write_file(one, format!("{line}\n").as_bytes()).is_ok() {
                killed += engines::kill_leftovers(one);
            }
        }
    }
    killed
}
