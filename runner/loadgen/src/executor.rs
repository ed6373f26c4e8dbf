//! The HTTP probe executor and the entry points the round executor and `referee bench
//! serve` call: one probe = one workload sub-stream sent open-loop at a fixed rate, judged
//! by [`summarize_probe`]; an entry = [`crate::search::search_entry`] over such probes.

use std::collections::BTreeSet;
use std::sync::Arc;

use receipts::model::{
    ApiProfile, Campaign, EntryMeasurement, ProbeRecord, ProbeVerdict, Sla, TokenCount,
};

use super::{
    ClientConfig, LoadClient, LoadError, ProbeContext, ProbePlan, RequestSample, Target,
    summarize_probe,
};
use crate::search::{ProbeExecutor, ProgressSink, search_runs};
use receipts::rules::workload::Workload;

/// What a measurement is judged against, beyond the workload (which carries the rate
/// search and the run count it was sized for).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MeasureConfig {
    /// The latency SLA.
    pub sla: Sla,
    /// The load client's threads and in-flight cap.
    pub client: ClientConfig,
    /// How output tokens are counted (the campaign's `token_count`).
    pub token_count: TokenCount,
    /// The engine API profile request bodies and token ids follow (the campaign's
    /// [`Campaign::api_profile`]; its `token_count` is `token_count` above).
    pub api: Arc<ApiProfile>,
    /// Workload item indices (`Item::item_index`, the same in every sub-stream) whose
    /// measured requests keep their observed token ids ([`RequestSample::token_ids`]).
    /// Empty (the default) keeps none, so memory stays bounded.
    pub keep_token_ids: BTreeSet<u32>,
    /// For a `decide` campaign, its decision API and the run's token (`None`, the
    /// default: the completions API).
    pub decide: Option<Arc<crate::DecidePlan>>,
}

impl MeasureConfig {
    /// The campaign's SLA, engine API profile (with its `token_count`) and response
    /// budget (`[limits]`) with the default client (2 threads, no in-flight cap), keeping
    /// no token ids.
    pub fn from_campaign(campaign: &Campaign) -> Self {
        let api = campaign.api_profile();
        Self {
            sla: campaign.sla.clone(),
            client: ClientConfig {
                response_budget: crate::ResponseBudget::of(&campaign.effective_limits()),
                ..ClientConfig::default()
            },
            token_count: api.token_count,
            api: Arc::new(api),
            keep_token_ids: BTreeSet::new(),
            decide: None,
        }
    }
}

/// The kept samples of one probe: its measured requests whose item is in
/// [`MeasureConfig::keep_token_ids`] and that the probe sent, in send order, completed
/// or not (each says why it failed), with their observed token ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeOutputs {
    /// Run number.
    pub run: u32,
    /// Probe number within the run.
    pub probe: u32,
    /// The workload sub-stream its items came from (`Workload::sub_stream`).
    pub sub_stream: u32,
    /// The kept samples.
    pub samples: Vec<RequestSample>,
}

/// An entry's measurement with the kept outputs of each run's result probe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadMeasurement {
    /// The measurement, as recorded in the receipt.
    pub measurement: EntryMeasurement,
    /// For every run that found a rate, the kept outputs of its result probe (its last
    /// passing probe, whose throughput is the run's), in run order; empty when
    /// [`MeasureConfig::keep_token_ids`] is.
    pub result_outputs: Vec<ProbeOutputs>,
}

/// Runs probes against a live server over HTTP.
pub struct HttpProbeExecutor<'a> {
    client: LoadClient,
    target: &'a Target,
    workload: &'a Workload,
    sla: Sla,
    token_count: TokenCount,
    api: Arc<ApiProfile>,
    keep_token_ids: BTreeSet<u32>,
    decide: Option<Arc<crate::DecidePlan>>,
    outputs: Vec<ProbeOutputs>,
    progress: &'a dyn ProgressSink,
}

impl<'a> HttpProbeExecutor<'a> {
    /// Starts a load client for `target`.
    ///
    /// Errors: [`LoadError::Runtime`] from [`LoadClient::new`].
    pub fn new(
        target: &'a Target,
        workload: &'a Workload,
        config: &MeasureConfig,
        progress: &'a dyn ProgressSink,
    ) -> Result<Self, LoadError> {
        Ok(Self {
            client: LoadClient::new(config.client)?,
            target,
            workload,
            sla: config.sla.clone(),
            token_count: config.token_count,
            api: Arc::clone(&config.api),
            keep_token_ids: config.keep_token_ids.clone(),
            decide: config.decide.clone(),
            outputs: Vec::new(),
            progress,
        })
    }

    /// The kept outputs of every probe sent so far, in the order sent; empty when
    /// [`MeasureConfig::keep_token_ids`] is.
    pub fn take_outputs(&mut self) -> Vec<ProbeOutputs> {
        std::mem::take(&mut self.outputs)
    }
}

impl ProbeExecutor for HttpProbeExecutor<'_> {
    async fn probe(
        &mut self,
        run: u32,
        probe: u32,
        rate_milli_rps: u64,
    ) -> Result<ProbeRecord, LoadError> {
        let spec = self.workload.rate_search();
        let sub_stream = self.workload.sub_stream_index(run, probe);
        let mut plan = ProbePlan::new(
            self.workload.sub_stream(sub_stream),
            rate_milli_rps,
            spec.warmup_requests,
            spec.min_probe_requests,
            spec.min_probe_duration_ms,
            spec.effective_request_deadline_ms(&self.sla),
        );
        plan.token_count = self.token_count;
        plan.api = Arc::clone(&self.api);
        plan.decide = self.decide.clone();
        plan.keep_token_ids(&self.keep_token_ids);
        self.progress
            .probe_started(run, probe, rate_milli_rps, plan.requests.len() as u32);
        let samples = self.client.run(self.target, &plan, self.progress).await?;
        let context = ProbeContext {
            run,
            probe,
            sub_stream,
            rate_milli_rps,
            sla: self.sla.clone(),
            send_lag_bound_us: spec.effective_send_lag_bound_us(&self.sla),
            token_count: self.token_count,
        };
        let record = summarize_probe(&context, &samples)?;
        if !self.keep_token_ids.is_empty() {
            let kept = plan
                .requests
                .iter()
                .zip(samples)
                .filter(|(planned, _)| planned.keep_token_ids)
                .map(|(_, sample)| sample)
                .collect();
            self.outputs.push(ProbeOutputs {
                run,
                probe,
                sub_stream,
                samples: kept,
            });
        }
        Ok(record)
    }
}

/// Measures one entry (content/measurement.md, Entry): `workload.runs()` rate searches against
/// `target`, each on its own sub-streams. The caller's runtime must have its time driver
/// enabled; the requests run on the load client's own runtime threads. A dead or broken
/// server does not error: its requests fail, no probe passes, and the outcome is
/// `SlaUnmet { NoPassingRate }`; a client too slow for its schedule gives `Invalid` (map
/// it to an infrastructure failure, not a disqualification). Never hangs: every request
/// has a deadline and the entry has `rate_search.entry_deadline_s`.
///
/// Errors: [`LoadError`] when the client itself cannot run (bad URL, no threads).
pub async fn measure_workload(
    target: &Target,
    workload: &Workload,
    config: &MeasureConfig,
    progress: &dyn ProgressSink,
) -> Result<EntryMeasurement, LoadError> {
    measure_workload_with_outputs(target, workload, config, progress)
        .await
        .map(|measured| measured.measurement)
}

/// As [`measure_workload`], also returning the kept outputs
/// ([`MeasureConfig::keep_token_ids`]) of each run's result probe.
///
/// Errors: as [`measure_workload`].
pub async fn measure_workload_with_outputs(
    target: &Target,
    workload: &Workload,
    config: &MeasureConfig,
    progress: &dyn ProgressSink,
) -> Result<WorkloadMeasurement, LoadError> {
    measure_runs_with_outputs(target, workload, config, 0..workload.runs(), progress).await
}

/// As [`measure_workload_with_outputs`] over the runs numbered `runs` only, each on its
/// own sub-streams: a round's pass `p` measures run `p..p + 1` of each entry on a fresh
/// engine (content/rounds.md, Passes).
///
/// Errors: as [`measure_workload`].
pub async fn measure_runs_with_outputs(
    target: &Target,
    workload: &Workload,
    config: &MeasureConfig,
    runs: std::ops::Range<u32>,
    progress: &dyn ProgressSink,
) -> Result<WorkloadMeasurement, LoadError> {
    let mut executor = HttpProbeExecutor::new(target, workload, config, progress)?;
    let measurement = search_runs(&mut executor, runs, workload.rate_search(), progress).await?;
    let mut outputs = executor.take_outputs();
    let result_outputs = measurement
        .runs
        .iter()
        .filter_map(|run| {
            // The search's result is its last passing probe (the highest passing rate).
            let probe = run
                .probes
                .iter()
                .rev()
                .find(|p| p.verdict == ProbeVerdict::Pass)?
                .probe;
            let at = outputs
                .iter()
                .position(|o| o.run == run.run && o.probe == probe)?;
            Some(outputs.swap_remove(at))
        })
        .collect();
    Ok(WorkloadMeasurement {
        measurement,
        result_outputs,
    })
}
