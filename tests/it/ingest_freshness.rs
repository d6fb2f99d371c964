//! Freshness: reads ingest at most every interval, writes always, the watch reads only files
//! that changed, and the last ingest on exit keeps to its budget.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use origin_ingest::freshness::{parse_watch_interval, Freshness};

use crate::ingest_incremental::{event_counts, line, World};

fn append(w: &World, name: &str, text: String) {
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(w.log(name)).expect("open");
    f.write_all(text.as_bytes()).expect("append");
}

#[test]
fn reads_ingest_at_most_every_interval_and_writes_always() {
    let w = World::new();
    append(&w, "a.jsonl", format!("{}\n", line("r1", "one")));
    let f = Freshness::with_intervals(Arc::new(w.ingester()), Duration::from_secs(3600), None);
    assert!(f.before_read().expect("read ingest").is_some(), "the first read ingests");
    append(&w, "a.jsonl", format!("{}\n", line("r2", "two")));
    assert!(f.before_read().expect("read ingest").is_none(), "a read within the interval does not");
    assert_eq!(event_counts(&w.store()).get("claude-code:r2"), None);
    let s = f.before_write().expect("write ingest");
    assert_eq!(s.sources["claude-code"].events, 1, "a write always ingests first");
    assert_eq!(event_counts(&w.store()).get("claude-code:r2"), Some(&1));
    let g = Freshness::with_intervals(Arc::new(w.ingester()), Duration::ZERO, None);
    append(&w, "a.jsonl", format!("{}\n", line("r3", "three")));
    assert!(g.before_read().expect("read ingest").is_some(), "past the interval a read ingests again");
    assert_eq!(event_counts(&w.store()).get("claude-code:r3"), Some(&1));
}

#[test]
fn the_watch_reads_only_files_that_changed() {
    let w = World::new();
    append(&w, "a.jsonl", format!("{}\n", line("w1", "one")));
    append(&w, "b.jsonl", format!("{}\n", line("w2", "two")));
    let f = Freshness::with_intervals(Arc::new(w.ingester()), Duration::from_secs(3600), Some(Duration::from_secs(3600)));
    let handle = f.start().expect("started once");
    assert!(f.start().is_none(), "start is once per process");
    f.stop();
    handle.join().expect("background thread");
    assert_eq!(event_counts(&w.store()).len(), 2, "the background ingest at start read everything");
    assert_eq!(f.watch_once(), 0, "nothing changed");
    append(&w, "b.jsonl", format!("{}\n", line("w3", "three")));
    assert_eq!(f.watch_once(), 1, "one file changed");
    assert_eq!(event_counts(&w.store()).get("claude-code:w3"), Some(&1));
}

#[test]
fn the_last_ingest_on_exit_finishes_within_its_budget() {
    let w = World::new();
    append(&w, "a.jsonl", format!("{}\n", line("x1", "said just before exit")));
    let f = Freshness::with_intervals(Arc::new(w.ingester()), Duration::from_secs(3600), None);
    assert!(f.on_exit(Duration::from_secs(30)), "a small ingest finishes within the budget");
    assert_eq!(event_counts(&w.store()).get("claude-code:x1"), Some(&1));
}

#[test]
fn the_watch_interval_is_read_from_its_variable() {
    assert_eq!(parse_watch_interval(None), (Some(Duration::from_secs(60)), None));
    assert_eq!(parse_watch_interval(Some("0")), (None, None));
    assert_eq!(parse_watch_interval(Some("250")), (Some(Duration::from_millis(250)), None));
    let (d, warn) = parse_watch_interval(Some("soon"));
    assert_eq!(d, Some(Duration::from_secs(60)));
    assert!(warn.expect("a warning").contains("ORIGIN_WATCH_INTERVAL_MS"));
}
