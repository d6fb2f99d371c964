//! Warm-cache throughput of `verify_dir` against a raw sequential read plus CRC32 of the same segment files.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::fs::File;
use std::hint::black_box;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use origin_benches::{fs_type, loadavg, median, scratch_dir, table, Rng};
use origin_engine::verify::verify_dir;
use origin_engine::{Durability, Journal, NewRecord, Options};

const REPS: usize = 3;
const LARGE: usize = 64 * 1024;
const BATCH_BYTES: usize = 4 * 1024 * 1024;

/// Builds the journal without syncs: returns records written.
fn build(dir: &Path, target_bytes: u64) -> u64 {
    let journal = Journal::open(dir, Options { durability: Durability::NoSyncBenchmarkOnly, ..Options::default() })
        .expect("open journal");
    let mut rng = Rng::new(0x5eed_0f_0419);
    let pool = rng.bytes(8 * 1024 * 1024);
    let (mut records, mut bytes, mut large) = (0u64, 0u64, 0u64);
    while bytes < target_bytes {
        let mut batch = Vec::new();
        let mut batch_bytes = 0;
        while batch_bytes < BATCH_BYTES && bytes < target_bytes {
            // Mostly 200 B to 2 KiB; one record in a hundred is 64 KiB.
            let size = if rng.below(100) == 0 { LARGE } else { 200 + rng.below(2048 - 200 + 1) as usize };
            large += u64::from(size == LARGE);
            let at = rng.below((pool.len() - size) as u64) as usize;
            batch.push(NewRecord::scratch(pool[at..at + size].to_vec()));
            batch_bytes += size;
            bytes += (size + 32) as u64;
        }
        records += batch.len() as u64;
        journal.append(batch).expect("append");
    }
    let st = journal.status().expect("status");
    assert_eq!(st.records_appended, records);
    println!(
        "built: {records} records ({large} of 64 KiB), {} segment files, {:.3} GB on disk",
        st.segments,
        st.bytes as f64 / 1e9
    );
    records
}

fn segment_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("list journal")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "seg"))
        .collect();
    v.sort();
    v
}

/// The baseline: every segment byte read sequentially in 1 MiB chunks and CRC32ed.
fn raw_read_crc(files: &[PathBuf], buf: &mut [u8]) -> (u64, u32) {
    let mut h = crc32fast::Hasher::new();
    let mut total = 0u64;
    for p in files {
        let mut f = File::open(p).expect("open segment");
        loop {
            let n = f.read(buf).expect("read segment");
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
            total += n as u64;
        }
    }
    (total, h.finalize())
}

fn gbps(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / 1e9 / d.as_secs_f64()
}

fn main() {
    let target: u64 = match std::env::var("ORIGIN_BENCH_VERIFY_BYTES") {
        Ok(s) => s.trim().parse().expect("ORIGIN_BENCH_VERIFY_BYTES must be a number of bytes"),
        Err(_) => 1 << 30,
    };
    let tmp = scratch_dir().expect("scratch dir");
    let dir = tmp.path().join("journal");
    println!("journal_verify: target {target} bytes; scratch: {} ({})", tmp.path().display(), fs_type(tmp.path()));
    let t0 = Instant::now();
    let written = build(&dir, target);
    println!("build took {:.1} s (not measured: no-sync appends)", t0.elapsed().as_secs_f64());

    let files = segment_files(&dir);
    let mut buf = vec![0u8; 1 << 20];
    // Warm the page cache: read every file once.
    let (seg_bytes, _) = raw_read_crc(&files, &mut buf);
    println!("warm-up read: {seg_bytes} bytes in {} segment files; loadavg {}", files.len(), loadavg());

    let (mut v_runs, mut r_runs) = (Vec::new(), Vec::new());
    for rep in 0..REPS {
        let t = Instant::now();
        let report = verify_dir(&dir).expect("verify_dir");
        let d = t.elapsed();
        assert!(report.is_clean(), "verify found damage: {:?} torn: {:?}", report.damage, report.torn_tail);
        assert_eq!(report.records, written, "verify counted every record written");
        assert_eq!(report.bytes, seg_bytes, "verify read every segment byte");
        v_runs.push(d);

        let t = Instant::now();
        let (n, crc) = raw_read_crc(&files, &mut buf);
        let d2 = t.elapsed();
        black_box(crc);
        assert_eq!(n, seg_bytes);
        r_runs.push(d2);
        eprintln!(
            "run {}: verify {:.3} s, raw read+crc {:.3} s (loadavg {})",
            rep + 1,
            d.as_secs_f64(),
            d2.as_secs_f64(),
            loadavg()
        );
    }
    let v: Vec<f64> = v_runs.iter().map(|d| gbps(seg_bytes, *d)).collect();
    let r: Vec<f64> = r_runs.iter().map(|d| gbps(seg_bytes, *d)).collect();
    let (vm, rm) = (median(&v), median(&r));
    let each = |xs: &[f64]| xs.iter().map(|x| format!("{x:.2}")).collect::<Vec<_>>().join(" / ");
    println!();
    println!(
        "{}",
        table(
            &[
                "journal bytes",
                "records",
                "verify_dir GB/s",
                "raw read+CRC32 GB/s",
                "ratio verify/raw",
                "verify GB/s (each run)",
                "raw GB/s (each run)",
            ],
            &[vec![
                seg_bytes.to_string(),
                written.to_string(),
                format!("{vm:.2}"),
                format!("{rm:.2}"),
                format!("{:.2}x", vm / rm),
                each(&v),
                each(&r),
            ]],
        )
    );
    println!("GB = 10^9 bytes of segment files; warm page cache; median of {REPS} runs. loadavg after: {}", loadavg());
}
