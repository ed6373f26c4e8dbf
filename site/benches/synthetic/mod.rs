//! The synthetic archive the site benchmarks build: N sealed rounds of E entries in one
//! campaign, made from one real round bundle (the template, e.g. the demo's round 1) and
//! signed with a throwaway key by the same Statement/DSSE code the runner seals with
//! (`receipts::bundle::sign_statement`). Every bundle passes the offline verifier, so the
//! site renders all of them as verified rounds.
//!
//! How a round is made from the template: entry 0 is the template's baseline (its runs,
//! probe logs and A/A control as they are); each of the E − 1 challengers is one of the
//! template's challengers drawn per round (so scores, statuses and disqualifications vary
//! from round to round), under a miner drawn from a pool, with a patch of its own (the
//! template's diff under a one-line header naming round and seat, so every submission has
//! its own sha256, its own `/s/<patch>/` page and submission record). Everything that
//! depends on the seating is recomputed with `receipts::rules`: the pass order
//! (`order_of_pass`), the timed-run sample's draw order (`sample::select_requests`, the
//! only file content that depends on an entry's index), and the outcome
//! (`verifier::recomputed_outcome`). The run timeline is the template's steps re-laid in
//! the new pass order with their recorded durations; round n starts `ROUND_PERIOD_S`
//! after round n − 1; `previousReceipt` chains the rounds.
//!
//! What stays the template's: the seeds and the request-sequence digest (every round
//! replays one workload), the measured numbers of each drawn challenger, the hardware.
//! No challenger of the demo's round beats the baseline by the margin, so the synthetic
//! campaign never changes leader (no incumbent seat).
//!
//! Files are small: the template's JSON files are rewritten compactly, and a file whose
//! bytes repeat (probe logs, logs, correctness files) is stored once in a content-addressed
//! store beside the data directory (`<data>.objects/`) and hard-linked into each bundle,
//! so 1,000 rounds take about 170 MiB, mostly the receipts.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use receipts::bundle::{ENVELOPE_FILE, MAX_ENVELOPE_BYTES, read_statement_digest, sign_statement};
use receipts::dsse::Envelope;
use receipts::keys::{Keyring, PrivateKey};
use receipts::layout::{CampaignDir, DataDir, MINERS_INPUT, patch_input};
use receipts::model::{CampaignId, FrozenCampaign, RoundRecord, Seed32, Sha256Hex, Timestamp};
use receipts::rules::passes::order_of_pass;
use receipts::rules::sample::select_requests;
use receipts::statement::{DigestSet, Statement, Subject};
use serde_json::{Value, json};

/// Errors of the generator: a message naming what failed.
pub type Error = Box<dyn std::error::Error + Send + Sync>;
/// The generator's result.
pub type Result<T> = std::result::Result<T, Error>;

/// Seconds between the starts of two consecutive rounds.
pub const ROUND_PERIOD_S: i64 = 3600;

/// The round-opened file of a bundle.
const OPENED_FILE: &str = "round-opened.dsse.json";

/// What to generate.
#[derive(Clone, Debug)]
pub struct Config {
    /// Entries per round, the baseline included (≥ 2).
    pub entries: u32,
    /// Miners in the pool the challengers are drawn from (≥ entries − 1).
    pub miners: u32,
    /// Seed of the draws.
    pub seed: u64,
    /// Also write, per round, one submission rejected at intake (never seated), like the
    /// demo's hostile diff.
    pub rejected_submissions: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            entries: 8,
            miners: 100,
            seed: 18,
            rejected_submissions: true,
        }
    }
}

/// The throwaway evaluator key every synthetic bundle is signed with.
pub fn key() -> PrivateKey {
    PrivateKey::from_seed(&[0x18; 32])
}

/// The keyring trusting [`key`] from the epoch on.
pub fn keyring() -> Keyring {
    testkit::keyring(&[&key()])
}

/// A template challenger: its entry and what belongs to it.
struct Challenger {
    entry: Value,
    slug: String,
    miner: String,
    patch: Vec<u8>,
    /// Its submission record in the template's campaign, when there is one.
    record: Option<Value>,
    /// Its timed-run sample (`correctness.loadSampleFile`), parsed.
    load_sample: Option<(String, Value)>,
}

/// Who a template step belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
enum StepOwner {
    /// Setup before the first run.
    Head,
    /// After the last run (scorer, teardown).
    Tail,
    /// A run: the template entry (0 = baseline), pass from 0, A/A control.
    Run(u32, u32, bool),
}

/// A template step: its JSON, owner, the rest of its log name after `NN-`, the gap
/// since the previous step's end and its own duration (µs).
struct TemplateStep {
    value: Value,
    owner: StepOwner,
    log_rest: Option<String>,
    log_sha: Option<Sha256Hex>,
    gap_us: i128,
    duration_us: i128,
}

/// The real round the synthetic ones are made from.
pub struct Template {
    campaign: CampaignId,
    campaign_json: Vec<u8>,
    campaign_toml: Option<Vec<u8>>,
    frozen: FrozenCampaign,
    record: Value,
    opened: Value,
    opened_type: String,
    receipt_type: String,
    sample_seed: Seed32,
    pass_seed: Seed32,
    baseline: Value,
    challengers: Vec<Challenger>,
    /// Files that belong to no challenger and no step, by name (compacted).
    common: BTreeMap<String, Vec<u8>>,
    /// Files of template challenger `i` (name → bytes), load sample and patch aside.
    challenger_files: Vec<BTreeMap<String, Vec<u8>>>,
    /// Step logs by name (compacted).
    step_logs: BTreeMap<String, Vec<u8>>,
    steps: Vec<TemplateStep>,
    /// The round's start, µs since the epoch, and openedAt's offset from it.
    started_us: i128,
    opened_offset_us: i128,
    /// A submission record rejected at intake, with its diff.
    rejected: Option<(Value, Vec<u8>)>,
    registered_at: String,
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()).into())
}

fn parse_json(path: &Path) -> Result<Value> {
    serde_json::from_slice(&read(path)?).map_err(|e| format!("{}: {e}", path.display()).into())
}

/// The Statement of the envelope at `path`.
fn statement_of(path: &Path) -> Result<Value> {
    let envelope = Envelope::from_json(&read(path)?, MAX_ENVELOPE_BYTES)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(serde_json::from_slice(&envelope.payload)?)
}

fn micros(text: &str) -> Result<i128> {
    let t: Timestamp = text.parse()?;
    Ok(t.datetime().unix_timestamp_nanos() / 1000)
}

fn timestamp(us: i128) -> Result<String> {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(us * 1000)?;
    Ok(Timestamp::from_datetime(t).to_string())
}

fn field<'a>(value: &'a Value, key: &str) -> Result<&'a Value> {
    value
        .get(key)
        .ok_or_else(|| format!("template: no `{key}`").into())
}

fn text<'a>(value: &'a Value, key: &str) -> Result<&'a str> {
    field(value, key)?
        .as_str()
        .ok_or_else(|| format!("template: `{key}` is not a string").into())
}

/// Every file under `dir`, by `/`-separated relative name.
fn walk(dir: &Path, prefix: &str, out: &mut BTreeMap<String, PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("listing {}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        if entry.file_type()?.is_dir() {
            walk(&entry.path(), &rel, out)?;
        } else {
            out.insert(rel, entry.path());
        }
    }
    Ok(())
}

/// JSON files rewritten compactly (a verifier reads them the same); others as they are.
fn compact(name: &str, bytes: Vec<u8>) -> Vec<u8> {
    if !name.ends_with(".json") || name.starts_with("inputs/") {
        return bytes;
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(value) => serde_json::to_vec(&value).unwrap_or(bytes),
        Err(_) => bytes,
    }
}

/// `value` with every string's `from` replaced by `to`, recursively.
fn replace_strings(value: &mut Value, from: &str, to: &str) {
    match value {
        Value::String(s) if s.contains(from) => *s = s.replace(from, to),
        Value::Array(items) => items.iter_mut().for_each(|v| replace_strings(v, from, to)),
        Value::Object(map) => map.values_mut().for_each(|v| replace_strings(v, from, to)),
        _ => {}
    }
}

/// The step's owner from the rest of its log name (`<who>-pass-<p>-<action>.log`).
fn step_owner(rest: &str, slugs: &[String]) -> Option<StepOwner> {
    let pass_of = |tail: &str| -> Option<u32> {
        let digits: String = tail.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<u32>().ok()?.checked_sub(1)
    };
    if let Some(tail) = rest.strip_prefix("baseline-a-a-control-pass-") {
        return Some(StepOwner::Run(0, pass_of(tail)?, true));
    }
    if let Some(tail) = rest.strip_prefix("baseline-pass-") {
        return Some(StepOwner::Run(0, pass_of(tail)?, false));
    }
    for (i, slug) in slugs.iter().enumerate() {
        if let Some(tail) = rest.strip_prefix(&format!("{slug}-pass-")) {
            return Some(StepOwner::Run(
                u32::try_from(i + 1).ok()?,
                pass_of(tail)?,
                false,
            ));
        }
    }
    None
}

impl Template {
    /// Reads the template round `round_dir` (`<data>/<campaign>/rounds/<n>`, a v3 round
    /// whose entry 0 is the baseline and whose other entries are challengers) and its
    /// campaign directory two levels up.
    ///
    /// Errors: a file missing or not of the expected shape.
    pub fn load(round_dir: &Path) -> Result<Self> {
        let campaign_dir = round_dir
            .parent()
            .and_then(Path::parent)
            .ok_or("template: a round directory is <data>/<campaign>/rounds/<n>")?;
        let campaign_json = read(&campaign_dir.join("campaign.json"))?;
        let campaign_toml = std::fs::read(campaign_dir.join("campaign.toml")).ok();
        let frozen = FrozenCampaign::from_json("campaign.json", &campaign_json)?;
        let receipt = statement_of(&round_dir.join(ENVELOPE_FILE))?;
        let opened_statement = statement_of(&round_dir.join(OPENED_FILE))?;
        let record = field(&receipt, "predicate")?.clone();
        let typed: RoundRecord = serde_json::from_value(record.clone())?;
        let sample_seed = typed
            .seeds
            .sample_seed
            .as_ref()
            .ok_or("template: no sampleSeed (not a v3 round)")?
            .seed;
        let pass_seed = typed
            .seeds
            .pass_seed
            .as_ref()
            .ok_or("template: no passSeed (not a v3 round)")?
            .seed;
        let entries = field(&record, "entries")?
            .as_array()
            .ok_or("template: entries")?
            .clone();
        let baseline = entries.first().ok_or("template: no entries")?.clone();
        if text(&baseline, "role")? != "baseline" {
            return Err("template: entry 0 is not the baseline".into());
        }

        let mut files = BTreeMap::new();
        walk(round_dir, "", &mut files)?;
        files.remove(ENVELOPE_FILE);
        files.remove(OPENED_FILE);

        let mut challengers = Vec::new();
        for (i, entry) in entries.iter().enumerate().skip(1) {
            if text(entry, "role")? != "challenger" {
                return Err(format!("template: entry {i} is not a challenger").into());
            }
            let miner = text(entry, "miner")?.to_owned();
            let patch = text(entry, "patch")?.to_owned();
            let slug = format!("candidate-{i}-{miner}");
            let record = std::fs::read(
                campaign_dir
                    .join("submissions")
                    .join(format!("{patch}.json")),
            )
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
            let patch_name = format!("inputs/patches/{patch}.diff");
            let patch_bytes = read(&round_dir.join(&patch_name))?;
            files.remove(&patch_name);
            let load_sample = match entry
                .pointer("/correctness/loadSampleFile")
                .and_then(Value::as_str)
            {
                Some(name) => {
                    let value = parse_json(&round_dir.join(name))?;
                    files.remove(name);
                    Some((name.to_owned(), value))
                }
                None => None,
            };
            challengers.push(Challenger {
                entry: entry.clone(),
                slug,
                miner,
                patch: patch_bytes,
                record,
                load_sample,
            });
        }
        let slugs: Vec<String> = challengers.iter().map(|c| c.slug.clone()).collect();

        let mut common = BTreeMap::new();
        let mut challenger_files = vec![BTreeMap::new(); challengers.len()];
        let mut step_logs = BTreeMap::new();
        for (name, path) in files {
            let bytes = compact(&name, read(&path)?);
            if name.starts_with("logs/steps/") {
                step_logs.insert(name, bytes);
            } else if let Some(i) = slugs.iter().position(|s| name.contains(s.as_str())) {
                challenger_files[i].insert(name, bytes);
            } else {
                common.insert(name, bytes);
            }
        }

        let started_us = micros(text(&record, "startedAt")?)?;
        let opened_offset_us =
            micros(text(field(&opened_statement, "predicate")?, "openedAt")?)? - started_us;
        let mut steps = Vec::new();
        let mut previous_end = started_us;
        let mut seen_run = false;
        for step in field(&record, "steps")?
            .as_array()
            .ok_or("template: steps")?
        {
            let start = micros(text(step, "startedAt")?)?;
            let end = micros(text(step, "endedAt")?)?;
            let log = step.get("log").and_then(Value::as_str);
            let log_rest = log.and_then(|l| {
                let file = l.strip_prefix("logs/steps/")?;
                let (_, rest) = file.split_once('-')?;
                Some(rest.to_owned())
            });
            let owner = log_rest.as_deref().and_then(|r| step_owner(r, &slugs));
            let owner = match owner {
                Some(o) => {
                    seen_run = true;
                    o
                }
                None if seen_run => StepOwner::Tail,
                None => StepOwner::Head,
            };
            let log_sha = log
                .and_then(|l| step_logs.get(l))
                .map(|b: &Vec<u8>| Sha256Hex::digest(b));
            steps.push(TemplateStep {
                value: step.clone(),
                owner,
                log_rest,
                log_sha,
                gap_us: (start - previous_end).max(0),
                duration_us: (end - start).max(0),
            });
            previous_end = end;
        }

        let rejected = std::fs::read_dir(campaign_dir.join("submissions"))
            .ok()
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
            .filter_map(|e| {
                let value: Value = serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok()?;
                (value.get("state")? == "rejected").then_some((e.path(), value))
            })
            .min_by(|a, b| a.0.cmp(&b.0))
            .and_then(|(path, value)| {
                Some((value, std::fs::read(path.with_extension("diff")).ok()?))
            });
        let miners = parse_json(&campaign_dir.join("miners.json"))?;
        let registered_at = miners
            .pointer("/miners/0/registeredAt")
            .and_then(Value::as_str)
            .ok_or("template: miners.json has no miner")?
            .to_owned();

        Ok(Self {
            campaign: typed.campaign.id.clone(),
            campaign_json,
            campaign_toml,
            frozen,
            opened_type: text(&opened_statement, "predicateType")?.to_owned(),
            receipt_type: text(&receipt, "predicateType")?.to_owned(),
            opened: field(&opened_statement, "predicate")?.clone(),
            record,
            sample_seed,
            pass_seed,
            baseline,
            challengers,
            common,
            challenger_files,
            step_logs,
            steps,
            started_us,
            opened_offset_us,
            rejected,
            registered_at,
        })
    }
}

/// The content-addressed store the bundles' files are hard-linked from.
pub struct Store {
    dir: PathBuf,
    known: HashSet<Sha256Hex>,
    /// Copy instead of hard-linking: a new link changes the ctime of every file sharing
    /// its inode, so an appended round linked from the store would change the metadata
    /// stamp of every earlier bundle (`site::verdicts::bundle_stamp`), which no round
    /// added to a real data directory does.
    copy: bool,
}

impl Store {
    /// The store of the data directory `data`: `<data>.objects/` (created).
    ///
    /// Errors: it cannot be created.
    pub fn open(data: &Path) -> Result<Self> {
        let mut name = data.as_os_str().to_owned();
        name.push(".objects");
        let dir = PathBuf::from(name);
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        Ok(Self {
            dir,
            known: HashSet::new(),
            copy: false,
        })
    }

    /// Stores `bytes` (once) and returns their digest.
    fn put(&mut self, bytes: &[u8]) -> Result<Sha256Hex> {
        let sha = Sha256Hex::digest(bytes);
        self.put_as(&sha, bytes)?;
        Ok(sha)
    }

    fn put_as(&mut self, sha: &Sha256Hex, bytes: &[u8]) -> Result<()> {
        if !self.known.contains(sha) {
            let path = self.dir.join(sha.as_str());
            if !path.exists() {
                std::fs::write(&path, bytes)
                    .map_err(|e| format!("writing {}: {e}", path.display()))?;
            }
            self.known.insert(*sha);
        }
        Ok(())
    }

    /// Hard-links the stored `sha` to `to` (copies it when [`Store::copy`] is set).
    fn link(&self, sha: &Sha256Hex, to: &Path) -> Result<()> {
        let from = self.dir.join(sha.as_str());
        let done = if self.copy {
            std::fs::copy(&from, to).map(|_| ())
        } else {
            std::fs::hard_link(&from, to)
        };
        done.map_err(|e| format!("linking {} to {}: {e}", from.display(), to.display()).into())
    }
}

/// splitmix64: the generator's only randomness, seeded per round.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// The pool's miner ids.
fn miner_id(i: u32) -> String {
    format!("miner-{i:04}")
}

/// `miners.json` of the pool (every miner registered when the template's first was).
fn miners_json(template: &Template, config: &Config) -> Result<Vec<u8>> {
    let miners: Vec<Value> = (1..=config.miners)
        .map(|i| json!({"id": miner_id(i), "registeredAt": template.registered_at}))
        .collect();
    Ok(serde_json::to_vec_pretty(&json!({ "miners": miners }))?)
}

/// `Candidate 1 of 5 — miner-fast e5595a3…88ea1`, as the runner names a seat's steps.
fn seat_group(k: u32, of: u32, miner: &str, patch: &Sha256Hex) -> String {
    let p = patch.as_str();
    format!(
        "Candidate {k} of {of} — {miner} {}…{}",
        &p[..7],
        &p[p.len() - 5..]
    )
}

/// A bundle being assembled: its files (name → digest) and where they go.
struct Bundle<'a> {
    dir: PathBuf,
    store: &'a mut Store,
    files: BTreeMap<String, Sha256Hex>,
}

impl Bundle<'_> {
    fn add(&mut self, name: &str, bytes: &[u8]) -> Result<Sha256Hex> {
        let sha = self.store.put(bytes)?;
        self.add_stored(name, &sha)?;
        Ok(sha)
    }

    fn add_stored(&mut self, name: &str, sha: &Sha256Hex) -> Result<()> {
        let to = self.dir.join(name);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        self.store.link(sha, &to)?;
        self.files.insert(name.to_owned(), *sha);
        Ok(())
    }
}

/// Signs `predicate` as a Statement over `subjects` and writes the envelope to `path`;
/// returns the Statement's sha256 (the next round's `previousReceipt`) and the file's.
fn sign_to(
    path: &Path,
    subjects: &BTreeMap<String, Sha256Hex>,
    predicate_type: &str,
    predicate: Value,
) -> Result<(Sha256Hex, Sha256Hex)> {
    let subject = subjects
        .iter()
        .map(|(name, sha)| Subject {
            name: name.clone(),
            digest: DigestSet { sha256: *sha },
        })
        .collect();
    let statement = Statement::new(subject, predicate_type, predicate);
    let envelope = sign_statement(&statement, &[&key()])?;
    let bytes = envelope.to_file_bytes()?;
    std::fs::write(path, &bytes).map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok((
        Sha256Hex::digest(&envelope.payload),
        Sha256Hex::digest(&bytes),
    ))
}

/// A template challenger's timed-run sample re-seated at entry `k`: every checked run's
/// `completed` list is its checked items (so the seed draws all of them) and its
/// requests are put in the order the seed draws them for `k`.
fn reseat_sample(template: &Template, sample: &Value, k: u32) -> Result<Value> {
    let mut sample = sample.clone();
    let size = sample
        .get("sampleSize")
        .and_then(Value::as_u64)
        .ok_or("sample: sampleSize")?;
    let size = u32::try_from(size)?;
    sample["entry"] = json!(k);
    for run in sample["runs"].as_array_mut().ok_or("sample: runs")? {
        let number = u32::try_from(
            run.get("run")
                .and_then(Value::as_u64)
                .ok_or("sample: run")?,
        )?;
        if run.pointer("/check/kind").and_then(Value::as_str) != Some("checked") {
            continue;
        }
        let requests = run
            .pointer_mut("/check/requests")
            .and_then(Value::as_array_mut)
            .ok_or("sample: requests")?;
        let mut by_item = BTreeMap::new();
        for r in requests.drain(..) {
            let item = u32::try_from(
                r.get("itemIndex")
                    .and_then(Value::as_u64)
                    .ok_or("sample: itemIndex")?,
            )?;
            by_item.insert(item, r);
        }
        let completed: Vec<u32> = by_item.keys().copied().collect();
        let order = select_requests(&template.sample_seed, k, number, &completed, size);
        *requests = order.iter().filter_map(|i| by_item.remove(i)).collect();
        run["completed"] = json!(completed);
    }
    Ok(sample)
}

/// A seat of a synthetic round: entry index, template challenger, miner, patch bytes,
/// entry slug.
type Seat = (u32, usize, String, Vec<u8>, String);

/// Re-seated samples, by (template challenger, entry index).
type SampleCache = HashMap<(usize, u32), Sha256Hex>;

/// What [`Generator::round`] needs across rounds.
pub struct Generator<'a> {
    template: &'a Template,
    config: Config,
    data: DataDir,
    store: Store,
    miners_sha: Sha256Hex,
    samples: SampleCache,
    /// Digests of the template's common, challenger and step-log files, stored.
    stored: HashMap<String, Sha256Hex>,
}

impl<'a> Generator<'a> {
    /// A generator writing into the data directory `data`: its campaign directory,
    /// `campaign.json`, `miners.json` (the pool of `config.miners`: append with the
    /// options the archive was generated with) and `keyring.json` are (re)written.
    ///
    /// Errors: a file cannot be written.
    pub fn new(template: &'a Template, data: &Path, config: Config) -> Result<Self> {
        if config.entries < 2 || config.miners + 1 < config.entries {
            return Err("need entries ≥ 2 and miners ≥ entries − 1".into());
        }
        let mut store = Store::open(data)?;
        let data = DataDir::new(data);
        let campaign = data.campaign(&template.campaign);
        std::fs::create_dir_all(campaign.rounds_dir())?;
        std::fs::create_dir_all(campaign.submissions_dir())?;
        std::fs::write(campaign.campaign_json(), &template.campaign_json)?;
        if let Some(toml) = &template.campaign_toml {
            std::fs::write(campaign.campaign_toml(), toml)?;
        }
        let miners = miners_json(template, &config)?;
        std::fs::write(campaign.miners_json(), &miners)?;
        let miners_sha = store.put(&miners)?;
        keyring().save(&data.keyring_path())?;
        let mut stored = HashMap::new();
        let all = template
            .common
            .iter()
            .chain(template.challenger_files.iter().flatten())
            .chain(template.step_logs.iter());
        for (name, bytes) in all {
            stored.insert(name.clone(), store.put(bytes)?);
        }
        Ok(Self {
            template,
            config,
            data,
            store,
            miners_sha,
            samples: HashMap::new(),
            stored,
        })
    }

    fn campaign_dir(&self) -> CampaignDir {
        self.data.campaign(&self.template.campaign)
    }

    /// The rounds already in the archive, ascending.
    ///
    /// Errors: the rounds directory cannot be listed.
    pub fn rounds(&self) -> Result<Vec<u64>> {
        Ok(self.campaign_dir().round_numbers()?)
    }

    /// Writes round `n + 1` after the archive's last round `n` (round 1 into an empty
    /// archive) and returns its number.
    ///
    /// Errors: as [`Generator::round`].
    pub fn append(&mut self) -> Result<u64> {
        let last = self.rounds()?.last().copied();
        let previous = match last {
            Some(n) => Some(read_statement_digest(
                &self.campaign_dir().round_dir(n).join(ENVELOPE_FILE),
            )?),
            None => None,
        };
        let n = last.map_or(1, |n| n + 1);
        // Copied, so the earlier bundles' stamps stay as they were ([`Store::copy`]).
        self.store.copy = true;
        let written = self.round(n, previous.as_ref());
        self.store.copy = false;
        written?;
        Ok(n)
    }

    /// Writes rounds `1..=count` and returns the last Statement digest.
    ///
    /// Errors: as [`Generator::round`].
    pub fn rounds_from_scratch(
        &mut self,
        count: u64,
        mut progress: impl FnMut(u64),
    ) -> Result<Option<Sha256Hex>> {
        let mut previous = None;
        for n in 1..=count {
            previous = Some(self.round(n, previous.as_ref())?);
            progress(n);
        }
        Ok(previous)
    }

    /// Writes and signs round `n` whose previous receipt is `previous`, and the
    /// submission records of its challengers; returns its Statement's sha256.
    ///
    /// Errors: a file cannot be written, the template's shape is unexpected, signing
    /// fails.
    pub fn round(&mut self, n: u64, previous: Option<&Sha256Hex>) -> Result<Sha256Hex> {
        let t = self.template;
        let mut rng = Rng(self.config.seed ^ n.wrapping_mul(0xa076_1d64_78bd_642f));
        let seats = self.config.entries - 1;
        let offset_us = i128::from(n - 1) * i128::from(ROUND_PERIOD_S) * 1_000_000;
        let round_start = t.started_us + offset_us;

        // The seats: a template challenger and a distinct miner each.
        let mut pool: Vec<u32> = (1..=self.config.miners).collect();
        let mut seated = Vec::new();
        for k in 1..=seats {
            let c = usize::try_from(rng.below(t.challengers.len() as u64))?;
            let m = usize::try_from(rng.below(pool.len() as u64))?;
            let miner = miner_id(pool.swap_remove(m));
            let header = format!("Synthetic submission for round {n}, seat {k}, by {miner}.\n\n");
            let mut patch = header.into_bytes();
            patch.extend_from_slice(&t.challengers[c].patch);
            let slug = format!("candidate-{k}-{miner}");
            seated.push((k, c, miner, patch, slug));
        }

        let dir = self.campaign_dir().round_dir(n);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        std::fs::create_dir_all(&dir)?;
        let round_tag = format!("/round-{n}/");
        let mut bundle = Bundle {
            dir: dir.clone(),
            store: &mut self.store,
            files: BTreeMap::new(),
        };
        for name in t.common.keys() {
            let sha = if name == MINERS_INPUT {
                self.miners_sha
            } else {
                self.stored[name]
            };
            bundle.add_stored(name, &sha)?;
        }

        let mut entries = vec![t.baseline.clone()];
        let mut patches = Vec::new();
        for (k, c, miner, patch, slug) in &seated {
            let template = &t.challengers[*c];
            for name in t.challenger_files[*c].keys() {
                bundle.add_stored(&name.replace(&template.slug, slug), &self.stored[name])?;
            }
            let patch_sha = Sha256Hex::digest(patch);
            bundle.add(&patch_input(&patch_sha), patch)?;
            if let Some((name, sample)) = &template.load_sample {
                let sha = match self.samples.get(&(*c, *k)) {
                    Some(sha) => *sha,
                    None => {
                        let bytes = serde_json::to_vec(&reseat_sample(t, sample, *k)?)?;
                        let sha = bundle.store.put(&bytes)?;
                        self.samples.insert((*c, *k), sha);
                        sha
                    }
                };
                bundle.add_stored(&name.replace(&template.slug, slug), &sha)?;
            }
            let mut entry = template.entry.clone();
            replace_strings(&mut entry, &template.slug, slug);
            entry["index"] = json!(k);
            entry["miner"] = json!(miner);
            entry["patch"] = json!(patch_sha.as_str());
            entries.push(entry);
            patches.push(patch_sha);
        }
        for entry in &mut entries {
            replace_strings(entry, "/round-1/", &round_tag);
        }

        // Passes in the order the pass seed draws for this seating.
        let runs = t.frozen.campaign.runs;
        let template_passes = field(&t.record, "passes")?
            .as_array()
            .ok_or("template: passes")?;
        let mut passes = Vec::new();
        let mut orders = Vec::new();
        for p in 0..runs {
            let order = order_of_pass(
                t.frozen.campaign.effective_pass_order(),
                &t.pass_seed,
                p,
                self.config.entries,
            );
            let void = template_passes
                .get(usize::try_from(p)?)
                .and_then(|v| v.get("void"))
                .cloned()
                .unwrap_or(Value::Bool(false));
            passes.push(json!({"index": p, "order": order, "void": void}));
            orders.push(order);
        }

        // The timeline: the template's steps re-laid in that order.
        let template_of = |entry: u32| -> u32 {
            if entry == 0 {
                0
            } else {
                u32::try_from(seated[usize::try_from(entry - 1).unwrap_or(0)].1 + 1).unwrap_or(0)
            }
        };
        let mut laid: Vec<(&TemplateStep, Option<usize>)> = Vec::new();
        laid.extend(
            t.steps
                .iter()
                .filter(|s| s.owner == StepOwner::Head)
                .map(|s| (s, None)),
        );
        for (p, order) in orders.iter().enumerate() {
            for slot in order {
                let owner =
                    StepOwner::Run(template_of(slot.entry), u32::try_from(p)?, slot.control);
                for s in t.steps.iter().filter(|s| s.owner == owner) {
                    laid.push((s, Some(usize::try_from(slot.entry)?)));
                }
            }
        }
        laid.extend(
            t.steps
                .iter()
                .filter(|s| s.owner == StepOwner::Tail)
                .map(|s| (s, None)),
        );
        let mut steps = Vec::new();
        let mut cursor = round_start;
        let mut spans: BTreeMap<usize, (i128, i128)> = BTreeMap::new();
        for (i, (step, entry)) in laid.into_iter().enumerate() {
            let start = cursor + step.gap_us;
            let end = start + step.duration_us;
            cursor = end;
            let mut value = step.value.clone();
            value["index"] = json!(i);
            value["startedAt"] = json!(timestamp(start)?);
            value["endedAt"] = json!(timestamp(end)?);
            if let Some(e) = entry {
                let span = spans.entry(e).or_insert((start, end));
                span.1 = end;
                if e > 0 {
                    let (k, c, miner, _, slug) = &seated[e - 1];
                    let template = &t.challengers[*c];
                    let old_group = text(&step.value, "group")?.to_owned();
                    let group = seat_group(*k, seats, miner, &patches[e - 1]);
                    replace_strings(&mut value, &old_group, &group);
                    replace_strings(&mut value, &template.slug, slug);
                }
            }
            if let (Some(rest), Some(sha)) = (&step.log_rest, &step.log_sha) {
                let rest = match entry.filter(|e| *e > 0) {
                    Some(e) => rest.replace(&t.challengers[seated[e - 1].1].slug, &seated[e - 1].4),
                    None => rest.clone(),
                };
                let name = format!("logs/steps/{i:02}-{rest}");
                bundle.add_stored(&name, sha)?;
                value["log"] = json!(name);
            }
            steps.push(value);
        }
        let round_end = cursor;
        for (e, entry) in entries.iter_mut().enumerate() {
            if let Some((start, end)) = spans.get(&e) {
                entry["startedAt"] = json!(timestamp(*start)?);
                entry["endedAt"] = json!(timestamp(*end)?);
            }
        }

        // The round-opened statement: seats, chain, seed commitments as the template's.
        let miners_digest = self.miners_sha.as_str().to_owned();
        let mut opened = t.opened.clone();
        opened["round"] = json!(n);
        opened["previousReceipt"] = json!(previous.map(Sha256Hex::as_str));
        opened["openedAt"] = json!(timestamp(round_start + t.opened_offset_us)?);
        opened["minersDigest"] = json!(miners_digest);
        opened["entries"] = Value::Array(
            entries
                .iter()
                .map(|e| json!({"miner": e["miner"], "patch": e["patch"], "role": e["role"]}))
                .collect(),
        );
        let inputs: BTreeMap<String, Sha256Hex> = bundle
            .files
            .iter()
            .filter(|(name, _)| name.starts_with("inputs/"))
            .map(|(a, b)| (a.clone(), *b))
            .collect();
        let (_, opened_file) = sign_to(&dir.join(OPENED_FILE), &inputs, &t.opened_type, opened)?;
        bundle.files.insert(OPENED_FILE.to_owned(), opened_file);

        // The receipt.
        let mut record = t.record.clone();
        record["round"] = json!(n);
        record["previousReceipt"] = json!(previous.map(Sha256Hex::as_str));
        record["minersDigest"] = json!(miners_digest);
        record["startedAt"] = json!(timestamp(round_start)?);
        record["endedAt"] = json!(timestamp(round_end)?);
        record["entries"] = Value::Array(entries);
        record["passes"] = Value::Array(passes);
        record["steps"] = Value::Array(steps);
        let mut descriptors: Vec<Value> = Vec::new();
        for input in field(&t.record, "inputs")?
            .as_array()
            .ok_or("template: inputs")?
        {
            let name = input
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if name.starts_with("inputs/patches/") {
                continue;
            }
            let mut input = input.clone();
            if name == MINERS_INPUT {
                input["digest"]["sha256"] = json!(miners_digest);
            }
            descriptors.push(input);
        }
        let at = descriptors
            .iter()
            .position(|d| d.get("name").and_then(Value::as_str) == Some("baseline"))
            .unwrap_or(descriptors.len());
        for (i, patch) in patches.iter().enumerate() {
            descriptors.insert(
                at + i,
                json!({"digest": {"sha256": patch.as_str()}, "name": patch_input(patch)}),
            );
        }
        record["inputs"] = Value::Array(descriptors);
        let typed: RoundRecord = serde_json::from_value(record.clone())?;
        let outcome = verifier::recomputed_outcome(&dir, &typed, &t.frozen)
            .map_err(|e| format!("round {n}: outcome: {e:?}"))?;
        record["outcome"] = serde_json::to_value(&outcome)?;
        let files = std::mem::take(&mut bundle.files);
        let (digest, _) = sign_to(&dir.join(ENVELOPE_FILE), &files, &t.receipt_type, record)?;

        self.submissions(n, &seated, &patches)?;
        Ok(digest)
    }

    /// The evaluator's submission records of round `n`'s challengers (and one rejected
    /// at intake), from the template's records.
    fn submissions(&mut self, n: u64, seated: &[Seat], patches: &[Sha256Hex]) -> Result<()> {
        let t = self.template;
        let dir = self.campaign_dir();
        let offset_us = i128::from(n - 1) * i128::from(ROUND_PERIOD_S) * 1_000_000;
        let write =
            |store: &mut Store, record: Value, sha: &Sha256Hex, diff: &[u8]| -> Result<()> {
                store.put_as(sha, diff)?;
                let diff_path = dir.submission_diff(sha);
                if !diff_path.exists() {
                    store.link(sha, &diff_path)?;
                }
                std::fs::write(
                    dir.submission_json(sha),
                    serde_json::to_vec_pretty(&record)?,
                )?;
                Ok(())
            };
        for ((_, c, miner, patch, _), sha) in seated.iter().zip(patches) {
            let template = &t.challengers[*c];
            let Some(record) = &template.record else {
                continue;
            };
            let mut record = shifted_record(record, offset_us)?;
            let old_sha = text(&record, "sha256")?.to_owned();
            replace_strings(&mut record, &old_sha, sha.as_str());
            replace_strings(
                &mut record,
                &format!("`{}`", template.miner),
                &format!("`{miner}`"),
            );
            replace_strings(&mut record, "round 1", &format!("round {n}"));
            record["miner"] = json!(miner);
            record["sizeBytes"] = json!(patch.len());
            if let Some(events) = record.get_mut("events").and_then(Value::as_array_mut) {
                for e in events {
                    if e.get("round").is_some() {
                        e["round"] = json!(n);
                    }
                    if let Some(reason) = e.get("reason").and_then(Value::as_str) {
                        let old = format!("sha256 of the {} diff bytes", template.patch.len());
                        let new = format!("sha256 of the {} diff bytes", patch.len());
                        e["reason"] = json!(reason.replace(&old, &new));
                    }
                }
            }
            write(&mut self.store, record, sha, patch)?;
        }
        if self.config.rejected_submissions
            && let Some((record, diff)) = &t.rejected
        {
            let mut rng = Rng(self.config.seed ^ n.wrapping_mul(0xe703_7ed1_a0b4_28db));
            let miner = miner_id(u32::try_from(rng.below(u64::from(self.config.miners)))? + 1);
            let mut patch =
                format!("Synthetic rejected submission before round {n}, by {miner}.\n\n")
                    .into_bytes();
            patch.extend_from_slice(diff);
            let sha = Sha256Hex::digest(&patch);
            let mut record = shifted_record(record, offset_us)?;
            let old_sha = text(&record, "sha256")?.to_owned();
            let old_miner = text(&record, "miner")?.to_owned();
            replace_strings(&mut record, &old_sha, sha.as_str());
            replace_strings(
                &mut record,
                &format!("`{old_miner}`"),
                &format!("`{miner}`"),
            );
            record["miner"] = json!(miner);
            record["sizeBytes"] = json!(patch.len());
            write(&mut self.store, record, &sha, &patch)?;
        }
        Ok(())
    }
}

/// `record` with every event's `at` moved by `offset_us`.
fn shifted_record(record: &Value, offset_us: i128) -> Result<Value> {
    let mut record = record.clone();
    if let Some(events) = record.get_mut("events").and_then(Value::as_array_mut) {
        for e in events {
            if let Some(at) = e.get("at").and_then(Value::as_str) {
                e["at"] = json!(timestamp(micros(at)? + offset_us)?);
            }
        }
    }
    Ok(record)
}
