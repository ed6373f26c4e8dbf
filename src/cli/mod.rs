//! Subcommands. Each module holds one command's arguments and its `run`, which calls
//! into a library crate and prints the result.

mod bench;
mod campaign;
mod demo;
mod engine;
mod ingest;
mod keys;
mod round;
mod seal;
mod verify;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Runs, seals, verifies and publishes benchmark rounds of an inference-engine speed
/// competition.
#[derive(Parser, Debug)]
#[command(name = "referee", version, about, long_about = None)]
pub struct Cli {
    /// More log output on stderr (-v: debug, -vv: trace); `RUST_LOG` overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    command: Command,
}

/// Options shared by every command that touches the data directory (DESIGN.md, One data
/// directory).
#[derive(clap::Args, Debug, Clone)]
pub struct DataArgs {
    /// The data directory.
    #[arg(long, default_value = "data", env = "REFEREE_DATA")]
    pub data: PathBuf,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Generate an ed25519 key pair: `<out>.key` (mode 0600) and `<out>.pub`.
    Keygen(keys::KeygenArgs),
    /// Trusted public keys: add a `.pub` file to the keyring.
    #[command(subcommand)]
    Keyring(keys::KeyringCommand),
    /// Sign a directory of files into a bundle with the given predicate.
    Seal(seal::SealArgs),
    /// Verify receipt bundles: signatures, digests, schema.
    Verify(verify::VerifyArgs),
    /// The built-in reference engine.
    #[command(subcommand)]
    Engine(engine::EngineCommand),
    /// Load generation against an OpenAI-compatible server.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Campaigns: freeze a campaign.toml into the data directory.
    #[command(subcommand)]
    Campaign(campaign::CampaignCommand),
    /// Miners: register a miner for a campaign.
    #[command(subcommand)]
    Miner(campaign::MinerCommand),
    /// Ingest a submitted diff and run it through the gates.
    Ingest(ingest::IngestArgs),
    /// Show submissions and their pipeline events.
    Status(ingest::StatusArgs),
    /// Run a round: baseline, incumbent and queued challengers; score; seal.
    Round(round::RoundArgs),
    /// Run the demo end to end: key, campaign, miners, ingest, round, verify.
    Demo(demo::DemoArgs),
}

impl Cli {
    /// Runs the chosen command; the exit code is the command's own (e.g. verify's 1 for a
    /// failed check), errors become exit 2 in `main`.
    pub fn run(self) -> anyhow::Result<ExitCode> {
        match self.command {
            Command::Keygen(args) => keys::run(args),
            Command::Keyring(cmd) => keys::run_keyring(cmd),
            Command::Seal(args) => seal::run(args),
            Command::Verify(args) => verify::run(args),
            Command::Engine(cmd) => engine::run(cmd),
            Command::Bench(cmd) => bench::run(cmd),
            Command::Campaign(cmd) => campaign::run_campaign(cmd),
            Command::Miner(cmd) => campaign::run_miner(cmd),
            Command::Ingest(args) => ingest::run_ingest(args),
            Command::Status(args) => ingest::run_status(args),
            Command::Round(args) => round::run(args),
            Command::Demo(args) => demo::run(args),
        }
    }
}

/// Logs go to stderr; `-v` raises the level, `RUST_LOG` overrides; colour only on a
/// terminal and never with `NO_COLOR` (engine logs captured to files stay plain text).
pub fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "info",
        1 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none())
        .try_init();
}
