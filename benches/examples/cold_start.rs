//! Profiling aid: how long opening a store takes, piece by piece, and the memory each piece
//! leaves resident (`<dir>` from query_lab).
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::time::Instant;

// The allocator `origin` runs with (set in the benches' library).
extern crate origin_benches;

use origin_engine::{Access, Journal, Options};
use origin_projections::{Catalog, State};

/// This process's resident memory, anonymous then file-backed (Linux).
fn resident() -> String {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines().filter(|l| l.starts_with("RssAnon") || l.starts_with("RssFile")).map(|l| l.split_whitespace().nth(1).unwrap().to_string() + " kB ").collect()
}

fn main() {
    println!("start: {}", resident());
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("a directory"));
    let snap = dir.join("state.snap");
    let j = Journal::open(dir.join("journal"), Options { access: Access::ReadOnly, ..Options::default() }).expect("journal");
    if !snap.exists() {
        let t = Instant::now();
        let s = State::replay(&j, origin_projections::Until::End).expect("replay");
        println!("replay {:.2} s", t.elapsed().as_secs_f64());
        s.save_snapshot(&j, &origin_engine::vfs::OsFs, &snap).expect("save");
        println!("snapshot {} bytes", std::fs::metadata(&snap).unwrap().len());
    }
    // COLD_SIDE_BY_SIDE: only the open side by side and a first search, once (opening the
    // pieces one by one leaves the catalog's background check of its segments running, which
    // the open side by side would then share the cores with).
    let side_only = std::env::var_os("COLD_SIDE_BY_SIDE").is_some();
    for _ in 0..2 {
        if !side_only {
            let t = Instant::now();
            let j = Journal::open(dir.join("journal"), Options { access: Access::ReadOnly, ..Options::default() }).expect("journal");
            let a = t.elapsed();
            println!("journal opened: {}", resident());
            let (state, _) = State::open(&j, &origin_engine::vfs::OsFs, &snap).expect("state");
            let b = t.elapsed();
            println!("state opened: {}", resident());
            for (part, bytes) in state.heap_bytes() {
                println!("  {part}: {:.1} MB", bytes as f64 / 1e6);
            }
            let (cat, _) = Catalog::open(&dir.join("index"), &j).expect("catalog");
            let c = t.elapsed();
            println!("catalog opened: {}", resident());
            println!("journal {:.3} s, state {:.3} s, catalog {:.3} s ({} docs)", a.as_secs_f64(), (b - a).as_secs_f64(), (c - b).as_secs_f64(), cat.index().doc_count());
            drop((state, cat));
        }
        let t = Instant::now();
        let j = Journal::open(dir.join("journal"), Options { access: Access::ReadOnly, ..Options::default() }).expect("journal");
        let opened = origin_projections::open_projections(&j, &snap, &dir.join("index"), origin_projections::Verify::Ahead, origin_projections::StateRead::ToEnd).expect("projections");
        let opened_at = t.elapsed();
        // A first search: it waits for the segments' bodies to be verified (in the background
        // since the catalog opened them).
        let q = origin_projections::parse_query("release workflow").expect("query");
        let all = origin_projections::Filters { include_tools: true, ..Default::default() };
        let hits = opened.catalog.search(&q, &all, &|_| true, 20).expect("search").len();
        println!("  journal, then state and catalog side by side: {:.3} s; a first search answered ({hits} hits) at {:.3} s", opened_at.as_secs_f64(), t.elapsed().as_secs_f64());
        drop(opened);
        if side_only {
            break;
        }
    }
}
