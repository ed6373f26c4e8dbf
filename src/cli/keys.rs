//! `referee keygen` and `referee keyring add`: make an Ed25519 key pair, and trust a
//! public key (RECEIPTS.md §Keys). The private key is never printed.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use receipts::keys::{Keyring, PublicKey, TrustedKey, generate_key_pair};
use receipts::model::Timestamp;

use super::DataArgs;

/// Arguments of `referee keygen`.
#[derive(clap::Args, Debug)]
pub struct KeygenArgs {
    /// Path prefix of the key pair: writes `<out>.key` (mode 0600) and `<out>.pub`.
    /// Refuses to overwrite either.
    #[arg(long)]
    pub out: PathBuf,
    /// Also trust the new public key in this keyring file (created if missing), valid
    /// from now on.
    #[arg(long)]
    pub keyring: Option<PathBuf>,
}

/// `referee keyring …`.
#[derive(clap::Subcommand, Debug)]
pub enum KeyringCommand {
    /// Trust a public key (`<name>.pub`) in the keyring.
    Add(KeyringAddArgs),
}

/// Arguments of `referee keyring add`.
#[derive(clap::Args, Debug)]
pub struct KeyringAddArgs {
    /// The `.pub` file written by `referee keygen`.
    pub public_key: PathBuf,
    /// The keyring file (created if missing); default `<data>/keyring.json`.
    #[arg(long)]
    pub keyring: Option<PathBuf>,
    #[command(flatten)]
    pub data: DataArgs,
    /// First instant the key's signatures count (RFC 3339 UTC, `…Z`); default now.
    #[arg(long)]
    pub valid_from: Option<Timestamp>,
    /// First instant they no longer count (RFC 3339 UTC); default open-ended.
    #[arg(long)]
    pub valid_until: Option<Timestamp>,
}

/// Generates the key pair, prints its keyid and public key path.
pub fn run(args: KeygenArgs) -> anyhow::Result<ExitCode> {
    if let Some(parent) = args.out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating directory `{}`", parent.display()))?;
    }
    let file = generate_key_pair(&args.out).context("generating a key pair")?;
    let mut pub_path = args.out.into_os_string();
    pub_path.push(".pub");
    let pub_path = PathBuf::from(pub_path);
    println!("keyid {}", file.keyid);
    println!("public key {}", pub_path.display());
    if let Some(keyring) = args.keyring {
        let key = PublicKey::load(&pub_path)?;
        add_to_keyring(&keyring, key, Timestamp::now(), None)?;
        println!("trusted in {}", keyring.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `referee keyring …`.
pub fn run_keyring(command: KeyringCommand) -> anyhow::Result<ExitCode> {
    match command {
        KeyringCommand::Add(args) => {
            let key = PublicKey::load(&args.public_key)?;
            let keyid = key.keyid().to_owned();
            let keyring = args
                .keyring
                .unwrap_or_else(|| args.data.data.join("keyring.json"));
            add_to_keyring(
                &keyring,
                key,
                args.valid_from.unwrap_or_else(Timestamp::now),
                args.valid_until,
            )?;
            println!("trusted {keyid} in {}", keyring.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn add_to_keyring(
    path: &std::path::Path,
    key: PublicKey,
    valid_from: Timestamp,
    valid_until: Option<Timestamp>,
) -> anyhow::Result<()> {
    let mut keyring = if path.exists() {
        Keyring::load(path)?
    } else {
        Keyring::default()
    };
    keyring.add(TrustedKey {
        key,
        valid_from,
        valid_until,
    })?;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating directory `{}`", parent.display()))?;
    }
    keyring.save(path)?;
    Ok(())
}
