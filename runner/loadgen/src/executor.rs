//! The HTTP probe executor and the entry points the round executor and `referee bench
//! serve` call: one probe = one workload sub-stream sent open-loop at a fixed rate, judged
//! by [`summarize_probe`]; an entry = [`search_entry`] over such probes.

use receipts::model::{Campaign, EntryMeasurement, ProbeRecord, Sla};

use super::{
    ClientConfig, LoadClient, LoadError, ProbeContext, ProbePlan, Target, summarize_probe,
};
use crate::search::{ProbeExecutor, ProgressSink, search_entry};
use receipts::rules::workload::Workload;

/// What a measurement is judged against, beyond the workload (which carries the rate
/// search and the run count it was sized for).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MeasureConfig {
    /// The latency SLA.
    pub sla: Sla,
    /// The load client's threads and in-flight cap.
    pub client: ClientConfig,
}

impl MeasureConfig {
    /// The campaign's SLA with the default client (2 threads, no in-flight cap).
    pub fn from_campaign(campaign: &Campaign) -> Self {
        Self {
            sla: campaign.sla.clone(),
            client: ClientConfig::default(),
        }
    }
}

/// Runs probes against a live server over HTTP.
pub struct HttpProbeExecutor<'a> {
    client: LoadClient,
    target: &'a Target,
    workload: &'a Workload,
    sla: Sla,
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
            progress,
        })
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
        let plan = ProbePlan::new(
            self.workload.sub_stream(sub_stream),
            rate_milli_rps,
            spec.warmup_requests,
            spec.min_probe_requests,
            spec.min_probe_duration_ms,
            spec.effective_request_deadline_ms(&self.sla),
        );
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
        };
        summarize_probe(&context, &samples)
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
    let mut executor = HttpProbeExecutor::new(target, workload, config, progress)?;
    search_entry(
        &mut executor,
        workload.runs(),
        workload.rate_search(),
        progress,
    )
    .await
}
