//! The tools on the command line, for a person: `origin search|timeline|get|sources|remember|
//! correct|forget|restore`, readable on a terminal, `--json` for scripts; and `origin mcp`.

use std::path::Path;

use anyhow::{Context, Result};
use clap::Args;
use serde_json::Value;
use origin_projections::Verify;

use crate::cli::AgentsArgs;
use crate::exit::Exit;
use crate::tools::archive::{Archive, EntryArgs, SearchArgs, SourceArg, TimelineArgs, ToolError};

/// `origin search`.
#[derive(Debug, Args)]
pub struct SearchCmd {
    /// Words or phrases; every word must occur ("quoted phrases" in order). When fewer than
    /// --limit hold every word, the best partial matches follow, marked as such.
    pub query: Option<String>,
    /// all, entries or events.
    #[arg(long)]
    pub scope: Option<String>,
    /// memory, knowledge or cognition.
    #[arg(long)]
    pub kind: Option<String>,
    /// 30m, 24h, 7d, 2w, a date, or ISO 8601.
    #[arg(long, allow_hyphen_values = true)]
    pub since: Option<String>,
    /// 30m, 24h, 7d, 2w, a date, or ISO 8601.
    #[arg(long, allow_hyphen_values = true)]
    pub until: Option<String>,
    /// claude-code, codex, cursor, zcode or grok.
    #[arg(long)]
    pub source: Option<String>,
    /// Project name.
    #[arg(long)]
    pub project: Option<String>,
    /// Also search tool calls and tool results.
    #[arg(long)]
    pub include_tools: bool,
    /// 1 to 100 (default 20).
    #[arg(long, allow_negative_numbers = true)]
    pub limit: Option<i64>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    agents: AgentsArgs,
}

/// `origin timeline`.
#[derive(Debug, Args)]
pub struct TimelineCmd {
    /// Sessions active since (default 7d).
    #[arg(long, allow_hyphen_values = true)]
    pub since: Option<String>,
    /// Sessions started before.
    #[arg(long, allow_hyphen_values = true)]
    pub until: Option<String>,
    /// claude-code, codex, cursor, zcode or grok.
    #[arg(long)]
    pub source: Option<String>,
    /// Project name.
    #[arg(long)]
    pub project: Option<String>,
    /// A session id: list its events.
    #[arg(long)]
    pub session: Option<String>,
    /// With --session: also tool calls, results, injected context and system events.
    #[arg(long, requires = "session")]
    pub include_tools: bool,
    /// 1 to 500 (default 50).
    #[arg(long, allow_negative_numbers = true)]
    pub limit: Option<i64>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    agents: AgentsArgs,
}

/// `origin get` / `origin sources`.
#[derive(Debug, Args)]
pub struct IdCmd {
    /// An entry id (ent_…) or an event id (<source>:…).
    pub id: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `origin remember`.
#[derive(Debug, Args)]
pub struct RememberCmd {
    /// One self-contained statement.
    pub text: String,
    /// memory, knowledge or cognition (default memory).
    #[arg(long)]
    pub kind: Option<String>,
    /// Cite an event by id (repeatable).
    #[arg(long = "cite", value_name = "EVENT_ID")]
    pub cite: Vec<String>,
    /// Cite the most recent message containing this quote (repeatable).
    #[arg(long = "quote", value_name = "TEXT")]
    pub quote: Vec<String>,
    /// 0 to 1.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub confidence: f64,
    /// Project name.
    #[arg(long)]
    pub project: Option<String>,
    /// When it starts to hold.
    #[arg(long, allow_hyphen_values = true)]
    pub valid_from: Option<String>,
    /// When it stops holding.
    #[arg(long, allow_hyphen_values = true)]
    pub valid_to: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    agents: AgentsArgs,
}

/// `origin correct`.
#[derive(Debug, Args)]
pub struct CorrectCmd {
    /// The entry's current version.
    pub id: String,
    /// The corrected statement.
    pub text: String,
    /// A new kind.
    #[arg(long)]
    pub kind: Option<String>,
    /// More sources: an event id (repeatable).
    #[arg(long = "cite", value_name = "EVENT_ID")]
    pub cite: Vec<String>,
    /// More sources: a quote (repeatable).
    #[arg(long = "quote", value_name = "TEXT")]
    pub quote: Vec<String>,
    /// A new confidence.
    #[arg(long, allow_negative_numbers = true)]
    pub confidence: Option<f64>,
    /// New validity start.
    #[arg(long, allow_hyphen_values = true)]
    pub valid_from: Option<String>,
    /// New validity end.
    #[arg(long, allow_hyphen_values = true)]
    pub valid_to: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    agents: AgentsArgs,
}

/// `origin forget`.
#[derive(Debug, Args)]
pub struct ForgetCmd {
    /// An entry id or an event id.
    pub id: String,
    /// Why (kept with the record).
    #[arg(long)]
    pub reason: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `origin restore`.
#[derive(Debug, Args)]
pub struct RestoreCmd {
    /// The tombstone (tmb_…).
    pub tombstone: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Opens the store for a command that does not search: the text index's segments are
/// verified only if a search or merge needs them.
fn open(home: &Path, agents: &AgentsArgs) -> Result<Archive> {
    open_verifying(home, agents, Verify::WhenNeeded)
}

/// Opens the store, its text index's segments verified as `verify` says.
fn open_verifying(home: &Path, agents: &AgentsArgs, verify: Verify) -> Result<Archive> {
    let homes = crate::ingest_cmd::homes(agents.agents_home.as_deref())?;
    Archive::open(home, Some(homes), agents.recorded_home.as_deref(), verify).with_context(|| format!("opening the store in {}", home.display()))
}

/// Opens the store for a command that reads no agents' logs (`get`, `sources`, `forget`,
/// `restore`, `tombstones`): it needs no `HOME`.
fn open_reading_no_logs(home: &Path) -> Result<Archive> {
    // These read no logs into the store: where there is none (a mistyped --home), opening one
    // would make an empty store, and answer as if the ids asked for were unknown.
    let journal = home.join("journal");
    if !journal.is_dir() {
        return Err(anyhow::Error::new(origin_engine::Error::NoJournal { dir: journal }));
    }
    Archive::open(home, None, None, Verify::WhenNeeded).with_context(|| format!("opening the store in {}", home.display()))
}

/// For a command that writes (`remember`, `correct`, `forget`, `restore`): a store that cannot
/// be written is refused before it is opened, as its tool would refuse it once opened (the
/// open's notes on reading it as it is would say the same again, and then what a write does
/// not need).
fn refused_write(home: &Path) -> Option<Exit> {
    let why = crate::journal_cmd::write_refused(&home.join("journal"), None)?;
    origin::say_err!("origin: {}", origin::tools::archive::write_refusal(home, &why));
    Some(Exit::Failed)
}

/// Records the state may reflect beyond its snapshot before a command saves it (and writes the
/// text index's waiting documents), so commands on a large store stay quick.
const CHECKPOINT_RECORDS: u64 = 64;

/// Runs one tool on the archive, prints its answer, then saves the projections if they are far
/// enough ahead of their snapshot (a failure there is reported; the answer stands).
fn print_after(a: &Archive, name: &str, tool: impl FnOnce(&Archive) -> Result<Value, ToolError>, json: bool) -> Result<Exit> {
    let exit = print(name, tool(a), json);
    if let Err(e) = a.checkpoint(CHECKPOINT_RECORDS) {
        origin::say_err!("origin: saving the projections snapshot failed ({e}); the next command replays the journal");
    }
    exit
}

fn print(name: &str, result: Result<Value, ToolError>, json: bool) -> Result<Exit> {
    match result {
        Ok(v) => {
            let text = if json { v.to_string() } else { crate::show::readable(&v, name) };
            let mut out = crate::out::Out::new();
            crate::out::say!(out, "{text}");
            Ok(Exit::Ok)
        }
        Err(e) => {
            match e.refused_argument() {
                // The tool's shape of a source means nothing on the command line.
                Some((arg, why)) => origin::say_err!("origin: {} {}", flag_of(arg), flags_in(why).replace(" ({ event_id, quote })", "")),
                None => origin::say_err!("origin: {e}"),
            }
            Ok(if e.is_journal_damage() {
                Exit::Damaged
            } else if e.is_invalid_input() {
                Exit::Usage
            } else {
                Exit::Failed
            })
        }
    }
}

/// The command line's name for a tool's argument (`limit` is `--limit`, a source's event id
/// `--cite`), so that a refusal says what to change on the line typed.
fn flag_of(arg: &str) -> String {
    let arg = match arg.split_once('[') {
        Some(("sources", rest)) if rest.ends_with("].event_id") => return "`--cite`".to_owned(),
        Some(("sources", rest)) if rest.ends_with("].quote") => return "`--quote`".to_owned(),
        Some(("sources", _)) => "sources",
        _ => arg,
    };
    match arg {
        "sources" => "`--cite` or `--quote`".to_owned(),
        "event_id" => "`--cite`".to_owned(),
        "text" | "query" | "id" | "tombstone" => format!("`{}`", arg.to_uppercase()),
        other => format!("`--{}`", other.replace('_', "-")),
    }
}

/// The tools' argument names, which a refusal's words may name in backquotes.
const ARGUMENTS: [&str; 20] = [
    "query", "scope", "kind", "since", "until", "source", "project", "include_tools", "limit", "session", "id", "text", "sources",
    "confidence", "valid_from", "valid_to", "reason", "tombstone", "event_id", "quote",
];

/// `why` with the tool arguments it names in backquotes named as [`flag_of`] names them; what
/// it quotes (a value given, in double quotes) left as it is.
fn flags_in(why: &str) -> String {
    let mut out = String::new();
    let (mut quoted, mut escaped) = (false, false);
    let mut rest = why;
    while let Some(c) = rest.chars().next() {
        if quoted {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => quoted = false,
                _ => {}
            }
        } else if c == '"' {
            quoted = true;
        } else if c == '`' {
            if let Some(len) = rest[1..].find('`') {
                let name = &rest[1..1 + len];
                if ARGUMENTS.contains(&name) {
                    out.push_str(&flag_of(name));
                    rest = &rest[len + 2..];
                    continue;
                }
            }
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

fn source_args(cite: &[String], quote: &[String]) -> Vec<SourceArg> {
    cite.iter()
        .map(|c| SourceArg { event_id: Some(c.clone()), quote: None })
        .chain(quote.iter().map(|q| SourceArg { event_id: None, quote: Some(q.clone()) }))
        .collect()
}

/// `origin mcp`.
pub fn mcp(home: &Path, agents: &AgentsArgs) -> Result<Exit> {
    let homes = crate::ingest_cmd::homes(agents.agents_home.as_deref())?;
    let (home, recorded) = (home.to_path_buf(), agents.recorded_home.clone());
    let opening = crate::tools::mcp::Opening::start(move || {
        // An agent's calls are answered, whoever holds the store's locks.
        Archive::open_for_agents(&home, Some(homes.clone()), recorded.as_deref(), Verify::Ahead)
            .with_context(|| format!("opening the store in {}", home.display()))
    })?;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().context("starting the async runtime")?;
    let served = rt.block_on(crate::tools::mcp::serve_stdio(opening));
    // Not waiting for the task that reads stdin: after a SIGTERM the client may keep stdin
    // open, and a read in progress would hold the runtime's end forever.
    rt.shutdown_background();
    served?;
    Ok(Exit::Ok)
}

/// `origin search`.
pub fn search(home: &Path, c: SearchCmd) -> Result<Exit> {
    // The segments checked while the state opens: the search needs them.
    let a = open_verifying(home, &c.agents, Verify::Ahead)?;
    let args = SearchArgs {
        query: c.query,
        scope: c.scope,
        kind: c.kind,
        since: c.since,
        until: c.until,
        source: c.source,
        project: c.project,
        include_tools: c.include_tools,
        limit: c.limit,
    };
    print_after(&a, "search", |a| a.search(&args), c.json)
}

/// `origin timeline`.
pub fn timeline(home: &Path, c: TimelineCmd) -> Result<Exit> {
    let a = open(home, &c.agents)?;
    let args = TimelineArgs {
        since: c.since,
        until: c.until,
        source: c.source,
        project: c.project,
        session: c.session,
        include_tools: c.include_tools,
        limit: c.limit,
    };
    print_after(&a, "timeline", |a| a.timeline(&args), c.json)
}

/// `origin get`.
pub fn get(home: &Path, c: IdCmd) -> Result<Exit> {
    print_after(&open_reading_no_logs(home)?, "get", |a| a.get(&c.id), c.json)
}

/// `origin sources`.
pub fn sources(home: &Path, c: IdCmd) -> Result<Exit> {
    print_after(&open_reading_no_logs(home)?, "sources", |a| a.sources(&c.id), c.json)
}

/// `origin remember`.
pub fn remember(home: &Path, c: RememberCmd) -> Result<Exit> {
    if let Some(exit) = refused_write(home) {
        return Ok(exit);
    }
    let a = open(home, &c.agents)?;
    let args = EntryArgs {
        id: None,
        kind: c.kind,
        text: Some(c.text),
        sources: source_args(&c.cite, &c.quote),
        confidence: Some(c.confidence),
        project: c.project,
        valid_from: c.valid_from,
        valid_to: c.valid_to,
    };
    print_after(&a, "remember", |a| a.remember(&args, "user"), c.json)
}

/// `origin correct`.
pub fn correct(home: &Path, c: CorrectCmd) -> Result<Exit> {
    if let Some(exit) = refused_write(home) {
        return Ok(exit);
    }
    let a = open(home, &c.agents)?;
    let args = EntryArgs {
        id: Some(c.id),
        kind: c.kind,
        text: Some(c.text),
        sources: source_args(&c.cite, &c.quote),
        confidence: c.confidence,
        project: None,
        valid_from: c.valid_from,
        valid_to: c.valid_to,
    };
    print_after(&a, "correct", |a| a.correct(&args, "user"), c.json)
}

/// `origin forget`.
pub fn forget(home: &Path, c: ForgetCmd) -> Result<Exit> {
    if let Some(exit) = refused_write(home) {
        return Ok(exit);
    }
    print_after(&open_reading_no_logs(home)?, "forget", |a| a.forget(&c.id, &c.reason, "user"), c.json)
}

/// `origin restore`.
pub fn restore(home: &Path, c: RestoreCmd) -> Result<Exit> {
    if let Some(exit) = refused_write(home) {
        return Ok(exit);
    }
    print_after(&open_reading_no_logs(home)?, "restore", |a| a.restore(&c.tombstone, "user"), c.json)
}

/// `origin tombstones`.
pub fn tombstones(home: &Path, json: bool) -> Result<Exit> {
    print_after(&open_reading_no_logs(home)?, "tombstones", |a| a.tombstones(), json)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The argument names of a refusal's words become flags; a value it quotes is left as
    /// given, backquotes and all.
    #[test]
    fn a_refusals_argument_names_become_flags_and_its_quoted_values_stay() {
        assert_eq!(flags_in("(x) is before `since` (y)"), "(x) is before `--since` (y)");
        assert_eq!(flags_in("must be after `valid_from`: never"), "must be after `--valid-from`: never");
        assert_eq!(flags_in("must be an id, not \"`abc`\""), "must be an id, not \"`abc`\"");
        assert_eq!(flags_in("\"`since` \\\" `x`\" then `limit`"), "\"`since` \\\" `x`\" then `--limit`");
        assert_eq!(flags_in("use `cargo test` or an `event_id`"), "use `cargo test` or an `--cite`");
        assert_eq!(flag_of("sources[2].quote"), "`--quote`");
        assert_eq!(flag_of("text"), "`TEXT`");
    }
}
