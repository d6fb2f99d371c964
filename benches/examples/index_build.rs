//! Profiling aid: feeds the corpus's searchable events to an in-memory text index, timing it.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use origin_benches::corpus;
use origin_engine::{Journal, Options};
use origin_projections::{DocMeta, Index};

fn main() {
    let n = corpus::events_target();
    let c = corpus::store(n, 0x1a7e_57a9_e10c_0002).expect("corpus");
    let j = Journal::open(c.store.join("journal"), Options::default()).expect("journal");
    let batches = corpus::searchable_batches(&j, n).expect("events");
    let bytes: usize = batches.iter().flatten().map(|e| e.event.text.len()).sum();
    let t = std::time::Instant::now();
    let mut index = Index::in_memory();
    let mut doc = 0u32;
    for e in batches.iter().flatten() {
        index.add(doc, &DocMeta::event(&e.source, &e.event, e.record, e.position), &e.event.text).unwrap();
        doc += 1;
    }
    let added = t.elapsed();
    index.commit(1).unwrap();
    let total = t.elapsed();
    println!("{doc} events, {bytes} bytes: add {:.2} s ({:.1} MB/s, {:.0} events/s), commit {:.2} s", added.as_secs_f64(), bytes as f64 / 1e6 / added.as_secs_f64(), doc as f64 / added.as_secs_f64(), (total - added).as_secs_f64());
}
