//! review-server: wiring only (docs/architecture.md, Layout). See the library for everything else.

use clap::Parser;
use review_server::config::{Cli, Command, DbCommand, SessionCommand};
use review_server::{cli, eval, serve, shutdown_signal};
use tracing_subscriber::EnvFilter;

fn main() -> anyhow::Result<()> {
    let args = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        // Colour only on a terminal: log files and journald get plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        match args.command {
            None | Some(Command::Serve) => {
                let listener = tokio::net::TcpListener::bind(args.config.listen).await?;
                serve(args.config, listener, shutdown_signal()).await
            }
            Some(Command::Session {
                command: SessionCommand::Export { session_id },
            }) => cli::session_export(&args.config, &session_id).await,
            Some(Command::Review(review)) => cli::review_local(&args.config, &review).await,
            Some(Command::Eval(eval)) => eval::run(&args.config, &eval).await,
            Some(Command::Db {
                command: DbCommand::Copy { to },
            }) => cli::db_copy(&args.config, &to).await,
        }
    })
}
