//! Merging segments into one, and a policy that says which to merge.
//!
//! A merge reads only immutable segments, so it can run on any thread while the index keeps
//! answering: [`Index::plan_merge`](super::Index::plan_merge) hands out a [`MergeJob`],
//! [`merge`] runs it, and [`Index::install_merge`](super::Index::install_merge) swaps the
//! result in. The merged segment holds the inputs' documents in input order, so its results
//! are the inputs' results exactly.

use std::sync::Arc;

use fst::Streamer;

use super::IndexError;
use super::folder::Folder;
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
/// a run of `merge_factor` neighbouring segments of one tier is merged, smallest tier first;
/// beyond `segments_max` segments, the run of `merge_factor` neighbours with the fewest
/// documents is merged whatever their tiers. Only neighbours (in document order) are merged,
/// so every segment keeps holding a contiguous run of document ids.
///
/// When the index is `idle` (its writer has indexed nothing for a while) and no tiered merge
/// is called for, every segment is merged into one ("settling"), so that a search reads one
/// segment instead of up to `segments_max`: on the index benchmark's 1M events, six segments
/// cost a cold search 11-45% more than one (measured per query class and query). To bound the
/// rewriting, an index settles only once the documents outside its largest segment are at
/// least a quarter of that segment's: each settle grows the largest segment by a quarter or
/// more, so a document is rewritten by settling a bounded number of times (about five, summed
/// over an index's growth).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MergePolicy {
    /// Segments merged at once (at least 2).
    pub merge_factor: usize,
    /// Most segments kept before merging regardless of tiers.
    pub segments_max: usize,
    /// Whether the index is idle, so that its segments may settle into one.
    pub idle: bool,
}

impl Default for MergePolicy {
    /// Eight at once, near what Lucene (10) and tantivy (8) merge: each document is merged
    /// fewer times than with four (the index benchmark's build of 1M events took 97 s with
    /// four, 69 s with eight), and a search reads at most about fifteen segments.
    fn default() -> Self {
        MergePolicy { merge_factor: 8, segments_max: 16, idle: false }
    }
}

/// Settling waits until the documents outside the largest segment are at least this fraction
/// (1 / `SETTLE_SHARE`) of the largest's.
const SETTLE_SHARE: u64 = 4;

impl MergePolicy {
    /// The segments to merge next, if any; `segments` are in document order.
    pub fn pick(&self, segments: &[SegmentInfo]) -> Option<Vec<SegmentId>> {
        self.pick_tiered(segments).or_else(|| self.pick_settled(segments))
    }

    /// Every segment, if the index is idle and has grown enough since it last settled.
    fn pick_settled(&self, segments: &[SegmentInfo]) -> Option<Vec<SegmentId>> {
        if !self.idle || segments.len() < 2 {
            return None;
        }
        let total: u64 = segments.iter().map(|s| u64::from(s.doc_count)).sum();
        let largest = segments.iter().map(|s| u64::from(s.doc_count)).max()?;
        if total > u64::from(SEGMENT_DOCS_MAX) || (total - largest) * SETTLE_SHARE < largest {
            return None;
        }
        Some(segments.iter().map(|s| s.id).collect())
    }

    fn pick_tiered(&self, segments: &[SegmentInfo]) -> Option<Vec<SegmentId>> {
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
        // The lowest tier with `factor` neighbours in a row.
        let mut best: Option<(u32, usize)> = None;
        for start in 0..=segments.len() - factor {
            let run = &segments[start..start + factor];
            let t = tier(&run[0]);
            if run.iter().all(|s| tier(s) == t) && best.is_none_or(|(bt, _)| t < bt) {
                best = Some((t, start));
            }
        }
        if let Some((_, start)) = best {
            return Some(segments[start..start + factor].iter().map(|s| s.id).collect());
        }
        if segments.len() > self.segments_max {
            let start = (0..=segments.len() - factor)
                .min_by_key(|&i| segments[i..i + factor].iter().map(|s| u64::from(s.doc_count)).sum::<u64>())?;
            return Some(segments[start..start + factor].iter().map(|s| s.id).collect());
        }
        None
    }
}

/// A merge to run: its input segments and the id and place of its output.
pub struct MergeJob {
    pub(crate) inputs: Vec<Arc<Segment>>,
    pub(crate) output: SegmentId,
    pub(crate) dir: Option<Folder>,
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
    // An input's damage must not be copied into a segment with a good checksum of its own:
    // every input's body is verified first (at once if the background check did it).
    for s in &job.inputs {
        s.verify()?;
    }
    let mut docs = DocTable::default();
    let mut bases = Vec::with_capacity(job.inputs.len());
    for s in &job.inputs {
        bases.push(docs.len());
        for ord in 0..s.doc_count() {
            docs.push_from(s.docs(), ord, s.key(ord)?);
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
        let mut out = Postings::new(true);
        while let Some((key, values)) = union.next() {
            let mut values = values.to_vec();
            values.sort_by_key(|v| v.index);
            let input = |i: usize| &job.inputs[i];
            let term = std::str::from_utf8(key)
                .map_err(|_| IndexError::corrupt(input(values[0].index).path(), 0, "a term is not UTF-8"))?;
            // Each input's documents decoded straight into one list, reused from term to term.
            for (k, v) in values.iter().enumerate() {
                input(v.index).append_postings_at(v.value, bases[v.index], &mut out, k == 0)?;
            }
            if !values.is_empty() {
                add(term, &out)?;
            }
        }
        Ok(())
    })?;
    Ok(Merged { segment: Arc::new(segment), inputs: job.inputs() })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn info(id: u64, doc_count: u32) -> SegmentInfo {
        SegmentInfo { id, doc_count, size_bytes: 0 }
    }

    #[test]
    fn index_merge_policy_merges_neighbours_of_a_tier_smallest_first() {
        let p = MergePolicy { merge_factor: 3, segments_max: 10, idle: false };
        assert_eq!(p.pick(&[info(1, 100), info(2, 1)]), None);
        assert_eq!(p.pick(&[info(1, 100), info(2, 1), info(3, 2), info(4, 1)]), Some(vec![2, 3, 4]));
        // Three small ones, but not neighbours: nothing.
        assert_eq!(p.pick(&[info(1, 1), info(2, 90), info(3, 2), info(4, 95), info(5, 1)]), None);
        // Two tiers with full runs: the lower one.
        assert_eq!(p.pick(&[info(1, 30), info(2, 40), info(3, 50), info(4, 1), info(5, 2), info(6, 1)]), Some(vec![4, 5, 6]));
        assert_eq!(p.pick(&[info(1, 100), info(2, 1), info(3, 9), info(4, 30)]), None);
        let many: Vec<SegmentInfo> = (0..11).map(|i| info(i, 3u32.pow(i as u32 % 10))).collect();
        let picked = p.pick(&many).expect("over segments_max");
        assert_eq!(picked.len(), 3);
        assert!(picked.windows(2).all(|w| w[1] == w[0] + 1), "neighbours: {picked:?}");
    }

    #[test]
    fn index_merge_policy_settles_an_idle_index_into_one_segment_once_it_has_grown_enough() {
        let busy = MergePolicy::default();
        let idle = MergePolicy { idle: true, ..MergePolicy::default() };
        // The index benchmark's build leaves these: no tier has eight in a row.
        let built = [info(8, 400_000), info(17, 400_000), info(18, 50_000), info(19, 50_000), info(20, 50_000), info(21, 50_122)];
        assert_eq!(busy.pick(&built), None);
        assert_eq!(idle.pick(&built), Some(vec![8, 17, 18, 19, 20, 21]));
        // Outside the largest, a quarter of it or more: settles; less: waits.
        assert_eq!(idle.pick(&[info(1, 400), info(2, 100)]), Some(vec![1, 2]));
        assert_eq!(idle.pick(&[info(1, 400), info(2, 99)]), None);
        assert_eq!(idle.pick(&[info(1, 50), info(2, 400), info(3, 49)]), None);
        assert_eq!(idle.pick(&[info(1, 50), info(2, 400), info(3, 50)]), Some(vec![1, 2, 3]));
        // One segment is settled already; nothing at all, nothing to do.
        assert_eq!(idle.pick(&[info(1, 10)]), None);
        assert_eq!(idle.pick(&[]), None);
        // A tiered merge comes first (it keeps the cheaper merge of small segments).
        let tiered = [info(1, 400), info(2, 1), info(3, 1), info(4, 1), info(5, 1), info(6, 1), info(7, 1), info(8, 1), info(9, 1)];
        assert_eq!(idle.pick(&tiered), Some((2..=9).collect()));
        // Never beyond a segment's limit.
        let huge = [info(1, SEGMENT_DOCS_MAX), info(2, SEGMENT_DOCS_MAX / 2)];
        assert_eq!(idle.pick(&huge), None);
    }
}
