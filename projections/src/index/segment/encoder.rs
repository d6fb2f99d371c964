//! Encodes a segment into any `Write`: header, document rows, strings, keys, postings (each
//! term's bytes before its block), term table, term dictionary (fst), footer; a running CRC
//! covers everything before the footer.

use std::io::{self, Write};

use super::{FOOTER_SIZE_BYTES, Footer, HEADER_SIZE_BYTES, SegmentId, encode_header, table};
use crate::index::doc::DocTable;
use crate::index::postings::{Postings, encode_block};

/// Counts and checksums what passes through.
struct CrcWriter<W: Write> {
    inner: W,
    hasher: crc32fast::Hasher,
    written: u64,
}

impl<W: Write> CrcWriter<W> {
    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.inner.write_all(bytes)?;
        self.hasher.update(bytes);
        self.written += bytes.len() as u64;
        Ok(())
    }
}

/// A segment being encoded: created with its documents, fed terms in byte order, finished.
pub(crate) struct Encoder<'d, W: Write> {
    out: CrcWriter<W>,
    docs: &'d DocTable,
    fst: fst::MapBuilder<Vec<u8>>,
    /// Per term, its hash and its block's offset, for the term table.
    table: Vec<(u64, u64)>,
    block: Vec<u8>,
    last_term: Option<Vec<u8>>,
    postings_offset: u64,
    strings_offset: u64,
    keys_offset: u64,
    term_count: u32,
}

impl<'d, W: Write> Encoder<'d, W> {
    /// Writes the header, the document rows and the strings.
    pub(crate) fn new(w: W, id: SegmentId, docs: &'d DocTable) -> io::Result<Self> {
        let mut out = CrcWriter { inner: w, hasher: crc32fast::Hasher::new(), written: 0 };
        out.put(&encode_header(id))?;
        let mut bytes = Vec::new();
        docs.encode_rows(&mut bytes);
        out.put(&bytes)?;
        let strings_offset = out.written;
        bytes.clear();
        docs.encode_strings(&mut bytes);
        out.put(&bytes)?;
        let keys_offset = out.written;
        bytes.clear();
        docs.encode_keys(&mut bytes);
        out.put(&bytes)?;
        let postings_offset = out.written;
        Ok(Encoder {
            out,
            docs,
            fst: fst::MapBuilder::memory(),
            table: Vec::new(),
            block: Vec::new(),
            last_term: None,
            postings_offset,
            strings_offset,
            keys_offset,
            term_count: 0,
        })
    }

    /// Adds a term; terms come in strictly ascending byte order. The postings are checked
    /// against the documents before a byte is written.
    pub(crate) fn add_term(&mut self, term: &str, p: &Postings) -> io::Result<()> {
        assert!(self.last_term.as_deref().is_none_or(|last| last < term.as_bytes()), "terms ascend");
        assert!(!p.ordinals.is_empty());
        let lengths = self.docs.lengths();
        for (i, (&ord, &tf)) in p.ordinals.iter().zip(&p.tfs).enumerate() {
            let length = lengths[ord as usize];
            assert!(tf >= 1 && tf <= length, "term frequency within the document");
            if cfg!(debug_assertions) && p.has_positions() {
                // Checked where postings are made (they are read back from what was written,
                // or from a checked segment); again here in debug builds.
                let (count, last) = p.position_count_and_last(i);
                assert_eq!(count, tf);
                assert!(last < length);
            }
        }
        // A term block's directory keeps offsets within its positions as `u32` (its documents
        // part is far smaller: at most ten bytes a document). Only a term occurring billions
        // of times in one segment comes near; that segment is refused, not written wrong.
        if u32::try_from(p.positions.len()).is_err() {
            return Err(io::Error::other(format!("the positions of term {term:?} take {} bytes, over the 4 GiB a segment's term may hold", p.positions.len())));
        }
        // The term's bytes, then their length in one byte, then its block: a term found by the
        // table is confirmed by the bytes just before its block.
        // (Terms are at most 129 bytes: a word of `TERM_SIZE_BYTES_MAX`, or a stem term's
        // prefix and such a word's stem.)
        let Ok(len) = u8::try_from(term.len()) else {
            return Err(io::Error::other(format!("term {term:?} of {} bytes is over the 255 a segment holds", term.len())));
        };
        self.out.put(term.as_bytes())?;
        self.out.put(&[len])?;
        let value = self.out.written - self.postings_offset;
        self.table.push((table::term_hash(term.as_bytes()), value));
        self.block.clear();
        let avg = crate::index::bm25::avg_length(self.docs.token_count(), u64::from(self.docs.len()));
        encode_block(&mut self.block, p, lengths, self.docs.times(), avg);
        self.fst.insert(term.as_bytes(), value).map_err(io::Error::other)?;
        let block = std::mem::take(&mut self.block);
        self.out.put(&block)?;
        self.block = block;
        self.last_term = Some(term.as_bytes().to_vec());
        self.term_count += 1;
        Ok(())
    }

    /// Writes the term dictionary and the footer; returns the writer (not yet flushed).
    pub(crate) fn finish(mut self) -> io::Result<W> {
        let table_offset = self.out.written;
        let mut bytes = Vec::new();
        table::encode(&self.table, &mut bytes)?;
        self.out.put(&bytes)?;
        let fst_offset = self.out.written;
        let fst = self.fst.into_inner().map_err(io::Error::other)?;
        self.out.put(&fst)?;
        let footer = Footer {
            docs_offset: HEADER_SIZE_BYTES as u64,
            strings_offset: self.strings_offset,
            keys_offset: self.keys_offset,
            postings_offset: self.postings_offset,
            table_offset,
            fst_offset,
            doc_count: self.docs.len(),
            term_count: self.term_count,
            token_count: self.docs.token_count(),
            body_crc: self.out.hasher.clone().finalize(),
        };
        let bytes: [u8; FOOTER_SIZE_BYTES] = footer.encode();
        self.out.inner.write_all(&bytes)?;
        Ok(self.out.inner)
    }
}
