//! Profiling aid: Origin's durable build (as the index benchmark runs it) on the corpus of
//! `ORIGIN_BENCH_EVENTS` events, into `<dir>`; prints the time and CPU.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use origin_benches::corpus;
use origin_benches::indexbench::{origin_build, records};
use origin_engine::{Access, Journal, Options};

fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("a directory"));
    let n = corpus::events_target();
    let c = corpus::store(n, 0x1a7e_57a9_e10c_0002).expect("corpus");
    let src = Journal::open(c.store.join("journal"), Options { access: Access::ReadOnly, ..Options::default() }).expect("journal");
    let batches = corpus::searchable_batches(&src, n).expect("events");
    let raw = records(&src, &batches);
    let _ = std::fs::remove_dir_all(&dir);
    let cpu = || {
        let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        let f: Vec<u64> = s.rsplit_once(')').map_or("", |(_, r)| r).split_whitespace().map(|x| x.parse().unwrap_or(0)).collect();
        (f[11] + f[12]) as f64 / 100.0
    };
    let c0 = cpu();
    let b = origin_build(&raw, &dir);
    println!("{} events: {:.1} s wall, {:.1} s CPU, {}", batches.iter().map(Vec::len).sum::<usize>(), b.secs, cpu() - c0, b.note);
}
