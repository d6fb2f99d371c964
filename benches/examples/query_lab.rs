//! Profiling aid for queries: builds Origin's store from the benchmark corpus once (kept in
//! `<dir>`, rebuilt when its index cannot be opened), then times each query class on Origin
//! alone. `cargo run --release -p origin-benches --example query_lab -- <dir> [rebuild]`
//! (LAB_CLASS=<n> one class, LAB_PASSES=<n>, LAB_SLOW: the slowest queries, LAB_MEDIAN: those
//! around the median, LAB_QUERY=<q>: that query LAB_PASSES times (LAB_LIMIT hits, default 20; LAB_THRASH: caches emptied before each, by touching LAB_THRASH_MB MiB, 64 unless set) on the store already in
//! `<dir>`, without reading the corpus, printing the median and the fastest; LAB_FULL_ONLY:
//! without partial matches, in either mode).
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::time::Instant;

use origin_benches::corpus;
use origin_benches::indexbench::{CLASSES, is_han, make_queries, origin_build, records};
use origin_benches::Rng;
use origin_engine::{Access, Journal, Options};
use origin_projections::{Catalog, CatalogOpened, Filters, Match, parse_query};

/// Bytes touched to empty the caches: `LAB_THRASH_MB` MiB (default 64, at most 4,096).
fn thrash_bytes() -> usize {
    std::env::var("LAB_THRASH_MB").ok().and_then(|s| s.parse::<usize>().ok()).unwrap_or(64).clamp(1, 4096) << 20
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().expect("a directory"));
    let rebuild = args.next().is_some_and(|a| a == "rebuild");
    if let (Ok(q), false) = (std::env::var("LAB_QUERY"), rebuild) {
        // One query, many times (for a profiler), on the store already built.
        let journal = Journal::open(dir.join("journal"), Options { access: Access::ReadOnly, ..Options::default() }).expect("journal");
        let (catalog, _) = Catalog::open(&dir.join("index"), &journal).expect("catalog");
        let passes: usize = std::env::var("LAB_PASSES").ok().and_then(|s| s.parse().ok()).unwrap_or(2).max(1);
        let all = Filters { include_tools: true, ..Filters::default() };
        let query = parse_query(&q).expect("query");
        // LAB_FULL_ONLY: without partial matches.
        let query = if std::env::var_os("LAB_FULL_ONLY").is_some() { query.every_word_only() } else { query };
        let mut times = Vec::with_capacity(passes);
        let limit: usize = std::env::var("LAB_LIMIT").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
        let (mut hits, mut full) = (0, 0);
        // LAB_THRASH: caches emptied before each search (as the index benchmark's other systems
        // empty them between Origin's queries), by touching 64 MiB.
        let mut thrash = std::env::var_os("LAB_THRASH").map(|_| vec![0u8; thrash_bytes()]);
        for pass in 0..passes {
            if let Some(buf) = thrash.as_mut() {
                for i in (0..buf.len()).step_by(64) {
                    buf[i] = buf[i].wrapping_add(pass as u8);
                }
            }
            let t = Instant::now();
            let found = catalog.search(&query, &all, &|_| true, limit).expect("search");
            hits = found.len();
            full = found.iter().filter(|h| h.matched == Match::All).count();
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        times.sort_by(f64::total_cmp);
        println!("{q}: {:.3} ms median, {:.3} min, {hits} hits ({full} full)", times[times.len() / 2], times[0]);
        return;
    }
    let n = corpus::events_target();
    let c = corpus::store(n, 0x1a7e_57a9_e10c_0002).expect("corpus");
    let src = Journal::open(c.store.join("journal"), Options { access: Access::ReadOnly, ..Options::default() }).expect("journal");
    let batches = corpus::searchable_batches(&src, n).expect("events");
    let events: Vec<&corpus::Located> = batches.iter().flatten().collect();
    let han: Vec<usize> = events.iter().enumerate().filter(|(_, e)| e.event.text.chars().any(is_han)).map(|(i, _)| i).collect();
    let usable = dir.join("journal").exists() && {
        let j = Journal::open(dir.join("journal"), Options { access: Access::ReadOnly, ..Options::default() }).expect("journal");
        matches!(Catalog::open(&dir.join("index"), &j), Ok((_, CatalogOpened::Loaded { .. })))
    };
    if rebuild || !usable {
        let _ = std::fs::remove_dir_all(&dir);
        let b = origin_build(&records(&src, &batches), &dir);
        println!("built in {:.1} s: {} index bytes, {}", b.secs, b.index_bytes, b.note);
    }
    let journal = Journal::open(dir.join("journal"), Options { access: Access::ReadOnly, ..Options::default() }).expect("journal");
    let t = Instant::now();
    let (catalog, _) = Catalog::open(&dir.join("index"), &journal).expect("catalog");
    println!("catalog opened in {:.3} s", t.elapsed().as_secs_f64());
    let all = Filters { include_tools: true, ..Filters::default() };
    let mut rng = Rng::new(0x1a7e_57a9_e10c_0002 ^ 0xface);
    let only: Option<usize> = std::env::var("LAB_CLASS").ok().and_then(|s| s.parse().ok());
    let passes: usize = std::env::var("LAB_PASSES").ok().and_then(|s| s.parse().ok()).unwrap_or(2);
    let full_only = std::env::var_os("LAB_FULL_ONLY").is_some();
    for (ci, class) in CLASSES.into_iter().enumerate() {
        let qs = make_queries(&events, &han, class, 300, &mut rng);
        if only.is_some_and(|o| o != ci) {
            continue;
        }
        let mut times = Vec::new();
        // LAB_THRASH: caches emptied before each search, as between the benchmark's systems.
        let mut thrash = std::env::var_os("LAB_THRASH").map(|_| vec![0u8; thrash_bytes()]);
        for pass in 0..passes {
            for q in &qs {
                if let Some(t) = thrash.as_mut() {
                    for (i, b) in t.iter_mut().enumerate().step_by(64) {
                        *b = b.wrapping_add(i as u8);
                    }
                    std::hint::black_box(&t);
                }
                let t = Instant::now();
                let query = parse_query(&q.origin).expect("query");
                let query = if full_only { query.every_word_only() } else { query };
                let hits = catalog.search(&query, &all, &|_| true, 20).expect("search");
                let ms = t.elapsed().as_secs_f64() * 1e3;
                if pass == passes - 1 {
                    let partial = hits.iter().filter(|h| h.matched == origin_projections::Match::Partial).count();
                    times.push((ms, format!("{} [{} partial]", q.origin, partial), hits.len()));
                }
            }
        }
        times.sort_by(|a, b| a.0.total_cmp(&b.0));
        let p = |x: f64| times[((times.len() - 1) as f64 * x) as usize].0;
        println!("{:<24} p50 {:.3} ms  p90 {:.3}  p99 {:.3}  max {:.3} ({:?}, {} hits)", class.name(), p(0.5), p(0.9), p(0.99), times.last().unwrap().0, times.last().unwrap().1, times.last().unwrap().2);
        if std::env::var_os("LAB_MEDIAN").is_some() {
            let mid = times.len() / 2;
            println!("  around the median:");
            for t in &times[mid.saturating_sub(5)..(mid + 5).min(times.len())] {
                println!("    {:.3} ms {}", t.0, t.1);
            }
        }
        if std::env::var_os("LAB_SLOW").is_some() {
            let with_partial = times.iter().filter(|t| !t.1.ends_with("[0 partial]")).count();
            println!("  {} of {} queries have partial hits; slowest:", with_partial, times.len());
            for t in times.iter().rev().take(8) {
                println!("    {:.3} ms {}", t.0, t.1);
            }
        }
    }
}
