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
    /// [`LockFile::lock`], waiting at most `wait`: `Ok(false)` if another still held it then
    /// (nothing is held). A refusal is said at once, as [`LockFile::lock`] says it, and so is a
    /// try the file system failed.
    fn lock_within(&self, mode: LockMode, wait: std::time::Duration) -> io::Result<bool>;
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
    /// A lock needs only read access to its file (a store that cannot be written can still be
    /// read); where the file is missing from a read-only file system, no process can be
    /// writing and the lock is granted without one.
    fn lock(&self, path: &Path, mode: LockMode) -> io::Result<Box<dyn LockGuard>>;
    /// Opens `path` (created if missing) as a reusable [`LockFile`]. Handles opened by
    /// separate calls conflict with each other like separate [`Vfs::lock`] calls do. Where
    /// the file cannot be written, it is opened for reading, as a shared [`Vfs::lock`] is.
    fn open_lock(&self, path: &Path) -> io::Result<Box<dyn LockFile>>;
    /// Takes an exclusive lock on `path` (created if missing, opened as [`Vfs::lock`] opens
    /// it), if no one holds it now; `None` if someone does.
    fn try_lock(&self, path: &Path) -> io::Result<Option<Box<dyn LockGuard>>>;
    /// An exclusive lock on the directory `path` (`flock` of the folder), taken if no other
    /// holds it: `None` if another does.
    fn try_lock_dir(&self, path: &Path) -> io::Result<Option<Box<dyn LockGuard>>>;
    /// Whether another holds an exclusive lock on the file or folder `path` (a lock file, a
    /// held folder): looked at without making `path` or keeping a lock.
    fn is_held(&self, path: &Path) -> io::Result<bool>;
    /// Removes a file, or a directory and everything in it.
    fn remove_all(&self, path: &Path) -> io::Result<()>;
    /// Removes the directory `path` if it is empty (`rmdir(2)`): an error (`ENOTEMPTY`) if
    /// anything is in it, which is left as it is.
    fn remove_dir(&self, path: &Path) -> io::Result<()>;
    /// Whether this process may make and change files in the directory `path` (`faccessat(2)`
    /// with `W_OK` and the effective ids): `Ok` if it may; else the error that says why not (`EROFS` on a read-only
    /// file system, `EACCES` without write permission: [`is_read_only_error`]), or why it
    /// could not be told (not there). Nothing is written to find out.
    fn check_writable(&self, path: &Path) -> io::Result<()>;
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
    _file: Option<File>,
}
impl LockGuard for OsLock {}

/// A lock file kept open, as [`open_lock_file`] opened it.
struct OsLockFile {
    opened: LockOpened,
    path: std::path::PathBuf,
}

impl LockFile for OsLockFile {
    fn lock(&self, mode: LockMode) -> io::Result<()> {
        lock_saying_wait(&self.opened, mode, &self.path)
    }
    fn lock_within(&self, mode: LockMode, wait: std::time::Duration) -> io::Result<bool> {
        lock_polling(&self.opened, mode, &self.path, wait)
    }
    fn unlock(&self) -> io::Result<()> {
        self.opened.file.as_ref().map_or(Ok(()), File::unlock)
    }
}

/// A lock file as [`open_lock_file`] opened it.
struct LockOpened {
    /// The file; `None` when it is missing from a read-only file system.
    file: Option<File>,
    /// Why it could not be opened to write (an `errno` of [`is_read_only_error`]), when it
    /// was opened to read, or is missing from a read-only file system.
    refused: Option<i32>,
}

impl LockOpened {
    /// Takes the lock (blocking). A shared lock is granted on a file opened to read, and
    /// without one where none can be made (no one can be writing). A writer's exclusive lock is
    /// refused at once on a read-only file system (no writer can write there, and readers
    /// would wait on it), and where the file could be opened only to read, is taken if the file
    /// system allows it (a local one does: `flock` asks no more), else refused with why it could
    /// not be opened to write (an NFS client asks for a file open to write, and says `EBADF`).
    fn lock(&self, mode: LockMode) -> io::Result<()> {
        match (&self.file, mode) {
            (None, LockMode::Shared) => Ok(()),
            (Some(f), LockMode::Shared) => f.lock_shared(),
            (Some(f), LockMode::Exclusive) if self.refused != Some(libc::EROFS) => f.lock().map_err(|e| self.refusal_or(e)),
            (_, LockMode::Exclusive) => Err(self.refusal_or(io::Error::from_raw_os_error(libc::EROFS))),
        }
    }

    /// [`LockOpened::lock`] in `mode` without waiting: `Some(Ok(true))` if taken,
    /// `Some(Ok(false))` if another holds it, `Some(Err(..))` if the try failed (a file system
    /// that cannot say), `None` where [`LockOpened::lock`] answers at once anyway (a refusal).
    fn try_lock_in(&self, mode: LockMode) -> Option<io::Result<bool>> {
        let tried = match (&self.file, mode) {
            (None, LockMode::Shared) => return Some(Ok(true)),
            (Some(f), LockMode::Shared) => f.try_lock_shared(),
            (Some(f), LockMode::Exclusive) if self.refused != Some(libc::EROFS) => f.try_lock(),
            (_, LockMode::Exclusive) => return None,
        };
        Some(taken(tried).map_err(|e| self.refusal_or(e)))
    }

    /// [`LockOpened::lock`], exclusive, without waiting: `Ok(false)` if another holds it.
    fn try_lock(&self) -> io::Result<bool> {
        let Some(f) = self.file.as_ref().filter(|_| self.refused != Some(libc::EROFS)) else {
            return Err(self.refusal_or(io::Error::from_raw_os_error(libc::EROFS)));
        };
        taken(f.try_lock()).map_err(|e| self.refusal_or(e))
    }

    /// Why a writer's lock failed: the refusal to open the file to write, when it was opened
    /// to read (what the user can act on), else `e`.
    fn refusal_or(&self, e: io::Error) -> io::Error {
        self.refused.map_or(e, io::Error::from_raw_os_error)
    }
}

/// A lock tried without waiting, as a yes or no: `Ok(false)` if another holds it.
fn taken(tried: Result<(), std::fs::TryLockError>) -> io::Result<bool> {
    match tried {
        Ok(()) => Ok(true),
        Err(std::fs::TryLockError::WouldBlock) => Ok(false),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

/// How long a lock is waited for before what it waits for is said on stderr.
const LOCK_WAIT_NOTICE: std::time::Duration = std::time::Duration::from_secs(3);

/// Takes `opened`'s lock (of the file at `path`) in `mode`, waiting as long as it takes; once
/// it has waited [`LOCK_WAIT_NOTICE`], says on stderr what it waits for, and who holds it
/// where that can be told ([`lock_holders`]): a process stopped while it held a store's lock
/// (Ctrl-Z, a debugger) kept every other command waiting without a word. Uncontended, the lock
/// is taken at once, with nothing else done.
fn lock_saying_wait(opened: &LockOpened, mode: LockMode, path: &Path) -> io::Result<()> {
    match opened.try_lock_in(mode) {
        Some(Ok(true)) => return Ok(()),
        // A refusal: said by the lock at once; a try that could not tell: the lock, waiting.
        None | Some(Err(_)) => return opened.lock(mode),
        Some(Ok(false)) => {}
    }
    let taken = Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
    let notice = {
        let (taken, path) = (Arc::clone(&taken), path.to_path_buf());
        std::thread::Builder::new().name("origin-lock-wait".into()).spawn(move || {
            let (flag, cv) = &*taken;
            let held = flag.lock().unwrap_or_else(|p| p.into_inner());
            let (held, _) = cv.wait_timeout_while(held, LOCK_WAIT_NOTICE, |t| !*t).unwrap_or_else(|p| p.into_inner());
            if !*held {
                eprintln!("origin: waiting for {}: {}", path.display(), lock_holders(&path, true));
            }
        })
    };
    let got = opened.lock(mode);
    let (flag, cv) = &*taken;
    *flag.lock().unwrap_or_else(|p| p.into_inner()) = true;
    cv.notify_all();
    if let Ok(t) = notice {
        let _ = t.join();
    }
    got
}

/// A lock on `path` in `mode`, taken through `vfs` as [`Vfs::lock`] takes it: waiting as long
/// as another holds it (`wait` `None`, saying who after 3 s), or at most `wait`, tried every
/// 5 ms ([`LockFile::lock_within`]): `Ok(None)` if another still held it then. Dropping the
/// guard lets the lock go.
pub fn lock_within(vfs: &dyn Vfs, path: &Path, mode: LockMode, wait: Option<std::time::Duration>) -> io::Result<Option<Box<dyn Send>>> {
    let Some(wait) = wait else { return Ok(Some(Box::new(vfs.lock(path, mode)?))) };
    let file = vfs.open_lock(path)?;
    Ok(file.lock_within(mode, wait)?.then(|| Box::new(file) as Box<dyn Send>))
}

/// How often a lock waited for within a time ([`lock_polling`]) is tried.
const LOCK_POLL: std::time::Duration = std::time::Duration::from_millis(5);

/// [`lock_saying_wait`], waiting at most `wait`: the lock is tried every [`LOCK_POLL`] (a
/// blocking `flock` cannot be given up); `Ok(false)` if another held it all that time. Once it
/// has waited [`LOCK_WAIT_NOTICE`], what it waits for is said, as [`lock_saying_wait`] says it.
fn lock_polling(opened: &LockOpened, mode: LockMode, path: &Path, wait: std::time::Duration) -> io::Result<bool> {
    let start = std::time::Instant::now();
    let mut said = false;
    loop {
        match opened.try_lock_in(mode) {
            Some(Ok(true)) => return Ok(true),
            // A refusal: said by the lock at once (it does not wait).
            None => return opened.lock(mode).map(|()| true),
            // A try that failed: a wait for the lock might not end.
            Some(Err(e)) => return Err(e),
            Some(Ok(false)) => {}
        }
        let waited = start.elapsed();
        if waited >= wait {
            return Ok(false);
        }
        if !said && waited >= LOCK_WAIT_NOTICE {
            eprintln!("origin: waiting for {} (at most {} s): {}", path.display(), wait.as_secs(), lock_holders(path, false));
            said = true;
        }
        std::thread::sleep(LOCK_POLL.min(wait - waited));
    }
}

/// Who holds a lock on the file at `path`, in words: on Linux, from `/proc/locks`, each
/// process's id, its command line, and whether it is stopped (and how to let it go on);
/// elsewhere, or where that cannot be read, that another process holds it. `waiting`: said
/// by one who waits for it (each holder not stopped is waited for until it lets go).
pub fn lock_holders(path: &Path, waiting: bool) -> String {
    let until = if waiting { "; waiting until it lets go" } else { "" };
    let unknown = || format!("another process holds it (an Origin command or server on this store){until}");
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::MetadataExt;
        let (Ok(meta), Ok(locks)) = (std::fs::metadata(path), std::fs::read_to_string("/proc/locks")) else { return unknown() };
        let pids = holders_in_proc_locks(&locks, meta.dev(), meta.ino());
        if pids.is_empty() {
            return unknown();
        }
        let said: Vec<String> = pids
            .iter()
            .take(3)
            .map(|pid| {
                // Its arguments on one line (they are NUL-separated, and may hold line breaks),
                // the first 100 characters.
                let cmd = std::fs::read(format!("/proc/{pid}/cmdline"))
                    .map(|b| String::from_utf8_lossy(&b).split(|c: char| c == '\0' || c.is_whitespace()).filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" "))
                    .unwrap_or_default();
                let cmd = match cmd.char_indices().nth(100) {
                    Some((at, _)) => format!("{}…", &cmd[..at]),
                    None => cmd,
                };
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                // The state follows the command's name, which is in parentheses.
                let state = stat.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next());
                let cmd = if cmd.is_empty() { String::new() } else { format!(" ({cmd})") };
                match state {
                    Some('T' | 't') => format!("process {pid}{cmd} holds it and is stopped: let it go on (`kill -CONT {pid}`, or `fg` in its terminal) or end it"),
                    _ => format!("process {pid}{cmd} holds it{until}"),
                }
            })
            .collect();
        said.join("; ")
    }
    #[cfg(not(target_os = "linux"))]
    {
        unknown()
    }
}

/// The processes `/proc/locks` (its text, `locks`) lists as holding (not waiting for) a lock on
/// the file of device `dev` and inode `ino`, in the order listed, each once.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn holders_in_proc_locks(locks: &str, dev: u64, ino: u64) -> Vec<u32> {
    // glibc's split of a device number into its major and minor parts, as the file prints them.
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let mut pids = Vec::new();
    for line in locks.lines() {
        // `1: FLOCK  ADVISORY  WRITE 4242 08:01:1234 0 EOF`; a waiter's line has `->` after
        // its number.
        let mut w = line.split_whitespace();
        let (Some(_), Some(kind)) = (w.next(), w.next()) else { continue };
        if kind == "->" {
            continue;
        }
        let (Some(_), Some(_), Some(pid), Some(file)) = (w.next(), w.next(), w.next(), w.next()) else { continue };
        let mut parts = file.split(':');
        let (Some(ma), Some(mi), Some(i)) = (parts.next(), parts.next(), parts.next()) else { continue };
        let same = u64::from_str_radix(ma, 16).ok() == Some(major) && u64::from_str_radix(mi, 16).ok() == Some(minor) && i.parse::<u64>().ok() == Some(ino);
        if let (true, Ok(pid)) = (same, pid.parse::<u32>())
            && !pids.contains(&pid)
        {
            pids.push(pid);
        }
    }
    pids
}

/// True for an error that says the file system, or the permissions on it, let this process
/// read and not write.
pub fn is_read_only_error(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EROFS) | Some(libc::EACCES) | Some(libc::EPERM))
}

/// Why this process may not make or change files in the folder `dir`, if it may not
/// ([`Vfs::check_writable`] refusing it: [`is_read_only_error`]); `None` if it may, or if that
/// cannot be told (not there: what writes there meets says it). Nothing is written.
pub fn folder_refusal(vfs: &dyn Vfs, dir: &Path) -> Option<io::Error> {
    vfs.check_writable(dir).err().filter(is_read_only_error)
}

/// A refusal to write said to a person: the system's words, then what to do
/// ([`crate::error::io_hint`]: another user's files are to be given back).
pub fn refusal_text(e: &io::Error) -> String {
    format!("{e}{}", crate::error::io_hint(e))
}

/// How a lock file is opened: for reading and writing, created if missing; where that is
/// refused for want of write access (a read-only mount, a lock file another user owns), for
/// reading only, as `flock` asks no more of either lock (the lock is the file's, whatever
/// the file is open for): so a store that cannot be written can still be read, and one whose
/// lock file alone is another user's can still be written. No file: it is missing from a
/// read-only file system, where it cannot be made and no process can be writing, so that a
/// reader needs no lock (see [`LockOpened::lock`]).
fn open_lock_file(path: &Path, open: impl Fn(&Path, bool) -> io::Result<File>) -> io::Result<LockOpened> {
    match open(path, true) {
        Ok(f) => Ok(LockOpened { file: Some(f), refused: None }),
        Err(e) if is_read_only_error(&e) => match open(path, false) {
            Ok(f) => Ok(LockOpened { file: Some(f), refused: e.raw_os_error() }),
            Err(missing) if missing.kind() == io::ErrorKind::NotFound => {
                // Missing, and may not be made: said by the refusal to make it.
                if e.raw_os_error() == Some(libc::EROFS) { Ok(LockOpened { file: None, refused: e.raw_os_error() }) } else { Err(e) }
            }
            // There, and not readable either: what stops reading is what to say (a read-only
            // mount refuses every write, and the user would be sent the wrong way).
            Err(unreadable) => Err(unreadable),
        },
        Err(e) => Err(e),
    }
}

fn open_os_lock_file(path: &Path, write: bool) -> io::Result<File> {
    if write {
        OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)
    } else {
        File::open(path)
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
        sync_durably(&File::open(path)?, Synced::Folder)
    }
    fn lock(&self, path: &Path, mode: LockMode) -> io::Result<Box<dyn LockGuard>> {
        // A fresh open file description per lock: flock locks on separate descriptions
        // conflict even inside one process, which is what the journal relies on.
        let opened = open_lock_file(path, open_os_lock_file)?;
        lock_saying_wait(&opened, mode, path)?;
        Ok(Box::new(OsLock { _file: opened.file }))
    }
    fn open_lock(&self, path: &Path) -> io::Result<Box<dyn LockFile>> {
        Ok(Box::new(OsLockFile { opened: open_lock_file(path, open_os_lock_file)?, path: path.to_path_buf() }))
    }
    fn try_lock(&self, path: &Path) -> io::Result<Option<Box<dyn LockGuard>>> {
        let opened = open_lock_file(path, open_os_lock_file)?;
        Ok(if opened.try_lock()? { Some(Box::new(OsLock { _file: opened.file })) } else { None })
    }
    fn remove_all(&self, path: &Path) -> io::Result<()> {
        if std::fs::symlink_metadata(path)?.is_dir() { std::fs::remove_dir_all(path) } else { std::fs::remove_file(path) }
    }
    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_dir(path)
    }
    fn is_held(&self, path: &Path) -> io::Result<bool> {
        // A shared lock is refused while another holds an exclusive one; granted, it goes with
        // the file, at once.
        taken(File::open(path)?.try_lock_shared()).map(|granted| !granted)
    }
    fn try_lock_dir(&self, path: &Path) -> io::Result<Option<Box<dyn LockGuard>>> {
        let dir = File::open(path)?;
        Ok(taken(dir.try_lock())?.then(|| Box::new(OsLock { _file: Some(dir) }) as Box<dyn LockGuard>))
    }
    fn check_writable(&self, path: &Path) -> io::Result<()> {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))?;
        // With the effective ids, as an open would be judged (`access` alone uses the real ones).
        // SAFETY: `c` is a NUL-terminated string that outlives the call.
        #[allow(unsafe_code)]
        let r = unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), libc::W_OK, libc::AT_EACCESS) };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if !matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::ENOSYS)) {
            return Err(e);
        }
        // A sandbox that refuses the call itself (a seccomp filter that answers `faccessat2`
        // with EPERM) tells nothing of the folder: `access`, and where that is refused too,
        // nothing known (the writes themselves then say what refuses them).
        // SAFETY: as above.
        #[allow(unsafe_code)]
        let r = unsafe { libc::access(c.as_ptr(), libc::W_OK) };
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            _ if r == 0 => Ok(()),
            Some(libc::EPERM) | Some(libc::ENOSYS) => Ok(()),
            _ => Err(e),
        }
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
        sync_durably(&self.file, Synced::Data)
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

/// What [`sync_durably`] makes durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Synced {
    /// A file's data, and the length needed to read it (`fdatasync`).
    Data,
    /// A folder's names: the files created, renamed and removed in it (`fsync` of the folder).
    Folder,
}

/// Makes what was written to `file` durable, through the standard library's `fdatasync` (or
/// `fsync`, of a folder).
///
/// On Apple's systems the standard library asks `fcntl(F_FULLFSYNC)`, since their `fsync`
/// leaves the data in the drive's cache. Some file systems there do not have it (SMB, NTFS and
/// FUSE volumes answer `ENOTSUP`, WebDAV `EINVAL`, ZFS `ENOTTY`): there the store gets `fsync`,
/// the most those volumes offer, as SQLite and Go do, where it would otherwise fail every
/// write. Every other failure is the call's.
pub fn sync_durably(file: &File, what: Synced) -> io::Result<()> {
    let full = match what {
        Synced::Data => file.sync_data(),
        Synced::Folder => file.sync_all(),
    };
    full_sync_or_fsync(full, cfg!(target_vendor = "apple"), || fsync(file))
}

/// The answer of a sync that asked `F_FULLFSYNC` on an Apple system (`apple`), or `fsync`'s
/// where the file system does not have `F_FULLFSYNC`.
fn full_sync_or_fsync(full: io::Result<()>, apple: bool, fsync: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
    match full {
        Err(e) if apple && e.raw_os_error().is_some_and(|c| [libc::ENOTSUP, libc::EOPNOTSUPP, libc::EINVAL, libc::ENOTTY].contains(&c)) => fsync(),
        r => r,
    }
}

/// `fsync(2)` itself, again when interrupted.
fn fsync(file: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: the descriptor is `file`'s, open for the whole call.
        #[allow(unsafe_code)]
        let r = unsafe { libc::fsync(file.as_raw_fd()) };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(code: i32) -> io::Error {
        io::Error::from_raw_os_error(code)
    }

    /// The holders of a lock on one file, read from `/proc/locks`: by device and inode, not
    /// its waiters, each process once.
    #[test]
    fn the_holders_of_a_lock_are_read_from_proc_locks() {
        // Device 8:1 (0x801), and one of major 259, minor 65536 (glibc's wide split).
        let wide = (259u64 << 8) | (65536 & 0xff) | ((65536u64 & !0xff) << 12);
        let locks = "1: FLOCK  ADVISORY  WRITE 4242 08:01:1234 0 EOF\n\
                     1: -> FLOCK  ADVISORY  WRITE 5151 08:01:1234 0 EOF\n\
                     2: FLOCK  ADVISORY  READ 77 08:01:1234 0 EOF\n\
                     3: FLOCK  ADVISORY  READ 77 08:01:1234 0 EOF\n\
                     4: POSIX  ADVISORY  WRITE 99 08:01:999 0 EOF\n\
                     5: FLOCK  ADVISORY  WRITE 88 08:02:1234 0 EOF\n\
                     6: FLOCK  ADVISORY  WRITE 66 103:10000:55 0 EOF\n\
                     not a line\n";
        assert_eq!(holders_in_proc_locks(locks, 0x801, 1234), vec![4242, 77]);
        assert_eq!(holders_in_proc_locks(locks, 0x801, 999), vec![99]);
        assert_eq!(holders_in_proc_locks(locks, wide, 55), vec![66]);
        assert!(holders_in_proc_locks(locks, 0x801, 1).is_empty());
    }

    /// A folder's lock is one holder's at a time, across open descriptions (as two processes
    /// hold them), and let go with its guard; a folder that is not there is said.
    #[test]
    fn a_folder_is_held_by_one_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let held = OsFs.try_lock_dir(dir.path()).unwrap().expect("free");
        assert!(OsFs.try_lock_dir(dir.path()).unwrap().is_none());
        drop(held);
        assert!(!OsFs.is_held(dir.path()).unwrap());
        let again = OsFs.try_lock_dir(dir.path()).unwrap();
        assert!(again.is_some());
        assert!(OsFs.is_held(dir.path()).unwrap());
        drop(again);
        assert!(!OsFs.is_held(dir.path()).unwrap());
        assert_eq!(OsFs.try_lock_dir(&dir.path().join("absent")).err().map(|e| e.kind()), Some(io::ErrorKind::NotFound));
    }

    /// On an Apple system, a file system without `F_FULLFSYNC` gets `fsync` (its answer is the
    /// sync's); any other failure, and every failure elsewhere, is the sync's own, and a sync
    /// that worked asks nothing more.
    #[test]
    fn a_volume_without_a_full_sync_gets_fsync_on_apple_systems_only() {
        let code = |r: io::Result<()>| r.err().map(|e| e.raw_os_error());
        for unsupported in [libc::ENOTSUP, libc::EOPNOTSUPP, libc::EINVAL, libc::ENOTTY] {
            let asked = std::cell::Cell::new(0);
            let fsync_ok = || {
                asked.set(asked.get() + 1);
                Ok(())
            };
            assert_eq!(code(full_sync_or_fsync(Err(err(unsupported)), true, fsync_ok)), None);
            assert_eq!(asked.get(), 1);
            // fsync's own failure is said.
            assert_eq!(code(full_sync_or_fsync(Err(err(unsupported)), true, || Err(err(libc::EIO)))), Some(Some(libc::EIO)));
            // Elsewhere the call was fdatasync, whose EINVAL (a file that cannot be synced) is its own.
            assert_eq!(code(full_sync_or_fsync(Err(err(unsupported)), false, fsync_ok)), Some(Some(unsupported)));
            assert_eq!(asked.get(), 1);
        }
        for apple in [true, false] {
            let never = || -> io::Result<()> { panic!("fsync asked after {apple}") };
            assert_eq!(code(full_sync_or_fsync(Err(err(libc::EIO)), apple, never)), Some(Some(libc::EIO)));
            assert_eq!(code(full_sync_or_fsync(Err(err(libc::ENOSPC)), apple, never)), Some(Some(libc::ENOSPC)));
            assert_eq!(code(full_sync_or_fsync(Ok(()), apple, never)), None);
        }
        // The real calls, on a file and its folder.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"x").unwrap();
        sync_durably(&File::open(&path).unwrap(), Synced::Data).unwrap();
        sync_durably(&File::open(dir.path()).unwrap(), Synced::Folder).unwrap();
        fsync(&File::open(&path).unwrap()).unwrap();
    }

    /// `open_lock_file` with an opener that answers as a file system would: `write` says
    /// what opening for writing gives, `read` what opening for reading gives.
    fn opened(write: Option<i32>, read: Option<i32>) -> (io::Result<LockOpened>, Vec<bool>) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("LOCK");
        std::fs::write(&file, b"").unwrap();
        let calls = std::sync::Mutex::new(Vec::new());
        let got = open_lock_file(&file, |p, w| {
            calls.lock().unwrap().push(w);
            match if w { write } else { read } {
                Some(code) => Err(err(code)),
                None => File::open(p),
            }
        });
        (got, calls.into_inner().unwrap())
    }

    #[test]
    fn a_lock_file_that_cannot_be_written_is_opened_for_reading() {
        // Written when it can be: no second open.
        let (got, calls) = opened(None, None);
        let got = got.unwrap();
        assert!(got.file.is_some() && got.refused.is_none());
        assert_eq!(calls, [true]);
        // A read-only mount, a store owned by another user, an immutable file: read.
        for code in [libc::EROFS, libc::EACCES, libc::EPERM] {
            let (got, calls) = opened(Some(code), None);
            let got = got.unwrap();
            assert!(got.file.is_some() && got.refused == Some(code), "{code}");
            assert_eq!(calls, [true, false], "{code}");
        }
        // Missing from a read-only file system: no lock is needed, as no one can write there.
        let (got, _) = opened(Some(libc::EROFS), Some(libc::ENOENT));
        assert!(got.unwrap().file.is_none());
        // Missing where it may not be made for want of permission: another user may be
        // writing, so this is not read without a lock; the refusal is the error said.
        let (got, _) = opened(Some(libc::EACCES), Some(libc::ENOENT));
        assert_eq!(got.err().and_then(|e| e.raw_os_error()), Some(libc::EACCES));
        // Failing to be read too: what stops the read is said (on a read-only mount, a lock
        // file this user may not read).
        let (got, _) = opened(Some(libc::EROFS), Some(libc::EACCES));
        assert_eq!(got.err().and_then(|e| e.raw_os_error()), Some(libc::EACCES));
        let (got, _) = opened(Some(libc::EROFS), Some(libc::EIO));
        assert_eq!(got.err().and_then(|e| e.raw_os_error()), Some(libc::EIO));
        // Any other failure is said as it is, with no second try.
        let (got, calls) = opened(Some(libc::ENOSPC), None);
        assert_eq!(got.err().and_then(|e| e.raw_os_error()), Some(libc::ENOSPC));
        assert_eq!(calls, [true]);
    }

    /// What each lock does with a lock file as it was opened: a reader's is granted on a file
    /// open to read and without one that cannot be made; a writer's is refused at once on a
    /// read-only file system, taken on a file another user owns where the file system allows
    /// (a local one), and refused with why the file could not be opened to write where it does
    /// not (an NFS client's `EBADF`, here a descriptor that takes no lock).
    #[test]
    fn a_lock_on_a_file_open_to_read_is_a_readers_and_a_writers_where_it_can_be() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("LOCK");
        std::fs::write(&path, b"").unwrap();
        let read = || Some(File::open(&path).unwrap());
        let code = |r: io::Result<()>| r.err().and_then(|e| e.raw_os_error());
        // A read-only mount.
        let ro = LockOpened { file: read(), refused: Some(libc::EROFS) };
        assert_eq!(code(ro.lock(LockMode::Shared)), None);
        ro.opened_unlock();
        assert_eq!(code(ro.lock(LockMode::Exclusive)), Some(libc::EROFS));
        assert_eq!(ro.try_lock().err().and_then(|e| e.raw_os_error()), Some(libc::EROFS));
        let missing = LockOpened { file: None, refused: Some(libc::EROFS) };
        assert_eq!(code(missing.lock(LockMode::Shared)), None);
        assert_eq!(code(missing.lock(LockMode::Exclusive)), Some(libc::EROFS));
        assert_eq!(missing.try_lock().err().and_then(|e| e.raw_os_error()), Some(libc::EROFS));
        // Another user's lock file on a local file system: a writer takes it.
        let theirs = LockOpened { file: read(), refused: Some(libc::EACCES) };
        assert_eq!(code(theirs.lock(LockMode::Exclusive)), None);
        theirs.opened_unlock();
        assert!(theirs.try_lock().unwrap());
        // Where the file system will not lock a file open to read: why it was not opened to
        // write is said. (The descriptor that takes no lock is Linux's `O_PATH` one.)
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::fs::OpenOptionsExt;
            let no_lock = || Some(OpenOptions::new().read(true).custom_flags(libc::O_PATH).open(&path).unwrap());
            let nfs = LockOpened { file: no_lock(), refused: Some(libc::EACCES) };
            assert_eq!(code(nfs.lock(LockMode::Exclusive)), Some(libc::EACCES));
            assert_eq!(nfs.try_lock().err().and_then(|e| e.raw_os_error()), Some(libc::EACCES));
            // A file open to write whose lock fails says its own error.
            let own = LockOpened { file: no_lock(), refused: None };
            assert_eq!(code(own.lock(LockMode::Exclusive)), Some(libc::EBADF));
            // A bounded wait says a try the file system failed at once, in either mode: it is
            // not taken for a holder and waited on until the bound.
            for mode in [LockMode::Exclusive, LockMode::Shared] {
                let began = std::time::Instant::now();
                let polled = lock_polling(&own, mode, &path, std::time::Duration::from_secs(30));
                assert_eq!(polled.err().and_then(|e| e.raw_os_error()), Some(libc::EBADF), "{mode:?}");
                assert!(began.elapsed() < std::time::Duration::from_secs(5), "{mode:?}: said after {:?}", began.elapsed());
            }
        }
    }

    impl LockOpened {
        fn opened_unlock(&self) {
            if let Some(f) = &self.file {
                f.unlock().unwrap();
            }
        }
    }
}
