//! Profiling aid: Origin against tantivy query by query, on the store `query_lab` keeps in
//! `<dir>` and a tantivy index of the same events kept in `<dir>-tantivy` (built on the first
//! run, as the index benchmark builds it). Each query of a class runs on both, alternating,
//! LAB_PASSES times (default 20); prints each system's p50 and p99 of per-query medians, and
//! the queries where Origin is slowest against tantivy. LAB_CLASS=<n> picks the class (default
//! 1, two to four words); LAB_SHOW=<n> how many queries to list (default 12); LAB_FULL_ONLY:
//! Origin without partial matches (only documents holding every word, as tantivy answers);
//! LAB_THRASH: caches emptied before each search.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::time::Instant;

use origin_benches::corpus;
use origin_benches::indexbench::{CLASSES, Tantivy, is_han, make_queries, tantivy_build};
use origin_benches::Rng;
use origin_engine::{Access, Journal, Options};
use origin_projections::{Catalog, Filters, parse_query};
use tantivy::collector::TopDocs;
use tantivy::query::QueryParser;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("a directory holding query_lab's store"));
    let n = corpus::events_target();
    let c = corpus::store(n, 0x1a7e_57a9_e10c_0002).expect("corpus");
    let src = Journal::open(c.store.join("journal"), Options { access: Access::ReadOnly, ..Options::default() }).expect("journal");
    let batches = corpus::searchable_batches(&src, n).expect("events");
    let events: Vec<&corpus::Located> = batches.iter().flatten().collect();
    let han: Vec<usize> = events.iter().enumerate().filter(|(_, e)| e.event.text.chars().any(is_han)).map(|(i, _)| i).collect();

    let tdir = dir.with_file_name(format!("{}-tantivy", dir.file_name().and_then(|s| s.to_str()).unwrap_or("store")));
    let tan = match tantivy::Index::open_in_dir(&tdir) {
        Ok(index) => {
            let schema = index.schema();
            Tantivy { text: schema.get_field("text").expect("text"), n: schema.get_field("n").expect("n"), index }
        }
        Err(_) => {
            let _ = std::fs::remove_dir_all(&tdir);
            let (b, t) = tantivy_build(&batches, &tdir);
            println!("tantivy built in {:.1} s", b.secs);
            t
        }
    };
    let reader = tan.index.reader().expect("reader");
    let searcher = reader.searcher();
    let mut qp = QueryParser::for_index(&tan.index, vec![tan.text]);
    qp.set_conjunction_by_default();

    let journal = Journal::open(dir.join("journal"), Options { access: Access::ReadOnly, ..Options::default() }).expect("store journal");
    let (catalog, _) = Catalog::open(&dir.join("index"), &journal).expect("catalog");
    let all = Filters { include_tools: true, ..Filters::default() };

    let class_index = env("LAB_CLASS", 1);
    let passes = env("LAB_PASSES", 20).max(1);
    let full_only = std::env::var_os("LAB_FULL_ONLY").is_some();
    // LAB_THRASH: caches emptied before each search (64 MiB touched), as the index benchmark's
    // rotation between systems empties them.
    let mut thrash = std::env::var_os("LAB_THRASH").map(|_| vec![0u8; 64 << 20]);
    let mut empty_caches = move || {
        if let Some(buf) = thrash.as_mut() {
            for i in (0..buf.len()).step_by(64) {
                buf[i] = buf[i].wrapping_add(1);
            }
            std::hint::black_box(&buf);
        }
    };
    let mut rng = Rng::new(0x1a7e_57a9_e10c_0002 ^ 0xface);
    let mut rows = Vec::new();
    for (ci, class) in CLASSES.into_iter().enumerate() {
        let qs = make_queries(&events, &han, class, 300, &mut rng);
        if ci != class_index {
            continue;
        }
        for q in &qs {
            let query = parse_query(&q.origin).expect("query");
            let query = if full_only { query.every_word_only() } else { query };
            let tq = qp.parse_query(&q.tantivy).ok();
            let (mut o, mut t) = (Vec::with_capacity(passes), Vec::with_capacity(passes));
            let (mut oh, mut th) = (0, 0);
            for _ in 0..passes {
                empty_caches();
                let s = Instant::now();
                oh = catalog.search(&query, &all, &|_| true, 20).expect("search").len();
                o.push(s.elapsed().as_secs_f64() * 1e3);
                empty_caches();
                let s = Instant::now();
                th = tq.as_ref().map_or(0, |tq| searcher.search(tq, &TopDocs::with_limit(20)).expect("search").len());
                t.push(s.elapsed().as_secs_f64() * 1e3);
            }
            rows.push((q.origin.clone(), median(&mut o), median(&mut t), oh, th));
        }
        let mut o: Vec<f64> = rows.iter().map(|r| r.1).collect();
        let mut t: Vec<f64> = rows.iter().map(|r| r.2).collect();
        o.sort_by(f64::total_cmp);
        t.sort_by(f64::total_cmp);
        let p = |v: &[f64], x: f64| v[((v.len() - 1) as f64 * x) as usize];
        println!(
            "{}: Origin p50 {:.3} ms p99 {:.3}; tantivy p50 {:.3} p99 {:.3}; p50 ratio {:.2}x",
            class.name(),
            p(&o, 0.5),
            p(&o, 0.99),
            p(&t, 0.5),
            p(&t, 0.99),
            p(&o, 0.5) / p(&t, 0.5)
        );
    }
    rows.sort_by(|a, b| (b.1 - b.2).total_cmp(&(a.1 - a.2)));
    println!("where Origin loses the most time (Origin ms, tantivy ms, hits O/T):");
    for r in rows.iter().take(env("LAB_SHOW", 12)) {
        println!("  {:.3} {:.3} {}/{} {}", r.1, r.2, r.3, r.4, r.0);
    }
}
