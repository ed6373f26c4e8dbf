//! Subcommands. Each module holds one command's arguments and its `run`, which calls
//! into a library crate and prints the result.

mod agent;
mod bench;
mod build;
mod campaign;
mod demo;
mod due;
mod engine;
mod ingest;
mod keys;
mod log;
mod pod;
mod repository;
mod review;
mod revoke;
mod round;
mod seal;
mod show;
mod site;
mod text;
mod verify;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Runs, seals, verifies and publishes benchmark rounds of an inference-engine speed
/// competition.
#[derive(Parser, Debug)]
#[command(
    name = "referee",
    version,
    about,
    long_about = None,
    after_help = "Exit status: 0 on success; 1 when a command's check failed (each command's --help says which); 2 on a usage or I/O error."
)]
pub struct Cli {
    /// More log output on stderr (-v: debug, -vv: trace); `RUST_LOG` overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    command: Command,
}

/// Options shared by every command that touches the data directory (content/data-directory.md, One data
/// directory).
#[derive(clap::Args, Debug, Clone)]
pub struct DataArgs {
    /// The data directory.
    #[arg(long, default_value = "data", env = "REFEREE_DATA")]
    pub data: PathBuf,
}

/// Where private keys live: a key directory outside every data directory, because the
/// data directory is published.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct KeyDirArgs {
    /// The key directory (created with mode 0700 when a key is written into it); default
    /// `$XDG_CONFIG_HOME/referee/keys`, else `~/.config/referee/keys`. Never inside the
    /// data directory: that is published.
    #[arg(long, env = "REFEREE_KEY_DIR", value_name = "DIR")]
    pub key_dir: Option<PathBuf>,
}

impl KeyDirArgs {
    /// `--key-dir`, else the default key directory.
    ///
    /// Errors: neither `--key-dir`, `REFEREE_KEY_DIR`, `XDG_CONFIG_HOME` nor `HOME` is set.
    pub fn resolve(&self) -> anyhow::Result<PathBuf> {
        match &self.key_dir {
            Some(dir) => Ok(dir.clone()),
            None => receipts::layout::default_key_dir().ok_or_else(|| {
                anyhow::anyhow!(
                    "no key directory: pass --key-dir <dir> (neither XDG_CONFIG_HOME nor HOME is set)"
                )
            }),
        }
    }

    /// The evaluator's private key in the key directory: `<key-dir>/evaluator.key`.
    pub fn evaluator_key(&self) -> anyhow::Result<PathBuf> {
        Ok(self.resolve()?.join(format!("{EVALUATOR_KEY}.key")))
    }
}

/// The evaluator key pair's name in the key directory: `evaluator.key`, `evaluator.pub`.
pub const EVALUATOR_KEY: &str = "evaluator";

#[derive(Subcommand, Debug)]
enum Command {
    /// Generate an ed25519 key pair: `<out>.key` (mode 0600) and `<out>.pub`; default
    /// `<key-dir>/evaluator`.
    Keygen(keys::KeygenArgs),
    /// Trusted public keys: add a `.pub` file to the keyring.
    #[command(subcommand, after_help = keys::KEYRING_EXIT_CODES)]
    Keyring(keys::KeyringCommand),
    /// Sign a directory of files into a bundle with the given predicate.
    #[command(
        after_help = "Exit status: 0 when the bundle was sealed; 2 on a usage or I/O error, or a private key inside the directory."
    )]
    Seal(seal::SealArgs),
    /// Verify receipt bundles: signatures, digests, schema.
    Verify(verify::VerifyArgs),
    /// The built-in reference engine.
    #[command(subcommand)]
    #[command(
        after_help = "Exit status: 0 when the server stopped cleanly; 1 when the model does not fit its memory limit; 2 on a usage or I/O error."
    )]
    Engine(engine::EngineCommand),
    /// Load generation against an OpenAI-compatible server.
    #[command(subcommand, after_help = bench::BENCH_EXIT_CODES)]
    Bench(bench::BenchCommand),
    /// Campaigns: freeze a campaign.toml into the data directory.
    #[command(subcommand)]
    #[command(
        after_help = "Exit status: 0 when the campaign was frozen; 2 on a usage or I/O error, or an invalid campaign."
    )]
    Campaign(campaign::CampaignCommand),
    /// Miners: register a miner for a campaign.
    #[command(subcommand)]
    #[command(
        after_help = "Exit status: 0 when the miner was registered; 2 on a usage or I/O error."
    )]
    Miner(campaign::MinerCommand),
    /// Ingest a submitted diff, or a repository commitment, and run it through the gates.
    Ingest(ingest::IngestArgs),
    /// Build the images of a Docker campaign's submissions waiting in `building`.
    Build(build::BuildArgs),
    /// Show submissions and their pipeline events.
    Status(ingest::StatusArgs),
    /// Review a submission's tree before anything of it runs: static rules, an optional LLM
    /// review, the verdict PASS, FAIL or NEEDS-HUMAN (content/review.md).
    Review(review::ReviewArgs),
    /// Run a round: baseline, incumbent and queued challengers; score; seal.
    Round(round::RoundCommandArgs),
    /// Show a sealed round: header, entries, timeline, seeds, hardware; every value its
    /// checks did not verify is marked `(unverified)`.
    #[command(
        after_help = "Exit status: 0 when everything shown verifies; 1 when the bundle does not; 2 on a usage or I/O error."
    )]
    Show(show::ShowArgs),
    /// List a campaign's sealed rounds: status, leader after, top score, entries,
    /// verified.
    #[command(
        after_help = "Exit status: 0 when every round listed verifies; 1 when one does not; 2 on a usage or I/O error."
    )]
    Rounds(show::CampaignArgs),
    /// Say which campaigns need a confirmation or re-measurement round now, from the
    /// title their sealed rounds derive (content/title.md; for cron).
    #[command(after_help = due::DUE_EXIT_CODES)]
    Due(due::DueArgs),
    /// Revoke a sealed round's entry: log a signed revocation with the reason; the title
    /// returns to the holder before it (content/title.md).
    Revoke(revoke::RevokeArgs),
    /// Say who holds a campaign's seat, from the last round that verifies.
    #[command(
        after_help = "Exit status: 0 when every round verifies; 1 when a round that does not was skipped; 2 on a usage or I/O error."
    )]
    Leader(show::CampaignArgs),
    /// The public site: build it from verified receipts, preview it, check it.
    #[command(subcommand)]
    #[command(
        after_help = "Exit status: 0 on success; 1 when `site check` finds a problem; 2 on a usage or I/O error, or a private key inside the data directory."
    )]
    Site(site::SiteCommand),
    /// The transparency log: init, append, checkpoint, prove, consistency, verify, witness.
    #[command(subcommand, after_help = log::LOG_EXIT_CODES)]
    Log(log::LogCommand),
    /// Run the demo end to end: key, campaign, miners, ingest, round, verify.
    #[command(
        after_help = "Exit status: 0 when the demo's round verifies; 1 when it does not; 2 on a usage or I/O error."
    )]
    Demo(demo::DemoArgs),
    /// The side of a pod that runs there: verify the shipped files, pull images, ready
    /// weights, each step a frame on stdout (content/pods.md; started by the evaluator).
    #[command(
        after_help = "Exit status: 0 when every step ran or was skipped; 2 when one failed or on a usage or I/O error."
    )]
    Agent(agent::AgentArgs),
    /// Pods: check a campaign's `[pod]` by setting it up and releasing it.
    #[command(subcommand, after_help = pod::POD_EXIT_CODES)]
    Pod(pod::PodCommand),
}

impl Cli {
    /// Runs the chosen command; the exit code is the command's own (e.g. verify's 1 for a
    /// failed check), errors become exit 2 in `main`.
    pub fn run(self) -> anyhow::Result<ExitCode> {
        match self.command {
            Command::Keygen(args) => keys::run(args),
            Command::Keyring(cmd) => keys::run_keyring(cmd),
            Command::Seal(args) => {
                // The sealed files are published: a private key among them is refused.
                keys::refuse_keys_in_seal_dir(&args.dir, &args.keys)?;
                seal::run(args)
            }
            Command::Verify(args) => verify::run(args),
            Command::Engine(cmd) => engine::run(cmd),
            Command::Bench(cmd) => bench::run(cmd),
            Command::Campaign(cmd) => campaign::run_campaign(cmd),
            Command::Miner(cmd) => campaign::run_miner(cmd),
            Command::Ingest(args) => ingest::run_ingest(args),
            Command::Build(args) => build::run(args),
            Command::Status(args) => ingest::run_status(args),
            Command::Review(args) => review::run(args),
            Command::Round(args) => round::run(args),
            Command::Show(args) => show::run_show(args, self.verbose > 0),
            Command::Rounds(args) => show::run_rounds(args),
            Command::Leader(args) => show::run_leader(args),
            Command::Due(args) => due::run(args),
            Command::Revoke(args) => revoke::run(args),
            Command::Site(cmd) => site::run(cmd),
            Command::Demo(args) => demo::run(args),
            Command::Log(cmd) => log::run(cmd),
            Command::Agent(args) => agent::run(args),
            Command::Pod(cmd) => pod::run(cmd),
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

/// Prints a command-line error and returns its exit status (2; 0 for `--help` and
/// `--version`). An error quotes what was typed (`unexpected argument '…'`), and a
/// terminal must not run what it quotes: every line of the message goes through
/// [`receipts::text::escape_untrusted`], so ESC/OSC sequences and bidi controls show as
/// escapes. Help and version texts are referee's own and print as clap prints them.
pub fn argument_error(error: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let status = ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2));
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        // A closed stdout (`referee --help | head`) is not worth a second error.
        let _ = error.print();
        return status;
    }
    let text = error.render().to_string();
    let lines: Vec<_> = text.lines().map(receipts::text::escape_untrusted).collect();
    eprintln!("{}", lines.join("\n"));
    status
}
