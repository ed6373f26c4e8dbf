//! `referee site build|serve|check`: the public site (content/site.md). `build` renders
//! a data directory's verified rounds into a static directory (the `site` crate);
//! `serve` previews such a directory on 127.0.0.1 (axum and tower-http live here, in the
//! binary: the `site` crate links no HTTP stack); `check` checks a built site's links,
//! ids, titles and data files. Exit 0 on success, 1 when `check` finds a problem, 2 on a
//! usage or I/O error (a private key in the data directory included).

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use ::site::{BuildOptions, BuildSummary};

use super::show::TrustArgs;

/// `referee site …`.
#[derive(clap::Subcommand, Debug)]
pub enum SiteCommand {
    /// Verify every bundle of the data directory, each as of its own seal time unless
    /// --at is given, and render the site into --out (only what changed is rewritten).
    Build(BuildArgs),
    /// Preview a built site on http://127.0.0.1:<port>/ (Ctrl-C stops it).
    Serve(ServeArgs),
    /// Check a built site: every internal link and #fragment resolves, no duplicate
    /// ids, every page has a <title> and lang, every linked CSV/JSON parses.
    Check(CheckArgs),
}

/// Arguments of `referee site build`.
#[derive(clap::Args, Debug)]
pub struct BuildArgs {
    /// The output directory (created; a directory holding files no site build wrote is
    /// refused).
    #[arg(long)]
    pub out: PathBuf,
    /// The URL the site is published at (feeds, sitemap, canonical links); links stay
    /// relative either way.
    #[arg(long, default_value = "")]
    pub base_url: String,
    /// Remove the previous build's files first and render everything again.
    #[arg(long)]
    pub clean: bool,
    /// Build even when the data directory's transparency log fails its checks: the log
    /// is not served and the front page says why (without this the build fails).
    #[arg(long)]
    pub allow_unlogged: bool,
    #[command(flatten)]
    pub trust: TrustArgs,
}

/// Arguments of `referee site serve`.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// The built site.
    #[arg(long, default_value = "public")]
    pub dir: PathBuf,
    /// The port on 127.0.0.1.
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
}

/// Arguments of `referee site check`.
#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// The built site.
    pub dir: PathBuf,
}

/// Runs `referee site …`.
pub fn run(command: SiteCommand) -> anyhow::Result<ExitCode> {
    match command {
        SiteCommand::Build(args) => run_build(args),
        SiteCommand::Serve(args) => run_serve(args),
        SiteCommand::Check(args) => run_check(args),
    }
}

fn run_build(args: BuildArgs) -> anyhow::Result<ExitCode> {
    let options = BuildOptions {
        data: args.trust.data.data.clone(),
        keyring: args.trust.keyring_path(),
        out: args.out.clone(),
        base_url: args.base_url,
        clean: args.clean,
        at: args.trust.at,
        allow_unlogged: args.allow_unlogged,
    };
    if args.allow_unlogged {
        eprintln!(
            "--allow-unlogged: a transparency log that fails its checks is not served, and the site says so"
        );
    }
    let summary = ::site::build_site(&options)
        .with_context(|| format!("building the site into `{}`", args.out.display()))?;
    let mut out = std::io::stdout().lock();
    if args.trust.json {
        writeln!(out, "{}", summary_json(&summary))?;
    } else {
        out.write_all(render_summary(&summary, &args.out).as_bytes())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// What `site build` prints (also at the end of `referee demo`).
pub(super) fn render_summary(s: &BuildSummary, out: &std::path::Path) -> String {
    let log = s
        .log
        .as_ref()
        .map(|l| format!("transparency log {l}\n"))
        .unwrap_or_default();
    format!(
        "{} rounds verified ({} verdicts from the cache), {} rejected\n\
         {} HTML pages ({} written), {} other files written, {} unchanged, {} removed\n\
         verify {} ms, render and write {} ms\n\
         {}open {}\n",
        s.verified_rounds,
        s.cached_verdicts,
        s.rejected_rounds,
        s.html_pages,
        s.html_written,
        s.other_written,
        s.unchanged,
        s.removed,
        s.verify_ms,
        s.render_write_ms,
        log,
        out.join("index.html").display()
    )
}

fn summary_json(s: &BuildSummary) -> serde_json::Value {
    serde_json::json!({
        "verifiedRounds": s.verified_rounds,
        "rejectedRounds": s.rejected_rounds,
        "cachedVerdicts": s.cached_verdicts,
        "htmlPages": s.html_pages,
        "htmlWritten": s.html_written,
        "otherWritten": s.other_written,
        "unchanged": s.unchanged,
        "removed": s.removed,
        "jobs": s.jobs,
        "jobsRun": s.jobs_run,
        "verifyMs": s.verify_ms,
        "renderWriteMs": s.render_write_ms,
        "log": s.log,
    })
}

fn run_serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    if !args.dir.is_dir() {
        anyhow::bail!(
            "`{}` is not a directory (build the site first: referee site build --out {})",
            args.dir.display(),
            args.dir.display()
        );
    }
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, args.port));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("listening on {addr}"))?;
        println!(
            "serving {} on http://{addr}/ (Ctrl-C stops)",
            args.dir.display()
        );
        let app =
            axum::Router::new().fallback_service(tower_http::services::ServeDir::new(&args.dir));
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
            .context("serving")
    })?;
    Ok(ExitCode::SUCCESS)
}

fn run_check(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let report = ::site::check::check_site(&args.dir)
        .with_context(|| format!("checking `{}`", args.dir.display()))?;
    let mut out = std::io::stdout().lock();
    for problem in &report.problems {
        writeln!(out, "{problem}")?;
    }
    writeln!(
        out,
        "{} pages, {} internal links, {} data files, {} external links: {}",
        report.pages,
        report.internal_links,
        report.data_files,
        report.external_links.len(),
        if report.is_clean() {
            "no problems".to_owned()
        } else {
            format!("{} problems", report.problems.len())
        }
    )?;
    Ok(if report.is_clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
