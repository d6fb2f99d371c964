//! The journal against a model: random sequences of appends, reopens, reads, refreshes and
//! power cuts through two handles on one simulated machine, checked against a plain
//! `Vec<Vec<u8>>`; and concurrent appenders on the real file system.

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, Barrier};

use origin_engine::sim::SimFs;
use origin_engine::verify::{verify, verify_dir};
use origin_engine::{Journal, NewRecord, Options, RecordKind, StoreId};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

const DIR: &str = "/store/journal";
const STORE_ID: StoreId = [0x33; 16];

fn dir() -> &'static Path {
    Path::new(DIR)
}

fn opts(segment_size_bytes_max: u64) -> Options {
    Options { segment_size_bytes_max, new_store_identity: Some((STORE_ID, 0)), ..Options::default() }
}

/// A record payload; shown by its size and first bytes, so a shrunk case stays readable.
#[derive(Clone, PartialEq, Eq)]
struct Payload(Vec<u8>);

impl std::fmt::Debug for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} bytes {:02x?}", self.0.len(), &self.0[..self.0.len().min(4)])
    }
}

#[derive(Clone, Debug)]
enum Op {
    /// Append one batch through handle `via`.
    Append { via: usize, batch: Vec<Payload> },
    /// Read up to `limit` records from `from` through handle `via`.
    Read { via: usize, from: u64, limit: usize },
    /// Learn what the other handle appended.
    Refresh { via: usize },
    /// Drop handle `via` and open it again.
    Reopen { via: usize },
    /// Cut the power (nothing is in flight), bring the machine back, reopen both handles.
    PowerCut { seed: u64 },
}

fn payload() -> impl Strategy<Value = Payload> {
    prop_oneof![
        8 => proptest::collection::vec(any::<u8>(), 0..700),
        1 => (any::<u16>(), 110usize..260).prop_map(|(tag, n)| format!("tool output {tag}: a line that repeats\n").repeat(n).into_bytes()),
        1 => proptest::collection::vec(any::<u8>(), 4097..5200),
    ]
    .prop_map(Payload)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..2usize, proptest::collection::vec(payload(), 1..5)).prop_map(|(via, batch)| Op::Append { via, batch }),
        3 => (0..2usize, 0..80u64, prop_oneof![0..6usize, Just(usize::MAX)]).prop_map(|(via, from, limit)| Op::Read { via, from, limit }),
        2 => (0..2usize).prop_map(|via| Op::Refresh { via }),
        1 => (0..2usize).prop_map(|via| Op::Reopen { via }),
        1 => any::<u64>().prop_map(|seed| Op::PowerCut { seed }),
    ]
}

fn segment_size() -> impl Strategy<Value = u64> {
    prop_oneof![Just(4096u64), Just(6000), Just(1 << 20)]
}

/// The records handle `via` must return for a read: those it knows of (`known`), from `from`,
/// at most `limit`.
fn expected(model: &[Vec<u8>], known: usize, from: u64, limit: usize) -> &[Vec<u8>] {
    let start = (from as usize).min(known);
    let end = known.min(start.saturating_add(limit));
    &model[start..end]
}

fn run_model(sizes: [u64; 2], ops: &[Op]) -> Result<(), TestCaseError> {
    let mut fs = SimFs::new(1);
    let open = |fs: &SimFs, via: usize| Journal::open_with(Arc::new(fs.clone()), dir(), opts(sizes[via]));
    let mut handles = vec![open(&fs, 0).map_err(|e| TestCaseError::fail(e.to_string()))?];
    handles.push(open(&fs, 1).map_err(|e| TestCaseError::fail(e.to_string()))?);
    let mut model: Vec<Vec<u8>> = Vec::new();
    // How many records each handle knows of.
    let mut known = [0usize; 2];
    for (step, op) in ops.iter().enumerate() {
        match op {
            Op::Append { via, batch } => {
                let range = handles[*via]
                    .append(batch.iter().map(|p| NewRecord::scratch(p.0.clone())).collect())
                    .map_err(|e| TestCaseError::fail(format!("step {step}: append failed: {e}")))?;
                let want = model.len() as u64..(model.len() + batch.len()) as u64;
                prop_assert_eq!(range, want, "step {}: offsets of an append", step);
                model.extend(batch.iter().map(|p| p.0.clone()));
                known[*via] = model.len();
            }
            Op::Read { via, from, limit } => {
                let got = handles[*via]
                    .read_vec(*from, *limit)
                    .map_err(|e| TestCaseError::fail(format!("step {step}: read failed: {e}")))?;
                let want = expected(&model, known[*via], *from, *limit);
                prop_assert_eq!(got.len(), want.len(), "step {}: records read from {} limit {}", step, from, limit);
                for (i, (r, w)) in got.iter().zip(want).enumerate() {
                    prop_assert_eq!(r.offset, *from + i as u64, "step {}: offset", step);
                    prop_assert_eq!(r.kind, RecordKind::Scratch as u8);
                    prop_assert!(&r.payload == w, "step {}: payload at offset {} differs", step, r.offset);
                }
            }
            Op::Refresh { via } => {
                handles[*via].refresh().map_err(|e| TestCaseError::fail(format!("step {step}: refresh failed: {e}")))?;
                known[*via] = model.len();
            }
            Op::Reopen { via } => {
                handles[*via] = open(&fs, *via).map_err(|e| TestCaseError::fail(format!("step {step}: reopen failed: {e}")))?;
                let report = handles[*via].open_report();
                prop_assert!(report.torn_tails.is_empty() && !report.created, "step {}: reopen report {:?}", step, report);
                known[*via] = model.len();
            }
            Op::PowerCut { seed } => {
                fs = fs.after_power_cut(*seed);
                for via in 0..2 {
                    handles[via] = open(&fs, via).map_err(|e| TestCaseError::fail(format!("step {step}: open after power cut failed: {e}")))?;
                    let report = handles[via].open_report();
                    prop_assert!(report.torn_tails.is_empty() && !report.created, "step {}: open after power cut: {:?}", step, report);
                    known[via] = model.len();
                }
            }
        }
        for (via, h) in handles.iter().enumerate() {
            prop_assert_eq!(h.next_offset(), known[via] as u64, "step {}: next offset of handle {}", step, via);
        }
    }
    drop(handles);
    let report = verify(&fs, dir()).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert!(report.is_clean(), "verify: {:?} {:?}", report.damage, report.torn_tail);
    prop_assert_eq!(report.records, model.len() as u64);
    let j = open(&fs, 0).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let all = j.read_vec(0, usize::MAX).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(all.len(), model.len());
    prop_assert!(all.iter().zip(&model).all(|(r, w)| &r.payload == w), "final read differs from the model");
    Ok(())
}

fn config() -> Config {
    Config {
        cases: 64 * origin_tests::scale() as u32,
        rng_seed: RngSeed::Fixed(origin_tests::seed(0x0DE1_0001)),
        failure_persistence: None,
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn two_handles_agree_with_a_vec_model_through_appends_reads_refreshes_reopens_and_power_cuts(
        sizes in [segment_size(), segment_size()],
        ops in proptest::collection::vec(op(), 1..48),
    ) {
        run_model(sizes, &ops)?;
    }
}

/// `threads` threads append `per_thread` records each (in batches of 1 to 3) to one journal
/// on the real file system; returns the journal's status after they finish and the number of
/// append calls made.
fn concurrent_appends(threads: usize, per_thread: usize) -> (origin_engine::Status, u64) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let path = tmp.path().join("journal");
    let opts = Options { segment_size_bytes_max: 16 * 1024, ..Options::default() };
    let j = Arc::new(Journal::open(&path, opts.clone()).expect("open"));
    let start = Arc::new(Barrier::new(threads));
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (j, start) = (j.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let mut mine: Vec<(Range<u64>, Vec<Vec<u8>>)> = Vec::new();
                let mut i = 0;
                while i < per_thread {
                    let n = (1 + (t + i) % 3).min(per_thread - i);
                    let batch: Vec<Vec<u8>> =
                        (i..i + n).map(|k| format!("thread {t} record {k} {}", "x".repeat((t * 31 + k * 17) % 300)).into_bytes()).collect();
                    let range = j.append(batch.iter().cloned().map(NewRecord::scratch).collect()).expect("append");
                    assert_eq!(range.end - range.start, n as u64, "thread {t}: range {range:?} for {n} records");
                    mine.push((range, batch));
                    i += n;
                }
                mine
            })
        })
        .collect();
    let mut by_offset: HashMap<u64, Vec<u8>> = HashMap::new();
    let mut calls = 0u64;
    for w in workers {
        for (range, batch) in w.join().expect("thread") {
            calls += 1;
            for (o, p) in range.zip(batch) {
                assert!(by_offset.insert(o, p).is_none(), "offset {o} given to two records");
            }
        }
    }
    let total = threads * per_thread;
    assert_eq!(by_offset.len(), total);
    assert!((0..total as u64).all(|o| by_offset.contains_key(&o)), "offsets are not dense from 0");
    let status = j.status().expect("status");
    assert_eq!(status.next_offset, total as u64);
    assert_eq!(status.records_appended, total as u64);
    drop(j);
    // Reopened: every record exactly once, at the offset its append returned.
    let j = Journal::open(&path, opts).expect("reopen");
    let all = j.read_vec(0, usize::MAX).expect("read");
    assert_eq!(all.len(), total, "records after reopen");
    let mut seen: HashMap<&[u8], u64> = HashMap::new();
    for r in &all {
        assert_eq!(Some(&r.payload), by_offset.get(&r.offset), "record at offset {}", r.offset);
        assert!(seen.insert(&r.payload, r.offset).is_none(), "a record appears twice");
    }
    drop(j);
    let report = verify_dir(&path).expect("verify");
    assert!(report.is_clean(), "{report:?}");
    assert!(report.segments.len() > 1, "appends must cross segment rolls");
    (status, calls)
}

#[test]
fn one_thread_commits_every_append_on_its_own() {
    let (status, calls) = concurrent_appends(1, 150);
    assert_eq!(status.batches, calls, "one sequential appender: one group commit per append call");
}

#[test]
fn four_threads_appending_get_dense_unique_offsets() {
    concurrent_appends(4, 100);
}

#[test]
fn sixteen_threads_appending_share_group_commits() {
    let (status, calls) = concurrent_appends(16, 40);
    // Fewer commits than append calls (so fewer than records): some syncs were shared.
    assert!(status.batches < calls, "{} group commits for {calls} append calls: no sync was shared", status.batches);
}

/// Handle `b` follows a roll made by handle `a` with `refresh`, then appends.
fn refresh_across_a_roll_then_append(open: &dyn Fn() -> origin_engine::Result<Journal>) -> Result<(), String> {
    let a = open().map_err(|e| format!("open a: {e}"))?;
    let b = open().map_err(|e| format!("open b: {e}"))?;
    b.append(vec![NewRecord::scratch(b"first, by b".to_vec())]).map_err(|e| format!("first append by b: {e}"))?;
    let segments = a.segment_paths().len();
    while a.segment_paths().len() == segments {
        a.append(vec![NewRecord::scratch(vec![0xAA; 1000])]).map_err(|e| format!("append by a: {e}"))?;
    }
    b.refresh().map_err(|e| format!("refresh of b: {e}"))?;
    if b.next_offset() != a.next_offset() || b.segment_paths() != a.segment_paths() {
        return Err(format!("after refresh b knows {} records in {:?}", b.next_offset(), b.segment_paths()));
    }
    let n = a.next_offset();
    let range = b.append(vec![NewRecord::scratch(b"by b, after following a's roll".to_vec())]).map_err(|e| {
        let again = b.append(vec![NewRecord::scratch(b"retry".to_vec())]).err().map(|e| e.to_string());
        let refusing = b.status().ok().and_then(|s| s.refusing_writes);
        format!(
            "append by b after its refresh crossed a's segment roll: {e}; \
             a second append: {again:?}; b refusing writes: {refusing:?}"
        )
    })?;
    if range != (n..n + 1) {
        return Err(format!("append by b got {range:?}, expected {n}..{}", n + 1));
    }
    a.refresh().map_err(|e| format!("refresh of a: {e}"))?;
    let back = a.read_vec(n, 1).map_err(|e| format!("read by a: {e}"))?;
    if back.len() != 1 || back[0].payload != b"by b, after following a's roll" {
        return Err(format!("a reads back {back:?}"));
    }
    Ok(())
}

#[test]
fn a_handle_that_refreshed_across_another_writers_segment_roll_can_still_append() {
    let fs = SimFs::new(3);
    let sim = refresh_across_a_roll_then_append(&|| Journal::open_with(Arc::new(fs.clone()), dir(), opts(4096)));
    let tmp = tempfile::tempdir().expect("temp dir");
    let path = tmp.path().join("journal");
    let real = refresh_across_a_roll_then_append(&|| Journal::open(&path, opts(4096)));
    assert!(sim.is_ok() && real.is_ok(), "simulated fs: {sim:?}\nreal fs: {real:?}");
}
