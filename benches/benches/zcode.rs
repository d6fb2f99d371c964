//! A ZCode session updated in place while it is read: at each step a running tool finishes
//! (its part rewritten in place), another starts and a text is added, then `origin ingest`
//! runs (durable journal), as it does before every search. Against two baselines taken at the
//! same step in the same process: the session's export alone (what a run must make at least
//! once the session changed) for time, and the export's size for what the store grows by.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use origin_benches::{fs_type, loadavg, median, scratch_dir, table};
use origin_engine::{Journal, Options};
use origin_ingest::adapter::zcode::Zcode;
use origin_ingest::adapter::{Adapter, FileFormat, LogFile};
use origin_ingest::{Homes, Ingester, Source};

/// Steps measured after the first ingest.
fn steps() -> usize {
    std::env::var("ORIGIN_BENCH_ZCODE_STEPS").ok().and_then(|s| s.parse().ok()).filter(|&n| n > 0).unwrap_or(20)
}

/// Text parts in the session before the first ingest (about 5 KB each).
const TEXT_PARTS: usize = 400;

/// Bytes of all files below `dir`.
fn tree_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .map(|e| {
            let e = e.expect("dir entry");
            if e.file_type().expect("file type").is_dir() { tree_size(&e.path()) } else { e.metadata().expect("stat").len() }
        })
        .sum()
}

/// Words that vary from part to part, so that the text compresses as prose does, not to nothing.
fn prose(seed: usize, words: usize) -> String {
    let mut x = seed as u64 * 0x9E37_79B9_7F4A_7C15 + 1;
    (0..words)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            format!("w{} ", x % 5_000)
        })
        .collect()
}

/// What each step measured.
#[derive(Default)]
struct Steps {
    ingest_t: Vec<Duration>,
    export_t: Vec<Duration>,
    /// Bytes the store grew by.
    grew: Vec<f64>,
    /// Bytes of the session's export.
    exported: Vec<f64>,
}

impl Steps {
    /// The export alone (the baseline), then an ingest run.
    fn step(&mut self, ing: &Ingester, file: &LogFile, store: &Path) {
        let t = Instant::now();
        let export = Zcode.export(file).expect("export");
        self.export_t.push(t.elapsed());
        self.exported.push(export.len() as f64);
        let before = tree_size(store);
        let t = Instant::now();
        let run = ing.run(None, &mut |_| {}).expect("run");
        self.ingest_t.push(t.elapsed());
        self.grew.push((tree_size(store) - before) as f64);
        let z = &run.sources["zcode"];
        assert!(z.events > 0 && z.malformed == 0 && z.problems.is_empty(), "{z:?}");
    }
}

fn tool(i: usize, done: bool) -> String {
    let (status, output) = if done { ("completed", prose(100_000 + i, 300)) } else { ("running", String::new()) };
    serde_json::json!({"type": "tool", "tool": "bash", "state": {"status": status, "input": {"command": format!("make step{i}")}, "output": output}}).to_string()
}

fn main() {
    let steps = steps();
    let work = scratch_dir().expect("scratch dir");
    println!("zcode: one session of {TEXT_PARTS} text parts, then {steps} steps of a tool finished in place, a tool started and a text added, each followed by an ingest run");
    println!("scratch: {} ({}); loadavg before: {}", work.path().display(), fs_type(work.path()), loadavg());
    let homes = Homes::under(work.path());
    let db = homes.zcode.join("cli/db/db.sqlite");
    std::fs::create_dir_all(db.parent().expect("parent")).expect("mkdir");
    let conn = rusqlite::Connection::open(&db).expect("db");
    conn.execute_batch(
        "PRAGMA journal_mode=WAL;
         CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT, title TEXT, parent_id TEXT, version TEXT, task_type TEXT);
         CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER, time_updated INTEGER, data TEXT);
         CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, time_created INTEGER, time_updated INTEGER, data TEXT);
         INSERT INTO session VALUES ('ses_bench', '/home/dev/shop', 'Bench', NULL, '1.0', 'interactive');
         INSERT INTO message VALUES ('msg_1', 'ses_bench', 1, 1, '{\"role\":\"assistant\"}');",
    )
    .expect("schema");
    let put = |id: &str, at: usize, data: &str| {
        conn.execute("INSERT OR REPLACE INTO part VALUES (?1, 'msg_1', 'ses_bench', ?2, ?3, ?4)", rusqlite::params![id, at as i64, 1_000 + at as i64, data])
            .expect("part");
    };
    for i in 0..TEXT_PARTS {
        put(&format!("prt_text_{i:05}"), i, &serde_json::json!({"type": "text", "text": prose(i, 800)}).to_string());
    }
    put("prt_tool_00000", TEXT_PARTS, &tool(0, false));

    let store = work.path().join("store");
    let ing = Ingester::new(Arc::new(Journal::open(store.join("journal"), Options::default()).expect("journal")), &store, homes.clone());
    let file = LogFile { source: Source::Zcode, path: db.clone(), key: format!("{}#session/ses_bench", db.display()), mirror: String::new(), format: FileFormat::Export };
    let first = ing.run(None, &mut |_| {}).expect("first run");
    let start_export = Zcode.export(&file).expect("export").len() as u64;
    let start_store = tree_size(&store);
    println!("first run: {} events, export {start_export} bytes, store {start_store} bytes", first.sources["zcode"].events);

    let mut m = Steps::default();
    for s in 1..=steps {
        let at = TEXT_PARTS + 2 * s;
        put(&format!("prt_tool_{:05}", s - 1), at - 2, &tool(s - 1, true));
        put(&format!("prt_tool_{s:05}"), at, &tool(s, false));
        put(&format!("prt_more_{s:05}"), at + 1, &serde_json::json!({"type": "text", "text": prose(200_000 + s, 150)}).to_string());
        m.step(&ing, &file, &store);
    }
    let Steps { ingest_t, export_t, grew, exported } = m;
    let end_store = tree_size(&store);
    let end_export = *exported.last().expect("a step") as u64;
    let ms = |d: &[Duration]| median(&d.iter().map(|d| d.as_secs_f64() * 1e3).collect::<Vec<_>>());
    let (it, et) = (ms(&ingest_t), ms(&export_t));
    let (g, e) = (median(&grew), median(&exported));
    println!();
    println!(
        "{}",
        table(
            &["per step (median of {steps})", "Origin ingest run", "baseline", "ratio"],
            &[
                vec!["time, ms (baseline: the export alone)".into(), format!("{it:.1}"), format!("{et:.1}"), format!("{:.2}x", it / et)],
                vec!["store growth, bytes (baseline: the export's size)".into(), format!("{g:.0}"), format!("{e:.0}"), format!("{:.3}x", g / e)],
            ]
        )
        .replace("{steps}", &steps.to_string())
    );
    println!(
        "after {steps} steps: store {end_store} bytes (journal and mirrors), {:.2}x the session's export of {end_export} bytes; first run's store {:.2}x its export",
        end_store as f64 / end_export as f64,
        start_store as f64 / start_export as f64
    );

    // A large part streamed: rewritten whole at every step (each step appends it again; the
    // recorded bytes are made again whole once they pass 4 times the export and 1 MiB).
    let big_steps = 3 * steps;
    let mut m = Steps::default();
    let mut largest_version = 0u64;
    for s in 1..=big_steps {
        put("prt_streamed", TEXT_PARTS + 10 * steps, &serde_json::json!({"type": "text", "text": prose(300_000 + s, 100_000)}).to_string());
        m.step(&ing, &file, &store);
        let cursors = ing.cursors().expect("cursors");
        largest_version = largest_version.max(cursors.files.values().map(|c| c.byte_end).max().unwrap_or(0));
    }
    let Steps { ingest_t, export_t, grew, exported } = m;
    let (it, et) = (ms(&ingest_t), ms(&export_t));
    let (g, e) = (median(&grew), median(&exported));
    let streamed = median(&grew.iter().zip(&exported).map(|(g, e)| g / e).collect::<Vec<_>>());
    println!();
    println!("then a part of about 600 KB rewritten whole at each of {big_steps} steps:");
    println!(
        "{}",
        table(
            &["per step (median)", "Origin ingest run", "baseline", "ratio"],
            &[
                vec!["time, ms (baseline: the export alone)".into(), format!("{it:.1}"), format!("{et:.1}"), format!("{:.2}x", it / et)],
                vec!["store growth, bytes (baseline: the export's size)".into(), format!("{g:.0}"), format!("{e:.0}"), format!("{streamed:.3}x")],
            ]
        )
    );
    println!(
        "longest version recorded: {largest_version} bytes ({:.2}x the last export); store at the end {} bytes",
        largest_version as f64 / exported.last().copied().unwrap_or(1.0),
        tree_size(&store)
    );
    println!("loadavg after: {}", loadavg());
}
