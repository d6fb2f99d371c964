//! Builds (or finds) the benchmark corpus and prints what it holds: `cargo run --release -p
//! origin-benches --example corpus_stats` (`ORIGIN_BENCH_EVENTS` sets its size).
#![allow(clippy::expect_used, clippy::unwrap_used)]

use origin_benches::corpus;
use origin_engine::{Journal, Options};

fn main() {
    let n = corpus::events_target();
    let t = std::time::Instant::now();
    let c = corpus::store(n, 0x1a7e_57a9_e10c_0002).expect("corpus");
    println!("{c:?} in {:.1} s", t.elapsed().as_secs_f64());
    let j = Journal::open(c.store.join("journal"), Options::default()).expect("journal");
    let batches = corpus::searchable_batches(&j, n).expect("events");
    let events: Vec<&corpus::Located> = batches.iter().flatten().collect();
    let bytes: usize = events.iter().map(|e| e.event.text.len()).sum();
    let mut kinds = std::collections::BTreeMap::new();
    for e in &events {
        *kinds.entry(format!("{:?}", e.event.kind)).or_insert((0u64, 0usize)) = {
            let k = kinds.get(&format!("{:?}", e.event.kind)).copied().unwrap_or((0, 0));
            (k.0 + 1, k.1 + e.event.text.len())
        };
    }
    println!("{} searchable events in {} records, {} text bytes ({:.0} per event)", events.len(), batches.len(), bytes, bytes as f64 / events.len() as f64);
    for (k, (n, b)) in kinds {
        println!("  {k}: {n} events, {:.0} bytes each", b as f64 / n as f64);
    }
}
