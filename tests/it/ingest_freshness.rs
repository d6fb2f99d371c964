//! Freshness: reads ingest at most every interval, writes always, the watch reads only files
//! that changed, and the last ingest on exit keeps to its budget.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use origin_ingest::freshness::{parse_read_interval, parse_watch_interval, Freshness, Say};

use crate::ingest_incremental::{event_counts, line, World};

fn append(w: &World, name: &str, text: String) {
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(w.log(name)).expect("open");
    f.write_all(text.as_bytes()).expect("append");
}

/// A [`Say`] that keeps what it is told.
fn heard() -> (Say, Arc<Mutex<Vec<String>>>) {
    let said = Arc::new(Mutex::new(Vec::new()));
    let keep = said.clone();
    (Arc::new(move |m: &str| keep.lock().expect("said").push(m.to_owned())), said)
}

fn quiet() -> Say {
    Arc::new(|m: &str| panic!("nothing should be said here, yet this was: {m}"))
}

#[test]
fn reads_ingest_at_most_every_interval_and_writes_always() {
    let w = World::new();
    append(&w, "a.jsonl", format!("{}\n", line("r1", "one")));
    let f = Freshness::with_intervals(Arc::new(w.ingester()), Duration::from_secs(3600), None, quiet());
    assert!(f.before_read().is_some(), "the first read ingests");
    append(&w, "a.jsonl", format!("{}\n", line("r2", "two")));
    assert!(f.before_read().is_none(), "a read within the interval does not");
    assert_eq!(event_counts(&w.store()).get("claude-code:r2"), None);
    let s = f.before_write().expect("write ingest");
    assert_eq!(s.sources["claude-code"].events, 1, "a write always ingests first");
    assert_eq!(event_counts(&w.store()).get("claude-code:r2"), Some(&1));
    let g = Freshness::with_intervals(Arc::new(w.ingester()), Duration::ZERO, None, quiet());
    append(&w, "a.jsonl", format!("{}\n", line("r3", "three")));
    assert!(g.before_read().is_some(), "past the interval a read ingests again");
    assert_eq!(event_counts(&w.store()).get("claude-code:r3"), Some(&1));
}

#[test]
fn the_watch_reads_only_files_that_changed() {
    let w = World::new();
    append(&w, "a.jsonl", format!("{}\n", line("w1", "one")));
    append(&w, "b.jsonl", format!("{}\n", line("w2", "two")));
    let f = Freshness::with_intervals(Arc::new(w.ingester()), Duration::from_secs(3600), Some(Duration::from_secs(3600)), quiet());
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
    let f = Freshness::with_intervals(Arc::new(w.ingester()), Duration::from_secs(3600), None, quiet());
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

#[test]
fn the_read_interval_is_read_from_its_variable() {
    assert_eq!(parse_read_interval(None), (Duration::from_secs(10), None));
    assert_eq!(parse_read_interval(Some("0")), (Duration::ZERO, None), "0: every read ingests");
    assert_eq!(parse_read_interval(Some("1500")), (Duration::from_millis(1500), None));
    let (d, warn) = parse_read_interval(Some("-1"));
    assert_eq!(d, Duration::from_secs(10));
    assert!(warn.expect("a warning").contains("ORIGIN_READ_INGEST_INTERVAL_MS"));
}

/// An ingest that cannot run (here its lock file is a folder) is said once, however often it
/// fails the same way; reads go on without it, writes fail with its error, the exit's ingest
/// ends; once it runs again, that is said, and what the logs held meanwhile is read.
#[test]
fn a_failing_ingest_is_said_once_reads_go_on_and_writes_fail_until_it_works_again() {
    let w = World::new();
    append(&w, "a.jsonl", format!("{}\n", line("f1", "before")));
    let (say, said) = heard();
    let f = Freshness::with_intervals(Arc::new(w.ingester()), Duration::ZERO, None, say);
    assert!(f.before_read().is_some());
    let lock = w.store().join("ingest.lock");
    std::fs::remove_file(&lock).expect("lock file");
    std::fs::create_dir(&lock).expect("a folder in its place");
    append(&w, "a.jsonl", format!("{}\n", line("f2", "while failing")));
    assert!(f.before_read().is_none(), "a read whose ingest fails goes on");
    assert!(f.before_read().is_none());
    let e = f.before_write().expect_err("a write's ingest fails");
    assert!(e.to_string().contains("ingest.lock"), "{e}");
    assert!(f.on_exit(Duration::from_secs(30)), "the exit's ingest ended (failing)");
    let heard_now = said.lock().expect("said").clone();
    assert_eq!(heard_now.len(), 1, "said once: {heard_now:?}");
    assert!(heard_now[0].contains("ingest.lock") && heard_now[0].contains("failed"), "{heard_now:?}");
    assert_eq!(event_counts(&w.store()).get("claude-code:f2"), None);
    std::fs::remove_dir(&lock).expect("folder gone");
    let s = f.before_read().expect("the read ingests again");
    assert_eq!(s.sources["claude-code"].events, 1);
    assert_eq!(event_counts(&w.store()).get("claude-code:f2"), Some(&1));
    assert!(f.before_read().is_some());
    let heard_now = said.lock().expect("said").clone();
    assert_eq!(heard_now.len(), 2, "{heard_now:?}");
    assert!(heard_now[1].contains("works again"), "{heard_now:?}");
}

/// The watch reads again at its next look what a run could not: every changed file after a
/// run that failed, and a file the run left out (here its mirror's place is taken by a
/// folder), though neither changed since.
#[test]
fn the_watch_looks_again_at_files_a_run_could_not_read() {
    let w = World::new();
    append(&w, "a.jsonl", format!("{}\n", line("k1", "one")));
    let (say, said) = heard();
    let f = Freshness::with_intervals(Arc::new(w.ingester()), Duration::from_secs(3600), Some(Duration::from_secs(3600)), say);
    let handle = f.start().expect("started");
    f.stop();
    handle.join().expect("background thread");
    assert_eq!(f.watch_once(), 0, "the start's run saw every file");
    let lock = w.store().join("ingest.lock");
    std::fs::remove_file(&lock).expect("lock file");
    std::fs::create_dir(&lock).expect("a folder in its place");
    append(&w, "a.jsonl", format!("{}\n", line("k2", "two")));
    assert_eq!(f.watch_once(), 1, "one file changed; the run fails");
    std::fs::remove_dir(&lock).expect("folder gone");
    assert_eq!(f.watch_once(), 1, "the file the failed run did not read is read now");
    assert_eq!(event_counts(&w.store()).get("claude-code:k2"), Some(&1));
    assert_eq!(f.watch_once(), 0);

    let first = crate::ingest_incremental::ingested(&w.store()).remove(0).mirror;
    let mut zst = w.ingester().mirrors().base(&first.replace("a.jsonl", "b.jsonl")).into_os_string();
    zst.push(".zst");
    std::fs::create_dir_all(&zst).expect("a folder in the mirror's place");
    append(&w, "b.jsonl", format!("{}\n", line("k3", "three")));
    assert_eq!(f.watch_once(), 1, "b.jsonl is new; the run leaves it out");
    assert_eq!(event_counts(&w.store()).get("claude-code:k3"), None);
    std::fs::remove_dir(&zst).expect("folder gone");
    assert_eq!(f.watch_once(), 1, "b.jsonl, left out, is read now");
    assert_eq!(event_counts(&w.store()).get("claude-code:k3"), Some(&1));
    assert_eq!(f.watch_once(), 0);
    let said = said.lock().expect("said").clone();
    assert_eq!(said.len(), 3, "the failure, its end, b.jsonl's problem: {said:?}");
    assert!(said[0].contains("failed") && said[1].contains("works again") && said[2].contains("b.jsonl: its mirror"), "{said:?}");
}

/// An index file of a sealed journal segment that could not be written (a folder sits in its
/// place) is said by the run that sealed the segment, once.
#[test]
fn an_index_file_the_ingest_could_not_write_is_said_once() {
    let w = World::new();
    let opts = origin_engine::Options { segment_size_bytes_max: 4096, ..origin_engine::Options::default() };
    let j = origin_engine::Journal::open(w.store().join("journal"), opts).expect("open journal");
    let first = j.segment_paths()[0].clone();
    let idx = first.with_extension("idx");
    std::fs::create_dir_all(idx.join("in the way")).expect("a folder in the index file's place");
    let ing = origin_ingest::Ingester::new(Arc::new(j), &w.store(), origin_ingest::Homes::under(&w.home()));
    let (say, said) = heard();
    let f = Freshness::with_intervals(Arc::new(ing), Duration::ZERO, None, say);
    // Text that does not compress, so that the records fill the small segment.
    let mut x: u64 = 0x9e37_79b9;
    for i in 0..8 {
        let text: String = (0..200)
            .map(|_| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                format!("{:x} ", x >> 40)
            })
            .collect();
        append(&w, "a.jsonl", format!("{}\n", line(&format!("i{i}"), &text)));
    }
    let s = f.before_read().expect("the read ingests");
    assert_eq!(s.sources["claude-code"].events, 8);
    // The next write finds the segment full and seals it.
    append(&w, "a.jsonl", format!("{}\n", line("i8", "one more")));
    assert!(f.before_read().is_some());
    assert!(f.ingester().journal().segment_paths().len() > 1, "the first segment was sealed");
    let heard_now = said.lock().expect("said").clone();
    assert_eq!(heard_now.len(), 1, "{heard_now:?}");
    assert!(heard_now[0].starts_with(&format!("could not write {} (", idx.display())), "{heard_now:?}");
    append(&w, "a.jsonl", format!("{}\n", line("i9", "and another")));
    assert!(f.before_read().is_some());
    assert_eq!(said.lock().expect("said").len(), 1, "said once");
}

/// A read just after a server starts finds the lines written before it: the start's run is
/// under way (a log large enough to take a while), and the read waits for it rather than
/// answering from a store it has not filled yet.
#[test]
fn a_read_waits_for_the_run_under_way() {
    let w = World::new();
    let lines: String = (0..50_000).map(|i| format!("{}\n", line(&format!("r{i}"), &format!("line number {i} of a long session")))).collect();
    append(&w, "a.jsonl", lines);
    let f = Freshness::with_intervals(Arc::new(w.ingester()), Duration::from_secs(3600), None, quiet());
    f.start().expect("the start's run");
    // Until the start's run has begun (it holds the run's lock from its first step).
    std::thread::sleep(Duration::from_millis(10));
    let read = f.before_read();
    let counts = event_counts(&w.store());
    assert_eq!(counts.len(), 50_000, "the read came back with {} of 50000 events in the store ({read:?})", counts.len());
}
