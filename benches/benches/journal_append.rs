//! Durable 1 KiB appends to Origin's journal against a raw write+fdatasync loop and SQLite (WAL, synchronous=FULL), all in one run.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use origin_benches::{fs_type, loadavg, median, median_index, scratch_dir, table, Rng};
use origin_engine::{Durability, Journal, NewRecord, Options};
use rusqlite::{Connection, TransactionBehavior};

const RECORD_SIZE: usize = 1024;
const POOL: usize = 256;
const REPS: usize = 3;
const THREADS: [usize; 3] = [1, 4, 16];

/// One timed run of one configuration.
struct Run {
    records: u64,
    elapsed: Duration,
    /// Durable syncs (Origin: group commits; raw: one per record; SQLite: one per transaction).
    syncs: u64,
    lat_us: Vec<u32>,
    /// Records completed by the thread that completed fewest (fairness).
    fewest: u64,
}

impl Run {
    fn rate(&self) -> f64 {
        self.records as f64 / self.elapsed.as_secs_f64()
    }
}

fn run_time() -> Duration {
    let secs = std::env::var("ORIGIN_BENCH_APPEND_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(2.0);
    Duration::from_secs_f64(secs)
}

/// Runs `threads` threads, each looping over the operation `make` builds for it (one record per
/// call) until the run time is up. Setup in `make` happens before the clock starts.
fn drive<W, M>(threads: usize, make: M) -> Run
where
    M: Fn(usize) -> W + Sync,
    W: FnMut(usize),
{
    let stop = AtomicBool::new(false);
    let barrier = Barrier::new(threads + 1);
    thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (make, stop, barrier) = (&make, &stop, &barrier);
                s.spawn(move || {
                    let mut op = make(t);
                    let mut lat = Vec::with_capacity(1 << 16);
                    barrier.wait();
                    let mut i = t * 7919;
                    while !stop.load(Ordering::Relaxed) {
                        let t0 = Instant::now();
                        op(i);
                        lat.push(t0.elapsed().as_micros().min(u32::MAX as u128) as u32);
                        i += 1;
                    }
                    lat
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        thread::sleep(run_time());
        stop.store(true, Ordering::Relaxed);
        let per_thread: Vec<Vec<u32>> = handles.into_iter().map(|h| h.join().expect("bench thread panicked")).collect();
        let elapsed = start.elapsed();
        let fewest = per_thread.iter().map(|l| l.len() as u64).min().unwrap_or(0);
        let lat_us: Vec<u32> = per_thread.concat();
        Run { records: lat_us.len() as u64, elapsed, syncs: 0, lat_us, fewest }
    })
}

fn origin(threads: usize, durability: Durability, pool: &[Vec<u8>]) -> Run {
    let dir = scratch_dir().expect("scratch dir");
    let jdir = dir.path().join("journal");
    let journal = Arc::new(Journal::open(&jdir, Options { durability, ..Options::default() }).expect("open journal"));
    let mut run = drive(threads, |_| {
        let journal = journal.clone();
        move |i: usize| {
            journal.append(vec![NewRecord::scratch(pool[i % POOL].clone())]).expect("append");
        }
    });
    let st = journal.status().expect("status");
    assert_eq!(st.records_appended, run.records, "every timed append reached the journal");
    run.syncs = st.batches;
    drop(journal);
    let report = origin_engine::verify::verify_dir(&jdir).expect("verify");
    assert!(report.is_clean() && report.records == run.records, "journal after the run: {report:?}");
    run
}

fn raw(pool: &[Vec<u8>]) -> Run {
    let dir = scratch_dir().expect("scratch dir");
    let path = dir.path().join("raw.bin");
    let mut run = drive(1, |_| {
        let mut f = OpenOptions::new().create(true).append(true).open(&path).expect("open raw file");
        move |i: usize| {
            f.write_all(&pool[i % POOL]).expect("write");
            f.sync_data().expect("fdatasync");
        }
    });
    assert_eq!(std::fs::metadata(&path).expect("stat").len(), run.records * RECORD_SIZE as u64);
    run.syncs = run.records;
    run
}

/// Not a goal baseline, only context: overwrites of an already written (allocated) file need no
/// block allocation or size change at `fdatasync`, which is what a recycled SQLite WAL gets.
fn raw_overwrite(pool: &[Vec<u8>]) -> Run {
    use std::os::unix::fs::FileExt;
    const SLOTS: usize = 64 * 1024;
    let dir = scratch_dir().expect("scratch dir");
    let path = dir.path().join("raw-prealloc.bin");
    {
        let mut f = File::create(&path).expect("create");
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..(SLOTS * RECORD_SIZE) >> 20 {
            f.write_all(&zeros).expect("write zeros");
        }
        f.sync_all().expect("fsync");
    }
    let mut run = drive(1, |_| {
        let f = OpenOptions::new().write(true).open(&path).expect("open raw file");
        move |i: usize| {
            f.write_all_at(&pool[i % POOL], ((i % SLOTS) * RECORD_SIZE) as u64).expect("pwrite");
            f.sync_data().expect("fdatasync");
        }
    });
    run.syncs = run.records;
    run
}

fn sqlite(threads: usize, pool: &[Vec<u8>]) -> Run {
    let dir = scratch_dir().expect("scratch dir");
    let path = dir.path().join("bench.db");
    let open = || {
        let c = Connection::open(&path).expect("open sqlite");
        c.busy_timeout(Duration::from_secs(60)).expect("busy_timeout");
        let mode: String = c.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0)).expect("journal_mode");
        assert_eq!(mode, "wal");
        c.pragma_update(None, "synchronous", "FULL").expect("synchronous");
        let sync: i64 = c.pragma_query_value(None, "synchronous", |r| r.get(0)).expect("read synchronous");
        assert_eq!(sync, 2, "synchronous=FULL");
        c
    };
    open().execute_batch("CREATE TABLE records (id INTEGER PRIMARY KEY, payload BLOB NOT NULL)").expect("create table");
    let mut run = drive(threads, |_| {
        let mut c = open();
        move |i: usize| {
            // One durable transaction per record; IMMEDIATE takes the write lock up front so
            // concurrent writers wait in the busy handler instead of failing on a stale snapshot.
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate).expect("begin");
            tx.prepare_cached("INSERT INTO records (payload) VALUES (?1)")
                .expect("prepare")
                .execute([&pool[i % POOL]])
                .expect("insert");
            tx.commit().expect("commit");
        }
    });
    let rows: i64 = open().query_row("SELECT count(*) FROM records", [], |r| r.get(0)).expect("count");
    assert_eq!(rows as u64, run.records);
    run.syncs = run.records;
    run
}

fn pct(lat: &[u32], p: f64) -> f64 {
    let mut v = lat.to_vec();
    v.sort_unstable();
    if v.is_empty() {
        return f64::NAN;
    }
    v[((v.len() - 1) as f64 * p).round() as usize] as f64 / 1000.0
}

/// Median rate over the repetitions, and the repetition that gave it.
fn summarize(runs: &[Run]) -> (f64, &Run) {
    let rates: Vec<f64> = runs.iter().map(Run::rate).collect();
    (median(&rates), &runs[median_index(&rates)])
}

fn detail_row(name: &str, threads: usize, runs: &[Run]) -> Vec<String> {
    let (rate, r) = summarize(runs);
    let rates: Vec<String> = runs.iter().map(|r| format!("{:.0}", r.rate())).collect();
    vec![
        name.to_owned(),
        threads.to_string(),
        format!("{rate:.0}"),
        rates.join(" / "),
        format!("{:.0}", r.syncs as f64 / r.elapsed.as_secs_f64()),
        format!("{:.2}", r.records as f64 / r.syncs.max(1) as f64),
        format!("{:.2}", pct(&r.lat_us, 0.5)),
        format!("{:.2}", pct(&r.lat_us, 0.99)),
        format!("{:.1}", pct(&r.lat_us, 1.0)),
        format!("{} of {:.0}", r.fewest, r.records as f64 / threads as f64),
    ]
}

fn main() {
    let mut rng = Rng::new(0x0123_4567_89ab_cdef);
    let pool: Vec<Vec<u8>> = (0..POOL).map(|_| rng.bytes(RECORD_SIZE)).collect();
    let probe = scratch_dir().expect("scratch dir");
    println!(
        "journal_append: {RECORD_SIZE} B random records, {:.1} s per run, {REPS} runs per configuration, median reported",
        run_time().as_secs_f64()
    );
    println!("scratch: {} ({}); loadavg before: {}", probe.path().display(), fs_type(probe.path()), loadavg());
    drop(probe);

    let mut raw_runs = Vec::new();
    let mut overwrite_runs = Vec::new();
    let mut origin_runs: Vec<Vec<Run>> = THREADS.iter().map(|_| Vec::new()).collect();
    let mut sqlite_runs: Vec<Vec<Run>> = THREADS.iter().map(|_| Vec::new()).collect();
    let mut nosync_runs = Vec::new();
    // Interleave the configurations, so drift (another build on the machine) hits them all alike.
    for rep in 0..REPS {
        raw_runs.push(raw(&pool));
        overwrite_runs.push(raw_overwrite(&pool));
        for (k, &t) in THREADS.iter().enumerate() {
            origin_runs[k].push(origin(t, Durability::Sync, &pool));
            sqlite_runs[k].push(sqlite(t, &pool));
        }
        nosync_runs.push(origin(1, Durability::NoSyncBenchmarkOnly, &pool));
        eprintln!("run {} of {REPS} done (loadavg {})", rep + 1, loadavg());
    }

    let mb = |records_per_s: f64| records_per_s * RECORD_SIZE as f64 / 1e6;
    let (raw_rate, _) = summarize(&raw_runs);
    let raw_mb = mb(raw_rate);
    let mut rows = Vec::new();
    for (k, &t) in THREADS.iter().enumerate() {
        let (o, _) = summarize(&origin_runs[k]);
        let (s, _) = summarize(&sqlite_runs[k]);
        rows.push(vec![
            t.to_string(),
            format!("{o:.0}"),
            format!("{:.2}", mb(o)),
            format!("{raw_mb:.2}"),
            format!("{:.2}x", mb(o) / raw_mb),
            format!("{s:.0}"),
            format!("{:.2}x", o / s),
        ]);
    }
    let (n, _) = summarize(&nosync_runs);
    rows.push(vec![
        "1 (**no-sync**, NoSyncBenchmarkOnly: not durable, not comparable)".into(),
        format!("{n:.0}"),
        format!("{:.2}", mb(n)),
        "—".into(),
        "—".into(),
        "—".into(),
        "—".into(),
    ]);
    println!();
    println!(
        "{}",
        table(
            &[
                "appenders",
                "Origin records/s",
                "Origin MB/s",
                "raw write+fdatasync MB/s",
                "ratio vs raw (bytes/s)",
                "SQLite records/s",
                "ratio vs SQLite (records/s)",
            ],
            &rows,
        )
    );
    println!("MB = 10^6 bytes of payload (1 KiB per record; Origin's 32-byte frame overhead is not counted).");
    println!("The raw loop is one thread; its value is repeated on every row.\n");

    let mut detail = vec![
        detail_row("raw write+fdatasync (append)", 1, &raw_runs),
        detail_row("raw pwrite+fdatasync over a preallocated file (context only)", 1, &overwrite_runs),
    ];
    for (k, &t) in THREADS.iter().enumerate() {
        detail.push(detail_row("Origin (Sync)", t, &origin_runs[k]));
    }
    for (k, &t) in THREADS.iter().enumerate() {
        detail.push(detail_row("SQLite WAL FULL", t, &sqlite_runs[k]));
    }
    detail.push(detail_row("Origin (no-sync)", 1, &nosync_runs));
    println!(
        "{}",
        table(
            &[
                "system",
                "threads",
                "records/s (median)",
                "records/s (each run)",
                "syncs/s",
                "records per sync",
                "latency p50 ms",
                "p99 ms",
                "max ms",
                "fewest records by one thread (of mean)",
            ],
            &detail,
        )
    );
    println!("syncs: Origin group commits (one write + fdatasync each; none with no-sync), raw: one fdatasync per record,");
    println!("SQLite: one committed transaction per record. Latency and syncs are from the median run. loadavg after: {}", loadavg());
}
