//! Merging segments into one, and a policy that says which to merge.
//!
//! A merge reads only immutable segments, so it can run on any thread while the index keeps
//! answering: [`Index::plan_merge`](super::Index::plan_merge) hands out a [`MergeJob`],
//! [`merge`] runs it, and [`Index::install_merge`](super::Index::install_merge) swaps the
//! result in. The merged segment holds the inputs' documents in input order, so its results
//! are the inputs' results exactly.

use std::path::PathBuf;
use std::sync::Arc;

use fst::Streamer;

use super::IndexError;
use super::doc::DocTable;
use super::limits::SEGMENT_DOCS_MAX;
use super::postings::Postings;
use super::segment::writer::{Target, write_segment};
use super::segment::{Segment, SegmentId};

/// A segment as the policy sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentInfo {
    /// Its id.
    pub id: SegmentId,
    /// Documents it holds.
    pub doc_count: u32,
    /// Its size in bytes.
    pub size_bytes: u64,
}

/// When to merge: segments fall into tiers by document count (powers of `merge_factor`);
/// `merge_factor` segments of one tier are merged, smallest tier first; beyond
/// `segments_max` segments, the `merge_factor` smallest are merged whatever their tiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MergePolicy {
    /// Segments merged at once (at least 2).
    pub merge_factor: usize,
    /// Most segments kept before merging regardless of tiers.
    pub segments_max: usize,
}

impl Default for MergePolicy {
    fn default() -> Self {
        MergePolicy { merge_factor: 4, segments_max: 16 }
    }
}

impl MergePolicy {
    /// The segments to merge next, if any.
    pub fn pick(&self, segments: &[SegmentInfo]) -> Option<Vec<SegmentId>> {
        let factor = self.merge_factor.max(2);
        if segments.len() < factor {
            return None;
        }
        let tier = |s: &SegmentInfo| {
            let mut t = 0u32;
            let mut n = u64::from(s.doc_count.max(1));
            while n >= factor as u64 {
                n /= factor as u64;
                t += 1;
            }
            t
        };
        let mut sorted: Vec<SegmentInfo> = segments.to_vec();
        sorted.sort_by_key(|s| (tier(s), s.doc_count, s.id));
        for group in sorted.chunk_by(|a, b| tier(a) == tier(b)) {
            if group.len() >= factor {
                return Some(group[..factor].iter().map(|s| s.id).collect());
            }
        }
        if segments.len() > self.segments_max {
            sorted.sort_by_key(|s| (s.doc_count, s.id));
            return Some(sorted[..factor].iter().map(|s| s.id).collect());
        }
        None
    }
}

/// A merge to run: its input segments and the id and place of its output.
pub struct MergeJob {
    pub(crate) inputs: Vec<Arc<Segment>>,
    pub(crate) output: SegmentId,
    pub(crate) dir: Option<PathBuf>,
}

impl MergeJob {
    /// The ids of the segments it merges.
    pub fn inputs(&self) -> Vec<SegmentId> {
        self.inputs.iter().map(|s| s.id()).collect()
    }
}

/// A merged segment, ready to be installed.
pub struct Merged {
    pub(crate) segment: Arc<Segment>,
    pub(crate) inputs: Vec<SegmentId>,
}

/// Runs a merge job: writes one segment holding every document and term of its inputs.
pub fn merge(job: &MergeJob) -> Result<Merged, IndexError> {
    let total: u64 = job.inputs.iter().map(|s| u64::from(s.doc_count())).sum();
    if total > u64::from(SEGMENT_DOCS_MAX) {
        return Err(IndexError::Invalid(format!(
            "merging {total} documents exceeds the segment limit of {SEGMENT_DOCS_MAX}"
        )));
    }
    let mut docs = DocTable::default();
    let mut bases = Vec::with_capacity(job.inputs.len());
    for s in &job.inputs {
        bases.push(docs.len());
        for ord in 0..s.doc_count() {
            docs.push_from(s.docs(), ord);
        }
    }
    let target = match &job.dir {
        Some(d) => Target::Dir(d),
        None => Target::Memory,
    };
    let segment = write_segment(target, job.output, &docs, |add| {
        let mut op = fst::map::OpBuilder::new();
        for s in &job.inputs {
            op.push(s.fst().stream());
        }
        let mut union = op.union();
        while let Some((key, values)) = union.next() {
            let mut values = values.to_vec();
            values.sort_by_key(|v| v.index);
            let input = |i: usize| &job.inputs[i];
            let term = std::str::from_utf8(key)
                .map_err(|_| IndexError::corrupt(input(values[0].index).path(), 0, "a term is not UTF-8"))?;
            let mut out: Option<Postings> = None;
            for v in &values {
                let s = input(v.index);
                let p = s.postings_at(v.value, true)?;
                let out = out.get_or_insert_with(|| Postings::new(p.has_positions()));
                if out.has_positions() != p.has_positions() {
                    return Err(IndexError::corrupt(s.path(), 0, format!("term {term:?} with and without positions")));
                }
                for i in 0..p.len() {
                    out.push(bases[v.index] + p.ordinals[i], p.tfs[i], p.positions_of(i));
                }
            }
            if let Some(out) = out {
                add(term, &out)?;
            }
        }
        Ok(())
    })?;
    Ok(Merged { segment: Arc::new(segment), inputs: job.inputs() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(id: u64, doc_count: u32) -> SegmentInfo {
        SegmentInfo { id, doc_count, size_bytes: 0 }
    }

    #[test]
    fn index_merge_policy_merges_a_full_tier_smallest_first() {
        let p = MergePolicy { merge_factor: 3, segments_max: 10 };
        assert_eq!(p.pick(&[info(1, 100), info(2, 1)]), None);
        assert_eq!(p.pick(&[info(1, 100), info(2, 1), info(3, 2), info(4, 1)]), Some(vec![2, 4, 3]));
        assert_eq!(p.pick(&[info(1, 100), info(2, 1), info(3, 9), info(4, 30)]), None);
        let many: Vec<SegmentInfo> = (0..11).map(|i| info(i, 3u32.pow(i as u32 % 10))).collect();
        assert!(p.pick(&many).is_some());
    }
}
