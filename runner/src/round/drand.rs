//! drand quicknet over HTTP, a [`Beacon`] (content/measurement.md, Seeds): at opening
//! the round names the first quicknet round at least two periods ahead of its clock, so
//! the value does not exist yet when the evaluator commits to its secret; the value is
//! then fetched from a drand HTTP endpoint (`<base>/<chain hash>/public/<round>`) once
//! that round's time has come, and checked with `verifier::beacon` (its BLS signature
//! against the chain's public key, its value sha256 of the signature) before it is used.
//! The endpoint is trusted for nothing: a value it forges does not verify. Over HTTPS
//! the endpoint's certificate is checked against the system's roots, or a CA file.

use std::path::Path;
use std::time::Duration;

use receipts::fsutil::read_limited;
use receipts::model::{BeaconRecord, BeaconSource, Seed32, Timestamp};
use serde::Deserialize;
use verifier::beacon::{
    QUICKNET_CHAIN_HASH, QUICKNET_GENESIS_S, QUICKNET_PERIOD_MS, check_beacon,
    quicknet_round_time_ms as round_time_ms,
};

use super::beacon::{Beacon, BeaconError};
use super::clock::Clock;

/// quicknet's period: a round every 3 s.
pub const QUICKNET_PERIOD: Duration = Duration::from_millis(QUICKNET_PERIOD_MS);
/// How many periods past a round's time the source keeps asking for it.
const MAX_LATE_PERIODS: u32 = 20;
/// The largest response read, bytes.
const MAX_RESPONSE_BYTES: usize = 4096;
/// The largest CA file read, bytes.
const MAX_CA_FILE_BYTES: usize = 1 << 20;

/// The first quicknet round whose time is at least two periods after `now_ms`
/// (milliseconds since the Unix epoch): the round a round opened at `now_ms` names.
pub fn first_round_two_periods_after(now_ms: i64) -> u64 {
    let period = QUICKNET_PERIOD.as_millis() as i64;
    let from_genesis = now_ms + 2 * period - QUICKNET_GENESIS_S * 1000;
    if from_genesis <= 0 {
        return 1;
    }
    // Smallest r with (r − 1)·period ≥ from_genesis.
    (from_genesis as u64).div_ceil(period as u64) + 1
}

/// A drand quicknet endpoint over HTTP (`--beacon-drand <URL>`).
#[derive(Clone, Debug)]
pub struct DrandHttpBeacon {
    /// The endpoint's base URL, without a trailing slash (`http://127.0.0.1:8080`,
    /// `https://api.drand.sh`).
    base: String,
    /// The round's clock: what "now" is when the round opens and waits.
    clock: Clock,
    http: reqwest::Client,
}

/// A `/public/<round>` response, as drand publishes it.
#[derive(Deserialize)]
struct PublicRound {
    round: u64,
    randomness: Seed32,
    signature: String,
}

impl DrandHttpBeacon {
    /// The quicknet endpoint at `base` (`http://` or `https://`), its rounds named and
    /// awaited by `clock`; over HTTPS the server is checked against the PEM certificates
    /// of `ca_file` instead of the system's roots when it is given (`--beacon-ca-file`,
    /// as `ingest --ca-file` does for repositories).
    ///
    /// Errors: [`BeaconError::Http`] when the CA file does not read, parse or hold a
    /// certificate, or the HTTP client cannot be built.
    pub fn new(base: &str, clock: Clock, ca_file: Option<&Path>) -> Result<Self, BeaconError> {
        let http_error = |message: String| BeaconError::Http {
            url: base.to_owned(),
            message,
        };
        // No idle-pool timer: nothing but the wait for the round runs on the clock.
        let mut builder = reqwest::Client::builder().pool_idle_timeout(None);
        if let Some(ca_file) = ca_file {
            let pem = read_limited(ca_file, MAX_CA_FILE_BYTES)
                .map_err(|e| http_error(format!("reading `{}`: {e}", ca_file.display())))?;
            let certificates = reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|e| http_error(format!("`{}`: {e}", ca_file.display())))?;
            if certificates.is_empty() {
                return Err(http_error(format!(
                    "`{}` holds no PEM certificate",
                    ca_file.display()
                )));
            }
            builder = builder.tls_built_in_root_certs(false);
            for certificate in certificates {
                builder = builder.add_root_certificate(certificate);
            }
        }
        let http = builder.build().map_err(|e| http_error(e.to_string()))?;
        Ok(Self {
            base: base.trim_end_matches('/').to_owned(),
            clock,
            http,
        })
    }

    /// The URL of round `round`'s value.
    fn url(&self, round: u64) -> String {
        format!("{}/{QUICKNET_CHAIN_HASH}/public/{round}", self.base)
    }

    /// Waits until round `round`'s time by the round's clock, then asks for its value
    /// once a period until it is published (at most 20 periods past its time), and
    /// checks it offline.
    ///
    /// Errors: [`BeaconError::Http`] when the endpoint cannot be reached or answers
    /// otherwise than with the value; [`BeaconError::NotPublished`] past the bound;
    /// [`BeaconError::Invalid`] when the value does not verify or is another round's.
    pub async fn fetch(&self, round: u64) -> Result<BeaconRecord, BeaconError> {
        let wait_ms = round_time_ms(round) - unix_ms(self.clock.now());
        if wait_ms > 0 {
            tokio::time::sleep(Duration::from_millis(wait_ms as u64)).await;
        }
        let url = self.url(round);
        let http_error = |message: String| BeaconError::Http {
            url: url.clone(),
            message,
        };
        for attempt in 0..=MAX_LATE_PERIODS {
            if attempt > 0 {
                tokio::time::sleep(QUICKNET_PERIOD).await;
            }
            let response =
                (self.http.get(&url).send().await).map_err(|e| http_error(e.to_string()))?;
            let status = response.status();
            // Not produced yet (drand answers 425 Too Early or 404 for a future round).
            if status == reqwest::StatusCode::NOT_FOUND || status.as_u16() == 425 {
                continue;
            }
            if !status.is_success() {
                return Err(http_error(format!("status {status}")));
            }
            let bytes = response
                .bytes()
                .await
                .map_err(|e| http_error(e.to_string()))?;
            if bytes.len() > MAX_RESPONSE_BYTES {
                return Err(http_error(format!(
                    "a response of {} bytes, more than {MAX_RESPONSE_BYTES}",
                    bytes.len()
                )));
            }
            let published: PublicRound =
                serde_json::from_slice(&bytes).map_err(|e| http_error(e.to_string()))?;
            let record = BeaconRecord {
                source: BeaconSource::DrandQuicknet,
                round: published.round,
                value: published.randomness,
                signature: Some(published.signature.to_ascii_lowercase()),
            };
            if record.round != round {
                return Err(BeaconError::Invalid {
                    round,
                    message: format!("the endpoint answered round {}", record.round),
                });
            }
            check_beacon(&record).map_err(|e| BeaconError::Invalid {
                round,
                message: e.to_string(),
            })?;
            return Ok(record);
        }
        Err(BeaconError::NotPublished {
            url,
            waited_periods: MAX_LATE_PERIODS,
        })
    }
}

/// `at` in milliseconds since the Unix epoch.
fn unix_ms(at: Timestamp) -> i64 {
    (at.datetime().unix_timestamp_nanos() / 1_000_000) as i64
}

impl Beacon for DrandHttpBeacon {
    fn source(&self) -> BeaconSource {
        BeaconSource::DrandQuicknet
    }

    fn next_round(&self) -> Result<u64, BeaconError> {
        Ok(first_round_two_periods_after(unix_ms(self.clock.now())))
    }

    fn value(&self, round: u64) -> Result<BeaconRecord, BeaconError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| BeaconError::Http {
                url: self.url(round),
                message: format!("starting the HTTP runtime: {e}"),
            })?;
        runtime.block_on(self.fetch(round))
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;
    use std::sync::{Arc, Mutex};

    use super::*;

    /// drand quicknet round 657413 as its `/public/657413` publishes it.
    const ROUND_657413: &str = include_str!("../../tests/data/drand-quicknet-657413.json");
    /// drand quicknet round 123 (drand-verify's test vector), `randomness` its
    /// signature's sha256.
    const ROUND_123: &str = include_str!("../../tests/data/drand-quicknet-123.json");

    #[test]
    fn rounds_are_named_two_periods_ahead() {
        let genesis = QUICKNET_GENESIS_S * 1000;
        assert_eq!(round_time_ms(1), genesis);
        assert_eq!(round_time_ms(657_413), 1_694_775_603_000);
        // At round 1's time: round 3 is exactly two periods later.
        assert_eq!(first_round_two_periods_after(genesis), 3);
        // One millisecond later, round 3 is less than two periods away: round 4.
        assert_eq!(first_round_two_periods_after(genesis + 1), 4);
        assert_eq!(first_round_two_periods_after(genesis + 2_999), 4);
        assert_eq!(first_round_two_periods_after(genesis + 3_000), 4);
        assert_eq!(first_round_two_periods_after(1_694_775_597_000), 657_413);
        assert_eq!(first_round_two_periods_after(1_694_775_597_001), 657_414);
        assert_eq!(first_round_two_periods_after(0), 1);
    }

    /// A drand HTTP endpoint on 127.0.0.1 serving `body` for `path`, answering 404 to
    /// the first `not_yet` requests (a round not produced yet); the paths asked, in order.
    fn serve(
        path: String,
        body: &'static str,
        not_yet: usize,
    ) -> (String, Arc<Mutex<Vec<String>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let asked = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&asked);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut line = String::new();
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                if reader.read_line(&mut line).is_err() {
                    continue;
                }
                // Skip the headers.
                let mut header = String::new();
                while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
                    header.clear();
                }
                let asked_path = line
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or_default()
                    .to_owned();
                let count = {
                    let mut seen = seen.lock().expect("lock");
                    seen.push(asked_path.clone());
                    seen.len()
                };
                let (status, body) = if asked_path == path && count > not_yet {
                    ("200 OK", body)
                } else {
                    ("404 Not Found", "")
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        (base, asked)
    }

    fn clock_at_ms(ms: i64) -> Clock {
        let at = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
            .expect("time");
        Clock::virtual_from(Timestamp::from_datetime(at))
    }

    #[tokio::test(start_paused = true)]
    async fn the_round_waits_for_the_named_round_then_verifies_it() {
        // Opened 7.5 s before round 657413: it names that round (at least 6 s ahead),
        // waits until its time, asks once too early (404), again a period later.
        let opened_ms = round_time_ms(657_413) - 7_500;
        let clock = clock_at_ms(opened_ms);
        let path = format!("/{QUICKNET_CHAIN_HASH}/public/657413");
        let (base, asked) = serve(path.clone(), ROUND_657413, 1);
        let beacon = DrandHttpBeacon::new(&base, clock, None).expect("client");
        let round = beacon.next_round().expect("round");
        assert_eq!(round, 657_413);
        let start = tokio::time::Instant::now();
        let record = beacon.fetch(round).await.expect("value");
        // The clock read 1 ms later than at opening (a virtual clock advances 1 ms a
        // reading): 7,499 ms to the round's time, then one period for the 404.
        assert_eq!(start.elapsed(), Duration::from_millis(7_499 + 3_000));
        assert_eq!(*asked.lock().expect("lock"), vec![path.clone(), path]);
        assert_eq!(record.source, BeaconSource::DrandQuicknet);
        assert_eq!(record.round, 657_413);
        assert_eq!(
            record.value.to_hex(),
            "fc1873a13f3545aeade8401532ef5519920652eee6b0d2b19ca12643b87b3587"
        );
        assert_eq!(
            record.signature.as_deref(),
            Some(
                "b713718a38ae728dfd477991af2822e08d2f305e47718cef9f7848ce4050e7be41076862b98fad56e91a6b85b89cd97b"
            )
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_round_already_past_is_fetched_at_once_and_a_wrong_one_refused() {
        let clock = clock_at_ms(round_time_ms(200));
        let path = format!("/{QUICKNET_CHAIN_HASH}/public/123");
        let (base, _) = serve(path, ROUND_123, 0);
        let beacon = DrandHttpBeacon::new(&base, clock, None).expect("client");
        let start = tokio::time::Instant::now();
        let record = beacon.fetch(123).await.expect("value");
        assert_eq!(start.elapsed(), Duration::ZERO);
        assert_eq!(record.round, 123);
        // The endpoint serves round 123's value for round 124's path: refused.
        let (base, _) = serve(format!("/{QUICKNET_CHAIN_HASH}/public/124"), ROUND_123, 0);
        let beacon =
            DrandHttpBeacon::new(&base, clock_at_ms(round_time_ms(200)), None).expect("client");
        assert!(matches!(
            beacon.fetch(124).await,
            Err(BeaconError::Invalid { round: 124, .. })
        ));
    }

    /// Over HTTPS, trusting the local server's CA through the CA file: the recorded round
    /// is fetched and verified; without the CA file the server's certificate is refused
    /// (its CA is in no system's roots), and a CA file that is not PEM is refused before
    /// any request.
    #[test]
    fn an_https_endpoint_is_trusted_through_its_ca_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = format!("/{QUICKNET_CHAIN_HASH}/public/657413");
        let server = testkit::tls::TlsServer::start(dir.path(), |_| {
            axum::Router::new().route(&path, axum::routing::get(|| async { ROUND_657413 }))
        });
        let clock = || clock_at_ms(round_time_ms(657_414));
        let beacon =
            DrandHttpBeacon::new(&server.base, clock(), Some(&server.ca_file)).expect("client");
        let record = beacon.value(657_413).expect("value");
        assert_eq!(
            record.value.to_hex(),
            "fc1873a13f3545aeade8401532ef5519920652eee6b0d2b19ca12643b87b3587"
        );
        let untrusting = DrandHttpBeacon::new(&server.base, clock(), None).expect("client");
        match untrusting.value(657_413) {
            Err(BeaconError::Http { url, .. }) => assert_eq!(url, format!("{}{path}", server.base)),
            other => panic!("{other:?}"),
        }
        let not_pem = dir.path().join("not.pem");
        std::fs::write(&not_pem, "not a certificate").expect("write");
        assert!(matches!(
            DrandHttpBeacon::new(&server.base, clock(), Some(&not_pem)),
            Err(BeaconError::Http { .. })
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn a_forged_value_does_not_verify() {
        let forged: &'static str = Box::leak(
            ROUND_657413
                .replace("fc1873a1", "fc1873a2")
                .into_boxed_str(),
        );
        let (base, _) = serve(format!("/{QUICKNET_CHAIN_HASH}/public/657413"), forged, 0);
        let beacon =
            DrandHttpBeacon::new(&base, clock_at_ms(round_time_ms(657_414)), None).expect("client");
        match beacon.fetch(657_413).await {
            Err(BeaconError::Invalid { round, message }) => {
                assert_eq!(round, 657_413);
                assert!(
                    message.contains("its signature gives fc1873a13f35"),
                    "{message}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
