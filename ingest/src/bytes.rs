//! The bytes of a log file version as ingest reads them: a plain file read where asked, an
//! export held in memory, or a compressed log decoded as it is read.
//!
//! A compressed log (a cold Codex rollout) is decoded forward, never held whole: ingest reads
//! a version's first bytes, the byte before its cursor, then windows from the cursor on, each
//! starting at or after the line the one before ended inside of. So the decoder keeps the
//! first [`HEAD_BYTES`] decoded bytes and the bytes of its last read, decodes past anything
//! before a read, and starts again from the beginning only for a read behind both (the lines
//! a rewritten version kept are compared from its beginning). A first pass over the file gives
//! its decoded length and where its last newline is, so that asking whether a line ends
//! somewhere ahead decodes nothing again.

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Decoded bytes at a compressed log's beginning that are kept once read (the bytes the
/// cursors hash to tell a rewritten file from a grown one).
pub const HEAD_BYTES: u64 = 4096;
/// Bytes decoded per step of the first pass.
const SCAN_STEP_BYTES: usize = 1 << 20;

/// The bytes of a log file version.
pub enum Bytes {
    /// A plain file, with its length when opened.
    Disk(File, u64),
    /// Bytes made in memory (an export of a database's session).
    Mem(Vec<u8>),
    /// A compressed file, decoded as it is read.
    Zstd(Box<RefCell<Decoding>>),
}

/// A compressed log's decoder and what it keeps ([`Bytes::Zstd`]).
pub struct Decoding {
    path: PathBuf,
    /// Decoded length, found by the first pass.
    len: u64,
    /// Where the last newline of the decoded bytes is, if any.
    last_newline: Option<u64>,
    /// The first `HEAD_BYTES` decoded bytes (fewer in a shorter file).
    head: Vec<u8>,
    decoder: zstd::Decoder<'static, BufReader<File>>,
    /// Decoded bytes the decoder has handed out.
    at: u64,
    /// The bytes `kept_from..at`, those of the last read.
    kept: Vec<u8>,
    kept_from: u64,
}

impl Bytes {
    /// A compressed log at `path`, refused (`FileTooLarge`) when it decodes to more than
    /// `decoded_max` bytes. Its whole decoding is checked here: a frame that does not decode
    /// is an error now, not halfway through its lines.
    pub fn zstd(path: &Path, decoded_max: u64) -> io::Result<Bytes> {
        let mut decoder = zstd::Decoder::new(File::open(path)?)?;
        let (mut len, mut last_newline, mut head) = (0u64, None, Vec::new());
        let mut step = vec![0u8; SCAN_STEP_BYTES];
        loop {
            let n = decoder.read(&mut step)?;
            if n == 0 {
                break;
            }
            if let Some(i) = memchr::memrchr(b'\n', &step[..n]) {
                last_newline = Some(len + i as u64);
            }
            let want = (HEAD_BYTES as usize).saturating_sub(head.len()).min(n);
            head.extend_from_slice(&step[..want]);
            len += n as u64;
            if len > decoded_max {
                return Err(io::Error::new(io::ErrorKind::FileTooLarge, format!("decompresses to more than {decoded_max} bytes")));
            }
        }
        let decoder = zstd::Decoder::new(File::open(path)?)?;
        let d = Decoding { path: path.to_owned(), len, last_newline, head, decoder, at: 0, kept: Vec::new(), kept_from: 0 };
        Ok(Bytes::Zstd(Box::new(RefCell::new(d))))
    }

    /// The version's length (decoded, for a compressed log).
    pub fn len(&self) -> u64 {
        match self {
            Bytes::Disk(_, n) => *n,
            Bytes::Mem(v) => v.len() as u64,
            Bytes::Zstd(d) => d.borrow().len,
        }
    }

    /// `len` bytes at `pos` (fewer where the bytes end).
    pub fn read(&self, pos: u64, len: u64) -> io::Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.read_into(pos, len, &mut buf)?;
        Ok(buf)
    }

    /// Reads `len` bytes at `pos` into `buf` (reused: it grows, and is zeroed, only past its
    /// largest size so far); fewer where the bytes end.
    pub fn read_into(&self, pos: u64, len: u64, buf: &mut Vec<u8>) -> io::Result<()> {
        match self {
            Bytes::Disk(f, _) => {
                buf.resize(len as usize, 0);
                let mut done = 0;
                while done < buf.len() {
                    let n = f.read_at(&mut buf[done..], pos + done as u64)?;
                    if n == 0 {
                        // The file shrank while being read: what was read so far is still whole.
                        buf.truncate(done);
                        break;
                    }
                    done += n;
                }
                Ok(())
            }
            Bytes::Mem(v) => {
                let start = (pos as usize).min(v.len());
                let end = ((pos + len) as usize).min(v.len());
                buf.clear();
                buf.extend_from_slice(&v[start..end]);
                Ok(())
            }
            Bytes::Zstd(d) => d.borrow_mut().read_into(pos, len, buf),
        }
    }

    /// Whether a newline is among the bytes from `from` to `len` (read `step` bytes at a time
    /// where they are not known).
    pub fn newline_after(&self, mut from: u64, len: u64, step: u64) -> io::Result<bool> {
        if let Bytes::Zstd(d) = self {
            return Ok(d.borrow().last_newline.is_some_and(|at| at >= from && at < len));
        }
        while from < len {
            let w = self.read(from, (len - from).min(step))?;
            if w.is_empty() {
                return Ok(false);
            }
            if memchr::memchr(b'\n', &w).is_some() {
                return Ok(true);
            }
            from += w.len() as u64;
        }
        Ok(false)
    }
}

impl Decoding {
    fn read_into(&mut self, pos: u64, len: u64, buf: &mut Vec<u8>) -> io::Result<()> {
        buf.clear();
        let end = pos.saturating_add(len).min(self.len);
        if pos >= end {
            return Ok(());
        }
        if end <= self.head.len() as u64 {
            buf.extend_from_slice(&self.head[pos as usize..end as usize]);
            return Ok(());
        }
        if pos < self.kept_from {
            // Behind what is kept: decode again from the beginning.
            self.decoder = zstd::Decoder::new(File::open(&self.path)?)?;
            (self.at, self.kept_from) = (0, 0);
            self.kept.clear();
        }
        if pos < self.at {
            let from = (pos - self.kept_from) as usize;
            let to = (end.min(self.at) - self.kept_from) as usize;
            buf.extend_from_slice(&self.kept[from..to]);
        } else {
            let skipped = io::copy(&mut (&mut self.decoder).take(pos - self.at), &mut io::sink())?;
            self.at += skipped;
            if self.at < pos {
                // The file decodes shorter than its first pass found (replaced since).
                return Ok(());
            }
        }
        if end > self.at {
            let got = (&mut self.decoder).take(end - self.at).read_to_end(buf)?;
            self.at += got as u64;
            // What this read returned is kept (a later read starts within it or after it).
            self.kept.clear();
            self.kept.extend_from_slice(buf);
            self.kept_from = self.at - buf.len() as u64;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Lines of assorted lengths (some longer than a scan step), as a compressed log holds them.
    fn lines(lengths: &[usize], last_newline: bool) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, &n) in lengths.iter().enumerate() {
            out.extend((0..n).map(|j| b'a' + ((i * 7 + j) % 26) as u8));
            out.push(b'\n');
        }
        if !last_newline {
            out.pop();
        }
        out
    }

    fn compressed(dir: &tempfile::TempDir, bytes: &[u8]) -> PathBuf {
        let path = dir.path().join("log.jsonl.zst");
        std::fs::write(&path, zstd::encode_all(bytes, 1).expect("compress")).expect("write");
        path
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// Any sequence of reads (forward as ingest reads, and behind what is kept) gives the
        /// bytes of the decoded file; its length and newlines are the file's.
        #[test]
        fn reads_of_a_compressed_log_give_its_decoded_bytes(
            lengths in proptest::collection::vec(0usize..3_000_000, 1..6),
            last_newline in any::<bool>(),
            reads in proptest::collection::vec((0u64..13_000_000, 0u64..4_000_000), 1..12),
        ) {
            let plain = lines(&lengths, last_newline);
            let dir = tempfile::tempdir().expect("tempdir");
            let bytes = Bytes::zstd(&compressed(&dir, &plain), u64::MAX).expect("open");
            prop_assert_eq!(bytes.len(), plain.len() as u64);
            if let Some(last) = plain.iter().rposition(|&b| b == b'\n') {
                let last = last as u64;
                prop_assert!(bytes.newline_after(last, plain.len() as u64, 1 << 20).expect("newline"));
                prop_assert!(!bytes.newline_after(last + 1, plain.len() as u64, 1 << 20).expect("newline"));
                prop_assert!(!bytes.newline_after(0, last, 1 << 20).expect("newline") || plain[..last as usize].contains(&b'\n'));
            }
            let mut buf = vec![7u8; 3];
            for (pos, len) in reads {
                let pos = pos % (plain.len() as u64 + 2);
                bytes.read_into(pos, len, &mut buf).expect("read");
                let start = (pos as usize).min(plain.len());
                let end = (pos.saturating_add(len) as usize).min(plain.len());
                prop_assert_eq!(&buf[..], &plain[start..end], "read of {} at {}", len, pos);
                let found = bytes.newline_after(pos, plain.len() as u64, 1 << 20).expect("newline");
                prop_assert_eq!(found, plain[start..].contains(&b'\n'), "newline after {}", pos);
            }
        }
    }

    #[test]
    fn a_compressed_log_decoding_past_its_limit_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = compressed(&dir, &lines(&[100, 100], true));
        let Err(e) = Bytes::zstd(&path, 201) else { panic!("202 bytes accepted under a limit of 201") };
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        assert_eq!(Bytes::zstd(&path, 202).expect("at the limit").len(), 202);
    }
}
