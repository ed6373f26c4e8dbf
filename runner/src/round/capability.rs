//! The capability probe (content/engines.md, The capability probe): at setup, once the
//! round is opened and before any entry runs, the baseline engine is started and asked
//! one tiny request per feature the round needs under the campaign's API profile
//! ([`CapabilityFeature::ALL`], in that order). Every finding goes into the receipt; the
//! first missing one makes the round `infra_failed`
//! ([`RoundFailure::CapabilityMissing`]) and no entry runs, so no challenger is ever
//! judged on what the campaign's engine cannot do. The built-in engine's completions API
//! is not probed: it is referee's own. A `decide` campaign's baseline sidecar is probed
//! whatever serves it, for its declared contract ([`CapabilityFeature::DECIDE`]): 401
//! without the run's token, a declared decision and the compared vector at their
//! pointers (content/s1-pro-speed.md).

use std::time::{Duration, Instant};

use receipts::model::{
    ApiProfile, Backend, CAPABILITY_PROBE_STEP, CapabilityFeature, CapabilityFinding,
    CapabilityProbe, FindingStatus, Phase, RoundFailure, Step, StepStatus,
};
use receipts::rules::workload::{Item, Workload};

use super::entry::{
    decide_client, error_chain, give_token, prepare, remove_stale, request_timeout_ms,
};
use super::{Ctx, RoundError};
use crate::correctness::{ClientError, CompletionsClient};
use crate::decide::{DecideClient, DecideClientError};
use receipts::rules::decide::DecideError;
use verifier::view::format_capability_finding;

/// Generated tokens of the probe's greedy request (fewer when the campaign's correctness
/// outputs are shorter).
const GREEDY_TOKENS: u32 = 4;

/// The round's failure for a probe with a missing finding: its first one.
pub(crate) fn failure(probe: &CapabilityProbe) -> Option<RoundFailure> {
    probe
        .first_missing()
        .map(|finding| RoundFailure::CapabilityMissing {
            feature: finding.feature,
            field: finding.field.clone().unwrap_or_default(),
        })
}

/// Runs the probe as its own setup step (`Probing the baseline engine's API`) and returns
/// its findings with the step; `None` for a completions campaign on the built-in
/// backend, which is not probed.
///
/// Errors: [`RoundError`] when the step log cannot be written, the baseline tree cannot
/// be prepared, or a decision sidecar cannot be given its token (the round stops at
/// setup; nothing of it ran).
pub(crate) fn probe_baseline(
    ctx: &mut Ctx<'_>,
    workload: &Workload,
) -> Result<Option<(CapabilityProbe, Step)>, RoundError> {
    let decide = ctx.frozen.campaign.decide.is_some();
    if matches!(ctx.frozen.campaign.backend, Backend::Builtin) && !decide {
        return Ok(None);
    }
    let mut step = ctx
        .steps
        .begin("Setup", CAPABILITY_PROBE_STEP, Phase::StartingEngine);
    let started = Instant::now();
    let engine_log = ctx.bundle.join("logs/engines/capability-probe.log");
    let record_error = |e: &dyn std::error::Error| RoundError::Record {
        round: ctx.round,
        message: format!("capability probe: {}", error_chain(e)),
    };
    remove_stale(&[&engine_log]).map_err(|e| record_error(&e))?;
    let tree = prepare(ctx, None, "trees/capability").map_err(|e| record_error(&e))?;
    let api = ctx.frozen.campaign.api_profile();
    match &ctx.frozen.campaign.decide {
        Some(contract) => step.line(&format!(
            "decision sidecar: `POST {}` with the run's token, readiness on `{}`, {} declared \
             decisions",
            contract.path,
            contract.health_path,
            contract.decisions.len()
        )),
        None => step.line(&format!(
            "profile {}, tokens counted by {:?}, token ids from {:?}",
            api.name.map_or("default", |n| n.as_str()),
            api.token_count,
            api.token_ids
        )),
    }
    let mut engine = ctx
        .engines
        .backend
        .engine(&tree.root, &tree.config, &engine_log, None);
    // A decision sidecar gets a token of its own, as every run's engine does.
    let token = match decide {
        true => Some(give_token(engine.as_mut()).map_err(|e| record_error(&e))?),
        false => None,
    };
    ctx.engines.started();
    let ready = engine.start().and_then(|()| {
        engine.wait_healthy(Duration::from_secs(ctx.frozen.campaign.health_deadline_s))
    });
    let findings = match (ready, token) {
        (Err(e), _) if decide => sidecar_not_ready(&error_chain(&e), ctx),
        (Err(e), _) => not_ready(&error_chain(&e), &api),
        (Ok(()), Some(token)) => {
            let endpoint = engine.endpoint().unwrap_or_default();
            let asked = decide_client(ctx, &endpoint, &token).map(|client| {
                let item = workload.correctness_items().into_iter().next();
                let path = ctx.frozen.campaign.decide.as_ref().map(|c| &c.health_path);
                let mut findings = vec![finding(
                    CapabilityFeature::Readiness,
                    FindingStatus::Ok,
                    format!("ready on `{}`", path.map_or("", |p| p.as_str())),
                    None,
                )];
                findings.extend(ctx.runtime.block_on(ask_sidecar(&client, item.as_ref())));
                findings
            });
            match asked {
                Ok(findings) => findings,
                Err(error) => {
                    // The contract was validated when the campaign was frozen.
                    if let Err(e) = engine.stop() {
                        step.line(&format!("stopping the engine failed: {}", error_chain(&e)));
                    }
                    ctx.engines.stopped();
                    return Err(RoundError::Record {
                        round: ctx.round,
                        message: format!("capability probe: {}", error_chain(&error)),
                    });
                }
            }
        }
        (Ok(()), None) => {
            let endpoint = engine.endpoint().unwrap_or_default();
            let asked = Asked {
                endpoint: &endpoint,
                model: &ctx.frozen.campaign.model.name,
                api: &api,
                top_k: ctx.frozen.campaign.correctness.top_k,
                greedy_tokens: GREEDY_TOKENS.min(ctx.frozen.campaign.correctness.output_tokens),
                timeout_ms: request_timeout_ms(ctx),
            };
            let mut findings = vec![finding(
                CapabilityFeature::Readiness,
                FindingStatus::Ok,
                format!("ready on one of {:?}", api.readiness),
                None,
            )];
            findings.extend(ctx.runtime.block_on(ask(&asked, workload)));
            findings
        }
    };
    let stopped = engine.stop();
    ctx.engines.stopped();
    if let Err(e) = stopped {
        step.line(&format!("stopping the engine failed: {}", error_chain(&e)));
    }
    let probe = CapabilityProbe {
        findings,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    };
    for f in &probe.findings {
        step.line(&format_capability_finding(f));
    }
    step.line(&format!("probe took {} ms", probe.duration_ms));
    let status = if probe.first_missing().is_some() {
        StepStatus::Failed
    } else {
        StepStatus::Ok
    };
    let step = ctx.steps.finish(step, status)?;
    Ok(Some((probe, step)))
}

fn finding(
    feature: CapabilityFeature,
    status: FindingStatus,
    detail: String,
    field: Option<&str>,
) -> CapabilityFinding {
    CapabilityFinding {
        feature,
        status,
        detail,
        field: field.map(str::to_owned),
    }
}

/// The findings of an engine that never became ready: readiness missing, the rest not
/// asked.
fn not_ready(reason: &str, api: &ApiProfile) -> Vec<CapabilityFinding> {
    let mut findings = vec![finding(
        CapabilityFeature::Readiness,
        FindingStatus::Missing,
        format!(
            "not ready on any of {:?} within the health deadline: {reason}",
            api.readiness
        ),
        Some("backend.api.readiness"),
    )];
    findings.extend(not_asked(
        &CapabilityFeature::ALL[1..],
        "the engine was not ready",
        api,
    ));
    findings
}

/// The findings of a decision sidecar that never became ready: readiness missing on the
/// contract's health route, the rest not asked.
fn sidecar_not_ready(reason: &str, ctx: &Ctx<'_>) -> Vec<CapabilityFinding> {
    let path = ctx.frozen.campaign.decide.as_ref().map(|c| &c.health_path);
    let mut findings = vec![finding(
        CapabilityFeature::Readiness,
        FindingStatus::Missing,
        format!(
            "not ready on `{}` within the health deadline: {reason}",
            path.map_or("", |p| p.as_str())
        ),
        Some("decide.health_path"),
    )];
    findings.extend(CapabilityFeature::DECIDE[1..].iter().map(|f| {
        finding(
            *f,
            FindingStatus::NotAsked,
            "the sidecar was not ready".into(),
            None,
        )
    }));
    findings
}

/// The `decideToken` finding of the sidecar `client` asks, from `item` sent without the
/// run's token: ok on 401; missing on a 2xx (a sidecar that does not check the token,
/// `baseline.commit`) and on any other answer or a failed request (a route that is not
/// the contract's, `decide.path`). Every entry's sidecar is asked the same before it is
/// timed ([`super::entry`]).
pub(crate) async fn token_refused(client: &DecideClient, item: &Item) -> CapabilityFinding {
    let feature = CapabilityFeature::DecideToken;
    match client.status_without_token(item).await {
        Ok(401) => finding(
            feature,
            FindingStatus::Ok,
            "401 without the run's token".into(),
            None,
        ),
        Ok(status @ 200..=299) => finding(
            feature,
            FindingStatus::Missing,
            format!("answered {status} without the run's token: the sidecar does not check it"),
            Some("baseline.commit"),
        ),
        Ok(status) => finding(
            feature,
            FindingStatus::Missing,
            format!("answered {status} without the run's token, not 401"),
            Some("decide.path"),
        ),
        Err(e) => finding(
            feature,
            FindingStatus::Missing,
            error_chain(&e),
            Some("decide.path"),
        ),
    }
}

/// A decision sidecar's findings after readiness, in [`CapabilityFeature::DECIDE`]
/// order, asked with the gate's first item: the route refuses it without the run's token
/// (401; 2xx is a baseline that does not check the token, anything else a route that is
/// not the contract's), then answers it with the token with a declared decision and the
/// compared vector at the campaign's pointers.
async fn ask_sidecar(client: &DecideClient, item: Option<&Item>) -> Vec<CapabilityFinding> {
    let Some(item) = item else {
        return CapabilityFeature::DECIDE[1..]
            .iter()
            .map(|f| {
                finding(
                    *f,
                    FindingStatus::NotAsked,
                    "the gate has no item".into(),
                    None,
                )
            })
            .collect();
    };
    let token = token_refused(client, item).await;
    let missing = |feature, e: &DecideClientError, field: &str| {
        finding(feature, FindingStatus::Missing, error_chain(e), Some(field))
    };
    let (decision, vector) = match client.answer(item).await {
        Ok(answer) => (
            finding(
                CapabilityFeature::DecideDecision,
                FindingStatus::Ok,
                format!("decision `{}`, one of the declared", answer.decision),
                None,
            ),
            finding(
                CapabilityFeature::DecideVector,
                FindingStatus::Ok,
                format!("{} finite log-probabilities", answer.vector.len()),
                None,
            ),
        ),
        Err(
            e @ DecideClientError::Contract {
                source: DecideError::NoVector { .. } | DecideError::NotFinite { .. },
                ..
            },
        ) => (
            finding(
                CapabilityFeature::DecideDecision,
                FindingStatus::Ok,
                "a declared decision".into(),
                None,
            ),
            missing(CapabilityFeature::DecideVector, &e, "decide.vector_pointer"),
        ),
        Err(e) => {
            let field = match &e {
                DecideClientError::Contract {
                    source: DecideError::NoDecision { .. },
                    ..
                } => "decide.decision_pointer",
                DecideClientError::Contract {
                    source: DecideError::OutsideSet { .. },
                    ..
                } => "decide.decisions",
                DecideClientError::Status { status: 400, .. } => "decide.request_template",
                _ => "decide.path",
            };
            (
                missing(CapabilityFeature::DecideDecision, &e, field),
                finding(
                    CapabilityFeature::DecideVector,
                    FindingStatus::NotAsked,
                    "the request with the token got no declared decision".into(),
                    None,
                ),
            )
        }
    };
    vec![token, decision, vector]
}

/// `features` not asked because of `why`; those the profile does not need
/// ([`CapabilityFeature::needed`]) are `not_needed` whatever happened.
fn not_asked(
    features: &[CapabilityFeature],
    why: &str,
    api: &ApiProfile,
) -> Vec<CapabilityFinding> {
    features
        .iter()
        .map(|f| {
            if f.needed(api) {
                finding(*f, FindingStatus::NotAsked, why.to_owned(), None)
            } else {
                not_needed(*f)
            }
        })
        .collect()
}

/// The finding of a feature the profile does not need.
fn not_needed(feature: CapabilityFeature) -> CapabilityFinding {
    let detail = match feature {
        CapabilityFeature::TokenIdPrompts => {
            "the profile sends no token-id prompts (token_id_prompts = false): teacher \
             forcing goes through text (textRoundTrip)"
        }
        CapabilityFeature::TextRoundTrip => {
            "prompts may be token ids (token_id_prompts = true): teacher forcing sends ids"
        }
        _ => "not needed under this profile",
    };
    finding(feature, FindingStatus::NotNeeded, detail.into(), None)
}

/// What the probe's requests are made of.
struct Asked<'a> {
    endpoint: &'a str,
    model: &'a str,
    api: &'a ApiProfile,
    top_k: u32,
    greedy_tokens: u32,
    timeout_ms: u64,
}

/// The findings after readiness, in [`CapabilityFeature::ALL`] order.
async fn ask(asked: &Asked<'_>, workload: &Workload) -> Vec<CapabilityFinding> {
    let mut findings = streamed(asked, workload).await;
    let client = CompletionsClient::new(asked.endpoint, asked.model, asked.timeout_ms)
        .with_api(asked.api.clone());
    let prompt = workload
        .correctness_items()
        .into_iter()
        .next()
        .map(|item| item.prompt)
        .unwrap_or_default();
    let greedy = match client
        .greedy(&prompt, asked.greedy_tokens, asked.top_k)
        .await
    {
        Ok(out) => out,
        Err(e) => {
            findings.push(client_missing(
                CapabilityFeature::TopKLogprobs,
                &e,
                "backend.api.token_ids",
            ));
            findings.extend(not_asked(
                &CapabilityFeature::ALL[4..],
                "the greedy request with logprobs failed",
                asked.api,
            ));
            return findings;
        }
    };
    let short = greedy
        .top_k
        .iter()
        .enumerate()
        .map(|(i, top)| {
            let mut ids: Vec<u32> = top.iter().map(|(id, _)| *id).collect();
            ids.sort_unstable();
            ids.dedup();
            (i, ids.len())
        })
        .find(|(_, distinct)| *distinct < asked.top_k as usize);
    findings.push(match short {
        Some((position, distinct)) => finding(
            CapabilityFeature::TopKLogprobs,
            FindingStatus::Missing,
            format!(
                "generated position {position}: {distinct} distinct token ids in \
                 top_logprobs, {} asked (logprobs keyed by token text collide)",
                asked.top_k
            ),
            Some("backend.api.token_ids"),
        ),
        None => finding(
            CapabilityFeature::TopKLogprobs,
            FindingStatus::Ok,
            format!(
                "{} generated tokens, each position with at least {} distinct token ids",
                greedy.token_ids.len(),
                asked.top_k
            ),
            None,
        ),
    });
    findings.push(echoed(asked.api, &greedy.prompt_token_ids));
    let ids = greedy.prompt_token_ids.len() + greedy.token_ids.len();
    for (feature, how) in [
        (
            CapabilityFeature::TokenIdPrompts,
            format!("a token-id prompt of {ids} ids echoed back unchanged"),
        ),
        (
            CapabilityFeature::TextRoundTrip,
            format!(
                "the text of {ids} ids tokenizes back to them and, sent as the prompt, is \
                 echoed as them"
            ),
        ),
    ] {
        if !feature.needed(asked.api) {
            findings.push(not_needed(feature));
            continue;
        }
        // The client teacher-forces through ids or text, as the profile says.
        let forced = client
            .teacher_forced(&greedy.prompt_token_ids, &greedy.token_ids, asked.top_k)
            .await;
        findings.push(match forced {
            Ok(_) => finding(feature, FindingStatus::Ok, how, None),
            Err(e) => client_missing(feature, &e, "backend.api.token_id_prompts"),
        });
    }
    findings
}

/// A failed correctness-client request as a missing finding: the profile field its
/// error names, else `field`.
fn client_missing(
    feature: CapabilityFeature,
    error: &ClientError,
    field: &'static str,
) -> CapabilityFinding {
    let field = match error {
        ClientError::Unsupported { field, .. } => field,
        _ => field,
    };
    finding(
        feature,
        FindingStatus::Missing,
        error_chain(error),
        Some(field),
    )
}

/// The echoed prompt (BOS put back under `bos = "stripped"`): with a `bos_token_id`, it
/// starts with exactly one BOS.
fn echoed(api: &ApiProfile, prompt: &[u32]) -> CapabilityFinding {
    let feature = CapabilityFeature::EchoedPrompt;
    let Some(bos) = api.bos_token_id else {
        return finding(
            feature,
            FindingStatus::Ok,
            format!(
                "{} prompt tokens echoed (the profile names no bos_token_id: BOS not checked)",
                prompt.len()
            ),
            None,
        );
    };
    match prompt.iter().take_while(|id| **id == bos).count() {
        1 => finding(
            feature,
            FindingStatus::Ok,
            format!(
                "{} prompt tokens echoed, BOS {bos} once in front",
                prompt.len()
            ),
            None,
        ),
        0 => finding(
            feature,
            FindingStatus::Missing,
            format!(
                "the echoed prompt does not start with BOS {bos} (its first id: {:?}): the \
                 echo strips it",
                prompt.first()
            ),
            Some("backend.api.bos"),
        ),
        n => finding(
            feature,
            FindingStatus::Missing,
            format!("the echoed prompt starts with BOS {bos} {n} times: the echo keeps it"),
            Some("backend.api.bos"),
        ),
    }
}

/// The streamed request of the workload's first item, counted as every probe's request
/// is ([`loadgen::count_stream`]): `streamedLength` and `usageAgreement`.
async fn streamed(asked: &Asked<'_>, workload: &Workload) -> Vec<CapabilityFinding> {
    let Some(item) = workload.sub_stream(0).into_iter().next() else {
        return not_asked(
            &CapabilityFeature::ALL[1..3],
            "the workload has no item",
            asked.api,
        );
    };
    let body = loadgen::request_body(asked.model, &item, asked.api);
    let url = format!("{}/v1/completions", asked.endpoint.trim_end_matches('/'));
    let http = reqwest::Client::builder()
        .timeout(Duration::from_millis(asked.timeout_ms))
        .no_proxy()
        .build()
        .unwrap_or_else(|_| reqwest::Client::new());
    let answer = async {
        let response = http
            .post(&url)
            .header("content-type", "application/json")
            .body(body.to_vec())
            .send()
            .await
            .map_err(|e| format!("POST `{url}`: {}", error_chain(&e)))?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| format!("POST `{url}`: {}", error_chain(&e)))?;
        if !status.is_success() {
            let text: String = String::from_utf8_lossy(&bytes).chars().take(300).collect();
            return Err(format!("POST `{url}`: status {}: {text}", status.as_u16()));
        }
        Ok(bytes)
    }
    .await;
    let bytes = match answer {
        Ok(bytes) => bytes,
        Err(detail) => {
            return vec![
                finding(
                    CapabilityFeature::StreamedLength,
                    FindingStatus::Missing,
                    detail,
                    Some("backend.api.extra"),
                ),
                finding(
                    CapabilityFeature::UsageAgreement,
                    FindingStatus::NotAsked,
                    "the streamed request failed".into(),
                    None,
                ),
            ];
        }
    };
    let (sample, usage) = loadgen::count_stream(&bytes, asked.api, item.max_tokens);
    let why = sample.failure().unwrap_or_default();
    let mode = format!("{:?}", asked.api.token_count).to_lowercase();
    use loadgen::RequestErrorKind as Kind;
    let length = match sample.error {
        None | Some(Kind::UsageMismatch | Kind::MissingUsage) => finding(
            CapabilityFeature::StreamedLength,
            FindingStatus::Ok,
            format!(
                "{} tokens counted by {mode}, asked {}",
                sample.output_tokens, item.max_tokens
            ),
            None,
        ),
        Some(Kind::NoTokenIds) => finding(
            CapabilityFeature::StreamedLength,
            FindingStatus::Missing,
            format!(
                "{why}: the stream carries no tokens to count by {mode} (a server without \
                 streamed token ids needs token_count = \"usage\" or \"logprobs\")"
            ),
            Some("backend.api.token_count"),
        ),
        Some(_) => finding(
            CapabilityFeature::StreamedLength,
            FindingStatus::Missing,
            format!("{why} (EOS suppression: ignore_eos or min_tokens)"),
            Some("backend.api.extra"),
        ),
    };
    let agreement = match (sample.error, usage) {
        (Some(Kind::UsageMismatch), Some(reported)) => finding(
            CapabilityFeature::UsageAgreement,
            FindingStatus::Missing,
            format!(
                "usage.completion_tokens {reported}, {} tokens counted by {mode}",
                sample.output_tokens
            ),
            Some("backend.api.token_count"),
        ),
        (Some(Kind::MissingUsage), _) => finding(
            CapabilityFeature::UsageAgreement,
            FindingStatus::Missing,
            "no usage.completion_tokens on the stream, which token_count = \"usage\" counts".into(),
            Some("backend.api.token_count"),
        ),
        (_, Some(reported)) => finding(
            CapabilityFeature::UsageAgreement,
            FindingStatus::Ok,
            format!("usage.completion_tokens {reported}"),
            None,
        ),
        (_, None) => finding(
            CapabilityFeature::UsageAgreement,
            FindingStatus::Ok,
            format!("no usage reported (not needed when counting by {mode})"),
            None,
        ),
    };
    vec![length, agreement]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How a fake decision sidecar behaves.
    #[derive(Clone, Copy)]
    enum Sidecar {
        /// The contract: 401 without the token, a declared decision and its vector.
        Honest,
        /// Answers without the token, as with it (a sidecar anyone on the host can ask).
        IgnoresToken,
        /// Answers `maybe`, outside the declared set.
        OutsideSet,
        /// Answers a decision but no vector.
        NoVector,
        /// Serves its decisions on another route: 404 on the contract's.
        OtherRoute,
    }

    /// Serves `sidecar` on 127.0.0.1 with token `t0ken` and returns its base URL.
    async fn serve(sidecar: Sidecar) -> String {
        use axum::http::{HeaderMap, StatusCode};
        use axum::response::IntoResponse;
        let route = match sidecar {
            Sidecar::OtherRoute => "/v2/decide",
            _ => "/internal/v1/decide",
        };
        let app = axum::Router::new().route(
            route,
            axum::routing::post(move |headers: HeaderMap| async move {
                let authorized = headers
                    .get("authorization")
                    .is_some_and(|v| v.as_bytes() == b"Bearer t0ken");
                let answer = match sidecar {
                    _ if !authorized && !matches!(sidecar, Sidecar::IgnoresToken) => {
                        return StatusCode::UNAUTHORIZED.into_response();
                    }
                    Sidecar::OutsideSet => serde_json::json!({"decision": "maybe"}),
                    Sidecar::NoVector => serde_json::json!({"decision": "yes"}),
                    _ => serde_json::json!({"decision": "no",
                        "logprobs": {"yes": -1.5, "no": -0.25}}),
                };
                axum::Json(answer).into_response()
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    }

    /// The findings of the probe of `sidecar` after readiness: (feature, status, field).
    async fn probed(
        sidecar: Sidecar,
    ) -> (
        Vec<(CapabilityFeature, FindingStatus, Option<String>)>,
        Vec<String>,
    ) {
        let contract: receipts::model::DecideContract = serde_json::from_value(serde_json::json!({
            "request_template": r#"{"prompt": "{{prompt}}"}"#,
            "decision_pointer": "/decision",
            "vector_pointer": "/logprobs",
            "decisions": ["yes", "no"],
        }))
        .unwrap();
        let client =
            DecideClient::new(&serve(sidecar).await, &contract, "t0ken", 60_000, 1 << 20).unwrap();
        let item = Item {
            item_index: 0,
            prompt_sha256: receipts::model::Sha256Hex::digest(b"p"),
            prompt: "p".into(),
            max_tokens: 1,
            arrival_unit_ns: 0,
        };
        let findings = ask_sidecar(&client, Some(&item)).await;
        let details = findings.iter().map(|f| f.detail.clone()).collect();
        let findings = findings
            .into_iter()
            .map(|f| (f.feature, f.status, f.field))
            .collect();
        (findings, details)
    }

    #[tokio::test]
    async fn an_honest_sidecar_keeps_the_contract() {
        use CapabilityFeature::*;
        let (findings, details) = probed(Sidecar::Honest).await;
        assert_eq!(
            findings,
            [
                (DecideToken, FindingStatus::Ok, None),
                (DecideDecision, FindingStatus::Ok, None),
                (DecideVector, FindingStatus::Ok, None),
            ]
        );
        assert_eq!(
            details,
            [
                "401 without the run's token",
                "decision `no`, one of the declared",
                "2 finite log-probabilities",
            ]
        );
    }

    /// The hostile sidecars: each breaks one part of the contract, and the probe names
    /// that part and the campaign field that fixes it; the round's failure is the first.
    #[tokio::test]
    async fn a_sidecar_breaking_the_contract_is_found_missing_with_its_field() {
        use CapabilityFeature::*;
        let missing = |f, field: &str| (f, FindingStatus::Missing, Some(field.to_owned()));
        let ok = |f| (f, FindingStatus::Ok, None);
        let not_asked = |f| (f, FindingStatus::NotAsked, None);
        let (ignores, details) = probed(Sidecar::IgnoresToken).await;
        assert_eq!(
            ignores,
            [
                missing(DecideToken, "baseline.commit"),
                ok(DecideDecision),
                ok(DecideVector)
            ]
        );
        assert_eq!(
            details[0],
            "answered 200 without the run's token: the sidecar does not check it"
        );
        assert_eq!(
            probed(Sidecar::OutsideSet).await.0,
            [
                ok(DecideToken),
                missing(DecideDecision, "decide.decisions"),
                not_asked(DecideVector)
            ]
        );
        assert_eq!(
            probed(Sidecar::NoVector).await.0,
            [
                ok(DecideToken),
                ok(DecideDecision),
                missing(DecideVector, "decide.vector_pointer")
            ]
        );
        let (other, details) = probed(Sidecar::OtherRoute).await;
        assert_eq!(
            other,
            [
                missing(DecideToken, "decide.path"),
                missing(DecideDecision, "decide.path"),
                not_asked(DecideVector)
            ]
        );
        assert_eq!(details[0], "answered 404 without the run's token, not 401");
        let probe = CapabilityProbe {
            findings: ignores
                .into_iter()
                .map(|(feature, status, field)| CapabilityFinding {
                    feature,
                    status,
                    detail: String::new(),
                    field,
                })
                .collect(),
            duration_ms: 1,
        };
        assert_eq!(
            failure(&probe),
            Some(RoundFailure::CapabilityMissing {
                feature: DecideToken,
                field: "baseline.commit".into(),
            })
        );
    }

    /// With a `bos_token_id`, the echo (BOS put back under `bos = "stripped"`) must start
    /// with exactly one BOS: none is a stripping echo the profile does not say, two an
    /// echo that keeps the BOS the profile says it strips.
    #[test]
    fn the_echo_starts_with_one_bos() {
        let api = ApiProfile {
            bos_token_id: Some(1),
            ..ApiProfile::default()
        };
        let once = echoed(&api, &[1, 40, 41]);
        assert_eq!(
            (once.status, once.detail.as_str()),
            (
                FindingStatus::Ok,
                "3 prompt tokens echoed, BOS 1 once in front"
            )
        );
        let none = echoed(&api, &[40, 41]);
        assert_eq!(none.status, FindingStatus::Missing);
        assert_eq!(none.field.as_deref(), Some("backend.api.bos"));
        assert_eq!(
            none.detail,
            "the echoed prompt does not start with BOS 1 (its first id: Some(40)): the echo \
             strips it"
        );
        let twice = echoed(&api, &[1, 1, 40]);
        assert_eq!(
            twice.detail,
            "the echoed prompt starts with BOS 1 2 times: the echo keeps it"
        );
        let unchecked = echoed(&ApiProfile::default(), &[40]);
        assert_eq!(unchecked.status, FindingStatus::Ok);
    }

    #[test]
    fn a_probe_fails_the_round_on_its_first_missing_finding() {
        let found = |feature, status, field: Option<&str>| CapabilityFinding {
            feature,
            status,
            detail: String::new(),
            field: field.map(str::to_owned),
        };
        let probe = CapabilityProbe {
            findings: vec![
                found(CapabilityFeature::Readiness, FindingStatus::Ok, None),
                found(
                    CapabilityFeature::StreamedLength,
                    FindingStatus::Missing,
                    Some("backend.api.token_count"),
                ),
                found(
                    CapabilityFeature::UsageAgreement,
                    FindingStatus::Missing,
                    Some("backend.api.token_count"),
                ),
            ],
            duration_ms: 1,
        };
        assert_eq!(
            failure(&probe),
            Some(RoundFailure::CapabilityMissing {
                feature: CapabilityFeature::StreamedLength,
                field: "backend.api.token_count".into(),
            })
        );
    }
}
