//! `referee campaign add` and `referee miner add`: freeze a campaign into the data
//! directory, register a miner (content/data-directory.md).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use intake::ingest::{add_campaign, add_hotkey};
use intake::repository::HotkeyRegistration;
use receipts::layout::DataDir;
use receipts::model::{CampaignId, MinerId, MinerRole};
use receipts::text::escape_untrusted;

use super::DataArgs;

/// `referee campaign …`.
#[derive(clap::Subcommand, Debug)]
pub enum CampaignCommand {
    /// Freeze a campaign.toml into the data directory: validate it, copy the pinned
    /// baseline commit into `<data>/<id>/baseline.git`, write the frozen campaign.toml
    /// with every default, print its digest. Re-adding the same campaign is a no-op.
    Add(CampaignAddArgs),
}

/// Arguments of `referee campaign add`.
#[derive(clap::Args, Debug)]
pub struct CampaignAddArgs {
    /// The campaign file; `baseline.repo` is relative to it.
    pub campaign_toml: PathBuf,
    #[command(flatten)]
    pub data: DataArgs,
}

/// `referee miner …`.
#[derive(clap::Subcommand, Debug)]
pub enum MinerCommand {
    /// Register a miner for a campaign (appends to `<data>/<id>/miners.json`).
    Add(MinerAddArgs),
}

/// Arguments of `referee miner add`.
#[derive(clap::Args, Debug)]
pub struct MinerAddArgs {
    /// The miner id (hotkey): `[A-Za-z0-9][A-Za-z0-9._-]{0,63}`.
    pub miner: MinerId,
    /// The campaign id.
    #[arg(long)]
    pub campaign: CampaignId,
    /// The coldkey that owns the hotkey (a repository campaign's queue is per coldkey).
    #[arg(long, requires_all = ["role", "registration"])]
    pub coldkey: Option<MinerId>,
    /// The hotkey's role: `competition` (commits repositories) or `inference` (may not
    /// submit; one hotkey cannot be both).
    #[arg(long, value_enum, requires_all = ["coldkey", "registration"])]
    pub role: Option<RoleArg>,
    /// The registration cost, as an opaque reference (an extrinsic hash, a receipt id; 1
    /// to 128 characters, no whitespace).
    #[arg(long, requires_all = ["coldkey", "role"])]
    pub registration: Option<String>,
    #[command(flatten)]
    pub data: DataArgs,
}

/// `--role` of `referee miner add`.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum RoleArg {
    /// A competition hotkey: commits repository submissions.
    Competition,
    /// An inference miner's hotkey.
    Inference,
}

impl From<RoleArg> for MinerRole {
    fn from(role: RoleArg) -> Self {
        match role {
            RoleArg::Competition => MinerRole::Competition,
            RoleArg::Inference => MinerRole::Inference,
        }
    }
}

pub fn run_campaign(cmd: CampaignCommand) -> anyhow::Result<ExitCode> {
    let CampaignCommand::Add(args) = cmd;
    let data = DataDir::new(&args.data.data);
    let added = add_campaign(&data, &args.campaign_toml).context("adding a campaign")?;
    let verb = if added.already_frozen {
        "already frozen"
    } else {
        "frozen"
    };
    eprintln!(
        "campaign `{}` {verb} in `{}`",
        added.campaign.id,
        added.dir.display()
    );
    println!("{}", added.digest);
    Ok(ExitCode::SUCCESS)
}

pub fn run_miner(cmd: MinerCommand) -> anyhow::Result<ExitCode> {
    let MinerCommand::Add(args) = cmd;
    let campaign_dir = DataDir::new(&args.data.data).campaign(&args.campaign);
    let registration = match (args.coldkey, args.role, args.registration) {
        (Some(coldkey), Some(role), Some(registration)) => Some(HotkeyRegistration {
            coldkey,
            role: role.into(),
            registration,
        }),
        _ => None,
    };
    let registered =
        add_hotkey(&campaign_dir, &args.miner, registration.as_ref()).with_context(|| {
            format!(
                "registering miner `{}` for campaign `{}`",
                args.miner, args.campaign
            )
        })?;
    let role = match (&registered.role, &registered.coldkey) {
        (Some(role), Some(coldkey)) => format!(
            " as a {} hotkey of coldkey `{}`",
            role.as_str(),
            escape_untrusted(coldkey)
        ),
        _ => String::new(),
    };
    println!(
        "miner `{}` registered for campaign `{}`{role} at {}",
        escape_untrusted(registered.id.as_str()),
        args.campaign,
        registered.registered_at
    );
    Ok(ExitCode::SUCCESS)
}
