//! `referee demo`: the whole pipeline end to end on the demo of `examples/demo/` —
//! evaluator key (generated on the first run into the key directory, `--key-dir`,
//! default `~/.config/referee/keys`, never into the data directory, which is published),
//! campaign add, miner add, ingest of every demo diff, a round, verify — printing the
//! equivalent individual commands as it goes. Run again, it starts the next round with
//! the leader carried over (or resumes a round a kill interrupted). A data directory of
//! an earlier demo still holds `evaluator.key`: the demo moves it into the key directory
//! and says so. With `--prepare` it only writes the demo's baseline repository and
//! campaign file, for running the same steps by hand (README, By hand).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use intake::gates::BuiltinBuilder;
use intake::ingest::{IngestError, IngestOutcome, IngestRequest, add_campaign, add_miner, ingest};
use receipts::keys::{Keyring, PrivateKey, TrustedKey, generate_key_pair};
use receipts::layout::DataDir;
use receipts::model::{CampaignId, MinerId, Sha256Hex, Timestamp};
use referee::demo::{CAMPAIGN_ID, DemoSubmission, SUBMISSIONS, stage};
use verifier::VerifyOptions;
use verifier::verify_bundle;

mod title;

use super::keys::create_key_dir;
use super::round::{RoundArgs, print_summary, run_with_progress};
use super::verify::print_report;
use super::{DataArgs, EVALUATOR_KEY, KeyDirArgs};

/// A round that did not open because the load client missed its send-lag bound gets the
/// demo's own way out: a looser bound in a new data directory.
fn busy_machine_hint(error: anyhow::Error) -> anyhow::Error {
    let client_too_slow = error.chain().any(|cause| {
        matches!(
            cause.downcast_ref::<runner::round::RoundError>(),
            Some(runner::round::RoundError::ClientTooSlow { .. })
        )
    });
    if client_too_slow {
        error.context(
            "the demo's round did not open on this busy machine: run it when the machine is \
             quieter, or with a looser bound in a new data directory, e.g. `referee demo \
             --data demo-busy --send-lag-bound-us 100000` (the receipt records the bound)",
        )
    } else {
        error
    }
}

/// The origin line of the demo's transparency log.
const DEMO_LOG_ORIGIN: &str = "referee.example/log";
/// The demo's file beacon, in the key directory (not published): unsigned, its value
/// sha256 of [`DEMO_BEACON_TEXT`], so the demo's seeds differ by their fresh secret only.
const DEMO_BEACON_FILE: &str = "demo-beacon.json";
/// What the demo's beacon value is the sha256 of.
const DEMO_BEACON_TEXT: &[u8] = b"referee demo: a file beacon, unsigned";

/// Arguments of `referee demo`.
#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    #[command(flatten)]
    pub data: DataArgs,
    #[command(flatten)]
    pub key_dir: KeyDirArgs,
    /// Only write the demo's baseline repository (`baseline.git`) and campaign file
    /// (`campaign.toml`, pinning its commit) into `--dir`, and print the campaign file's
    /// path, ready for `referee campaign add`; no key, no campaign, no round.
    #[arg(long)]
    pub prepare: bool,
    /// With `--prepare`: the directory to write them into; default `<data>/.demo`.
    #[arg(long, requires = "prepare", value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Where to build the site from the verified round (`referee site build --out`).
    #[arg(long, value_name = "DIR", default_value = "public")]
    pub site: PathBuf,
    /// The load client's send-lag bound, µs, written into the demo campaign's
    /// `rate_search.send_lag_bound_us` for a busy machine (default: the campaign rule,
    /// max(2 ms, 1 % of the SLA) = 5 ms). A round whose client self-test misses the bound
    /// does not open. Fixed when the campaign is first frozen in `--data`: another value
    /// later needs a new data directory.
    #[arg(long, value_name = "MICROSECONDS")]
    pub send_lag_bound_us: Option<u64>,
    /// Instead of the demo's round, the title over `DAYS` (at least 3) days of a virtual
    /// clock in campaign `demo-title` (content/title.md, The demo): a challenger wins,
    /// waits its holding period and is confirmed; the holder fails its re-measurement and
    /// the title moves to its successor; the successor is revoked. Needs a data directory
    /// without that campaign's rounds.
    #[arg(long, value_name = "DAYS", conflicts_with = "prepare", value_parser = clap::value_parser!(u32).range(3..))]
    pub days: Option<u32>,
    /// Run the demo's round on a pod (content/pods.md): `slurm` rents an allocation of 2
    /// GPUs from the Slurm cluster `SLURM_CONF` names (`scripts/slurm-local start DIR`
    /// brings one up on this machine), ships the harness to `<data>.pod-staging/` and
    /// runs every pass there through `referee agent`, in campaign `demo-pod`.
    #[arg(long, value_name = "BACKEND", conflicts_with_all = ["prepare", "days"], value_parser = ["local", "slurm"])]
    pub pod: Option<String>,
    /// Run the demo's entries in parallel, wave after wave over two (placeholder) GPUs
    /// (content/noise.md, Parallel passes): the campaign gains `[parallel] gpus = 2` and `[isolation]
    /// pin = false`.
    #[arg(long, conflicts_with = "days")]
    pub parallel: bool,
}

/// The campaign of `referee demo --pod slurm`.
const POD_CAMPAIGN_ID: &str = "demo-pod";

/// Runs the demo (or, with `--prepare`, only writes its campaign's files).
pub fn run(args: DemoArgs) -> anyhow::Result<ExitCode> {
    if args.prepare {
        let dir = args.dir.unwrap_or_else(|| args.data.data.join(".demo"));
        let campaign_toml = stage(&dir, args.send_lag_bound_us).with_context(|| {
            format!(
                "writing the demo's baseline repository and campaign into `{}`",
                dir.display()
            )
        })?;
        if args.parallel {
            referee::demo::make_parallel(&campaign_toml)
                .context("making the demo campaign parallel")?;
        }
        // The demo's own campaign file is the one written here; the README's by-hand
        // walk-through copies its quicker campaign beside it instead.
        note(&format!(
            "baseline repository `{}`; add the demo campaign (rounds of minutes) with \
             `referee campaign add --data {} {}`, or copy `examples/by-hand/campaign.toml` \
             into `{}` and add that one for rounds of seconds (README, By hand)",
            dir.join("baseline.git").display(),
            args.data.data.display(),
            campaign_toml.display(),
            dir.display()
        ));
        println!("{}", campaign_toml.display());
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(days) = args.days {
        return title::run(&args, days);
    }
    let data_path = args.data.data.clone();
    let data = DataDir::new(&data_path);
    let d = data_path.display().to_string();
    let on_pod = args.pod.as_deref() == Some("slurm");
    let campaign = if on_pod { POD_CAMPAIGN_ID } else { CAMPAIGN_ID };
    let campaign_id: CampaignId = campaign.parse().context("the demo campaign id")?;
    let DemoKeys { key_dir, key_path } = demo_keys(&args, DEMO_LOG_ORIGIN)?;

    // The campaign, from the embedded demo files.
    let source = data_path.join(".demo");
    let mut campaign_toml =
        stage(&source, args.send_lag_bound_us).context("writing the demo's baseline repository")?;
    if on_pod {
        campaign_toml = pod_campaign(&campaign_toml, &data_path)?;
    }
    if args.parallel {
        referee::demo::make_parallel(&campaign_toml)
            .context("making the demo campaign parallel")?;
    }
    add_and_ingest(&args, &campaign_toml, &campaign_id, &SUBMISSIONS, &key_path)?;

    // The round, its seeds derived from a file beacon (unsigned: a demo has no network
    // to reach drand) and a fresh secret.
    let beacon_path = demo_beacon(&key_dir)?;
    step(&format!(
        "referee round --data {d} --campaign {campaign} --key {} --beacon-file {}",
        key_path.display(),
        beacon_path.display()
    ));
    let summary = run_with_progress(&round_args(
        &args,
        campaign,
        &key_path,
        beacon_path,
        super::round::KindArg::Regular,
        None,
    ))
    .map_err(busy_machine_hint)?;
    print_summary(&summary);

    // Verify what was sealed.
    step(&format!(
        "referee verify --data {d} {}",
        summary.bundle.display()
    ));
    let keyring = Keyring::load(&data.keyring_path()).context("loading the keyring")?;
    let mut report = verify_bundle(&summary.bundle, &keyring, &VerifyOptions::default());
    verifier::tlog::check_bundle_log(
        &mut report,
        &summary.bundle,
        &keyring,
        &verifier::tlog::LogOptions::default(),
    );
    // The lines `referee verify` prints (a closed stdout is not a failure, see `main`).
    print_report(&mut std::io::stdout().lock(), &report)?;
    if !report.passed() {
        return Ok(ExitCode::from(1));
    }

    // Render the public site from what verified.
    build_demo_site(&args)?;
    Ok(ExitCode::SUCCESS)
}

/// Adds the campaign of `campaign_toml` (id `campaign_id`) to the demo's data directory,
/// registers the miners of `submissions` and ingests each diff (staged beside the campaign
/// file, under `submissions/`), logging its commitment signed with `key_path`, printing
/// the equivalent commands. A second run skips what is already there.
fn add_and_ingest(
    args: &DemoArgs,
    campaign_toml: &Path,
    campaign_id: &CampaignId,
    submissions: &[DemoSubmission],
    key_path: &Path,
) -> anyhow::Result<()> {
    let data_path = &args.data.data;
    let data = DataDir::new(data_path);
    let d = data_path.display().to_string();
    let campaign_dir = data.campaign(campaign_id);
    step(&format!(
        "referee campaign add --data {d} {}",
        campaign_toml.display()
    ));
    let added = add_campaign(&data, campaign_toml).context("adding the demo campaign")?;
    note(&format!(
        "campaign `{}` {} (digest {})",
        added.campaign.id,
        if added.already_frozen {
            "already frozen"
        } else {
            "frozen"
        },
        added.digest
    ));

    // Miners and their submissions.
    for submission in submissions {
        let miner: MinerId = submission.miner.parse().context("a demo miner id")?;
        match add_miner(&campaign_dir, &miner) {
            Ok(_) => step(&format!(
                "referee miner add --data {d} --campaign {campaign_id} {miner}"
            )),
            Err(IngestError::MinerExists { .. }) => {}
            Err(e) => return Err(e).context(format!("registering miner `{miner}`")),
        }
    }
    // Each ingest logs its commitment (and a rejection) as `referee ingest` does.
    let statements = super::ingest::StatementKeys::open(
        data_path,
        &super::ingest::StatementKeyArgs {
            key: Some(key_path.to_path_buf()),
            log_key: None,
            key_dir: args.key_dir.clone(),
        },
    )?
    .context("the demo's data directory has no transparency log")?;
    let staged = campaign_toml.with_file_name("submissions");
    std::fs::create_dir_all(&staged).with_context(|| format!("creating `{}`", staged.display()))?;
    for submission in submissions {
        let diff_text = submission.diff().context("building a demo diff")?;
        let diff = diff_text.as_bytes();
        let commitment = Sha256Hex::digest(diff);
        let miner: MinerId = submission.miner.parse().context("a demo miner id")?;
        // A second demo run does not commit the same diffs again.
        if campaign_dir.submission_json(&commitment).exists()
            && campaign_dir
                .load_submission(&commitment)
                .is_ok_and(|s| committed_by(&s, &miner))
        {
            continue;
        }
        let diff_path = staged.join(submission.file);
        write_file(&diff_path, diff)?;
        step(&format!(
            "referee ingest --data {d} --campaign {campaign_id} --miner {miner} --commitment {commitment} {}",
            diff_path.display()
        ));
        let request = IngestRequest {
            diff,
            miner: &miner,
            commitment: &commitment,
        };
        let outcome = ingest(&campaign_dir, &request, &BuiltinBuilder)
            .with_context(|| format!("ingesting `{}`", submission.file))?;
        let record = outcome.submission();
        statements.log_submission(&campaign_dir, record)?;
        let verdict = match &outcome {
            IngestOutcome::New(_) => format!(
                "{} — {}",
                record.state,
                record.last_reason().unwrap_or_default()
            ),
            IngestOutcome::Duplicate(_) => format!(
                "duplicate of {} committed first by `{}`: skipped",
                record.sha256.short(),
                record.miner
            ),
        };
        note(&format!(
            "{} ({}): {verdict}",
            submission.file, submission.what
        ));
    }
    Ok(())
}

/// The demo's keys: the evaluator key in the key directory (generated on the first run),
/// trusted in the data directory's keyring, and the data directory's transparency log
/// with its own key.
struct DemoKeys {
    /// The key directory.
    key_dir: PathBuf,
    /// The evaluator's private key file.
    key_path: PathBuf,
}

/// Creates the data directory and [`DemoKeys`] (a new log named `origin`), printing the
/// equivalent commands.
fn demo_keys(args: &DemoArgs, origin: &str) -> anyhow::Result<DemoKeys> {
    let data_path = args.data.data.clone();
    let data = DataDir::new(&data_path);
    let d = data_path.display().to_string();
    // The evaluator key lives in the key directory, outside the data directory.
    std::fs::create_dir_all(&data_path)
        .with_context(|| format!("creating the data directory `{d}`"))?;
    let key_dir = args.key_dir.resolve()?;
    create_key_dir(&key_dir)?;
    refuse_key_dir_inside(&key_dir, &data_path)?;
    let kd = key_dir.display().to_string();
    let key_path = key_dir.join(format!("{EVALUATOR_KEY}.key"));
    migrate_old_key(&data_path, &key_dir, &key_path)?;
    let fresh = !key_path.exists();
    if fresh {
        step(&format!(
            "referee keygen --key-dir {kd} --keyring {d}/keyring.json"
        ));
        generate_key_pair(&key_dir.join(EVALUATOR_KEY)).context("generating the evaluator key")?;
    }
    let key = PrivateKey::load(&key_path).context("loading the evaluator key")?;
    // A key directory serves every data directory: trust the key in this one's keyring.
    let keyring_path = data.keyring_path();
    let mut keyring = if keyring_path.exists() {
        Keyring::load(&keyring_path).context("loading the keyring")?
    } else {
        Keyring::default()
    };
    if keyring.find(key.public().as_bytes()).is_none() {
        if !fresh {
            step(&format!(
                "referee keyring add --data {d} {kd}/{EVALUATOR_KEY}.pub"
            ));
        }
        keyring
            .add(TrustedKey {
                key: key.public().clone(),
                valid_from: Timestamp::now(),
                valid_until: None,
            })
            .context("trusting the evaluator key")?;
        keyring.save(&keyring_path).context("saving the keyring")?;
    }
    note(&format!(
        "evaluator key {} in `{}` ({}outside the data directory, which is published; keep it private)",
        key.keyid(),
        key_path.display(),
        if fresh { "new; " } else { "" }
    ));

    // The data directory's transparency log, with its own key in the key directory: the
    // round logs its round-opened statement before any entry runs, and its receipt.
    if !intake::tlog::LogStore::dir_of(&data_path)
        .join("config.toml")
        .exists()
    {
        step(&format!(
            "referee log init --data {d} --key-dir {kd} --origin {origin}"
        ));
        let created = super::log::init_log(&data_path, &key_dir, &keyring_path, origin)
            .context("creating the demo's transparency log")?;
        note(&format!(
            "log `{}` signed by its own key `{}`; verifier key {}",
            intake::tlog::LogStore::dir_of(&data_path).display(),
            created.key_path.display(),
            created.vkey
        ));
    }
    Ok(DemoKeys { key_dir, key_path })
}

/// `referee site build` of the demo's data directory into `--site`, printing the command
/// and what it built.
fn build_demo_site(args: &DemoArgs) -> anyhow::Result<()> {
    let data = DataDir::new(&args.data.data);
    let d = args.data.data.display().to_string();
    step(&format!(
        "referee site build --data {d} --out {}",
        args.site.display()
    ));
    let options = ::site::BuildOptions {
        data: data.root().to_owned(),
        keyring: data.keyring_path(),
        out: args.site.clone(),
        base_url: String::new(),
        clean: false,
        at: None,
        allow_unlogged: false,
    };
    let built = ::site::build_site(&options)
        .with_context(|| format!("building the site into `{}`", args.site.display()))?;
    print!("{}", super::site::render_summary(&built, &args.site));
    note(&format!(
        "preview it with `referee site serve --dir {}` (http://127.0.0.1:8000/)",
        args.site.display()
    ));
    Ok(())
}

/// The demo campaign `campaign_toml` as campaign `demo-pod` on a Slurm pod of 2 GPUs,
/// staged into `<data>.pod-staging/` (absolute: the pod sees the same path), written
/// beside it as `campaign-pod.toml`; its path.
fn pod_campaign(campaign_toml: &Path, data: &Path) -> anyhow::Result<PathBuf> {
    let text = std::fs::read_to_string(campaign_toml)
        .with_context(|| format!("reading {}", campaign_toml.display()))?;
    let data = std::path::absolute(data).context("the data directory's absolute path")?;
    let staging = format!("{}.pod-staging", data.display());
    let id_line = format!("id = \"{CAMPAIGN_ID}\"");
    anyhow::ensure!(
        text.contains(&id_line),
        "the demo campaign has no `{id_line}` line"
    );
    let pod = text.replacen(&id_line, &format!("id = \"{POD_CAMPAIGN_ID}\""), 1)
        + &format!(
            "\n[pod]\nbackend = \"slurm\"\ngpus = 2\ntime_limit_min = 60\nstaging_dir = \"{staging}\"\n"
        );
    let path = campaign_toml.with_file_name("campaign-pod.toml");
    write_file(&path, pod.as_bytes())?;
    Ok(path)
}

/// What `referee round` gets from the demo: the campaign `campaign`, signed with
/// `key_path`, seeds from the file beacon `beacon_path`, a round of `kind`, on a virtual
/// clock from `virtual_clock` when given.
fn round_args(
    args: &DemoArgs,
    campaign: &str,
    key_path: &Path,
    beacon_path: PathBuf,
    kind: super::round::KindArg,
    virtual_clock: Option<Timestamp>,
) -> RoundArgs {
    RoundArgs {
        data: args.data.clone(),
        campaign: campaign.to_owned(),
        key: Some(key_path.to_path_buf()),
        key_dir: args.key_dir.clone(),
        seeds: None,
        beacon_file: Some(beacon_path),
        beacon_drand: None,
        beacon_ca_file: None,
        log_key: None,
        require_witness: false,
        witness_timeout: 0,
        engine_uid: engines::sandbox::DEFAULT_ENGINE_UID,
        kind,
        sealed_dir: None,
        virtual_clock,
    }
}

/// Writes the demo's file beacon into the key directory and returns its path.
fn demo_beacon(key_dir: &Path) -> anyhow::Result<PathBuf> {
    let beacon_path = key_dir.join(DEMO_BEACON_FILE);
    let beacon = format!(
        "{{\"round\":1,\"value\":\"{}\"}}\n",
        Sha256Hex::digest(DEMO_BEACON_TEXT)
    );
    write_file(&beacon_path, beacon.as_bytes())?;
    Ok(beacon_path)
}

/// Refuses a key directory inside the data directory (which is published).
fn refuse_key_dir_inside(key_dir: &Path, data: &Path) -> anyhow::Result<()> {
    let canonical =
        |p: &Path| std::fs::canonicalize(p).with_context(|| format!("resolving `{}`", p.display()));
    if canonical(key_dir)?.starts_with(canonical(data)?) {
        anyhow::bail!(
            "the key directory `{}` is inside the data directory `{}`, which is published: pass a --key-dir outside it",
            key_dir.display(),
            data.display()
        );
    }
    Ok(())
}

/// An earlier demo generated `evaluator.key` (and `.pub`) into the data directory: move
/// them into the key directory, saying so. When the key directory already holds another
/// `evaluator.key`, the old one goes next to it under a name of its own (the demo signs
/// with `key_path` from now on); the same key twice is removed from the data directory.
fn migrate_old_key(data: &Path, key_dir: &Path, key_path: &Path) -> anyhow::Result<()> {
    let old = data.join(format!("{EVALUATOR_KEY}.key"));
    if old.symlink_metadata().is_err() {
        return Ok(());
    }
    let old_pub = data.join(format!("{EVALUATOR_KEY}.pub"));
    let same = match (std::fs::read(&old), std::fs::read(key_path)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same {
        std::fs::remove_file(&old).with_context(|| format!("removing `{}`", old.display()))?;
        if old_pub.exists() {
            std::fs::remove_file(&old_pub)
                .with_context(|| format!("removing `{}`", old_pub.display()))?;
        }
        note(&format!(
            "removed `{}`, a copy of `{}`, from the data directory (it is published)",
            old.display(),
            key_path.display()
        ));
        return Ok(());
    }
    let (dest, dest_pub) = if key_path.symlink_metadata().is_err() {
        (
            key_path.to_path_buf(),
            key_dir.join(format!("{EVALUATOR_KEY}.pub")),
        )
    } else {
        let tag = PrivateKey::load(&old)
            .map(|k| k.keyid()[..12].to_owned())
            .unwrap_or_else(|_| "old".to_owned());
        let mut n = 1;
        loop {
            let name = if n == 1 {
                format!("{EVALUATOR_KEY}-{tag}")
            } else {
                format!("{EVALUATOR_KEY}-{tag}-{n}")
            };
            let key = key_dir.join(format!("{name}.key"));
            let public = key_dir.join(format!("{name}.pub"));
            if key.symlink_metadata().is_err() && public.symlink_metadata().is_err() {
                break (key, public);
            }
            n += 1;
        }
    };
    step(&format!("mv {} {}", old.display(), dest.display()));
    move_file(&old, &dest, 0o600)?;
    if old_pub.exists() && dest_pub.symlink_metadata().is_err() {
        move_file(&old_pub, &dest_pub, 0o644)?;
    }
    note(&format!(
        "moved the evaluator key of an earlier demo from `{}` (inside the data directory, which is published) to `{}`",
        old.display(),
        dest.display()
    ));
    Ok(())
}

/// Moves `from` to `to` (never over an existing file): a rename, or across file systems a
/// copy written with `mode` and the original removed.
fn move_file(from: &Path, to: &Path, mode: u32) -> anyhow::Result<()> {
    let context = || format!("moving `{}` to `{}`", from.display(), to.display());
    if to.symlink_metadata().is_ok() {
        anyhow::bail!("{}: the destination exists", context());
    }
    if std::fs::rename(from, to).is_ok() {
        return Ok(());
    }
    let mut bytes = std::fs::read(from).with_context(context)?;
    let written = receipts::fsutil::write_atomic(to, &bytes, mode);
    bytes.fill(0);
    written.with_context(context)?;
    std::fs::remove_file(from).with_context(context)?;
    Ok(())
}

fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    receipts::fsutil::write_atomic(path, bytes, 0o644)
        .with_context(|| format!("writing `{}`", path.display()))
}

/// The equivalent individual command, on stderr.
fn step(command: &str) {
    eprintln!("$ {command}");
}

/// What it did, on stderr.
fn note(text: &str) {
    eprintln!("  {text}");
}

/// Whether `miner` committed this submission, first or as a duplicate.
fn committed_by(submission: &receipts::model::Submission, miner: &MinerId) -> bool {
    submission.miner == *miner
        || submission.events.iter().any(|e| {
            matches!(&e.kind, receipts::model::EventKind::Duplicate { miner: m, .. } if m == miner)
        })
}
