//! The `decide` workload kind (content/s1-pro-speed.md): one decision per request from a
//! sidecar on the campaign's route, the body filled from the campaign's template, the
//! answer read at its decision pointer and checked against the declared set. Timed and
//! judged exactly as a completions request (open loop, from the scheduled send, the same
//! probe summary): a decision is one output, so a probe's throughput is decisions/s.

use std::time::Instant;

use bytes::Bytes;
use http_body_util::BodyExt;
use receipts::model::{DecideContract, ModelError};
use receipts::rules::decide::{DecideError, fill_template, read_decision};
use receipts::rules::workload::Item;

use crate::{RequestErrorKind, RequestSample, ResponseBudget, classify_hyper, nanos};

/// What every decide request of a run is sent with: the campaign's contract, its parsed
/// template, and the bearer token the runner generated for this run and gave only to
/// this engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecidePlan {
    /// The campaign's `[decide]`.
    pub contract: DecideContract,
    /// Its request template, parsed.
    template: serde_json::Value,
    /// The run's bearer token.
    token: String,
}

impl DecidePlan {
    /// The plan of one run: `contract` with its template parsed, and `token`.
    ///
    /// Errors: [`ModelError::InvalidField`] when the template is not JSON.
    pub fn new(contract: DecideContract, token: String) -> Result<Self, ModelError> {
        Ok(Self {
            template: contract.template()?,
            contract,
            token,
        })
    }

    /// The request body of `item` (the template filled from it alone, so every entry of a
    /// round is sent the same bytes).
    pub fn body(&self, item: &Item) -> Bytes {
        Bytes::from(fill_template(&self.template, item).to_string())
    }

    /// The `Authorization` header's value: `Bearer <token>`.
    pub(crate) fn authorization(&self) -> String {
        format!("Bearer {}", self.token)
    }
}

/// The typed failure of a response that breaks the contract.
pub(crate) fn contract_error(error: &DecideError) -> RequestErrorKind {
    match error {
        DecideError::OutsideSet { .. } => RequestErrorKind::DecisionOutsideSet,
        DecideError::NoDecision { .. }
        | DecideError::NoVector { .. }
        | DecideError::NotFinite { .. } => RequestErrorKind::NoDecision,
    }
}

/// Reads a decide response's whole body (at most the budget's bytes), parses it with the
/// strict parser and reads its decision: on success the sample has one output, its
/// end-to-end time (and its first output at the same instant).
///
/// Errors: [`RequestErrorKind::ResponseTooLarge`] past the budget,
/// [`RequestErrorKind::BadBody`] for a body that is not JSON,
/// [`RequestErrorKind::NoDecision`] and [`RequestErrorKind::DecisionOutsideSet`], or how
/// the connection failed.
pub(crate) async fn read_response(
    body: hyper::body::Incoming,
    plan: &DecidePlan,
    budget: ResponseBudget,
    scheduled: Instant,
    sample: &mut RequestSample,
) -> Result<(), RequestErrorKind> {
    let mut body = body;
    let mut bytes = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| classify_hyper(&e))?;
        if let Some(data) = frame.data_ref() {
            if bytes.len() + data.len() > budget.bytes {
                return Err(RequestErrorKind::ResponseTooLarge);
            }
            bytes.extend_from_slice(data);
        }
    }
    let now = Instant::now();
    let value = receipts::canonical::parse_strict(&bytes, budget.bytes)
        .map_err(|_| RequestErrorKind::BadBody)?;
    read_decision(&value, &plan.contract).map_err(|e| contract_error(&e))?;
    let e2e_ns = nanos(now - scheduled);
    sample.e2e_ns = e2e_ns;
    sample.ttft_ns = Some(e2e_ns);
    sample.output_tokens = 1;
    Ok(())
}
