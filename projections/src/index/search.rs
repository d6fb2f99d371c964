//! Query execution: full matches (every clause) ranked by BM25, then, when fewer than
//! `limit` documents match fully, the best partial matches (BM25 over stems and CJK bigrams).
//!
//! Scores use statistics of the whole index (document count, average length, document
//! frequency summed over segments) and sum term contributions in query order, so a document
//! scores the same whichever segment holds it: flushing and merging never change results.
//!
//! Speed comes from not looking at documents that cannot make the list:
//! - Full matches intersect the terms' postings from the rarest term, seeking the others;
//!   once `limit` documents are held, a candidate whose blocks' bounds (largest frequency,
//!   shortest length) cannot beat the weakest held score is skipped with the rest of its
//!   blocks, undecoded.
//! - Partial matches are a top-k over the union of the partial terms, by MaxScore over
//!   windows of blocks: within a window (up to the first block end of any term) each term is
//!   bounded by its block there; a window whose bounds together cannot reach the weakest held
//!   is passed whole, and terms whose bounds together cannot reach it only add to candidates
//!   the others found. A term rare beside the others is walked first, its documents scored
//!   whole ([`Seed`]), so that the held list is strong before the common terms are walked;
//!   once candidates can come from one list only, it is walked block by block
//!   ([`OneEssential`]).
//! - The caller's visibility predicate (which looks up strings) is first asked only about the
//!   documents returned: a search runs as if every document were visible, and only if one it
//!   returns is not does it run again asking the predicate about each document that would
//!   enter the list. When the first run's hits are all visible they are the answer: the best
//!   `limit` of all candidates, all visible, are the best `limit` of the visible ones. (Asking
//!   about every entrant read each one's key, cold in a segment's map: a third of a one-term
//!   search with emptied caches went to it, against 20 keys read for the hits.)
//!
//! Pruning compares bounds with a margin of one part in a million, more than any rounding,
//! so it never drops a document a full scan would have kept: the results are those of scoring
//! every document (the linear-scan property tests check it).

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use super::doc::{DocRow, DocTable};
use super::memory::MemorySegment;
use super::postings::{BLOCK_DOCS, BlockError, END, Found, PostingCursor, TermBlock};
use super::limits::QUERY_TERMS_MAX;
use super::query::Query;
use super::segment::Segment;
use super::{Candidate, DocId, Filters, Hit, IndexError, Match, Scope};

use super::bm25::{self, K1};

/// A bound is inflated by this much before it is compared, against rounding.
const BOUND_MARGIN: f64 = 1e-6;

/// A segment as search sees it.
pub(crate) enum View<'a> {
    Memory(&'a MemorySegment),
    Disk(&'a Segment, Lookups),
}

/// A disk view's term lookups during one search: each term is looked up in the segment's
/// dictionary once. A search looked a term up for its document frequency, its cursor, its
/// partial-match frequency and cursor, and a cursor for each seed of a partial pass: a fifth
/// of a partial pass of a CJK run over five segments walked the dictionaries.
#[derive(Default)]
pub(crate) struct Lookups(std::cell::RefCell<Vec<(Box<str>, Option<u64>)>>);

impl Lookups {
    /// Where `term`'s block is in `segment`, if it holds the term.
    fn offset(&self, segment: &Segment, term: &str) -> Option<u64> {
        if let Some((_, at)) = self.0.borrow().iter().find(|(t, _)| &**t == term) {
            return *at;
        }
        let at = segment.term_offset(term);
        self.0.borrow_mut().push((term.into(), at));
        at
    }
}

/// Reads ahead, in every disk view, where `terms` are: their term-table slots, then the
/// bytes before the blocks those slots name, each pass with loads that do not wait on one
/// another (as [`Segment::touch_keys`] does for keys), so that the lookups that follow find
/// them cached. Looked up one after the other, a term cost two cache misses in a row per
/// segment (its slot, then its block), ten for a CJK bigram over five segments.
fn touch_terms<'t>(views: &[View<'_>], terms: impl Iterator<Item = &'t str>) {
    let mut hashes = [0u64; 16];
    let mut n = 0;
    for t in terms.take(hashes.len()) {
        hashes[n] = super::segment::table::term_hash(t.as_bytes());
        n += 1;
    }
    let disks = || views.iter().filter_map(|v| if let View::Disk(s, _) = v { Some(*s) } else { None });
    // One term in one segment: nothing to overlap.
    if n == 0 || (n == 1 && disks().nth(1).is_none()) {
        return;
    }
    let mut acc = 0u8;
    for s in disks() {
        for &h in &hashes[..n] {
            acc ^= s.touch_slot(h);
        }
    }
    for s in disks() {
        for &h in &hashes[..n] {
            acc ^= s.touch_term_block(h);
        }
    }
    std::hint::black_box(acc);
}

/// A term's cursor in one view, with what it takes to report a damaged block and to scale
/// its blocks' bounds.
#[derive(Clone)]
struct Term<'a> {
    cursor: PostingCursor<'a>,
    segment: Option<&'a Segment>,
    offset: u64,
    /// How much more a frequency part can be under the whole index's average length than
    /// under this view's (at least 1).
    scale: f64,
}

/// The best BM25 contribution any document of a block can have: its best frontier point.
fn points_bound(stats: &Stats, idf: f64, points: impl Iterator<Item = (u32, u32)>) -> f64 {
    points.map(|(tf, len)| stats.term(idf, tf, len)).fold(0.0, f64::max)
}

impl<'a> Term<'a> {
    /// The tight bound of a block of largest frequency part `max_part` (under its segment's
    /// average): scaled to the index's average, with a margin against rounding. Compare with
    /// [`below`], never for equality. (Bounds are read with [`PostingCursor::block_bound`],
    /// the directory entry's bound alone: checking the whole entry, as reading the block does,
    /// was a tenth of the instructions of a partial pass over a common bigram's 376 blocks.)
    fn tight_part(&self, max_part: f32, idf: f64) -> f64 {
        idf * f64::from(max_part) * self.scale * (1.0 + BOUND_MARGIN)
    }

    fn err(&self, e: BlockError) -> IndexError {
        match self.segment {
            Some(s) => s.postings_error(self.offset, e),
            None => IndexError::Invalid(format!("in-memory postings: {}", e.reason)),
        }
    }

    fn next(&mut self) -> Result<u32, IndexError> {
        self.cursor.next().map_err(|e| self.err(e))
    }

    fn seek(&mut self, target: u32) -> Result<u32, IndexError> {
        self.cursor.seek(target).map_err(|e| self.err(e))
    }

    /// Reads the current document's positions into the cursor
    /// ([`PostingCursor::positions_read`]).
    fn read_positions(&mut self) -> Result<(), IndexError> {
        match self.cursor.positions() {
            Ok(_) => Ok(()),
            Err(e) => Err(self.err(e)),
        }
    }
}

impl View<'_> {
    fn docs(&self) -> &DocTable {
        match self {
            View::Memory(m) => &m.docs,
            View::Disk(s, _) => s.docs(),
        }
    }

    /// The view's average length (what its blocks' frequency parts were computed with).
    fn avg_length(&self) -> f64 {
        bm25::avg_length(self.docs().token_count(), u64::from(self.docs().len()))
    }

    /// The term's cursor here, on its first document, its tight bounds scaled to the index's
    /// average length.
    fn term_in(&self, term: &str, positions: bool, stats: &Stats) -> Result<Option<Term<'_>>, IndexError> {
        self.term_scaled(term, positions, stats, true)
    }

    /// [`View::term_in`], decoding nothing until the cursor is moved
    /// ([`PostingCursor::unloaded`]): for full matches, which move each cursor to a block of
    /// their choosing before reading it.
    fn term_unloaded(&self, term: &str, positions: bool, stats: &Stats) -> Result<Option<Term<'_>>, IndexError> {
        self.term_scaled(term, positions, stats, false)
    }

    /// The term's cursor here (on its first document if `load`, else unloaded), its tight
    /// bounds scaled to the index's average length.
    fn term_scaled(&self, term: &str, positions: bool, stats: &Stats, load: bool) -> Result<Option<Term<'_>>, IndexError> {
        let scale = (stats.avg_length / self.avg_length()).max(1.0);
        let open = |block, lengths| {
            if load {
                PostingCursor::new(block, lengths, positions)
            } else {
                Ok(PostingCursor::unloaded(block, lengths, positions))
            }
        };
        match self {
            View::Memory(m) => match m.postings(term) {
                None => Ok(None),
                Some(p) => {
                    let avg = bm25::avg_length(m.docs.token_count(), u64::from(m.docs.len()));
                    let block = TermBlock::of(&p.decode(), m.docs.lengths(), m.docs.times(), avg);
                    let cursor =
                        open(block, m.docs.lengths()).map_err(|e| IndexError::Invalid(format!("in-memory postings: {}", e.reason)))?;
                    Ok(Some(Term { cursor, segment: None, offset: 0, scale }))
                }
            },
            View::Disk(s, lookups) => match lookups.offset(s, term) {
                None => Ok(None),
                Some(offset) => {
                    let t = s.term_block_at(offset)?;
                    let cursor = open(t, s.docs().lengths()).map_err(|e| s.postings_error(offset, e))?;
                    Ok(Some(Term { cursor, segment: Some(s), offset, scale }))
                }
            },
        }
    }

    /// Documents holding `term`, and (of a stem term) how many of them also hold the word
    /// the stem spells.
    fn doc_freq(&self, term: &str) -> Result<(u32, u32), IndexError> {
        match self {
            View::Memory(m) => Ok(m.postings(term).map_or((0, 0), |p| (p.len(), p.shared()))),
            View::Disk(s, lookups) => match lookups.offset(s, term) {
                None => Ok((0, 0)),
                Some(offset) => s.doc_freq_at(offset),
            },
        }
    }

    /// Documents holding partial-match term `term` or, if given, `word` (the word a stem term
    /// spells, whose documents the stem term does not repeat).
    fn partial_doc_freq(&self, term: &str, word: Option<&str>) -> Result<u32, IndexError> {
        let (n, shared) = self.doc_freq(term)?;
        let w = match word {
            Some(w) => self.doc_freq(w)?.0,
            None => 0,
        };
        Ok(n + w - shared.min(n).min(w))
    }

    /// The cursors of a partial-match term: its own and its word's (see
    /// [`View::partial_doc_freq`]), those that hold documents here.
    fn partial_term(&self, term: &str, word: Option<&str>, stats: &Stats) -> Result<Option<Union<'_>>, IndexError> {
        let mut parts = Vec::with_capacity(2);
        parts.extend(self.term_in(term, false, stats)?);
        if let Some(w) = word {
            parts.extend(self.term_in(w, false, stats)?);
        }
        Ok((!parts.is_empty()).then_some(Union { parts }))
    }

    fn key(&self, ordinal: u32) -> Result<&str, IndexError> {
        match self {
            View::Memory(m) => m.docs.key(ordinal).ok_or_else(|| IndexError::Invalid(format!("no key at ordinal {ordinal}"))),
            View::Disk(s, _) => s.key(ordinal),
        }
    }

    /// What the visibility predicate and the hit say of the document at `ordinal`.
    fn candidate(&self, ordinal: u32) -> Result<Candidate<'_>, IndexError> {
        let row = self.docs().row(ordinal);
        Ok(Candidate { doc: row.doc, key: self.key(ordinal)?, record: row.record, position: row.position })
    }
}

/// Filters resolved against one segment's strings.
struct DocFilter {
    scope: Option<Scope>,
    kind: Option<u8>,
    since: Option<i64>,
    until: Option<i64>,
    source: Option<u32>,
    project: Option<u32>,
    tools: bool,
}

impl DocFilter {
    /// None when no document of the segment can pass (it lacks the source or project asked).
    fn compile(f: &Filters, docs: &DocTable) -> Option<DocFilter> {
        let resolve = |s: &Option<String>| match s {
            None => Some(None),
            Some(s) => docs.string_id(s).map(Some),
        };
        Some(DocFilter {
            scope: f.scope,
            kind: f.kind,
            since: f.since_unix_ms,
            until: f.until_unix_ms,
            source: resolve(&f.source)?,
            project: resolve(&f.project)?,
            tools: f.include_tools,
        })
    }

    /// The time and id of the document at `ordinal` of `docs` if it passes: from the table's
    /// figures in memory ([`DocTable::figures`]) unless a source or project is asked (their
    /// strings are in the row), else from its row.
    #[inline]
    fn admit(&self, docs: &DocTable, ordinal: u32) -> Option<(i64, DocId)> {
        if self.source.is_none()
            && self.project.is_none()
            && let Some(f) = docs.figures(ordinal)
        {
            return self.passes(f.scope, f.kind, f.tool, f.time_unix_ms).then_some((f.time_unix_ms, f.doc));
        }
        let row = docs.row(ordinal);
        self.pass(&row).then_some((row.time_unix_ms, row.doc))
    }

    fn pass(&self, row: &DocRow) -> bool {
        self.passes(row.scope, row.kind, row.tool, row.time_unix_ms)
            && self.source.is_none_or(|s| s == row.source)
            && self.project.is_none_or(|p| p == row.project)
    }

    /// Every filter but source and project.
    #[inline]
    fn passes(&self, scope: Scope, kind: u8, tool: bool, time_unix_ms: i64) -> bool {
        self.scope.is_none_or(|s| s == scope)
            && self.kind.is_none_or(|k| k == kind)
            && self.since.is_none_or(|t| time_unix_ms >= t)
            && self.until.is_none_or(|t| time_unix_ms < t)
            && (self.tools || !tool)
    }
}

/// A candidate's rank: higher score, then more recent, then smaller id first; and where it
/// is (its view and ordinal), to read its key.
#[derive(Clone, Copy, Debug)]
struct Ranked {
    score: f32,
    time_unix_ms: i64,
    doc: DocId,
    view: usize,
    ordinal: u32,
}

impl Ord for Ranked {
    /// `Greater` ranks first.
    fn cmp(&self, o: &Self) -> Ordering {
        self.score.total_cmp(&o.score).then(self.time_unix_ms.cmp(&o.time_unix_ms)).then(o.doc.cmp(&self.doc))
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl PartialEq for Ranked {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}

impl Eq for Ranked {}

/// The best `k` visible documents offered.
struct TopK {
    k: usize,
    heap: BinaryHeap<Reverse<Ranked>>,
    asked: Asked,
}

impl TopK {
    fn new(k: usize, asked: Asked) -> TopK {
        TopK { k, heap: BinaryHeap::with_capacity(k.min(1024) + 1), asked }
    }

    fn len(&self) -> usize {
        self.heap.len()
    }

    /// True once `k` documents are held.
    fn is_full(&self) -> bool {
        self.heap.len() >= self.k
    }

    /// The weakest held (score, time) once `k` are held: what a candidate must beat.
    fn threshold(&self) -> Option<(f32, i64)> {
        if self.heap.len() < self.k {
            return None;
        }
        self.heap.peek().map(|w| (w.0.score, w.0.time_unix_ms))
    }

    /// False if a document scoring `score` cannot enter whatever its time (so its time and
    /// filter fields need not be read: each candidate's was a cache miss, most of the time of
    /// a search of common words).
    fn may_enter(&self, score: f32) -> bool {
        self.threshold().is_none_or(|(t, _)| score >= t)
    }

    /// Offers a candidate of `view`; `visible` is asked only if it would enter, and only
    /// when [`Asked::OfEntrants`].
    fn offer(&mut self, r: Ranked, view: &View<'_>, visible: &dyn Fn(&Candidate<'_>) -> bool) -> Result<(), IndexError> {
        if self.k == 0 {
            return Ok(());
        }
        let enters = self.heap.len() < self.k || self.heap.peek().is_some_and(|w| r > w.0);
        if enters && (self.asked == Asked::OfHits || visible(&view.candidate(r.ordinal)?)) {
            if self.heap.len() < self.k {
                self.heap.push(Reverse(r));
            } else if let Some(mut weakest) = self.heap.peek_mut() {
                // The weakest held gives way: replaced in place and sifted down once (a pop
                // and a push sifted twice).
                *weakest = Reverse(r);
            }
        }
        Ok(())
    }

    fn into_sorted(self) -> Vec<Ranked> {
        let mut v: Vec<Ranked> = self.heap.into_iter().map(|r| r.0).collect();
        v.sort_unstable_by(|a, b| b.cmp(a));
        v
    }
}

/// Reads what offering `ords[i]` reads, for each `i` of `which`, together
/// ([`DocTable::touch`]).
fn touch_rows(docs: &DocTable, ords: &[u32], which: &[u32]) {
    if which.len() < 2 {
        return;
    }
    std::hint::black_box(docs.touch(which.iter().map(|&i| ords[i as usize])));
}

/// True if a bound (a sum of term bounds, summed in a different order than scores are)
/// cannot reach the weakest held score, whatever its rounding: for partial matches.
fn below(bound: f64, threshold: Option<(f32, i64)>) -> bool {
    threshold.is_some_and(|(t, _)| bound * (1.0 + BOUND_MARGIN) < f64::from(t))
}

/// True if no document scoring at most `bound` (each term bounded by a frontier point, or by
/// a tight bound whose margin covers summing in another order) and dated at most `max_time` can
/// enter the held list: a lower score, or the same score and an older time (the same time
/// could still win on a smaller id). Exact: BM25 and sums are monotone in floating point,
/// so a bound is never below the score of a document it bounds.
fn cannot_enter(bound: f64, max_time: i64, threshold: Option<(f32, i64)>) -> bool {
    threshold.is_some_and(|(ts, tt)| {
        let b = bound as f32;
        b < ts || (b == ts && max_time < tt)
    })
}

/// Collection statistics for BM25.
struct Stats {
    doc_count: f64,
    avg_length: f64,
    /// [`bm25::length_norms`] of `avg_length`.
    norms: [f64; 256],
}

impl Stats {
    fn idf(&self, df: u64) -> f64 {
        let df = df as f64;
        (1.0 + (self.doc_count - df + 0.5) / (df + 0.5)).ln()
    }

    /// A term's BM25 contribution; grows with `tf`, shrinks with `length`, so at a block's
    /// (largest frequency, shortest length) it bounds every document of the block.
    fn term(&self, idf: f64, tf: u32, length: u32) -> f64 {
        self.term_coded(idf, tf, bm25::length_code(length))
    }

    /// [`Stats::term`] of a length's code ([`bm25::length_code`]): the same value.
    #[inline]
    fn term_coded(&self, idf: f64, tf: u32, code: u8) -> f64 {
        let tf = f64::from(tf);
        idf * tf * (K1 + 1.0) / (tf + self.norms[usize::from(code)])
    }
}

fn doc_freqs(views: &[View<'_>], terms: &[String]) -> Result<Vec<u64>, IndexError> {
    let mut dfs = vec![0u64; terms.len()];
    for view in views {
        for (df, term) in dfs.iter_mut().zip(terms) {
            *df += u64::from(view.doc_freq(term)?.0);
        }
    }
    Ok(dfs)
}

/// The document frequencies of a query's partial-match terms (each with its word's documents).
fn partial_doc_freqs(views: &[View<'_>], query: &Query) -> Result<Vec<u64>, IndexError> {
    let mut dfs = vec![0u64; query.partial.len()];
    for view in views {
        for ((df, term), word) in dfs.iter_mut().zip(&query.partial).zip(&query.partial_words) {
            *df += u64::from(view.partial_doc_freq(term, word.as_deref())?);
        }
    }
    Ok(dfs)
}

/// A partial-match term in one view: one cursor, or two (a stem term's and its word's, see
/// [`View::partial_doc_freq`]) walked as one list whose frequency at a document is the sum of
/// theirs.
#[derive(Clone)]
struct Union<'a> {
    parts: Vec<Term<'a>>,
}

impl Union<'_> {
    fn doc(&self) -> u32 {
        self.parts.iter().map(|t| t.cursor.doc()).min().unwrap_or(END)
    }

    /// The frequency at `doc`, where [`Union::doc`] stands.
    fn tf_at(&self, doc: u32) -> u32 {
        self.parts.iter().filter(|t| t.cursor.doc() == doc).map(|t| t.cursor.tf()).sum()
    }

    /// The length code of `doc`, from a part standing on it (`None` if none does).
    fn code_at(&self, doc: u32) -> Option<u8> {
        self.parts.iter().find(|t| t.cursor.doc() == doc).map(|t| t.cursor.code())
    }

    /// Documents of its parts together (a document in both counted twice).
    fn len(&self) -> u64 {
        self.parts.iter().map(|t| u64::from(t.cursor.len())).sum()
    }

    /// Moves to the first document at or after `target`; returns it ([`END`] past the last).
    fn seek(&mut self, target: u32) -> Result<u32, IndexError> {
        for t in &mut self.parts {
            if t.cursor.doc() < target {
                t.seek(target)?;
            }
        }
        Ok(self.doc())
    }

    /// Moves to the first document at or after `target`, back as well as forward; returns
    /// it ([`END`] past the last).
    fn seek_any(&mut self, target: u32) -> Result<u32, IndexError> {
        for t in &mut self.parts {
            if t.cursor.doc() > target {
                // Back: the block that may hold `target`, decoded only if it is not the current
                // one (or the end, when every document is before `target`).
                t.cursor.begin_at(target).map_err(|e| t.err(e))?;
            } else if t.cursor.doc() < target {
                t.seek(target)?;
            }
        }
        Ok(self.doc())
    }

    /// Moves past `doc`, where [`Union::doc`] stands.
    fn next_from(&mut self, doc: u32) -> Result<(), IndexError> {
        for t in &mut self.parts {
            if t.cursor.doc() == doc {
                t.next()?;
            }
        }
        Ok(())
    }

    /// A bound on the contribution of any document from `start` to the returned ordinal (the
    /// least last ordinal of the parts' blocks that hold `start`, [`END`] if none does): the
    /// sum of those blocks' tight bounds (see [`Union::bound`]).
    fn window(&self, start: u32, idf: f64) -> Result<(f64, u32), IndexError> {
        let (mut sum, mut last) = (0.0f64, END);
        for t in &self.parts {
            let b = t.cursor.block_for(start);
            if b < t.cursor.block_count() {
                let (block_last, _, max_part) = t.cursor.block_bound(b).map_err(|e| t.err(e))?;
                sum += t.tight_part(max_part, idf);
                last = last.min(block_last);
            }
        }
        Ok((sum.min(idf * (K1 + 1.0) * (1.0 + BOUND_MARGIN)), last))
    }

    /// A bound on any document's contribution: the sum of the parts' best block bounds (a
    /// frequency part is concave in the frequency and 0 at 0, so the part of a sum is at most
    /// the sum of the parts), at most what any frequency can give.
    fn bound(&self, idf: f64) -> Result<f64, IndexError> {
        let mut sum = 0.0f64;
        for t in &self.parts {
            let mut ub = 0.0f64;
            for b in 0..t.cursor.block_count() {
                let (_, _, max_part) = t.cursor.block_bound(b).map_err(|e| t.err(e))?;
                ub = ub.max(t.tight_part(max_part, idf));
            }
            sum += ub;
        }
        Ok(sum.min(idf * (K1 + 1.0) * (1.0 + BOUND_MARGIN)))
    }
}

/// Runs a query over `views`.
pub(crate) fn search(
    views: &[View<'_>],
    query: &Query,
    filters: &Filters,
    visible: &dyn Fn(&Candidate<'_>) -> bool,
    limit: usize,
) -> Result<Vec<Hit>, IndexError> {
    let hits = search_as(views, query, filters, visible, limit, Asked::OfHits)?;
    let listed = |h: &Hit| visible(&Candidate { doc: h.doc, key: &h.key, record: h.record, position: h.position });
    if hits.iter().all(listed) {
        return Ok(hits);
    }
    search_as(views, query, filters, visible, limit, Asked::OfEntrants)
}

/// When a search asks the visibility predicate.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Asked {
    /// Never: every document counts as visible (the caller checks the hits).
    OfHits,
    /// Of each document that would enter the list.
    OfEntrants,
}

fn search_as(
    views: &[View<'_>],
    query: &Query,
    filters: &Filters,
    visible: &dyn Fn(&Candidate<'_>) -> bool,
    limit: usize,
    asked: Asked,
) -> Result<Vec<Hit>, IndexError> {
    let doc_count: u64 = views.iter().map(|v| u64::from(v.docs().len())).sum();
    if limit == 0 || doc_count == 0 {
        return Ok(Vec::new());
    }
    let token_count: u64 = views.iter().map(|v| v.docs().token_count()).sum();
    let avg_length = bm25::avg_length(token_count, doc_count);
    let stats = Stats { doc_count: doc_count as f64, avg_length, norms: bm25::length_norms(avg_length) };

    // Full matches.
    touch_terms(views, query.terms.iter().chain(&query.pairs).map(|t| t.as_str()));
    let idfs: Vec<f64> = doc_freqs(views, &query.terms)?.into_iter().map(|df| stats.idf(df)).collect();
    let mut full = TopK::new(limit, asked);
    // Per view, the ordinals that hold every clause (excluded from partial matches). Needed
    // only if fewer than `limit` full matches are found, and then nothing was skipped.
    let mut full_ordinals: Vec<Vec<u32>> = vec![Vec::new(); views.len()];
    if query.terms.len() == 1 && query.clauses.iter().all(|c| c.terms.len() == 1) {
        // One word (not a phrase that repeats a word, such as a CJK run "ab…ab"): every view's
        // blocks at once.
        one_term(views, &query.terms[0], filters, visible, &stats, idfs[0], &mut full, &mut full_ordinals)?;
    } else {
        for (v, (view, matched)) in views.iter().zip(&mut full_ordinals).enumerate() {
            full_view(v, view, query, filters, visible, &stats, &idfs, &mut full, matched)?;
        }
    }
    let full_count = full.len();
    let mut hits = Vec::with_capacity(limit.min(1024));
    push_hits(views, full.into_sorted(), Match::All, &mut hits)?;
    if full_count >= limit || query.partial.is_empty() || query.partial_is_the_full_match() {
        return Ok(hits);
    }

    // Partial matches fill the rest.
    let idfs: Vec<f64> = partial_doc_freqs(views, query)?.into_iter().map(|df| stats.idf(df)).collect();
    let mut partial = TopK::new(limit - hits.len(), asked);
    let mut deferred: Vec<Deferred<'_>> = Vec::new();
    for (v, (view, full_ordinals)) in views.iter().zip(&full_ordinals).enumerate() {
        if let Some(d) = partial_view(v, view, query, filters, visible, &stats, &idfs, &mut partial, full_ordinals)? {
            deferred.push(d);
        }
    }
    let rest = OneEssential { stats: &stats, idfs: &idfs, visible, full_ordinals: &full_ordinals };
    rest.run(&mut deferred, &mut partial)?;
    push_hits(views, partial.into_sorted(), Match::Partial, &mut hits)?;
    Ok(hits)
}

/// Appends the hits of `ranked` (in order) to `hits`. The keys of a segment's hits are
/// touched together first ([`Segment::touch_keys`]): read one by one, each key was two cache
/// misses in a row (its offset, then its bytes), a fifth of a one-term search once other work
/// had emptied the caches.
fn push_hits(views: &[View<'_>], ranked: Vec<Ranked>, matched: Match, hits: &mut Vec<Hit>) -> Result<(), IndexError> {
    let mut ordinals: Vec<u32> = Vec::with_capacity(ranked.len());
    for (v, view) in views.iter().enumerate() {
        if let View::Disk(s, _) = view {
            ordinals.clear();
            ordinals.extend(ranked.iter().filter(|r| r.view == v).map(|r| r.ordinal));
            if !ordinals.is_empty() {
                // Their rows too (each hit's record and position), read below one by one.
                let rows = ordinals.iter().fold(0u64, |x, &o| x ^ s.docs().row(o).record);
                std::hint::black_box((s.touch_keys(&ordinals), rows));
            }
        }
    }
    for r in ranked {
        let c = views[r.view].candidate(r.ordinal)?;
        hits.push(Hit { doc: r.doc, score: r.score, matched, key: c.key.to_owned(), record: c.record, position: c.position });
    }
    Ok(())
}

/// True if every clause of more than one term holds at the cursors' current document (all
/// standing on it).
fn phrases_hold(query: &Query, slots: &[usize], terms: &mut [Term<'_>], anchors: &mut Vec<u32>) -> Result<bool, IndexError> {
    for (clause, index) in query.clauses.iter().zip(&query.clause_terms) {
        if clause.terms.len() < 2 {
            continue;
        }
        // Where the clause could start (its first term's position), by the term with the
        // fewest occurrences here; then narrowed by each other term, fewest first, whose
        // positions are read only while some start is left.
        // A query has at most QUERY_TERMS_MAX (128) terms, so an index fits a byte.
        let count = index.len().min(QUERY_TERMS_MAX);
        let mut tfs = [0u32; QUERY_TERMS_MAX];
        for j in 0..count {
            tfs[j] = terms[slots[index[j]]].cursor.tf();
        }
        let first = (0..count).min_by_key(|&j| tfs[j]).unwrap_or(0);
        let rel = |j: usize| clause.terms[j].1;
        terms[slots[index[first]]].read_positions()?;
        anchors.clear();
        anchors.extend(terms[slots[index[first]]].cursor.positions_read().iter().filter_map(|&p| p.checked_sub(rel(first))));
        let mut rest = [0u8; QUERY_TERMS_MAX];
        let mut n = 0;
        for j in 0..count {
            if j != first {
                rest[n] = j as u8;
                n += 1;
            }
        }
        rest[..n].sort_unstable_by_key(|&j| tfs[usize::from(j)]);
        for &j in &rest[..n] {
            let j = usize::from(j);
            if anchors.is_empty() {
                break;
            }
            let t = &mut terms[slots[index[j]]];
            t.read_positions()?;
            let positions = t.cursor.positions_read();
            anchors.retain(|&p0| p0.checked_add(rel(j)).is_some_and(|p| positions.binary_search(&p).is_ok()));
        }
        if anchors.is_empty() {
            return Ok(false);
        }
    }
    Ok(true)
}

#[allow(clippy::too_many_arguments)]
fn full_view(
    v: usize,
    view: &View<'_>,
    query: &Query,
    filters: &Filters,
    visible: &dyn Fn(&Candidate<'_>) -> bool,
    stats: &Stats,
    idfs: &[f64],
    top: &mut TopK,
    matched: &mut Vec<u32>,
) -> Result<(), IndexError> {
    let docs = view.docs();
    // No document here passes the filters: its full matches matter to nothing (partial
    // matches are filtered the same way).
    let Some(filter) = DocFilter::compile(filters, docs) else { return Ok(()) };
    // A cursor per distinct term, with positions where a phrase needs them; a term missing
    // here means no document here holds every clause.
    let mut terms: Vec<Term<'_>> = Vec::with_capacity(query.terms.len());
    for term in &query.terms {
        let positions = query.clauses.iter().any(|c| c.terms.len() > 1 && c.terms.iter().any(|(t, _)| t == term));
        match view.term_unloaded(term, positions, stats)? {
            Some(t) => terms.push(t),
            None => return Ok(()),
        }
    }
    let slots: Vec<usize> = (0..terms.len()).collect();
    if query.pairs.is_empty() {
        return every_term(v, view, query, &filter, visible, stats, idfs, &mut terms, &slots, top, matched);
    }
    // The phrases' pair terms, required and of no weight: far rarer than the words, one of
    // them drives. A document holding a phrase holds its pairs, so one missing here means no
    // document here holds the phrase.
    for pair in &query.pairs {
        match view.term_unloaded(pair, false, stats)? {
            Some(t) => terms.push(t),
            None => return Ok(()),
        }
    }
    let mut weights = Vec::with_capacity(terms.len());
    weights.extend_from_slice(idfs);
    weights.resize(terms.len(), 0.0);
    every_term(v, view, query, &filter, visible, stats, &weights, &mut terms, &slots, top, matched)
}

/// Full matches of a query of several terms (words, phrases): the rarest term drives, block
/// by block. A block's bound is its own plus, for every other term, the best of that term's
/// blocks over the same ordinals (from the directories alone); blocks are taken best bound
/// first, and one that cannot beat the weakest of `limit` held documents is skipped without
/// decoding any list. Within a block, the other terms seek each document.
#[allow(clippy::too_many_arguments)]
fn every_term(
    v: usize,
    view: &View<'_>,
    query: &Query,
    filter: &DocFilter,
    visible: &dyn Fn(&Candidate<'_>) -> bool,
    stats: &Stats,
    idfs: &[f64],
    terms: &mut [Term<'_>],
    slots: &[usize],
    top: &mut TopK,
    matched: &mut Vec<u32>,
) -> Result<(), IndexError> {
    let docs = view.docs();
    let driver = (0..terms.len()).min_by_key(|&t| terms[t].cursor.len()).unwrap_or(0);
    // Per driver block: (tight bound, latest time, block, the other terms' part of the tight
    // bound). The other terms' overlapping blocks are found walking their directories along
    // (the driver's blocks ascend); the driver's exact frontier bound waits until a block
    // survives its tight bound.
    let mut order: Vec<(f64, i64, usize, f64)> = Vec::with_capacity(terms[driver].cursor.block_count());
    let mut next: Vec<usize> = vec![0; terms.len()];
    let mut lo = 0u32;
    // A driver of one block, read while no document is held: there is nothing to order, and
    // until `limit` are held nothing is passed by a bound, so the other terms are bounded by
    // the most any frequency gives (`idf (K1 + 1)`) instead of by their blocks over the
    // driver's ordinals: for a rare driver beside a common term, those were the common term's
    // whole directory (a tenth of a search of four Chinese characters whose bigrams are rare
    // but one).
    let loose = terms[driver].cursor.block_count() == 1 && top.threshold().is_none();
    for b in 0..terms[driver].cursor.block_count() {
        let (block_last, max_time, max_part) = terms[driver].cursor.block_bound(b).map_err(|e| terms[driver].err(e))?;
        let (mut tight, mut time, mut others) = (0.0, max_time, 0.0);
        for (t, &idf) in idfs.iter().enumerate() {
            if t == driver {
                tight += terms[t].tight_part(max_part, idf);
                continue;
            }
            if loose {
                let most = idf * (K1 + 1.0) * (1.0 + BOUND_MARGIN);
                tight += most;
                others += most;
                continue;
            }
            let c = &terms[t].cursor;
            while next[t] < c.block_count() && c.last_of_block(next[t]) < lo {
                next[t] += 1;
            }
            let (mut g, mut tm) = (0.0f64, i64::MIN);
            let mut j = next[t];
            while j < c.block_count() {
                let (last, max_time, max_part) = c.block_bound(j).map_err(|e| terms[t].err(e))?;
                g = g.max(terms[t].tight_part(max_part, idf));
                tm = tm.max(max_time);
                if last >= block_last {
                    break;
                }
                j += 1;
            }
            tight += g;
            others += g;
            time = time.min(tm);
        }
        order.push((tight, time, b, others));
        lo = block_last.saturating_add(1);
    }
    order.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
    // The other terms, rarest first: the one most likely to lack a candidate is sought first.
    let mut seek_order: Vec<usize> = (0..terms.len()).filter(|&t| t != driver).collect();
    seek_order.sort_by_key(|&t| terms[t].cursor.len());
    let mut block_codes: Vec<u8> = Vec::with_capacity(BLOCK_DOCS);
    let mut anchors: Vec<u32> = Vec::new();
    // The driver's part of each candidate of the current block, by its place in the block.
    let mut driver_parts = [0.0f64; BLOCK_DOCS];
    let mut pick = Candidates::new();
    let has_phrases = query.clauses.iter().any(|c| c.terms.len() > 1);
    let stride = terms.len();
    let mut targets: Vec<u32> = Vec::with_capacity(BLOCK_DOCS);
    let mut survivors: Vec<u32> = Vec::with_capacity(BLOCK_DOCS);
    let mut rows: Vec<u32> = Vec::new();
    // A full match: noted (for the partial pass, while fewer than `limit` are held), then
    // offered if it passes the filters.
    let keep = |score: f64, cand: u32, top: &mut TopK, matched: &mut Vec<u32>| -> Result<(), IndexError> {
        if !top.is_full() {
            matched.push(cand);
        }
        if let Some((time_unix_ms, doc)) = filter.admit(docs, cand) {
            top.offer(Ranked { score: score as f32, time_unix_ms, doc, view: v, ordinal: cand }, view, visible)?;
        }
        Ok(())
    };
    let mut found: Vec<Found> = Vec::with_capacity(BLOCK_DOCS);
    for (tight, time, b, others) in order {
        if below(tight, top.threshold()) {
            break;
        }
        let info = terms[driver].cursor.block_at(b).map_err(|e| terms[driver].err(e))?;
        if top.threshold().is_some() {
            // The driver block's exact bound (its frontier) with the others' tight ones.
            let exact = points_bound(stats, idfs[driver], terms[driver].cursor.points(&info)) + others;
            if cannot_enter(exact, time, top.threshold()) {
                continue;
            }
        }
        terms[driver].cursor.goto_entry(b, info).map_err(|e| terms[driver].err(e))?;
        // The block's length codes, stored in the block (gathered from the document table, they
        // were a cache miss each: most of the time of a search of common words once other
        // searches had emptied the caches); then the driver's part of every document.
        block_codes.clear();
        block_codes.extend_from_slice(terms[driver].cursor.block_codes());
        // The block's candidates: a document whose own part, with the others' bounds over the
        // block, cannot reach the weakest held is left out before any other list is read
        // ([`Candidates`]); then the driver's part of each candidate.
        let (ords, tfs) = terms[driver].cursor.block_docs();
        let n = pick.select(ords, tfs, &block_codes, stats, idfs[driver], others, top.threshold());
        targets.clear();
        targets.extend_from_slice(&pick.ords[..n]);
        survivors.clear();
        survivors.extend_from_slice(&pick.at[..n]);
        for &i in &survivors {
            let i = i as usize;
            driver_parts[i] = stats.term_coded(idfs[driver], tfs[i], block_codes[i]);
        }
        if has_phrases {
            // With phrases, every cursor must stand on a candidate to read its positions:
            // the other terms walk forward beside the candidates together, rarest first, so
            // that none goes back to a block it has left.
            if let Some(&first) = targets.first() {
                for &t in &seek_order {
                    terms[t].cursor.begin_at(first).map_err(|e| terms[t].err(e))?;
                }
            }
            'cands: for (w, &i) in survivors.iter().enumerate() {
                let (i, cand) = (i as usize, targets[w]);
                for &t in &seek_order {
                    if !terms[t].cursor.advance_to(cand).map_err(|e| terms[t].err(e))? {
                        continue 'cands;
                    }
                }
                let code = block_codes[i];
                let mut score = 0.0;
                for (t, (term, &idf)) in terms.iter().zip(idfs).enumerate() {
                    score += if t == driver { driver_parts[i] } else { stats.term_coded(idf, term.cursor.tf(), code) };
                }
                // Once `limit` are held (partial matches are then not looked for, so
                // `matched` is not needed), a document that cannot enter is passed before its
                // phrases' positions are read; until then every document may enter.
                if !top.may_enter(score as f32) {
                    continue;
                }
                terms[driver].cursor.stand_at(i);
                if phrases_hold(query, slots, terms, &mut anchors)? {
                    keep(score, cand, top, matched)?;
                }
            }
            continue;
        }
        // Without phrases, each other term, rarest first, keeps the candidates it holds: its
        // blocks walked beside them (a merge, each block decoded at most once), one term at a
        // time.
        rows.clear();
        rows.resize(survivors.len() * stride, 0);
        for &t in &seek_order {
            if targets.is_empty() {
                break;
            }
            terms[t].cursor.find_all(&targets, &mut found).map_err(|e| terms[t].err(e))?;
            for (w, f) in found.iter().enumerate() {
                let k = f.k as usize;
                if w != k {
                    targets[w] = targets[k];
                    survivors[w] = survivors[k];
                    rows.copy_within(k * stride..(k + 1) * stride, w * stride);
                }
                rows[w * stride + t] = f.tf;
            }
            targets.truncate(found.len());
            survivors.truncate(found.len());
            rows.truncate(found.len() * stride);
        }
        for (w, &i) in survivors.iter().enumerate() {
            let i = i as usize;
            let tfs = &rows[w * stride..(w + 1) * stride];
            let code = block_codes[i];
            let mut score = 0.0;
            for (t, &idf) in idfs.iter().enumerate() {
                score += if t == driver { driver_parts[i] } else { stats.term_coded(idf, tfs[t], code) };
            }
            // Once `limit` are held, a document that cannot enter is passed.
            if top.may_enter(score as f32) {
                keep(score, targets[w], top, matched)?;
            }
        }
    }
    // Blocks came out of order: partial matches look full matches up by binary search. (Once
    // `limit` full matches are held there are no partial matches, and `matched` is not read.)
    if !top.is_full() {
        matched.sort_unstable();
    }
    Ok(())
}

/// A driver block's candidates ([`Candidates::select`]), in buffers of a block's size.
struct Candidates {
    /// The candidates' ordinals.
    ords: [u32; BLOCK_DOCS],
    /// Their places in the block.
    at: [u32; BLOCK_DOCS],
}

// Places are masked to stay in the buffers (see `Candidates::select`).
const _: () = assert!(BLOCK_DOCS.is_power_of_two());

impl Candidates {
    fn new() -> Self {
        Candidates { ords: [0; BLOCK_DOCS], at: [0; BLOCK_DOCS] }
    }

    /// Keeps, in order, the documents of a block (`ords`, `tfs`, length `codes`) whose part
    /// of a term of weight `idf`, with `others` (the other terms' bound over the block), is
    /// not [`below`] the weakest held (`threshold`); returns how many. Every document when
    /// nothing is held yet.
    ///
    /// `below(part + others)` is `(part + others)(1 + m) < t`, so a document is left out when
    /// `idf tf (K1 + 1) < cut (tf + norm)` with `cut = t / (1 + m) - others`: the same test
    /// without a division per document (the division and the test on its result were a
    /// third of `every_term`'s own samples over the 2-4 words class). Its rounding differs from
    /// `below`'s by parts in 10^16, under the margin `m` (10^-6): a document left out
    /// still scores below the weakest held, and nothing that could enter is left out.
    ///
    /// Written without branches: each document is written at the next free place and kept
    /// by moving that place on; places are masked to the buffers (a place is at most the
    /// document's own place in the block, below `BLOCK_DOCS`, so the mask changes nothing).
    #[allow(clippy::too_many_arguments)]
    fn select(&mut self, ords: &[u32], tfs: &[u32], codes: &[u8], stats: &Stats, idf: f64, others: f64, threshold: Option<(f32, i64)>) -> usize {
        // A block holds at most `BLOCK_DOCS` documents (its decoder checks its count).
        debug_assert!(ords.len() <= BLOCK_DOCS && tfs.len() == ords.len() && codes.len() == ords.len());
        let len = ords.len().min(tfs.len()).min(codes.len()).min(BLOCK_DOCS);
        let Some((t, _)) = threshold else {
            self.ords[..len].copy_from_slice(&ords[..len]);
            for (i, a) in self.at[..len].iter_mut().enumerate() {
                *a = i as u32;
            }
            return len;
        };
        let cut = f64::from(t) / (1.0 + BOUND_MARGIN) - others;
        let weight = idf * (K1 + 1.0);
        let mut n = 0;
        for i in 0..len {
            let tf = f64::from(tfs[i]);
            let norm = stats.norms[usize::from(codes[i])];
            self.ords[n & (BLOCK_DOCS - 1)] = ords[i];
            self.at[n & (BLOCK_DOCS - 1)] = i as u32;
            n += usize::from(weight * tf >= cut * (tf + norm));
        }
        n
    }
}

/// A view's part in a search of one word: its filter and its cursor of the word.
struct Lane<'v> {
    v: usize,
    view: &'v View<'v>,
    filter: DocFilter,
    term: Term<'v>,
}

/// A block of a one-word search (or of the one list left of partial passes, whose bound then
/// includes its view's other terms' bounds): its tight bound, latest time, lane and number.
/// Ordered so that the greatest is taken first: best bound, then latest, then the first lane
/// and block (every block differs in its lane or number, so the order is total).
struct BlockBound {
    tight: f64,
    max_time: i64,
    lane: usize,
    block: usize,
}

impl Ord for BlockBound {
    fn cmp(&self, o: &Self) -> Ordering {
        self.tight.total_cmp(&o.tight).then(self.max_time.cmp(&o.max_time)).then(o.lane.cmp(&self.lane)).then(o.block.cmp(&self.block))
    }
}

impl PartialOrd for BlockBound {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl PartialEq for BlockBound {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}

impl Eq for BlockBound {}

/// Full matches of a query of one word, block by block in order of their bounds (best
/// first) over every view's blocks together, so the held list fills with the strongest
/// documents early, whichever segment holds them, and every block whose best frontier point
/// cannot beat the weakest of them is skipped, undecoded. (View by view, each view's own best
/// blocks were decoded before the held list was as strong as the index makes it: a bigram over
/// the five segments of the benchmark's build decoded 23 of its 43 blocks.)
#[allow(clippy::too_many_arguments)]
fn one_term<'v>(
    views: &'v [View<'v>],
    word: &str,
    filters: &Filters,
    visible: &dyn Fn(&Candidate<'_>) -> bool,
    stats: &Stats,
    idf: f64,
    top: &mut TopK,
    matched: &mut [Vec<u32>],
) -> Result<(), IndexError> {
    let mut lanes: Vec<Lane<'v>> = Vec::with_capacity(views.len());
    for (v, view) in views.iter().enumerate() {
        // No document here passes the filters, or none holds the word.
        let Some(filter) = DocFilter::compile(filters, view.docs()) else { continue };
        if let Some(term) = view.term_unloaded(word, false, stats)? {
            lanes.push(Lane { v, view, filter, term });
        }
    }
    // (tight bound, latest time, lane, block): best bound first, then latest.
    // A heap, built in linear time, whose blocks are taken only until one cannot beat the
    // weakest held: sorting every block (a common bigram has hundreds over five segments, of
    // which a few are read) was a fifteenth of the instructions of a search of one.
    let mut order: Vec<BlockBound> = Vec::with_capacity(lanes.iter().map(|l| l.term.cursor.block_count()).sum());
    for (l, lane) in lanes.iter().enumerate() {
        for b in 0..lane.term.cursor.block_count() {
            let (_, max_time, max_part) = lane.term.cursor.block_bound(b).map_err(|e| lane.term.err(e))?;
            order.push(BlockBound { tight: lane.term.tight_part(max_part, idf), max_time, lane: l, block: b });
        }
    }
    let mut order = BinaryHeap::from(order);
    let mut block_codes: Vec<u8> = Vec::with_capacity(BLOCK_DOCS);
    // Scores of the current block's candidates, by their places in the block.
    let mut scores = [0.0f32; BLOCK_DOCS];
    let mut pick = Candidates::new();
    let mut entrants: Vec<u32> = Vec::with_capacity(BLOCK_DOCS);
    let mut later: Vec<u32> = Vec::with_capacity(BLOCK_DOCS);
    while let Some(BlockBound { tight, max_time, lane: l, block: b }) = order.pop() {
        if below(tight, top.threshold()) {
            // Every block after this one is bounded lower still.
            break;
        }
        let Lane { v, view, filter, term } = &mut lanes[l];
        let docs = view.docs();
        // Ties: a block whose documents can at best equal the weakest held, and are older.
        let info = term.cursor.block_at(b).map_err(|e| term.err(e))?;
        if cannot_enter(points_bound(stats, idf, term.cursor.points(&info)), max_time, top.threshold()) {
            continue;
        }
        if term.cursor.block() != b {
            term.cursor.goto_entry(b, info).map_err(|e| term.err(e))?;
        }
        // The block's length codes (stored in it); the documents whose score may reach the
        // weakest held ([`Candidates::select`]: every one until `limit` are held) and their
        // scores; then they are offered.
        let (ords, tfs) = term.cursor.block_docs();
        block_codes.clear();
        block_codes.extend_from_slice(term.cursor.block_codes());
        let threshold = top.threshold();
        let kept = pick.select(ords, tfs, &block_codes, stats, idf, 0.0, threshold);
        for &i in &pick.at[..kept] {
            let i = i as usize;
            scores[i] = stats.term_coded(idf, tfs[i], block_codes[i]) as f32;
        }
        if !top.is_full() {
            matched[*v].extend_from_slice(ords);
        }
        // The documents that may enter: until `limit` are held, the block's best (by score,
        // then newest: ordinals follow the journal) as many as there is room for come first,
        // so they all enter without pushing one out and the weakest held is then as high as
        // this block makes it; after them the rest in the order the selection leaves (sorting
        // them newest first again cost more than it saved: 测分 184.7k → 190.8k instructions).
        // Once `limit` are held, newest first, so that a document that ties the weakest held
        // is older than it and stays out. In ordinal order each document, better or newer
        // than the last, entered and pushed one out: most of the instructions of a search of a
        // CJK bigram. The list is the same in any order.
        // (A document `select` left out scores below the weakest held, as an f32 too: its
        // margin is over 16 times an f32's rounding.)
        let floor = threshold.map(|(t, _)| t);
        entrants.clear();
        entrants.extend(pick.at[..kept].iter().rev().copied().filter(|&i| floor.is_none_or(|f| scores[i as usize] >= f)));
        let room = top.k.saturating_sub(top.len());
        let first = if floor.is_none() && entrants.len() > room && room > 0 {
            entrants.select_nth_unstable_by(room - 1, |&a, &b| scores[b as usize].total_cmp(&scores[a as usize]).then(b.cmp(&a)));
            room
        } else {
            entrants.len()
        };
        // Their rows read ahead together (each read as it was offered was a cache miss, one
        // after the other): those first, then the others that may still enter.
        touch_rows(docs, ords, &entrants[..first]);
        for (n, &i) in entrants.iter().enumerate() {
            if n == first {
                let floor = top.threshold().map(|(t, _)| t);
                later.clear();
                later.extend(entrants[first..].iter().copied().filter(|&i| floor.is_none_or(|f| scores[i as usize] >= f)));
                touch_rows(docs, ords, &later);
            }
            let (ord, score) = (ords[i as usize], scores[i as usize]);
            if top.may_enter(score)
                && let Some((time_unix_ms, doc)) = filter.admit(docs, ord)
            {
                let r = Ranked { score, time_unix_ms, doc, view: *v, ordinal: ord };
                top.offer(r, view, visible)?;
            }
        }
    }
    // Blocks came out of order: partial matches look full matches up by binary search. (Once
    // `limit` full matches are held there are no partial matches, and `matched` is not read.)
    if !top.is_full() {
        for m in matched {
            m.sort_unstable();
        }
    }
    Ok(())
}

/// Partial matches of one view, until what is left of its pass is a walk of one list
/// ([`one_essential`]): that rest is returned, to be walked with every view's together
/// ([`OneEssential::run`]).
#[allow(clippy::too_many_arguments)]
fn partial_view<'v>(
    v: usize,
    view: &'v View<'v>,
    query: &Query,
    filters: &Filters,
    visible: &dyn Fn(&Candidate<'_>) -> bool,
    stats: &Stats,
    idfs: &[f64],
    top: &mut TopK,
    full_ordinals: &[u32],
) -> Result<Option<Deferred<'v>>, IndexError> {
    let docs = view.docs();
    let Some(filter) = DocFilter::compile(filters, docs) else { return Ok(None) };
    let codes = docs.codes();
    // (index in query.partial, cursors, bound over all its blocks), weakest bound first.
    let mut terms: Vec<(usize, Union<'_>, f64)> = Vec::new();
    for (qi, (term, word)) in query.partial.iter().zip(&query.partial_words).enumerate() {
        if let Some(t) = view.partial_term(term, word.as_deref(), stats)? {
            let ub = t.bound(idfs[qi])?;
            terms.push((qi, t, ub));
        }
    }
    if terms.is_empty() {
        return Ok(None);
    }
    // The documents of a rare term are scored first (see [`Seed`]); the rest of the pass
    // leaves them out.
    // Then each next rarest while it is one block (at most `BLOCK_DOCS` documents) and rare
    // beside the others: such a term's one block bounds every window of the walk, so that
    // beside it (in "a b c d" of two rare bigrams and a common one) the common term was
    // walked whole. Seeding larger terms too scored their documents whole for nothing (a
    // query of four words took twice as long).
    let mut seeded: Vec<u32> = Vec::new();
    while let Some(r) = seed_term(&terms).filter(|&r| seeded.is_empty() || terms[r].1.len() <= BLOCK_DOCS as u64) {
        let (rqi, mut rare, _) = terms.remove(r);
        // Cursors of the other terms of their own (the rest of the pass walks them from the
        // start), strongest bound first: copies of theirs, which stand on their first
        // documents still (opened again, each decoded its first block again).
        let mut by_bound: Vec<&(usize, Union<'_>, f64)> = terms.iter().collect();
        by_bound.sort_by(|a, b| b.2.total_cmp(&a.2));
        let (mut others, mut bounds) = (Vec::with_capacity(terms.len()), Vec::with_capacity(terms.len()));
        for (qi, u, bound) in by_bound {
            others.push((*qi, u.clone()));
            bounds.push(*bound);
        }
        let seed = Seed { v, view, filter: &filter, visible, stats, idfs, full_ordinals };
        let mut walked = Vec::new();
        seed.rare(rqi, &mut rare, &bounds, &mut others, top, &seeded, &mut walked)?;
        seeded.extend_from_slice(&walked);
        seeded.sort_unstable();
        seeded.dedup();
        if terms.is_empty() {
            return Ok(None);
        }
    }
    terms.sort_by(|a, b| a.2.total_cmp(&b.2));
    // prefix[j]: the bounds of the j weakest terms together, over the whole view until `limit`
    // are held, then over the window of ordinals `start..=window_last`, where each term has
    // one block (so its bound is that block's): a window whose terms together cannot reach
    // the weakest held is passed whole, and within one, terms that cannot make the list on
    // their own are only sought for candidates the others found (MaxScore by blocks).
    let mut prefix = vec![0.0f64; terms.len() + 1];
    for (j, t) in terms.iter().enumerate() {
        prefix[j + 1] = prefix[j] + t.2;
    }
    let mut contrib: Vec<Option<f64>> = vec![None; query.partial.len()];
    // The first ordinal not yet looked at, and the window's last (`None`: no window yet).
    let mut start = 0u32;
    let mut window_last: Option<u32> = None;
    loop {
        let threshold = top.threshold();
        if window_last.is_none()
            && let Some(ess) = one_essential(&terms, threshold)
        {
            return Ok(Some(Deferred { v, view, filter, terms, ess, start, seeded }));
        }
        let new_window = threshold.is_some() && window_last.is_none();
        if new_window {
            let mut last = END;
            for (j, (qi, t, _)) in terms.iter().enumerate() {
                let (bound, l) = t.window(start, idfs[*qi])?;
                last = last.min(l);
                prefix[j + 1] = prefix[j] + bound;
            }
            window_last = Some(last);
        }
        // Terms 0..essential cannot make the list on their own: candidates come from the rest.
        let mut essential = 0;
        while essential < terms.len() && below(prefix[essential + 1], threshold) {
            essential += 1;
        }
        if new_window {
            // The terms candidates come from stand in the window (within one, the weakest held
            // only rises, so no term joins them); the others are sought only when needed.
            for (_, t, _) in &mut terms[essential..] {
                t.seek(start)?;
            }
        }
        let cand = terms[essential..].iter().map(|t| t.1.doc()).min().unwrap_or(END);
        if let Some(last) = window_last {
            if cand > last {
                // Nothing more in this window can enter: on to the next.
                if last == END {
                    return Ok(None);
                }
                // No document before `cand` holds a term candidates come from. If the other
                // terms together cannot make the list anywhere (bounded over the whole view),
                // none of those documents can: the next window starts at `cand`, not after
                // this one (windows end where the densest term's blocks do, so stepping one
                // at a time to a rare term's next document was most of a partial pass of
                // rare words beside a common one).
                let rest: f64 = terms[..essential].iter().map(|t| t.2).sum();
                if below(rest, threshold) {
                    if cand == END {
                        return Ok(None);
                    }
                    start = cand;
                } else {
                    start = last + 1;
                }
                window_last = None;
                continue;
            }
        } else if essential == terms.len() {
            return Ok(None);
        }
        if cand == END {
            return Ok(None);
        }
        // From a cursor standing on it (a term candidates come from stands on `cand`).
        let code = terms[essential..].iter().find_map(|t| t.1.code_at(cand)).unwrap_or_else(|| codes[cand as usize]);
        contrib.iter_mut().for_each(|c| *c = None);
        let mut sum = 0.0;
        for (qi, t, _) in &terms[essential..] {
            if t.doc() == cand {
                let c = stats.term_coded(idfs[*qi], t.tf_at(cand), code);
                contrib[*qi] = Some(c);
                sum += c;
            }
        }
        let mut hopeless = false;
        for j in (0..essential).rev() {
            if below(sum + prefix[j + 1], threshold) {
                hopeless = true;
                break;
            }
            let (qi, t, _) = &mut terms[j];
            if t.seek(cand)? == cand {
                let c = stats.term_coded(idfs[*qi], t.tf_at(cand), code);
                contrib[*qi] = Some(c);
                sum += c;
            }
        }
        if !hopeless {
            // Summed in query order, as a scan would. A score that cannot enter is passed
            // before the document's figures are read (a cache miss).
            let score = contrib.iter().flatten().sum::<f64>() as f32;
            if top.may_enter(score)
                && full_ordinals.binary_search(&cand).is_err()
                && seeded.binary_search(&cand).is_err()
                && let Some((time_unix_ms, doc)) = filter.admit(docs, cand)
            {
                let r = Ranked { score, time_unix_ms, doc, view: v, ordinal: cand };
                top.offer(r, view, visible)?;
            }
        }
        for (_, t, _) in &mut terms[essential..] {
            if t.doc() == cand {
                t.next_from(cand)?;
            }
        }
        start = cand + 1;
    }
}

/// A term walked first by a partial pass is at most this many documents of a view, and at
/// most 1/[`SEED_RATIO`] of the longest other term's.
const SEED_DOCS_MAX: u64 = 1 << 16;
const SEED_RATIO: u64 = 2;

/// The partial-match term to walk first, if one is rare beside the others: the held list
/// then fills with its documents, which score the most (a rare term weighs the most), so that
/// the common terms' documents are mostly passed by their bounds instead of read one by one
/// while the list is still weak.
fn seed_term(terms: &[(usize, Union<'_>, f64)]) -> Option<usize> {
    if terms.len() < 2 {
        return None;
    }
    let lens: Vec<u64> = terms.iter().map(|t| t.1.len()).collect();
    let r = (0..lens.len()).min_by_key(|&i| lens[i])?;
    let longest = lens.iter().enumerate().filter(|&(i, _)| i != r).map(|(_, &l)| l).max()?;
    (lens[r] <= SEED_DOCS_MAX && lens[r] * SEED_RATIO <= longest).then_some(r)
}

/// Where a partial pass starts when one term is rare beside the others: every document of that
/// term (which weighs the most), each scored whole as a scan would score it, so that the held
/// list is strong before the pass walks the common terms' documents in order (until it is,
/// their bounds pass nothing). The rest of the pass leaves these documents out, and bounds the
/// others without the rare term.
struct Seed<'s, 'a> {
    v: usize,
    view: &'s View<'a>,
    filter: &'s DocFilter,
    visible: &'s dyn Fn(&Candidate<'_>) -> bool,
    stats: &'s Stats,
    idfs: &'s [f64],
    full_ordinals: &'s [u32],
}

impl Seed<'_, '_> {
    /// Scores `doc` (of length code `code`) with `own` (the rare term and its part) and every term of
    /// `terms` found there by seeking (their cursors stand before or at `doc`; `rest[k]`
    /// bounds the parts of `terms[k..]` together), and offers it. Passed as soon as what is
    /// found with what is left to seek cannot reach the weakest held.
    #[allow(clippy::too_many_arguments)]
    fn offer(&self, doc: u32, code: u8, own: (usize, f64), terms: &mut [(usize, Union<'_>)], rest: &[f64], contrib: &mut [Option<f64>], top: &mut TopK) -> Result<(), IndexError> {
        contrib.iter_mut().for_each(|c| *c = None);
        contrib[own.0] = Some(own.1);
        let mut sum = own.1;
        for (k, (qi, u)) in terms.iter_mut().enumerate() {
            if below(sum + rest[k], top.threshold()) {
                return Ok(());
            }
            if u.seek(doc)? == doc {
                let c = self.stats.term_coded(self.idfs[*qi], u.tf_at(doc), code);
                contrib[*qi] = Some(c);
                sum += c;
            }
        }
        // Summed in query order, as a scan would.
        let score = contrib.iter().flatten().sum::<f64>() as f32;
        if top.may_enter(score)
            && let Some((time_unix_ms, id)) = self.filter.admit(self.view.docs(), doc)
        {
            let r = Ranked { score, time_unix_ms, doc: id, view: self.v, ordinal: doc };
            top.offer(r, self.view, self.visible)?;
        }
        Ok(())
    }

    /// Every document of `rare` (query term `rqi`), scored with `others` (this seed's own
    /// cursors of the other terms, strongest first, bounded over the view by `bounds`) and
    /// offered, unless it is a full match, an earlier seed scored it (`seeded`, in order) or
    /// its bound cannot reach the weakest held; `walked` gets every document of `rare`, in
    /// order.
    #[allow(clippy::too_many_arguments)]
    fn rare(
        &self,
        rqi: usize,
        rare: &mut Union<'_>,
        bounds: &[f64],
        others: &mut [(usize, Union<'_>)],
        top: &mut TopK,
        seeded: &[u32],
        walked: &mut Vec<u32>,
    ) -> Result<(), IndexError> {
        let codes = self.view.docs().codes();
        // Suffix sums of the others' bounds (`others` comes strongest first).
        let mut rest = vec![0.0f64; others.len() + 1];
        for k in (0..others.len()).rev() {
            rest[k] = rest[k + 1] + bounds[k];
        }
        let others_bound = rest[0];
        let mut contrib: Vec<Option<f64>> = vec![None; self.idfs.len()];
        let mut doc = rare.doc();
        while doc != END {
            walked.push(doc);
            // The length code from the rare term's block, where it stands.
            let code = rare.code_at(doc).unwrap_or_else(|| codes[doc as usize]);
            let own = self.stats.term_coded(self.idfs[rqi], rare.tf_at(doc), code);
            // A document an earlier seed scored (holding its term too) is left out.
            if !below(own + others_bound, top.threshold())
                && self.full_ordinals.binary_search(&doc).is_err()
                && seeded.binary_search(&doc).is_err()
            {
                self.offer(doc, code, (rqi, own), others, &rest, &mut contrib, top)?;
            }
            rare.next_from(doc)?;
            doc = rare.doc();
        }
        Ok(())
    }
}

/// If the weakest held is such that, bounded over the whole view, every term but the
/// strongest cannot make the list on its own, and that one is a single list: its index (in
/// `terms`, weakest bound first).
fn one_essential(terms: &[(usize, Union<'_>, f64)], threshold: Option<(f32, i64)>) -> Option<usize> {
    threshold?;
    let mut sum = 0.0;
    let mut ess = 0;
    while ess < terms.len() && below(sum + terms[ess].2, threshold) {
        sum += terms[ess].2;
        ess += 1;
    }
    (ess + 1 == terms.len() && terms[ess].1.parts.len() == 1).then_some(ess)
}

/// A view's partial pass once candidates can only come from one list ([`one_essential`]):
/// its terms (weakest bound first; `terms[ess]` the list, the others only sought), the first
/// ordinal not yet looked at, and the documents its seeds scored (in order).
struct Deferred<'v> {
    v: usize,
    view: &'v View<'v>,
    filter: DocFilter,
    terms: Vec<(usize, Union<'v>, f64)>,
    ess: usize,
    start: u32,
    seeded: Vec<u32>,
}

/// The rest of every view's partial pass once candidates can only come from one list (see
/// [`one_essential`]): the blocks of all those lists together, best bound (with the other
/// terms' bounds over the view) first, so the held list fills with the strongest documents
/// whichever segment holds them; a block that cannot reach the weakest held is passed
/// undecoded, and within one, the parts of all its documents are computed at once, so that a
/// document that cannot make the list costs a comparison (walked one by one with the other
/// terms' windows, each such document was a candidate of its own: most of the time of a
/// query of several common words). (View by view, each view's best blocks were decoded
/// before the held list was as strong as the index makes it: a partial pass of a four-character
/// Chinese query over five segments decoded 24 blocks.)
struct OneEssential<'s> {
    stats: &'s Stats,
    idfs: &'s [f64],
    visible: &'s dyn Fn(&Candidate<'_>) -> bool,
    /// Per view, its full matches (ordinals, in order), which are not partial matches.
    full_ordinals: &'s [Vec<u32>],
}

impl OneEssential<'_> {
    /// Walks each deferred view's list from its `start` on, block by block in order of their
    /// bounds over all of them; returns once no document of the blocks left can enter.
    fn run(&self, deferred: &mut [Deferred<'_>], top: &mut TopK) -> Result<(), IndexError> {
        if deferred.is_empty() {
            return Ok(());
        }
        // Per view, prefix[j]: the whole-view bounds of terms[..j] together.
        let prefixes: Vec<Vec<f64>> = deferred
            .iter()
            .map(|d| {
                let mut prefix = vec![0.0f64; d.ess + 1];
                for j in 0..d.ess {
                    prefix[j + 1] = prefix[j] + d.terms[j].2;
                }
                prefix
            })
            .collect();
        // The blocks, best bound first, then latest (as `one_term` takes them): in ordinal
        // order the weakest held rose slowly, a common term's blocks nearly all reaching it, so
        // that most of its documents were scored one by one. A heap: most searches take a few.
        let mut order: Vec<BlockBound> = Vec::new();
        for (di, d) in deferred.iter().enumerate() {
            let others = prefixes[di][d.ess];
            let (eqi, driver, bound) = (d.terms[d.ess].0, &d.terms[d.ess].1.parts[0], d.terms[d.ess].2);
            if below(bound + others, top.threshold()) {
                continue;
            }
            let idf = self.idfs[eqi];
            for b in driver.cursor.block_for(d.start)..driver.cursor.block_count() {
                let (_, max_time, max_part) = driver.cursor.block_bound(b).map_err(|e| driver.err(e))?;
                order.push(BlockBound { tight: driver.tight_part(max_part, idf) + others, max_time, lane: di, block: b });
            }
        }
        let mut order = BinaryHeap::from(order);
        let mut contrib: Vec<Option<f64>> = vec![None; self.idfs.len()];
        let mut pick = Candidates::new();
        while let Some(BlockBound { tight, max_time, lane: di, block: b }) = order.pop() {
            if below(tight, top.threshold()) {
                // Every block after this one is bounded lower still.
                return Ok(());
            }
            let Deferred { v, view, filter, terms, ess, start, seeded } = &mut deferred[di];
            let (prefix, ess, start) = (&prefixes[di], *ess, *start);
            let others = prefix[ess];
            let docs = view.docs();
            let full_ordinals = &self.full_ordinals[*v];
            let (before, after) = terms.split_at_mut(ess);
            let (eqi, driver) = (after[0].0, &mut after[0].1.parts[0]);
            let idf = self.idfs[eqi];
            let info = driver.cursor.block_at(b).map_err(|e| driver.err(e))?;
            // Its best frontier point with the others' bounds: a block that can at best tie
            // the weakest held and is older is passed too.
            if cannot_enter(points_bound(self.stats, idf, driver.cursor.points(&info)) + others, max_time, top.threshold()) {
                continue;
            }
            driver.cursor.goto_entry(b, info).map_err(|e| driver.err(e))?;
            // The documents that may reach the weakest held as the block starts
            // ([`Candidates::select`]); each is checked again as it comes (it only rises).
            let (ords, tfs) = driver.cursor.block_docs();
            let block_codes = driver.cursor.block_codes();
            let kept = pick.select(ords, tfs, block_codes, self.stats, idf, others, top.threshold());
            for &i in &pick.at[..kept] {
                let (i, threshold) = (i as usize, top.threshold());
                let (cand, part) = (ords[i], self.stats.term_coded(idf, tfs[i], block_codes[i]));
                if cand < start || below(part + others, threshold) {
                    continue;
                }
                let code = block_codes[i];
                contrib.iter_mut().for_each(|c| *c = None);
                contrib[eqi] = Some(part);
                let mut sum = part;
                let mut hopeless = false;
                for j in (0..ess).rev() {
                    if below(sum + prefix[j + 1], threshold) {
                        hopeless = true;
                        break;
                    }
                    let (qi, t, _) = &mut before[j];
                    if t.seek_any(cand)? == cand {
                        let c = self.stats.term_coded(self.idfs[*qi], t.tf_at(cand), code);
                        contrib[*qi] = Some(c);
                        sum += c;
                    }
                }
                if hopeless {
                    continue;
                }
                // Summed in query order, as a scan would.
                let score = contrib.iter().flatten().sum::<f64>() as f32;
                if top.may_enter(score)
                    && full_ordinals.binary_search(&cand).is_err()
                    && seeded.binary_search(&cand).is_err()
                    && let Some((time_unix_ms, doc)) = filter.admit(docs, cand)
                {
                    let r = Ranked { score, time_unix_ms, doc, view: *v, ordinal: cand };
                    top.offer(r, view, self.visible)?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn stats(avg_length: f64) -> Stats {
        Stats { doc_count: 1e6, avg_length, norms: bm25::length_norms(avg_length) }
    }

    proptest! {
        /// `Candidates::select` keeps, in order, every document that `below` would keep (its
        /// part with `others` not below the weakest held), whatever the rounding of its own
        /// test; with nothing held, every document.
        #[test]
        fn index_candidates_keep_every_document_below_keeps(
            docs in proptest::collection::vec((1u32..40, any::<u8>()), 1..=BLOCK_DOCS),
            idf in 0.01f64..20.0,
            others in 0.0f64..30.0,
            avg in 1.0f64..500.0,
            pick_at in any::<prop::sample::Index>(),
            nudge in -2i32..=2,
        ) {
            let s = stats(avg);
            let ords: Vec<u32> = (0..docs.len() as u32).map(|i| i * 3 + 1).collect();
            let tfs: Vec<u32> = docs.iter().map(|d| d.0).collect();
            let codes: Vec<u8> = docs.iter().map(|d| d.1).collect();
            let parts: Vec<f64> = tfs.iter().zip(&codes).map(|(&tf, &c)| s.term_coded(idf, tf, c)).collect();
            // The weakest held at one document's score, as an f32, a few steps to either
            // side: the edge where rounding could differ.
            let at = pick_at.index(parts.len());
            let base = ((parts[at] + others) as f32).to_bits();
            let t = f32::from_bits(base.saturating_add_signed(nudge));
            let mut pick = Candidates::new();
            let n = pick.select(&ords, &tfs, &codes, &s, idf, others, Some((t, 0)));
            let kept: Vec<usize> = pick.at[..n].iter().map(|&i| i as usize).collect();
            prop_assert!(kept.windows(2).all(|w| w[0] < w[1]));
            for (w, &i) in kept.iter().enumerate() {
                prop_assert_eq!(pick.ords[w], ords[i]);
            }
            for (i, &part) in parts.iter().enumerate() {
                if !below(part + others, Some((t, 0))) {
                    prop_assert!(kept.contains(&i), "document {} (part {}, others {}, weakest {}) left out", i, part, others, t);
                }
            }
            let n = pick.select(&ords, &tfs, &codes, &s, idf, others, None);
            prop_assert_eq!(n, ords.len());
            prop_assert_eq!(&pick.ords[..n], &ords[..]);
        }

        /// With no other terms (a one-word search), a document left out scores below the
        /// weakest held as an f32 too, so it could not have entered on a tie.
        #[test]
        fn index_candidates_left_out_score_below_the_weakest_held_as_f32(
            docs in proptest::collection::vec((1u32..40, any::<u8>()), 1..=BLOCK_DOCS),
            idf in 0.01f64..20.0,
            avg in 1.0f64..500.0,
            pick_at in any::<prop::sample::Index>(),
            nudge in -2i32..=2,
        ) {
            let s = stats(avg);
            let ords: Vec<u32> = (0..docs.len() as u32).collect();
            let tfs: Vec<u32> = docs.iter().map(|d| d.0).collect();
            let codes: Vec<u8> = docs.iter().map(|d| d.1).collect();
            let at = pick_at.index(docs.len());
            let base = (s.term_coded(idf, tfs[at], codes[at]) as f32).to_bits();
            let t = f32::from_bits(base.saturating_add_signed(nudge));
            let mut pick = Candidates::new();
            let n = pick.select(&ords, &tfs, &codes, &s, idf, 0.0, Some((t, 0)));
            let kept: Vec<u32> = pick.at[..n].to_vec();
            for i in 0..docs.len() {
                let score = s.term_coded(idf, tfs[i], codes[i]) as f32;
                if score >= t {
                    prop_assert!(kept.contains(&(i as u32)), "document {} (score {}) left out at weakest {}", i, score, t);
                }
            }
        }
    }
}
