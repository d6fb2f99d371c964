//! Verbatim mirrors of agent logs: `raw/<source>/<path>.zst` holds the complete lines of a file
//! version as concatenated zstd frames (the raw lines of each journal record, in order), and
//! `<path>.tail` the bytes after the last complete line. Decompressing the one and appending
//! the other gives back the original bytes; line N of the mirror is line N of that version.
//!
//! A mirror is derived from the journal: it is written after the record is durable, and a
//! mirror that is shorter than its records say is rebuilt from them.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The mirror folder of a store.
#[derive(Clone, Debug)]
pub struct Mirrors {
    root: PathBuf,
}

/// An I/O error of the mirror file `path` that names it (a run's problems list it beside the
/// log file whose lines it holds: "No space left on device" alone would seem to be the log's).
fn naming(path: &Path) -> impl FnOnce(io::Error) -> io::Error + '_ {
    move |e| io::Error::new(e.kind(), format!("its mirror {}: {e}", path.display()))
}

impl Mirrors {
    /// Mirrors below `root` (`$ORIGIN_HOME/raw`).
    pub fn new(root: PathBuf) -> Mirrors {
        Mirrors { root }
    }

    /// The mirror's base path (add `.zst` / `.tail`) for a record's `mirror` field.
    pub fn base(&self, mirror: &str) -> PathBuf {
        // Mirror paths come from adapters as paths below an agent's folder; refuse anything
        // that could climb out of the mirror folder.
        let clean: PathBuf = Path::new(mirror)
            .components()
            .filter(|c| matches!(c, std::path::Component::Normal(_)))
            .collect();
        self.root.join(clean)
    }

    fn zst(&self, mirror: &str) -> PathBuf {
        let mut p = self.base(mirror).into_os_string();
        p.push(".zst");
        PathBuf::from(p)
    }

    fn tail(&self, mirror: &str) -> PathBuf {
        let mut p = self.base(mirror).into_os_string();
        p.push(".tail");
        PathBuf::from(p)
    }

    /// Current size of the `.zst` file (0 if missing).
    pub fn size(&self, mirror: &str) -> u64 {
        fs::metadata(self.zst(mirror)).map(|m| m.len()).unwrap_or(0)
    }

    /// Writes `frames` at `at` (where the mirror's records so far end), cutting anything beyond.
    pub fn write_at(&self, mirror: &str, at: u64, frames: &[u8]) -> io::Result<()> {
        let path = self.zst(mirror);
        let write = || -> io::Result<()> {
            if let Some(dir) = path.parent() {
                fs::create_dir_all(dir)?;
            }
            let f = OpenOptions::new().create(true).write(true).truncate(false).open(&path)?;
            f.set_len(at)?;
            f.write_all_at(frames, at)
        };
        write().map_err(naming(&path))
    }

    /// Replaces the `.tail` file (removes it when `tail` is empty), unless it holds `tail`
    /// already (a run with nothing new wrote it again at every run).
    pub fn write_tail(&self, mirror: &str, tail: &[u8]) -> io::Result<()> {
        if !tail.is_empty()
            && self.tail_meta(mirror).is_some_and(|m| m.len() == tail.len() as u64)
            && fs::read(self.tail(mirror)).is_ok_and(|held| held == tail)
        {
            return Ok(());
        }
        let mut once = Some(tail);
        self.write_tail_each(mirror, &mut || Ok(once.take().filter(|t| !t.is_empty()).map(<[u8]>::to_vec)))
    }

    /// The `.tail` file's metadata, if there is one.
    pub fn tail_meta(&self, mirror: &str) -> Option<fs::Metadata> {
        fs::metadata(self.tail(mirror)).ok().filter(|m| m.is_file())
    }

    /// [`Mirrors::write_tail`] of bytes handed over a piece at a time by `next` (`None` when
    /// there are no more): a last line of hundreds of megabytes still being written is never
    /// held whole. No piece at all removes the `.tail`.
    pub fn write_tail_each(&self, mirror: &str, next: &mut dyn FnMut() -> io::Result<Option<Vec<u8>>>) -> io::Result<()> {
        let path = self.tail(mirror);
        let tmp = path.with_extension("tail.tmp");
        let Some(first) = next().map_err(naming(&path))? else {
            // A tail half written by a run that was stopped goes too (it may be hundreds of
            // megabytes).
            for p in [&tmp, &path] {
                match fs::remove_file(p) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(naming(p)(e)),
                    _ => {}
                }
            }
            return Ok(());
        };
        let mut write = || -> io::Result<()> {
            if let Some(dir) = path.parent() {
                fs::create_dir_all(dir)?;
            }
            let mut f = File::create(&tmp)?;
            f.write_all(&first)?;
            while let Some(piece) = next()? {
                f.write_all(&piece)?;
            }
            drop(f);
            fs::rename(&tmp, &path)
        };
        write().map_err(|e| {
            // A tail half written is no use to anyone (left there, the next write replaces it).
            fs::remove_file(&tmp).ok();
            naming(&path)(e)
        })
    }

    /// At most the first `max` bytes of the mirror's `.zst`, decompressed (its complete lines).
    pub fn read_head(&self, mirror: &str, max: u64) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        zstd::Decoder::new(File::open(self.zst(mirror))?)?.take(max).read_to_end(&mut out)?;
        Ok(out)
    }

    /// The mirror's `.zst` bytes `from..from + len`, decompressed (those before `from` decoded
    /// and passed over, never held); fewer if it ends first.
    pub fn read_range(&self, mirror: &str, from: u64, len: u64) -> io::Result<Vec<u8>> {
        let mut decoded = zstd::Decoder::new(File::open(self.zst(mirror))?)?;
        io::copy(&mut (&mut decoded).take(from), &mut io::sink())?;
        let mut out = Vec::new();
        decoded.take(len).read_to_end(&mut out)?;
        Ok(out)
    }

    /// [`Mirrors::read_range`] handed to `each` a piece at a time (at most 1 MiB), never held
    /// whole.
    pub fn read_range_each(&self, mirror: &str, from: u64, len: u64, each: &mut dyn FnMut(&[u8])) -> io::Result<()> {
        let mut decoded = zstd::Decoder::new(File::open(self.zst(mirror))?)?;
        io::copy(&mut (&mut decoded).take(from), &mut io::sink())?;
        let mut rest = (&mut decoded).take(len);
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = rest.read(&mut buf)?;
            if n == 0 {
                return Ok(());
            }
            each(&buf[..n]);
        }
    }

    /// The mirror's bytes: the `.zst` decompressed, then the `.tail`.
    pub fn read(&self, mirror: &str) -> io::Result<Vec<u8>> {
        let mut out = zstd::decode_all(File::open(self.zst(mirror))?)?;
        match fs::read(self.tail(mirror)) {
            Ok(t) => out.extend_from_slice(&t),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        Ok(out)
    }

    /// The mirror's `.zst` path as shown to people (`mirror_file` in `sources`).
    pub fn display_path(&self, mirror: &str) -> PathBuf {
        self.base(mirror)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// A tail written in pieces is their bytes in order; an empty tail removes it, and a tail
    /// half written by a run that was stopped (`.tail.tmp`) with it.
    #[test]
    fn a_tail_is_written_in_pieces_and_removed_with_what_a_stopped_run_left() {
        let dir = tempfile::tempdir().expect("tempdir");
        let m = Mirrors::new(dir.path().to_path_buf());
        let mut pieces = vec![b"ab".to_vec(), b"cd".to_vec(), b"e".to_vec()].into_iter();
        m.write_tail_each("claude-code/p/s.jsonl", &mut || Ok(pieces.next())).expect("tail");
        let tail = m.tail("claude-code/p/s.jsonl");
        assert_eq!(fs::read(&tail).expect("tail"), b"abcde");
        let tmp = tail.with_extension("tail.tmp");
        fs::write(&tmp, b"half of a tail").expect("left by a stopped run");
        m.write_tail("claude-code/p/s.jsonl", b"").expect("no tail");
        assert!(!tail.exists() && !tmp.exists());
        m.write_tail("claude-code/p/s.jsonl", b"").expect("nothing to remove");
        // The same tail again is not written again (the file stays the one written); another
        // of the same length is.
        use std::os::unix::fs::MetadataExt;
        m.write_tail("claude-code/p/s.jsonl", b"xyz").expect("tail");
        let inode = fs::metadata(&tail).expect("tail").ino();
        m.write_tail("claude-code/p/s.jsonl", b"xyz").expect("the same tail");
        assert_eq!(fs::metadata(&tail).expect("tail").ino(), inode, "not written again");
        m.write_tail("claude-code/p/s.jsonl", b"xyw").expect("another tail");
        assert_eq!(fs::read(&tail).expect("tail"), b"xyw");
    }

    /// A range of a mirror handed over in pieces is the range read whole, across frames and
    /// pieces of 1 MiB; past the end, what there is.
    #[test]
    fn a_range_read_in_pieces_is_the_range() {
        let dir = tempfile::tempdir().expect("tempdir");
        let m = Mirrors::new(dir.path().to_path_buf());
        let bytes: Vec<u8> = (0..3_500_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut at = 0;
        for part in [&bytes[..10], &bytes[10..2_000_000], &bytes[2_000_000..]] {
            let frame = zstd::encode_all(part, 1).expect("frame");
            m.write_at("zcode/s.jsonl", at, &frame).expect("write");
            at += frame.len() as u64;
        }
        for (from, len) in [(0, 5), (3, 1_048_580), (9, 3_000_000), (1_999_999, 2), (3_400_000, 500_000), (4_000_000, 10)] {
            let mut got = Vec::new();
            m.read_range_each("zcode/s.jsonl", from, len, &mut |b| {
                assert!(b.len() <= 1 << 20);
                got.extend_from_slice(b);
            })
            .expect("read");
            assert_eq!(got, m.read_range("zcode/s.jsonl", from, len).expect("read whole"), "{from} {len}");
            let end = (from + len).min(bytes.len() as u64) as usize;
            assert_eq!(got, bytes[(from as usize).min(end)..end], "{from} {len}");
        }
    }
}
