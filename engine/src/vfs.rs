//! File access behind a small trait, so tests can inject faults (see `sim`).
//!
//! The journal touches the file system only through [`Vfs`] and [`VfsFile`]. [`OsFs`] is the
//! real implementation: positional reads and writes, `fdatasync`, `flock` locks, `mmap`.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io;
use std::ops::Deref;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

/// How a lock is held: shared by readers, exclusive by the one writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockMode {
    /// Readers: many at once, never while a writer holds the lock.
    Shared,
    /// The writer: alone.
    Exclusive,
}

/// A held lock; dropping it releases the lock.
pub trait LockGuard: Send {}

/// A lock file kept open and locked and unlocked many times (one open file description):
/// cheaper than [`Vfs::lock`] on a hot path. Callers serialise their own use of one handle.
pub trait LockFile: Send + Sync {
    /// Blocks until the lock is held in `mode`.
    fn lock(&self, mode: LockMode) -> io::Result<()>;
    /// Releases the lock.
    fn unlock(&self) -> io::Result<()>;
}

/// A file system as the journal sees it.
pub trait Vfs: Send + Sync + fmt::Debug {
    /// Creates a directory and its parents.
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    /// Names of the entries in a directory (not sorted).
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>>;
    /// True if the path exists.
    fn exists(&self, path: &Path) -> io::Result<bool>;
    /// Opens an existing file for reading only.
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn VfsFile>>;
    /// Opens an existing file for reading and writing.
    fn open_rw(&self, path: &Path) -> io::Result<Arc<dyn VfsFile>>;
    /// Creates a new file for reading and writing; fails if it exists.
    fn create_new(&self, path: &Path) -> io::Result<Arc<dyn VfsFile>>;
    /// Removes a file.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Renames a file, replacing the target.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Makes the directory's entries (creations, renames, removals) durable.
    fn sync_dir(&self, path: &Path) -> io::Result<()>;
    /// Takes an advisory lock on `path` (created if missing), blocking until granted.
    /// Locks taken through separate calls conflict with each other, in one process or many.
    fn lock(&self, path: &Path, mode: LockMode) -> io::Result<Box<dyn LockGuard>>;
    /// Opens `path` (created if missing) as a reusable [`LockFile`]. Handles opened by
    /// separate calls conflict with each other like separate [`Vfs::lock`] calls do.
    fn open_lock(&self, path: &Path) -> io::Result<Box<dyn LockFile>>;
    /// Takes an exclusive lock on `path` (created if missing) as [`Vfs::lock`] does, if no
    /// one holds it now; `None` if someone does.
    fn try_lock(&self, path: &Path) -> io::Result<Option<Box<dyn LockGuard>>>;
    /// Removes a file, or a directory and everything in it.
    fn remove_all(&self, path: &Path) -> io::Result<()>;
}

/// An open file.
pub trait VfsFile: Send + Sync {
    /// Current length in bytes.
    fn len(&self) -> io::Result<u64>;
    /// Reads up to `buf.len()` bytes at `pos`; returns how many were read (0 at end of file).
    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize>;
    /// Writes all of `buf` at `pos`.
    fn write_all_at(&self, buf: &[u8], pos: u64) -> io::Result<()>;
    /// `fdatasync`: the file's data (and the length needed to read it) reach the disk.
    fn sync_data(&self) -> io::Result<()>;
    /// Sets the length, truncating or extending with zeros.
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// A read-only view of the whole file as it is now. Callers never access bytes that may be
    /// truncated later (see ARCHITECTURE.md, invariants), which is what makes the map safe.
    fn map(&self) -> io::Result<Mapped>;

    /// Reads exactly `buf.len()` bytes at `pos`.
    fn read_exact_at(&self, buf: &mut [u8], mut pos: u64) -> io::Result<()> {
        let mut done = 0;
        while done < buf.len() {
            let n = self.read_at(&mut buf[done..], pos)?;
            if n == 0 {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "file ended early"));
            }
            done += n;
            pos += n as u64;
        }
        Ok(())
    }
}

/// Read-only bytes of a whole file: a memory map, or an owned copy (simulated backend).
pub enum Mapped {
    /// A memory map of the file.
    Map(memmap2::Mmap),
    /// A copy of the file's bytes.
    Owned(Arc<Vec<u8>>),
}

impl Deref for Mapped {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Mapped::Map(m) => m,
            Mapped::Owned(v) => v,
        }
    }
}

impl fmt::Debug for Mapped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Mapped({} bytes)", self.len())
    }
}

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct OsFs;

struct OsFile {
    file: File,
}

struct OsLock {
    _file: File,
}
impl LockGuard for OsLock {}

struct OsLockFile {
    file: File,
}

impl LockFile for OsLockFile {
    fn lock(&self, mode: LockMode) -> io::Result<()> {
        match mode {
            LockMode::Shared => self.file.lock_shared(),
            LockMode::Exclusive => self.file.lock(),
        }
    }
    fn unlock(&self) -> io::Result<()> {
        self.file.unlock()
    }
}

impl Vfs for OsFs {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir_all(path)
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(path)? {
            let entry = entry?;
            if let Some(name) = entry.file_name().to_str() {
                names.push(name.to_owned());
            }
        }
        Ok(names)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        path.try_exists()
    }
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn VfsFile>> {
        Ok(Arc::new(OsFile { file: File::open(path)? }))
    }
    fn open_rw(&self, path: &Path) -> io::Result<Arc<dyn VfsFile>> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        Ok(Arc::new(OsFile { file }))
    }
    fn create_new(&self, path: &Path) -> io::Result<Arc<dyn VfsFile>> {
        let file = OpenOptions::new().read(true).write(true).create_new(true).open(path)?;
        Ok(Arc::new(OsFile { file }))
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        File::open(path)?.sync_all()
    }
    fn lock(&self, path: &Path, mode: LockMode) -> io::Result<Box<dyn LockGuard>> {
        // A fresh open file description per lock: flock locks on separate descriptions
        // conflict even inside one process, which is what the journal relies on.
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
        match mode {
            LockMode::Shared => file.lock_shared()?,
            LockMode::Exclusive => file.lock()?,
        }
        Ok(Box::new(OsLock { _file: file }))
    }
    fn open_lock(&self, path: &Path) -> io::Result<Box<dyn LockFile>> {
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
        Ok(Box::new(OsLockFile { file }))
    }
    fn try_lock(&self, path: &Path) -> io::Result<Option<Box<dyn LockGuard>>> {
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(Box::new(OsLock { _file: file }))),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(e),
        }
    }
    fn remove_all(&self, path: &Path) -> io::Result<()> {
        if std::fs::symlink_metadata(path)?.is_dir() { std::fs::remove_dir_all(path) } else { std::fs::remove_file(path) }
    }
}

impl VfsFile for OsFile {
    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }
    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
        loop {
            match self.file.read_at(buf, pos) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => return r,
            }
        }
    }
    fn write_all_at(&self, buf: &[u8], pos: u64) -> io::Result<()> {
        self.file.write_all_at(buf, pos)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.file.sync_data()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }
    fn map(&self) -> io::Result<Mapped> {
        if self.len()? == 0 {
            return Ok(Mapped::Owned(Arc::new(Vec::new())));
        }
        // SAFETY: the journal maps only sealed segments and the validated prefix of the active
        // one, and never truncates bytes below a validated frame end (torn-tail repair cuts
        // only bytes no reader has accepted). Snapshots and the text index's segments are
        // files written whole under a temporary name, synced and renamed into place, never
        // written again (ARCHITECTURE.md, invariants). So no mapped page a caller reads
        // disappears.
        #[allow(unsafe_code)]
        let map = unsafe { memmap2::Mmap::map(&self.file)? };
        Ok(Mapped::Map(map))
    }
}
