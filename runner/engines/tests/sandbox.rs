//! The engine's sandbox from inside: an outbound connection to the host's loopback, a read
//! of the key directory and a write into the patched tree all fail, under bubblewrap and
//! under the `unshare` fallback; unsandboxed (trusted) they succeed, so the checks are not
//! vacuous. A sandboxed engine is still reached through the socket it inherits.
//!
//! A sandbox that cannot run here, or a missing python3 (it serves `/health`), fails
//! these tests (CI installs bubblewrap and has python3).

use std::fs;
use std::net::TcpListener;
use std::time::Duration;

use engines::isolation::CpuPlan;
use engines::sandbox::{Sandbox, SandboxKind, SandboxSpec};
use engines::{Confinement, Engine, ProcessEngine, ProcessOptions};

/// The sandbox `kind`.
///
/// # Panics
/// When it cannot run here, saying why.
fn sandbox(kind: SandboxKind) -> Sandbox {
    Sandbox::probe(kind).unwrap_or_else(|why| {
        panic!("the {kind:?} sandbox cannot run here: {why}\n(install bubblewrap)")
    })
}

/// A data directory holding the tree, a key directory with a key, a private tmp, and a
/// listener on the host's loopback.
struct Host {
    _dir: tempfile::TempDir,
    data: std::path::PathBuf,
    tree: std::path::PathBuf,
    keys: std::path::PathBuf,
    tmp: std::path::PathBuf,
    listener: TcpListener,
}

fn host() -> Host {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let data = root.join("data");
    let tree = data.join("work/trees/baseline");
    let keys = root.join("keys");
    let tmp = root.join("tmp");
    for d in [&tree, &keys, &tmp] {
        fs::create_dir_all(d).unwrap();
    }
    fs::write(tree.join("engine.toml"), "threads = 1\n").unwrap();
    fs::write(keys.join("evaluator.key"), "secret\n").unwrap();
    fs::write(data.join("keyring.json"), "{}\n").unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    Host {
        _dir: dir,
        data,
        tree,
        keys,
        tmp,
        listener,
    }
}

/// Runs the three escapes inside `sandbox` and returns what they printed.
fn escapes(sandbox: &Sandbox, host: &Host) -> String {
    let port = host.listener.local_addr().unwrap().port();
    let script = format!(
        "(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo connect=ok || echo connect=fail
         cat '{keys}/evaluator.key' >/dev/null 2>&1 && echo key=ok || echo key=fail
         cat '{data}/keyring.json' >/dev/null 2>&1 && echo data=ok || echo data=fail
         touch '{tree}/written' 2>/dev/null && echo write=ok || echo write=fail
         echo config=$(cat engine.toml)",
        keys = host.keys.display(),
        data = host.data.display(),
        tree = host.tree.display(),
    );
    let spec = SandboxSpec {
        tree: host.tree.clone(),
        hidden: vec![host.keys.clone(), host.data.clone()],
        tmp: host.tmp.clone(),
    };
    let output = sandbox
        .command(&spec, &["bash".into(), "-c".into(), script])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

fn assert_confined(kind: SandboxKind) {
    let sandbox = sandbox(kind);
    assert_eq!(sandbox.kind(), kind);
    let host = host();
    assert_eq!(
        escapes(&sandbox, &host),
        "connect=fail\nkey=fail\ndata=fail\nwrite=fail\nconfig=threads = 1\n"
    );
    // Nothing reached the host's listener, and the tree is unchanged.
    assert!(host.listener.accept().is_err());
    assert!(!host.tree.join("written").exists());
}

#[test]
fn bwrap_blocks_network_keys_data_and_tree_writes() {
    assert_confined(SandboxKind::Bwrap);
}

#[test]
fn unshare_blocks_network_keys_data_and_tree_writes() {
    assert_confined(SandboxKind::Unshare);
}

/// The control: unsandboxed, the same script gets through, so the checks above test
/// the sandbox and not the script.
#[test]
fn unsandboxed_the_escapes_succeed() {
    let sandbox = Sandbox::probe(SandboxKind::Trusted).unwrap();
    let host = host();
    assert_eq!(
        escapes(&sandbox, &host),
        "connect=ok\nkey=ok\ndata=ok\nwrite=ok\nconfig=threads = 1\n"
    );
}

/// The environment inside is clean: only what the sandbox sets (the test's own, with
/// cargo's variables, does not leak).
#[test]
fn the_environment_is_cleared() {
    let sandbox = sandbox(SandboxKind::Bwrap);
    let host = host();
    let spec = SandboxSpec {
        tree: host.tree.clone(),
        hidden: Vec::new(),
        tmp: host.tmp.clone(),
    };
    let output = sandbox
        .command(&spec, &["sh".into(), "-c".into(), "env | sort".into()])
        .output()
        .unwrap();
    let env = String::from_utf8(output.stdout).unwrap();
    let tmp = host.tmp.display();
    assert_eq!(
        env,
        format!(
            "HOME={tmp}\nPATH={}\nPWD={}\nTMPDIR={tmp}\n",
            engines::sandbox::SANDBOX_PATH,
            host.tree.display()
        )
    );
}

/// A sandboxed process engine has no network, yet the runner reaches it through the
/// socket it inherits, and its health check passes.
fn assert_reached(kind: SandboxKind) {
    std::process::Command::new("python3")
        .args(["-c", "pass"])
        .status()
        .expect("python3, which serves /health in this test");
    let sandbox = sandbox(kind);
    let host = host();
    let python = "import http.server,socket\n\
        class H(http.server.BaseHTTPRequestHandler):\n  \
        def do_GET(s):\n    s.send_response(200); s.end_headers()\n  \
        def log_message(s,*a): pass\n\
        srv = http.server.HTTPServer(('127.0.0.1', 0), H, bind_and_activate=False)\n\
        srv.socket = socket.socket(fileno=3)\nsrv.serve_forever()\n";
    let logs = tempfile::tempdir().unwrap();
    let mut engine = ProcessEngine::new(ProcessOptions {
        command: vec!["python3".into(), "-c".into(), python.into()],
        tree: host.tree.clone(),
        config: host.tree.join("engine.toml"),
        log: logs.path().join("engine.log"),
        pid_file: logs.path().join("engines.pid"),
        confinement: Confinement {
            sandbox,
            hidden: vec![host.keys.clone(), host.data.clone()],
            cpus: CpuPlan::split(&[0]),
        },
        threads: 1,
        memory_limit_mb: 512,
        readiness: vec!["/health".into()],
        env: Default::default(),
    });
    engine.start().unwrap();
    engine.wait_healthy(Duration::from_secs(30)).unwrap();
    let isolation = engine.isolation().unwrap();
    assert_eq!(isolation.sandbox, kind);
    // The pid file names the sandbox tool, the group's leader, for a resumed round.
    let pids = fs::read_to_string(logs.path().join("engines.pid")).unwrap();
    let tool = if kind == SandboxKind::Bwrap {
        "bwrap"
    } else {
        "unshare"
    };
    assert_eq!(pids.trim().split_once(' ').map(|(_, p)| p), Some(tool));
    engine.stop().unwrap();
    assert!(!engine.is_running());
    assert_eq!(fs::read_to_string(engine.log_path()).unwrap(), "");
}

#[test]
fn a_bwrap_engine_is_reached_through_its_inherited_socket() {
    assert_reached(SandboxKind::Bwrap);
}

#[test]
fn an_unshare_engine_is_reached_through_its_inherited_socket() {
    assert_reached(SandboxKind::Unshare);
}
