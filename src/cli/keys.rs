//! `referee keygen` and `referee keyring add`: make an Ed25519 key pair, and trust a
//! public key (content/receipts.md §Keys). The private key is never printed. Private keys live
//! in a key directory outside every data directory (`--key-dir`, default
//! `~/.config/referee/keys`), because the data directory is published; a private key
//! found inside one, or inside a directory to seal, is refused with the commands that
//! move it out.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use receipts::keys::{KeyRole, Keyring, PublicKey, RoleKey, TrustedKey, generate_key_pair};
use receipts::layout::{DataError, find_private_keys};
use receipts::model::Timestamp;

use super::{DataArgs, EVALUATOR_KEY, KeyDirArgs};

/// Exit codes of `referee keygen`, shown in its `--help`.
pub const KEYGEN_EXIT_CODES: &str = "Exit status: 0 when the key pair was written; 2 on a usage or I/O error (nothing is overwritten).";

/// Exit codes of `referee keyring add`, shown in its `--help`.
pub const KEYRING_EXIT_CODES: &str = "Exit status: 0 when the key is trusted; 2 on a usage or I/O error, or a key the keyring already holds.";

/// Arguments of `referee keygen`.
#[derive(clap::Args, Debug)]
#[command(after_help = KEYGEN_EXIT_CODES)]
pub struct KeygenArgs {
    /// Path prefix of the key pair (a file stem like `keys/op`, not a directory): writes
    /// `<out>.key` (mode 0600) and `<out>.pub`; default `<key-dir>/evaluator`. Refuses to
    /// overwrite either.
    #[arg(long, value_name = "STEM")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub key_dir: KeyDirArgs,
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
#[command(after_help = KEYRING_EXIT_CODES)]
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
    /// `log` or `witness`: trust the key only in that role, for the log origin or the
    /// witness name given with `--origin` (content/transparency-log.md); default an
    /// evaluator key.
    #[arg(long, value_parser = parse_role, requires = "origin")]
    pub role: Option<KeyRole>,
    /// With --role: the log's origin line, or the witness's name in its cosignatures.
    #[arg(long, requires = "role")]
    pub origin: Option<String>,
}

fn parse_role(s: &str) -> Result<KeyRole, String> {
    match s {
        "log" => Ok(KeyRole::Log),
        "witness" => Ok(KeyRole::Witness),
        other => Err(format!("`{other}` is not `log` or `witness`")),
    }
}

/// Generates the key pair, prints its keyid and public key path.
pub fn run(args: KeygenArgs) -> anyhow::Result<ExitCode> {
    let out = match args.out {
        Some(out) => {
            // `--out keys/` would write the hidden `keys/.key` and `keys/.pub`.
            let names_a_dir = out.as_os_str().to_string_lossy().ends_with(['/', '\\'])
                || out.file_name().is_none();
            if names_a_dir || out.is_dir() {
                anyhow::bail!(
                    "--out `{}` is a directory: --out takes a file stem like `keys/op` (writes `keys/op.key` and `keys/op.pub`)",
                    out.display()
                );
            }
            if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("creating directory `{}`", parent.display()))?;
            }
            out
        }
        None => {
            let dir = args.key_dir.resolve()?;
            create_key_dir(&dir)?;
            dir.join(EVALUATOR_KEY)
        }
    };
    let file = generate_key_pair(&out).context("generating a key pair")?;
    let with_suffix = |suffix: &str| {
        let mut path = out.clone().into_os_string();
        path.push(suffix);
        PathBuf::from(path)
    };
    let pub_path = with_suffix(".pub");
    println!("keyid {}", file.keyid);
    println!("private key {}", with_suffix(".key").display());
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
            if let (Some(role), Some(origin)) = (args.role, args.origin) {
                let mut ring = if keyring.exists() {
                    Keyring::load(&keyring)?
                } else {
                    Keyring::default()
                };
                ring.add_role_key(RoleKey {
                    trusted: TrustedKey {
                        key,
                        valid_from: args.valid_from.unwrap_or_else(Timestamp::now),
                        valid_until: args.valid_until,
                    },
                    role,
                    origin: origin.clone(),
                })?;
                ring.save(&keyring)?;
                println!(
                    "trusted {keyid} as {} `{origin}` in {}",
                    if role == KeyRole::Log {
                        "log"
                    } else {
                        "witness"
                    },
                    keyring.display()
                );
                return Ok(ExitCode::SUCCESS);
            }
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

/// Creates the key directory `dir` (and its parents) with mode 0700, when missing.
///
/// Errors: the directory cannot be created.
pub fn create_key_dir(dir: &Path) -> anyhow::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder
        .create(dir)
        .with_context(|| format!("creating the key directory `{}`", dir.display()))
}

/// Where a refusal's hint moves the private keys `found` inside a published directory:
/// the directory of the key given with `--key` when that key is not one of them (it
/// lives where keys live), else the key directory (`--key-dir` or the default).
pub fn hint_key_dir(key: Option<&Path>, found: &[PathBuf], key_dir: &KeyDirArgs) -> PathBuf {
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    if let Some(key) = key {
        let key_canonical = canonical(key);
        let parent = key_canonical
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf);
        if !found.iter().any(|f| canonical(f) == key_canonical)
            && let Some(parent) = parent
        {
            return parent;
        }
    }
    key_dir
        .resolve()
        .unwrap_or_else(|_| PathBuf::from("~/.config/referee/keys"))
}

/// Refuses to seal `dir` when a private key file lies inside it
/// ([`find_private_keys`]): every file of the directory becomes part of the bundle,
/// which is published. `keys` are the `--key` files given to `referee seal`.
///
/// Errors: [`DataError::PrivateKeyInside`] naming each file and the commands that move
/// it out; [`DataError::Io`] when the directory cannot be scanned.
pub fn refuse_keys_in_seal_dir(dir: &Path, keys: &[PathBuf]) -> anyhow::Result<()> {
    if !dir.is_dir() {
        return Ok(()); // `seal` itself says so
    }
    let found = find_private_keys(dir)?;
    if found.is_empty() {
        return Ok(());
    }
    let key_dir = hint_key_dir(
        keys.first().map(PathBuf::as_path),
        &found,
        &KeyDirArgs::default(),
    );
    Err(DataError::private_keys_inside(
        dir,
        "the directory to seal",
        found,
        &key_dir,
        "referee seal",
    )
    .into())
}
