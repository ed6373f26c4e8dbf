//! The `decide` workload kind in a round (content/s1-pro-speed.md): the bearer token each
//! run generates and gives to its engine only, and the gate's answers taken from a
//! sidecar one fresh item at a time (an entry's, then the reference runtime's), read at
//! the campaign's pointers with `receipts::rules::decide`.

use std::time::Duration;

use rand_core::{OsRng, RngCore};
use receipts::model::DecideContract;
use receipts::rules::decide::{Answer, DecideError, fill_template, read_decision, read_vector};
use receipts::rules::workload::Item;

/// Why a sidecar's gate answers could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum DecideClientError {
    /// The request failed (refused, reset, timed out).
    #[error("decide item {index}: {message}")]
    Request {
        /// The gate item.
        index: u32,
        /// What failed.
        message: String,
    },
    /// An answer that is not 200.
    #[error("decide item {index}: HTTP {status}")]
    Status {
        /// The gate item.
        index: u32,
        /// The status.
        status: u16,
    },
    /// A body over the campaign's `limits.response_bytes`, or not JSON.
    #[error("decide item {index}: the body is not JSON within {limit} bytes")]
    BadBody {
        /// The gate item.
        index: u32,
        /// The campaign's response budget, bytes.
        limit: usize,
    },
    /// An answer that breaks the declared contract.
    #[error("decide item {index}: {source}")]
    Contract {
        /// The gate item.
        index: u32,
        /// How it breaks it.
        #[source]
        source: DecideError,
    },
    /// The whole set was not answered within the correctness deadline.
    #[error("decide answers: not all answered within the deadline of {deadline_s} s")]
    Deadline {
        /// The deadline, seconds.
        deadline_s: u64,
    },
    /// The OS gave no random bytes for the run's token.
    #[error("drawing the run's token: {0}")]
    Token(String),
}

impl DecideClientError {
    /// Whether the sidecar caused it (its answers), rather than the runner.
    pub fn is_sidecars_fault(&self) -> bool {
        !matches!(self, Self::Token(_))
    }
}

/// A fresh bearer token for one run: 32 bytes from the OS, hex.
///
/// Errors: [`DecideClientError::Token`].
pub fn run_token() -> Result<String, DecideClientError> {
    let mut bytes = [0u8; 32];
    OsRng
        .try_fill_bytes(&mut bytes)
        .map_err(|e| DecideClientError::Token(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A client of one sidecar: its decision route, the run's token, the contract.
#[derive(Debug)]
pub struct DecideClient {
    http: reqwest::Client,
    url: String,
    token: String,
    contract: DecideContract,
    template: serde_json::Value,
    response_bytes: usize,
}

impl DecideClient {
    /// A client of the sidecar at `base_url` (`http://127.0.0.1:port`) under `contract`,
    /// with the run's `token`, a per-request timeout in ms and the campaign's response
    /// budget in bytes.
    ///
    /// Errors: [`receipts::model::ModelError`] when the template is not JSON.
    pub fn new(
        base_url: &str,
        contract: &DecideContract,
        token: &str,
        timeout_ms: u64,
        response_bytes: usize,
    ) -> Result<Self, receipts::model::ModelError> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_millis(timeout_ms))
            .no_proxy()
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        Ok(Self {
            http,
            url: format!("{}{}", base_url.trim_end_matches('/'), contract.path),
            token: token.to_owned(),
            template: contract.template()?,
            contract: contract.clone(),
            response_bytes,
        })
    }

    /// The answer to `item`: one request with the filled template and the token.
    ///
    /// Errors: as [`DecideClientError`], naming the item.
    pub async fn answer(&self, item: &Item) -> Result<Answer, DecideClientError> {
        let index = item.item_index;
        let request = |e: reqwest::Error| DecideClientError::Request {
            index,
            message: e.to_string(),
        };
        let mut response = self
            .http
            .post(&self.url)
            .bearer_auth(&self.token)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(fill_template(&self.template, item).to_string())
            .send()
            .await
            .map_err(request)?;
        if response.status() != reqwest::StatusCode::OK {
            return Err(DecideClientError::Status {
                index,
                status: response.status().as_u16(),
            });
        }
        let bad_body = || DecideClientError::BadBody {
            index,
            limit: self.response_bytes,
        };
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(request)? {
            if body.len() + chunk.len() > self.response_bytes {
                return Err(bad_body());
            }
            body.extend_from_slice(&chunk);
        }
        let value = receipts::canonical::parse_strict(&body, self.response_bytes)
            .map_err(|_| bad_body())?;
        let contract = |source| DecideClientError::Contract { index, source };
        let decision = read_decision(&value, &self.contract).map_err(contract)?;
        let vector = read_vector(&value, &self.contract).map_err(contract)?;
        Ok(Answer {
            index,
            prompt_sha256: item.prompt_sha256,
            decision: self.contract.decisions[decision].clone(),
            vector,
        })
    }

    /// The status the sidecar answers `item` with when the request carries no token (the
    /// capability probe's `decideToken`: the contract's answer is 401).
    ///
    /// Errors: [`DecideClientError::Request`] when the request fails.
    pub async fn status_without_token(&self, item: &Item) -> Result<u16, DecideClientError> {
        let response = self
            .http
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(fill_template(&self.template, item).to_string())
            .send()
            .await
            .map_err(|e| DecideClientError::Request {
                index: item.item_index,
                message: e.to_string(),
            })?;
        Ok(response.status().as_u16())
    }

    /// The answers to every item, one request at a time, in order, all within
    /// `deadline`.
    ///
    /// Errors: the first item's failure, or [`DecideClientError::Deadline`].
    pub async fn answers(
        &self,
        items: &[Item],
        deadline: Duration,
    ) -> Result<Vec<Answer>, DecideClientError> {
        let all = async {
            let mut answers = Vec::with_capacity(items.len());
            for item in items {
                answers.push(self.answer(item).await?);
            }
            Ok(answers)
        };
        tokio::time::timeout(deadline, all)
            .await
            .unwrap_or_else(|_| {
                Err(DecideClientError::Deadline {
                    deadline_s: deadline.as_millis().div_ceil(1000) as u64,
                })
            })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::correctness::fake;
    use receipts::model::Sha256Hex;
    use serde_json::json;

    fn contract() -> DecideContract {
        serde_json::from_value(json!({
            "request_template": r#"{"text": "{{prompt}}", "n": "{{item_index}}"}"#,
            "decision_pointer": "/out/decision",
            "vector_pointer": "/out/logprobs",
            "decisions": ["yes", "no"],
        }))
        .unwrap()
    }

    fn item(index: u32, prompt: &str) -> Item {
        Item {
            item_index: index,
            prompt_sha256: Sha256Hex::digest(prompt.as_bytes()),
            prompt: prompt.into(),
            max_tokens: 1,
            arrival_unit_ns: 0,
        }
    }

    /// Answers `yes` to item 0 and the request's index as the `no` logprob's
    /// thousandths; `maybe` (outside the set) from item 2 on.
    fn sidecar() -> fake::Behaviour {
        Arc::new(|request| {
            let n = request["n"].as_i64().unwrap_or(-1);
            let decision = if n >= 2 { "maybe" } else { "yes" };
            Some(json!({"out": {"decision": decision, "logprobs": {
                "yes": -0.5, "no": -(n as f64) / 1000.0 - 1.0,
            }}}))
        })
    }

    #[tokio::test]
    async fn answers_are_read_at_the_pointers_and_a_decision_outside_the_set_is_typed() {
        let url = fake::serve(sidecar()).await;
        let client = DecideClient::new(&url, &contract(), "t0ken", 60_000, 1 << 20).unwrap();
        let items = [item(0, "a"), item(1, "b")];
        let answers = client
            .answers(&items, Duration::from_secs(60))
            .await
            .unwrap();
        let read: Vec<(u32, &str, Vec<i64>)> = answers
            .iter()
            .map(|a| (a.index, a.decision.as_str(), a.vector.clone()))
            .collect();
        assert_eq!(
            read,
            [
                (0, "yes", vec![-500_000, -1_000_000]),
                (1, "yes", vec![-500_000, -1_001_000])
            ]
        );
        assert_eq!(answers[1].prompt_sha256, Sha256Hex::digest(b"b"));
        let outside = client
            .answers(&[item(0, "a"), item(2, "c")], Duration::from_secs(60))
            .await
            .unwrap_err();
        assert!(outside.is_sidecars_fault());
        assert_eq!(
            outside.to_string(),
            "decide item 2: decision `maybe` is not one of the declared decisions"
        );
    }

    #[tokio::test]
    async fn a_stalled_sidecar_misses_the_deadline() {
        let url = fake::serve(fake::stalling()).await;
        let client = DecideClient::new(&url, &contract(), "t", 60_000, 1 << 20).unwrap();
        let stalled = client
            .answers(&[item(0, "a")], Duration::from_millis(100))
            .await
            .unwrap_err();
        assert!(matches!(
            stalled,
            DecideClientError::Deadline { deadline_s: 1 }
        ));
    }

    #[test]
    fn a_run_token_is_64_hex_digits_and_fresh() {
        let (a, b) = (run_token().unwrap(), run_token().unwrap());
        assert_eq!(a.len(), 64);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
