//! The driver of `scripts/bench-site` (issue 18, Performance): makes the synthetic
//! archive, builds the site of it and times the build, and makes the Hugo site it is
//! compared with. Build it with `cargo build --release -p site --example bench_site`.
//!
//! ```text
//! bench_site generate --template <round dir> --data <dir> --rounds N [--entries 8] [--miners 100]
//! bench_site append   --template <round dir> --data <dir> [--entries 8] [--miners 100]
//! bench_site build    --data <dir> --out <dir> [--clean]
//! bench_site hugo-site --dir <dir> --pages N [--minimal]
//! bench_site hugo-add  --dir <dir> --page I [--minimal]
//! bench_site hugo-watch --dir <dir> --out <dir> --page I [--count 3] [--port P] [--minimal]
//! ```
//!
//! `build` prints one JSON line: the build's summary (pages, files written, the
//! verification and the render+write stage in ms), its wall time and the process's peak
//! RSS (`VmHWM`, KiB).

#[path = "../benches/synthetic/mod.rs"]
mod synthetic;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use site::{BuildOptions, build_site};
use synthetic::{Config, Generator, Result, Template};

fn main() {
    if let Err(e) = run() {
        eprintln!("bench_site: {e}");
        std::process::exit(2);
    }
}

/// `--name value` pairs and bare `--flag`s after the subcommand.
fn options(args: &[String]) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let mut i = 0;
    while i < args.len() {
        let name = args[i]
            .strip_prefix("--")
            .ok_or_else(|| format!("unexpected argument `{}`", args[i]))?;
        match args.get(i + 1).filter(|v| !v.starts_with("--")) {
            Some(value) => {
                out.insert(name.to_owned(), value.clone());
                i += 2;
            }
            None => {
                out.insert(name.to_owned(), String::new());
                i += 1;
            }
        }
    }
    Ok(out)
}

fn required<'a>(options: &'a BTreeMap<String, String>, name: &str) -> Result<&'a str> {
    options
        .get(name)
        .map(String::as_str)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| format!("--{name} is required").into())
}

fn number<T: std::str::FromStr>(
    options: &BTreeMap<String, String>,
    name: &str,
    default: T,
) -> Result<T> {
    match options.get(name) {
        None => Ok(default),
        Some(v) => v
            .parse()
            .map_err(|_| format!("--{name}: not a number: `{v}`").into()),
    }
}

fn config(options: &BTreeMap<String, String>) -> Result<Config> {
    let default = Config::default();
    Ok(Config {
        entries: number(options, "entries", default.entries)?,
        miners: number(options, "miners", default.miners)?,
        seed: number(options, "seed", default.seed)?,
        rejected_submissions: !options.contains_key("no-rejected"),
    })
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (command, rest) = args
        .split_first()
        .ok_or("usage: bench_site <command> [options] (see the source)")?;
    let options = options(rest)?;
    match command.as_str() {
        "generate" => {
            let template = Template::load(Path::new(required(&options, "template")?))?;
            let data = PathBuf::from(required(&options, "data")?);
            if data.exists() {
                return Err(format!(
                    "{} exists: remove it (and its .objects) first",
                    data.display()
                )
                .into());
            }
            let rounds: u64 = number(&options, "rounds", 10_000)?;
            let started = Instant::now();
            let mut generator = Generator::new(&template, &data, config(&options)?)?;
            generator.rounds_from_scratch(rounds, |n| {
                if n % 1000 == 0 {
                    eprintln!("  {n} rounds, {:.1} s", started.elapsed().as_secs_f64());
                }
            })?;
            println!(
                "{{\"rounds\":{rounds},\"generate_ms\":{}}}",
                started.elapsed().as_millis()
            );
        }
        "append" => {
            let template = Template::load(Path::new(required(&options, "template")?))?;
            let data = PathBuf::from(required(&options, "data")?);
            let started = Instant::now();
            let mut generator = Generator::new(&template, &data, config(&options)?)?;
            let n = generator.append()?;
            println!(
                "{{\"round\":{n},\"append_ms\":{}}}",
                started.elapsed().as_millis()
            );
        }
        "build" => {
            let data = PathBuf::from(required(&options, "data")?);
            let keyring = options
                .get("keyring")
                .map_or_else(|| data.join("keyring.json"), PathBuf::from);
            let started = Instant::now();
            let summary = build_site(&BuildOptions {
                data,
                keyring,
                out: PathBuf::from(required(&options, "out")?),
                base_url: options.get("base-url").cloned().unwrap_or_default(),
                clean: options.contains_key("clean"),
                at: None,
                allow_unlogged: false,
            })?;
            let wall_ms = started.elapsed().as_millis();
            println!(
                "{{\"html_pages\":{},\"html_written\":{},\"other_written\":{},\"unchanged\":{},\
                 \"removed\":{},\"jobs_run\":{},\"jobs\":{},\"verified_rounds\":{},\
                 \"rejected_rounds\":{},\"cached_verdicts\":{},\"verify_ms\":{},\
                 \"render_write_ms\":{},\"wall_ms\":{},\"peak_rss_kib\":{}}}",
                summary.html_pages,
                summary.html_written,
                summary.other_written,
                summary.unchanged,
                summary.removed,
                summary.jobs_run,
                summary.jobs,
                summary.verified_rounds,
                summary.rejected_rounds,
                summary.cached_verdicts,
                summary.verify_ms,
                summary.render_write_ms,
                wall_ms,
                peak_rss_kib().unwrap_or(0),
            );
        }
        "hugo-site" => {
            let dir = PathBuf::from(required(&options, "dir")?);
            let pages: u64 = number(&options, "pages", 0)?;
            hugo_site(&dir, pages, options.contains_key("minimal"))?;
        }
        "hugo-add" => {
            let dir = PathBuf::from(required(&options, "dir")?);
            hugo_page(
                &dir,
                number(&options, "page", 0)?,
                options.contains_key("minimal"),
            )?;
        }
        "hugo-watch" => {
            let dir = PathBuf::from(required(&options, "dir")?);
            let out = PathBuf::from(required(&options, "out")?);
            let page: u64 = number(&options, "page", 0)?;
            let port: u16 = number(&options, "port", 31_318)?;
            let count: u64 = number(&options, "count", 3)?;
            let ms = hugo_watch(
                &dir,
                &out,
                page,
                count,
                port,
                options.contains_key("minimal"),
            )?;
            let ms: Vec<String> = ms.iter().map(u128::to_string).collect();
            println!("{{\"watch_add_page_ms\":[{}]}}", ms.join(","));
        }
        other => return Err(format!("unknown command `{other}`").into()),
    }
    Ok(())
}

/// This process's peak resident set (`VmHWM` of `/proc/self/status`), KiB.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Pages per content directory of the Hugo site.
const HUGO_BUCKET: u64 = 1000;

/// A theme-less Hugo site of `pages` generated markdown pages (`content/p/<bucket>/<i>.md`)
/// with one `single.html` and one `list.html` layout; every kind but pages, sections and
/// the home page is disabled, so it renders `pages + 2` HTML files (the pages, the `p`
/// section, the home page). `minimal`: each page is its title and one paragraph.
fn hugo_site(dir: &Path, pages: u64, minimal: bool) -> Result<()> {
    std::fs::create_dir_all(dir.join("layouts/_default"))?;
    std::fs::write(
        dir.join("hugo.toml"),
        "baseURL = \"https://scoreboard.example/\"\ntitle = \"bench\"\n\
         disableKinds = [\"taxonomy\", \"term\", \"RSS\", \"sitemap\", \"robotsTXT\", \"404\"]\n",
    )?;
    std::fs::write(
        dir.join("layouts/_default/single.html"),
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{{ .Title }}</title>\
         <link rel=\"stylesheet\" href=\"{{ \"style.css\" | relURL }}\"></head>\n<body><main>\
         <h1>{{ .Title }}</h1>\n{{ .Content }}\n</main></body></html>\n",
    )?;
    std::fs::write(
        dir.join("layouts/_default/list.html"),
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{{ .Title }}</title></head>\n\
         <body><main><h1>{{ .Title }}</h1>\n<ul>{{ range first 50 .Pages }}<li><a href=\"{{ .RelPermalink }}\">\
         {{ .Title }}</a></li>{{ end }}</ul>\n</main></body></html>\n",
    )?;
    for i in 0..pages {
        hugo_page(dir, i, minimal)?;
    }
    Ok(())
}

/// Writes page `i` of the Hugo site: front matter, headings, prose, a 9-row table, a
/// list and a fenced diff, about 3 KB of markdown (a round page's table and text); with
/// `minimal`, the front matter, one heading and one paragraph (about 0.4 KB).
fn hugo_page(dir: &Path, i: u64, minimal: bool) -> Result<()> {
    let bucket = dir.join(format!("content/p/{:03}", i / HUGO_BUCKET));
    std::fs::create_dir_all(&bucket)?;
    let mut md = format!(
        "---\ntitle: \"Round {} · entry {}\"\ndate: 2026-12-02T01:22:15Z\n---\n\n\
         ## Summary\n\nRound {} of campaign `demo`: 7 challengers, 4 scored, 3 disqualified. \
         Settled in 3 m 5 s. Top score −0.0982 (0 is baseline speed); the leader did not change \
         (`margin_not_met`). Every figure below is recomputed by the verifier from the bundle's \
         own files.\n\n## Entries\n\n| role | miner | patch | status | score | throughput |\n\
         |---|---|---|---|---:|---:|\n",
        i / 9 + 1,
        i % 9,
        i / 9 + 1
    );
    if minimal {
        let cut = md.find("## Entries").unwrap_or(md.len());
        md.truncate(cut);
        std::fs::write(bucket.join(format!("{i}.md")), md)?;
        return Ok(());
    }
    for row in 0..9u64 {
        md.push_str(&format!(
            "| challenger | miner-{:04} | `{:016x}` | scored | {:+.4} | {}.{:03} req/s |\n",
            (i * 7 + row) % 100 + 1,
            (i + 1)
                .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                .rotate_left(row as u32),
            -0.1 + row as f64 * 0.013,
            14 + row,
            (i * 31 + row * 7) % 1000
        ));
    }
    md.push_str(
        "\n## Timeline\n\n- Setup: probing the machine, drawing seeds and opening the round\n\
         - Baseline, pass 1: starting the engine, running SLA, running correctness\n\
         - Candidate 1 of 7, pass 1: starting the engine, running SLA, running correctness\n\
         - Scorer: running the shared scorer\n- Teardown: releasing the machine\n\n\
         ## Patch\n\n```diff\ndiff --git a/engine.toml b/engine.toml\n--- a/engine.toml\n\
         +++ b/engine.toml\n@@ -5,3 +5,3 @@\n context = 256\n-max_num_seqs = 1\n+max_num_seqs = 8\n\
          max_num_batched_tokens = 256\n```\n\nVerify it: `referee verify demo-round-1 --keyring keyring.json`.\n",
    );
    std::fs::write(bucket.join(format!("{i}.md")), md)?;
    Ok(())
}

/// `hugo server` watching `dir` and rendering to `out`: once it reports its first build
/// done ("Web Server is available"), adds pages `page`, `page + 1`, … (`count` of them,
/// each 2 s after the previous one appeared) and returns, for each, the ms until its HTML
/// file appears (polled every millisecond).
fn hugo_watch(
    dir: &Path,
    out: &Path,
    page: u64,
    count: u64,
    port: u16,
    minimal: bool,
) -> Result<Vec<u128>> {
    use std::io::BufRead;
    let mut child = Command::new("hugo")
        .args([
            "server",
            "--renderToDisk",
            "--disableLiveReload",
            "--watch",
            "--bind",
            "127.0.0.1",
        ])
        .arg("--port")
        .arg(port.to_string())
        .arg("--source")
        .arg(dir)
        .arg("--destination")
        .arg(out)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let stdout = child.stdout.take().ok_or("hugo server: no stdout")?;
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(std::io::Result::ok)
        {
            if line.contains("Web Server is available") {
                let _ = ready_tx.send(());
            }
        }
    });
    let result = (|| -> Result<Vec<u128>> {
        ready_rx
            .recv_timeout(Duration::from_secs(900))
            .map_err(|_| "hugo server: no first build within 900 s")?;
        let mut times = Vec::new();
        for page in page..page + count {
            // Let the watcher settle.
            std::thread::sleep(Duration::from_secs(2));
            let target = out.join(format!("p/{:03}/{page}/index.html", page / HUGO_BUCKET));
            let started = Instant::now();
            hugo_page(dir, page, minimal)?;
            while !target.exists() {
                if started.elapsed() > Duration::from_secs(600) {
                    return Err(format!("hugo server: {} did not appear", target.display()).into());
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            times.push(started.elapsed().as_millis());
        }
        Ok(times)
    })();
    let _ = child.kill();
    let _ = child.wait();
    result
}
