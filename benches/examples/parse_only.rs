//! Profiling aid: parse every line of a corpus with `Json::parse` and with each adapter.
#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]
use std::time::Instant;
use origin_ingest::adapter::{Line, State};
use origin_ingest::json::Json;
use origin_ingest::{Homes, Source};
fn main() {
    let home = std::path::PathBuf::from(std::env::args().nth(1).expect("home"));
    let homes = Homes::under(&home);
    let adapters = origin_ingest::adapter::all();
    let mut files = Vec::new();
    for a in &adapters { let (f, _) = a.discover(&homes); for x in f { files.push((a.source(), x)); } }
    let data: Vec<(Source, origin_ingest::adapter::LogFile, Vec<u8>)> = files.into_iter().map(|(s, f)| { let b = std::fs::read(&f.path).unwrap(); (s, f, b) }).collect();
    let total: usize = data.iter().map(|d| d.2.len()).sum();
    for round in 0..3 {
        let t = Instant::now(); let mut n = 0usize;
        for (_, _, b) in &data { for l in b.split(|&c| c == b'\n').filter(|l| !l.is_empty()) { let v = Json::parse(l, origin_ingest::json::Shape { skip: &["toolUseResult", "signature", "usage", "encrypted_content", "base_instructions"], raw: &["input"] }).unwrap(); n += v.is_object() as usize; } }
        let a = t.elapsed();
        let t = Instant::now();
        for (_, _, b) in &data { for l in b.split(|&c| c == b'\n').filter(|l| !l.is_empty()) { let v: serde_json::Value = serde_json::from_slice(l).unwrap(); n += v.is_object() as usize; } }
        let bv = t.elapsed();
        let t = Instant::now(); let mut ev = 0usize;
        for (s, f, b) in &data {
            let ad = adapters.iter().find(|a| a.source() == *s).unwrap();
            let mut st = State::new();
            for (i, l) in b.split(|&c| c == b'\n').filter(|l| !l.is_empty()).enumerate() {
                if let Line::Parsed(p) = ad.parse_line(f, &mut st, l, i as u64 + 1) { ev += p.events.len(); }
            }
        }
        let c = t.elapsed();
        println!("round {round}: {total} bytes: Json::parse {:.0} MB/s, serde_json::Value {:.0} MB/s, adapters {:.0} MB/s ({ev} events, {n})", total as f64 / 1e6 / a.as_secs_f64(), total as f64 / 1e6 / bv.as_secs_f64(), total as f64 / 1e6 / c.as_secs_f64());
    }
}
