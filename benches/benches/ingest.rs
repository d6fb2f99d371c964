//! `origin ingest` through the library (durable journal) against a single-threaded read-and-parse-every-line baseline, on one generated corpus of agent logs, in one run.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::fs::File;
use std::hint::black_box;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use origin_benches::agentlogs::{self, Corpus};
use origin_benches::{fs_type, loadavg, median, median_index, scratch_dir, table};
use origin_engine::verify::verify_dir;
use origin_engine::{Journal, Options};
use origin_ingest::{Homes, Ingester};
use serde_json::Value;

const SEED: u64 = 0x1a7e_57a9_e10c_0001;

fn reps() -> usize {
    std::env::var("ORIGIN_BENCH_INGEST_REPS").ok().and_then(|s| s.parse().ok()).filter(|&n| n > 0).unwrap_or(3)
}

/// CPU time of this process so far (user, system), from `/proc/self/stat` (clock ticks of 10 ms).
fn cpu_time() -> (Duration, Duration) {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = s.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest.split_whitespace().map(|x| x.parse().unwrap_or(0)).collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    let tick = |n: u64| Duration::from_millis(n * 10);
    (tick(f.get(11).copied().unwrap_or(0)), tick(f.get(12).copied().unwrap_or(0)))
}

/// This thread's time on a CPU and time runnable but waiting for one, from
/// `/proc/thread-self/schedstat` (nanoseconds). Ingest runs on the calling thread.
fn sched() -> (Duration, Duration) {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let f: Vec<u64> = s.split_whitespace().map(|x| x.parse().unwrap_or(0)).collect();
    (Duration::from_nanos(f.first().copied().unwrap_or(0)), Duration::from_nanos(f.get(1).copied().unwrap_or(0)))
}

/// Where a run's wall time went: on a CPU, runnable but waiting for a CPU (other work on the
/// machine), and the rest, blocked (disk reads, writes, `fdatasync`).
#[derive(Clone, Copy)]
struct Split {
    on_cpu: Duration,
    waiting: Duration,
    blocked: Duration,
}

fn split(wall: Duration, before: (Duration, Duration), after: (Duration, Duration)) -> Split {
    let (on_cpu, waiting) = (after.0 - before.0, after.1 - before.1);
    Split { on_cpu, waiting, blocked: wall.saturating_sub(on_cpu + waiting) }
}

/// `wchar` (bytes passed to write calls) and `write_bytes` (bytes sent towards the disk) from `/proc/self/io`.
fn io_written() -> (u64, u64) {
    let s = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    let get = |k: &str| s.lines().find_map(|l| l.strip_prefix(k)).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
    (get("wchar:"), get("write_bytes:"))
}

/// Bytes of all files below `dir`.
fn tree_size(dir: &Path) -> u64 {
    let mut total = 0;
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    for e in entries {
        let e = e.expect("dir entry");
        let ft = e.file_type().expect("file type");
        if ft.is_dir() {
            total += tree_size(&e.path());
        } else {
            total += e.metadata().expect("stat").len();
        }
    }
    total
}

/// Reads every file once (to warm the page cache); returns bytes read.
fn read_all(corpus: &Corpus, buf: &mut Vec<u8>) -> u64 {
    let mut total = 0;
    for p in &corpus.files {
        buf.clear();
        File::open(p).expect("open log").read_to_end(buf).expect("read log");
        total += buf.len() as u64;
    }
    total
}

struct BaselineRun {
    elapsed: Duration,
    cpu: Duration,
    split: Split,
}

/// The baseline: read every file into a reused buffer, split it on `\n`, and parse every line
/// into a `serde_json::Value`, on one thread.
fn baseline(corpus: &Corpus) -> BaselineRun {
    let mut buf = Vec::with_capacity(64 << 20);
    let (u0, s0) = cpu_time();
    let sc0 = sched();
    let start = Instant::now();
    let (mut lines, mut bytes, mut objects) = (0u64, 0u64, 0u64);
    for p in &corpus.files {
        buf.clear();
        File::open(p).expect("open log").read_to_end(&mut buf).expect("read log");
        bytes += buf.len() as u64;
        let mut rest: &[u8] = &buf;
        while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
            let v: Value = serde_json::from_slice(&rest[..nl]).expect("every generated line is JSON");
            objects += u64::from(v.is_object());
            black_box(&v);
            lines += 1;
            rest = &rest[nl + 1..];
        }
    }
    let elapsed = start.elapsed();
    let sc1 = sched();
    let (u1, s1) = cpu_time();
    assert_eq!((lines, objects, bytes), (corpus.lines, corpus.lines, corpus.bytes), "baseline saw the whole corpus");
    BaselineRun { elapsed, cpu: (u1 - u0) + (s1 - s0), split: split(elapsed, sc0, sc1) }
}

struct OriginRun {
    elapsed: Duration,
    user: Duration,
    sys: Duration,
    split: Split,
    lines: u64,
    events: u64,
    records: u64,
    syncs: u64,
    journal_bytes: u64,
    mirror_bytes: u64,
    wchar: u64,
    write_bytes: u64,
}

/// One `origin ingest` into a fresh store: the journal opened durable (the default options),
/// every log read by `Ingester::run`. The store is checked, measured and deleted afterwards.
fn origin(corpus: &Corpus, base: &Path, rep: usize) -> OriginRun {
    let store = base.join(format!("store-{rep}"));
    assert!(!store.exists());
    let jdir = store.join("journal");
    let (u0, s0) = cpu_time();
    let (wc0, wb0) = io_written();
    let sc0 = sched();
    let start = Instant::now();
    let journal = Journal::open(&jdir, Options::default()).expect("open journal");
    let ing = Ingester::new(Arc::new(journal), &store, Homes::under(&corpus.home));
    let summary = ing.run(None, &mut |_| {}).expect("ingest");
    let elapsed = start.elapsed();
    let sc1 = sched();
    let (u1, s1) = cpu_time();
    let (wc1, wb1) = io_written();
    let st = ing.journal().status().expect("status");
    drop(ing);

    // A benchmark of a broken ingest is worthless: check it read everything, cleanly.
    let sum = |f: fn(&origin_ingest::SourceRun) -> u64| summary.sources.values().map(f).sum::<u64>();
    let (lines, events, malformed, cut, bytes) = (sum(|r| r.lines), sum(|r| r.events), sum(|r| r.malformed), sum(|r| r.cut), sum(|r| r.bytes));
    let problems: Vec<&String> = summary.sources.values().flat_map(|r| &r.problems).collect();
    assert_eq!(malformed, 0, "malformed lines: {summary:?}");
    assert_eq!(cut, 0, "cut lines: {summary:?}");
    assert!(problems.is_empty(), "problems: {problems:?}");
    assert_eq!(lines, corpus.lines, "lines ingested vs lines in the corpus");
    assert_eq!(bytes, corpus.bytes, "bytes ingested vs bytes in the corpus");
    assert!(events > 0, "no events: {summary:?}");
    assert_eq!(summary.sources["claude-code"].files_read, corpus.claude_files);
    assert_eq!(summary.sources["codex"].files_read, corpus.codex_files);
    let report = verify_dir(&jdir).expect("verify");
    assert!(report.is_clean(), "journal after ingest: {report:?}");
    assert_eq!(report.records, st.records_appended, "verify saw every appended record");

    let run = OriginRun {
        elapsed,
        user: u1 - u0,
        sys: s1 - s0,
        split: split(elapsed, sc0, sc1),
        lines,
        events,
        records: st.records_appended,
        syncs: st.batches,
        journal_bytes: tree_size(&jdir),
        mirror_bytes: tree_size(&store.join("raw")),
        wchar: wc1 - wc0,
        write_bytes: wb1 - wb0,
    };
    std::fs::remove_dir_all(&store).expect("remove store");
    run
}

fn mb_s(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64()
}

fn main() {
    let size = agentlogs::corpus_size_bytes();
    let reps = reps();
    let work = scratch_dir().expect("scratch dir");
    println!("ingest: generated Claude Code + Codex logs, {size} bytes requested, {reps} runs each, median reported");
    println!("scratch: {} ({}); loadavg before: {}", work.path().display(), fs_type(work.path()), loadavg());

    let t = Instant::now();
    let corpus = agentlogs::generate(&work.path().join("home"), size, SEED).expect("generate corpus");
    let s = &corpus.stats;
    let pct = |n: u64, of: u64| 100.0 * n as f64 / of.max(1) as f64;
    println!(
        "corpus: {} bytes in {} files ({} Claude Code, {:.0}% of bytes; {} Codex), {} lines, generated in {:.1} s (not timed)",
        corpus.bytes,
        corpus.files.len(),
        corpus.claude_files,
        pct(corpus.claude_bytes, corpus.bytes),
        corpus.codex_files,
        corpus.lines,
        t.elapsed().as_secs_f64()
    );
    println!(
        "lines: {:.1}% under 2 KiB, {} of 64 KiB or more, longest {} bytes, mean {:.0} bytes; tool results: {}, {:.1}% of them 16 KiB or more; messages: {}, {:.1}% Chinese/Japanese",
        pct(s.lines_under_2k, corpus.lines),
        s.lines_64k_or_more,
        s.line_size_max,
        corpus.bytes as f64 / corpus.lines as f64,
        s.tool_results,
        pct(s.tool_results_16k_or_more, s.tool_results),
        s.messages,
        pct(s.messages_cjk, s.messages),
    );

    let mut buf = Vec::new();
    let warm = read_all(&corpus, &mut buf);
    assert_eq!(warm, corpus.bytes);
    drop(buf);

    let mut base_runs = Vec::new();
    let mut origin_runs = Vec::new();
    // Interleaved, so drift (another build on the machine) hits both alike.
    for rep in 0..reps {
        base_runs.push(baseline(&corpus));
        origin_runs.push(origin(&corpus, work.path(), rep));
        eprintln!(
            "run {} of {reps}: baseline {:.2} s, Origin {:.2} s (loadavg {})",
            rep + 1,
            base_runs[rep].elapsed.as_secs_f64(),
            origin_runs[rep].elapsed.as_secs_f64(),
            loadavg()
        );
    }

    let base_mb: Vec<f64> = base_runs.iter().map(|r| mb_s(corpus.bytes, r.elapsed)).collect();
    let origin_mb: Vec<f64> = origin_runs.iter().map(|r| mb_s(corpus.bytes, r.elapsed)).collect();
    let (bm, om) = (median(&base_mb), median(&origin_mb));
    let b = &base_runs[median_index(&base_mb)];
    let o = &origin_runs[median_index(&origin_mb)];
    let events = o.events;
    assert!(origin_runs.iter().all(|r| r.events == events && r.lines == corpus.lines), "every run gives the same events");
    let per_s = |n: u64, d: Duration| n as f64 / d.as_secs_f64();
    let cpu_mb = |d: Duration| corpus.bytes as f64 / 1e6 / d.as_secs_f64();
    let secs = |sp: &Split| format!("{:.2} / {:.2} / {:.2}", sp.on_cpu.as_secs_f64(), sp.waiting.as_secs_f64(), sp.blocked.as_secs_f64());
    println!();
    println!(
        "{}",
        table(
            &[
                "system",
                "MB/s (median)",
                "MB/s (each run)",
                "lines/s",
                "events/s",
                "ratio vs baseline (MB/s)",
                "MB per CPU-second",
                "wall s: on CPU / waiting for a CPU / blocked",
                "CPU s: user + sys",
            ],
            &[
                vec![
                    "baseline: read + serde_json::Value per line, 1 thread".into(),
                    format!("{bm:.1}"),
                    base_mb.iter().map(|x| format!("{x:.1}")).collect::<Vec<_>>().join(" / "),
                    format!("{:.0}", per_s(corpus.lines, b.elapsed)),
                    format!("{:.0} (corpus events / baseline time; it builds none)", per_s(events, b.elapsed)),
                    "1.00x".into(),
                    format!("{:.1}", cpu_mb(b.split.on_cpu)),
                    secs(&b.split),
                    format!("{:.2}", b.cpu.as_secs_f64()),
                ],
                vec![
                    "Origin: Ingester::run into a durable journal".into(),
                    format!("{om:.1}"),
                    origin_mb.iter().map(|x| format!("{x:.1}")).collect::<Vec<_>>().join(" / "),
                    format!("{:.0}", per_s(o.lines, o.elapsed)),
                    format!("{:.0}", per_s(events, o.elapsed)),
                    format!("{:.2}x", om / bm),
                    // Ingest reads files on every core: count the whole process's CPU time.
                    format!("{:.1}", cpu_mb(o.user + o.sys)),
                    secs(&o.split),
                    format!("{:.2} + {:.2}", o.user.as_secs_f64(), o.sys.as_secs_f64()),
                ],
            ],
        )
    );
    println!("MB = 10^6 bytes of log input. The baseline runs on one thread; ingest reads files on every core. MB per CPU-second");
    println!("divides by CPU time: the baseline thread's (/proc/thread-self/schedstat), and the whole process's user + sys for Origin.");
    println!("The wall split is the calling thread's; for Origin that thread mostly waits for its workers.");
    println!("Per-run details here and below come from the median run (/proc/self/stat for user + sys, /proc/self/io for writes).\n");
    let x = |n: u64| format!("{n} ({:.2}x)", n as f64 / corpus.bytes as f64);
    println!(
        "{}",
        table(
            &["input bytes", "events", "journal records", "group commits (fdatasync)", "journal bytes", "mirror bytes", "journal + mirrors", "wchar", "write_bytes"],
            &[vec![
                corpus.bytes.to_string(),
                events.to_string(),
                o.records.to_string(),
                o.syncs.to_string(),
                x(o.journal_bytes),
                x(o.mirror_bytes),
                x(o.journal_bytes + o.mirror_bytes),
                x(o.wchar),
                x(o.write_bytes),
            ]],
        )
    );
    println!("(x) = relative to the input bytes. Every Origin run: malformed = 0, cut = 0, lines = corpus lines, events > 0, verify_dir clean.");
    println!("loadavg after: {}", loadavg());
    println!();
    let goal = |met: bool| if met { "met" } else { "NOT met" };
    println!("goal Origin/baseline >= 0.5x: {} ({:.2}x)", goal(om / bm >= 0.5), om / bm);
    let per_core = corpus.bytes as f64 / 1e6 / (o.user + o.sys).as_secs_f64();
    println!("goal Origin > 100 MB/s per core: {} ({per_core:.1} MB per CPU-second of the process; {om:.1} MB/s wall)", goal(per_core > 100.0));
}
