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
/// length codes; 6: pair terms of adjacent words with a stop word, `index/pairs.rs`). A segment
/// of another format is refused, and the index, a projection, is rebuilt.
pub(crate) const FORMAT_VERSION: u16 = 6;
/// Header size.
pub(crate) const HEADER_SIZE_BYTES: usize = 32;
/// Footer size.
pub(crate) const FOOTER_SIZE_BYTES: usize = 72;

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
        f[32..40].copy_from_slice(&self.fst_offset.to_le_bytes());
        f[40..44].copy_from_slice(&self.doc_count.to_le_bytes());
        f[44..48].copy_from_slice(&self.term_count.to_le_bytes());
        f[48..56].copy_from_slice(&self.token_count.to_le_bytes());
        f[56..60].copy_from_slice(&self.body_crc.to_le_bytes());
        let crc = crc32fast::hash(&f[0..60]);
        f[60..64].copy_from_slice(&crc.to_le_bytes());
        f[64..72].copy_from_slice(FOOTER_MAGIC);
        f
    }

    /// Decodes a footer; `Err` names the byte within the footer and the reason.
    pub(crate) fn decode(f: &[u8; FOOTER_SIZE_BYTES]) -> Result<Footer, (usize, &'static str)> {
        if &f[64..72] != FOOTER_MAGIC {
            return Err((64, "footer magic missing (file truncated or not an index segment)"));
        }
        let u64_at = |o: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&f[o..o + 8]);
            u64::from_le_bytes(b)
        };
        let u32_at = |o: usize| u32::from_le_bytes([f[o], f[o + 1], f[o + 2], f[o + 3]]);
        if crc32fast::hash(&f[0..60]) != u32_at(60) {
            return Err((60, "footer CRC mismatch"));
        }
        Ok(Footer {
            docs_offset: u64_at(0),
            strings_offset: u64_at(8),
            keys_offset: u64_at(16),
            postings_offset: u64_at(24),
            fst_offset: u64_at(32),
            doc_count: u32_at(40),
            term_count: u32_at(44),
            token_count: u64_at(48),
            body_crc: u32_at(56),
        })
    }
}
