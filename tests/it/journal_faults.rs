//! A full disk and failing fsync, injected at every I/O call of a small workload: the failing
//! append says what went wrong, a failed fsync stops the handle writing until it is reopened,
//! a full disk does not, and nothing acknowledged is lost, neither on reopen nor after a power
//! cut.

use std::io;
use std::path::Path;
use std::sync::Arc;

use origin_engine::sim::{Fault, SimFs};
use origin_engine::verify::verify;
use origin_engine::{Error, Journal, NewRecord, Options, StoreId};

const DIR: &str = "/store/journal";
const STORE_ID: StoreId = [0x5A; 16];
/// EIO on Linux: what the simulated fsync fails with.
const EIO: i32 = 5;
/// Survivors checked per fault point.
const POWER_CUT_SEEDS: u64 = 3;
const FAILURES_SHOWN: usize = 30;

fn dir() -> &'static Path {
    Path::new(DIR)
}

fn opts() -> Options {
    Options { segment_size_bytes_max: 4096, new_store_identity: Some((STORE_ID, 0)), ..Options::default() }
}

fn open(fs: &SimFs) -> origin_engine::Result<Journal> {
    Journal::open_with(Arc::new(fs.clone()), dir(), opts())
}

fn scratch(batch: &[Vec<u8>]) -> Vec<NewRecord> {
    batch.iter().cloned().map(NewRecord::scratch).collect()
}

/// Twelve batches of one to three records, rolling a segment every few batches; one record is
/// large and compressible.
fn workload() -> Vec<Vec<Vec<u8>>> {
    (0..12u32)
        .map(|i| {
            (0..1 + i % 3)
                .map(|r| {
                    if i == 5 && r == 1 {
                        format!("batch {i}: compressible tool output\n").repeat(200).into_bytes()
                    } else {
                        (0..300 + (i * 97 + r * 211) % 600).map(|b| (b.wrapping_mul(31) ^ i * 7 ^ r) as u8).collect()
                    }
                })
                .collect()
        })
        .collect()
}

fn mix(a: u64, b: u64) -> u64 {
    let mut z = a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z ^ (z >> 31)
}

/// The error a fault must produce: ENOSPC on a write, saying the disk is full; or EIO from a
/// file or directory fsync.
fn check_fault_error(fault: Fault, e: &Error) -> Result<(), String> {
    match (fault, e) {
        (Fault::DiskFull, Error::Io { op, source, .. }) => {
            if source.kind() != io::ErrorKind::StorageFull {
                return Err(format!("disk full surfaced as {:?}: {e}", source.kind()));
            }
            if *op != "write" {
                return Err(format!("disk full surfaced from op {op:?}: {e}"));
            }
            if !e.to_string().contains("disk is full") {
                return Err(format!("disk full error does not say so: {e}"));
            }
            Ok(())
        }
        (Fault::SyncFails, Error::Io { op, source, .. }) => {
            if source.raw_os_error() != Some(EIO) {
                return Err(format!("failed fsync surfaced as {source:?}: {e}"));
            }
            if *op != "fdatasync" && *op != "fsync directory" {
                return Err(format!("failed fsync surfaced from op {op:?}: {e}"));
            }
            Ok(())
        }
        _ => Err(format!("{fault:?} surfaced as an unexpected error: {e}")),
    }
}

/// What one run with a fault left behind.
struct Run {
    /// Records the journal holds, as the workload knows them: acknowledged ones, and records of
    /// a failed append that were written before it failed (read back to learn them).
    model: Vec<Vec<u8>>,
    /// Records up to here were acknowledged (the rest of `model` was not).
    acked_end: usize,
    /// The first error the fault caused, if it caused one.
    fault_error: Option<String>,
    violations: Vec<String>,
}

/// Opens and appends the workload through `fs`, where `fault` is injected at op `k`, checking
/// every result as it goes.
fn run_with_fault(fs: &SimFs, fault: Fault, k: u64, batches: &[Vec<Vec<u8>>]) -> Run {
    let mut run = Run { model: Vec::new(), acked_end: 0, fault_error: None, violations: Vec::new() };
    let j = match open(fs) {
        Ok(j) => j,
        Err(e) => {
            if fs.ops() <= k {
                run.violations.push(format!("open failed before the fault: {e}"));
                return run;
            }
            if let Err(m) = check_fault_error(fault, &e) {
                run.violations.push(format!("open: {m}"));
            }
            run.fault_error = Some(format!("open: {e}"));
            match open(fs) {
                Ok(j) => j,
                Err(e) => {
                    run.violations.push(format!("open after a failed open failed: {e}"));
                    return run;
                }
            }
        }
    };
    let mut refusing_since: Option<String> = None;
    let mut acked_after_failed_fsync = Vec::new();
    for (bi, batch) in batches.iter().enumerate() {
        match j.append(scratch(batch)) {
            Ok(range) => {
                if refusing_since.is_some() {
                    acked_after_failed_fsync.push(bi);
                }
                if range.start != run.model.len() as u64 || range.end - range.start != batch.len() as u64 {
                    run.violations.push(format!("batch {bi} got offsets {range:?}, expected to start at {}", run.model.len()));
                }
                run.model.extend(batch.iter().cloned());
                run.acked_end = run.model.len();
            }
            Err(e) => {
                if refusing_since.is_some() {
                    if !matches!(e, Error::Poisoned { .. }) {
                        run.violations.push(format!("batch {bi} after a failed fsync: {e}; expected Error::Poisoned"));
                    }
                    continue;
                }
                if fs.ops() <= k {
                    run.violations.push(format!("batch {bi} failed before the fault was reached: {e}"));
                    break;
                }
                if let Some(first) = &run.fault_error {
                    run.violations.push(format!("batch {bi} failed ({e}) after the one-shot fault had already failed ({first})"));
                    break;
                }
                if let Err(m) = check_fault_error(fault, &e) {
                    run.violations.push(format!("batch {bi}: {m}"));
                }
                run.fault_error = Some(format!("batch {bi}: {e}"));
                // Records of the failed batch written before the failure (a segment rolled
                // mid-batch) are in the journal: a prefix of the batch, never anything else.
                match j.read_vec(run.model.len() as u64, usize::MAX) {
                    Ok(extra) => {
                        let prefix = extra.len() <= batch.len() && extra.iter().zip(batch).all(|(r, p)| &r.payload == p);
                        if prefix {
                            run.model.extend(extra.into_iter().map(|r| r.payload));
                        } else {
                            run.violations.push(format!("batch {bi} failed, and the journal then holds {} records that are not a prefix of it", extra.len()));
                        }
                    }
                    Err(e) => run.violations.push(format!("reading after the failed batch {bi}: {e}")),
                }
                let refusing = j.status().ok().and_then(|s| s.refusing_writes);
                match (fault, refusing) {
                    (Fault::SyncFails, _) => refusing_since = Some(e.to_string()),
                    (Fault::DiskFull, Some(r)) => run.violations.push(format!("a full disk made the handle refuse writes: {r}")),
                    _ => {}
                }
            }
        }
    }
    if let (Some(cause), false) = (&refusing_since, acked_after_failed_fsync.is_empty()) {
        run.violations.push(format!(
            "batches {acked_after_failed_fsync:?} were acknowledged after a failed fsync ({cause}); expected Error::Poisoned"
        ));
    }
    match j.read_vec(0, usize::MAX) {
        Ok(all) if all.iter().map(|r| &r.payload).eq(run.model.iter()) => {}
        Ok(all) => run.violations.push(format!("the handle reads {} records, the workload knows {}", all.len(), run.model.len())),
        Err(e) => run.violations.push(format!("the handle cannot read its journal: {e}")),
    }
    run
}

/// A journal opened on `fs` holds `model[..n]` for some n in `required..=model.len()`, verify
/// is clean after the open, and it takes and returns a new record.
fn check_reopened(fs: &SimFs, model: &[Vec<u8>], required: usize) -> Result<(), String> {
    let j = open(fs).map_err(|e| format!("open failed: {e}"))?;
    let all = j.read_vec(0, usize::MAX).map_err(|e| format!("read failed: {e}"))?;
    if all.len() < required {
        return Err(format!("{required} records were acknowledged, {} are there", all.len()));
    }
    if all.len() > model.len() || all.iter().zip(model).any(|(r, m)| &r.payload != m) || all.iter().enumerate().any(|(i, r)| r.offset != i as u64) {
        return Err(format!("the {} records there are not the first of the {} written", all.len(), model.len()));
    }
    let report = verify(fs, dir()).map_err(|e| format!("verify failed: {e}"))?;
    if !report.is_clean() {
        return Err(format!("verify after the reopen: damage {:?}, torn tail {:?}", report.damage, report.torn_tail));
    }
    let n = all.len() as u64;
    let range = j.append(vec![NewRecord::scratch(b"after the fault".to_vec())]).map_err(|e| format!("append after reopen failed: {e}"))?;
    if range != (n..n + 1) || j.read_vec(n, 1).map(|v| v.len()).ok() != Some(1) {
        return Err(format!("append after reopen got {range:?}, expected {n}..{}", n + 1));
    }
    Ok(())
}

fn sweep(fault: Fault) {
    let seed = origin_tests::seed(0xFA_0175);
    let batches = workload();
    let probe = SimFs::new(seed);
    let clean = run_with_fault(&probe, fault, u64::MAX, &batches);
    assert!(clean.violations.is_empty() && clean.fault_error.is_none(), "fault-free run: {:?}", clean.violations);
    let total = probe.ops();
    let segments = open(&probe).map(|j| j.segment_paths().len()).unwrap_or(0);
    assert!(segments >= 4, "the workload must roll segments, it made {segments}");
    let (mut failures, mut errors, mut survivors) = (Vec::new(), 0u64, 0u64);
    for k in 0..total {
        let fs = SimFs::new(seed);
        fs.inject(k, fault);
        let run = run_with_fault(&fs, fault, k, &batches);
        let at = format!("{fault:?} at op {k}/{total} (first error: {})", run.fault_error.as_deref().unwrap_or("none"));
        errors += u64::from(run.fault_error.is_some());
        failures.extend(run.violations.iter().map(|v| format!("{at}: {v}")));
        // A power cut now: everything acknowledged survives.
        for s in 0..POWER_CUT_SEEDS {
            let s2 = mix(seed ^ k, s);
            survivors += 1;
            if let Err(e) = check_reopened(&fs.after_power_cut(s2), &run.model, run.acked_end) {
                failures.push(format!("{at}, then a power cut (survivor seed {s2}): {e}"));
            }
        }
        // Or simply a reopen: everything the journal held is still there.
        if let Err(e) = check_reopened(&fs, &run.model, run.model.len()) {
            failures.push(format!("{at}, then a reopen: {e}"));
        }
    }
    eprintln!(
        "journal_faults: {fault:?} at each of {total} I/O calls ({errors} surfaced as errors), {survivors} power-cut survivors (seed {seed})"
    );
    assert!(errors > 0, "{fault:?} never surfaced as an error");
    let shown: Vec<&str> = failures.iter().take(FAILURES_SHOWN).map(String::as_str).collect();
    assert!(failures.is_empty(), "{fault:?}: {} failures over {total} fault points (seed {seed}):\n{}", failures.len(), shown.join("\n"));
}

#[test]
fn disk_full_at_every_io_call_fails_cleanly_and_loses_nothing_acknowledged() {
    sweep(Fault::DiskFull);
}

#[test]
fn failing_fsync_at_every_io_call_poisons_the_handle_and_loses_nothing_acknowledged() {
    sweep(Fault::SyncFails);
}

/// A journal on `fs` with two acknowledged batches, and those batches.
fn journal_with_two_batches(fs: &SimFs) -> (Journal, Vec<Vec<u8>>) {
    let j = open(fs).expect("open");
    let mut model = Vec::new();
    for i in 0..2u8 {
        let batch = vec![vec![i; 100], vec![i + 10; 200]];
        j.append(scratch(&batch)).expect("append");
        model.extend(batch);
    }
    (j, model)
}

#[test]
fn disk_full_fails_the_append_with_a_clear_error_and_the_journal_keeps_working() {
    let fs = SimFs::new(1);
    let (j, mut model) = journal_with_two_batches(&fs);
    let segments = j.segment_paths().len();
    // The next call is the write of the next append.
    fs.inject(fs.ops(), Fault::DiskFull);
    let e = j.append(scratch(&[vec![7; 1500], vec![8; 1000]])).expect_err("the write hits a full disk");
    assert!(
        matches!(&e, Error::Io { op: "write", source, .. } if source.kind() == io::ErrorKind::StorageFull),
        "expected an ENOSPC write error, got {e:?}"
    );
    assert!(e.to_string().contains("disk is full"), "message: {e}");
    assert_eq!(j.status().expect("status").refusing_writes, None, "a full disk must not poison the handle");
    assert_eq!(j.next_offset(), 4, "the failed append took no offsets");
    let batch = vec![vec![9; 300]];
    assert_eq!(j.append(scratch(&batch)).expect("append once space is back"), 4..5);
    model.extend(batch);
    assert_eq!(j.segment_paths().len(), segments);
    let all: Vec<Vec<u8>> = j.read_vec(0, usize::MAX).expect("read").into_iter().map(|r| r.payload).collect();
    assert_eq!(all, model, "the failed append left nothing behind");
    drop(j);
    check_reopened(&fs, &model, model.len()).expect("reopen");
}

#[test]
fn a_failed_fdatasync_poisons_the_handle_until_it_is_reopened() {
    let fs = SimFs::new(2);
    let (j, model) = journal_with_two_batches(&fs);
    // The next append writes (this call) and then syncs (the call after).
    fs.inject(fs.ops() + 1, Fault::SyncFails);
    let e = j.append(scratch(&[vec![7; 50]])).expect_err("the fdatasync fails");
    assert!(
        matches!(&e, Error::Io { op: "fdatasync", source, .. } if source.raw_os_error() == Some(EIO)),
        "expected an fdatasync EIO error, got {e:?}"
    );
    for i in 0..3u8 {
        let e = j.append(scratch(&[vec![i; 10]])).expect_err("a poisoned handle refuses writes");
        assert!(matches!(e, Error::Poisoned { .. }), "append {i} after the failed fsync: {e:?}");
    }
    assert!(j.status().expect("status").refusing_writes.is_some());
    let all: Vec<Vec<u8>> = j.read_vec(0, usize::MAX).expect("reads still work").into_iter().map(|r| r.payload).collect();
    assert_eq!(all, model, "the unsynced batch is not readable");
    drop(j);
    check_reopened(&fs.after_power_cut(3), &model, model.len()).expect("power cut after the failed fsync");
    // Reopened, the handle writes again, and the unsynced batch was cut off.
    check_reopened(&fs, &model, model.len()).expect("reopen");
}

#[test]
fn a_failed_fsync_while_rolling_a_segment_poisons_the_handle_and_loses_nothing_acknowledged() {
    // Appends of 1000 bytes: the fourth rolls a 4 KiB segment, the two after it fit in the new
    // one (so no later roll syncs the directory again).
    let batch = |i: u8| vec![vec![i; 1000]];
    let appends = 6u8;
    let probe = SimFs::new(4);
    let (roll_ops, total) = {
        let j = open(&probe).expect("open");
        let mut roll = None;
        for i in 0..appends {
            let (before, segments) = (probe.ops(), j.segment_paths().len());
            j.append(scratch(&batch(i))).expect("append");
            if j.segment_paths().len() > segments {
                assert!(roll.is_none(), "one roll only");
                roll = Some(before..probe.ops());
            }
        }
        (roll.expect("a roll"), probe.ops())
    };
    assert!(total > roll_ops.end);
    let mut failures = Vec::new();
    let mut sync_failures = 0;
    for k in roll_ops.clone() {
        let fs = SimFs::new(4);
        fs.inject(k, Fault::SyncFails);
        let j = open(&fs).expect("open");
        let (mut acked, mut failed) = (Vec::new(), None::<String>);
        let mut acked_after = Vec::new();
        for i in 0..appends {
            match j.append(scratch(&batch(i))) {
                Ok(r) => {
                    if failed.is_some() {
                        acked_after.push(r.start);
                    }
                    acked.push(batch(i).remove(0));
                }
                Err(e) if failed.is_none() => failed = Some(e.to_string()),
                Err(e) => {
                    if !matches!(e, Error::Poisoned { .. }) {
                        failures.push(format!("SyncFails at op {k}: append {i}: {e}; expected Error::Poisoned"));
                    }
                }
            }
        }
        let Some(failed) = failed else {
            continue; // This call was not an fsync.
        };
        sync_failures += 1;
        if !acked_after.is_empty() {
            failures.push(format!(
                "SyncFails at op {k} (the roll made ops {roll_ops:?}): `{failed}`, yet the appends at offsets {acked_after:?} were acknowledged after it"
            ));
        }
        drop(j);
        for s in 0..16 {
            if let Err(e) = check_reopened(&fs.after_power_cut(s), &acked, acked.len()) {
                failures.push(format!("SyncFails at op {k}, then a power cut (survivor seed {s}): {e}"));
            }
        }
        // Opened again with nothing appended (reads, an ingest that finds nothing new), then a
        // power cut at any call of that open or after it: the open that brings `TIP` up to the
        // segment the failed roll started syncs that segment and its name first, so no later
        // open finds `TIP` naming a segment that did not survive ("the segment file is gone").
        let probe = fs.snapshot();
        drop(open(&probe).expect("reopen"));
        for cut in 0..=probe.ops() {
            let m = fs.snapshot();
            if cut < probe.ops() {
                m.inject(cut, Fault::PowerCut);
            }
            match open(&m) {
                Ok(j) => drop(j),
                Err(_) if m.crashed() => {}
                Err(e) => failures.push(format!("SyncFails at op {k}, an open with no fault: {e}")),
            }
            for s in 0..4 {
                if let Err(e) = check_reopened(&m.after_power_cut(s), &acked, acked.len()) {
                    failures.push(format!("SyncFails at op {k}, an open, a power cut at its call {cut} (survivor seed {s}): {e}"));
                }
            }
        }
    }
    assert!(sync_failures >= 3, "the roll makes at least three fsyncs (segment data, new header, directory)");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
