//! Profiling aid: merges every segment of the index in `<dir>` (as the index benchmark's build
//! leaves it), and prints the time; installs the result when LAB_INSTALL is set.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use origin_projections::index::{Index, merge};

fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("an index directory"));
    let mut index = Index::open(&dir).expect("index");
    let ids: Vec<_> = index.segments().iter().map(|s| s.id).collect();
    let docs: u32 = index.segments().iter().map(|s| s.doc_count).sum();
    let job = index.plan_merge(&ids).expect("plan");
    let t = std::time::Instant::now();
    let merged = merge(&job).expect("merge");
    println!("merged {} segments of {docs} documents in {:.2} s", ids.len(), t.elapsed().as_secs_f64());
    if std::env::var_os("LAB_INSTALL").is_some() {
        index.install_merge(merged).expect("install");
        println!("installed: {} segment(s)", index.segments().len());
    }
}
