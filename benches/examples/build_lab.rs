//! Profiling aid: Origin's durable build (as the index benchmark runs it) on the corpus of
//! `ORIGIN_BENCH_EVENTS` events, into `<dir>`; prints the time and CPU.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use origin_benches::indexbench::{Feed, corpus_records, origin_build_with};

fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("a directory"));
    let (events, raw) = corpus_records();
    let _ = std::fs::remove_dir_all(&dir);
    let cpu = || {
        let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        let f: Vec<u64> = s.rsplit_once(')').map_or("", |(_, r)| r).split_whitespace().map(|x| x.parse().unwrap_or(0)).collect();
        (f[11] + f[12]) as f64 / 100.0
    };
    let c0 = cpu();
    let feed = if std::env::var_os("LAB_SEQUENTIAL").is_some() { Feed::Sequential } else { Feed::Pipelined };
    let b = origin_build_with(&raw, &dir, feed);
    println!("{} events ({feed:?}): {:.1} s wall, {:.1} s CPU, {}", events, b.secs, cpu() - c0, b.note);
}
