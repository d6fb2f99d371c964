//! Profiling aid: feeds the corpus's searchable events to an in-memory text index, timing it.
//! The in-memory documents are dropped whenever they reach the commit budget (256 MiB, or
//! `LAB_COMMIT_MB`), as a commit would take them, so that the tables are the size they have in
//! a build; commits are not timed (LAB_COMMIT=1 writes them, in memory, and times them apart).
//! Each record's events go in together (`Index::add_all`, tokenized on a helper thread);
//! LAB_SEQ=1 adds them one by one on this thread. Prints wall time and this thread's CPU time,
//! which other processes on the machine disturb less than the wall time.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use origin_benches::corpus;
use origin_engine::{Journal, Options};
use origin_projections::{DocMeta, Index};

/// CPU seconds of the calling thread (user and system).
fn thread_cpu() -> f64 {
    let s = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    let f: Vec<u64> = s.rsplit_once(')').map_or("", |(_, r)| r).split_whitespace().map(|x| x.parse().unwrap_or(0)).collect();
    (f[11] + f[12]) as f64 / 100.0
}

fn main() {
    let n = corpus::events_target();
    let c = corpus::store(n, 0x1a7e_57a9_e10c_0002).expect("corpus");
    let j = Journal::open(c.store.join("journal"), Options::default()).expect("journal");
    let batches = corpus::searchable_batches(&j, n).expect("events");
    let bytes: usize = batches.iter().flatten().map(|e| e.event.text.len()).sum();
    let budget = std::env::var("LAB_COMMIT_MB").ok().and_then(|s| s.parse::<usize>().ok()).unwrap_or(256) << 20;
    let sequential = std::env::var_os("LAB_SEQ").is_some();
    let commit = std::env::var_os("LAB_COMMIT").is_some();
    let (t, cpu) = (std::time::Instant::now(), thread_cpu());
    let mut index = Index::in_memory();
    let (mut doc, mut segments, mut commit_secs) = (0u32, 0, 0.0);
    for b in &batches {
        let metas: Vec<DocMeta> = b.iter().map(|e| DocMeta::event(&e.source, &e.event, e.record, e.position)).collect();
        let docs: Vec<(u32, DocMeta, &str)> = b.iter().zip(metas).enumerate().map(|(i, (e, m))| (doc + i as u32, m, e.event.text.as_str())).collect();
        doc += docs.len() as u32;
        if sequential {
            for (d, m, text) in &docs {
                index.add(*d, m, text).unwrap();
            }
        } else {
            index.add_all(&docs).unwrap();
        }
        if index.memory_bytes() >= budget {
            segments += 1;
            if commit {
                let c = std::time::Instant::now();
                index.commit(u64::from(doc)).unwrap();
                commit_secs += c.elapsed().as_secs_f64();
            } else {
                index.clear_memory();
            }
        }
    }
    let (wall, cpu) = (t.elapsed().as_secs_f64() - commit_secs, thread_cpu() - cpu);
    println!(
        "{doc} events, {bytes} bytes, {} ({segments} budgets filled): add {wall:.2} s wall ({:.1} MB/s), this thread {cpu:.2} s CPU{}",
        if sequential { "one by one" } else { "add_all" },
        bytes as f64 / 1e6 / wall,
        if commit { format!(", commits {commit_secs:.2} s") } else { String::new() }
    );
}
