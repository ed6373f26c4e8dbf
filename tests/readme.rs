//! The README's walk-through runs as written: every code block tagged ```` ```sh by-hand ````
//! in `README.md` is run line by line, in a fresh temporary directory holding a copy of
//! `examples/`, with `HOME`, `REFEREE_DATA` (`<tmp>/data`, the `data/` the walk-through
//! names) and `REFEREE_KEY_DIR` (`<tmp>/home/.config/referee/keys`, the default key
//! directory under that `HOME`) pointing into it; each command must exit 0. A leading
//! `referee` is the binary this build made; the only other commands allowed are those of
//! [`ALLOWED`]. A line is one command: words, quotes, `~/` and `\` continuations, and
//! `#` comments — no pipes, redirections, variables or command substitution, which this
//! test refuses rather than runs.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use receipts::model::Campaign;

/// Commands other than `referee` a walk-through may run.
const ALLOWED: [&str; 3] = ["cp", "mkdir", "sha256sum"];

/// The most one command may take (a round of the walk-through takes seconds).
const COMMAND_LIMIT: Duration = Duration::from_secs(300);

/// The fence tag of a walk-through block.
const TAG: &str = "```sh by-hand";

/// The command lines of every `by-hand` block of `markdown`, continuations joined and
/// comments removed, with the README line number each starts on.
fn by_hand_lines(markdown: &str) -> Vec<(usize, String)> {
    let mut lines = Vec::new();
    let mut inside = false;
    let mut pending: Option<(usize, String)> = None;
    for (index, line) in markdown.lines().enumerate() {
        let number = index + 1;
        if !inside {
            inside = line.trim_end() == TAG;
            continue;
        }
        if line.trim_start().starts_with("```") {
            assert!(
                pending.is_none(),
                "README.md:{number}: a `\\` continuation runs into the end of the block"
            );
            inside = false;
            continue;
        }
        let (start, mut text) = pending.take().unwrap_or((number, String::new()));
        let continued = line.trim_end().ends_with('\\');
        let body = line.trim_end().trim_end_matches('\\');
        text.push_str(body);
        text.push(' ');
        if continued {
            pending = Some((start, text));
        } else if !strip_comment(&text).trim().is_empty() {
            lines.push((start, strip_comment(&text).trim().to_owned()));
        }
    }
    assert!(!inside, "README.md: a `by-hand` block is never closed");
    lines
}

/// `line` without a `#` comment (a `#` that starts a word outside quotes).
fn strip_comment(line: &str) -> &str {
    let mut quote = None;
    let mut previous = ' ';
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '#') if previous.is_whitespace() => return &line[..i],
            _ => {}
        }
        previous = c;
    }
    line
}

/// The words of one command line: whitespace-separated, `'…'` and `"…"` quoting, a
/// leading `~/` of a word replaced by `home`. Panics on shell syntax this test does not
/// run (`$`, `` ` ``, `|`, `&`, `;`, `<`, `>`, `(`, `)`, `*`, `?`, `\`).
fn words(line: &str, home: &Path, at: usize) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => word.get_or_insert_with(String::new).push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, '$' | '`' | '|' | '&' | ';' | '<' | '>' | '(' | ')' | '*' | '?' | '\\') => {
                panic!(
                    "README.md:{at}: `{line}` uses the shell syntax `{c}`: a by-hand line is one plain command (tests/readme.rs)"
                )
            }
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    assert!(
        quote.is_none(),
        "README.md:{at}: `{line}` has an open quote"
    );
    words.extend(word);
    words
        .into_iter()
        .map(|w| match w.strip_prefix("~/") {
            Some(rest) => home.join(rest).display().to_string(),
            None => w,
        })
        .collect()
}

/// Runs `command` in `dir` with the walk-through's environment; returns (success,
/// stdout, stderr), killing it after [`COMMAND_LIMIT`].
fn run(mut command: Command, at: usize, line: &str) -> (bool, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let mut child = command
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("README.md:{at}: starting `{line}`: {e}"));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > COMMAND_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("README.md:{at}: `{line}` ran longer than {COMMAND_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    (status.success(), read(&out), read(&err))
}

#[test]
fn readme_by_hand_walkthrough_runs() {
    let root = support::root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let lines = by_hand_lines(&readme);
    assert!(
        !lines.is_empty(),
        "README.md has no `{TAG}` block: the walk-through is what this test runs"
    );

    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    let home = tmp.path().join("home");
    testkit::copy_dir(&root.join("examples"), &work.join("examples"));
    std::fs::create_dir_all(&home).unwrap();
    let key_dir: PathBuf = home.join(".config/referee/keys");

    // Each digest `sha256sum` prints must be one the walk-through then uses.
    for (index, (at, line)) in lines.iter().enumerate() {
        let words = words(line, &home, *at);
        let (program, args) = words.split_first().expect("a non-empty line");
        let program = match program.as_str() {
            "referee" => PathBuf::from(env!("CARGO_BIN_EXE_referee")),
            other if ALLOWED.contains(&other) => PathBuf::from(other),
            other => panic!(
                "README.md:{at}: `{other}` is neither `referee` nor one of {ALLOWED:?} (tests/readme.rs)"
            ),
        };
        let mut command = Command::new(&program);
        command
            .args(args)
            .current_dir(&work)
            .env("HOME", &home)
            .env("REFEREE_DATA", work.join("data"))
            .env("REFEREE_KEY_DIR", &key_dir)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("RUST_LOG")
            .env("NO_COLOR", "1");
        let (ok, stdout, stderr) = run(command, *at, line);
        assert!(
            ok,
            "README.md:{at}: `{line}` failed\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
        );
        if words[0] == "sha256sum" {
            for digest in stdout.lines().filter_map(|l| l.split_whitespace().next()) {
                let used = lines[index + 1..].iter().any(|(_, l)| l.contains(digest));
                assert!(
                    used,
                    "README.md:{at}: `{line}` prints {digest}, which no later line of the walk-through uses (a stale commitment?)"
                );
            }
        }
    }
}

/// The walk-through's campaign pins the demo's baseline commit, which
/// `referee demo --prepare` builds (after a change of the demo baseline,
/// `REFEREE_REFRESH_DEMO=1` updates `examples/demo/`, not this file).
#[test]
fn the_by_hand_campaign_pins_the_demo_baseline() {
    let root = support::root();
    let demo = Campaign::from_toml("examples/demo/campaign.toml", referee::demo::CAMPAIGN_TOML)
        .expect("the demo campaign");
    let path = "examples/by-hand/campaign.toml";
    let text = std::fs::read_to_string(root.join(path)).unwrap();
    let by_hand = Campaign::from_toml(path, &text).expect("the by-hand campaign");
    assert_eq!(
        by_hand.baseline, demo.baseline,
        "`{path}` must pin the demo's baseline (`baseline` of examples/demo/campaign.toml)"
    );
}

#[test]
fn by_hand_lines_parse_as_one_command_each() {
    let markdown = "text\n```sh\nnot run\n```\n```sh by-hand\n# a comment\nreferee a \\\n    --b 'c d' # note\n\ncp x ~/y\n```\n";
    let lines = by_hand_lines(markdown);
    assert_eq!(
        lines,
        vec![
            (7, "referee a      --b 'c d'".to_owned()),
            (10, "cp x ~/y".to_owned())
        ]
    );
    let home = Path::new("/h");
    assert_eq!(words(&lines[0].1, home, 7), ["referee", "a", "--b", "c d"]);
    assert_eq!(words(&lines[1].1, home, 10), ["cp", "x", "/h/y"]);
}

#[test]
#[should_panic(expected = "shell syntax `|`")]
fn by_hand_lines_refuse_pipes() {
    words("sha256sum f | cut -c1-64", Path::new("/h"), 1);
}
