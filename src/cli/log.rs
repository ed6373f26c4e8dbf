//! `referee log …`: the data directory's transparency log (content/transparency-log.md).
//! `init` creates it and its log key (`<key-dir>/log.key`, distinct from the evaluator's,
//! trusted in the keyring with role `log`); `append` logs an envelope; `checkpoint`,
//! `prove`, `consistency` and `verify` read and check it; `witness` cosigns a checkpoint
//! after checking it is consistent with the last one the witness saw.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use intake::tlog::LogStore;
use receipts::bundle::ENVELOPE_FILE;
use receipts::fsutil::{read_limited, write_atomic};
use receipts::keys::{
    KeyRole, Keyring, PrivateKey, PublicKey, RoleKey, TrustedKey, generate_key_pair,
};
use receipts::model::{CampaignId, Timestamp};
use receipts::tlog::checkpoint::Checkpoint;
use receipts::tlog::cosignature;
use receipts::tlog::entry::{EntryKind, LogEntry};
use receipts::tlog::merkle::{Hash, verify_consistency};
use receipts::tlog::note::{NoteVerifier, SignatureType};
use serde_json::json;

use super::{DataArgs, EVALUATOR_KEY, KeyDirArgs};

/// The log key pair's name in the key directory: `log.key`, `log.pub`.
pub const LOG_KEY: &str = "log";

/// Exit codes of `referee log`, shown in its `--help`.
pub const LOG_EXIT_CODES: &str = "Exit status: 0 on success; 1 when `log verify`, `log consistency` or `log witness` finds the log inconsistent; 2 on a usage or I/O error.";

/// `referee log …`.
#[derive(clap::Subcommand, Debug)]
pub enum LogCommand {
    /// Create the data directory's log and its log key (trusted with role `log`).
    Init(InitArgs),
    /// Append the entry of an envelope file and sign the new checkpoint.
    Append(AppendArgs),
    /// Print the current checkpoint, checked against the pinned log key.
    Checkpoint(CommonArgs),
    /// Print the inclusion proofs of a bundle's round in the current checkpoint.
    Prove(ProveArgs),
    /// Prove and check that checkpoint `<old>` is a prefix of checkpoint `<new>`.
    Consistency(ConsistencyArgs),
    /// Check the whole log: checkpoint, tiles, bundles, root.
    Verify(CommonArgs),
    /// As a witness: check a log's checkpoint against the last one seen, and cosign it.
    Witness(WitnessArgs),
}

/// Options every `referee log` command takes.
#[derive(clap::Args, Debug)]
pub struct CommonArgs {
    #[command(flatten)]
    pub data: DataArgs,
    /// The keyring holding the log key (role `log`); default `<data>/keyring.json`.
    #[arg(long)]
    pub keyring: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `referee log init`.
#[derive(clap::Args, Debug)]
pub struct InitArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub key_dir: KeyDirArgs,
    /// The origin line of every checkpoint, e.g. `referee.example/log`.
    #[arg(long)]
    pub origin: String,
}

/// Arguments of `referee log append`.
#[derive(clap::Args, Debug)]
pub struct AppendArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub key_dir: KeyDirArgs,
    /// The campaign id.
    #[arg(long)]
    pub campaign: CampaignId,
    /// The round number.
    #[arg(long)]
    pub round: u64,
    /// `round-opened` or `receipt`.
    #[arg(long, value_parser = parse_kind)]
    pub kind: EntryKind,
    /// The envelope file whose SHA-256 is logged.
    #[arg(long)]
    pub envelope: PathBuf,
}

/// Arguments of `referee log prove`.
#[derive(clap::Args, Debug)]
pub struct ProveArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// A sealed round's bundle directory.
    pub bundle: PathBuf,
}

/// Arguments of `referee log consistency`.
#[derive(clap::Args, Debug)]
pub struct ConsistencyArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// The older checkpoint file.
    pub old: PathBuf,
    /// The newer checkpoint file.
    pub new: PathBuf,
}

/// Arguments of `referee log witness`.
#[derive(clap::Args, Debug)]
pub struct WitnessArgs {
    /// The log directory (a data directory's `log/`, or a copy of it).
    #[arg(long)]
    pub log: PathBuf,
    /// The witness's private key (`.key`, from `referee keygen`).
    #[arg(long)]
    pub key: PathBuf,
    /// The witness's name in its cosignature lines.
    #[arg(long)]
    pub name: String,
    /// The log's verifier key string (`origin+hash+base64`), as `log init` printed it.
    #[arg(long)]
    pub log_key: String,
    /// Where the witness remembers the last checkpoint it cosigned of this log; default
    /// `witness-<name>-<log key id>.checkpoint` next to `--key`.
    #[arg(long)]
    pub state: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

fn parse_kind(s: &str) -> Result<EntryKind, String> {
    match s {
        "round-opened" => Ok(EntryKind::RoundOpened),
        "receipt" => Ok(EntryKind::Receipt),
        other => Err(format!("`{other}` is not `round-opened` or `receipt`")),
    }
}

const MAX_CHECKPOINT_BYTES: usize = 1 << 16;

impl CommonArgs {
    fn keyring_path(&self) -> PathBuf {
        (self.keyring.clone()).unwrap_or_else(|| self.data.data.join("keyring.json"))
    }

    /// The log and its verifier from the pinned log key of the keyring.
    fn open(&self) -> anyhow::Result<(LogStore, NoteVerifier)> {
        let store = LogStore::open(&self.data.data)?;
        let keyring = Keyring::load(&self.keyring_path())?;
        let origin = &store.config().origin;
        let key = (keyring.role_keys().iter())
            .find(|k| k.role == KeyRole::Log && &k.origin == origin)
            .with_context(|| {
                format!("no key with role `log` for origin `{origin}` in the keyring")
            })?;
        let verifier = store.verifier(&key.trusted.key)?;
        Ok((store, verifier))
    }
}

fn b64(hashes: &[Hash]) -> Vec<String> {
    hashes.iter().map(|h| STANDARD.encode(h)).collect()
}

/// Runs `referee log …`.
pub fn run(command: LogCommand) -> anyhow::Result<ExitCode> {
    match command {
        LogCommand::Init(args) => init(args),
        LogCommand::Append(args) => append(args),
        LogCommand::Checkpoint(args) => {
            let (store, log) = args.open()?;
            let (checkpoint, bytes) = store.checkpoint(&log)?;
            if args.json {
                let out = json!({"origin": checkpoint.origin, "size": checkpoint.size, "root": STANDARD.encode(checkpoint.root), "note": String::from_utf8_lossy(&bytes)});
                println!("{out}");
            } else {
                print!("{}", String::from_utf8_lossy(&bytes));
            }
            Ok(ExitCode::SUCCESS)
        }
        LogCommand::Prove(args) => prove(args),
        LogCommand::Consistency(args) => consistency(args),
        LogCommand::Verify(args) => {
            let (store, log) = args.open()?;
            let (ok, detail) = match store.verify(&log) {
                Ok(c) => (
                    true,
                    format!(
                        "log verified: {} entries, root {}",
                        c.size,
                        STANDARD.encode(c.root)
                    ),
                ),
                Err(e) => (false, format!("log does not verify: {e}")),
            };
            if args.json {
                println!("{}", json!({"ok": ok, "detail": detail}));
            } else {
                println!("{detail}");
            }
            Ok(if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        LogCommand::Witness(args) => witness(args),
    }
}

/// A log created by [`init_log`].
pub struct CreatedLog {
    /// The log.
    pub store: LogStore,
    /// `<key-dir>/log.key`.
    pub key_path: PathBuf,
    /// The log's verifier key string (`origin+hash+base64`).
    pub vkey: String,
}

/// Creates the log of `data` with origin `origin`: its key `<key_dir>/log.key` (generated
/// unless there; never the evaluator key), trusted in the keyring at `keyring_path` with
/// role `log` (shared by `referee log init` and `referee demo`).
///
/// Errors: the log key is the evaluator key; the data directory already has a log; key,
/// keyring or log I/O.
pub fn init_log(
    data: &Path,
    key_dir: &Path,
    keyring_path: &Path,
    origin: &str,
) -> anyhow::Result<CreatedLog> {
    super::keys::create_key_dir(key_dir)?;
    let stem = key_dir.join(LOG_KEY);
    let key_path = stem.with_extension("key");
    if !key_path.exists() {
        generate_key_pair(&stem).context("generating the log key")?;
    }
    let key = PrivateKey::load(&key_path)?;
    let evaluator = key_dir.join(format!("{EVALUATOR_KEY}.pub"));
    if evaluator.is_file() && PublicKey::load(&evaluator)?.as_bytes() == key.public().as_bytes() {
        anyhow::bail!(
            "the log key `{}` is the evaluator key: a log needs its own key",
            key_path.display()
        );
    }
    let store = LogStore::init(data, origin, &key)?;
    let mut keyring = if keyring_path.exists() {
        Keyring::load(keyring_path)?
    } else {
        Keyring::default()
    };
    keyring.add_role_key(RoleKey {
        trusted: TrustedKey {
            key: key.public().clone(),
            valid_from: Timestamp::now(),
            valid_until: None,
        },
        role: KeyRole::Log,
        origin: origin.to_owned(),
    })?;
    keyring.save(keyring_path)?;
    let vkey = store.verifier(key.public())?.to_vkey();
    Ok(CreatedLog {
        store,
        key_path,
        vkey,
    })
}

fn init(args: InitArgs) -> anyhow::Result<ExitCode> {
    let keyring_path = args.common.keyring_path();
    let created = init_log(
        &args.common.data.data,
        &args.key_dir.resolve()?,
        &keyring_path,
        &args.origin,
    )?;
    let CreatedLog {
        store,
        key_path,
        vkey,
    } = created;
    let keyid = store.config().keyid.clone();
    if args.common.json {
        println!(
            "{}",
            json!({"origin": args.origin, "keyid": keyid, "vkey": vkey})
        );
    } else {
        println!(
            "log {} created, origin {}",
            LogStore::dir_of(&args.common.data.data).display(),
            store.config().origin
        );
        println!(
            "log key {} (trusted in {})",
            key_path.display(),
            keyring_path.display()
        );
        println!("verifier key {vkey}");
    }
    Ok(ExitCode::SUCCESS)
}

fn append(args: AppendArgs) -> anyhow::Result<ExitCode> {
    let (store, _) = args.common.open()?;
    let key = PrivateKey::load(&args.key_dir.resolve()?.join(format!("{LOG_KEY}.key")))?;
    let envelope = read_limited(&args.envelope, receipts::bundle::MAX_ENVELOPE_BYTES)
        .with_context(|| format!("reading `{}`", args.envelope.display()))?;
    let entry = LogEntry::for_envelope(args.campaign, Some(args.round), args.kind, &envelope);
    let appended = store.append(&key, &[entry.to_bytes()?])?;
    if args.common.json {
        println!(
            "{}",
            json!({"index": appended.first_index, "size": appended.checkpoint.size})
        );
    } else {
        println!(
            "logged at index {}; checkpoint size {}",
            appended.first_index, appended.checkpoint.size
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn prove(args: ProveArgs) -> anyhow::Result<ExitCode> {
    let (store, log) = args.common.open()?;
    let path = args.bundle.join(ENVELOPE_FILE);
    let envelope = read_limited(&path, receipts::bundle::MAX_ENVELOPE_BYTES)
        .with_context(|| format!("reading `{}`", path.display()))?;
    let digest = receipts::model::Sha256Hex::digest(&envelope);
    let (checkpoint, _) = store.checkpoint(&log)?;
    let entries = store.entries(&log)?;
    let parsed: Vec<Option<LogEntry>> = (entries.iter())
        .map(|e| receipts::canonical::from_slice_strict(e, 1 << 16).ok())
        .collect();
    let receipt = (parsed.iter().flatten())
        .find(|e| e.envelope_sha256 == digest)
        .with_context(|| format!("`{}` is not in the log", path.display()))?;
    let mut proofs = Vec::new();
    for (index, entry) in parsed.iter().enumerate() {
        if let Some(e) = entry
            .as_ref()
            .filter(|e| e.campaign == receipt.campaign && e.round == receipt.round)
        {
            let proof = store.prove(&log, index as u64, checkpoint.size)?;
            proofs.push(json!({"index": index, "kind": e.kind, "envelopeSha256": e.envelope_sha256, "proof": b64(&proof)}));
        }
    }
    let out = json!({"size": checkpoint.size, "root": STANDARD.encode(checkpoint.root), "entries": proofs});
    if args.common.json {
        println!("{out}");
    } else {
        println!("{}", serde_json::to_string_pretty(&out)?);
    }
    Ok(ExitCode::SUCCESS)
}

fn read_checkpoint(path: &Path, log: &NoteVerifier) -> anyhow::Result<Checkpoint> {
    let bytes = read_limited(path, MAX_CHECKPOINT_BYTES)
        .with_context(|| format!("reading `{}`", path.display()))?;
    Ok(Checkpoint::open(&bytes, log)
        .with_context(|| format!("checkpoint `{}`", path.display()))?
        .0)
}

fn consistency(args: ConsistencyArgs) -> anyhow::Result<ExitCode> {
    let (store, log) = args.common.open()?;
    let old = read_checkpoint(&args.old, &log)?;
    let new = read_checkpoint(&args.new, &log)?;
    let proof = store.consistency(&log, old.size, new.size)?;
    let result = verify_consistency(old.size, new.size, &proof, &old.root, &new.root);
    let detail = match &result {
        Ok(()) => format!(
            "consistent: size {} is a prefix of size {}",
            old.size, new.size
        ),
        Err(e) => format!("inconsistent: {e}"),
    };
    if args.common.json {
        println!(
            "{}",
            json!({"ok": result.is_ok(), "old": old.size, "new": new.size, "proof": b64(&proof), "detail": detail})
        );
    } else {
        println!("{detail}");
    }
    Ok(if result.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn witness(args: WitnessArgs) -> anyhow::Result<ExitCode> {
    let log = NoteVerifier::parse(&args.log_key).context("--log-key")?;
    anyhow::ensure!(
        log.kind() == SignatureType::Ed25519,
        "--log-key is not an Ed25519 note key"
    );
    let key = PrivateKey::load(&args.key)?;
    let store = LogStore::open_dir(&args.log)?;
    let (checkpoint, bytes) = store.checkpoint(&log)?;
    let state = (args.state.clone()).unwrap_or_else(|| {
        args.key.with_file_name(format!(
            "witness-{}-{:08x}.checkpoint",
            args.name,
            log.key_id()
        ))
    });

    let fail = |detail: String| -> anyhow::Result<ExitCode> {
        if args.json {
            println!("{}", json!({"ok": false, "detail": detail}));
        } else {
            println!("{detail}");
        }
        Ok(ExitCode::from(1))
    };
    if state.exists() {
        let seen = read_checkpoint(&state, &log)?;
        if seen.size > checkpoint.size {
            return fail(format!(
                "refused: the log shrank from {} to {} entries",
                seen.size, checkpoint.size
            ));
        }
        let proof = store.consistency(&log, seen.size, checkpoint.size)?;
        if let Err(e) = verify_consistency(
            seen.size,
            checkpoint.size,
            &proof,
            &seen.root,
            &checkpoint.root,
        ) {
            return fail(format!(
                "refused: checkpoint of size {} is not consistent with the one seen at size {}: {e}",
                checkpoint.size, seen.size
            ));
        }
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .context("the clock is before 1970")?
        .as_secs();
    let text = checkpoint.to_text();
    let line = cosignature::cosign(&text, &args.name, &key, now)?;
    let added = store.add_cosignature(&log, &text, line)?;
    anyhow::ensure!(
        added,
        "the log's checkpoint moved while it was being cosigned: run again"
    );
    write_atomic(&state, &bytes, 0o644)
        .with_context(|| format!("writing `{}`", state.display()))?;
    let vkey =
        NoteVerifier::new(&args.name, SignatureType::Cosignature, key.public().clone())?.to_vkey();
    if args.json {
        println!(
            "{}",
            json!({"ok": true, "size": checkpoint.size, "time": now, "witnessKey": vkey})
        );
    } else {
        println!(
            "cosigned checkpoint of size {} at {now}; witness key {vkey}",
            checkpoint.size
        );
    }
    Ok(ExitCode::SUCCESS)
}
