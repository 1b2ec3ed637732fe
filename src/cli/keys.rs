//! `wxlake keys create|list|revoke|enable-stream`: the secret is printed once, alone on
//! stdout, so scripts can capture it.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use wxlake::access::keys::{KeyStore, Tier};
use wxlake::lake::Lake;

#[derive(Debug, Args)]
pub struct KeysArgs {
    /// State directory (default: next to a local lake).
    #[arg(long, env = "WXLAKE_STATE_DIR")]
    pub state_dir: Option<PathBuf>,
    #[command(subcommand)]
    pub command: KeysCommand,
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create a key; prints the secret alone on stdout (shown once, stored hashed).
    Create {
        /// professional, developer, enterprise or testing
        #[arg(long)]
        tier: Tier,
        #[arg(long)]
        user: String,
        /// May POST live ingest.
        #[arg(long)]
        admin: bool,
        /// May open the push stream.
        #[arg(long)]
        stream: bool,
        /// Create this many keys (one secret per line), e.g. for load tests.
        #[arg(long, default_value_t = 1)]
        count: u32,
    },
    /// List keys (never secrets).
    List,
    /// Revoke a key by id or secret prefix; takes effect in a running server within seconds.
    Revoke { key: String },
    /// Enable the push stream for a key id.
    EnableStream { key_id: String },
}

/// The state directory: explicit, or next to a local lake.
pub fn state_dir(lake: &Lake, explicit: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let dir = explicit
        .or_else(|| lake.default_state_dir())
        .ok_or_else(|| anyhow::anyhow!("a remote lake needs --state-dir for keys, WAL and event log"))?;
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

pub async fn run(lake: Lake, a: KeysArgs) -> anyhow::Result<ExitCode> {
    let store = KeyStore::open(state_dir(&lake, a.state_dir)?)?;
    match a.command {
        KeysCommand::Create { tier, user, admin, stream, count } => {
            for _ in 0..count.max(1) {
                let (rec, secret) = store.create(tier, &user, admin, stream)?;
                let flags = format!("{}{}", if admin { ", admin" } else { "" }, if stream { ", stream" } else { "" });
                eprintln!("created key {} for {} ({}{flags})", rec.id, rec.user, rec.tier);
                println!("{secret}");
            }
        }
        KeysCommand::List => {
            println!(
                "{:<12} {:<20} {:<13} {:<6} {:<7} {:<10} created",
                "id", "user", "tier", "admin", "stream", "status"
            );
            for k in store.list() {
                println!(
                    "{:<12} {:<20} {:<13} {:<6} {:<7} {:<10} {}",
                    k.id,
                    k.user,
                    k.tier.as_str(),
                    k.admin,
                    k.stream,
                    if k.is_active() { "active" } else { "revoked" },
                    k.created_at.format("%Y-%m-%d %H:%M:%S")
                );
            }
        }
        KeysCommand::Revoke { key } => {
            let rec = store.revoke(&key)?;
            eprintln!("revoked {} ({})", rec.id, rec.user);
        }
        KeysCommand::EnableStream { key_id } => {
            let rec = store.enable_stream(&key_id)?;
            eprintln!("stream enabled for {} ({})", rec.id, rec.user);
        }
    }
    Ok(ExitCode::SUCCESS)
}
