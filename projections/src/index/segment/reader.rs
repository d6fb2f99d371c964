//! Reads a segment over immutable bytes (a memory map, or bytes held in memory), trusting
//! nothing: every length is checked before use, and every structure read from the file (the
//! header, the footer, the document rows and strings, the key offsets, the term table and
//! dictionary) is checked on open. The body's checksum, which covers the postings besides, is
//! verified by [`Segment::verify`]: at once for a segment held in memory or just written, and
//! for a segment opened from a file by a thread the index starts (when it verifies ahead), or
//! by whoever needs the answer first: a search or a merge waits for it before reading the
//! segment. The decoders
//! still read every block as one that may be damaged: an error, never a panic (the property
//! tests that open damaged files).

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use origin_engine::vfs::{Mapped, VfsFile};

use super::{FOOTER_BODY_CRC_AT, FOOTER_SIZE_BYTES, FORMAT_VERSION, Footer, HEADER_SIZE_BYTES, MAGIC, SegmentId, table};
use crate::index::IndexError;
use crate::index::folder::Folder;
use crate::index::doc::{DocTable, ROW_SIZE_BYTES};
use crate::index::limits::{META_STRING_SIZE_BYTES_MAX, SEGMENT_DOCS_MAX, SEGMENT_SIZE_BYTES_MAX};
use crate::index::postings::{BlockError, Postings, TermBlock, block_doc_count};

/// The bytes of a segment.
pub(crate) enum Backing {
    /// A file's bytes, mapped (or read, on a simulated file system).
    Mapped(Mapped),
    Owned(Vec<u8>),
}

impl Backing {
    #[inline]
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Backing::Mapped(m) => m,
            Backing::Owned(v) => v,
        }
    }
}

/// A range of a segment's bytes that can be handed to `fst`.
#[derive(Clone)]
pub(crate) struct Slice {
    backing: Arc<Backing>,
    range: Range<usize>,
}

impl AsRef<[u8]> for Slice {
    fn as_ref(&self) -> &[u8] {
        &self.backing.bytes()[self.range.clone()]
    }
}

/// What a segment whose body does not match its checksum is reported with.
const BODY_CRC_MISMATCH: &str = "body CRC mismatch (the file is damaged)";

/// An open segment, its structures checked (its body's checksum once [`Segment::verify`]d).
pub struct Segment {
    id: SegmentId,
    path: PathBuf,
    backing: Arc<Backing>,
    docs: DocTable,
    fst: fst::Map<Slice>,
    postings: Range<usize>,
    /// The term table (`super::table`): a power of two of 8-byte slots.
    table: Range<usize>,
    /// The keys section: offsets, then bytes.
    key_offsets: Range<usize>,
    key_bytes: Range<usize>,
    size_bytes: u64,
    body: BodyCheck,
}

/// Whether a segment's body matches its checksum.
struct BodyCheck {
    /// Set once the body was found good: read without the lock on every later look.
    good: AtomicBool,
    /// Set once the body was found damaged.
    damaged: AtomicBool,
    /// Held while the body is read, so that a second caller waits for the first one's answer
    /// instead of reading the file again.
    state: Mutex<Body>,
}

/// Where a segment's body check stands.
enum Body {
    /// Not read yet (or a read failed: tried again): the file, open, with the body's length
    /// (the file up to its footer) and the checksum the footer gives it.
    Unread { file: Arc<dyn VfsFile>, len: u64, crc: u32 },
    /// Found good (or checked in memory on open). The file is closed: a process keeps no
    /// descriptor per segment.
    Good,
    /// Found damaged: the position reported (the footer's body CRC field).
    Damaged(u64),
}

impl BodyCheck {
    fn of(body: Body) -> BodyCheck {
        let good = matches!(body, Body::Good);
        BodyCheck { good: AtomicBool::new(good), damaged: AtomicBool::new(false), state: Mutex::new(body) }
    }
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("id", &self.id)
            .field("path", &self.path)
            .field("docs", &self.docs.len())
            .field("terms", &self.fst.len())
            .finish()
    }
}

/// The CRC-32 of the first `body_len` bytes of `file`, read in chunks of 1 MiB. A file that
/// ends before them is an error of kind `UnexpectedEof`.
fn body_crc(file: &dyn VfsFile, body_len: u64) -> std::io::Result<u32> {
    let mut hasher = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut read = 0u64;
    while read < body_len {
        let want = (body_len - read).min(buf.len() as u64) as usize;
        let n = file.read_at(&mut buf[..want], read)?;
        if n == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, format!("the file ends after {read} of {body_len} bytes")));
        }
        hasher.update(&buf[..n]);
        read += n as u64;
    }
    Ok(hasher.finalize())
}

impl Segment {
    /// Opens segment file `path`, which must be segment `id`, checking all but its body's
    /// checksum ([`Segment::verify`] does that).
    pub(crate) fn open(folder: &Folder, path: &Path, id: SegmentId) -> Result<Segment, IndexError> {
        let file = folder.vfs().open_read(path).map_err(|e| IndexError::io("open", path, e))?;
        let len = file.len().map_err(|e| IndexError::io("stat", path, e))?;
        if len < (HEADER_SIZE_BYTES + FOOTER_SIZE_BYTES) as u64 {
            return Err(IndexError::corrupt(path, len, "file too short to be a segment (truncated)"));
        }
        if len > SEGMENT_SIZE_BYTES_MAX {
            return Err(IndexError::corrupt(path, 0, format!("file of {len} bytes is over the segment limit")));
        }
        // A memory map on the real file system: segment files are written under a temporary
        // name, synced, then renamed into place, and never modified afterwards (merges write
        // new files); the index owns its directory (ARCHITECTURE.md, invariants). Every
        // structure is checked on open, and the body's checksum (of the same immutable file)
        // by `verify`; until then a damaged block is an error when decoded.
        let map = file.map().map_err(|e| IndexError::io("mmap", path, e))?;
        if map.len() as u64 != len {
            return Err(IndexError::corrupt(path, map.len() as u64, "the file changed size while it was opened"));
        }
        Segment::parse(Backing::Mapped(map), path.to_path_buf(), id, Some(file))
    }

    /// Verifies a segment held in memory, its body's checksum included.
    pub(crate) fn from_bytes(bytes: Vec<u8>, id: SegmentId) -> Result<Segment, IndexError> {
        Segment::parse(Backing::Owned(bytes), PathBuf::from(format!("<memory segment {id}>")), id, None)
    }

    /// Verifies and reads a segment's bytes; its body's checksum too, unless they were mapped
    /// from `file` ([`Segment::verify`] then reads the body from it).
    fn parse(backing: Backing, path: PathBuf, id: SegmentId, file: Option<Arc<dyn VfsFile>>) -> Result<Segment, IndexError> {
        let backing = Arc::new(backing);
        let bytes = backing.bytes();
        let len = bytes.len();
        let bad = |at: usize, reason: &str| IndexError::corrupt(&path, at as u64, reason);
        if len < HEADER_SIZE_BYTES + FOOTER_SIZE_BYTES {
            return Err(bad(len, "too short to be a segment (truncated)"));
        }
        // Header.
        if &bytes[0..8] != MAGIC {
            return Err(bad(0, "not an index segment (bad magic)"));
        }
        let u32_at = |o: usize| u32::from_le_bytes([bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]]);
        if crc32fast::hash(&bytes[0..28]) != u32_at(28) {
            return Err(bad(28, "header CRC mismatch"));
        }
        let version = u16::from_le_bytes([bytes[8], bytes[9]]);
        if version != FORMAT_VERSION {
            return Err(bad(8, &format!("format version {version}; this build reads {FORMAT_VERSION}")));
        }
        if u32_at(12) as usize != HEADER_SIZE_BYTES || bytes[10..12] != [0, 0] || bytes[24..28] != [0; 4] {
            return Err(bad(10, "unexpected header fields"));
        }
        let mut idb = [0u8; 8];
        idb.copy_from_slice(&bytes[16..24]);
        let found_id = u64::from_le_bytes(idb);
        if found_id != id {
            return Err(bad(16, &format!("holds segment {found_id}, expected {id}")));
        }
        // Footer, then the body's checksum.
        let footer_start = len - FOOTER_SIZE_BYTES;
        let mut fb = [0u8; FOOTER_SIZE_BYTES];
        fb.copy_from_slice(&bytes[footer_start..]);
        let footer = Footer::decode(&fb).map_err(|(at, reason)| bad(footer_start + at, reason))?;
        if file.is_none() && crc32fast::hash(&bytes[..footer_start]) != footer.body_crc {
            return Err(bad(footer_start + FOOTER_BODY_CRC_AT, BODY_CRC_MISMATCH));
        }
        // Sections: in order, within the body.
        let offsets = [
            footer.docs_offset,
            footer.strings_offset,
            footer.keys_offset,
            footer.postings_offset,
            footer.table_offset,
            footer.fst_offset,
            footer_start as u64,
        ];
        if footer.docs_offset != HEADER_SIZE_BYTES as u64 || offsets.windows(2).any(|w| w[0] > w[1]) {
            return Err(bad(footer_start, "section offsets out of order"));
        }
        let [docs_at, strings_at, keys_at, postings_at, table_at, fst_at, _] = offsets.map(|o| o as usize);
        if footer.doc_count > SEGMENT_DOCS_MAX
            || (strings_at - docs_at) as u64 != u64::from(footer.doc_count) * ROW_SIZE_BYTES as u64
        {
            return Err(bad(footer_start + 48, "document count does not match the rows section"));
        }
        let docs = DocTable::decode(Arc::clone(&backing), docs_at..strings_at, &bytes[strings_at..keys_at])
            .map_err(|(at, reason)| bad(docs_at + at, &reason))?;
        // Keys: doc_count + 1 rising offsets, the last one the size of the key bytes; each
        // key's UTF-8 and length are checked when it is read.
        let offsets_size = (docs.len() as usize + 1) * 8;
        if postings_at - keys_at < offsets_size {
            return Err(bad(keys_at, "keys section shorter than its offsets"));
        }
        let key_offsets = keys_at..keys_at + offsets_size;
        let key_bytes = keys_at + offsets_size..postings_at;
        let offset_at = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[key_offsets.start + 8 * i..key_offsets.start + 8 * i + 8]);
            u64::from_le_bytes(b)
        };
        let mut prev = 0u64;
        for i in 0..=docs.len() as usize {
            let o = offset_at(i);
            if (i == 0 && o != 0) || o < prev || o - prev > META_STRING_SIZE_BYTES_MAX as u64 {
                return Err(bad(key_offsets.start + 8 * i, "key offsets do not rise by key lengths"));
            }
            prev = o;
        }
        if prev != key_bytes.len() as u64 {
            return Err(bad(key_offsets.end - 8, "key offsets do not end at the keys' size"));
        }
        if docs.token_count() != footer.token_count {
            return Err(bad(footer_start + 56, "token count does not match the documents"));
        }
        if docs.len() == 0 {
            return Err(bad(footer_start + 48, "a segment without documents"));
        }
        // The term table: its size that of `term_count` terms, a slot per term, each slot's
        // block after a length byte within the postings. (Whether each term's slot names its
        // block is for the writer; a lookup confirms a term by the bytes before its block.)
        let slot_count = table::slot_count(footer.term_count);
        if (fst_at - table_at) as u64 != slot_count * table::SLOT_SIZE_BYTES as u64 {
            return Err(bad(footer_start + 52, "term table of the wrong size for the term count"));
        }
        let postings_len = (table_at - postings_at) as u64;
        let mut used = 0u64;
        let slots = &bytes[table_at..fst_at];
        for i in 0..slots.len() / table::SLOT_SIZE_BYTES {
            let slot = table::slot_at(slots, i).unwrap_or(0);
            match table::offset(slot) {
                Some(offset) if offset == 0 || offset >= postings_len => {
                    return Err(bad(table_at + i * table::SLOT_SIZE_BYTES, "term table slot points outside the postings"));
                }
                Some(_) => used += 1,
                None if slot != 0 => return Err(bad(table_at + i * table::SLOT_SIZE_BYTES, "term table slot without an offset")),
                None => {}
            }
        }
        if used != u64::from(footer.term_count) {
            return Err(bad(footer_start + 52, "term table does not hold one slot per term"));
        }
        let fst_slice = Slice { backing: backing.clone(), range: fst_at..footer_start };
        let fst = fst::Map::new(fst_slice).map_err(|e| bad(fst_at, &format!("term dictionary: {e}")))?;
        fst.as_fst().verify().map_err(|e| bad(fst_at, &format!("term dictionary: {e}")))?;
        if fst.len() != footer.term_count as usize {
            return Err(bad(footer_start + 52, "term count does not match the dictionary"));
        }
        Ok(Segment {
            id,
            path,
            backing,
            docs,
            fst,
            postings: postings_at..table_at,
            table: table_at..fst_at,
            key_offsets,
            key_bytes,
            size_bytes: len as u64,
            body: BodyCheck::of(match file {
                Some(file) => Body::Unread { file, len: footer_start as u64, crc: footer.body_crc },
                None => Body::Good,
            }),
        })
    }

    /// Verifies the body's checksum, reading the file in chunks (not through the map: pages
    /// read through it stay mapped into the process, which then shows the whole index as its
    /// own resident memory). The outcome is kept (and the file closed): later calls return
    /// it at once, and a call made while another thread reads the body waits for that answer.
    /// A failed read is returned and tried again by the next call.
    pub(crate) fn verify(&self) -> Result<(), IndexError> {
        if self.body.good.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut state = self.body.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Body::Unread { file, len, crc } = &*state {
            let found = body_crc(&**file, *len).map_err(|e| IndexError::io("read", &self.path, e))?;
            *state = if found == *crc {
                self.body.good.store(true, Ordering::Release);
                Body::Good
            } else {
                self.body.damaged.store(true, Ordering::Release);
                Body::Damaged(*len + FOOTER_BODY_CRC_AT as u64)
            };
        }
        match *state {
            Body::Damaged(at) => Err(IndexError::corrupt(&self.path, at, BODY_CRC_MISMATCH)),
            _ => Ok(()),
        }
    }

    /// The damage [`Segment::verify`] found, without waiting for a check under way.
    pub(crate) fn damage(&self) -> Option<IndexError> {
        if !self.body.damaged.load(Ordering::Acquire) {
            return None;
        }
        // Final once set: the lock is held only for a moment by those reading it.
        match *self.body.state.lock().unwrap_or_else(|p| p.into_inner()) {
            Body::Damaged(at) => Some(IndexError::corrupt(&self.path, at, BODY_CRC_MISMATCH)),
            _ => None,
        }
    }

    /// True once the body was found to match its checksum.
    pub(crate) fn is_verified(&self) -> bool {
        self.body.good.load(Ordering::Acquire)
    }

    /// This segment's id.
    pub fn id(&self) -> SegmentId {
        self.id
    }

    /// Documents in this segment.
    pub fn doc_count(&self) -> u32 {
        self.docs.len()
    }

    /// Size of its file in bytes.
    pub fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn docs(&self) -> &DocTable {
        &self.docs
    }

    pub(crate) fn fst(&self) -> &fst::Map<Slice> {
        &self.fst
    }

    /// Where the key of the document at `ordinal` lies in the file.
    fn key_range(&self, ordinal: u32) -> Result<Range<usize>, IndexError> {
        let bytes = self.backing.bytes();
        let i = ordinal as usize;
        if i >= self.docs.len() as usize {
            return Err(IndexError::Invalid(format!("no document at ordinal {ordinal}")));
        }
        let at = |i: usize| {
            let o = self.key_offsets.start + 8 * i;
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[o..o + 8]);
            u64::from_le_bytes(b) as usize
        };
        // The offsets were checked on open: rising, within the key bytes.
        Ok(self.key_bytes.start + at(i)..self.key_bytes.start + at(i + 1))
    }

    /// Reads the first byte of the keys of `ordinals` (as many as fit a small buffer), their
    /// offsets first and then the bytes, each pass with loads that do not wait on one another:
    /// so that the keys' cache misses overlap instead of coming one after another when
    /// [`Segment::key`] reads them. Returns a value made of the bytes read, for the caller to
    /// pass to [`std::hint::black_box`].
    pub(crate) fn touch_keys(&self, ordinals: &[u32]) -> u8 {
        let bytes = self.backing.bytes();
        let mut starts = [0usize; 64];
        let mut n = 0;
        for &o in ordinals.iter().take(starts.len()) {
            if let Ok(r) = self.key_range(o) {
                starts[n] = r.start;
                n += 1;
            }
        }
        starts[..n].iter().fold(0u8, |acc, &s| acc ^ bytes.get(s).copied().unwrap_or(0))
    }

    /// The key of the document at `ordinal`.
    pub(crate) fn key(&self, ordinal: u32) -> Result<&str, IndexError> {
        let bytes = self.backing.bytes();
        let r = self.key_range(ordinal)?;
        let a = r.start - self.key_bytes.start;
        let raw = &bytes[r];
        std::str::from_utf8(raw).map_err(|_| {
            IndexError::corrupt(&self.path, (self.key_bytes.start + a) as u64, "a document key is not UTF-8")
        })
    }

    fn block(&self, offset: u64) -> Result<&[u8], IndexError> {
        let bytes = &self.backing.bytes()[self.postings.clone()];
        usize::try_from(offset)
            .ok()
            .and_then(|o| bytes.get(o..))
            .filter(|b| !b.is_empty())
            .ok_or_else(|| IndexError::corrupt(&self.path, self.postings.end as u64, "term points past the postings"))
    }

    fn block_error(&self, offset: u64, e: BlockError) -> IndexError {
        let at = self.postings.start as u64 + offset + e.at as u64;
        IndexError::corrupt(&self.path, at, e.reason)
    }

    /// The term block at `offset` (a value of the term dictionary), opened.
    pub(crate) fn term_block_at(&self, offset: u64) -> Result<TermBlock<'_>, IndexError> {
        let block = self.block(offset)?;
        TermBlock::open(block, self.docs.len()).map_err(|e| self.block_error(offset, e))
    }

    /// Appends the postings of the term block at `offset` to `out` (see
    /// [`TermBlock::append_to`]); `first` empties `out` to hold them, with positions if the
    /// term has them; otherwise the term must agree with what `out` holds.
    pub(crate) fn append_postings_at(&self, offset: u64, base: u32, out: &mut Postings, first: bool) -> Result<(), IndexError> {
        let t = self.term_block_at(offset)?;
        if first {
            out.reset(t.has_positions());
        } else if t.has_positions() != out.has_positions() {
            return Err(IndexError::corrupt(&self.path, self.postings.start as u64 + offset, "a term with and without positions"));
        }
        t.append_to(self.docs.lengths(), base, out).map_err(|e| self.block_error(offset, e))
    }

    /// A postings error of the term block at `offset` as an index error.
    pub(crate) fn postings_error(&self, offset: u64, e: BlockError) -> IndexError {
        self.block_error(offset, e)
    }

    /// How many documents of the term block at `offset` hold its term, and (of a stem term)
    /// how many of them also hold the word the stem spells (see `Postings::shared`).
    pub(crate) fn doc_freq_at(&self, offset: u64) -> Result<(u32, u32), IndexError> {
        let block = self.block(offset)?;
        block_doc_count(block, self.docs.len()).map_err(|e| self.block_error(offset, e))
    }

    /// Where `term`'s block is, if this segment holds the term: found by the term table,
    /// confirmed by the term's bytes before its block (the dictionary's answer for every
    /// segment the writer made; tests compare the two).
    pub(crate) fn term_offset(&self, term: &str) -> Option<u64> {
        self.table_lookup(term.as_bytes())
    }

    /// Reads the slot where a lookup of a term of hash `hash` starts (see
    /// [`Segment::touch_term_block`]). Returns a byte of it, for [`std::hint::black_box`].
    pub(crate) fn touch_slot(&self, hash: u64) -> u8 {
        table::slot_at(&self.backing.bytes()[self.table.clone()], hash as usize).unwrap_or(0) as u8
    }

    /// Reads the byte before the block of the first slot matching `hash` from where a lookup
    /// starts (the term's count of bytes, in the cache line of its block's start, most
    /// often). With [`Segment::touch_slot`], in passes over several segments whose loads do
    /// not wait on one another, the cache misses of finding a term in each segment overlap
    /// instead of coming one after another. Returns the byte, for [`std::hint::black_box`].
    pub(crate) fn touch_term_block(&self, hash: u64) -> u8 {
        let bytes = self.backing.bytes();
        let postings = &bytes[self.postings.clone()];
        table::first_match(&bytes[self.table.clone()], hash)
            .and_then(|o| usize::try_from(o).ok()?.checked_sub(1))
            .and_then(|a| postings.get(a).copied())
            .unwrap_or(0)
    }

    fn table_lookup(&self, term: &[u8]) -> Option<u64> {
        let bytes = self.backing.bytes();
        table::lookup(&bytes[self.table.clone()], &bytes[self.postings.clone()], term)
    }
}
