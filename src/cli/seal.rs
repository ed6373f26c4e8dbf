//! `referee seal <dir> --key <key> --predicate <file.json>`: sign a directory of files into
//! a receipt bundle (the library call the round executor also makes).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use receipts::bundle::{MAX_ENVELOPE_BYTES, seal_bundle};
use receipts::canonical::parse_strict;
use receipts::keys::PrivateKey;
use receipts::model::ROUND_PREDICATE_TYPE;

/// Arguments of `referee seal`.
#[derive(clap::Args, Debug)]
pub struct SealArgs {
    /// The directory to seal: every file under it becomes a subject; the envelope is
    /// written to `<dir>/receipt.dsse.json`.
    pub dir: PathBuf,
    /// Private key file(s) (`<name>.key`, mode 0600); one signature each.
    #[arg(long = "key", required = true)]
    pub keys: Vec<PathBuf>,
    /// The predicate: a JSON object, integers only.
    #[arg(long)]
    pub predicate: PathBuf,
    /// The predicate's type URI; referee's own types are checked against their schema.
    #[arg(long, default_value = ROUND_PREDICATE_TYPE)]
    pub predicate_type: String,
}

/// Seals the bundle and prints the Statement digest, subject count and envelope path.
pub fn run(args: SealArgs) -> anyhow::Result<ExitCode> {
    if !args.dir.is_dir() {
        anyhow::bail!("`{}` is not a directory", args.dir.display());
    }
    let keys = args
        .keys
        .iter()
        .map(|path| PrivateKey::load(path))
        .collect::<Result<Vec<_>, _>>()?;
    let signers: Vec<&PrivateKey> = keys.iter().collect();
    let bytes = std::fs::read(&args.predicate)
        .with_context(|| format!("reading predicate `{}`", args.predicate.display()))?;
    let predicate = parse_strict(&bytes, MAX_ENVELOPE_BYTES)
        .with_context(|| format!("parsing predicate `{}`", args.predicate.display()))?;
    let sealed = seal_bundle(&args.dir, &args.predicate_type, &predicate, &signers)
        .with_context(|| format!("sealing `{}`", args.dir.display()))?;
    println!("statement sha256 {}", sealed.statement_digest);
    println!("subjects {}", sealed.subjects);
    println!("envelope {}", sealed.envelope_path.display());
    Ok(ExitCode::SUCCESS)
}
