//! Profiling aid: Origin's durable build and tantivy's (one indexing thread), as the index
//! benchmark runs them, alternated `LAB_ROUNDS` times (default 3) in one process on the corpus
//! of `ORIGIN_BENCH_EVENTS` events, into `<dir>`: so that the ratio of the two is read off
//! pairs run side by side rather than from one run of each on a noisy machine.
//!
//! `LAB_WIDE`: each round also builds tantivy with `LAB_TANTIVY_THREADS` indexing threads
//! (default: every core) and SQLite FTS5 as the index benchmark builds it, and prints every
//! build against FTS5: what the fastest peer makes of the machine's cores beside the build
//! goals (5x FTS5, 1x tantivy with one thread).
#![allow(clippy::expect_used, clippy::unwrap_used)]

use origin_benches::corpus;
use origin_benches::indexbench::{Feed, fts5_build, origin_build_with, records, tantivy_build, tantivy_build_with};
use origin_engine::{Journal, Options};

fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("a directory"));
    let rounds: usize = std::env::var("LAB_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(3);
    let wide = std::env::var_os("LAB_WIDE").is_some();
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let threads: usize = std::env::var("LAB_TANTIVY_THREADS").ok().and_then(|s| s.parse().ok()).unwrap_or(cores).max(1);
    let n = corpus::events_target();
    let c = corpus::store(n, 0x1a7e_57a9_e10c_0002).expect("corpus");
    let src = Journal::open(c.store.join("journal"), Options { access: origin_engine::Access::ReadOnly, ..Options::default() }).expect("journal");
    let batches = corpus::searchable_batches(&src, n).expect("events");
    let raw = records(&src, &batches);
    let events: usize = batches.iter().map(Vec::len).sum();
    if wide {
        println!("{events} events on {cores} cores; {rounds} rounds of Origin, tantivy (1 thread), tantivy ({threads} threads), FTS5");
    } else {
        println!("{events} events; {rounds} rounds of Origin then tantivy");
    }
    for round in 0..rounds {
        let _ = std::fs::remove_dir_all(&dir);
        let o = origin_build_with(&raw, &dir.join("origin"), Feed::Pipelined);
        let (t, _) = tantivy_build(&batches, &dir.join("tantivy"));
        if !wide {
            println!("round {round}: Origin {:.1} s, tantivy {:.1} s: Origin at {:.2}x tantivy's events/s", o.secs, t.secs, t.secs / o.secs);
            continue;
        }
        let (tw, _) = tantivy_build_with(&batches, &dir.join("tantivy-wide"), threads);
        std::fs::create_dir_all(&dir).expect("dir");
        let f = fts5_build(&batches, &dir.join("fts5.db"));
        println!(
            "round {round}: FTS5 {:.1} s; Origin {:.1} s ({:.2}x FTS5); tantivy, 1 thread {:.1} s ({:.2}x); tantivy, {threads} threads {:.1} s ({:.2}x); 5x FTS5 is {:.1} s, {:.2}x the widest tantivy's events/s",
            f.secs,
            o.secs,
            f.secs / o.secs,
            t.secs,
            f.secs / t.secs,
            tw.secs,
            f.secs / tw.secs,
            f.secs / 5.0,
            tw.secs / (f.secs / 5.0)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
