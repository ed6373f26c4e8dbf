//! A round on a rented pod (content/pods.md, A round on a pod): the evaluator keeps the
//! journal, the keys, the log and the seal; the pod runs the entries. Before the first
//! run the pod is rented and set up (`runner::pod::session`: renting, shipping the
//! harness and the campaign's directory, the agent's setup steps), each of its steps a
//! step of the round's timeline, journaled as a [`Record::Pod`]. Each pass then runs on
//! the pod as `referee agent --pass N` ([`run_pod_pass`]): the agent resumes the round
//! from the pod's copy of the journal shipped before the pass ([`pod_journal`]: never
//! the evaluator's secret nor the sample seed), runs that pass's remaining runs with the
//! very code a local round runs ([`super::run_scheduled`]), and sends each run's journal
//! record back as a frame as it ends; the evaluator checks it is the run it expects,
//! takes the run's files from the staging directory and journals it before reading the
//! next. An allocation that dies mid-pass is released and a new one rented: the agent's
//! resume re-runs the run that was cut. Releasing the pod removes the round's staging
//! directory.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Stdio};
use std::thread::JoinHandle;

use receipts::fsutil::{IoError, write_atomic};
use receipts::keys::SeedForms;
use receipts::model::{POD_STEP_GROUP, PodAllocation, PodBackend, PodRun, PodSpec, Sha256Hex};
use receipts::rules::paired::{Attempt, RunOutcome};
use receipts::rules::passes::ScheduledRun;

use crate::journal::Journal;
use crate::pod::frame::{AgentMessage, read_frame, write_frame};
use crate::pod::session::{self, PodInputs, PodStep};
use crate::pod::ship::{AgentOrder, RoundOrder, Shipment};
use crate::pod::{Pod, PodError, pod_for};

use super::passes::{self, RunExecutor};
use super::record::{EntryRecord, PlannedEntry, PodRecord, Record, SamplePool};
use super::{Ctx, RoundError, RoundOptions, record_steps};

/// Where a round's data directory copy lies in its staging directory.
const STAGED_DATA: &str = "data";

/// The most allocations one call of a round rents: the first, and one more each time an
/// allocation dies under a pass.
const MAX_ALLOCATIONS: usize = 3;

/// Files of a round's work directory that stay on their own side: the journal (the
/// evaluator's is the one of record; the pod is shipped its own copy before each pass,
/// [`pod_journal`]), the engines' pid file, and the patched trees (each run prepares its
/// own).
fn stays_home(rel: &Path) -> bool {
    rel == Path::new("journal.jsonl") || rel == Path::new("engines.pid") || rel.starts_with("trees")
}

/// The campaign's pod when it is rented (`backend = "slurm"`); `None`: the round runs on
/// the evaluator's own machine.
pub(crate) fn rented_pod(ctx: &Ctx<'_>) -> Option<PodSpec> {
    (ctx.frozen.campaign.pod.as_ref())
        .filter(|spec| spec.backend != PodBackend::Local)
        .cloned()
}

/// The receipt's `pod`: every allocation the journal's pod records name, in order;
/// `None` when the round rented none.
pub(crate) fn pod_run(records: &[Record]) -> Option<PodRun> {
    let mut allocations: Vec<PodAllocation> = Vec::new();
    let mut backend = None;
    for record in records {
        let Record::Pod(pod) = record else { continue };
        backend = Some(pod.backend);
        let steps = pod.steps.iter().map(|s| s.index);
        match allocations.iter_mut().find(|a| a.id == pod.allocation) {
            Some(allocation) => allocation.steps.extend(steps),
            None => allocations.push(PodAllocation {
                id: pod.allocation,
                nodes: pod.nodes.clone(),
                agent_sha256: pod.agent_sha256,
                gpus: pod.gpus.clone(),
                steps: steps.collect(),
            }),
        }
    }
    Some(PodRun {
        backend: backend?,
        allocations,
    })
}

/// The pass loop's executor on a rented pod: each run is the agent's, checked and
/// journaled here.
pub(crate) struct PodRuns<'c, 'a> {
    ctx: &'c mut Ctx<'a>,
    spec: PodSpec,
    /// `<staging_dir>/<campaign>-round-<n>/`.
    staging: PathBuf,
    rented: Option<Rented>,
    /// Allocations rented by this call.
    rentals: usize,
}

/// A rented, set-up pod, and the agent running a pass on it.
struct Rented {
    pod: Box<dyn Pod>,
    shipment: Shipment,
    /// The work directory's files as shipped, by their path in it.
    shipped: BTreeMap<PathBuf, Sha256Hex>,
    allocation: u64,
    agent: Option<AgentPass>,
}

/// `referee agent --pass N` running on the pod.
struct AgentPass {
    pass: u32,
    child: Child,
    stdout: BufReader<ChildStdout>,
    stderr: JoinHandle<String>,
}

impl AgentPass {
    /// Stops an agent whose frames are no longer read. Best effort: one that already
    /// exited cannot be killed, and its allocation is released or re-rented next.
    fn stop(mut self) {
        if let Err(e) = self.child.kill().and_then(|()| self.child.wait().map(drop)) {
            tracing::debug!("stopping the agent of pass {}: {e}", self.pass + 1);
        }
    }
}

impl<'c, 'a> PodRuns<'c, 'a> {
    /// The executor of a round on the pod `spec` describes; nothing is rented before the
    /// first run.
    pub(crate) fn new(ctx: &'c mut Ctx<'a>, spec: PodSpec) -> Self {
        let staging = PathBuf::from(spec.staging_dir.clone().unwrap_or_default()).join(format!(
            "{}-round-{}",
            ctx.frozen.campaign.id.as_str(),
            ctx.round
        ));
        Self {
            ctx,
            spec,
            staging,
            rented: None,
            rentals: 0,
        }
    }

    /// Releases the pod if this call rented one, journaling its release step.
    ///
    /// Errors: [`RoundError`] when the step cannot be written or journaled, or the
    /// scheduler refuses the release.
    pub(crate) fn release(mut self) -> Result<(), RoundError> {
        self.release_rented()
    }

    fn release_rented(&mut self) -> Result<(), RoundError> {
        let Some(mut rented) = self.rented.take() else {
            return Ok(());
        };
        if let Some(agent) = rented.agent.take() {
            // An agent still running (a round stopped mid-pass) ends with its pod.
            agent.stop();
        }
        let (mut step, released) = session::tear_down(rented.pod.as_mut());
        step.detail.push(self.remove_staging());
        let record = self.pod_record(&rented, std::slice::from_ref(&step))?;
        self.ctx.journal.append(Record::Pod(Box::new(record)))?;
        released?;
        Ok(())
    }

    /// Rents a pod, ships the round to it and journals its setup steps.
    fn rent(&mut self) -> Result<(), RoundError> {
        if self.rentals == MAX_ALLOCATIONS {
            return Err(RoundError::Pod(PodError::Agent(format!(
                "lost {MAX_ALLOCATIONS} allocations in this round: not renting another"
            ))));
        }
        self.rentals += 1;
        // A killed evaluator's staging directory: nothing of it is used, the round is
        // shipped afresh.
        if let Err(e) = fs::remove_dir_all(&self.staging)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            return Err(IoError::at("removing", &self.staging)(e).into());
        }
        let ctx = &*self.ctx;
        let campaign = ctx.frozen.campaign.id.as_str();
        let mut pod = pod_for(&self.spec, &format!("referee-{campaign}-r{}", ctx.round));
        let (images, weights) = session::campaign_pulls(&ctx.frozen.campaign, &self.spec);
        let files = shipped_files(ctx)?;
        refuse_secrets(&files, &round_secrets(ctx))?;
        let inputs = PodInputs {
            staging: self.staging.clone(),
            binary: ctx.options.engine_program.clone(),
            files,
            images,
            weights,
            weights_cache: PathBuf::from(self.spec.weights_cache_dir().unwrap_or_default()),
            round: Some(RoundOrder {
                campaign: ctx.frozen.campaign.id.clone(),
                round: ctx.round,
                engine_uid: ctx.options.engine_uid,
            }),
        };
        match session::set_up(pod.as_mut(), &inputs) {
            Ok(setup) => {
                let work = staged_work(Path::new(""), &*self.ctx);
                let shipped = (setup.shipment.order.files.iter())
                    .filter_map(|f| {
                        let rel = Path::new(&f.path).strip_prefix(&work).ok()?;
                        Some((rel.to_path_buf(), f.sha256))
                    })
                    .collect();
                let rented = Rented {
                    shipped,
                    allocation: setup.allocation.id.unwrap_or_default(),
                    pod,
                    shipment: setup.shipment.clone(),
                    agent: None,
                };
                let mut record = self.pod_record(&rented, &setup.steps)?;
                record.nodes = setup.allocation.nodes;
                record.gpus = setup.gpus;
                self.ctx.journal.append(Record::Pod(Box::new(record)))?;
                self.rented = Some(rented);
                Ok(())
            }
            Err((steps, error)) => {
                let (mut release, _) = session::tear_down(pod.as_mut());
                release.detail.push(self.remove_staging());
                let mut all = steps;
                all.push(release);
                self.round_steps(&all)?;
                Err(RoundError::Pod(error))
            }
        }
    }

    /// Removes the round's staging directory: what the pod was shipped and what its runs
    /// wrote there, every run's files already taken home. Returns the release step's line
    /// saying so; one that could not be removed is said there and warned about, and the
    /// round goes on (its results are home).
    fn remove_staging(&self) -> String {
        let shown = self.staging.display();
        match fs::remove_dir_all(&self.staging) {
            Ok(()) => format!("staging directory {shown} removed"),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                format!("staging directory {shown} already gone")
            }
            Err(e) => {
                tracing::warn!("the staging directory {shown} could not be removed: {e}");
                format!("staging directory {shown} not removed: {e}")
            }
        }
    }

    /// A journal record of `steps` (each becoming a step of the round) on `rented`.
    fn pod_record(&mut self, rented: &Rented, steps: &[PodStep]) -> Result<PodRecord, RoundError> {
        Ok(PodRecord {
            backend: self.spec.backend,
            allocation: rented.allocation,
            nodes: String::new(),
            gpus: String::new(),
            agent_sha256: rented.shipment.order.agent_sha256,
            steps: self.round_steps(steps)?,
        })
    }

    /// `steps` as steps of the round's timeline, their logs written.
    fn round_steps(&mut self, steps: &[PodStep]) -> Result<Vec<receipts::model::Step>, RoundError> {
        steps
            .iter()
            .map(|step| {
                self.ctx.steps.ran_between(
                    (POD_STEP_GROUP, &step.name, step.phase),
                    (step.started_at, step.ended_at),
                    &step.detail,
                    step.status,
                )
            })
            .collect()
    }

    /// The agent running pass `pass`, started (the journal shipped first) if it is not.
    fn agent_for(&mut self, pass: u32) -> Result<&mut AgentPass, RoundError> {
        if self
            .rented
            .as_ref()
            .is_none_or(|r| r.agent.as_ref().is_none_or(|a| a.pass != pass))
        {
            if self.rented.is_none() {
                self.rent()?;
            }
            let staged = staged_work(&self.staging, self.ctx).join("journal.jsonl");
            let bytes = pod_journal(self.ctx)?;
            if round_secrets(self.ctx).iter().any(|s| s.found_in(&bytes)) {
                return Err(RoundError::Pod(PodError::RoundSecret { path: staged }));
            }
            if let Some(parent) = staged.parent() {
                fs::create_dir_all(parent).map_err(IoError::at("creating", parent))?;
            }
            write_atomic(&staged, &bytes, 0o644).map_err(IoError::at("writing", &staged))?;
            let rented = self.rented.as_mut().ok_or(PodError::NotProvisioned)?;
            if let Some(old) = rented.agent.take() {
                old.stop();
            }
            rented.agent = Some(start_agent(rented, pass)?);
        }
        let rented = self.rented.as_mut().ok_or(PodError::NotProvisioned)?;
        rented
            .agent
            .as_mut()
            .ok_or(RoundError::Pod(PodError::NotProvisioned))
    }

    /// The next run record the agent sends, checked to be `run`'s attempt `attempt`, and
    /// how long its engines ran on the pod (ms).
    fn next_record(
        &mut self,
        run: ScheduledRun,
        attempt: Attempt,
    ) -> Result<(EntryRecord, u64), RoundError> {
        let agent = self.agent_for(run.pass)?;
        let message = read_frame(&mut agent.stdout).map_err(PodError::from);
        let (record, engine_ms) = match message {
            Ok(Some(AgentMessage::Run { record, engine_ms })) => (
                serde_json::from_value::<EntryRecord>(record).map_err(|e| {
                    PodError::Agent(format!("sent a run that is not a run record: {e}"))
                })?,
                engine_ms,
            ),
            Ok(other) => {
                let ended = self.agent_ended()?;
                return Err(RoundError::Pod(PodError::Agent(format!(
                    "sent {} where pass {}'s run of entry {} belongs{ended}",
                    other.map_or_else(|| "nothing".to_owned(), |m| format!("{m:?}")),
                    run.pass + 1,
                    run.slot.entry
                ))));
            }
            Err(e) => {
                let ended = self.agent_ended()?;
                return Err(RoundError::Pod(PodError::Agent(format!("{e}{ended}"))));
            }
        };
        let expected = (
            run.pass,
            run.slot.entry,
            run.slot.control,
            attempt == Attempt::Rerun,
        );
        let got = (record.pass, record.index, record.control, record.rerun);
        if got != expected {
            return Err(RoundError::Pod(PodError::Agent(format!(
                "sent the run (pass, entry, control, re-run) {got:?} where {expected:?} belongs"
            ))));
        }
        Ok((record, engine_ms))
    }

    /// Why the agent's stream ended: its exit status and standard error. The allocation
    /// found dead is [`PodError::AllocationEnded`].
    fn agent_ended(&mut self) -> Result<String, RoundError> {
        let Some(rented) = self.rented.as_mut() else {
            return Ok(String::new());
        };
        let Some(mut agent) = rented.agent.take() else {
            return Ok(String::new());
        };
        // Its stream is of no more use: the agent is stopped if it still runs.
        let _ = agent.child.kill();
        let status =
            (agent.child.wait()).map_err(IoError::at("waiting for", Path::new("agent")))?;
        let stderr = agent.stderr.join().unwrap_or_default();
        // The scheduler may list a cancelled allocation as running for a moment after its
        // steps were killed: asked again for up to 10 s.
        for _ in 0..50 {
            if !rented.pod.is_alive().unwrap_or(true) {
                return Err(RoundError::Pod(PodError::AllocationEnded {
                    id: rented.allocation,
                    state: "gone".into(),
                }));
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        Ok(format!("; it exited {status}: {stderr}"))
    }

    /// The staged round's work files the run wrote, copied home (its step logs and bundle
    /// files, the outputs the scorer reads).
    fn take_files(&self) -> Result<(), RoundError> {
        let staged = staged_work(&self.staging, self.ctx);
        let shipped = self.rented.as_ref().map(|r| &r.shipped);
        copy_tree(&staged, &self.ctx.work, &staged, shipped)
    }
}

impl RunExecutor for PodRuns<'_, '_> {
    type Error = RoundError;

    fn run(&mut self, run: ScheduledRun, attempt: Attempt) -> Result<RunOutcome, RoundError> {
        let (record, engine_ms) = loop {
            match self.next_record(run, attempt) {
                Ok(got) => break got,
                // The allocation died under the pass: released, and the pass resumes on a
                // new one from the journal (the cut run again from its start).
                Err(RoundError::Pod(PodError::AllocationEnded { .. })) => {
                    self.release_rented()?;
                }
                Err(e) => return Err(e),
            }
        };
        self.take_files()?;
        self.ctx.steps.ran_elsewhere(&record.steps);
        self.ctx.engines.ran_elsewhere(engine_ms);
        let outcome = passes::outcome_of(&record);
        self.ctx.journal.append(Record::Entry(Box::new(record)))?;
        Ok(outcome)
    }

    fn pass_ended(&mut self, pass: u32) -> Result<(), RoundError> {
        if let Some(rented) = self.rented.as_mut()
            && let Some(mut agent) = rented.agent.take_if(|a| a.pass == pass)
        {
            let last = read_frame(&mut agent.stdout).map_err(PodError::from)?;
            let status = agent
                .child
                .wait()
                .map_err(IoError::at("waiting for", Path::new("agent")))?;
            let stderr = agent.stderr.join().unwrap_or_default();
            if !matches!(last, Some(AgentMessage::Done)) || !status.success() {
                return Err(RoundError::Pod(PodError::Agent(format!(
                    "ended pass {} with {last:?} and exit {status}: {stderr}",
                    pass + 1
                ))));
            }
        }
        super::tlog::log_pass(self.ctx, pass)
    }
}

/// The staged copy of the round's work directory.
fn staged_work(staging: &Path, ctx: &Ctx<'_>) -> PathBuf {
    staging
        .join(STAGED_DATA)
        .join(ctx.frozen.campaign.id.as_str())
        .join(".work")
        .join(format!("round-{}", ctx.round))
}

/// Starts `referee agent --pass N` on the pod and checks its hello.
fn start_agent(rented: &Rented, pass: u32) -> Result<AgentPass, RoundError> {
    let order = rented.shipment.order_path.to_string_lossy().into_owned();
    let args = [
        "agent".into(),
        "--order".into(),
        order,
        "--pass".into(),
        pass.to_string(),
    ];
    let mut command = rented.pod.command(&rented.shipment.agent, &args)?;
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().map_err(|source| PodError::Spawn {
        program: command.get_program().to_string_lossy().into_owned(),
        source,
    })?;
    let (Some(stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(RoundError::Pod(PodError::Agent(
            "started without its output pipes".into(),
        )));
    };
    let stderr = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = stderr.read_to_end(&mut text);
        let tail = &text[text.len().saturating_sub(4096)..];
        receipts::text::escape_untrusted(String::from_utf8_lossy(tail).trim_end()).into_owned()
    });
    let mut stdout = BufReader::new(stdout);
    let hello = read_frame(&mut stdout).map_err(PodError::from)?;
    session::check_hello(hello, &rented.shipment)?;
    Ok(AgentPass {
        pass,
        child,
        stdout,
        stderr,
    })
}

/// Copies every file under `from` (the staged work directory, `root`) that differs from
/// its copy under `to` (the home one), but those that [`stays_home`] and those still as
/// they were `shipped` (by their path under `root`).
fn copy_tree(
    from: &Path,
    to: &Path,
    root: &Path,
    shipped: Option<&BTreeMap<PathBuf, Sha256Hex>>,
) -> Result<(), RoundError> {
    let entries = fs::read_dir(from).map_err(IoError::at("listing", from))?;
    for entry in entries {
        let entry = entry.map_err(IoError::at("listing", from))?;
        let path = entry.path();
        let rel = path.strip_prefix(root).unwrap_or(&path);
        if stays_home(rel) {
            continue;
        }
        let kind = entry.file_type().map_err(IoError::at("reading", &path))?;
        let dest = to.join(entry.file_name());
        if kind.is_dir() {
            fs::create_dir_all(&dest).map_err(IoError::at("creating", &dest))?;
            copy_tree(&path, &dest, root, shipped)?;
        } else if kind.is_file() {
            let bytes = fs::read(&path).map_err(IoError::at("reading", &path))?;
            // A file as it was shipped is the evaluator's own, maybe changed here since.
            let as_shipped = shipped
                .and_then(|s| s.get(rel))
                .is_some_and(|sha| *sha == Sha256Hex::digest(&bytes));
            if !as_shipped && fs::read(&dest).ok().as_deref() != Some(bytes.as_slice()) {
                write_atomic(&dest, &bytes, 0o644).map_err(IoError::at("writing", &dest))?;
            }
        }
    }
    Ok(())
}

/// The round's secrets that never leave the evaluator, each as a finder of its forms:
/// the evaluator's secret (a beacon round) and the sample seed.
fn round_secrets(ctx: &Ctx<'_>) -> Vec<SeedForms> {
    let Some(setup) = &ctx.setup else {
        return Vec::new();
    };
    (setup.evaluator_secret.iter().map(|s| &s.0))
        .chain(setup.seeds.sample_seed.iter().map(|s| &s.seed.0))
        .map(SeedForms::of)
        .collect()
}

/// Refuses `files` (each its name on the pod and its source) when one holds any of
/// `secrets`, before anything is shipped.
///
/// Errors: [`PodError::RoundSecret`] naming the first source that holds one,
/// [`PodError::Io`] when a source cannot be read.
fn refuse_secrets(files: &[(String, PathBuf)], secrets: &[SeedForms]) -> Result<(), PodError> {
    for (_, source) in files {
        let bytes = fs::read(source).map_err(IoError::at("reading", source))?;
        if secrets.iter().any(|s| s.found_in(&bytes)) {
            return Err(PodError::RoundSecret {
                path: source.clone(),
            });
        }
    }
    Ok(())
}

/// The round's journal as the pod is shipped it (content/pods.md, What the pod is
/// shipped): its records as journaled, but for the setup record, which holds neither the
/// evaluator's secret nor the sample seed and carries instead each entry's sample pool
/// drawn here from it ([`super::record::SetupRecord::sample_pools`]): what the pod's load
/// client keeps is all the pod needs of the sample, which is drawn at home after the
/// runs came back.
///
/// Errors: [`RoundError::Record`] when a pool cannot be drawn (the workload cannot be
/// built) or a record cannot be written as JSON.
fn pod_journal(ctx: &Ctx<'_>) -> Result<Vec<u8>, RoundError> {
    let mut bytes = Vec::new();
    for record in &ctx.journal.records {
        let line = match record {
            Record::Setup(setup) => {
                let mut pools = Vec::with_capacity(setup.entries.len());
                for entry in &setup.entries {
                    let pool = super::entry::sample_pool(ctx, entry.index)
                        .map_err(|e| ctx.record_error(&e))?;
                    pools.push(SamplePool {
                        entry: entry.index,
                        items: pool.into_iter().collect(),
                    });
                }
                let mut redacted = setup.as_ref().clone();
                redacted.evaluator_secret = None;
                redacted.seeds.sample_seed = None;
                redacted.sample_pools = Some(pools);
                serde_json::to_vec(&Record::Setup(Box::new(redacted)))
            }
            other => serde_json::to_vec(other),
        }
        .map_err(|e| ctx.record_error(&e))?;
        bytes.extend_from_slice(&line);
        bytes.push(b'\n');
    }
    Ok(bytes)
}

/// The campaign's directory as the pod needs it, each file its name under
/// [`STAGED_DATA`] and its source: the campaign, its baseline and submissions, and this
/// round's work directory (setup's files); not the sealed rounds, other rounds' work,
/// lock files, patched trees or the journal (the pod gets its own copy before each pass,
/// [`pod_journal`]).
fn shipped_files(ctx: &Ctx<'_>) -> Result<Vec<(String, PathBuf)>, RoundError> {
    let root = ctx.campaign_dir.root();
    let prefix = format!("{STAGED_DATA}/{}", ctx.frozen.campaign.id.as_str());
    let this_round = Path::new(".work").join(format!("round-{}", ctx.round));
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).map_err(IoError::at("listing", &dir))? {
            let entry = entry.map_err(IoError::at("listing", &dir))?;
            let path = entry.path();
            let rel = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
            let skipped = rel == Path::new("rounds")
                || rel.to_string_lossy().ends_with(".lock")
                || (rel.starts_with(".work")
                    && !(rel == Path::new(".work") || rel.starts_with(&this_round)))
                || rel
                    .strip_prefix(&this_round)
                    .is_ok_and(|inner| inner != Path::new("") && stays_home(inner));
            if skipped {
                continue;
            }
            let kind = entry.file_type().map_err(IoError::at("reading", &path))?;
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() {
                files.push((format!("{prefix}/{}", rel.to_string_lossy()), path));
            }
        }
    }
    files.sort();
    Ok(files)
}

/// `referee agent --order <staging>/order.json --pass N`: says hello, then runs pass
/// `pass` (from 0) of the order's round on the pod from the staged data directory,
/// writing each run's journal record to `out` as a frame as it ends, then `done`.
///
/// The round is resumed from its staged journal, which must hold its setup: the pod
/// never opens a round, logs or seals. Its context holds a key generated here and
/// dropped at the end, which signs nothing (the round's own key never leaves the
/// evaluator).
///
/// Errors: [`RoundError`] for an order naming no round, a journal without setup, and
/// whatever stops a local round's run (a step log or the staged journal that cannot be
/// written).
pub fn run_pod_pass(order_path: &Path, pass: u32, out: &mut dyn Write) -> Result<(), RoundError> {
    let bytes = fs::read(order_path).map_err(IoError::at("reading", order_path))?;
    let order: AgentOrder = serde_json::from_slice(&bytes)
        .map_err(|e| PodError::Agent(format!("was given an order that does not parse: {e}")))?;
    let Some(asked) = order.round else {
        return Err(RoundError::Pod(PodError::Agent(
            "was asked for a pass by an order that names no round".into(),
        )));
    };
    crate::pod::agent::say_hello(out)?;
    let staging = order_path.parent().unwrap_or(Path::new("."));
    let options = RoundOptions {
        data: receipts::layout::DataDir::new(staging.join(STAGED_DATA)),
        campaign: asked.campaign,
        engine_program: std::env::current_exe()
            .map_err(IoError::at("locating", Path::new("<self>")))?,
        seeds: None,
        beacon: None,
        abort_after_record: None,
        log_key: None,
        require_witness: None,
        clock: super::Clock::system(),
        key_paths: Vec::new(),
        engine_uid: asked.engine_uid,
        kind: super::RoundKindRequest::default(),
        // The sealed set never leaves the evaluator (content/s1-fast-speed.md): the agent
        // runs no scorer.
        capability: None,
    };
    let options = &options;
    let round = asked.round;
    let campaign_dir = options.data.campaign(&options.campaign);
    let frozen = campaign_dir.load_campaign()?;
    let work = campaign_dir.work_dir().join(format!("round-{round}"));
    let (journal, records) = Journal::<Record>::open(&work.join("journal.jsonl"))?;
    let Some(Record::Setup(setup)) = records.first() else {
        return Err(RoundError::Record {
            round,
            message: "the journal shipped to the pod holds no setup".into(),
        });
    };
    let setup = setup.as_ref().clone();
    let (backend, cpus) = super::engine_backend(options, &frozen, &work)?;
    let _pinned = super::ClientPinning::new(cpus.clone())?;
    let runtime = super::round_runtime(&work)?;
    let next_step = records.iter().map(record_steps).sum::<usize>();
    let prompt_source = campaign_dir.load_prompt_source(&frozen.campaign)?;
    let bundle = work.join("bundle");
    let unused_key = receipts::keys::PrivateKey::generate().map_err(|e| RoundError::Record {
        round,
        message: format!("drawing the pod's unused key: {e}"),
    })?;
    struct Quiet;
    impl super::RoundProgress for Quiet {}
    let steps = super::Steps::new(
        &Quiet,
        options.clock.clone(),
        bundle.clone(),
        u32::try_from(next_step).unwrap_or(u32::MAX),
    );
    let entries = setup.entries.clone();
    let mut ctx = Ctx {
        options,
        key: &unused_key,
        frozen,
        campaign_dir,
        prompt_source,
        previous: Default::default(),
        keyring: receipts::keys::Keyring::default(),
        round,
        work,
        bundle,
        runtime,
        progress: &Quiet,
        setup: Some(setup),
        logger: None,
        round_log: None,
        steps,
        engines: super::Engines::new(backend, cpus),
        journal: super::Journaled {
            journal,
            records,
            abort_after: None,
        },
        produced: Default::default(),
    };
    ctx.steps.seat(&entries);
    let schedule: Vec<ScheduledRun> = (ctx.schedule(&entries)?.into_iter())
        .filter(|r| r.pass == pass)
        .collect();
    if schedule.is_empty() {
        return Err(RoundError::Record {
            round,
            message: format!("pass {} is not among the round's passes", pass + 1),
        });
    }
    let mut done: Vec<passes::RunDone> = (ctx.journal.records.iter())
        .filter_map(|r| match r {
            Record::Entry(e) => Some(passes::run_done(e)),
            _ => None,
        })
        .collect();
    passes::run_passes(
        &schedule,
        &mut done,
        &mut PodWorker {
            ctx: &mut ctx,
            entries: &entries,
            out,
        },
    )?;
    write_frame(out, &AgentMessage::Done).map_err(IoError::at("writing", Path::new("<stdout>")))?;
    Ok(())
}

/// The pass loop's executor on the pod: a local round's run, journaled in the staged
/// journal and sent home as a frame.
struct PodWorker<'c, 'a, 'o> {
    ctx: &'c mut Ctx<'a>,
    entries: &'c [PlannedEntry],
    out: &'o mut dyn Write,
}

impl RunExecutor for PodWorker<'_, '_, '_> {
    type Error = RoundError;

    fn run(&mut self, run: ScheduledRun, attempt: Attempt) -> Result<RunOutcome, RoundError> {
        let before = self.ctx.engines.ms();
        let record = super::run_scheduled(self.ctx, self.entries, run, attempt)?;
        let engine_ms = self.ctx.engines.ms().saturating_sub(before);
        let outcome = passes::outcome_of(&record);
        let value = serde_json::to_value(&record).map_err(|e| RoundError::Record {
            round: self.ctx.round,
            message: format!("a run record that is not JSON: {e}"),
        })?;
        self.ctx.journal.append(Record::Entry(Box::new(record)))?;
        write_frame(
            self.out,
            &AgentMessage::Run {
                record: value,
                engine_ms,
            },
        )
        .map_err(IoError::at("writing", Path::new("<stdout>")))?;
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file that would carry the evaluator's secret or the sample seed to the pod, in
    /// any form (here raw bytes inside a binary file, and upper-case hex), is refused by
    /// name; the same files without it pass.
    #[test]
    fn a_file_holding_a_round_secret_is_never_shipped() {
        let dir = tempfile::tempdir().unwrap();
        let secret = [0x3cu8; 32];
        let sample = [0xa7u8; 32];
        let secrets = [SeedForms::of(&secret), SeedForms::of(&sample)];
        let clean = dir.path().join("campaign.json");
        fs::write(&clean, br#"{"id":"tiny"}"#).unwrap();
        let raw = dir.path().join("weights.bin");
        fs::write(&raw, [&[0u8, 1, 2][..], &secret, &[9u8][..]].concat()).unwrap();
        let upper = dir.path().join("notes.txt");
        let hex: String = sample.iter().map(|b| format!("{b:02X}")).collect();
        fs::write(&upper, format!("seed: {hex}\n")).unwrap();
        let named = |paths: &[&PathBuf]| -> Vec<(String, PathBuf)> {
            paths
                .iter()
                .map(|p| ("data/x".to_owned(), (*p).clone()))
                .collect()
        };
        assert!(refuse_secrets(&named(&[&clean]), &secrets).is_ok());
        for planted in [&raw, &upper] {
            match refuse_secrets(&named(&[&clean, planted]), &secrets) {
                Err(PodError::RoundSecret { path }) => assert_eq!(&path, planted),
                got => panic!("expected a refusal of {}, got {got:?}", planted.display()),
            }
        }
    }
}
