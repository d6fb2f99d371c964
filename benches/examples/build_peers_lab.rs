//! Profiling aid: Origin's durable build and tantivy's (one indexing thread), as the index
//! benchmark runs them, alternated `LAB_ROUNDS` times (default 3) in one process on the corpus
//! of `ORIGIN_BENCH_EVENTS` events, into `<dir>`: so that the ratio of the two is read off
//! pairs run side by side rather than from one run of each on a noisy machine.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use origin_benches::corpus;
use origin_benches::indexbench::{Feed, origin_build_with, records, tantivy_build};
use origin_engine::{Journal, Options};

fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("a directory"));
    let rounds: usize = std::env::var("LAB_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(3);
    let n = corpus::events_target();
    let c = corpus::store(n, 0x1a7e_57a9_e10c_0002).expect("corpus");
    let src = Journal::open(c.store.join("journal"), Options { access: origin_engine::Access::ReadOnly, ..Options::default() }).expect("journal");
    let batches = corpus::searchable_batches(&src, n).expect("events");
    let raw = records(&src, &batches);
    let events: usize = batches.iter().map(Vec::len).sum();
    println!("{events} events; {rounds} rounds of Origin then tantivy");
    for round in 0..rounds {
        let _ = std::fs::remove_dir_all(&dir);
        let o = origin_build_with(&raw, &dir.join("origin"), Feed::Pipelined);
        let (t, _) = tantivy_build(&batches, &dir.join("tantivy"));
        println!("round {round}: Origin {:.1} s, tantivy {:.1} s: Origin at {:.2}x tantivy's events/s", o.secs, t.secs, t.secs / o.secs);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
