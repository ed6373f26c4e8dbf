//! `referee engine …`: run the built-in reference engine as its own process.

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use builtin_engine::config::EngineConfig;
use builtin_engine::server::{self, ServeError, ServeOptions};

#[derive(clap::Subcommand, Debug)]
pub enum EngineCommand {
    /// Serve the built-in engine over the OpenAI-compatible HTTP API. The first stdout line
    /// is `listening on http://<host>:<port>`. With `--listen-fd 3` it serves on the
    /// listening socket it inherited as fd 3 (systemd socket activation, as the round
    /// runner starts it) instead of binding one. Exits with status 1 and a message saying
    /// what did not fit, and by how much, when the config does not fit in
    /// `--memory-limit-mb`.
    Serve(ServeArgs),
}

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// The engine config (`engine.toml`).
    #[arg(long)]
    config: PathBuf,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    /// Port to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 8000)]
    port: u16,
    /// Serve on this inherited, already listening socket instead of binding
    /// `--host`/`--port` (3 under socket activation, `LISTEN_FDS=1`).
    #[arg(long, conflicts_with_all = ["host", "port"])]
    listen_fd: Option<i32>,
    /// Device memory limit in MiB (the campaign's `hardware.memory_limit_mb`).
    #[arg(long, default_value_t = 81_920)]
    memory_limit_mb: u64,
    /// Compute threads; overrides the config's `threads`.
    #[arg(long)]
    threads: Option<usize>,
    /// The model name `/v1/models` lists.
    #[arg(long, default_value = "referee-builtin")]
    served_model_name: String,
    /// Also serve as a decision sidecar over these decisions (each one byte), on `POST
    /// /internal/v1/decide` with the bearer token of the environment's
    /// `REFEREE_DECIDE_TOKEN` (content/s1-pro-speed.md).
    #[arg(long, value_delimiter = ',')]
    decide: Option<Vec<String>>,
}

pub fn run(cmd: EngineCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        EngineCommand::Serve(args) => serve(args),
    }
}

fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.config)
        .with_context(|| format!("reading engine config `{}`", args.config.display()))?;
    let mut config = EngineConfig::from_toml(&args.config.display().to_string(), &text)?;
    if let Some(threads) = args.threads {
        anyhow::ensure!(threads >= 1, "`--threads` must be at least 1");
        config.threads = threads;
    }
    tracing::info!(config = ?config, "engine config `{}`", args.config.display());
    tracing::info!(
        cpu_features = %engines::hardware::cpu_features().join(" "),
        "matrix kernels chosen from these CPU features"
    );
    let decide = match args.decide {
        Some(decisions) => {
            let token = std::env::var(receipts::model::DECIDE_TOKEN_ENV).with_context(|| {
                format!(
                    "`--decide` needs the run's token in `{}`",
                    receipts::model::DECIDE_TOKEN_ENV
                )
            })?;
            Some(builtin_engine::decide::DecideOptions::new(
                decisions, token,
            )?)
        }
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    runtime.block_on(async move {
        let options = ServeOptions {
            served_model_name: args.served_model_name,
            memory_limit_mb: args.memory_limit_mb,
            decide,
        };
        let spawned = match args.listen_fd {
            Some(fd) => {
                anyhow::ensure!(fd > 2, "`--listen-fd` must be above 2 (not stdin/out/err)");
                // SAFETY: a descriptor inherited at exec that nothing in this process
                // opened, taken once, here.
                match unsafe { server::listener_from_fd(fd) } {
                    Ok(listener) => server::spawn_on(config, listener, options).await,
                    Err(err) => Err(err),
                }
            }
            None => server::spawn(config, SocketAddr::new(args.host, args.port), options).await,
        };
        let handle = match spawned {
            Ok(handle) => handle,
            Err(ServeError::OutOfMemory(oom)) => {
                eprintln!("{oom}");
                return Ok(ExitCode::from(1));
            }
            Err(err) => return Err(anyhow::Error::new(err)),
        };
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening on http://{}", handle.local_addr())?;
        stdout.flush()?;
        drop(stdout);
        tracing::info!(addr = %handle.local_addr(), "serving; /health turns 200 once the weights are drawn");
        shutdown_signal().await?;
        tracing::info!("shutting down");
        handle.shutdown().await.context("shutting the server down")?;
        Ok(ExitCode::SUCCESS)
    })
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
        tokio::select! {
            result = tokio::signal::ctrl_c() => result.context("waiting for SIGINT")?,
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    Ok(())
}
