//! Profiling aid for query parsing: times `parse_query` on each query given, 2,000 times, and
//! prints the median and the fastest. `cargo run --release -p origin-benches --example
//! parse_lab -- <query>...` (LAB_THRASH: caches emptied before each parse, by touching 64 MiB,
//! as the index benchmark's other systems empty them between Origin's queries).
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::time::Instant;

fn main() {
    let queries: Vec<String> = std::env::args().skip(1).collect();
    let mut thrash = std::env::var_os("LAB_THRASH").map(|_| vec![0u8; 64 << 20]);
    for q in &queries {
        let mut times = Vec::with_capacity(2000);
        for pass in 0..2000u32 {
            if let Some(buf) = thrash.as_mut() {
                for i in (0..buf.len()).step_by(64) {
                    buf[i] = buf[i].wrapping_add(pass as u8);
                }
                std::hint::black_box(&buf);
            }
            let t = Instant::now();
            let parsed = origin_projections::parse_query(q).expect("a query that parses");
            std::hint::black_box(&parsed);
            times.push(t.elapsed().as_nanos());
        }
        times.sort_unstable();
        println!("{q}: median {} ns, fastest {} ns", times[times.len() / 2], times[0]);
    }
}
