//! `referee engine serve` as its own process, the way the runner starts it: the first
//! stdout line names the port, two processes answer a request bit for bit alike, SIGTERM
//! stops it cleanly, an out-of-memory config exits 1 saying what does not fit and a
//! malformed config exits naming the field and value (issue 3).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const SMALL: &str = "model_seed = 3\nlayers = 2\nd_model = 64\nheads = 4\ncontext = 128\n\
                     max_num_seqs = 4\nmax_num_batched_tokens = 64\nkv_cache_budget_mb = 8\n";

fn referee() -> Command {
    Command::new(env!("CARGO_BIN_EXE_referee"))
}

fn write_config(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Starts a server on a free port; returns the child and its port.
fn serve(config: &Path) -> (Child, u16) {
    let mut child = referee()
        .args(["engine", "serve", "--port", "0", "--config"])
        .arg(config)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .trim_end()
        .strip_prefix("listening on http://127.0.0.1:")
        .unwrap_or_else(|| panic!("first stdout line: {line:?}"))
        .parse()
        .unwrap();
    (child, port)
}

/// One HTTP/1.1 request; returns status and body.
fn http(port: u16, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

fn wait_healthy(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while http(port, "GET", "/health", "").0 != 200 {
        assert!(Instant::now() < deadline, "not healthy within 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn completion(port: u16) -> Value {
    let request = r#"{"prompt": "two processes", "max_tokens": 10, "temperature": 0,
                      "logprobs": 5, "echo": true}"#;
    let (status, body) = http(port, "POST", "/v1/completions", request);
    assert_eq!(status, 200, "{body}");
    let mut body: Value = serde_json::from_str(&body).unwrap();
    body["id"] = Value::Null;
    body["created"] = Value::Null;
    body
}

/// Runs a command that must exit on its own at start; kills it after 30 s.
fn exit_of(command: &mut Command) -> std::process::Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("still running after 30 s: {command:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

fn stop(mut child: Child) {
    let status = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "exit after SIGTERM: {status}");
            return;
        }
        assert!(
            Instant::now() < deadline,
            "still running 20 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn two_processes_answer_alike_and_stop_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "engine.toml", SMALL);
    let (a, port_a) = serve(&config);
    let (b, port_b) = serve(&config);
    wait_healthy(port_a);
    wait_healthy(port_b);
    assert_eq!(completion(port_a), completion(port_b));
    stop(a);
    stop(b);
}

#[test]
fn out_of_memory_exits_1_saying_what_does_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    // 16 sequences × 2 layers × 128 positions × 2 × 64 × 4 bytes = 2 MiB > 1 MiB.
    let text = SMALL
        .replace("kv_cache_budget_mb = 8", "kv_cache_budget_mb = 1")
        .replace("max_num_seqs = 4", "max_num_seqs = 16");
    let config = write_config(dir.path(), "engine.toml", &text);
    let output = exit_of(
        referee()
            .args(["engine", "serve", "--port", "0", "--config"])
            .arg(&config),
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty(), "no listening line before dying");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("out of memory: a KV cache of 2 MiB (max_num_seqs 16 ")
            && !stderr.contains("CUDA"),
        "{stderr}"
    );
    // A budget beyond the device memory limit.
    let config = write_config(dir.path(), "big.toml", SMALL);
    let output = exit_of(
        referee()
            .args([
                "engine",
                "serve",
                "--port",
                "0",
                "--memory-limit-mb",
                "4",
                "--config",
            ])
            .arg(&config),
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("KV cache pool of 8 MiB (kv_cache_budget_mb) need")
    );
}

#[test]
fn a_malformed_config_exits_naming_field_and_value() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "engine.toml", "layers = 0\n");
    let output = exit_of(
        referee()
            .args(["engine", "serve", "--port", "0", "--config"])
            .arg(&config),
    );
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("field `layers` = `0`: must be between 1 and 64"),
        "{stderr}"
    );
}
