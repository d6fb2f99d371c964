//! Profiling aid: generates a corpus of agent logs once (kept in `<dir>/home`), then ingests
//! it into a fresh store `<dir>/store`, printing the time and CPU. `cargo run --release -p
//! origin-benches --example ingest_once -- <dir> [bytes]`; run it under `perf record`.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Instant;

use origin_benches::agentlogs;
use origin_engine::{Journal, Options};
use origin_ingest::{Homes, Ingester};

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().expect("a directory"));
    let bytes: u64 = args.next().map_or(128 << 20, |s| s.parse().expect("bytes"));
    let home = dir.join("home");
    if !home.exists() {
        agentlogs::generate(&home, bytes, 0x1a7e_57a9_e10c_0001).expect("generate");
    }
    let store = dir.join("store");
    let _ = std::fs::remove_dir_all(&store);
    let cpu = || {
        let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        let f: Vec<u64> = s.rsplit_once(')').map_or("", |(_, r)| r).split_whitespace().map(|x| x.parse().unwrap_or(0)).collect();
        (f[11] as f64 / 100.0, f[12] as f64 / 100.0)
    };
    let (u0, s0) = cpu();
    let start = Instant::now();
    let journal = Journal::open(store.join("journal"), Options::default()).expect("open");
    let ing = Ingester::new(Arc::new(journal), &store, Homes::under(&home));
    let summary = ing.run(None, &mut |_| {}).expect("ingest");
    let events: u64 = summary.sources.values().map(|r| r.events).sum();
    let read: u64 = summary.sources.values().map(|r| r.bytes).sum();
    let (u1, s1) = cpu();
    let (user, sys) = (u1 - u0, s1 - s0);
    println!("{read} bytes, {events} events in {:.2} s; process CPU {:.2} s (user {user:.2}, sys {sys:.2})", start.elapsed().as_secs_f64(), user + sys);
}
