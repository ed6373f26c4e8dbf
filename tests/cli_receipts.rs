//! End to end through the binary: `referee keygen` → `keyring add` → `seal` → `verify`,
//! then a one-byte change to an artifact and to the envelope each make `verify` exit 1
//! naming the file; a missing bundle exits 2 (issue 2, Done when). `verify --foreign`
//! accepts another tool's form of an envelope that plain `verify` refuses (issue 11).

mod support;

use std::path::Path;
use std::process::Output;

use receipts::keys::{Keyring, PrivateKey, generate_key_pair, is_private_key_seed};
use receipts::layout::find_private_keys;

use support::{referee, stderr, stdout};
use testkit::copy_dir;

fn flip_byte(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).expect("read");
    bytes[at] ^= 1;
    std::fs::write(path, bytes).expect("write");
}

#[test]
fn keygen_seal_verify_and_tamper() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let keygen = referee(dir, &["keygen", "--out", "keys/operator"]);
    assert_eq!(keygen.status.code(), Some(0), "{keygen:?}");
    let printed = stdout(&keygen);
    assert!(printed.starts_with("keyid "), "{printed}");
    let seed = std::fs::read_to_string(dir.join("keys/operator.key")).expect("key");
    assert!(
        !printed.contains(seed.trim()),
        "the private key is never printed"
    );
    let again = referee(dir, &["keygen", "--out", "keys/operator"]);
    assert_eq!(again.status.code(), Some(2), "keygen refuses to overwrite");

    let add = referee(
        dir,
        &["keyring", "add", "keys/operator.pub", "--data", "data"],
    );
    assert_eq!(add.status.code(), Some(0), "{add:?}");

    std::fs::create_dir_all(dir.join("bundle/logs")).expect("mkdir");
    std::fs::write(dir.join("bundle/logs/engine.log"), b"started\nhealthy\n").expect("write");
    std::fs::write(dir.join("bundle/result.json"), b"{\"scorePpm\":1200}").expect("write");
    std::fs::write(dir.join("predicate.json"), b"{\"note\":\"by hand\"}").expect("write");
    let seal = referee(
        dir,
        &[
            "seal",
            "bundle",
            "--key",
            "keys/operator.key",
            "--predicate",
            "predicate.json",
            "--predicate-type",
            "https://example.com/predicates/demo/v1",
        ],
    );
    assert_eq!(seal.status.code(), Some(0), "{seal:?}");
    assert!(stdout(&seal).contains("subjects 2"));

    let verify = referee(dir, &["verify", "bundle", "--data", "data"]);
    assert_eq!(verify.status.code(), Some(0), "{}", stdout(&verify));
    assert!(stdout(&verify).ends_with("result: PASS\n"));

    let json = referee(dir, &["verify", "bundle", "--data", "data", "--json"]);
    let reports: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(reports[0]["checks"][0]["name"], "envelope.parse");

    for (file, at) in [
        ("bundle/logs/engine.log", 3),
        ("bundle/receipt.dsse.json", 40),
    ] {
        let path = dir.join(file);
        flip_byte(&path, at);
        let verify = referee(dir, &["verify", "bundle", "--data", "data"]);
        assert_eq!(verify.status.code(), Some(1), "{file}");
        let name = Path::new(file)
            .strip_prefix("bundle")
            .expect("prefix")
            .to_string_lossy()
            .into_owned();
        let first_failure = stdout(&verify)
            .lines()
            .find(|l| l.trim_start().starts_with("FAIL"))
            .expect("a failed check")
            .to_owned();
        assert!(
            first_failure.contains(&format!("`{name}`")),
            "{file}: {first_failure}"
        );
        flip_byte(&path, at);
    }

    let missing = referee(dir, &["verify", "no-such-bundle", "--data", "data"]);
    assert_eq!(missing.status.code(), Some(2));

    // With --json a missing bundle is an object with an error; the others are verified.
    let args = [
        "verify",
        "bundle",
        "no-such-bundle",
        "--data",
        "data",
        "--json",
    ];
    let json = referee(dir, &args);
    assert_eq!(json.status.code(), Some(2));
    let reports: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(reports[0]["passed"], true);
    assert_eq!(reports[0]["checks"][0]["name"], "envelope.parse");
    assert_eq!(reports[1]["passed"], false);
    assert_eq!(reports[1]["bundle"], "no-such-bundle");
    assert_eq!(
        reports[1]["error"],
        "bundle `no-such-bundle` is not a directory"
    );
}

/// `referee verify --foreign` (issue 11): an envelope another tool wrote over a payload a
/// trusted key signed (pretty JSON, URL-safe unpadded base64, its own keyid hint) fails
/// plain `verify`, naming the hint, and passes with `--foreign`.
#[test]
fn verify_foreign_accepts_another_tools_envelope() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let keygen = referee(dir, &["keygen", "--out", "keys/operator"]);
    assert_eq!(keygen.status.code(), Some(0), "{keygen:?}");
    let keyid = stdout(&keygen)
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("keyid "))
        .expect("keyid line")
        .trim()
        .to_owned();
    let add = referee(
        dir,
        &["keyring", "add", "keys/operator.pub", "--data", "data"],
    );
    assert_eq!(add.status.code(), Some(0), "{add:?}");
    std::fs::create_dir_all(dir.join("bundle")).expect("mkdir");
    std::fs::write(dir.join("bundle/result.json"), b"{\"scorePpm\":1200}").expect("write");
    std::fs::write(dir.join("predicate.json"), b"{\"note\":\"by hand\"}").expect("write");
    let seal = referee(
        dir,
        &[
            "seal",
            "bundle",
            "--key",
            "keys/operator.key",
            "--predicate",
            "predicate.json",
            "--predicate-type",
            "https://example.com/predicates/demo/v1",
        ],
    );
    assert_eq!(seal.status.code(), Some(0), "{seal:?}");

    // Rewrite the envelope as another tool might; the signed payload is untouched.
    let path = dir.join("bundle/receipt.dsse.json");
    let mut envelope: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    let url_safe = |text: &str| {
        text.replace('+', "-")
            .replace('/', "_")
            .trim_end_matches('=')
            .to_owned()
    };
    let sig = envelope["signatures"][0]["sig"]
        .as_str()
        .expect("sig")
        .to_owned();
    envelope["signatures"][0]["sig"] = url_safe(&sig).into();
    envelope["signatures"][0]["keyid"] = "other-tool:key-1".into();
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&envelope).expect("json"),
    )
    .expect("write");

    let strict = referee(dir, &["verify", "bundle", "--data", "data"]);
    assert_eq!(strict.status.code(), Some(1), "{}", stdout(&strict));
    let text = stdout(&strict);
    let expected = format!(
        "  FAIL signature.keyid signatures[0].keyid: `receipt.dsse.json` field \
         `signatures[0].keyid`: signature valid under key `{keyid}`; keyid hint \
         `other-tool:key-1` differs"
    );
    assert!(text.lines().any(|l| l == expected), "{text}");
    assert!(
        text.lines().any(|l| l
            == "  FAIL envelope.canonical: `receipt.dsse.json` is not canonical JSON (RFC 8785)"),
        "{text}"
    );

    let foreign = referee(dir, &["verify", "bundle", "--data", "data", "--foreign"]);
    let text = stdout(&foreign);
    assert_eq!(foreign.status.code(), Some(0), "{text}");
    assert!(
        text.ends_with(&format!("  signed by {keyid}\nresult: PASS\n")),
        "{text}"
    );
    assert!(!text.contains("signature.keyid"), "{text}");
    assert!(!text.contains("envelope.canonical"), "{text}");

    let json = referee(
        dir,
        &["verify", "bundle", "--data", "data", "--foreign", "--json"],
    );
    assert_eq!(json.status.code(), Some(0));
    let reports: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(reports[0]["passed"], true);
    assert_eq!(reports[0]["signedBy"], serde_json::json!([keyid]));
}

// Where private keys live (issue 11): keygen's default key directory, `seal` refusing a
// directory that holds a key, the demo keeping its key out of the data directory and
// moving an old one out.

/// [`referee`] with extra environment variables, and a home of its own (`<dir>/home`, no
/// `XDG_CONFIG_HOME`, no `REFEREE_KEY_DIR`), so parallel tests never share a key
/// directory.
fn referee_with(dir: &Path, args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut command = support::bin();
    command
        .args(args)
        .current_dir(dir)
        .env_remove("XDG_CONFIG_HOME")
        .env("HOME", dir.join("home"));
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("run referee")
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn keygen_writes_into_the_key_directory_by_default() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();

    // No XDG_CONFIG_HOME: `~/.config/referee/keys/evaluator.{key,pub}`.
    let keygen = referee_with(dir, &["keygen"], &[]);
    assert_eq!(keygen.status.code(), Some(0), "{keygen:?}");
    let key_dir = dir.join("home/.config/referee/keys");
    let key = key_dir.join("evaluator.key");
    assert!(
        stdout(&keygen).contains(&format!("private key {}", key.display())),
        "{}",
        stdout(&keygen)
    );
    PrivateKey::load(&key).expect("a private key in the default key directory");
    assert!(key_dir.join("evaluator.pub").is_file());
    #[cfg(unix)]
    {
        assert_eq!(mode(&key), 0o600);
        assert_eq!(mode(&key_dir), 0o700);
    }
    let again = referee_with(dir, &["keygen"], &[]);
    assert_eq!(again.status.code(), Some(2), "keygen refuses to overwrite");

    // XDG_CONFIG_HOME, when set, is the configuration directory.
    let xdg = dir.join("xdg");
    let keygen = referee_with(dir, &["keygen"], &[("XDG_CONFIG_HOME", &xdg)]);
    assert_eq!(keygen.status.code(), Some(0), "{keygen:?}");
    PrivateKey::load(&xdg.join("referee/keys/evaluator.key")).expect("the XDG key directory");

    // --key-dir (or REFEREE_KEY_DIR) names another one.
    let keygen = referee_with(dir, &["keygen", "--key-dir", "elsewhere"], &[]);
    assert_eq!(keygen.status.code(), Some(0), "{keygen:?}");
    PrivateKey::load(&dir.join("elsewhere/evaluator.key")).expect("--key-dir");
    let from_env = dir.join("from-env");
    let keygen = referee_with(dir, &["keygen"], &[("REFEREE_KEY_DIR", &from_env)]);
    assert_eq!(keygen.status.code(), Some(0), "{keygen:?}");
    PrivateKey::load(&from_env.join("evaluator.key")).expect("REFEREE_KEY_DIR");
}

#[test]
fn seal_refuses_a_directory_that_holds_a_private_key() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("bundle/logs")).expect("mkdir");
    std::fs::write(dir.join("bundle/logs/engine.log"), b"started\n").expect("write");
    std::fs::write(dir.join("predicate.json"), b"{\"note\":\"by hand\"}").expect("write");
    let keygen = referee_with(dir, &["keygen", "--out", "bundle/op"], &[]);
    assert_eq!(keygen.status.code(), Some(0), "{keygen:?}");
    let seal = |key: &str| {
        let args = [
            "seal",
            "bundle",
            "--key",
            key,
            "--predicate",
            "predicate.json",
            "--predicate-type",
            "https://example.com/predicates/demo/v1",
        ];
        referee_with(dir, &args, &[])
    };
    let refused = seal("bundle/op.key");
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let message = stderr(&refused);
    assert!(
        message.contains(
            "private key `bundle/op.key` is inside the directory to seal `bundle`, which is \
             published"
        ),
        "{message}"
    );
    assert!(message.contains("mv -n bundle/op.key "), "{message}");
    assert!(!dir.join("bundle/receipt.dsse.json").exists());

    // A seed under any name counts too; the hint moves it next to the signing key.
    std::fs::create_dir_all(dir.join("keys")).expect("mkdir");
    std::fs::rename(dir.join("bundle/op.key"), dir.join("keys/op.key")).expect("mv");
    std::fs::copy(dir.join("keys/op.key"), dir.join("bundle/notes.txt")).expect("cp");
    let refused = seal("keys/op.key");
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let keys = std::fs::canonicalize(dir.join("keys")).expect("canonical");
    let message = stderr(&refused);
    assert!(
        message.contains(&format!(
            "private key `bundle/notes.txt` is inside the directory to seal `bundle`, which is \
             published; move it out: `mkdir -p -m 700 {} && mv -n bundle/notes.txt {} && \
             referee seal --key {} …`",
            keys.display(),
            keys.join("notes.txt").display(),
            keys.join("notes.txt").display()
        )),
        "{message}"
    );
    std::fs::remove_file(dir.join("bundle/notes.txt")).expect("rm");
    let sealed = seal("keys/op.key");
    assert_eq!(sealed.status.code(), Some(0), "{sealed:?}");
}

#[test]
fn the_key_finder_sees_key_files_and_seeds_but_not_git_work_or_symlinks() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("data");
    let seed = format!("{}\n", "ab".repeat(32));
    let write = |rel: &str, bytes: &[u8]| {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, bytes).expect("write");
        path
    };
    let mut expected = vec![
        write("old.key", b"not even a seed"),
        write("c/notes/seed", seed.as_bytes()),
        write("c/rounds/1/SEED.KEY", b""),
        write("c/bare", seed.trim_end().as_bytes()),
    ];
    expected.sort();
    // Not keys: git directories, round work directories, a bare repository's contents,
    // bytes a miner controls (diffs, logs), near misses; symlinks are not followed.
    write(".demo/src/.git/refs/heads/x.key", b"");
    write(".demo/src/.git/objects/seed", seed.as_bytes());
    write("c/.work/round-2/trees/a/w.key", b"");
    write("c/baseline.git/refs/heads/main", seed.as_bytes());
    write("c/submissions/0.diff", seed.as_bytes());
    write("c/rounds/1/logs/engines/x.log", seed.as_bytes());
    write("c/upper", seed.to_uppercase().as_bytes());
    write("c/long", format!("{seed}\n").as_bytes());
    write("keyring.json", b"[]");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::write(outside.join("evaluator.key"), seed.as_bytes()).expect("write");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&outside, root.join("c/linked")).expect("symlink");

    assert_eq!(find_private_keys(&root).expect("scan"), expected);
    assert_eq!(
        find_private_keys(&tmp.path().join("missing")).expect("scan"),
        Vec::<std::path::PathBuf>::new()
    );
    assert!(is_private_key_seed(seed.as_bytes()));
    assert!(!is_private_key_seed(seed.to_uppercase().as_bytes()));
}

/// The whole demo up to its round's first journal record (the failpoint stops it there):
/// with `--key-dir`, the key lives only there and nothing under `--data` holds it; a data
/// directory of an earlier demo gets its `evaluator.key` moved out, with a note, and the
/// round is not refused.
#[test]
fn the_demo_keeps_its_key_in_the_key_directory_and_moves_an_old_one_out() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let demo = |data: &str, keys: &str| {
        referee_with(
            dir,
            // A test shares the machine with the others: a loose client bound.
            &[
                "demo",
                "--data",
                data,
                "--key-dir",
                keys,
                "--send-lag-bound-us",
                "1000000",
            ],
            &[("REFEREE_ROUND_ABORT_AFTER", Path::new("0"))],
        )
    };
    let reached_the_round = |output: &Output| {
        let message = stderr(output);
        assert!(
            message.contains("aborted by the failpoint after journal record 0"),
            "{message}"
        );
        assert!(
            !message.contains("is inside the data directory"),
            "{message}"
        );
        message
    };

    let output = demo("data", "keys");
    let message = reached_the_round(&output);
    let key_path = dir.join("keys/evaluator.key");
    let key = PrivateKey::load(&key_path).expect("the demo's key in --key-dir");
    assert!(
        message.contains(&format!(
            "evaluator key {} in `keys/evaluator.key`",
            key.keyid()
        )),
        "{message}"
    );
    let seed = std::fs::read_to_string(&key_path).expect("key");
    assert_no_key_under(&dir.join("data"), seed.trim());
    let keyring = Keyring::load(&dir.join("data/keyring.json")).expect("keyring");
    assert!(keyring.find(key.public().as_bytes()).is_some());

    // An earlier demo's data directory: `data/evaluator.key`, trusted in its keyring.
    let old = dir.join("old");
    std::fs::create_dir_all(&old).expect("mkdir");
    generate_key_pair(&old.join("evaluator")).expect("keygen");
    let old_key = PrivateKey::load(&old.join("evaluator.key")).expect("key");
    let old_seed = std::fs::read_to_string(old.join("evaluator.key")).expect("key");
    testkit::keyring(&[&old_key])
        .save(&old.join("keyring.json"))
        .expect("save");
    let output = demo("old", "keys2");
    let message = reached_the_round(&output);
    assert!(
        message.contains(
            "moved the evaluator key of an earlier demo from `old/evaluator.key` (inside the \
             data directory, which is published) to `keys2/evaluator.key`"
        ),
        "{message}"
    );
    let moved = PrivateKey::load(&dir.join("keys2/evaluator.key")).expect("moved key");
    assert_eq!(moved.keyid(), old_key.keyid());
    assert!(dir.join("keys2/evaluator.pub").is_file());
    assert!(!old.join("evaluator.key").exists());
    assert!(!old.join("evaluator.pub").exists());
    assert_no_key_under(&old, old_seed.trim());

    // The key directory already holds another evaluator key: the old one goes next to
    // it under a name of its own, and the demo signs with (and trusts) the key dir's.
    let older = dir.join("older");
    std::fs::create_dir_all(&older).expect("mkdir");
    generate_key_pair(&older.join("evaluator")).expect("keygen");
    let older_key = PrivateKey::load(&older.join("evaluator.key")).expect("key");
    let output = demo("older", "keys");
    let message = reached_the_round(&output);
    let aside = dir.join(format!("keys/evaluator-{}.key", &older_key.keyid()[..12]));
    assert_eq!(
        PrivateKey::load(&aside).expect("set aside").keyid(),
        older_key.keyid(),
        "{message}"
    );
    assert!(!older.join("evaluator.key").exists());
    let keyring = Keyring::load(&older.join("keyring.json")).expect("keyring");
    assert!(keyring.find(key.public().as_bytes()).is_some());
}

/// No file under `root` (`.git` and `.work` included) is named `*.key`, holds a seed, or
/// contains `seed`.
fn assert_no_key_under(root: &Path, seed: &str) {
    for entry in std::fs::read_dir(root).expect("list") {
        let entry = entry.expect("entry");
        let path = entry.path();
        let file_type = entry.file_type().expect("type");
        if file_type.is_dir() {
            assert_no_key_under(&path, seed);
            continue;
        }
        assert!(
            !path.to_string_lossy().ends_with(".key"),
            "{}",
            path.display()
        );
        if file_type.is_file() {
            let bytes = std::fs::read(&path).expect("read");
            assert!(!is_private_key_seed(&bytes), "{}", path.display());
            assert!(
                !String::from_utf8_lossy(&bytes).contains(seed),
                "{} holds the key",
                path.display()
            );
        }
    }
}

// A data directory (issue 13, Across rounds): the verifier's v2 fixture as round 1 of
// campaign `tiny`, with its challenger's submission record. The records pass with the
// round; a record edited to say `disqualified` where the receipt scored it fails
// `submissions.rounds` in a group of its own, the bundle still passing, and exits 1.
#[test]
fn verify_a_data_directory_checks_the_submission_records() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let fixtures = support::root().join("verifier/tests/fixtures");
    let data = dir.join("data");
    copy_dir(&fixtures.join("v2-round"), &data.join("tiny/rounds/1"));
    std::fs::copy(fixtures.join("v2-keyring.json"), data.join("keyring.json")).expect("keyring");
    let patch = "f98bb8888a2454cec792fdb3057f7a3f604e2afd317a4b644b9913f86e318dfc";
    let submissions = data.join("tiny/submissions");
    std::fs::create_dir_all(&submissions).expect("mkdir");
    std::fs::copy(
        fixtures.join(format!("v2-round/inputs/patches/{patch}.diff")),
        submissions.join(format!("{patch}.diff")),
    )
    .expect("diff");
    let states = [
        "committed",
        "picked_up",
        "fetched",
        "verified",
        "surface_ok",
        "applied",
        "building",
        "built",
        "bench_queued",
    ];
    let mut events: Vec<serde_json::Value> = states
        .iter()
        .enumerate()
        .map(|(i, s)| {
            serde_json::json!({"at": format!("2026-12-01T22:12:41.{i}Z"), "kind": "transition",
                "to": s, "reason": s})
        })
        .collect();
    for (at, state) in [
        ("2026-12-01T22:12:43.7Z", "round_assigned"),
        ("2026-12-01T22:12:46.9Z", "scored"),
    ] {
        events.push(
            serde_json::json!({"at": at, "kind": "transition", "to": state,
            "round": 1, "reason": state}),
        );
    }
    let mut record = serde_json::json!({"sha256": patch, "campaign": "tiny", "miner": "fast",
        "commitment": patch, "sizeBytes": 274, "state": "scored", "requeues": 0,
        "events": events});
    let path = submissions.join(format!("{patch}.json"));
    std::fs::write(&path, serde_json::to_vec_pretty(&record).expect("json")).expect("write");

    let honest = referee(dir, &["verify", "data", "--data", "data"]);
    assert_eq!(
        stdout(&honest),
        "bundle data/tiny/rounds/1: PASS\n\
         submissions data/tiny/submissions: PASS (1 records)\n\
         archive data: 1 verified, 0 failed\n\
         submission records of 1 campaign: 1 verified, 0 failed\n\
         result: PASS\n"
    );
    assert_eq!(honest.status.code(), Some(0));

    record["events"][10]["to"] = serde_json::json!("disqualified");
    record["state"] = serde_json::json!("disqualified");
    std::fs::write(&path, serde_json::to_vec_pretty(&record).expect("json")).expect("write");
    let forged = referee(dir, &["verify", "data", "--data", "data"]);
    let file = format!("submissions/{patch}.json");
    assert_eq!(
        stdout(&forged),
        format!(
            "bundle data/tiny/rounds/1: PASS\n\
             submissions data/tiny/submissions\n  \
             FAIL submissions.rounds {file}: `{file}` events[10].to is disqualified, recomputed \
             scored (`rounds/1` entries[1] is scored)\n  \
             ok   decision: 1 checks passed\n  \
             FAIL submissions: 1 of 3 checks failed\n\
             result: FAIL (1 of 4 checks failed)\n\
             archive data: 1 verified, 0 failed\n\
             submission records of 1 campaign: 0 verified, 1 failed\n  \
             submissions.rounds failed in data/tiny/submissions\n\
             result: FAIL (the submission records of 1 of 1 campaigns failed)\n"
        )
    );
    assert_eq!(forged.status.code(), Some(1));
}
