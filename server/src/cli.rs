//! Command-line definitions (every flag defined once) and dispatch.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};

use crate::exit::Exit;
use crate::journal_cmd;

/// Origin: a memory archive for coding agents.
#[derive(Debug, Parser)]
#[command(name = "origin", version, about, after_help = EXIT_CODES)]
pub struct Cli {
    /// Where the store lives [default: $ORIGIN_HOME, else ~/.origin]
    #[arg(long, global = true, value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

const EXIT_CODES: &str = "Exit codes: 0 success (verify: clean); 1 journal damaged (the message names segment and byte); \
2 bad command line (an argument or a value refused); 3 store unreadable or the operation failed (an unknown id, a refused \
write); 4 verify found only a torn tail (cut by the next write).";

/// Top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show the store: identity, segments, records, bytes, last offset, torn tails repaired.
    Status(JsonFlag),
    /// Read every agent's session logs on this machine into the store (only new lines).
    Ingest(IngestArgs),
    /// Operate on the journal: verify, dump, salvage, compact, replay, stress.
    #[command(subcommand)]
    Journal(JournalCommand),
    /// Serve the seven tools over MCP on stdio (what agents start).
    Mcp(AgentsArgs),
    /// Full-text search over entries and session events.
    Search(crate::tools_cmd::SearchCmd),
    /// Sessions in a time range, or the events of one session.
    Timeline(crate::tools_cmd::TimelineCmd),
    /// An entry with its sources and versions, or an event with its full text.
    Get(crate::tools_cmd::IdCmd),
    /// The original log lines behind an entry or an event.
    Sources(crate::tools_cmd::IdCmd),
    /// Save a new entry (author user@<device>).
    Remember(crate::tools_cmd::RememberCmd),
    /// Replace an entry with a corrected version.
    Correct(crate::tools_cmd::CorrectCmd),
    /// Hide an entry or an event (and what it cites, or what cites it).
    Forget(crate::tools_cmd::ForgetCmd),
    /// Lift a tombstone made by forget.
    Restore(crate::tools_cmd::RestoreCmd),
    /// List every tombstone (forget), lifted ones included.
    Tombstones(JsonFlag),
}

/// Where agents keep their logs (for commands that ingest first).
#[derive(Debug, Args, Clone, Default)]
pub struct AgentsArgs {
    /// Read the agents' folders under DIR instead of $HOME.
    #[arg(long, value_name = "DIR", global = true)]
    pub agents_home: Option<PathBuf>,
    /// The home directory as written inside the logs, when they come from another machine.
    #[arg(long, value_name = "PATH", global = true)]
    pub recorded_home: Option<String>,
}

/// `origin ingest`.
#[derive(Debug, Args)]
pub struct IngestArgs {
    /// Read the agents' folders under DIR instead of $HOME (each agent's override variable,
    /// such as CLAUDE_CONFIG_DIR or CODEX_HOME, still wins when set).
    #[arg(long, value_name = "DIR")]
    pub agents_home: Option<PathBuf>,
    /// The home directory as written inside the logs, when they come from another machine
    /// (used to find project folders, for their memory files, under --agents-home).
    #[arg(long, value_name = "PATH")]
    pub recorded_home: Option<String>,
    /// If no agent logs are found, read the sample logs in DIR instead (the repository ships
    /// some in tests/fixtures/agent-home, recorded under /home/dev).
    #[arg(long, value_name = "DIR")]
    pub samples_if_none: Option<PathBuf>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `--json` for scripts.
#[derive(Debug, Args)]
pub struct JsonFlag {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `origin journal ...`
#[derive(Debug, Subcommand)]
pub enum JournalCommand {
    /// Read every segment and frame; exit 0 when clean, 1 with segment and byte on damage.
    Verify(JsonFlag),
    /// Print records.
    Dump {
        /// First offset to print.
        #[arg(long, default_value_t = 0)]
        from: u64,
        /// Most records to print.
        #[arg(long, default_value_t = 100)]
        limit: usize,
        /// One JSON object per line, with the decoded payload.
        #[arg(long)]
        json: bool,
    },
    /// Copy every readable record into a new journal in DIR and list what was lost.
    Salvage {
        /// The new journal's directory (must not exist or be empty).
        #[arg(long, value_name = "DIR")]
        to: PathBuf,
    },
    /// Rebuild the projections from the journal (saved as the store's snapshot); with --until,
    /// the store as it was then, into a separate folder for inspection (origin --home DIR …).
    Replay {
        /// Stop at an offset (records below it) or a time (a date or ISO 8601); needs --to.
        #[arg(long, value_name = "OFFSET|TIME", requires = "to", value_parser = clap::builder::NonEmptyStringValueParser::new())]
        until: Option<String>,
        /// A new or empty folder (not the store's, nor inside its journal, projections or
        /// mirrors): it becomes a store of its own holding the
        /// records up to --until (all without it), with the state rebuilt from them; Origin reads
        /// no agents' logs into it.
        #[arg(long, value_name = "DIR")]
        to: Option<PathBuf>,
    },
    /// Rewrite sealed segments, merging small neighbours; verifies before replacing anything.
    Compact {
        /// Largest merged segment, in bytes.
        #[arg(long, default_value_t = origin_engine::limits::SEGMENT_SIZE_BYTES_DEFAULT, value_parser = segment_sizes())]
        segment_size: u64,
    },
    /// Exercise the durable write path on this disk: append scratch records (ignored by
    /// everything else) and print `ack <offset> <thread> <seq> <crc32>` as each is acknowledged.
    Stress {
        /// Records to append in all.
        #[arg(long, default_value_t = 10_000)]
        records: u64,
        /// Payload bytes per record.
        #[arg(long, default_value_t = 1024)]
        size: usize,
        /// Concurrent appenders.
        #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=1024))]
        threads: u64,
        /// Segment size in bytes.
        #[arg(long, default_value_t = origin_engine::limits::SEGMENT_SIZE_BYTES_DEFAULT, value_parser = segment_sizes())]
        segment_size: u64,
        /// Print only the summary, not an ack line per record.
        #[arg(long)]
        quiet: bool,
    },
}

/// The segment sizes the journal takes, for clap to refuse others (exit 2).
fn segment_sizes() -> clap::builder::RangedU64ValueParser {
    clap::value_parser!(u64).range(origin_engine::limits::SEGMENT_SIZE_BYTES_MIN..=origin_engine::limits::SEGMENT_SIZE_BYTES_MAX)
}

/// The store's home: `--home`, `ORIGIN_HOME`, or `~/.origin`, made absolute against the
/// current folder (the paths the tools give, `mirror_file` among them, are then whole). An
/// empty `HOME` is not a home (its `.origin` would be the current folder's), and an empty
/// `ORIGIN_HOME` names no folder (read here, not by the argument parser, which took it for
/// `--home` given without a value, even beside a `--home` that was).
pub fn home(cli_home: Option<PathBuf>) -> Result<PathBuf> {
    let home = match (cli_home, std::env::var_os("ORIGIN_HOME")) {
        (Some(h), _) => h,
        (None, Some(h)) if h.is_empty() => {
            anyhow::bail!("ORIGIN_HOME is set but empty: set it to the store's folder, unset it (the store is then ~/.origin), or pass --home DIR")
        }
        (None, Some(h)) => PathBuf::from(h),
        (None, None) => {
            let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).context("neither ORIGIN_HOME nor HOME is set (or it is empty): pass --home DIR")?;
            PathBuf::from(home).join(".origin")
        }
    };
    // A file where the store's folder should be: said as such by every command (each said
    // what it met first: no journal, a `stat` that failed, a replay file it could not read).
    if std::fs::metadata(&home).is_ok_and(|m| !m.is_dir()) {
        return Err(crate::exit::BadValue(format!("{}: a file, not a folder: the store is a folder (pass --home DIR, or set ORIGIN_HOME)", home.display())).into());
    }
    Ok(std::path::absolute(&home).unwrap_or(home))
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<Exit> {
    let home = home(cli.home)?;
    let journal_dir = home.join("journal");
    match cli.command {
        Command::Status(f) => journal_cmd::status(&home, &journal_dir, f.json),
        Command::Ingest(a) => crate::ingest_cmd::ingest(&home, &journal_dir, a),
        Command::Mcp(a) => crate::tools_cmd::mcp(&home, &a),
        Command::Search(c) => crate::tools_cmd::search(&home, c),
        Command::Timeline(c) => crate::tools_cmd::timeline(&home, c),
        Command::Get(c) => crate::tools_cmd::get(&home, c),
        Command::Sources(c) => crate::tools_cmd::sources(&home, c),
        Command::Remember(c) => crate::tools_cmd::remember(&home, c),
        Command::Correct(c) => crate::tools_cmd::correct(&home, c),
        Command::Forget(c) => crate::tools_cmd::forget(&home, c),
        Command::Restore(c) => crate::tools_cmd::restore(&home, c),
        Command::Tombstones(f) => crate::tools_cmd::tombstones(&home, f.json),
        Command::Journal(JournalCommand::Verify(f)) => journal_cmd::verify(&journal_dir, f.json),
        Command::Journal(JournalCommand::Dump { from, limit, json }) => journal_cmd::dump(&journal_dir, from, limit, json),
        Command::Journal(JournalCommand::Salvage { to }) => journal_cmd::salvage(&journal_dir, &to),
        Command::Journal(JournalCommand::Replay { until, to }) => journal_cmd::replay(&home, &journal_dir, until.as_deref(), to.as_deref()),
        Command::Journal(JournalCommand::Compact { segment_size }) => journal_cmd::compact(&journal_dir, segment_size),
        Command::Journal(JournalCommand::Stress { records, size, threads, segment_size, quiet }) => {
            journal_cmd::stress(&journal_dir, records, size, threads, segment_size, quiet)
        }
    }
}
