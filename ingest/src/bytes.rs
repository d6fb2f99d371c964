//! The bytes of a log file version as ingest reads them: a plain file read where asked, an
//! export held in memory, or a compressed log decoded as it is read.
//!
//! A compressed log (a cold Codex rollout) is decoded forward, never held whole: ingest reads
//! a version's first bytes, the byte before its cursor, then windows from the cursor on, each
//! starting at or after the line the one before ended inside of. So the decoder keeps the
//! first [`HEAD_BYTES`] decoded bytes and the bytes of its last read, decodes past anything
//! before a read, and starts again from the beginning only for a read behind both (the lines
//! a rewritten version kept are compared from its beginning). A first pass over the file gives
//! its decoded length, where its last newline is (asking whether a line ends somewhere ahead
//! decodes nothing again) and the byte before the cursor (an unchanged log is decoded once).
//! Every decoding reads the file opened for the first pass, whatever its path names since; one
//! that finds it decoding otherwise (rewritten in place) fails, and so does every later read:
//! the log is skipped and said, and read again at a later run.

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::Path;

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
    /// The file opened once: every decoding reads the same file, even if its path is given to
    /// another meanwhile.
    file: File,
    /// Decoded length, found by the first pass.
    len: u64,
    /// Where the last newline of the decoded bytes is, if any.
    last_newline: Option<u64>,
    /// The first `HEAD_BYTES` decoded bytes (fewer in a shorter file).
    head: Vec<u8>,
    /// A byte the first pass was asked to keep, and where it is (the byte before a cursor).
    kept_byte: Option<(u64, u8)>,
    decoder: zstd::Decoder<'static, BufReader<File>>,
    /// Decoded bytes the decoder has handed out.
    at: u64,
    /// The bytes `kept_from..at`, those of the last read (`kept_from + kept.len() == at`).
    kept: Vec<u8>,
    kept_from: u64,
    /// A read failed, or the file decoded otherwise than in the first pass: every later read
    /// fails (the file is read again at a later run).
    broken: bool,
}

/// Opens a file the agents' folders hold, for reading, refusing anything but a regular file
/// (an error its caller says or passes over, as for a file that cannot be read): a pipe, a
/// socket or a device named like a log, a side file or a memory file is not read (opened
/// without waiting, as a pipe no one writes to would keep an open waiting for good, and a read
/// after it: every command of the store waited behind its ingest lock).
pub fn open_regular(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    if !f.metadata()?.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file (a pipe, a socket or a device): not read"));
    }
    Ok(f)
}

/// A decoder of `file` from its beginning (a handle of its own onto the same open file).
fn decoder_of(file: &File) -> io::Result<zstd::Decoder<'static, BufReader<File>>> {
    let mut f = file.try_clone()?;
    f.seek(SeekFrom::Start(0))?;
    zstd::Decoder::new(f)
}

impl Bytes {
    /// A compressed log at `path`, refused (`FileTooLarge`) when it decodes to more than
    /// `decoded_max` bytes; the byte at `keep` is kept for a later read (the byte before a
    /// cursor, read to see a grown file). Its whole decoding is checked here: a frame that
    /// does not decode is an error now, not halfway through its lines.
    pub fn zstd(path: &Path, decoded_max: u64, keep: Option<u64>) -> io::Result<Bytes> {
        let file = open_regular(path)?;
        let mut decoder = decoder_of(&file)?;
        let (mut len, mut last_newline, mut head, mut kept_byte) = (0u64, None, Vec::new(), None);
        let mut step = vec![0u8; SCAN_STEP_BYTES];
        loop {
            let n = decoder.read(&mut step)?;
            if n == 0 {
                break;
            }
            if let Some(i) = memchr::memrchr(b'\n', &step[..n]) {
                last_newline = Some(len + i as u64);
            }
            if let Some(k) = keep.filter(|k| (len..len + n as u64).contains(k)) {
                kept_byte = Some((k, step[(k - len) as usize]));
            }
            let want = (HEAD_BYTES as usize).saturating_sub(head.len()).min(n);
            head.extend_from_slice(&step[..want]);
            len += n as u64;
            if len > decoded_max {
                return Err(io::Error::new(io::ErrorKind::FileTooLarge, format!("decompresses to more than {decoded_max} bytes")));
            }
        }
        let decoder = decoder_of(&file)?;
        let d = Decoding { file, len, last_newline, head, kept_byte, decoder, at: 0, kept: Vec::new(), kept_from: 0, broken: false };
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

    /// The length now: of a plain file, as the file system says it is at this moment (it may
    /// have been cut, or grown, since it was opened); else [`Bytes::len`].
    pub fn len_now(&self) -> io::Result<u64> {
        match self {
            Bytes::Disk(f, _) => Ok(f.metadata()?.len()),
            _ => Ok(self.len()),
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
        if let Some((_, byte)) = self.kept_byte.filter(|&(at, _)| at == pos && end == pos + 1) {
            buf.push(byte);
            return Ok(());
        }
        if self.broken {
            return Err(io::Error::other("the compressed log changed while it was read"));
        }
        let read = self.decode_into(pos, end, buf);
        if read.is_err() {
            self.broken = true;
            buf.clear();
        }
        read
    }

    /// [`Decoding::read_into`] from the decoder: bytes `pos..end`, which the first pass found.
    fn decode_into(&mut self, pos: u64, end: u64, buf: &mut Vec<u8>) -> io::Result<()> {
        if pos < self.kept_from {
            // Behind what is kept: decode again from the beginning.
            self.decoder = decoder_of(&self.file)?;
            (self.at, self.kept_from) = (0, 0);
            self.kept.clear();
        }
        if pos < self.at {
            let from = (pos - self.kept_from) as usize;
            let to = (end.min(self.at) - self.kept_from) as usize;
            buf.extend_from_slice(&self.kept[from..to]);
        } else if pos > self.at {
            let skipped = io::copy(&mut (&mut self.decoder).take(pos - self.at), &mut io::sink())?;
            self.at += skipped;
            self.kept.clear();
            self.kept_from = self.at;
            if self.at < pos {
                return Err(io::Error::other("the compressed log decoded shorter than when it was first read: it changed while it was read"));
            }
        }
        if end > self.at {
            let want = end - self.at;
            let got = (&mut self.decoder).take(want).read_to_end(buf)? as u64;
            self.at += got;
            // What this read returned is kept (a later read starts within it or after it).
            self.kept.clear();
            self.kept.extend_from_slice(buf);
            self.kept_from = self.at - buf.len() as u64;
            if got < want {
                return Err(io::Error::other("the compressed log decoded shorter than when it was first read: it changed while it was read"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::path::PathBuf;

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
            let bytes = Bytes::zstd(&compressed(&dir, &plain), u64::MAX, None).expect("open");
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

    /// The byte before a cursor, kept by the first pass, is read without decoding again (an
    /// unchanged compressed log is decoded once).
    #[test]
    fn the_byte_kept_by_the_first_pass_is_read_without_decoding() {
        let dir = tempfile::tempdir().expect("tempdir");
        let plain = lines(&[9_000, 20, 30_000], true);
        let path = compressed(&dir, &plain);
        let last = plain.len() as u64 - 1;
        let bytes = Bytes::zstd(&path, u64::MAX, Some(last)).expect("open");
        assert_eq!(bytes.read(last, 1).expect("read"), b"\n");
        let Bytes::Zstd(d) = &bytes else { panic!("a compressed log") };
        assert_eq!(d.borrow().at, 0, "nothing decoded for it");
        assert_eq!(bytes.read(last - 5, 5).expect("read"), &plain[last as usize - 5..last as usize]);
        assert!(d.borrow().at > 0);
    }

    /// A compressed log read through the file opened at first: another file renamed over its
    /// path changes nothing; the file rewritten in place, shorter, fails the reads past its new
    /// end, and every read after, with an error, never a panic.
    #[test]
    fn a_compressed_log_changed_while_it_is_read_fails_its_reads_without_a_panic() {
        let dir = tempfile::tempdir().expect("tempdir");
        let plain = lines(&[1_500_000, 1_500_000, 10], true);
        let path = compressed(&dir, &plain);
        let bytes = Bytes::zstd(&path, u64::MAX, None).expect("open");
        assert_eq!(bytes.read(2_000_000, 100).expect("read"), &plain[2_000_000..2_000_100]);
        let other = dir.path().join("other.zst");
        std::fs::write(&other, zstd::encode_all(&b"x\n"[..], 1).expect("compress")).expect("write");
        std::fs::rename(&other, &path).expect("rename over it");
        assert_eq!(bytes.read(10_000, 100).expect("read behind: decoded again"), &plain[10_000..10_100]);

        let path = compressed(&dir, &plain);
        let bytes = Bytes::zstd(&path, u64::MAX, None).expect("open");
        assert_eq!(bytes.read(10_000, 100).expect("read"), &plain[10_000..10_100]);
        let shorter = zstd::encode_all(&plain[..1_000_000], 1).expect("compress");
        let mut f = std::fs::OpenOptions::new().write(true).truncate(true).open(&path).expect("open to write");
        std::io::Write::write_all(&mut f, &shorter).expect("rewrite in place");
        drop(f);
        assert!(bytes.read(0, 4_000_000).is_err(), "read behind what is kept: decoded again, shorter");
        assert!(bytes.read(2_000_000, 100).is_err(), "and every read after");
        assert_eq!(bytes.read(0, 10).expect("the first bytes are kept"), &plain[..10]);

        // A decoder that finds the file shorter while skipping ahead (as one reading a file
        // other than the first pass's would): that read fails, and so does every later one,
        // also one within what it skipped.
        let path = compressed(&dir, &plain);
        let bytes = Bytes::zstd(&path, u64::MAX, None).expect("open");
        let Bytes::Zstd(d) = &bytes else { panic!("a compressed log") };
        let shorter = dir.path().join("shorter.zst");
        std::fs::write(&shorter, zstd::encode_all(&plain[..1_000_000], 1).expect("compress")).expect("write");
        d.borrow_mut().decoder = zstd::Decoder::new(File::open(&shorter).expect("open")).expect("decoder");
        assert!(bytes.read(2_000_000, 100).is_err());
        assert!(bytes.read(500_000, 10).is_err());
    }

    #[test]
    fn a_compressed_log_decoding_past_its_limit_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = compressed(&dir, &lines(&[100, 100], true));
        let Err(e) = Bytes::zstd(&path, 201, None) else { panic!("202 bytes accepted under a limit of 201") };
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        assert_eq!(Bytes::zstd(&path, 202, None).expect("at the limit").len(), 202);
    }
}
