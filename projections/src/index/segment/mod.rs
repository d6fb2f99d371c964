//! Immutable index segments: the byte layout (FORMAT.md, "Segment file"), an encoder, a
//! reader over memory-mapped or owned bytes, and a writer that puts a file in place durably.

pub(crate) mod encoder;
pub(crate) mod reader;
pub(crate) mod writer;

pub use reader::Segment;

/// First bytes of every segment file.
pub(crate) const MAGIC: &[u8; 8] = b"ORGNINDX";
/// Last bytes of every segment file.
pub(crate) const FOOTER_MAGIC: &[u8; 8] = b"ORGNIEND";
/// The segment format this build writes and reads (2: term blocks in blocks of 128 documents
/// with a directory of skip and score bounds; 3: a word that is its own stem is not written in
/// its stem term, which counts the documents it shares with the word instead; 4: blocks'
/// score bounds are of one-byte length codes, as scores are; 5: each block stores its documents'
/// length codes; 6: pair terms of adjacent words with a stop word, `index/pairs.rs`; 7: a
/// term table beside the dictionary, each term's bytes before its block). A segment of another
/// format is refused, and the index, a projection, is rebuilt.
pub(crate) const FORMAT_VERSION: u16 = 7;
/// Header size.
pub(crate) const HEADER_SIZE_BYTES: usize = 32;
/// Footer size.
pub(crate) const FOOTER_SIZE_BYTES: usize = 80;
/// Where the footer keeps the CRC32 of every byte before it.
pub(crate) const FOOTER_BODY_CRC_AT: usize = 64;
/// Where the footer keeps its own CRC32 (of its bytes before this field).
pub(crate) const FOOTER_CRC_AT: usize = 68;

/// The term table: one 8-byte slot per entry, open addressing by [`term_hash`], linear
/// probing upward (wrapping), so that finding a term costs one or two cache lines of the table
/// and the line before its block, where the writer put its bytes, instead of a walk of the
/// dictionary's nodes (about as much time as the rest of a two-character Chinese query as
/// built, with caches emptied).
pub(crate) mod table {
    /// Bytes per slot.
    pub(crate) const SLOT_SIZE_BYTES: usize = 8;
    /// Bits of a slot holding its block's offset + 1 (0: an empty slot).
    const OFFSET_BITS: u32 = 40;
    const OFFSET_MASK: u64 = (1 << OFFSET_BITS) - 1;

    /// The hash a term is placed by: XXH3-64 (seed 0) of its bytes.
    pub(crate) fn term_hash(term: &[u8]) -> u64 {
        xxhash_rust::xxh3::xxh3_64(term)
    }

    /// Slots of the table of a segment of `terms` terms: the smallest power of two holding
    /// them at most three quarters full, with one slot empty at least. (In `u64`: for any
    /// `u32` count, on any target; a reader compares it with the section's size.)
    pub(crate) fn slot_count(terms: u32) -> u64 {
        let n = u64::from(terms);
        (n + n.div_ceil(3) + 1).next_power_of_two()
    }

    /// The slot of a term of hash `hash` whose block starts at `offset` in the postings.
    pub(crate) fn slot(hash: u64, offset: u64) -> u64 {
        debug_assert!(offset < OFFSET_MASK);
        (hash & !OFFSET_MASK) | (offset + 1)
    }

    /// The block offset of a slot, if the slot is not empty and its hash bits are `hash`'s.
    #[inline]
    pub(crate) fn offset_if(slot: u64, hash: u64) -> Option<u64> {
        if (slot ^ hash) & !OFFSET_MASK == 0 { offset(slot) } else { None }
    }

    /// The block offset of a slot, if it holds one (an empty slot is 0; a slot whose offset
    /// bits are 0 and whose hash bits are not is malformed, refused on open).
    pub(crate) fn offset(slot: u64) -> Option<u64> {
        (slot & OFFSET_MASK).checked_sub(1)
    }

    /// Slot `i` of the encoded `slots`, its number taken modulo their count (a power of two,
    /// checked on open); `None` if there are none.
    pub(crate) fn slot_at(slots: &[u8], i: usize) -> Option<u64> {
        let n = slots.len() / SLOT_SIZE_BYTES;
        let at = (i & n.checked_sub(1)?) * SLOT_SIZE_BYTES;
        let mut b = [0u8; 8];
        b.copy_from_slice(&slots[at..at + SLOT_SIZE_BYTES]);
        Some(u64::from_le_bytes(b))
    }

    /// The block of `term` in `postings`, found through the encoded `slots`: the walk starts
    /// at the term's slot and goes up until an empty slot; a slot whose hash bits are the
    /// term's and whose block `postings` precedes with the term's bytes and their count is
    /// the term's. At most one walk around the table, whatever the bytes hold.
    pub(crate) fn lookup(slots: &[u8], postings: &[u8], term: &[u8]) -> Option<u64> {
        let hash = term_hash(term);
        for i in 0..slots.len() / SLOT_SIZE_BYTES {
            let slot = slot_at(slots, (hash as usize).wrapping_add(i))?;
            if slot == 0 {
                return None;
            }
            if let Some(offset) = offset_if(slot, hash)
                && stored_term(postings, offset) == Some(term)
            {
                return Some(offset);
            }
        }
        None
    }

    /// The block offset of the first of the first four slots of a walk for `hash` whose hash
    /// bits match, unconfirmed (what a read-ahead touches; a lookup confirms).
    pub(crate) fn first_match(slots: &[u8], hash: u64) -> Option<u64> {
        for i in 0..4 {
            let slot = slot_at(slots, (hash as usize).wrapping_add(i))?;
            if slot == 0 {
                return None;
            }
            if let Some(offset) = offset_if(slot, hash) {
                return Some(offset);
            }
        }
        None
    }

    /// The term bytes the writer put before the block at `offset` in `postings` (their count
    /// in the byte just before the block, the bytes before that), if they lie within
    /// `postings`.
    pub(crate) fn stored_term(postings: &[u8], offset: u64) -> Option<&[u8]> {
        let at = usize::try_from(offset).ok()?;
        let len = usize::from(*postings.get(at.checked_sub(1)?)?);
        postings.get(at.checked_sub(1 + len)?..at - 1)
    }

    /// The table of the given (hash, block offset) pairs, one per term, encoded; refused if
    /// the terms are more than a footer counts or the table more than this target addresses.
    pub(crate) fn encode(entries: &[(u64, u64)], out: &mut Vec<u8>) -> std::io::Result<()> {
        let too_many = || std::io::Error::other(format!("{} terms are more than a segment holds", entries.len()));
        let count = u32::try_from(entries.len()).map_err(|_| too_many())?;
        let n = usize::try_from(slot_count(count)).map_err(|_| too_many())?;
        let mask = n - 1;
        let mut slots = vec![0u64; n];
        for &(hash, offset) in entries {
            let mut i = hash as usize & mask;
            while slots[i] != 0 {
                i = (i + 1) & mask;
            }
            slots[i] = slot(hash, offset);
        }
        out.reserve(n * SLOT_SIZE_BYTES);
        for s in slots {
            out.extend_from_slice(&s.to_le_bytes());
        }
        Ok(())
    }
}

/// A segment's number within its index; also its file name.
pub type SegmentId = u64;

/// The file name of segment `id`.
pub(crate) fn file_name(id: SegmentId) -> String {
    format!("{id:020}.segment")
}

/// The header (32 bytes): magic, version, header size, segment id, CRC of bytes 0..28.
pub(crate) fn encode_header(id: SegmentId) -> [u8; HEADER_SIZE_BYTES] {
    let mut h = [0u8; HEADER_SIZE_BYTES];
    h[0..8].copy_from_slice(MAGIC);
    h[8..10].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&(HEADER_SIZE_BYTES as u32).to_le_bytes());
    h[16..24].copy_from_slice(&id.to_le_bytes());
    let crc = crc32fast::hash(&h[0..28]);
    h[28..32].copy_from_slice(&crc.to_le_bytes());
    h
}

/// What the footer says about the sections before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Footer {
    pub docs_offset: u64,
    pub strings_offset: u64,
    pub keys_offset: u64,
    pub postings_offset: u64,
    pub table_offset: u64,
    pub fst_offset: u64,
    pub doc_count: u32,
    pub term_count: u32,
    pub token_count: u64,
    /// CRC32 of every byte before the footer.
    pub body_crc: u32,
}

impl Footer {
    pub(crate) fn encode(&self) -> [u8; FOOTER_SIZE_BYTES] {
        let mut f = [0u8; FOOTER_SIZE_BYTES];
        f[0..8].copy_from_slice(&self.docs_offset.to_le_bytes());
        f[8..16].copy_from_slice(&self.strings_offset.to_le_bytes());
        f[16..24].copy_from_slice(&self.keys_offset.to_le_bytes());
        f[24..32].copy_from_slice(&self.postings_offset.to_le_bytes());
        f[32..40].copy_from_slice(&self.table_offset.to_le_bytes());
        f[40..48].copy_from_slice(&self.fst_offset.to_le_bytes());
        f[48..52].copy_from_slice(&self.doc_count.to_le_bytes());
        f[52..56].copy_from_slice(&self.term_count.to_le_bytes());
        f[56..64].copy_from_slice(&self.token_count.to_le_bytes());
        f[FOOTER_BODY_CRC_AT..FOOTER_BODY_CRC_AT + 4].copy_from_slice(&self.body_crc.to_le_bytes());
        let crc = crc32fast::hash(&f[0..FOOTER_CRC_AT]);
        f[FOOTER_CRC_AT..FOOTER_CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
        f[72..80].copy_from_slice(FOOTER_MAGIC);
        f
    }

    /// Decodes a footer; `Err` names the byte within the footer and the reason.
    pub(crate) fn decode(f: &[u8; FOOTER_SIZE_BYTES]) -> Result<Footer, (usize, &'static str)> {
        if &f[72..80] != FOOTER_MAGIC {
            return Err((72, "footer magic missing (file truncated or not an index segment)"));
        }
        let u64_at = |o: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&f[o..o + 8]);
            u64::from_le_bytes(b)
        };
        let u32_at = |o: usize| u32::from_le_bytes([f[o], f[o + 1], f[o + 2], f[o + 3]]);
        if crc32fast::hash(&f[0..FOOTER_CRC_AT]) != u32_at(FOOTER_CRC_AT) {
            return Err((FOOTER_CRC_AT, "footer CRC mismatch"));
        }
        Ok(Footer {
            docs_offset: u64_at(0),
            strings_offset: u64_at(8),
            keys_offset: u64_at(16),
            postings_offset: u64_at(24),
            table_offset: u64_at(32),
            fst_offset: u64_at(40),
            doc_count: u32_at(48),
            term_count: u32_at(52),
            token_count: u64_at(56),
            body_crc: u32_at(FOOTER_BODY_CRC_AT),
        })
    }
}
