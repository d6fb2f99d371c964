//! Crash simulation: a power cut at every mutating I/O call of a seeded workload, then
//! recovery on what survives, checked against what was acknowledged and what was attempted.
//! A second pass cuts the power again at every I/O call of the recovery itself.
//!
//! Replay a failure with `ORIGIN_TEST_SEED=<seed>`; run longer with `ORIGIN_TEST_SCALE=<n>`.

use std::path::Path;
use std::sync::Arc;

use origin_engine::sim::{Fault, SimFs};
use origin_engine::verify::verify;
use origin_engine::{Journal, NewRecord, Options, RecordKind, StoreId};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const DIR: &str = "/store/journal";
const STORE_ID: StoreId = [0x42; 16];
/// Workload seeds per run at scale 1 (each makes about 190 crash points).
const SEEDS_PER_SCALE: u64 = 10;
/// Batches in one workload.
const BATCHES: usize = 24;
/// Survivors (different random outcomes of one power cut) checked per crash point.
const SURVIVORS_PER_CRASH: u64 = 3;
/// The recovery pass crashes recovery after one in this many first crash points (rotating
/// with the workload), at every I/O call of that recovery.
const RECOVERY_STRIDE: u64 = 3;
/// Failures listed in a panic message (all are counted).
const FAILURES_SHOWN: usize = 25;

fn opts() -> Options {
    Options {
        segment_size_bytes_max: 4096,
        new_store_identity: Some((STORE_ID, 0)),
        ..Options::default()
    }
}

fn dir() -> &'static Path {
    Path::new(DIR)
}

/// A mix of seeds into one, so every (seed, crash point, survivor) gets its own stream.
fn mix(a: u64, b: u64, c: u64) -> u64 {
    let mut z = a ^ b.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ c.wrapping_mul(0xD1B5_4A32_D192_ED03);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One record's payload: mostly small random bytes, sometimes a large compressible text (the
/// zstd path), sometimes a large incompressible blob bigger than a whole segment.
fn payload(rng: &mut StdRng, tag: u64) -> Vec<u8> {
    match rng.random_range(0..20u32) {
        0..=1 => {
            let line = format!("record {tag}: tool output line, compressible text\n");
            line.repeat(rng.random_range(110..260)).into_bytes()
        }
        2 => {
            let mut b = vec![0u8; rng.random_range(4100..6000)];
            rng.fill(&mut b[..]);
            b
        }
        _ => {
            let mut b = vec![0u8; rng.random_range(0..1500)];
            rng.fill(&mut b[..]);
            b
        }
    }
}

/// The batches a workload appends, in order: 1 to 5 records each.
fn workload(seed: u64, batches: usize) -> Vec<Vec<Vec<u8>>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut tag = 0;
    (0..batches)
        .map(|_| {
            let n = rng.random_range(1..=5);
            (0..n)
                .map(|_| {
                    tag += 1;
                    payload(&mut rng, tag)
                })
                .collect()
        })
        .collect()
}

/// What a run of a workload got back.
struct Run {
    /// Records the workload attempted, in offset order (acknowledged ones first, then the
    /// batch that failed, if one did).
    attempted: Vec<Vec<u8>>,
    /// How many of `attempted` were acknowledged.
    acked: usize,
    /// Protocol violations seen during the run (an error without a crash, a wrong range).
    violations: Vec<String>,
}

/// Opens the journal on `fs` and appends `batches` in order, stopping at the first error.
/// `first` is the offset the first batch must get.
fn run(fs: &SimFs, first: u64, batches: &[Vec<Vec<u8>>]) -> Run {
    let mut out = Run { attempted: Vec::new(), acked: 0, violations: Vec::new() };
    let j = match Journal::open_with(Arc::new(fs.clone()), dir(), opts()) {
        Ok(j) => j,
        Err(e) => {
            if !fs.crashed() {
                out.violations.push(format!("open failed without a power cut: {e}"));
            }
            return out;
        }
    };
    if j.next_offset() != first {
        out.violations.push(format!("open found next offset {}, expected {first}", j.next_offset()));
        return out;
    }
    let mut next = first;
    for batch in batches {
        out.attempted.extend(batch.iter().cloned());
        let records = batch.iter().cloned().map(NewRecord::scratch).collect();
        match j.append(records) {
            Ok(range) => {
                let want = next..next + batch.len() as u64;
                if range != want {
                    out.violations.push(format!("append returned offsets {range:?}, expected {want:?}"));
                }
                next = want.end;
                out.acked = out.attempted.len();
            }
            Err(e) => {
                if !fs.crashed() {
                    out.violations.push(format!("append failed without a power cut: {e}"));
                }
                break;
            }
        }
    }
    out
}

/// Opens the journal on a survivor and checks it: open succeeds and reports no corruption;
/// the first `required` records of `attempted` are there, byte for byte, at offsets 0..;
/// anything after them is the next attempted record at its offset; offsets are dense;
/// verify is clean after the open; a new append lands after them and reads back.
/// Returns how many records the survivor held.
fn check_survivor(fs: &SimFs, attempted: &[Vec<u8>], required: usize) -> Result<usize, String> {
    let j = Journal::open_with(Arc::new(fs.clone()), dir(), opts()).map_err(|e| format!("open of the survivor failed: {e}"))?;
    let got = j.read_vec(0, usize::MAX).map_err(|e| format!("reading the survivor failed: {e}"))?;
    if got.len() < required {
        return Err(format!("{} acknowledged records, only {} survived", required, got.len()));
    }
    if got.len() > attempted.len() {
        return Err(format!("{} records survived, only {} were ever attempted", got.len(), attempted.len()));
    }
    for (i, r) in got.iter().enumerate() {
        if r.offset != i as u64 {
            return Err(format!("record {i} has offset {} (offsets must be dense from 0)", r.offset));
        }
        if r.kind != RecordKind::Scratch as u8 || r.kind_version != 1 {
            return Err(format!("record {i} has kind {} version {}", r.kind, r.kind_version));
        }
        if r.payload != attempted[i] {
            let what = if i < required { "acknowledged" } else { "unacknowledged" };
            return Err(format!(
                "{what} record {i}: payload of {} bytes differs from the {} bytes written",
                r.payload.len(),
                attempted[i].len()
            ));
        }
    }
    let n = got.len();
    if j.next_offset() != n as u64 {
        return Err(format!("next offset {} after {n} records", j.next_offset()));
    }
    let report = verify(fs, dir()).map_err(|e| format!("verify failed: {e}"))?;
    if !report.is_clean() {
        return Err(format!("verify after the reopen is not clean: damage {:?}, torn tail {:?}", report.damage, report.torn_tail));
    }
    if report.records != n as u64 {
        return Err(format!("verify counted {} records, reads returned {n}", report.records));
    }
    let marker = format!("written after recovery of {n} records").into_bytes();
    let range = j.append(vec![NewRecord::scratch(marker.clone())]).map_err(|e| format!("append after recovery failed: {e}"))?;
    if range != (n as u64..n as u64 + 1) {
        return Err(format!("append after recovery got offsets {range:?}, expected {n}..{}", n + 1));
    }
    let back = j.read_vec(n as u64, 10).map_err(|e| format!("reading the new record failed: {e}"))?;
    if back.len() != 1 || back[0].payload != marker {
        return Err(format!("the record appended after recovery reads back as {back:?}"));
    }
    Ok(n)
}

fn fail_report(what: &str, seed: u64, points: u64, failures: &[String]) -> String {
    let shown: Vec<&str> = failures.iter().take(FAILURES_SHOWN).map(String::as_str).collect();
    format!(
        "{what}: {} failures over {points} crash points (seed {seed}, replay with ORIGIN_TEST_SEED={seed}):\n{}",
        failures.len(),
        shown.join("\n")
    )
}

#[test]
fn power_cut_at_every_io_call_keeps_every_acknowledged_record() {
    let seed = origin_tests::seed(0x0C0F_FEE0);
    let seeds = SEEDS_PER_SCALE * origin_tests::scale();
    let (mut points, mut survivors) = (0u64, 0u64);
    let mut failures = Vec::new();
    for w in 0..seeds {
        let wseed = mix(seed, w, 0);
        let batches = workload(wseed, BATCHES);
        // Without faults: every append succeeds, and the calls it makes are counted.
        let clean = SimFs::new(wseed);
        let r = run(&clean, 0, &batches);
        assert!(r.violations.is_empty(), "seed {seed} workload {w}: fault-free run: {:?}", r.violations);
        assert_eq!(r.acked, r.attempted.len(), "seed {seed} workload {w}: fault-free run lost appends");
        let total = clean.ops();
        let segments = Journal::open_with(Arc::new(clean.clone()), dir(), opts()).map(|j| j.segment_paths().len()).unwrap_or(0);
        assert!(segments >= 5, "seed {seed} workload {w}: the workload must roll segments, it made {segments}");
        for k in 0..total {
            let fs = SimFs::new(mix(wseed, k, 1));
            fs.inject(k, Fault::PowerCut);
            let r = run(&fs, 0, &batches);
            points += 1;
            let at = format!("seed {seed} workload {w} crash at op {k}/{total}");
            if !fs.crashed() {
                failures.push(format!("{at}: the workload never reached op {k}"));
                continue;
            }
            failures.extend(r.violations.iter().map(|v| format!("{at}: {v}")));
            for s in 0..SURVIVORS_PER_CRASH {
                let s2 = mix(wseed, k, 100 + s);
                survivors += 1;
                if let Err(e) = check_survivor(&fs.after_power_cut(s2), &r.attempted, r.acked) {
                    failures.push(format!("{at} survivor seed {s2}: {e}"));
                }
            }
        }
    }
    eprintln!(
        "journal_crash: {points} crash points, {survivors} survivors checked, {} workloads (seed {seed}, scale {})",
        seeds,
        origin_tests::scale()
    );
    assert!(points >= 1000 * origin_tests::scale(), "only {points} crash points: the workload shrank");
    assert!(failures.is_empty(), "{}", fail_report("power cut at every I/O call", seed, points, &failures));
}

#[test]
fn power_cut_during_recovery_keeps_every_record_that_survived_the_first() {
    let seed = origin_tests::seed(0x0C0F_FEE1);
    let seeds = 2 * origin_tests::scale();
    let (mut first_points, mut second_points) = (0u64, 0u64);
    let mut failures = Vec::new();
    for w in 0..seeds {
        let wseed = mix(seed, w, 2);
        let batches = workload(wseed, BATCHES);
        let recovery_batches = workload(mix(wseed, 0, 3), 3);
        let clean = SimFs::new(wseed);
        let r = run(&clean, 0, &batches);
        assert!(r.violations.is_empty(), "seed {seed} workload {w}: fault-free run: {:?}", r.violations);
        let total = clean.ops();
        for k in (w % RECOVERY_STRIDE..total).step_by(RECOVERY_STRIDE as usize) {
            let crashed = SimFs::new(mix(wseed, k, 1));
            crashed.inject(k, Fault::PowerCut);
            let first = run(&crashed, 0, &batches);
            first_points += 1;
            let s2 = mix(wseed, k, 200);
            let at = format!("seed {seed} workload {w} crash at op {k}/{total} survivor seed {s2}");
            if !first.violations.is_empty() || !crashed.crashed() {
                failures.push(format!("{at}: first run: crashed {} violations {:?}", crashed.crashed(), first.violations));
                continue;
            }
            // What the recovering process does without a fault, and how many calls it makes.
            let probe = crashed.after_power_cut(s2);
            let held = match Journal::open_with(Arc::new(probe.clone()), dir(), opts()) {
                Ok(j) => j.next_offset(),
                Err(e) => {
                    failures.push(format!("{at}: open of the survivor failed: {e}"));
                    continue;
                }
            };
            let held_n = held as usize;
            if held_n < first.acked || held_n > first.attempted.len() {
                failures.push(format!("{at}: survivor holds {held} records, {} acknowledged, {} attempted", first.acked, first.attempted.len()));
                continue;
            }
            let probe = crashed.after_power_cut(s2);
            let pr = run(&probe, held, &recovery_batches);
            if !pr.violations.is_empty() {
                failures.push(format!("{at}: fault-free recovery run: {:?}", pr.violations));
                continue;
            }
            let recovery_ops = probe.ops();
            for k2 in 0..recovery_ops {
                // The same survivor (same seed), powered off again at the k2-th call of recovery.
                let fs = crashed.after_power_cut(s2);
                fs.inject(k2, Fault::PowerCut);
                let second = run(&fs, held, &recovery_batches);
                second_points += 1;
                let at2 = format!("{at}, second crash at recovery op {k2}/{recovery_ops}");
                if !fs.crashed() {
                    failures.push(format!("{at2}: recovery never reached op {k2}"));
                    continue;
                }
                failures.extend(second.violations.iter().map(|v| format!("{at2}: {v}")));
                let mut attempted: Vec<Vec<u8>> = first.attempted[..held_n].to_vec();
                attempted.extend(second.attempted.iter().cloned());
                let required = held_n + second.acked;
                let s3 = mix(wseed, k * 1000 + k2, 300);
                if let Err(e) = check_survivor(&fs.after_power_cut(s3), &attempted, required) {
                    failures.push(format!("{at2} second survivor seed {s3}: {e}"));
                }
            }
        }
    }
    eprintln!(
        "journal_crash: {first_points} first crash points x every recovery call = {second_points} crash points during recovery (seed {seed}, scale {})",
        origin_tests::scale()
    );
    assert!(second_points >= 1000 * origin_tests::scale(), "only {second_points} crash points during recovery");
    assert!(failures.is_empty(), "{}", fail_report("power cut during recovery", seed, second_points, &failures));
}
