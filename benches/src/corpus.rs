//! The corpus of the index and tools benchmarks: a store (journal and mirrors) made by the real
//! ingest from generated agent logs ([`crate::agentlogs`], seeded, with the vocabularies of
//! [`crate::vocab`]), holding at least a given number of searchable events (messages, tool
//! calls and tool results: what the text index holds). Built once per (seed, size) and kept
//! under `ORIGIN_BENCH_CORPUS_DIR` (default `/work/scratch/origin-corpus` when `/work/scratch`
//! exists, else the system temp dir), because making a million events takes minutes.

use std::io;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use origin_engine::codec::IngestedView;
use origin_engine::record::{Event, RecordKind};
use origin_engine::{Journal, Options};
use origin_ingest::{Homes, Ingester};
use origin_projections::is_searchable;

/// Searchable events when `ORIGIN_BENCH_EVENTS` is not set.
pub const EVENTS_DEFAULT: u64 = 1_000_000;

/// The number of searchable events to build: `ORIGIN_BENCH_EVENTS`, else a million.
pub fn events_target() -> u64 {
    std::env::var("ORIGIN_BENCH_EVENTS").ok().and_then(|s| s.trim().parse().ok()).filter(|&n| n > 0).unwrap_or(EVENTS_DEFAULT)
}

/// A built corpus.
#[derive(Clone, Debug)]
pub struct CorpusStore {
    /// `$ORIGIN_HOME` of the store (`journal/`, `raw/`).
    pub store: PathBuf,
    /// The generated agents' home the store was ingested from.
    pub home: PathBuf,
    /// Bytes of generated logs.
    pub log_bytes: u64,
    /// Events in the journal.
    pub events: u64,
    /// Of those, searchable.
    pub searchable_events: u64,
}

fn base_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("ORIGIN_BENCH_CORPUS_DIR") {
        return PathBuf::from(d);
    }
    let scratch = Path::new("/work/scratch");
    if scratch.is_dir() { scratch.join("origin-corpus") } else { std::env::temp_dir().join("origin-corpus") }
}

/// Counts the events of a store's journal: all, and searchable.
pub fn count_events(journal: &Journal) -> io::Result<(u64, u64)> {
    let (mut all, mut searchable) = (0u64, 0u64);
    journal
        .read_from(0, |r| {
            if r.kind == RecordKind::Ingested as u8
                && let Ok(view) = IngestedView::open(r.kind_version, r.payload, r.offset)
                && let Ok(events) = view.events()
            {
                all += events.len() as u64;
                searchable += events.iter().filter(|e| is_searchable(e.kind)).count() as u64;
            }
            Ok(ControlFlow::Continue(()))
        })
        .map_err(io::Error::other)?;
    Ok((all, searchable))
}

fn ingest(home: &Path, store: &Path) -> io::Result<Journal> {
    let journal = Journal::open(store.join("journal"), Options::default()).map_err(io::Error::other)?;
    let ing = Ingester::new(Arc::new(journal), store, Homes::under(home));
    ing.run(None, &mut |_| {}).map_err(io::Error::other)?;
    let journal = Journal::open(store.join("journal"), Options::default()).map_err(io::Error::other)?;
    Ok(journal)
}

/// The corpus with at least `searchable` searchable events for `seed`, built if it is not
/// there yet (a sample first, to learn the bytes of log per event; then the logs, with a
/// margin; then the ingest).
pub fn store(searchable: u64, seed: u64) -> io::Result<CorpusStore> {
    let dir = base_dir().join(format!("{seed:016x}-{searchable}"));
    let ready = dir.join("ready");
    let home = dir.join("home");
    let store = dir.join("store");
    if let Ok(text) = std::fs::read_to_string(&ready) {
        let n: Vec<u64> = text.split_whitespace().filter_map(|x| x.parse().ok()).collect();
        if let [log_bytes, events, searchable_events] = n[..] {
            return Ok(CorpusStore { store, home, log_bytes, events, searchable_events });
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    // A sample of 32 MB gives the log bytes per searchable event.
    let sample = dir.join("sample");
    let sample_bytes = 32_000_000u64;
    let c = crate::agentlogs::generate(&sample.join("home"), sample_bytes, seed ^ 0x5a5a)?;
    let (_, sample_searchable) = count_events(&ingest(&sample.join("home"), &sample.join("store"))?)?;
    std::fs::remove_dir_all(&sample)?;
    let per_event = c.bytes as f64 / sample_searchable.max(1) as f64;
    let size = (searchable as f64 * per_event * 1.06) as u64;
    let corpus = crate::agentlogs::generate(&home, size, seed)?;
    let journal = ingest(&home, &store)?;
    let (events, searchable_events) = count_events(&journal)?;
    std::fs::write(&ready, format!("{} {events} {searchable_events}\n", corpus.bytes))?;
    Ok(CorpusStore { store, home, log_bytes: corpus.bytes, events, searchable_events })
}

/// One searchable event of the corpus and where it is.
#[derive(Clone, Debug)]
pub struct Located {
    /// Journal offset of its record.
    pub record: u64,
    /// Its index among the record's events.
    pub position: u32,
    /// Its source.
    pub source: String,
    /// The event.
    pub event: Event,
}

/// The searchable events of the first records of a store that hold at least `n` of them, in
/// journal order, one batch per record (whole records, so that a system fed the records and
/// one fed the events index the same events).
pub fn searchable_batches(journal: &Journal, n: u64) -> io::Result<Vec<Vec<Located>>> {
    let mut out: Vec<Vec<Located>> = Vec::new();
    let mut taken = 0u64;
    let mut failed = None;
    journal
        .read_from(0, |r| {
            if taken >= n {
                return Ok(ControlFlow::Break(()));
            }
            if r.kind != RecordKind::Ingested as u8 {
                return Ok(ControlFlow::Continue(()));
            }
            let view = match IngestedView::open(r.kind_version, r.payload, r.offset) {
                Ok(v) => v,
                Err(e) => {
                    failed = Some(e);
                    return Ok(ControlFlow::Break(()));
                }
            };
            let events = match view.events() {
                Ok(e) => e,
                Err(e) => {
                    failed = Some(e);
                    return Ok(ControlFlow::Break(()));
                }
            };
            let mut batch = Vec::new();
            for (i, e) in events.into_iter().enumerate() {
                if is_searchable(e.kind) {
                    batch.push(Located { record: r.offset, position: i as u32, source: view.head().source.clone(), event: e });
                    taken += 1;
                }
            }
            if !batch.is_empty() {
                out.push(batch);
            }
            Ok(ControlFlow::Continue(()))
        })
        .map_err(io::Error::other)?;
    if let Some(e) = failed {
        return Err(io::Error::other(e));
    }
    Ok(out)
}
