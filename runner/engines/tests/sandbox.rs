//! The engine's sandbox from inside (content/threat-model.md, The engine's sandbox): each
//! attack an engine could make is run as a script inside bubblewrap and must be refused;
//! unsandboxed (trusted) the same scripts get through, so the checks are not vacuous. A
//! sandboxed engine is still reached through the socket it inherits, and nothing of a
//! run is left for the next.
//!
//! bubblewrap missing, or a missing python3 (it serves `/health` and makes the Unix socket
//! connections), fails these tests (CI installs bubblewrap and has python3); they never
//! skip.

use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use engines::isolation::CpuPlan;
use engines::sandbox::{
    DEFAULT_ENGINE_UID, ETC_FILES, Sandbox, SandboxError, SandboxKind, SandboxSpec,
};
use engines::{Confinement, Engine, EngineError, ProcessEngine, ProcessOptions};
use receipts::model::Limits;
use receipts::rules::engine_log::kept_log;
use receipts::rules::log_tail::{CUT_BEFORE, LOG_TAIL_LINE_BYTES, LOG_TAIL_WINDOW_BYTES};

/// bubblewrap, as a round would run it.
///
/// # Panics
/// When it cannot run here, saying why.
fn bwrap() -> Sandbox {
    Sandbox::probe(SandboxKind::Bwrap, DEFAULT_ENGINE_UID)
        .unwrap_or_else(|why| panic!("bubblewrap cannot run here: {why}\n(install bubblewrap)"))
}

fn root() -> bool {
    // SAFETY: geteuid(2) reads this process's credentials.
    unsafe { libc::geteuid() == 0 }
}

/// What an evaluator's host holds around an engine: a data directory with this entry's
/// tree and another entry's, a key directory and a key file outside the default place, a
/// home with an ssh key, Unix sockets listening in the host's `/tmp` and in that home,
/// and a listener on the host's loopback.
struct Host {
    _dirs: Vec<tempfile::TempDir>,
    data: PathBuf,
    tree: PathBuf,
    other_tree: PathBuf,
    key_dir: PathBuf,
    key_file: PathBuf,
    home: PathBuf,
    tmp_socket: PathBuf,
    home_socket: PathBuf,
    _sockets: Vec<UnixListener>,
    listener: TcpListener,
}

fn host() -> Host {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let data = base.join("data");
    let tree = data.join("work/trees/baseline");
    let other_tree = data.join("work/trees/candidate-1");
    let key_dir = base.join("keys");
    let key_file = base.join("elsewhere/signing.key");
    let home = base.join("home");
    for d in [&tree, &other_tree, &key_dir, &home.join(".ssh")] {
        fs::create_dir_all(d).unwrap();
    }
    fs::create_dir_all(key_file.parent().unwrap()).unwrap();
    // The tree as intake writes it: world-readable, in a world-traversable directory.
    for d in [&tree, &other_tree] {
        fs::set_permissions(d, fs::Permissions::from_mode(0o755)).unwrap();
    }
    fs::write(tree.join("engine.toml"), "threads = 1\n").unwrap();
    fs::write(other_tree.join("engine.toml"), "secret-of-another-entry\n").unwrap();
    fs::write(data.join("keyring.json"), "{}\n").unwrap();
    for key in [key_dir.join("evaluator.key"), key_file.clone()] {
        fs::write(&key, "secret\n").unwrap();
        fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).unwrap();
    }
    fs::write(home.join(".ssh/id_ed25519"), "ssh-secret\n").unwrap();
    // A socket in the host's own /tmp (where tmux and ssh-agent keep theirs), whatever
    // TMPDIR says.
    let tmp_dir = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
    let tmp_socket = tmp_dir.path().join("agent.sock");
    let home_socket = home.join(".ssh/control.sock");
    let sockets = vec![
        UnixListener::bind(&tmp_socket).unwrap(),
        UnixListener::bind(&home_socket).unwrap(),
    ];
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    Host {
        _dirs: vec![dir, tmp_dir],
        data,
        tree,
        other_tree,
        key_dir,
        key_file,
        home,
        tmp_socket,
        home_socket,
        _sockets: sockets,
        listener,
    }
}

impl Host {
    /// The spec a round gives this entry: the data directory and every key path hidden.
    fn spec(&self) -> SandboxSpec {
        SandboxSpec {
            tree: self.tree.clone(),
            program: None,
            ro_paths: Vec::new(),
            rw_dir: None,
            hidden: vec![
                self.data.clone(),
                self.key_dir.clone(),
                self.key_file.clone(),
            ],
        }
    }
}

/// Runs `script` with bash inside `sandbox` and returns its stdout.
fn run(sandbox: &Sandbox, spec: &SandboxSpec, script: &str) -> String {
    let output = sandbox
        .command(spec, &["bash".into(), "-c".into(), script.into()])
        .unwrap()
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// `name=ok` when `command` succeeds inside, else `name=fail`.
fn attempt(name: &str, command: &str) -> String {
    format!("({command}) >/dev/null 2>&1 && echo {name}=ok || echo {name}=fail\n")
}

/// Connects to the Unix socket `path` with python3.
fn connect_unix(path: &Path) -> String {
    format!(
        "python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])' '{}'",
        path.display()
    )
}

/// Every attack of an engine on the host it runs on, one line each.
fn attacks(host: &Host) -> String {
    python3();
    let port = host.listener.local_addr().unwrap().port();
    [
        attempt("connect", &format!("exec 3<>/dev/tcp/127.0.0.1/{port}")),
        attempt(
            "key_dir",
            &format!("cat '{}/evaluator.key'", host.key_dir.display()),
        ),
        attempt("key_file", &format!("cat '{}'", host.key_file.display())),
        attempt(
            "data",
            &format!("cat '{}'", host.data.join("keyring.json").display()),
        ),
        attempt(
            "other_tree",
            &format!("cat '{}/engine.toml'", host.other_tree.display()),
        ),
        attempt(
            "ssh_key",
            &format!("cat '{}'/.ssh/id_*", host.home.display()),
        ),
        attempt("shadow", "cat /etc/shadow"),
        attempt("tmp_socket", &connect_unix(&host.tmp_socket)),
        attempt("home_socket", &connect_unix(&host.home_socket)),
        attempt("run", "ls /run/"),
        attempt("nested_userns", "unshare --user true"),
        attempt(
            "write_tree",
            &format!("touch '{}/written'", host.tree.display()),
        ),
    ]
    .concat()
        + "echo config=$(cat engine.toml)\n"
}

fn python3() {
    std::process::Command::new("python3")
        .args(["-c", "pass"])
        .status()
        .expect("python3, which these tests run inside the sandbox");
}

/// Each attack is refused inside bubblewrap (content/threat-model.md: keys passed with
/// `--key` and `--key-dir` anywhere, `$HOME/.ssh`, root's 0600 files, Unix sockets in
/// `/tmp` and `$HOME`, other entries' trees, `/run`, nested user namespaces, the tree
/// itself written).
#[test]
fn bwrap_refuses_every_attack() {
    let sandbox = bwrap();
    let host = host();
    assert_eq!(
        run(&sandbox, &host.spec(), &attacks(&host)),
        "connect=fail\nkey_dir=fail\nkey_file=fail\ndata=fail\nother_tree=fail\n\
         ssh_key=fail\nshadow=fail\ntmp_socket=fail\nhome_socket=fail\nrun=fail\n\
         nested_userns=fail\nwrite_tree=fail\nconfig=threads = 1\n"
    );
    // Nothing reached the host's listener, and the tree is unchanged.
    assert!(host.listener.accept().is_err());
    assert!(!host.tree.join("written").exists());
}

/// The control: unsandboxed, the same attacks get through (but root's own file when the
/// test is not root), so the test above tests the sandbox and not the script.
#[test]
fn unsandboxed_the_attacks_succeed() {
    let sandbox = Sandbox::unsandboxed(SandboxKind::Trusted);
    let host = host();
    let shadow = if root() { "ok" } else { "fail" };
    let run_dir = if Path::new("/run").is_dir() {
        "ok"
    } else {
        "fail"
    };
    let nested = if std::process::Command::new("unshare")
        .args(["--user", "true"])
        .status()
        .is_ok_and(|s| s.success())
    {
        "ok"
    } else {
        "fail"
    };
    assert_eq!(
        run(&sandbox, &host.spec(), &attacks(&host)),
        format!(
            "connect=ok\nkey_dir=ok\nkey_file=ok\ndata=ok\nother_tree=ok\nssh_key=ok\n\
             shadow={shadow}\ntmp_socket=ok\nhome_socket=ok\nrun={run_dir}\n\
             nested_userns={nested}\nwrite_tree=ok\nconfig=threads = 1\n"
        )
    );
}

/// What the engine sees at `/` and in `/etc` is exactly the allow-list: the system's
/// top-level directories as the host has them, its tree's top directory, `/dev`,
/// `/proc`, `/tmp`, and the listed `/etc` files.
#[test]
fn the_engine_sees_only_the_allow_list() {
    let sandbox = bwrap();
    let host = host();
    let seen = run(
        &sandbox,
        &host.spec(),
        "ls -A / | tr '\\n' ' '; echo; ls -A /etc | tr '\\n' ' '; echo; \
         ls -A /tmp | wc -l; ls -A /dev/shm | wc -l",
    );
    let tree_top = host.tree.components().nth(1).unwrap();
    let mut top: Vec<String> = ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"]
        .into_iter()
        .filter(|p| fs::symlink_metadata(p).is_ok())
        .map(|p| p.trim_start_matches('/').to_owned())
        .chain(["dev", "etc", "proc", "tmp", "usr"].map(str::to_owned))
        .chain([tree_top.as_os_str().to_string_lossy().into_owned()])
        .collect();
    top.sort();
    top.dedup();
    let mut etc: Vec<&str> = ETC_FILES
        .iter()
        .filter(|f| Path::new(f).exists())
        .map(|f| f.trim_start_matches("/etc/"))
        .collect();
    etc.sort();
    // The tree lies under the host's /tmp here: /tmp holds only the path down to it.
    let tmp_entries = usize::from(host.tree.starts_with("/tmp"));
    assert_eq!(
        seen,
        format!("{} \n{} \n{tmp_entries}\n0\n", top.join(" "), etc.join(" "))
    );
}

/// As root the engine runs as the unprivileged engine uid, so even a root-owned 0600
/// file it is shown stays unreadable; as another user it keeps that user's uid.
#[test]
fn the_engine_runs_as_its_own_uid() {
    let sandbox = bwrap();
    let host = host();
    let secret = host.tree.join("root-only");
    fs::write(&secret, "secret\n").unwrap();
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o600)).unwrap();
    let seen = run(
        &sandbox,
        &host.spec(),
        &format!(
            "id -u; id -g; {}",
            attempt("read", &format!("cat '{}'", secret.display()))
        ),
    );
    // SAFETY: getuid(2)/getgid(2) read this process's credentials.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    if root() {
        assert_eq!(sandbox.engine_uid(), DEFAULT_ENGINE_UID);
        assert_eq!(
            seen,
            format!("{DEFAULT_ENGINE_UID}\n{DEFAULT_ENGINE_UID}\nread=fail\n")
        );
    } else {
        assert_eq!(sandbox.user(), None);
        assert_eq!(sandbox.engine_uid(), uid);
        assert_eq!(seen, format!("{uid}\n{gid}\nread=ok\n"));
    }
}

/// A declared read-only path and the engine's executable are shown read-only at their
/// own paths, even under a directory the engine's uid cannot walk (the runner opens
/// them); a sibling of a declared path is not.
#[test]
fn declared_paths_and_the_program_are_shown_read_only() {
    let sandbox = bwrap();
    let host = host();
    let outside = tempfile::tempdir().unwrap();
    let base = outside.path().canonicalize().unwrap();
    fs::set_permissions(&base, fs::Permissions::from_mode(0o700)).unwrap();
    let venv = base.join("venv");
    let model = base.join("model.gguf");
    let sibling = base.join("sibling");
    let program = base.join("bin/engine");
    fs::create_dir_all(venv.join("lib")).unwrap();
    fs::create_dir_all(program.parent().unwrap()).unwrap();
    fs::write(venv.join("lib/site.py"), "venv\n").unwrap();
    fs::write(&model, "weights\n").unwrap();
    fs::write(&sibling, "not declared\n").unwrap();
    fs::write(&program, "#!/bin/sh\necho program ran\n").unwrap();
    fs::set_permissions(&program, fs::Permissions::from_mode(0o755)).unwrap();
    let spec = SandboxSpec {
        program: Some(program.clone()),
        ro_paths: vec![venv.clone(), model.clone()],
        ..host.spec()
    };
    let seen = run(
        &sandbox,
        &spec,
        &format!(
            "cat '{venv}/lib/site.py' '{model}'; '{program}'; {}{}{}",
            attempt("sibling", &format!("cat '{}'", sibling.display())),
            attempt("write_venv", &format!("touch '{}/x'", venv.display())),
            attempt("write_tmp", "touch /tmp/x && touch /dev/shm/x"),
            venv = venv.display(),
            model = model.display(),
            program = program.display(),
        ),
    );
    assert_eq!(
        seen,
        "venv\nweights\nprogram ran\nsibling=fail\nwrite_venv=fail\nwrite_tmp=ok\n"
    );
}

/// A declared path that holds the data directory or a key, or lies in one, is refused
/// before anything runs; so is one holding a Unix socket.
#[test]
fn a_declared_path_showing_a_key_or_a_socket_is_refused() {
    let sandbox = bwrap();
    let host = host();
    let parent = host.key_dir.parent().unwrap().to_path_buf();
    for (declared, secret) in [
        (parent.clone(), host.data.clone()),
        (host.key_dir.join("evaluator.key"), host.key_dir.clone()),
        (host.key_file.clone(), host.key_file.clone()),
    ] {
        let spec = SandboxSpec {
            ro_paths: vec![declared.clone()],
            ..host.spec()
        };
        match sandbox.command(&spec, &["true".into()]) {
            Err(SandboxError::Exposes { path, secret: s }) => {
                assert_eq!((path, s), (declared, secret));
            }
            other => panic!("{declared:?}: {other:?}"),
        }
    }
    let spec = SandboxSpec {
        ro_paths: vec![host.tmp_socket.parent().unwrap().to_path_buf()],
        ..host.spec()
    };
    match sandbox.command(&spec, &["true".into()]) {
        Err(SandboxError::Socket { socket, .. }) => assert_eq!(socket, host.tmp_socket),
        other => panic!("{other:?}"),
    }
}

/// The environment inside is clean: only what the sandbox sets (the test's own, with
/// cargo's variables, does not leak); `HOME` and `TMPDIR` are the sandbox's own tmpfs.
#[test]
fn the_environment_is_cleared() {
    let sandbox = bwrap();
    let host = host();
    let output = sandbox
        .command(&host.spec(), &["env".into()])
        .unwrap()
        .output()
        .unwrap();
    let mut env: Vec<String> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    env.sort();
    assert_eq!(
        env,
        [
            "HOME=/tmp".to_owned(),
            format!("PATH={}", engines::sandbox::SANDBOX_PATH),
            // bubblewrap's `--chdir` sets it.
            format!("PWD={}", host.tree.display()),
            "TMPDIR=/tmp".to_owned(),
        ]
    );
}

/// A file left in `/tmp`, `/dev/shm` or `$HOME` by one run is not there in the next.
#[test]
fn nothing_written_survives_into_the_next_run() {
    let sandbox = bwrap();
    let host = host();
    let first = run(
        &sandbox,
        &host.spec(),
        "echo run1 > /tmp/mark && echo run1 > /dev/shm/mark && echo run1 > \"$HOME/mark2\" \
         && echo written",
    );
    assert_eq!(first, "written\n");
    let second = run(
        &sandbox,
        &host.spec(),
        "cat /tmp/mark /dev/shm/mark \"$HOME/mark2\" 2>/dev/null; ls -A /dev/shm; echo end",
    );
    assert_eq!(second, "end\n");
}

/// A sandboxed process engine has no network, yet the runner reaches it through the
/// socket it inherits, and its health check passes; when it is stopped, nothing of it is
/// left running, not even a process that left its session.
#[test]
fn a_bwrap_engine_is_reached_and_leaves_nothing_running() {
    python3();
    let sandbox = bwrap();
    let host = host();
    let marker = format!("referee-survivor-{}", std::process::id());
    let python = format!(
        "import http.server,socket,subprocess,os\n\
         subprocess.Popen(['bash','-c','exec -a {marker} sleep 1000'], start_new_session=True)\n\
         class H(http.server.BaseHTTPRequestHandler):\n  \
         def do_GET(s):\n    s.send_response(200); s.end_headers()\n  \
         def log_message(s,*a): pass\n\
         srv = http.server.HTTPServer(('127.0.0.1', 0), H, bind_and_activate=False)\n\
         srv.socket = socket.socket(fileno=3)\nsrv.serve_forever()\n"
    );
    let logs = tempfile::tempdir().unwrap();
    let declared = tempfile::tempdir().unwrap();
    let mut engine = ProcessEngine::new(ProcessOptions {
        command: vec!["python3".into(), "-c".into(), python],
        tree: host.tree.clone(),
        config: host.tree.join("engine.toml"),
        log: logs.path().join("engine.log"),
        pid_file: logs.path().join("engines.pid"),
        confinement: Confinement {
            sandbox,
            hidden: host.spec().hidden,
            ro_paths: vec![declared.path().to_path_buf()],
            cpus: CpuPlan::split(&[0]),
            log_bytes: Limits::ENGINE_LOG_BYTES,
        },
        threads: 1,
        memory_limit_mb: 512,
        readiness: vec!["/health".into()],
        env: Default::default(),
    });
    engine.start().unwrap();
    engine.wait_healthy(Duration::from_secs(30)).unwrap();
    let isolation = engine.isolation().unwrap();
    assert_eq!(isolation.sandbox, SandboxKind::Bwrap);
    // The receipt's record: the uid it ran as, whether it was the engine uid, what it
    // was shown.
    // SAFETY: geteuid(2) reads this process's credentials.
    let uid = if root() {
        DEFAULT_ENGINE_UID
    } else {
        unsafe { libc::geteuid() }
    };
    assert_eq!(
        (isolation.uid, isolation.own_uid, isolation.ro_paths),
        (
            Some(uid),
            Some(root()),
            vec![declared.path().display().to_string()]
        )
    );
    // The pid file names the sandbox tool, the group's leader, for a resumed round.
    let pids = fs::read_to_string(logs.path().join("engines.pid")).unwrap();
    assert_eq!(pids.trim().split_once(' ').map(|(_, p)| p), Some("bwrap"));
    let survivors = || {
        fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|e| {
                fs::read(e.path().join("cmdline")).is_ok_and(|c| c.starts_with(marker.as_bytes()))
            })
            .count()
    };
    // The daemon runs (its `exec -a` may still be on its way).
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while survivors() == 0 && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(survivors(), 1, "the engine's own daemon runs");
    engine.stop().unwrap();
    assert!(!engine.is_running());
    assert_eq!(survivors(), 0);
    assert_eq!(fs::read_to_string(engine.log_path()).unwrap(), "");
}

/// A sandboxed engine running `script` with bash, its log kept under `log_bytes`, in the
/// host's data directory; started. Returns it and the directory its log is in.
fn flooding_engine(
    host: &Host,
    script: &str,
    log_bytes: u64,
) -> (ProcessEngine, tempfile::TempDir) {
    let logs = tempfile::tempdir().unwrap();
    let mut engine = ProcessEngine::new(ProcessOptions {
        command: vec!["bash".into(), "-c".into(), script.into()],
        tree: host.tree.clone(),
        config: host.tree.join("engine.toml"),
        log: logs.path().join("engine.log"),
        pid_file: logs.path().join("engines.pid"),
        confinement: Confinement {
            sandbox: bwrap(),
            hidden: host.spec().hidden,
            ro_paths: Vec::new(),
            cpus: CpuPlan::split(&[0]),
            log_bytes,
        },
        threads: 1,
        memory_limit_mb: 512,
        readiness: vec!["/health".into()],
        env: Default::default(),
    });
    engine.start().unwrap();
    (engine, logs)
}

/// The engine's death as its entry pays for it: `DiedBeforeHealthy` with its detail and
/// its log tail.
fn died(engine: &mut ProcessEngine) -> (String, Vec<String>) {
    match engine.wait_healthy(Duration::from_secs(60)) {
        Err(EngineError::DiedBeforeHealthy { detail, log_tail }) => (detail, log_tail),
        other => panic!("expected DiedBeforeHealthy, got {other:?}"),
    }
}

/// Issue 39's attack from inside the sandbox: one 16 MiB line, then death. The entry
/// alone pays (its engine died before it was healthy); its log is the first and last
/// half of the campaign's `limits.engine_log_bytes` (here 1 MiB) around the marker, and
/// its tail one line cut at both ends.
#[test]
fn a_sixteen_mebibyte_line_from_inside_costs_the_log_budget_and_one_tail_line() {
    let host = host();
    let budget = 1 << 20;
    let (mut engine, logs) = flooding_engine(
        &host,
        "head -c 16777216 /dev/zero | tr '\\0' A >&2; exit 3",
        budget,
    );
    let (detail, tail) = died(&mut engine);
    assert_eq!(detail, "exit status: 3");
    let window = usize::try_from(LOG_TAIL_WINDOW_BYTES).unwrap();
    assert_eq!(
        tail,
        vec![format!(
            "{CUT_BEFORE}{}… [{} bytes cut]",
            "A".repeat(LOG_TAIL_LINE_BYTES),
            window - LOG_TAIL_LINE_BYTES
        )]
    );
    let log = fs::read(logs.path().join("engine.log")).unwrap();
    assert_eq!(log, kept_log(&vec![b'A'; 16 << 20], budget));
}

/// Issue 39's attack from inside the sandbox: a flood on stderr. 300 MiB would take
/// most of a minute on CI's two cores, so the campaign's budget is made small (256 KiB)
/// and the engine writes 256 times it (64 MiB): the log keeps exactly the rule's bytes,
/// the entry alone pays.
#[test]
fn a_stderr_flood_from_inside_keeps_only_the_log_budget() {
    let host = host();
    let budget = 256 << 10;
    let (mut engine, logs) =
        flooding_engine(&host, "head -c 67108864 /dev/zero >&2; exit 4", budget);
    let (detail, tail) = died(&mut engine);
    assert_eq!(detail, "exit status: 4");
    assert_eq!(tail.len(), 1);
    let log = fs::read(logs.path().join("engine.log")).unwrap();
    assert_eq!(log, kept_log(&vec![0u8; 64 << 20], budget));
}
