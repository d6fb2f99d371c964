//! `origin ingest`: read the agents' logs, with a progress bar on a terminal, then a summary
//! per source.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use origin_engine::{Journal, Options};
use origin_ingest::{Homes, Ingester, Progress, RunSummary};
use serde_json::json;

use crate::cli::IngestArgs;
use crate::exit::Exit;
use crate::out::{say, Out};
use crate::show;

/// The agents' folders: `--agents-home`, else `$HOME`, with each agent's override variable
/// (which still wins over `--agents-home`).
pub fn homes(agents_home: Option<&Path>) -> Result<Homes> {
    match agents_home {
        Some(dir) => {
            // Where it is not a folder, the commands that read the store go on without logs
            // (`ingest` refuses first), saying so: an agent's `origin mcp` registered with a
            // mistyped folder read nothing, and no one was told.
            if let Some(why) = not_a_folder(dir) {
                origin::say_err!("origin: --agents-home {}: {why}; no agents' logs are read from it", dir.display());
            }
            Ok(Homes::under(dir).with_overrides())
        }
        None => Homes::from_env().context("HOME is not set (or it is empty): pass --agents-home DIR"),
    }
}

/// Why `dir` is no folder to read agents' logs under: not there, or not a folder.
fn not_a_folder(dir: &Path) -> Option<&'static str> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => None,
        Ok(_) => Some("not a folder"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some("no such folder"),
        // Another failure (a folder that cannot be looked at) is said by the walk that reads it.
        Err(_) => None,
    }
}

fn open_journal(journal_dir: &Path) -> Result<Journal> {
    // A store that cannot be written takes nothing: said as such, not as a failure to lock.
    if let Some(refused) = crate::journal_cmd::write_refused(journal_dir, None) {
        anyhow::bail!("the store's journal in {} cannot be written ({refused}): nothing can be ingested into it", journal_dir.display());
    }
    let j = Journal::open(journal_dir, Options::default()).with_context(|| format!("opening the journal in {}", journal_dir.display()))?;
    crate::tools::archive::say_journal_repairs(&j);
    Ok(j)
}


/// Opens the store's journal for writing and builds an ingester over it.
pub fn ingester(home: &Path, journal_dir: &Path, homes: Homes, recorded_home: Option<&str>) -> Result<Ingester> {
    let ing = Ingester::new(Arc::new(open_journal(journal_dir)?), home, homes).with_snapshot(origin_ingest::snapshot::path_in(home));
    Ok(match recorded_home {
        Some(r) => ing.with_recorded_home(r),
        None => ing,
    })
}

/// `origin ingest`.
pub fn ingest(home: &Path, journal_dir: &Path, args: IngestArgs) -> Result<Exit> {
    if home.join(origin::tools::archive::REPLAY_FILE).exists() {
        anyhow::bail!(
            "{} is a replay of another store as it was (see its {}): it takes no agents' logs",
            home.display(),
            origin::tools::archive::REPLAY_FILE
        );
    }
    // A folder named on the line for ingest alone to read that is not there is a mistake to
    // say (it printed a table of zeros); each agent's own folder missing is not (the agent is
    // not installed), and the commands that read the store go on without logs (`origin mcp`
    // still serves the store).
    if let Some((dir, why)) = args.agents_home.as_deref().and_then(|d| not_a_folder(d).map(|why| (d, why))) {
        return Err(crate::exit::BadValue(format!("--agents-home {}: {why}", dir.display())).into());
    }
    let mut homes = homes(args.agents_home.as_deref())?;
    let mut recorded_home = args.recorded_home.clone();
    if let Some(samples) = &args.samples_if_none {
        let probe = Ingester::new(Arc::new(open_journal(journal_dir)?), home, homes.clone());
        let discovered = probe.discover();
        let found: usize = discovered.iter().map(|(_, files, _)| files.len()).sum();
        let problems: Vec<&String> = discovered.iter().flat_map(|(_, _, problems)| problems).collect();
        if found == 0 && !problems.is_empty() {
            // Logs that cannot be listed are not "no logs": the samples would stand in for them.
            for p in &problems {
                origin::say_err!("origin: {p}");
            }
            origin::say_err!("origin: agent log folders could not be read; not reading the samples in their place");
        } else if found == 0 {
            origin::say_err!("origin: no agent logs on this machine; reading the samples in {}", samples.display());
            homes = Homes::under(samples);
            recorded_home.get_or_insert_with(|| "/home/dev".to_owned());
        }
    }
    let ing = ingester(home, journal_dir, homes, recorded_home.as_deref())?;
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(
            indicatif::ProgressStyle::with_template("{spinner} reading agent logs [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    });
    let summary = ing
        .run(None, &mut |p| {
            if let Some(b) = &bar {
                match p {
                    Progress::Found { total_bytes, .. } => b.set_length(total_bytes),
                    Progress::Read { bytes } => b.inc(bytes),
                }
            }
        })
        .context("ingesting agent logs")?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    for m in ing.journal().take_index_write_failures() {
        origin::say_err!("origin: {m}");
    }
    // The next process starts its cursors from here; failing to save costs it reading the
    // journal past the cursors last saved (all of it when none are), nothing more.
    let projections = home.join("projections");
    if let Some(e) = origin_engine::vfs::folder_refusal(&origin_engine::vfs::OsFs, &projections) {
        origin::say_err!(
            "origin: the projections folder cannot be written ({}: {}): ingest's cursors are not saved, so the next start reads \
             the journal past the ones last saved",
            projections.display(),
            origin_engine::vfs::refusal_text(&e)
        );
    } else if let Err(e) = ing.save_snapshot() {
        origin::say_err!("origin: {e:#}; the next start reads the journal past the cursors last saved (all of it when none are)");
    }
    print_summary(&summary, args.json)?;
    Ok(Exit::Ok)
}

/// Prints what a run did, per source.
pub fn print_summary(summary: &RunSummary, json_out: bool) -> Result<()> {
    let mut out = Out::new();
    if json_out {
        let v: serde_json::Map<String, serde_json::Value> = summary
            .sources
            .iter()
            .map(|(id, r)| {
                (
                    (*id).to_owned(),
                    json!({
                        "files_found": r.files_found, "files_read": r.files_read, "lines": r.lines,
                        "events": r.events, "malformed": r.malformed, "cut": r.cut, "bytes": r.bytes,
                        "memory_versions": r.memory_versions, "problems": r.problems, "malformed_at": r.malformed_at,
                    }),
                )
            })
            .collect();
        say!(out, "{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    say!(out, "{:<12} {:>7} {:>7} {:>9} {:>9} {:>9} {:>5} {:>10} {:>7}", "source", "files", "read", "lines", "events", "malformed", "cut", "bytes", "memory");
    for (id, r) in &summary.sources {
        say!(out, 
            "{:<12} {:>7} {:>7} {:>9} {:>9} {:>9} {:>5} {:>10} {:>7}",
            id,
            r.files_found,
            r.files_read,
            r.lines,
            r.events,
            r.malformed,
            r.cut,
            show::bytes(r.bytes),
            r.memory_versions
        );
    }
    // What went wrong goes to stderr, beside the table a script may keep: files or folders
    // that could not be read, then where the malformed lines skipped are, so they can be
    // looked at.
    for (id, r) in &summary.sources {
        for p in &r.problems {
            origin::say_err!("origin: {id}: {p}");
        }
        for m in &r.malformed_at {
            origin::say_err!("origin: {id}: malformed line skipped: {m}");
        }
        if r.malformed > r.malformed_at.len() as u64 && !r.malformed_at.is_empty() {
            origin::say_err!("origin: {id}: and {} more malformed lines skipped", r.malformed - r.malformed_at.len() as u64);
        }
    }
    Ok(())
}
