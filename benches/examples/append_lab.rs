//! Profiling aid: the journal part of Origin's build alone (append every record, durable).
#![allow(clippy::expect_used, clippy::unwrap_used)]

use origin_benches::indexbench::corpus_records;
use origin_engine::{Journal, NewRecord, Options};

fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("a directory"));
    let (_, raw) = corpus_records();
    let _ = std::fs::remove_dir_all(&dir);
    let t = std::time::Instant::now();
    let j = Journal::open(dir.join("journal"), Options::default()).expect("journal");
    for (k, v, p) in &raw {
        j.append(vec![NewRecord::raw(*k, *v, p.clone())]).expect("append");
    }
    let a = t.elapsed().as_secs_f64();
    let t = std::time::Instant::now();
    let mut events = 0usize;
    j.read_from(0, |r| {
        let (_, body) = r.decode().expect("decode");
        if let origin_engine::Body::Ingested(b) = body {
            events += b.events.len();
        }
        Ok(std::ops::ControlFlow::Continue(()))
    })
    .expect("read");
    println!("{} records, {} bytes: append {a:.2} s; decode {:.2} s ({events} events)", raw.len(), raw.iter().map(|r| r.2.len()).sum::<usize>(), t.elapsed().as_secs_f64());
}
