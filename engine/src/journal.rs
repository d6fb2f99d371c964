//! The journal: open and recover, append with group commit, read from any offset, and follow
//! records other processes write to the same store.
//!
//! Locking order (never reversed): the in-process `writer` mutex, then the store's file lock
//! (`journal/LOCK`, through a handle kept open), then the `view` lock (held only to copy or
//! publish, never across I/O). The queue mutex is never held while waiting for another lock.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::ops::{ControlFlow, Range};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::codec::{self, CODEC_ID};
use crate::error::{Error, Result};
use crate::frame::{check_frame, check_frame_known, encode_frame, Check, FrameView, FLAGS_KNOWN, FLAG_ZSTD, FRAME_OVERHEAD, FRAME_SIZE_MAX, KIND_SEAL};
use crate::index::{decode_index, encode_index, seek, INDEX_SUFFIX};
use crate::limits::*;
use crate::record::{Body, RecordKind, RecordOrigin};
use crate::recovery::{classify_tail, scan_frames, Stop, Tail};
use crate::segment::{parse_segment_file_name, segment_file_name, u32_at, u64_at, SegmentHeader, StoreId, FORMAT_VERSION, SEGMENT_HEADER_SIZE};
use crate::tip::{advance_tip, all_segments_gone, read_tip, segments_gone, tip_path, Tip, TipFile};
use crate::vfs::{LockFile, LockMode, Mapped, OsFs, Vfs, VfsFile};

/// Name of the lock file inside the journal directory.
pub const LOCK_FILE_NAME: &str = "LOCK";
/// Folder inside the journal directory where repaired tails are copied.
pub const RECOVERED_DIR_NAME: &str = "recovered";
/// A file saying the journal beside it is still being written by a salvage or a replay into
/// a folder of its own (`origin journal salvage`, `origin journal replay --to`), which removes
/// it as its last step: such a journal holds only part of what it will, and is neither opened
/// nor verified ([`Error::Unfinished`]). It holds what wrote it, in words.
pub const UNFINISHED_FILE_NAME: &str = "UNFINISHED";

/// When an append is acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// After `fdatasync` of every byte of the batch (the only mode for real use).
    Sync,
    /// Without any sync: a power cut may lose acknowledged records. For benchmarks only.
    NoSyncBenchmarkOnly,
}

/// Whether this handle may write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Appends allowed; open repairs a torn tail.
    ReadWrite,
    /// No appends; open repairs nothing and reports a torn tail instead.
    ReadOnly,
}

/// How to open a journal.
#[derive(Clone, Debug)]
pub struct Options {
    /// Seal the active segment and start another once it would grow past this size.
    pub segment_size_bytes_max: u64,
    /// When appends are acknowledged.
    pub durability: Durability,
    /// Read-write or read-only.
    pub access: Access,
    /// Store id and epoch to give a journal created by this open (default: random id, epoch 0).
    pub new_store_identity: Option<(StoreId, u64)>,
    /// Read the active segment's bytes not yet validated (at open, all of them) at most this
    /// many at a time (default [`FRAME_SIZE_MAX`], which holds any frame), so that opening a
    /// journal does not hold its whole active segment in memory. Bytes that stop a scan where
    /// a read starts are judged on everything to the end of the file, whatever this is.
    pub tail_read_bytes_max: u64,
    /// Open a journal marked [`UNFINISHED_FILE_NAME`] (the salvage or replay writing it does);
    /// else such a journal is refused.
    pub unfinished_ok: bool,
    /// How long the open waits for the store's lock while another process holds it, before it
    /// gives up with [`Error::Busy`] (having read and written nothing); `None` (the default):
    /// as long as it takes. A server answering an agent bounds it, as it bounds every wait for
    /// the lock afterwards ([`Journal::set_lock_wait`]).
    pub open_lock_wait: Option<std::time::Duration>,
}

/// How long the store's lock is waited for in a mode, after a wait of
/// [`Journal::set_lock_wait`]'s in that mode ran out (in the last [`BUSY_REMEMBERED`]) and
/// until the lock is taken again in it.
pub const LOCK_RETRY_WHILE_BUSY: std::time::Duration = std::time::Duration::from_millis(50);

/// How long a wait for the store's lock that ran out is remembered ([`LOCK_RETRY_WHILE_BUSY`]):
/// then the whole wait is made again (a lock held a moment when the next call comes, an hour
/// later, is not taken for the one stopped then).
pub const BUSY_REMEMBERED: std::time::Duration = std::time::Duration::from_secs(60);

impl Default for Options {
    fn default() -> Self {
        Options {
            segment_size_bytes_max: SEGMENT_SIZE_BYTES_DEFAULT,
            durability: Durability::Sync,
            access: Access::ReadWrite,
            new_store_identity: None,
            tail_read_bytes_max: FRAME_SIZE_MAX as u64,
            unfinished_ok: false,
            open_lock_wait: None,
        }
    }
}

/// A record to append.
#[derive(Clone, Debug)]
pub struct NewRecord {
    kind: u8,
    kind_version: u8,
    payload: Vec<u8>,
}

impl NewRecord {
    /// A record holding `body`, written by this store.
    pub fn new(body: &Body) -> Result<NewRecord> {
        NewRecord::with_origin(None, body)
    }

    /// A record holding `body`, received from another store when `origin` is set.
    pub fn with_origin(origin: Option<&RecordOrigin>, body: &Body) -> Result<NewRecord> {
        let kind = body.kind();
        Ok(NewRecord { kind: kind as u8, kind_version: kind.current_version(), payload: codec::encode(origin, body)? })
    }

    /// A scratch record of opaque bytes (tests, the stress command, benchmarks).
    pub fn scratch(bytes: Vec<u8>) -> NewRecord {
        NewRecord { kind: RecordKind::Scratch as u8, kind_version: 1, payload: bytes }
    }

    /// A record copied as it is from another journal (salvage, compaction).
    pub fn raw(kind: u8, kind_version: u8, payload: Vec<u8>) -> NewRecord {
        NewRecord { kind, kind_version, payload }
    }
}

/// One record as read: borrowed, decompressed, checked.
#[derive(Clone, Copy, Debug)]
pub struct Record<'a> {
    /// Its offset.
    pub offset: u64,
    /// When its batch was written (Unix milliseconds).
    pub time_unix_ms: i64,
    /// Kind byte (see [`RecordKind`]).
    pub kind: u8,
    /// Payload schema version.
    pub kind_version: u8,
    /// The payload, decompressed.
    pub payload: &'a [u8],
}

impl Record<'_> {
    /// Decodes the payload with the codec.
    pub fn decode(&self) -> Result<(Option<RecordOrigin>, Body)> {
        codec::decode(self.kind, self.kind_version, self.payload, self.offset)
    }
}

/// A torn tail found at open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornTail {
    /// The segment it was in.
    pub segment: PathBuf,
    /// Where the valid records ended.
    pub position: u64,
    /// Bytes cut.
    pub size_bytes: u64,
    /// Where the cut bytes were copied (read-write opens only).
    pub copy: Option<PathBuf>,
}

/// What an open found and did.
#[derive(Clone, Debug, Default)]
pub struct OpenReport {
    /// True if this open created the journal.
    pub created: bool,
    /// Torn tails cut (read-write) or found (read-only; they are cut by the next writer).
    pub torn_tails: Vec<TornTail>,
    /// Segment files left over by an interrupted compaction and removed (or, read-only, ignored).
    pub leftovers: Vec<PathBuf>,
    /// Why `TIP` could not be brought up to the last segment, if it could not.
    pub tip_unwritten: Option<String>,
    /// A `TIP` that did not read, written again by this open, said.
    pub tip_rewritten: Option<String>,
}

/// Counters and identity, for `origin status`.
#[derive(Clone, Debug)]
pub struct Status {
    /// The journal directory.
    pub dir: PathBuf,
    /// Store id.
    pub store_id: StoreId,
    /// Epoch.
    pub epoch: u64,
    /// Segment files.
    pub segments: usize,
    /// First offset held.
    pub first_offset: u64,
    /// Offset the next record will get.
    pub next_offset: u64,
    /// Bytes of segment files.
    pub bytes: u64,
    /// Torn tails ever repaired in this store (copies kept in `recovered/`).
    pub torn_tails_repaired: u64,
    /// Why writes are refused, if they are.
    pub refusing_writes: Option<String>,
    /// Group commits made by this handle.
    pub batches: u64,
    /// Records appended by this handle.
    pub records_appended: u64,
    /// Index files this handle failed to write (they are rebuilt on demand).
    pub index_write_failures: u64,
}

struct Sealed {
    base: u64,
    next_offset: u64,
    path: PathBuf,
    bytes: Mapped,
    seal_pos: u64,
    sparse: Vec<(u64, u64)>,
    /// One bit per record: its frame was checked by [`Journal::read_one`] on this mapping (a
    /// sealed segment never changes, so a point read checks each frame once per mapping).
    checked: Box<[AtomicU64]>,
}

impl Sealed {
    fn new(base: u64, next_offset: u64, path: PathBuf, bytes: Mapped, seal_pos: u64, sparse: Vec<(u64, u64)>) -> Sealed {
        let words = next_offset.saturating_sub(base).div_ceil(64) as usize;
        Sealed { base, next_offset, path, bytes, seal_pos, sparse, checked: (0..words).map(|_| AtomicU64::new(0)).collect() }
    }

    fn is_checked(&self, offset: u64) -> bool {
        let i = offset - self.base;
        self.checked.get((i / 64) as usize).is_some_and(|w| w.load(Ordering::Relaxed) & (1 << (i % 64)) != 0)
    }

    fn set_checked(&self, offset: u64) {
        let i = offset - self.base;
        if let Some(w) = self.checked.get((i / 64) as usize) {
            w.fetch_or(1 << (i % 64), Ordering::Relaxed);
        }
    }
}

thread_local! {
    /// [`Journal::read_one`]'s buffer for records of the active segment, kept between reads.
    static READ_BUFFER: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The largest read buffer a thread keeps (a larger record's is let go after its read): the
/// benchmarks' ingest records average about 0.7 MB, and a frame can reach 16 MiB, which every
/// thread that ever read one would otherwise hold.
const READ_BUFFER_KEPT: usize = 2 << 20;

struct Active {
    base: u64,
    path: PathBuf,
    file: Arc<dyn VfsFile>,
    end_pos: u64,
    next_offset: u64,
    sparse: Vec<(u64, u64)>,
    /// The segment ends with a seal naming this next base, and the next segment is not open yet.
    sealed_next: Option<u64>,
}

struct View {
    sealed: Vec<Arc<Sealed>>,
    active: Active,
}

/// Why a handle refuses writes; `since` is set for a refusal that an append made
/// [`REFUSAL_RETRY_AFTER`] later lifts (a failed write whose bytes could not be cut off:
/// the tail is judged again, as an open judges it). A failed sync or unlock is never lifted
/// in this handle: after a failed `fdatasync` the page cache no longer says what the disk holds.
struct Refusal {
    error: Error,
    since: Option<std::time::Instant>,
}

/// How long a handle whose failed write could not be cut off waits before it reads the tail
/// again and writes on (a file made read-only for a moment, then writable again).
pub const REFUSAL_RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// What [`Journal::open_successor`] found of the segment after a seal.
enum Successor {
    /// It, opened (a writer creates it when it is missing and the last).
    Opened(Arc<dyn VfsFile>),
    /// Not there yet (a reader waits for the writer that sealed the segment to create it).
    NotYet,
    /// Not there, with segments after it: a compaction merged it into one before it.
    Compacted,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum TailMode {
    /// Writer: cut a torn tail, refuse writes on corruption.
    Repair,
    /// Read-only open: judge the tail, cut nothing.
    Report,
    /// Live follower: stop at anything unreadable; a writer will judge it.
    Ignore,
}

struct Pending {
    ticket: u64,
    records: Vec<(u8, u8, u16, Vec<u8>)>,
    size: usize,
}

#[derive(Default)]
struct Queue {
    pending: VecDeque<Pending>,
    leader: bool,
    next_ticket: u64,
    done: HashMap<u64, Result<Range<u64>>>,
}

/// An open journal. Share it between threads with `Arc`; open one per process.
pub struct Journal {
    dir: PathBuf,
    lock_path: PathBuf,
    vfs: Arc<dyn Vfs>,
    opts: Options,
    store_id: StoreId,
    epoch: u64,
    view: RwLock<View>,
    writer: Mutex<()>,
    /// The store lock as the writer takes it, kept open (used under `writer` only).
    writer_lock: Box<dyn LockFile>,
    /// The store lock as a refresh takes it, kept open (used under `writer` only).
    reader_lock: Box<dyn LockFile>,
    refusal: Mutex<Option<Refusal>>,
    queue: Mutex<Queue>,
    queue_changed: Condvar,
    report: Mutex<OpenReport>,
    batches: AtomicU64,
    records_appended: AtomicU64,
    index_write_failures: AtomicU64,
    /// What went wrong at each failed index write not yet taken by
    /// [`Journal::take_index_write_failures`] (the first [`INDEX_WRITE_UNSAID_MAX`]; the
    /// counter above counts every one).
    index_write_unsaid: Mutex<Vec<String>>,
    /// How long an append or a refresh waits for the store's lock, in milliseconds
    /// ([`Journal::set_lock_wait`]; `u64::MAX`: as long as it takes).
    lock_wait_ms: AtomicU64,
    /// Per lock mode (shared, exclusive): when the waits for the store's lock that ran out
    /// ([`Journal::set_lock_wait`]) began, and when the last ran out, while it has not been
    /// taken in that mode since.
    busy: [Mutex<Option<(std::time::Instant, std::time::Instant)>>; 2],
}

fn now_unix_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

fn guard<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Poisoning only follows a panic, which in this crate is a failed assertion: the state a
    // panicking thread left is still consistent at every await point of the lock.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A second copy of an error, for every caller of a failed group commit.
fn replicate(e: &Error) -> Error {
    match e {
        Error::Io { op, path, source } => Error::Io {
            op,
            path: path.clone(),
            source: match source.raw_os_error() {
                Some(code) => io::Error::from_raw_os_error(code),
                None => io::Error::new(source.kind(), source.to_string()),
            },
        },
        Error::Corrupt { segment, position, reason } => {
            Error::Corrupt { segment: segment.clone(), position: *position, reason: reason.clone() }
        }
        Error::Poisoned { cause } => Error::Poisoned { cause: cause.clone() },
        Error::Invalid(s) => Error::Invalid(s.clone()),
        Error::Decode { offset, reason } => Error::Decode { offset: *offset, reason: reason.clone() },
        Error::Unreadable { offset, what } => Error::Unreadable { offset: *offset, what: what.clone() },
        Error::NoJournal { dir } => Error::NoJournal { dir: dir.clone() },
        Error::Unfinished { dir, what, running } => Error::Unfinished { dir: dir.clone(), what: what.clone(), running: *running },
        Error::Busy { path, waited, holders } => Error::Busy { path: path.clone(), waited: *waited, holders: holders.clone() },
    }
}

/// Why this process cannot write the journal in `dir`, if it cannot: the folder refused
/// ([`Vfs::check_writable`]: a read-only file system, permissions; `TIP` is replaced by a
/// rename in it), or the last segment refusing to be opened to write (another user's file,
/// left by a run under `sudo`), opened and let go. The lock file is not asked: a writer locks
/// it open to read where it may not write it ([`Vfs::lock`]). Nothing is written, locked or
/// repaired, so a store's owner is never made to wait and a torn tail is left for the open
/// that says it cuts it. `None` when nothing refused, which a read-write open may still fail
/// for other reasons ([`still_refused`] looks at what one met).
pub fn write_refused(vfs: &dyn Vfs, dir: &Path) -> Option<Error> {
    use crate::vfs::{folder_refusal, is_read_only_error};
    if let Some(e) = folder_refusal(vfs, dir) {
        return Some(Error::io("write into", dir, e));
    }
    let mut bases: Vec<u64> = vfs.list_dir(dir).ok()?.iter().filter_map(|n| parse_segment_file_name(n)).collect();
    bases.sort_unstable();
    // The last segment a writer would write: one whose creation was cut short (shorter than a
    // header, or zeros: a run that died starting it) is set aside by a writer's open, which
    // needs only the folder, and the one before it is written on.
    let last = bases.iter().rev().map(|&b| dir.join(segment_file_name(b))).find(|p| {
        let Ok(f) = vfs.open_read(p) else { return true };
        let len = f.len().unwrap_or(0);
        let mut head = vec![0u8; len.min(CUT_CREATION_HEAD_BYTES) as usize];
        !(f.read_exact_at(&mut head, 0).is_ok() && is_cut_creation(len, &head))
    })?;
    match vfs.open_rw(&last) {
        Err(e) if is_read_only_error(&e) => Some(Error::io("open", &last, e)),
        _ => None,
    }
}

/// How a mark of [`mark_unfinished`] begins, so that a file of that name a person keeps is
/// never taken for one (and what it marks never removed).
const UNFINISHED_SIGNATURE: &str = "Origin: unfinished journal\n";

/// A journal folder's mark of [`mark_unfinished`], held: the mark's file locked, so that a run
/// taking over a stopped one's folder ([`take_over_unfinished`]) never takes a live one's.
/// Dropped without [`UnfinishedMark::finish`], the mark stays (the journal is unfinished).
pub struct UnfinishedMark {
    dir: PathBuf,
    _lock: Box<dyn crate::vfs::LockGuard>,
}

impl UnfinishedMark {
    /// Removes the mark, durably: the journal holds all it will (its records synced), and
    /// opens as any other.
    pub fn finish(self, vfs: &dyn Vfs) -> Result<()> {
        let path = self.dir.join(UNFINISHED_FILE_NAME);
        vfs.remove_file(&path).map_err(|e| Error::io("remove", &path, e))?;
        vfs.sync_dir(&self.dir).map_err(|e| Error::io("fsync directory", &self.dir, e))
    }

    /// Removes every file a journal holds in the marked folder, then the mark, each removal
    /// synced before the next step: cut short, the folder is still marked, or empty. Only
    /// a journal's own files are there ([`take_over_unfinished`] checked).
    pub fn clear(self, vfs: &dyn Vfs) -> Result<()> {
        let names = vfs.list_dir(&self.dir).map_err(|e| Error::io("list", &self.dir, e))?;
        for n in names.iter().filter(|n| n.as_str() != UNFINISHED_FILE_NAME) {
            let path = self.dir.join(n);
            vfs.remove_all(&path).map_err(|e| Error::io("remove", &path, e))?;
        }
        vfs.sync_dir(&self.dir).map_err(|e| Error::io("fsync directory", &self.dir, e))?;
        self.finish(vfs)
    }
}

/// Whether `name` is a file a journal's folder holds (segments, their indexes, unfinished
/// writes, `LOCK`, `TIP`, `recovered/`, the mark).
pub fn is_journal_file(name: &str) -> bool {
    let by_base = name.len() > 20 && name.as_bytes()[..20].iter().all(u8::is_ascii_digit);
    (by_base && [".seg", ".idx", ".idx.tmp", ".seg.compact"].contains(&&name[20..]))
        || [LOCK_FILE_NAME, crate::tip::TIP_FILE_NAME, "TIP.tmp", RECOVERED_DIR_NAME, UNFINISHED_FILE_NAME].contains(&name)
}

/// Holds the folder `dir` that a salvage or a replay writes, for that run: an exclusive lock
/// of the folder, released when the guard is dropped or the process ends, so that two runs into
/// one folder never both write it (each cleared, or wrote into, what the other wrote). Refused
/// if another run holds it. On a file system that takes no lock on a folder (`ENOLCK`,
/// `EOPNOTSUPP`, `EINVAL`), `None`: the run goes on unheld there.
pub fn hold_folder(vfs: &dyn Vfs, dir: &Path) -> Result<Option<Box<dyn crate::vfs::LockGuard>>> {
    match vfs.try_lock_dir(dir) {
        Ok(Some(held)) => Ok(Some(held)),
        Ok(None) => Err(Error::Invalid(format!("{} is being written by another process (a salvage or a replay into it is running)", dir.display()))),
        Err(e) if e.raw_os_error().is_some_and(|c| [libc::ENOLCK, libc::EOPNOTSUPP, libc::ENOTSUP, libc::EINVAL].contains(&c)) => Ok(None),
        Err(e) => Err(Error::io("lock", dir, e)),
    }
}

/// Marks the journal folder `dir` (made if missing) unfinished, durably, before anything is
/// written in it: `what` says what writes it (a salvage, a replay). The mark is held (locked)
/// until [`UnfinishedMark::finish`] or the process ends. Fails if `dir` is marked already.
pub fn mark_unfinished(vfs: &dyn Vfs, dir: &Path, what: &str) -> Result<UnfinishedMark> {
    vfs.create_dir_all(dir).map_err(|e| Error::io("create directory", dir, e))?;
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        vfs.sync_dir(parent).map_err(|e| Error::io("fsync directory", parent, e))?;
    }
    let path = dir.join(UNFINISHED_FILE_NAME);
    let busy = || Error::Invalid(format!("{} is being written by another process (a salvage or a replay into it)", dir.display()));
    let f = match vfs.create_new(&path) {
        // Another run's mark, made since this one looked: the folder is that run's.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Err(busy()),
        r => r.map_err(|e| Error::io("create", &path, e))?,
    };
    // Locked before it says anything: a mark that reads is always held or its writer gone.
    // Not locked here: another run took the mark over (empty, it read as a stopped run's);
    // the folder is that run's, and the mark too.
    let lock = vfs.try_lock(&path).map_err(|e| Error::io("lock", &path, e))?.ok_or_else(busy)?;
    let written = f
        .write_all_at(format!("{UNFINISHED_SIGNATURE}{what}").as_bytes(), 0)
        .map_err(|e| Error::io("write", &path, e))
        .and_then(|()| f.sync_data().map_err(|e| Error::io("fdatasync", &path, e)))
        .and_then(|()| vfs.sync_dir(dir).map_err(|e| Error::io("fsync directory", dir, e)));
    if let Err(e) = written {
        // The mark is this run's (held): removed, so that the folder is as it was found.
        return Err(match vfs.remove_file(&path) {
            Ok(()) => e,
            Err(c) => Error::Invalid(format!("{e}; and its unfinished mark {} could not be removed: {c}", path.display())),
        });
    }
    Ok(UnfinishedMark { dir: dir.to_path_buf(), _lock: lock })
}

/// The mark of a run that stopped part way (killed, a power cut) in the journal folder `dir`,
/// taken over to start there again ([`UnfinishedMark::clear`]): refused if the folder is not
/// so marked, if the run is still going (its mark is locked), or if the folder holds anything
/// a journal does not (nothing of a person's is ever removed).
pub fn take_over_unfinished(vfs: &dyn Vfs, dir: &Path) -> Result<UnfinishedMark> {
    let path = dir.join(UNFINISHED_FILE_NAME);
    if unfinished(vfs, dir).is_none() {
        return Err(Error::Invalid(format!("{} is not empty, and no unfinished salvage or replay left it", dir.display())));
    }
    let Some(lock) = vfs.try_lock(&path).map_err(|e| Error::io("lock", &path, e))? else {
        return Err(Error::Invalid(format!("{} is being written now (a salvage or a replay into it is running)", dir.display())));
    };
    // Looked at again under the lock: the run may have finished (and removed its mark) since.
    if unfinished(vfs, dir).is_none() {
        return Err(Error::Invalid(format!("{} is not empty: what was writing it has finished", dir.display())));
    }
    let names = vfs.list_dir(dir).map_err(|e| Error::io("list", dir, e))?;
    let others: Vec<&String> = names.iter().filter(|n| !is_journal_file(n)).collect();
    if !others.is_empty() {
        return Err(Error::Invalid(format!(
            "{} holds files no salvage or replay writes ({}): nothing there is removed",
            dir.display(),
            others.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(UnfinishedMark { dir: dir.to_path_buf(), _lock: lock })
}

/// What left the journal in `dir` unfinished ([`mark_unfinished`]), if it is marked so.
pub fn unfinished(vfs: &dyn Vfs, dir: &Path) -> Option<String> {
    let f = vfs.open_read(&dir.join(UNFINISHED_FILE_NAME)).ok()?;
    let len = f.len().ok()?.min(4096) as usize;
    let mut text = vec![0u8; len];
    f.read_exact_at(&mut text, 0).ok()?;
    let text = String::from_utf8_lossy(&text);
    // Empty: made and locked, its words not yet written (or the writer died right then).
    if text.is_empty() {
        return Some("a salvage or replay".to_owned());
    }
    let what = text.strip_prefix(UNFINISHED_SIGNATURE)?.trim();
    Some(if what.is_empty() { "a salvage or replay".to_owned() } else { what.to_owned() })
}

/// [`Error::Unfinished`] for a journal marked unfinished.
pub(crate) fn refuse_unfinished(vfs: &dyn Vfs, dir: &Path) -> Result<()> {
    match unfinished(vfs, dir) {
        Some(what) => {
            let running = vfs.is_held(&dir.join(UNFINISHED_FILE_NAME)).unwrap_or(false);
            Err(Error::Unfinished { dir: dir.to_path_buf(), what, running })
        }
        None => Ok(()),
    }
}

/// A reader's failure to lock the journal in `dir`: where it may not make the lock file, and
/// there is none and no segment either (an empty folder another user made), there is no
/// journal there, which the lock's refusal would hide behind a file that never was.
pub(crate) fn reader_lock_refused(vfs: &dyn Vfs, dir: &Path, e: io::Error) -> Error {
    let lock_path = dir.join(LOCK_FILE_NAME);
    if crate::vfs::is_read_only_error(&e) && vfs.exists(&lock_path).is_ok_and(|there| !there) && holds_no_segment(vfs, dir) {
        Error::NoJournal { dir: dir.to_path_buf() }
    } else {
        Error::io("lock", &lock_path, e)
    }
}

/// Whether the folder `dir` lists no segment file (false where it cannot be listed).
fn holds_no_segment(vfs: &dyn Vfs, dir: &Path) -> bool {
    vfs.list_dir(dir).is_ok_and(|names| !names.iter().any(|n| parse_segment_file_name(n).is_some()))
}

/// Whether `path`, which refused a write for want of write access, still does: a file opened
/// to write and let go, or, for a folder or a file not there (to be made in its folder), the
/// folder asked ([`Vfs::check_writable`]). Nothing is written.
pub fn still_refused(vfs: &dyn Vfs, path: &Path) -> bool {
    use crate::vfs::{folder_refusal, is_read_only_error};
    let folder_refuses = |dir: &Path| folder_refusal(vfs, dir).is_some();
    match vfs.open_rw(path) {
        Ok(_) => false,
        Err(e) if is_read_only_error(&e) => true,
        Err(e) if e.kind() == io::ErrorKind::NotFound => path.parent().is_some_and(folder_refuses),
        // A folder (EISDIR), or what cannot be told by opening it.
        Err(_) => folder_refuses(path),
    }
}

impl Journal {
    /// Opens (creating if needed, read-write) the journal in `dir` on the real file system.
    pub fn open(dir: impl AsRef<Path>, opts: Options) -> Result<Journal> {
        Journal::open_with(Arc::new(OsFs), dir.as_ref(), opts)
    }

    /// The file system the journal is on (the store's other files go through it too).
    pub fn vfs(&self) -> &Arc<dyn Vfs> {
        &self.vfs
    }

    /// Opens the journal in `dir` through `vfs`.
    pub fn open_with(vfs: Arc<dyn Vfs>, dir: &Path, opts: Options) -> Result<Journal> {
        if !(SEGMENT_SIZE_BYTES_MIN..=SEGMENT_SIZE_BYTES_MAX).contains(&opts.segment_size_bytes_max) {
            return Err(Error::Invalid(format!(
                "segment size {} is outside {SEGMENT_SIZE_BYTES_MIN}..={SEGMENT_SIZE_BYTES_MAX}",
                opts.segment_size_bytes_max
            )));
        }
        let rw = opts.access == Access::ReadWrite;
        if !opts.unfinished_ok {
            refuse_unfinished(&*vfs, dir)?;
        }
        if rw {
            vfs.create_dir_all(dir).map_err(|e| Error::io("create directory", dir, e))?;
        } else if !vfs.exists(dir).map_err(|e| Error::io("stat", dir, e))? {
            return Err(Error::NoJournal { dir: dir.to_path_buf() });
        }
        let lock_path = dir.join(LOCK_FILE_NAME);
        let mode = if rw { LockMode::Exclusive } else { LockMode::Shared };
        let refused = |e: io::Error| if rw { Error::io("lock", &lock_path, e) } else { reader_lock_refused(&*vfs, dir, e) };
        let Some(_lock) = crate::vfs::lock_within(&*vfs, &lock_path, mode, opts.open_lock_wait).map_err(refused)? else {
            let waited = opts.open_lock_wait.unwrap_or_default();
            return Err(Error::Busy { path: lock_path.clone(), waited, holders: crate::vfs::lock_holders(&lock_path, false) });
        };
        let mut report = OpenReport::default();

        let mut unwritten = Vec::new();
        let mut poisoned = None;
        let tip = read_tip(&*vfs, dir);
        let loaded = match load_view(&*vfs, dir, &opts, rw, &mut report, &mut unwritten)? {
            Some(loaded) => {
                let (store_id, epoch, view) = &loaded;
                if let Some(e) = segments_gone(dir, &tip, (*store_id, *epoch), view.active.base, None) {
                    return Err(e);
                }
                // A journal written before `TIP` was, or whose last segment's writer died
                // before writing it: from now on a removed last segment is told. Failing to
                // write it loses nothing, so the open goes on and the user is told.
                let behind = !matches!(tip, TipFile::Read(t) if t.is_of(*store_id, *epoch) && t.base >= view.active.base);
                if rw && behind {
                    poisoned = bring_tip_up(&*vfs, dir, &tip, (*store_id, *epoch), &view.active, &mut report);
                }
                loaded
            }
            None => {
                if let Some(e) = all_segments_gone(dir, &tip) {
                    return Err(e);
                }
                if !rw {
                    return Err(Error::NoJournal { dir: dir.to_path_buf() });
                }
                let (store_id, epoch) = match opts.new_store_identity {
                    Some(id) => id,
                    None => {
                        let mut id = [0u8; 16];
                        getrandom::fill(&mut id).map_err(|e| Error::io("getrandom", dir, io::Error::other(e.to_string())))?;
                        (id, 0)
                    }
                };
                create_segment(&*vfs, dir, store_id, epoch, 0)?;
                report.created = true;
                load_view(&*vfs, dir, &opts, rw, &mut report, &mut unwritten)?.ok_or_else(|| Error::NoJournal { dir: dir.to_path_buf() })?
            }
        };
        let (store_id, epoch, view) = loaded;
        let writer_lock = vfs.open_lock(&lock_path).map_err(|e| Error::io("open lock", &lock_path, e))?;
        let reader_lock = vfs.open_lock(&lock_path).map_err(|e| Error::io("open lock", &lock_path, e))?;
        let unwritten_count = unwritten.len() as u64;
        unwritten.truncate(INDEX_WRITE_UNSAID_MAX);
        let journal = Journal {
            writer_lock,
            reader_lock,
            dir: dir.to_path_buf(),
            lock_path,
            vfs,
            opts,
            store_id,
            epoch,
            view: RwLock::new(view),
            writer: Mutex::new(()),
            refusal: Mutex::new(None),
            queue: Mutex::new(Queue::default()),
            queue_changed: Condvar::new(),
            report: Mutex::new(report),
            batches: AtomicU64::new(0),
            records_appended: AtomicU64::new(0),
            index_write_failures: AtomicU64::new(unwritten_count),
            index_write_unsaid: Mutex::new(unwritten),
            lock_wait_ms: AtomicU64::new(u64::MAX),
            busy: [Mutex::new(None), Mutex::new(None)],
        };
        let repair = rw && poisoned.is_none();
        if let Some(e) = poisoned {
            journal.refuse(e);
        }
        {
            let _w = guard(&journal.writer);
            journal.catch_up(if repair { TailMode::Repair } else { TailMode::Report })?;
        }
        Ok(journal)
    }

    /// True if this handle was opened to read only ([`Access::ReadOnly`]).
    pub fn is_read_only(&self) -> bool {
        self.opts.access == Access::ReadOnly
    }

    /// The journal directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The store's id.
    pub fn store_id(&self) -> StoreId {
        self.store_id
    }

    /// The store's epoch.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// What the open found and did.
    pub fn open_report(&self) -> OpenReport {
        guard(&self.report).clone()
    }

    /// The offset the next record will get, as far as this handle knows (see [`refresh`]).
    ///
    /// [`refresh`]: Journal::refresh
    pub fn next_offset(&self) -> u64 {
        self.read_view().active.next_offset
    }

    /// The first offset the journal holds.
    pub fn first_offset(&self) -> u64 {
        let v = self.read_view();
        v.sealed.first().map_or(v.active.base, |s| s.base)
    }

    fn read_view(&self) -> std::sync::RwLockReadGuard<'_, View> {
        self.view.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write_view(&self) -> std::sync::RwLockWriteGuard<'_, View> {
        self.view.write().unwrap_or_else(|p| p.into_inner())
    }

    /// How long an append or a [`Journal::refresh`] waits for the store's lock while another
    /// process holds it, before it gives up with [`Error::Busy`], having written nothing; `None`
    /// (as opened) waits as long as it takes. A server answering an agent bounds it: a process
    /// stopped while it held the lock (Ctrl-Z on `origin ingest` part way through an append)
    /// kept every call waiting for good. After a wait given up, and until the lock is next
    /// taken in its mode, it is only tried ([`LOCK_RETRY_WHILE_BUSY`]) for [`BUSY_REMEMBERED`],
    /// so that calls do not each wait the whole time again.
    pub fn set_lock_wait(&self, wait: Option<std::time::Duration>) {
        let ms = wait.map_or(u64::MAX, |w| u64::try_from(w.as_millis()).unwrap_or(u64::MAX - 1));
        self.lock_wait_ms.store(ms, Ordering::SeqCst);
    }

    /// How long an append or a refresh waits for the store's lock ([`Journal::set_lock_wait`]):
    /// `None`, as long as it takes.
    pub fn lock_wait(&self) -> Option<std::time::Duration> {
        let ms = self.lock_wait_ms.load(Ordering::SeqCst);
        (ms != u64::MAX).then(|| std::time::Duration::from_millis(ms))
    }

    /// Takes the store's lock through `lock` (this handle's reader's or writer's) in `mode`,
    /// waiting as [`Journal::set_lock_wait`] says. Where a wait in `mode` ran out in the last
    /// [`BUSY_REMEMBERED`], the lock is only tried; taken in a mode, what was remembered of it
    /// goes (exclusive, of both: no one held it then).
    fn take_lock(&self, lock: &dyn LockFile, mode: LockMode) -> Result<()> {
        let Some(wait) = self.lock_wait() else {
            return lock.lock(mode).map_err(|e| Error::io("lock", &self.lock_path, e));
        };
        let busy = &self.busy[usize::from(mode == LockMode::Exclusive)];
        let gave_up = *guard(busy);
        let started = std::time::Instant::now();
        let (within, since) = match gave_up {
            Some((since, last)) if last.elapsed() < BUSY_REMEMBERED => (LOCK_RETRY_WHILE_BUSY.min(wait), since),
            _ => (wait, started),
        };
        match lock.lock_within(mode, within) {
            Ok(true) => {
                *guard(busy) = None;
                if mode == LockMode::Exclusive {
                    *guard(&self.busy[0]) = None;
                }
                Ok(())
            }
            Ok(false) => {
                *guard(busy) = Some((since, std::time::Instant::now()));
                Err(Error::Busy { path: self.lock_path.clone(), waited: since.elapsed(), holders: crate::vfs::lock_holders(&self.lock_path, false) })
            }
            Err(e) => Err(Error::io("lock", &self.lock_path, e)),
        }
    }

    /// Learns about records other processes appended since this handle last looked.
    pub fn refresh(&self) -> Result<()> {
        let _w = guard(&self.writer);
        self.take_lock(&*self.reader_lock, LockMode::Shared)?;
        let result = self.catch_up(TailMode::Ignore);
        self.reader_lock.unlock().map_err(|e| Error::io("unlock", &self.lock_path, e))?;
        result
    }

    /// Appends records and returns their offsets once they are durable (per the options).
    /// Concurrent callers share one write and one `fdatasync`.
    pub fn append(&self, records: Vec<NewRecord>) -> Result<Range<u64>> {
        if self.opts.access != Access::ReadWrite {
            return Err(Error::Invalid("journal opened read-only".into()));
        }
        if records.is_empty() || records.len() > APPEND_RECORDS_MAX {
            return Err(Error::Invalid(format!("an append carries 1 to {APPEND_RECORDS_MAX} records, not {}", records.len())));
        }
        let mut prepared = Vec::with_capacity(records.len());
        let mut size = 0;
        for r in records {
            if r.kind == KIND_SEAL {
                return Err(Error::Invalid("kind 0 is reserved for seal frames".into()));
            }
            if r.payload.len() > RECORD_PAYLOAD_SIZE_MAX {
                return Err(Error::Invalid(format!(
                    "payload of {} bytes exceeds the limit of {RECORD_PAYLOAD_SIZE_MAX}",
                    r.payload.len()
                )));
            }
            let (flags, stored) =
                if codec::compress_payload(r.kind, r.kind_version) { codec::compress(r.payload) } else { (0, r.payload) };
            size += stored.len() + FRAME_OVERHEAD;
            prepared.push((r.kind, r.kind_version, flags, stored));
        }
        let mut q = guard(&self.queue);
        let ticket = q.next_ticket;
        q.next_ticket += 1;
        q.pending.push_back(Pending { ticket, records: prepared, size });
        loop {
            if let Some(r) = q.done.remove(&ticket) {
                return r;
            }
            if !q.leader {
                q.leader = true;
                drop(q);
                self.lead();
                q = guard(&self.queue);
                continue;
            }
            q = self.queue_changed.wait(q).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// One round of group commit. The leader first waits for the writer mutex and the store
    /// lock, so requests keep piling up while the previous commit syncs; then it takes every waiting request (up to
    /// the batch limit), hands leadership on (the next leader can start waiting for the store
    /// at once), and writes. No caller ever commits more than one round for others.
    fn lead(&self) {
        let writer = guard(&self.writer);
        let locked = self.take_lock(&*self.writer_lock, LockMode::Exclusive);
        let mut q = guard(&self.queue);
        let mut batch = Vec::new();
        let mut batch_size = 0;
        while let Some(p) = q.pending.front() {
            if !batch.is_empty() && batch_size + p.size > GROUP_COMMIT_SIZE_BYTES_MAX {
                break;
            }
            batch_size += p.size;
            if let Some(p) = q.pending.pop_front() {
                batch.push(p);
            }
        }
        q.leader = false;
        self.queue_changed.notify_all();
        drop(q);
        let result = match &locked {
            Ok(()) if batch.is_empty() => Ok(Vec::new()),
            Ok(()) => self.commit(&batch),
            Err(e) => Err(replicate(e)),
        };
        if locked.is_ok()
            && let Err(e) = self.writer_lock.unlock()
        {
            // The batch is durable and acknowledged; but a handle that may still hold the
            // store lock would stall every other process: it writes nothing more.
            let e = Error::io("unlock", &self.lock_path, e);
            self.refuse(Error::Poisoned { cause: e.to_string() });
        }
        drop(writer);
        let mut q = guard(&self.queue);
        match result {
            Ok(ranges) => {
                for (p, r) in batch.iter().zip(ranges) {
                    q.done.insert(p.ticket, Ok(r));
                }
            }
            Err(e) => {
                for p in &batch {
                    q.done.insert(p.ticket, Err(replicate(&e)));
                }
            }
        }
        self.queue_changed.notify_all();
    }

    /// Writes one group commit (the caller holds the store lock and the writer mutex): catches
    /// up with other writers, writes every frame (rolling segments as needed), syncs, publishes.
    fn commit(&self, batch: &[Pending]) -> Result<Vec<Range<u64>>> {
        {
            let mut refusal = guard(&self.refusal);
            if let Some(r) = refusal.as_ref() {
                match r.since {
                    // The tail is read again below, as an open reads it: a write's bytes
                    // past the last record are cut as a torn tail, or refused as damage.
                    Some(t) if t.elapsed() >= REFUSAL_RETRY_AFTER => *refusal = None,
                    _ => return Err(replicate(&r.error)),
                }
            }
        }
        self.catch_up(TailMode::Repair)?;
        // Offsets never approach the end of u64 in a real store; a header claiming otherwise
        // (damage, or a crafted file) must not wrap the offsets around.
        let records: u64 = batch.iter().map(|p| p.records.len() as u64).sum();
        if self.active_state().3.checked_add(records + 1).is_none() {
            let path = self.active_state().1;
            return Err(Error::corrupt(path, 40, "offsets would run past the end of the offset space"));
        }
        let time = now_unix_ms();
        let (mut file, mut path, mut end_pos, mut next_offset, mut last_sparse) = self.active_state();
        let mut buf = Vec::with_capacity(batch.iter().map(|p| p.size).sum::<usize>() + FRAME_OVERHEAD);
        let mut sparse = Vec::new();
        let mut ranges = Vec::with_capacity(batch.len());
        let mut records = 0u64;
        for p in batch {
            let first = next_offset;
            for (kind, version, flags, stored) in &p.records {
                let frame_len = (stored.len() + FRAME_OVERHEAD) as u64;
                let seg_len = end_pos + buf.len() as u64;
                if seg_len + frame_len > self.opts.segment_size_bytes_max && seg_len > SEGMENT_HEADER_SIZE {
                    encode_frame(&mut buf, next_offset, time, KIND_SEAL, 1, 0, &[]);
                    self.write_and_sync(&*file, &path, end_pos, &buf)?;
                    self.publish_append(end_pos + buf.len() as u64 - FRAME_OVERHEAD as u64, next_offset, &mut sparse);
                    self.write_view().active.sealed_next = Some(next_offset);
                    self.advance_to_successor(TailMode::Repair)?;
                    let sealed_at = next_offset;
                    (file, path, end_pos, next_offset, last_sparse) = self.active_state();
                    // The segment just started is empty (no compaction runs under the store's
                    // lock; a view read again would have to be caught up before writing).
                    if next_offset != sealed_at || end_pos != SEGMENT_HEADER_SIZE {
                        return Err(Error::corrupt(&path, end_pos, format!("the segment after the seal at offset {sealed_at} is not the empty one just started")));
                    }
                    buf.clear();
                }
                let pos = end_pos + buf.len() as u64;
                if last_sparse.is_none_or(|l| pos >= l + SPARSE_INDEX_INTERVAL_BYTES) {
                    sparse.push((next_offset, pos));
                    last_sparse = Some(pos);
                }
                encode_frame(&mut buf, next_offset, time, *kind, *version, *flags, stored);
                next_offset += 1;
                records += 1;
            }
            ranges.push(first..next_offset);
        }
        self.write_and_sync(&*file, &path, end_pos, &buf)?;
        self.publish_append(end_pos + buf.len() as u64, next_offset, &mut sparse);
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.records_appended.fetch_add(records, Ordering::Relaxed);
        Ok(ranges)
    }

    fn active_state(&self) -> (Arc<dyn VfsFile>, PathBuf, u64, u64, Option<u64>) {
        let v = self.read_view();
        let a = &v.active;
        (a.file.clone(), a.path.clone(), a.end_pos, a.next_offset, a.sparse.last().map(|s| s.1))
    }

    fn publish_append(&self, end_pos: u64, next_offset: u64, sparse: &mut Vec<(u64, u64)>) {
        let mut v = self.write_view();
        v.active.end_pos = end_pos;
        v.active.next_offset = next_offset;
        v.active.sparse.append(sparse);
    }

    /// Writes `buf` at `pos` and syncs it. On failure the bytes are cut off again; if that is
    /// impossible, the journal refuses writes for [`REFUSAL_RETRY_AFTER`]; if the sync failed,
    /// until reopened.
    fn write_and_sync(&self, file: &dyn VfsFile, path: &Path, pos: u64, buf: &[u8]) -> Result<()> {
        if let Err(e) = file.write_all_at(buf, pos) {
            if let Err(t) = file.set_len(pos) {
                // Bytes of the write may lie past the last record: nothing is written after
                // them until the tail is judged again, as an open judges it, a while later.
                let cause = format!("write failed ({e}) and cutting it off failed ({t}); writes are tried again after {} s", REFUSAL_RETRY_AFTER.as_secs());
                self.refuse_for_now(Error::Poisoned { cause });
            }
            return Err(Error::io("write", path, e));
        }
        if self.opts.durability == Durability::Sync
            && let Err(e) = file.sync_data()
        {
            let cut = match file.set_len(pos) {
                Ok(()) => "the unsynced bytes were cut off".to_owned(),
                Err(t) => format!("cutting off the unsynced bytes failed too ({t})"),
            };
            self.refuse(Error::Poisoned { cause: format!("fdatasync of {} failed ({e}); {cut}; until the store is opened again", path.display()) });
            return Err(Error::io("fdatasync", path, e));
        }
        Ok(())
    }

    /// Refuses writes for good (in this handle): replaces a refusal that would have been
    /// lifted, never one for good.
    fn refuse(&self, e: Error) {
        let mut r = guard(&self.refusal);
        if r.as_ref().is_none_or(|r| r.since.is_some()) {
            *r = Some(Refusal { error: e, since: None });
        }
    }

    /// [`Journal::refuse`], lifted by the first append [`REFUSAL_RETRY_AFTER`] later, which
    /// reads the tail again before it writes.
    fn refuse_for_now(&self, e: Error) {
        let mut r = guard(&self.refusal);
        if r.is_none() {
            *r = Some(Refusal { error: e, since: Some(std::time::Instant::now()) });
        }
    }

    /// Reads the active segment's bytes beyond what this handle has validated, and accepts
    /// them: records other processes wrote, a seal and the next segment, or a bad tail.
    fn catch_up(&self, mode: TailMode) -> Result<()> {
        loop {
            let (file, path, end_pos, next_offset, last_sparse, sealed_next) = {
                let v = self.read_view();
                let a = &v.active;
                (a.file.clone(), a.path.clone(), a.end_pos, a.next_offset, a.sparse.last().map(|s| s.1), a.sealed_next)
            };
            if sealed_next.is_some() {
                if self.advance_to_successor(mode)? {
                    continue;
                }
                return Ok(());
            }
            let len = file.len().map_err(|e| Error::io("stat", &path, e))?;
            if len == end_pos {
                return Ok(());
            }
            if len < end_pos {
                let e = Error::corrupt(&path, len, format!("segment shrank below its last read record end ({end_pos})"));
                if mode == TailMode::Ignore {
                    return Err(e);
                }
                self.refuse(replicate(&e));
                return Err(e);
            }
            let window = len - end_pos;
            if window > SEGMENT_SIZE_BYTES_MAX + FRAME_SIZE_MAX as u64 {
                return Err(Error::corrupt(&path, end_pos, format!("segment is {len} bytes, over any size Origin writes")));
            }
            // A read of at most `tail_read_bytes_max` (a whole segment read at once was the
            // largest allocation of a server's start, 56 MB of a 1M-event store, and the
            // allocator kept it).
            let step = window.min(self.opts.tail_read_bytes_max.max(1));
            let mut buf = vec![0u8; step as usize];
            file.read_exact_at(&mut buf, end_pos).map_err(|e| Error::io("read", &path, e))?;
            let mut scan = scan_frames(&buf, end_pos, end_pos, next_offset, last_sparse, |_, _| {});
            if step < window {
                if scan.stop == Stop::End || scan.end_pos > end_pos {
                    // Every frame before where the scan stopped is whole in this read: accepted.
                    // The next read starts after them (what stopped it is read again whole).
                    let mut v = self.write_view();
                    v.active.end_pos = scan.end_pos;
                    v.active.next_offset = scan.next_offset;
                    v.active.sparse.extend_from_slice(&scan.sparse);
                    continue;
                }
                // Stopped where the read starts: a frame longer than the read, a bad one, or a
                // seal with bytes after it. Judged on every byte to the end of the file, as
                // when the whole window is read at once.
                buf = vec![0u8; window as usize];
                file.read_exact_at(&mut buf, end_pos).map_err(|e| Error::io("read", &path, e))?;
                scan = scan_frames(&buf, end_pos, end_pos, next_offset, last_sparse, |_, _| {});
            }
            {
                let mut v = self.write_view();
                v.active.end_pos = scan.end_pos;
                v.active.next_offset = scan.next_offset;
                v.active.sparse.extend_from_slice(&scan.sparse);
            }
            match scan.stop {
                Stop::End => return Ok(()),
                Stop::Sealed { next_offset, .. } => {
                    self.write_view().active.sealed_next = Some(next_offset);
                }
                Stop::Bad { pos, reason } => {
                    if mode == TailMode::Ignore {
                        return Ok(());
                    }
                    let rel = (pos - end_pos) as usize;
                    match classify_tail(&buf, end_pos, rel, scan.next_offset, reason) {
                        Tail::Torn => {
                            let size_bytes = len - pos;
                            let mut torn = TornTail { segment: path.clone(), position: pos, size_bytes, copy: None };
                            if mode == TailMode::Repair {
                                let keep = &buf[rel..rel + (size_bytes.min(TORN_TAIL_COPY_SIZE_MAX) as usize)];
                                let copy = set_aside(&*self.vfs, &self.dir, &path, pos, keep)?;
                                if let Err(e) = file.set_len(pos) {
                                    // Nothing was cut: the copy is not kept (a segment that stays
                                    // unwritable would leave one per append), and writes wait.
                                    let _ = self.vfs.remove_file(&copy);
                                    let cause = format!(
                                        "cutting a torn tail at {} byte {pos} failed ({e}); writes are tried again after {} s",
                                        path.display(),
                                        REFUSAL_RETRY_AFTER.as_secs()
                                    );
                                    self.refuse_for_now(Error::Poisoned { cause });
                                    return Err(Error::io("truncate", &path, e));
                                }
                                torn.copy = Some(copy);
                                file.sync_data().map_err(|e| Error::io("fdatasync", &path, e))?;
                            }
                            guard(&self.report).torn_tails.push(torn);
                            return Ok(());
                        }
                        Tail::Corrupt(reason) => {
                            let e = Error::corrupt(&path, pos, reason);
                            if mode == TailMode::Repair {
                                self.refuse(replicate(&e));
                            }
                            return Err(e);
                        }
                    }
                }
            }
        }
    }

    /// The active segment ends with a seal: seal it in the view and open (or, writing, create)
    /// the next segment. Returns false if the next segment is not there to open yet.
    fn advance_to_successor(&self, mode: TailMode) -> Result<bool> {
        let (old_path, old_file, base, seal_pos, next) = {
            let v = self.read_view();
            let a = &v.active;
            let Some(next) = a.sealed_next else { return Ok(true) };
            (a.path.clone(), a.file.clone(), a.base, a.end_pos, next)
        };
        if mode == TailMode::Repair {
            // The seal's writer (another process, found by this scan or an earlier `refresh`)
            // may have died before it synced it: records written after it, in the next
            // segment, must not outlive it. (A seal this handle wrote is synced already, and
            // syncing it again costs a sync of a clean file, once a segment.)
            if let Err(e) = old_file.sync_data() {
                let e = Error::io("fdatasync", &old_path, e);
                self.refuse(Error::Poisoned { cause: format!("syncing the seal of {}: {e}", old_path.display()) });
                return Err(e);
            }
        }
        let path = self.dir.join(segment_file_name(next));
        let file = match self.open_successor(&path, base, next, mode) {
            Ok(Successor::Opened(f)) => f,
            Ok(Successor::NotYet) => return Ok(false),
            Ok(Successor::Compacted) => {
                self.reload_view(next)?;
                return Ok(true);
            }
            Err(e) => {
                let sync_failed = matches!(&e, Error::Io { op, .. } if *op == "fdatasync" || *op == "fsync directory");
                if mode == TailMode::Repair && sync_failed {
                    // The next segment's state on disk is unknown (a failed sync may have
                    // dropped its header or its directory entry): write nothing more here.
                    // Other failures (a full disk) leave a file the next attempt sets aside.
                    self.refuse(Error::Poisoned { cause: format!("starting segment {}: {e}", path.display()) });
                }
                return Err(e);
            }
        };
        let bytes = old_file.map().map_err(|e| Error::io("map", &old_path, e))?;
        let mut v = self.write_view();
        let sparse = std::mem::take(&mut v.active.sparse);
        // Not where a compaction merged the segment away since this view was taken (its
        // successor stays): its index would be left for good beside no segment.
        if mode == TailMode::Repair && self.vfs.exists(&old_path).unwrap_or(true) {
            let idx = encode_index(base, bytes.len() as u64, &sparse);
            if let Err(e) = write_index(&*self.vfs, &old_path, &idx) {
                self.index_write_failures.fetch_add(1, Ordering::Relaxed);
                let mut unsaid = guard(&self.index_write_unsaid);
                if unsaid.len() < INDEX_WRITE_UNSAID_MAX {
                    unsaid.push(index_write_failure(&old_path, &e));
                }
            }
        }
        v.sealed.push(Arc::new(Sealed::new(base, next, old_path, bytes, seal_pos, sparse)));
        v.active = Active {
            base: next,
            path,
            file,
            end_pos: SEGMENT_HEADER_SIZE,
            next_offset: next,
            sparse: Vec::new(),
            sealed_next: None,
        };
        Ok(true)
    }

    /// Reads the journal's segments again, as an open does (without removing anything), after a
    /// compaction merged segments this handle had not reached into one before them: the new
    /// view's sealed segments hold every record this one read, and `next` on (the offset after
    /// the last record this handle has seen); its last segment is read on from its header.
    /// The files this handle mapped stay mapped for reads under way (their bytes are the
    /// merged segment's). A journal that does not reach `next` is damage.
    fn reload_view(&self, next: u64) -> Result<()> {
        let mut report = OpenReport::default();
        let mut unwritten = Vec::new();
        let loaded = load_view(&*self.vfs, &self.dir, &self.opts, false, &mut report, &mut unwritten)?;
        let Some((store_id, epoch, view)) = loaded else {
            return Err(Error::corrupt(&self.dir, 0, format!("no segment is left, where this process had read to offset {next}")));
        };
        if store_id != self.store_id || epoch != self.epoch {
            return Err(Error::corrupt(&view.active.path, 16, "segment belongs to another store or epoch"));
        }
        if view.active.base < next {
            return Err(Error::corrupt(
                &view.active.path,
                40,
                format!("the journal's last segment starts at offset {}, where this process had read to offset {next}", view.active.base),
            ));
        }
        *self.write_view() = view;
        Ok(())
    }

    /// Opens the segment that follows a seal, creating it (writer) if it is missing or was cut
    /// short while being created. A writer adopting a segment another process created syncs
    /// its header and the directory first: that process may have died before it did. A missing
    /// segment with segments after it was merged into one before it by a compaction
    /// ([`Successor::Compacted`]): nothing is created then; one `TIP` names was removed
    /// (damage). `base` is the sealed segment's.
    fn open_successor(&self, path: &Path, base: u64, next: u64, mode: TailMode) -> Result<Successor> {
        let repair = mode == TailMode::Repair;
        if !self.vfs.exists(path).map_err(|e| Error::io("stat", path, e))? {
            // A segment is missing after a seal only while the process that wrote the seal
            // has not created it yet, or died before it did: it is then the last. Compaction
            // never merges the last segment, so segments after this one mean it was merged
            // into the one before (the files this handle mapped are gone).
            let names = self.vfs.list_dir(&self.dir).map_err(|e| Error::io("list", &self.dir, e))?;
            if names.iter().filter_map(|n| parse_segment_file_name(n)).any(|base| base > next) {
                return Ok(Successor::Compacted);
            }
            // Unless `TIP` says it was started: then its file was removed (under a handle that
            // had not reached it), and making it again would give its records' offsets again.
            if let Some(e) = segments_gone(&self.dir, &read_tip(&*self.vfs, &self.dir), (self.store_id, self.epoch), base, Some(next)) {
                return Err(e);
            }
            if !repair {
                return Ok(Successor::NotYet);
            }
            return create_segment(&*self.vfs, &self.dir, self.store_id, self.epoch, next).map(Successor::Opened);
        }
        let f = if self.opts.access == Access::ReadWrite { self.vfs.open_rw(path) } else { self.vfs.open_read(path) }
            .map_err(|e| Error::io("open", path, e))?;
        let len = f.len().map_err(|e| Error::io("stat", path, e))?;
        let mut head = vec![0u8; len.min(CUT_CREATION_HEAD_BYTES) as usize];
        f.read_exact_at(&mut head, 0).map_err(|e| Error::io("read", path, e))?;
        match SegmentHeader::decode(&head, path) {
            Ok(h) if h.store_id == self.store_id && h.epoch == self.epoch && h.base_offset == next => {
                if repair {
                    f.sync_data().map_err(|e| Error::io("fdatasync", path, e))?;
                    self.vfs.sync_dir(&self.dir).map_err(|e| Error::io("fsync directory", &self.dir, e))?;
                    let tip = Tip { store_id: self.store_id, epoch: self.epoch, base: next };
                    advance_tip(&*self.vfs, &self.dir, tip)?;
                }
                Ok(Successor::Opened(f))
            }
            Ok(_) => Err(Error::corrupt(path, 0, "next segment belongs to another store, epoch or offset")),
            Err(e) => {
                if !is_cut_creation(len, &head) {
                    return Err(e);
                }
                if !repair {
                    return Ok(Successor::NotYet);
                }
                let copy = set_aside(&*self.vfs, &self.dir, path, 0, &head)?;
                guard(&self.report).torn_tails.push(TornTail { segment: path.to_path_buf(), position: 0, size_bytes: len, copy: Some(copy) });
                self.vfs.remove_file(path).map_err(|e| Error::io("remove", path, e))?;
                create_segment(&*self.vfs, &self.dir, self.store_id, self.epoch, next).map(Successor::Opened)
            }
        }
    }

    /// Calls `f` with every record from offset `from` on, in order, until it returns
    /// `Break`. Returns the offset after the last record passed to `f`.
    /// Every frame is checked again as it is read; damage is an error, never skipped.
    pub fn read_from<F>(&self, from: u64, mut f: F) -> Result<u64>
    where
        F: FnMut(Record<'_>) -> Result<ControlFlow<()>>,
    {
        let (sealed, file, path, active_base, active_end, active_next, active_seek) = {
            let v = self.read_view();
            let a = &v.active;
            (
                v.sealed.clone(),
                a.file.clone(),
                a.path.clone(),
                a.base,
                a.end_pos,
                a.next_offset,
                seek(&a.sparse, from),
            )
        };
        let mut next = from.max(sealed.first().map_or(active_base, |s| s.base));
        let mut scratch = Vec::new();
        for s in sealed.iter() {
            if s.next_offset <= next {
                continue;
            }
            let (mut expected, mut pos) = seek(&s.sparse, next).unwrap_or((s.base, SEGMENT_HEADER_SIZE));
            while pos < s.seal_pos {
                let frame = match check_frame(&s.bytes[pos as usize..s.seal_pos as usize]) {
                    Check::Valid(fr) => fr,
                    Check::Incomplete => return Err(Error::corrupt(&s.path, pos, "frame cut short inside a sealed segment")),
                    Check::Invalid(r) => return Err(Error::corrupt(&s.path, pos, r)),
                };
                if frame.offset != expected {
                    return Err(Error::corrupt(&s.path, pos, "record offset out of sequence"));
                }
                if frame.offset >= next {
                    let rec = to_record(&frame, &mut scratch)?;
                    next = frame.offset + 1;
                    if f(rec)?.is_break() {
                        return Ok(next);
                    }
                }
                expected += 1;
                pos += frame.frame_len as u64;
            }
        }
        if next >= active_next {
            return Ok(next);
        }
        let (mut expected, mut pos) = active_seek.unwrap_or((active_base, SEGMENT_HEADER_SIZE));
        const CHUNK: u64 = 4 * 1024 * 1024;
        let mut buf = Vec::new();
        let mut want = CHUNK;
        while pos < active_end {
            let n = want.min(active_end - pos);
            buf.resize(n as usize, 0);
            file.read_exact_at(&mut buf, pos).map_err(|e| Error::io("read", &path, e))?;
            let mut i = 0usize;
            while i < buf.len() {
                let frame = match check_frame(&buf[i..]) {
                    Check::Valid(frame) => frame,
                    Check::Incomplete => break,
                    Check::Invalid(r) => return Err(Error::corrupt(&path, pos + i as u64, r)),
                };
                if frame.offset != expected {
                    return Err(Error::corrupt(&path, pos + i as u64, "record offset out of sequence"));
                }
                if frame.offset >= next {
                    let rec = to_record(&frame, &mut scratch)?;
                    next = frame.offset + 1;
                    if f(rec)?.is_break() {
                        return Ok(next);
                    }
                }
                expected += 1;
                i += frame.frame_len;
            }
            if i == 0 {
                // The first frame does not fit in the chunk: read it whole next time.
                let need = if buf.len() >= 4 { u64::from(u32_at(&buf, 0)) } else { 0 };
                if need as usize > FRAME_SIZE_MAX || need <= n || pos + need > active_end {
                    return Err(Error::corrupt(&path, pos, "frame runs past the validated end"));
                }
                want = need;
                continue;
            }
            pos += i as u64;
            want = CHUNK;
        }
        Ok(next)
    }

    /// Calls `f` with the one record at `offset`; `None` if the journal does not hold it (yet).
    /// For point reads (an event's text, a citation's line), which [`read_from`] would make
    /// costly on large records: a frame of a sealed segment is checked the first time this
    /// handle reads it there (sealed segments never change; `read_from` still checks every
    /// frame every time), and in the active segment only the frames from the nearest
    /// sparse-index entry to the one asked for are read, headers first. Anything unexpected on
    /// the way is handed to `read_from`, so damage is reported exactly as it reports it.
    ///
    /// [`read_from`]: Journal::read_from
    pub fn read_one<R>(&self, offset: u64, f: impl FnOnce(Record<'_>) -> Result<R>) -> Result<Option<R>> {
        let (sealed, file, active_base, active_end, active_next, active_seek) = {
            let v = self.read_view();
            let a = &v.active;
            (v.sealed.clone(), a.file.clone(), a.base, a.end_pos, a.next_offset, seek(&a.sparse, offset))
        };
        if offset >= active_next || offset < sealed.first().map_or(active_base, |s| s.base) {
            return Ok(None);
        }
        let mut scratch = Vec::new();
        if let Some(s) = sealed.iter().find(|s| s.base <= offset && offset < s.next_offset) {
            let (mut expected, mut pos) = seek(&s.sparse, offset).unwrap_or((s.base, SEGMENT_HEADER_SIZE));
            while pos < s.seal_pos && expected <= offset {
                let bytes = &s.bytes[pos as usize..s.seal_pos as usize];
                let frame = if expected == offset && s.is_checked(offset) { check_frame_known(bytes) } else { check_frame(bytes) };
                let Check::Valid(frame) = frame else { break };
                if frame.offset != expected {
                    break;
                }
                if frame.offset == offset {
                    s.set_checked(offset);
                    return f(to_record(&frame, &mut scratch)?).map(Some);
                }
                expected += 1;
                pos += frame.frame_len as u64;
            }
        } else {
            let (mut expected, mut pos) = active_seek.unwrap_or((active_base, SEGMENT_HEADER_SIZE));
            let mut head = [0u8; 16];
            // The thread's read buffer, taken (a nested read takes an empty one) and given back:
            // a fresh one per read was allocated and zeroed whole, a tenth of a search's time
            // in process on a store whose records are still in the active segment.
            let mut buf = READ_BUFFER.take();
            let give_back = |b: Vec<u8>| {
                if b.capacity() <= READ_BUFFER_KEPT {
                    READ_BUFFER.set(b);
                }
            };
            while pos + head.len() as u64 <= active_end && expected <= offset {
                if file.read_exact_at(&mut head, pos).is_err() {
                    break;
                }
                let len = u64::from(u32_at(&head, 0));
                if !(FRAME_OVERHEAD as u64..=FRAME_SIZE_MAX as u64).contains(&len) || pos + len > active_end || u64_at(&head, 8) != expected {
                    break;
                }
                if expected < offset {
                    expected += 1;
                    pos += len;
                    continue;
                }
                // Grown (zeroed) only past what it held: the bytes read are all that is looked at.
                if buf.len() < len as usize {
                    buf.resize(len as usize, 0);
                }
                let bytes = &mut buf[..len as usize];
                if file.read_exact_at(bytes, pos).is_err() {
                    break;
                }
                let Check::Valid(frame) = check_frame(bytes) else { break };
                if frame.offset != offset {
                    break;
                }
                let out = to_record(&frame, &mut scratch).and_then(f).map(Some);
                give_back(buf);
                return out;
            }
            give_back(buf);
        }
        // Not where the headers said: the full read checks every frame and reports the damage.
        let mut f = Some(f);
        let mut out = None;
        self.read_from(offset, |r| {
            if r.offset == offset
                && let Some(f) = f.take()
            {
                out = Some(f(r)?);
            }
            Ok(ControlFlow::Break(()))
        })?;
        Ok(out)
    }

    /// Reads up to `limit` records from `from` into owned values (convenience for tests and
    /// small tools; large reads should use [`read_from`](Journal::read_from)).
    pub fn read_vec(&self, from: u64, limit: usize) -> Result<Vec<OwnedRecord>> {
        let mut out = Vec::new();
        if limit == 0 {
            return Ok(out);
        }
        self.read_from(from, |r| {
            out.push(OwnedRecord {
                offset: r.offset,
                time_unix_ms: r.time_unix_ms,
                kind: r.kind,
                kind_version: r.kind_version,
                payload: r.payload.to_vec(),
            });
            Ok(if out.len() >= limit { ControlFlow::Break(()) } else { ControlFlow::Continue(()) })
        })?;
        Ok(out)
    }

    /// Identity and counters.
    pub fn status(&self) -> Result<Status> {
        let v = self.read_view();
        let mut bytes: u64 = v.sealed.iter().map(|s| s.bytes.len() as u64).sum();
        bytes += v.active.file.len().map_err(|e| Error::io("stat", &v.active.path, e))?;
        let recovered = self.dir.join(RECOVERED_DIR_NAME);
        let torn_tails_repaired = if self.vfs.exists(&recovered).unwrap_or(false) {
            self.vfs.list_dir(&recovered).map_err(|e| Error::io("list", &recovered, e))?.len() as u64
        } else {
            0
        };
        Ok(Status {
            dir: self.dir.clone(),
            store_id: self.store_id,
            epoch: self.epoch,
            segments: v.sealed.len() + 1,
            first_offset: v.sealed.first().map_or(v.active.base, |s| s.base),
            next_offset: v.active.next_offset,
            bytes,
            torn_tails_repaired,
            refusing_writes: guard(&self.refusal).as_ref().map(|r| r.error.to_string()),
            batches: self.batches.load(Ordering::Relaxed),
            records_appended: self.records_appended.load(Ordering::Relaxed),
            index_write_failures: self.index_write_failures.load(Ordering::Relaxed),
        })
    }

    /// What went wrong at each index file this handle failed to write (at its open, or when a
    /// segment was sealed) since the last call: each is returned once, for the user to be told.
    pub fn take_index_write_failures(&self) -> Vec<String> {
        std::mem::take(&mut *guard(&self.index_write_unsaid))
    }

    /// Paths of the segment files, oldest first.
    pub fn segment_paths(&self) -> Vec<PathBuf> {
        let v = self.read_view();
        v.sealed.iter().map(|s| s.path.clone()).chain(std::iter::once(v.active.path.clone())).collect()
    }

    /// The format version this build writes.
    pub fn format_version() -> u16 {
        FORMAT_VERSION
    }
}

/// A record with its payload copied out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedRecord {
    /// Its offset.
    pub offset: u64,
    /// When its batch was written.
    pub time_unix_ms: i64,
    /// Kind byte.
    pub kind: u8,
    /// Payload schema version.
    pub kind_version: u8,
    /// Decompressed payload.
    pub payload: Vec<u8>,
}

pub(crate) fn to_record<'a>(frame: &FrameView<'a>, scratch: &'a mut Vec<u8>) -> Result<Record<'a>> {
    if frame.flags & !FLAGS_KNOWN != 0 {
        return Err(Error::Decode { offset: frame.offset, reason: format!("unknown frame flags {:#x}", frame.flags) });
    }
    let payload: &'a [u8] = if frame.flags & FLAG_ZSTD != 0 {
        codec::decompress_into(frame.payload, scratch, frame.offset)?;
        scratch
    } else {
        frame.payload
    };
    Ok(Record {
        offset: frame.offset,
        time_unix_ms: frame.time_unix_ms,
        kind: frame.kind,
        kind_version: frame.kind_version,
        payload,
    })
}

/// Finds the seal frame that must end a sealed segment: (its position, the next base offset).
pub(crate) fn find_seal(bytes: &[u8], path: &Path) -> Result<(u64, u64)> {
    let len = bytes.len();
    if len < SEGMENT_HEADER_SIZE as usize + FRAME_OVERHEAD {
        return Err(Error::corrupt(path, len as u64, "sealed segment too short to hold its seal"));
    }
    let seal_len = FRAME_OVERHEAD;
    let pos = len - seal_len;
    match check_frame(&bytes[pos..]) {
        Check::Valid(f) if f.kind == KIND_SEAL && f.frame_len == seal_len => Ok((pos as u64, f.offset)),
        _ => Err(Error::corrupt(path, pos as u64, "sealed segment does not end with a seal frame")),
    }
}

/// Removes, as a read-write open does, what an interrupted compaction or a crash left in the
/// journal in `dir` (unfinished `.tmp` and `.compact` files, segments a merged one covers, a
/// last segment whose creation was cut short), for a caller holding the store's exclusive
/// lock (`journal compact`).
pub(crate) fn tidy(vfs: &dyn Vfs, dir: &Path) -> Result<()> {
    load_view(vfs, dir, &Options::default(), true, &mut OpenReport::default(), &mut Vec::new()).map(drop)
}

/// The segments of the journal in `dir` as a view: every sealed segment mapped (its index
/// loaded, or built from its frames), the last one to be read on from its header. `tidy` (a
/// writer's open, under the store's exclusive lock): files an interrupted compaction or a crash
/// left are removed or set aside, and index files written; otherwise they are passed over
/// (and reported). `None` when the directory holds no segment.
fn load_view(
    vfs: &dyn Vfs,
    dir: &Path,
    opts: &Options,
    tidy: bool,
    report: &mut OpenReport,
    unwritten: &mut Vec<String>,
) -> Result<Option<(StoreId, u64, View)>> {
    let mut names = vfs.list_dir(dir).map_err(|e| Error::io("list", dir, e))?;
    names.sort();
    if tidy {
        // Unfinished writes, and indexes of segments that are gone (written by a writer behind
        // a compaction, before this build).
        let orphan = |n: &String| n.strip_suffix(INDEX_SUFFIX).is_some_and(|b| parse_segment_file_name(&format!("{b}.seg")).is_some() && !names.contains(&format!("{b}.seg")));
        for name in names.iter().filter(|n| n.ends_with(".tmp") || n.ends_with(".compact") || orphan(n)) {
            let p = dir.join(name);
            vfs.remove_file(&p).map_err(|e| Error::io("remove leftover", &p, e))?;
        }
    }
    let mut bases: Vec<u64> = names.iter().filter_map(|n| parse_segment_file_name(n)).collect();
    bases.sort_unstable();
    if bases.len() > SEGMENTS_MAX {
        return Err(Error::Invalid(format!("{} segments exceed the limit of {SEGMENTS_MAX}", bases.len())));
    }

    // A last segment whose creation a crash cut short holds no records: set it aside.
    while let Some(&last) = bases.last() {
        let path = dir.join(segment_file_name(last));
        let file = vfs.open_read(&path).map_err(|e| Error::io("open", &path, e))?;
        let len = file.len().map_err(|e| Error::io("stat", &path, e))?;
        let mut head = vec![0u8; len.min(CUT_CREATION_HEAD_BYTES) as usize];
        file.read_exact_at(&mut head, 0).map_err(|e| Error::io("read", &path, e))?;
        match SegmentHeader::decode(&head, &path) {
            Ok(_) => break,
            Err(e) => {
                if !is_cut_creation(len, &head) {
                    return Err(e);
                }
                report.torn_tails.push(TornTail { segment: path.clone(), position: 0, size_bytes: len, copy: None });
                if tidy {
                    let copy = set_aside(vfs, dir, &path, 0, &head)?;
                    vfs.remove_file(&path).map_err(|e| Error::io("remove", &path, e))?;
                    vfs.sync_dir(dir).map_err(|e| Error::io("fsync directory", dir, e))?;
                    if let Some(t) = report.torn_tails.last_mut() {
                        t.copy = Some(copy);
                    }
                }
                bases.pop();
            }
        }
    }

    if bases.is_empty() {
        return Ok(None);
    }

    // Headers: every segment of one store and epoch.
    let mut headers = Vec::with_capacity(bases.len());
    for &base in &bases {
        let path = dir.join(segment_file_name(base));
        let file = vfs.open_read(&path).map_err(|e| Error::io("open", &path, e))?;
        let mut head = [0u8; SEGMENT_HEADER_SIZE as usize];
        file.read_exact_at(&mut head, 0).map_err(|_| Error::corrupt(&path, 0, "segment header cut short"))?;
        let h = SegmentHeader::decode(&head, &path)?;
        if h.base_offset != base {
            return Err(Error::corrupt(&path, 40, format!("header says base offset {}, file name says {base}", h.base_offset)));
        }
        if h.codec != CODEC_ID {
            return Err(Error::corrupt(&path, 10, format!("codec {} is not one this build reads", h.codec)));
        }
        headers.push((path, file, h));
    }
    let (store_id, epoch) = (headers[0].2.store_id, headers[0].2.epoch);
    for (path, _, h) in &headers {
        if h.store_id != store_id || h.epoch != epoch {
            return Err(Error::corrupt(path, 16, "segment belongs to another store or epoch"));
        }
    }

    // Sealed segments: all but the last, each ending with its seal.
    let mut sealed: Vec<Arc<Sealed>> = Vec::new();
    // Every journal starts at offset 0 (compaction keeps the first segment's name, salvage
    // numbers from 0): a first segment further on means the files before it are gone.
    let mut expected = 0;
    let (last_path, last_file, last_header) = headers.pop().ok_or_else(|| Error::NoJournal { dir: dir.to_path_buf() })?;
    for (path, file, h) in headers {
        let bytes = file.map().map_err(|e| Error::io("map", &path, e))?;
        let (seal_pos, next_offset) = find_seal(&bytes, &path)?;
        if h.base_offset < expected && next_offset <= expected {
            // Left over by a compaction that merged it into the segment before it.
            report.leftovers.push(path.clone());
            if tidy {
                vfs.remove_file(&path).map_err(|e| Error::io("remove leftover", &path, e))?;
                let idx = path.with_extension("idx");
                if vfs.exists(&idx).unwrap_or(false) {
                    vfs.remove_file(&idx).map_err(|e| Error::io("remove leftover", &idx, e))?;
                }
            }
            continue;
        }
        if h.base_offset != expected {
            return Err(Error::corrupt(&path, 40, misplaced_segment(h.base_offset, expected)));
        }
        let sparse = load_or_build_index(vfs, &path, &bytes, h.base_offset, seal_pos, next_offset, tidy, unwritten)?;
        sealed.push(Arc::new(Sealed::new(h.base_offset, next_offset, path, bytes, seal_pos, sparse)));
        expected = next_offset;
    }
    if tidy && !report.leftovers.is_empty() {
        vfs.sync_dir(dir).map_err(|e| Error::io("fsync directory", dir, e))?;
    }
    if last_header.base_offset != expected {
        return Err(Error::corrupt(&last_path, 40, misplaced_segment(last_header.base_offset, expected)));
    }
    let file = if opts.access == Access::ReadWrite {
        vfs.open_rw(&last_path).map_err(|e| Error::io("open", &last_path, e))?
    } else {
        last_file
    };
    let active = Active {
        base: last_header.base_offset,
        path: last_path,
        file,
        end_pos: SEGMENT_HEADER_SIZE,
        next_offset: last_header.base_offset,
        sparse: Vec::new(),
        sealed_next: None,
    };
    Ok(Some((store_id, epoch, View { sealed, active })))
}

fn load_or_build_index(
    vfs: &dyn Vfs,
    path: &Path,
    bytes: &[u8],
    base: u64,
    seal_pos: u64,
    next_offset: u64,
    rw: bool,
    unwritten: &mut Vec<String>,
) -> Result<Vec<(u64, u64)>> {
    let idx_path = path.with_extension(INDEX_SUFFIX.trim_start_matches('.'));
    if let Ok(f) = vfs.open_read(&idx_path)
        && let Ok(len) = f.len()
        && len <= 36 + u64::from(SPARSE_INDEX_ENTRIES_MAX) * 16
    {
        let mut b = vec![0u8; len as usize];
        if f.read_exact_at(&mut b, 0).is_ok()
            && let Some(entries) = decode_index(&b, base, bytes.len() as u64)
        {
            return Ok(entries);
        }
    }
    // Missing or damaged index: rebuild it from the segment, checking every frame on the way.
    let scan = scan_frames(&bytes[..seal_pos as usize], 0, SEGMENT_HEADER_SIZE, base, None, |_, _| {});
    match scan.stop {
        Stop::End if scan.next_offset == next_offset => {}
        Stop::End => return Err(Error::corrupt(path, seal_pos, "seal names an offset the records do not reach")),
        Stop::Sealed { seal_pos: p, .. } => return Err(Error::corrupt(path, p, "seal frame before the end of the segment")),
        Stop::Bad { pos, reason } => return Err(Error::corrupt(path, pos, reason)),
    }
    // The index is a cache: failing to write it costs the next open this scan, so the open goes
    // on, and the failure is kept for the user to be told.
    if rw && let Err(e) = write_index(vfs, path, &encode_index(base, bytes.len() as u64, &scan.sparse)) {
        unwritten.push(index_write_failure(path, &e));
    }
    Ok(scan.sparse)
}

/// Why a segment that starts at offset `base` where `expected` was due is damage.
pub(crate) fn misplaced_segment(base: u64, expected: u64) -> String {
    if expected == 0 && base > 0 {
        format!("the journal's first segment starts at offset {base}: offsets 0 to {} are missing (the segment files that held them are gone)", base - 1)
    } else {
        format!("segment starts at offset {base}, expected {expected}")
    }
}

/// Most index write failures a handle keeps for [`Journal::take_index_write_failures`] until
/// they are taken (a process that never takes them, on a disk that stays full, keeps no more).
const INDEX_WRITE_UNSAID_MAX: usize = 16;

/// What to tell the user of an index file of `segment` that could not be written.
fn index_write_failure(segment: &Path, e: &io::Error) -> String {
    let idx = segment.with_extension(INDEX_SUFFIX.trim_start_matches('.'));
    format!(
        "could not write {} ({e}); it only says where records sit in a sealed segment, so nothing is lost: \
         opening the store scans the segment instead and tries to write it again",
        idx.display()
    )
}

fn write_index(vfs: &dyn Vfs, segment: &Path, bytes: &[u8]) -> io::Result<()> {
    let idx = segment.with_extension(INDEX_SUFFIX.trim_start_matches('.'));
    let tmp = segment.with_extension("idx.tmp");
    if vfs.exists(&tmp)? {
        vfs.remove_file(&tmp)?;
    }
    let f = vfs.create_new(&tmp)?;
    f.write_all_at(bytes, 0)?;
    vfs.rename(&tmp, &idx)
}

/// True for a segment file that a crash cut short while it was being created: shorter than a
/// header, or nothing but zeros (`head` holds the file's first bytes). Anything else with a bad
/// header is corruption: under the disk model a header that reached the disk is whole.
/// How much of a segment's start an open reads to judge it, [`is_cut_creation`] among others.
const CUT_CREATION_HEAD_BYTES: u64 = SEGMENT_HEADER_SIZE + 4096;

fn is_cut_creation(len: u64, head: &[u8]) -> bool {
    len < SEGMENT_HEADER_SIZE || (len <= head.len() as u64 && head.iter().all(|&b| b == 0))
}

/// Brings `dir`'s `TIP` (as read, `tip`) up to the last segment `a` at a read-write open;
/// what could not be done is said in `report`. `TIP` names a segment only once its header and
/// its name are on disk: the writer that started it may have failed, or died, before it synced
/// them. The header is written again (the same bytes) before the sync: after a failed sync the
/// kernel may hold its page as clean without its being on disk, and a sync of a file with
/// nothing dirty writes nothing. Returns the refusal a failed sync calls for (what is on disk
/// of the segment is unknown: nothing more is written through the handle, and the open reads
/// on, repairing nothing).
fn bring_tip_up(vfs: &dyn Vfs, dir: &Path, tip: &TipFile, store: (StoreId, u64), a: &Active, report: &mut OpenReport) -> Option<Error> {
    let mut head = [0u8; SEGMENT_HEADER_SIZE as usize];
    let rewritten = a
        .file
        .read_exact_at(&mut head, 0)
        .map_err(|e| Error::io("read", &a.path, e))
        .and_then(|()| a.file.write_all_at(&head, 0).map_err(|e| Error::io("write", &a.path, e)));
    if let Err(e) = rewritten {
        // Nothing changed (a full disk on a copy-on-write file system, say): no `TIP` this time.
        report.tip_unwritten = Some(format!("could not write {} at the open ({e}): nothing is lost, the next open tries again", tip_path(dir).display()));
        return None;
    }
    let synced = a
        .file
        .sync_data()
        .map_err(|e| Error::io("fdatasync", &a.path, e))
        .and_then(|()| vfs.sync_dir(dir).map_err(|e| Error::io("fsync directory", dir, e)));
    if let Err(e) = synced {
        report.tip_unwritten = Some(format!(
            "could not make the last segment {} sure on disk at the open ({e}): writes are refused until the store is opened \
             again, and {} was not written",
            a.path.display(),
            tip_path(dir).display()
        ));
        return Some(Error::Poisoned { cause: format!("making {} sure on disk at the open: {e}", a.path.display()) });
    }
    match advance_tip(vfs, dir, Tip { store_id: store.0, epoch: store.1, base: a.base }) {
        Ok(()) => {
            if let TipFile::Unreadable(why) = tip {
                report.tip_rewritten =
                    Some(format!("{} did not read ({why}); it is written again, so a segment file removed before now is not told", tip_path(dir).display()));
            }
        }
        Err(e) => {
            report.tip_unwritten = Some(format!(
                "could not write {}: {e}; it only lets an open tell a removed last segment from one not started yet, so nothing is \
                 lost: the next open tries again (remove it if it is not a file)",
                tip_path(dir).display()
            ));
        }
    }
    None
}

/// Creates a segment: header written and synced, then the directory synced.
pub(crate) fn create_segment(vfs: &dyn Vfs, dir: &Path, store_id: StoreId, epoch: u64, base: u64) -> Result<Arc<dyn VfsFile>> {
    let path = dir.join(segment_file_name(base));
    let header = SegmentHeader {
        format_version: FORMAT_VERSION,
        codec: CODEC_ID,
        store_id,
        epoch,
        base_offset: base,
        created_unix_ms: now_unix_ms(),
    };
    let f = vfs.create_new(&path).map_err(|e| Error::io("create", &path, e))?;
    f.write_all_at(&header.encode(), 0).map_err(|e| Error::io("write", &path, e))?;
    f.sync_data().map_err(|e| Error::io("fdatasync", &path, e))?;
    vfs.sync_dir(dir).map_err(|e| Error::io("fsync directory", dir, e))?;
    // Only now, with the segment on disk, may `TIP` name it.
    advance_tip(vfs, dir, Tip { store_id, epoch, base })?;
    Ok(f)
}

/// Copies damaged or cut bytes into `recovered/` before they are removed.
fn set_aside(vfs: &dyn Vfs, dir: &Path, segment: &Path, pos: u64, bytes: &[u8]) -> Result<PathBuf> {
    let rdir = dir.join(RECOVERED_DIR_NAME);
    vfs.create_dir_all(&rdir).map_err(|e| Error::io("create directory", &rdir, e))?;
    let stem = segment.file_name().and_then(|n| n.to_str()).unwrap_or("segment");
    let mut n = 0u32;
    let path = loop {
        let p = rdir.join(format!("{stem}-at-{pos}-{}-{n}.torn", now_unix_ms()));
        if !vfs.exists(&p).map_err(|e| Error::io("stat", &p, e))? {
            break p;
        }
        n += 1;
    };
    let f = vfs.create_new(&path).map_err(|e| Error::io("create", &path, e))?;
    f.write_all_at(bytes, 0).map_err(|e| Error::io("write", &path, e))?;
    f.sync_data().map_err(|e| Error::io("fdatasync", &path, e))?;
    vfs.sync_dir(&rdir).map_err(|e| Error::io("fsync directory", &rdir, e))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimFs;

    fn opts(seg: u64) -> Options {
        Options { segment_size_bytes_max: seg, ..Options::default() }
    }

    #[test]
    fn appends_read_back_across_segment_rolls_and_reopen() {
        let fs = SimFs::new(1);
        let dir = Path::new("/store/journal");
        let j = Journal::open_with(Arc::new(fs.clone()), dir, opts(4096)).expect("open");
        let mut expect = Vec::new();
        for i in 0..200u32 {
            let payload = vec![(i % 251) as u8; (i as usize * 37) % 900];
            let r = j.append(vec![NewRecord::scratch(payload.clone())]).expect("append");
            assert_eq!(r, u64::from(i)..u64::from(i) + 1);
            expect.push(payload);
        }
        assert!(j.segment_paths().len() > 5, "small segments roll");
        let got = j.read_vec(0, usize::MAX).expect("read");
        assert_eq!(got.iter().map(|r| r.payload.clone()).collect::<Vec<_>>(), expect);
        assert_eq!(j.read_vec(150, 3).expect("read").iter().map(|r| r.offset).collect::<Vec<_>>(), vec![150, 151, 152]);
        drop(j);
        let j = Journal::open_with(Arc::new(fs.clone()), dir, opts(4096)).expect("reopen");
        assert_eq!(j.next_offset(), 200);
        assert!(j.open_report().torn_tails.is_empty());
        let got = j.read_vec(0, usize::MAX).expect("read");
        assert_eq!(got.len(), 200);
        assert_eq!(got[199].payload, expect[199]);
        let report = crate::verify::verify(&fs, dir).expect("verify");
        assert!(report.is_clean(), "{report:?}");
        assert_eq!(report.records, 200);
    }

    /// What an open of a journal found: its records, where it ends and its torn tails, or its
    /// error; and the active segment's bytes after the open.
    #[allow(clippy::type_complexity)]
    fn opened(fs: &SimFs, dir: &Path, opts: Options, active: &Path) -> (std::result::Result<(u64, Vec<Vec<u8>>, Vec<(u64, u64)>, Vec<(u64, u64)>), String>, Vec<u8>) {
        let got = Journal::open_with(Arc::new(fs.clone()), dir, opts).map_err(|e| e.to_string()).and_then(|j| {
            let records = j.read_vec(0, usize::MAX).map_err(|e| e.to_string())?;
            let torn = j.open_report().torn_tails.iter().map(|t| (t.position, t.size_bytes)).collect();
            // The sparse index of the active segment, which point reads seek by.
            let sparse = j.read_view().active.sparse.clone();
            Ok((j.next_offset(), records.into_iter().map(|r| r.payload).collect(), torn, sparse))
        });
        (got, fs.read_file(active).unwrap_or_default())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 96, ..Default::default() })]
        /// The active segment read a little at a time (`tail_read_bytes_max` from 1 byte up)
        /// finds what reading it whole finds: the same records, end, torn tails, repairs and
        /// errors, whatever its tail holds (nothing wrong, a cut, garbage, zeros, a flipped bit
        /// or a seal with bytes after it); and so does a handle catching up with records
        /// another appended.
        #[test]
        fn the_active_segment_read_in_pieces_gives_what_it_gives_read_whole(
            sizes in proptest::collection::vec(0usize..2500, 1..40),
            damage in 0u8..6,
            at in proptest::prelude::any::<u64>(),
            junk in proptest::collection::vec(proptest::prelude::any::<u8>(), 1..300),
            window in proptest::prop_oneof![1u64..64, 64u64..4096, 4096u64..40_000],
            write in proptest::prelude::any::<bool>(),
            more in 0usize..6,
        ) {
            let fs = SimFs::new(at);
            let dir = Path::new("/s/journal");
            let j = Journal::open_with(Arc::new(fs.clone()), dir, opts(16 << 10)).expect("open");
            for (i, &n) in sizes.iter().enumerate() {
                j.append(vec![NewRecord::scratch(vec![i as u8 | 1; n])]).expect("append");
            }
            let active = j.segment_paths().last().cloned().expect("a segment");
            drop(j);
            let mut bytes = fs.read_file(&active).expect("read");
            let body = bytes.len() as u64 - SEGMENT_HEADER_SIZE;
            let pos = (SEGMENT_HEADER_SIZE + at % body.max(1)) as usize;
            match damage {
                1 => bytes.truncate(pos),
                2 => bytes.extend_from_slice(&junk),
                3 => bytes.resize(bytes.len() + junk.len(), 0),
                4 => {
                    if pos < bytes.len() {
                        bytes[pos] ^= 1 << (at % 8);
                    }
                }
                5 => {
                    // A seal, then bytes after it.
                    let next = sizes.len() as u64;
                    encode_frame(&mut bytes, next, 0, KIND_SEAL, 1, 0, &[]);
                    bytes.extend_from_slice(&junk);
                }
                _ => {}
            }
            fs.write_file(&active, &bytes).expect("write");
            let access = if write { Access::ReadWrite } else { Access::ReadOnly };
            let whole = Options { access, ..opts(16 << 10) };
            let pieces = Options { tail_read_bytes_max: window, ..whole.clone() };
            let (a, b) = (fs.snapshot(), fs.snapshot());
            let (got_whole, after_whole) = opened(&a, dir, whole.clone(), &active);
            let (got_pieces, after_pieces) = opened(&b, dir, pieces.clone(), &active);
            proptest::prop_assert_eq!(&got_pieces, &got_whole);
            proptest::prop_assert_eq!(after_pieces, after_whole);
            // Records another handle appends, caught up with in pieces.
            if got_whole.is_ok() && more > 0 {
                let (a, b) = (a.snapshot(), b.snapshot());
                let reader = |fs: &SimFs| Journal::open_with(Arc::new(fs.clone()), dir, Options { access: Access::ReadOnly, ..pieces.clone() });
                let (ra, rb) = (reader(&a).expect("reader"), reader(&b).expect("reader"));
                for fs in [&a, &b] {
                    if let Ok(w) = Journal::open_with(Arc::new(fs.clone()), dir, opts(16 << 10)) {
                        for i in 0..more {
                            w.append(vec![NewRecord::scratch(vec![7; 700 * i])]).expect("append");
                        }
                    }
                }
                let caught = |r: &Journal| r.refresh().map_err(|e| e.to_string()).and_then(|()| r.read_vec(0, usize::MAX).map_err(|e| e.to_string())).map(|v| v.into_iter().map(|r| r.payload).collect::<Vec<_>>());
                let full = Journal::open_with(Arc::new(a.clone()), dir, Options { access: Access::ReadOnly, ..Options::default() }).and_then(|j| j.read_vec(0, usize::MAX)).map(|v| v.into_iter().map(|r| r.payload).collect::<Vec<_>>()).map_err(|e| e.to_string());
                proptest::prop_assert_eq!(caught(&ra), full.clone());
                proptest::prop_assert_eq!(caught(&rb), full);
            }
        }
    }

    /// Found by the test above: the frame that follows damage was named by its place in the
    /// bytes read, not in the file (64 bytes short at an open, which reads after the header).
    #[test]
    fn damage_in_the_active_segment_names_the_file_position_of_the_frame_after_it() {
        let fs = SimFs::new(9);
        let dir = Path::new("/s/journal");
        let j = Journal::open_with(Arc::new(fs.clone()), dir, opts(1 << 20)).expect("open");
        for n in [100usize, 200, 300] {
            j.append(vec![NewRecord::scratch(vec![5; n])]).expect("append");
        }
        let active = j.segment_paths().last().cloned().expect("a segment");
        drop(j);
        let frame = |n: usize| (n + FRAME_OVERHEAD) as u64;
        let second = SEGMENT_HEADER_SIZE + frame(100);
        let third = second + frame(200);
        // A bit of the second frame's length field.
        fs.flip_bit(&active, second * 8 + 3).expect("flip");
        for access in [Access::ReadOnly, Access::ReadWrite] {
            let Err(e) = Journal::open_with(Arc::new(fs.clone()), dir, Options { access, ..opts(1 << 20) }) else {
                panic!("opened despite the damage");
            };
            let text = e.to_string();
            assert!(text.contains(&format!("at byte {second}:")), "{text}");
            assert!(text.ends_with(&format!("a valid frame follows at byte {third}")), "{text}");
        }
    }

    /// A write that fails and whose bytes cannot be cut off (the file made immutable for a
    /// moment) refuses writes; an append `REFUSAL_RETRY_AFTER` later reads the tail again, as
    /// an open does (what the failed write left is cut as a torn tail), and goes on, where the
    /// handle refused every write until it was reopened (a server until the agent restarted).
    #[test]
    fn writes_refused_after_a_failed_write_that_could_not_be_cut_off_go_on_a_while_later() {
        use crate::sim::Fault;
        for seed in 0..4 {
            let fs = SimFs::new(40 + seed);
            let dir = Path::new("/p/journal");
            let j = Journal::open_with(Arc::new(fs.clone()), dir, Options::default()).expect("open");
            j.append(vec![NewRecord::scratch(vec![1; 3000])]).expect("append");
            let at = fs.ops();
            fs.inject(at, Fault::DiskFull);
            fs.inject(at + 1, Fault::Denied);
            assert!(j.append(vec![NewRecord::scratch(vec![2; 3000])]).is_err(), "the write fails");
            let e = j.append(vec![NewRecord::scratch(vec![3; 3000])]).expect_err("refused for now");
            assert!(e.to_string().contains("cutting it off failed"), "{e}");
            assert!(j.status().expect("status").refusing_writes.is_some());
            std::thread::sleep(REFUSAL_RETRY_AFTER);
            assert_eq!(j.append(vec![NewRecord::scratch(vec![4; 3000])]).expect("goes on"), 1..2, "seed {seed}");
            assert!(j.status().expect("status").refusing_writes.is_none());
            let read: Vec<u8> = j.read_vec(0, usize::MAX).expect("read").iter().map(|r| r.payload[0]).collect();
            assert_eq!(read, [1, 4]);
            drop(j);
            assert!(crate::verify::verify(&fs, dir).expect("verify").is_clean(), "seed {seed}");
        }
    }

    /// The bytes a failed write left that cannot be cut when the tail is judged again (the
    /// segment still unwritable) are not copied aside at each attempt: no copy is kept until
    /// the cut succeeds, writes waiting a second between attempts; then exactly one.
    #[test]
    fn a_torn_tail_that_cannot_be_cut_keeps_no_copy_and_writes_wait() {
        use crate::sim::Fault;
        let mut torn_seen = 0;
        for seed in 0..4 {
            let fs = SimFs::new(70 + seed);
            let dir = Path::new("/t/journal");
            let j = Journal::open_with(Arc::new(fs.clone()), dir, Options::default()).expect("open");
            j.append(vec![NewRecord::scratch(vec![1; 3000])]).expect("append");
            fs.inject(fs.ops(), Fault::DiskFull);
            fs.deny("set_len", 2);
            assert!(j.append(vec![NewRecord::scratch(vec![2; 3000])]).is_err(), "the write fails");
            let copies = || fs.list_dir(&dir.join(RECOVERED_DIR_NAME)).map(|v| v.len()).unwrap_or(0);
            std::thread::sleep(REFUSAL_RETRY_AFTER);
            match j.append(vec![NewRecord::scratch(vec![3; 3000])]) {
                Err(e) => {
                    // Its bytes reached the file: the cut fails again, no copy is kept.
                    torn_seen += 1;
                    assert!(e.to_string().contains("truncate"), "seed {seed}: {e}");
                    assert_eq!(copies(), 0, "seed {seed}: no copy kept of bytes not cut");
                    let again = j.append(vec![NewRecord::scratch(vec![4; 3000])]).expect_err("waits a second");
                    assert!(again.to_string().contains("cutting a torn tail"), "seed {seed}: {again}");
                    std::thread::sleep(REFUSAL_RETRY_AFTER);
                    assert_eq!(j.append(vec![NewRecord::scratch(vec![5; 3000])]).expect("goes on"), 1..2);
                    assert_eq!(copies(), 1, "seed {seed}: one copy of the bytes cut");
                }
                // No byte of it reached the file: nothing to cut.
                Ok(r) => assert_eq!(r, 1..2, "seed {seed}"),
            }
            drop(j);
            assert!(crate::verify::verify(&fs, dir).expect("verify").is_clean(), "seed {seed}");
        }
        assert!(torn_seen > 0, "no seed left bytes of the failed write");
    }

    #[test]
    fn a_second_handle_sees_records_the_first_appended() {
        let fs = SimFs::new(2);
        let dir = Path::new("/s/journal");
        let a = Journal::open_with(Arc::new(fs.clone()), dir, opts(4096)).expect("open a");
        let b = Journal::open_with(Arc::new(fs.clone()), dir, opts(8192)).expect("open b");
        for i in 0..50u8 {
            let j = if i % 3 == 0 { &a } else { &b };
            j.append(vec![NewRecord::scratch(vec![i; 300])]).expect("append");
        }
        a.refresh().expect("refresh");
        b.refresh().expect("refresh");
        for j in [&a, &b] {
            let got = j.read_vec(0, usize::MAX).expect("read");
            assert_eq!(got.iter().map(|r| r.payload[0]).collect::<Vec<_>>(), (0..50).collect::<Vec<_>>());
        }
    }

    /// Found by reading after fuzzing: a journal whose segment starts at offset u64::MAX
    /// opened fine, and the next append wrapped the offsets around. Such a journal is now
    /// refused at the open (every journal starts at offset 0), so no append reaches the end
    /// of the offsets (the append's own check stays, for a journal of 2^64 records).
    #[test]
    fn a_journal_at_the_last_offset_is_refused_before_any_append() {
        let fs = SimFs::new(8);
        let dir = Path::new("/s/journal");
        vfs_create_dir(&fs, dir);
        create_segment(&fs, dir, [1; 16], 0, u64::MAX).expect("segment");
        let e = Journal::open_with(Arc::new(fs.clone()), dir, opts(4096)).map(|j| j.next_offset()).expect_err("refused");
        assert!(e.is_corruption(), "{e}");
        assert!(e.to_string().contains("offsets 0 to 18446744073709551614 are missing"), "{e}");
    }

    /// Appends `n` records of 150 bytes, one by one, the `i`-th holding the byte `i`.
    fn append_numbered(j: &Journal, n: u8) {
        for i in 0..n {
            j.append(vec![NewRecord::scratch(vec![i; 150])]).expect("append");
        }
    }

    /// A segment file's base offset, from its name.
    fn base_of(segment: &Path) -> u64 {
        segment.file_name().and_then(|n| n.to_str()).and_then(parse_segment_file_name).expect("a segment's name")
    }

    fn vfs_create_dir(fs: &SimFs, dir: &Path) {
        crate::vfs::Vfs::create_dir_all(fs, dir).expect("mkdir");
    }

    #[test]
    fn point_reads_of_the_active_segment_in_any_order_return_each_record() {
        // read_one keeps its buffer between reads: larger, smaller and larger records read in
        // turn on one thread, none holding another's bytes (incompressible: what is read is
        // what the frame stores).
        let fs = SimFs::new(4);
        let dir = Path::new("/s/journal");
        let j = Journal::open_with(Arc::new(fs.clone()), dir, opts(64 << 20)).expect("open");
        use rand::{RngCore, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(4);
        let sizes = [300_000usize, 10, 70_000, 0, 299_999, 1];
        let payloads: Vec<Vec<u8>> = sizes
            .iter()
            .map(|&n| {
                let mut p = vec![0u8; n];
                rng.fill_bytes(&mut p);
                p
            })
            .collect();
        j.append(payloads.iter().map(|p| NewRecord::scratch(p.clone())).collect()).expect("append");
        assert_eq!(j.segment_paths().len(), 1, "every record in the active segment");
        for k in [0u64, 1, 2, 3, 4, 5, 4, 0, 3, 1, 2, 5, 0] {
            let got = j.read_one(k, |r| Ok(r.payload.to_vec())).expect("read");
            assert_eq!(got.as_deref(), Some(&payloads[k as usize][..]), "record {k}");
        }
        assert_eq!(j.read_one(6, |r| Ok(r.offset)).expect("read"), None);
    }

    #[test]
    fn large_compressible_records_round_trip() {
        let fs = SimFs::new(3);
        let dir = Path::new("/s/journal");
        let j = Journal::open_with(Arc::new(fs.clone()), dir, opts(1 << 20)).expect("open");
        let big = "line of a tool result\n".repeat(100_000).into_bytes();
        j.append(vec![NewRecord::scratch(big.clone()), NewRecord::scratch(vec![1, 2, 3])]).expect("append");
        let got = j.read_vec(0, 10).expect("read");
        assert_eq!(got[0].payload, big);
        assert_eq!(got[1].payload, vec![1, 2, 3]);
    }

    /// An index file that cannot be written (here a folder sits in its place) is no failure of
    /// the seal or of the open, and each time it fails that is kept, once, for the user to be
    /// told; once it can be written, nothing is.
    #[test]
    fn index_files_that_cannot_be_written_are_told_once_each_time() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("journal");
        let j = Journal::open(&dir, opts(4096)).expect("open");
        let first = j.segment_paths()[0].clone();
        let idx = first.with_extension(INDEX_SUFFIX.trim_start_matches('.'));
        std::fs::create_dir_all(idx.join("in the way")).expect("a folder in the index file's place");
        for i in 0..60u8 {
            j.append(vec![NewRecord::scratch(vec![i; 150])]).expect("append: a failed index write fails no seal");
        }
        assert!(j.segment_paths().len() > 2, "segments were sealed");
        let told = j.take_index_write_failures();
        assert_eq!(told.len(), 1, "the first segment's index only: {told:?}");
        assert!(told[0].starts_with(&format!("could not write {} (", idx.display())), "{told:?}");
        assert!(j.take_index_write_failures().is_empty(), "told once");
        assert_eq!(j.status().expect("status").index_write_failures, 1);
        drop(j);
        // The open scans the segment instead, and fails to write its index again.
        let j = Journal::open(&dir, opts(4096)).expect("reopen");
        let told = j.take_index_write_failures();
        assert_eq!(told.len(), 1, "{told:?}");
        assert!(told[0].starts_with(&format!("could not write {} (", idx.display())), "{told:?}");
        assert_eq!(j.read_vec(0, usize::MAX).expect("read").len(), 60);
        drop(j);
        std::fs::remove_dir_all(&idx).expect("remove the folder");
        let j = Journal::open(&dir, opts(4096)).expect("reopen");
        assert!(j.take_index_write_failures().is_empty());
        assert_eq!(j.status().expect("status").index_write_failures, 0);
        assert!(idx.is_file(), "written by the open");
    }

    /// A journal whose first segment file is gone (its first segment further on than offset
    /// 0) is damage, at the open and for verify, naming the offsets lost; salvage keeps the rest.
    #[test]
    fn a_journal_whose_first_segment_is_gone_is_damage_not_a_shorter_journal() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("journal");
        let j = Journal::open(&dir, opts(4096)).expect("open");
        append_numbered(&j, 60);
        let paths = j.segment_paths();
        drop(j);
        assert!(paths.len() > 2);
        std::fs::remove_file(&paths[0]).expect("remove the first segment");
        std::fs::remove_file(paths[0].with_extension(INDEX_SUFFIX.trim_start_matches('.'))).expect("and its index");
        let second = crate::segment::SegmentHeader::decode(&std::fs::read(&paths[1]).expect("read"), &paths[1]).expect("header").base_offset;
        assert!(second > 0);
        let why = format!("the journal's first segment starts at offset {second}: offsets 0 to {} are missing", second - 1);
        for access in [Access::ReadWrite, Access::ReadOnly] {
            match Journal::open(&dir, Options { access, ..opts(4096) }) {
                Err(Error::Corrupt { segment, reason, .. }) => {
                    assert_eq!(segment, paths[1]);
                    assert!(reason.starts_with(&why), "{reason}");
                }
                other => panic!("{access:?}: {:?}", other.map(|j| j.next_offset())),
            }
        }
        let report = crate::verify::verify_dir(&dir).expect("verify");
        assert!(!report.is_clean());
        assert_eq!(report.damage.len(), 1, "{:?}", report.damage);
        assert!(report.damage[0].reason.starts_with(&why) && report.damage[0].offsets_lost == Some((0, second - 1)), "{:?}", report.damage);
        let to = tmp.path().join("salvaged");
        let saved = crate::salvage::salvage_dir(&dir, &to).expect("salvage");
        assert_eq!(saved.records_copied, 60 - second);
        let j = Journal::open(&to, opts(4096)).expect("the salvaged journal opens");
        assert_eq!(j.read_vec(0, 1).expect("read")[0].payload, vec![second as u8; 150]);
    }

    /// A journal whose last segment files are gone (a user's `rm`, a backup restored without
    /// its newest files) is damage, at the open and for verify, naming the segment `TIP` says
    /// was started, where its writer would have made that segment again and given its records'
    /// offsets to new ones; salvage keeps the rest. A segment not made yet after a seal (its
    /// writer died first, so `TIP` names the one before) is made, as before.
    #[test]
    fn a_journal_whose_last_segments_are_gone_is_damage_not_a_shorter_journal() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let fresh = |name: &str| -> (PathBuf, Vec<PathBuf>) {
            let dir = tmp.path().join(name).join("journal");
            let j = Journal::open(&dir, opts(4096)).expect("open");
            append_numbered(&j, 120);
            let paths = j.segment_paths();
            assert!(paths.len() > 3, "{paths:?}");
            (dir, paths)
        };
        let remove = |seg: &Path| {
            std::fs::remove_file(seg).expect("remove a segment");
            let idx = seg.with_extension(INDEX_SUFFIX.trim_start_matches('.'));
            if idx.exists() {
                std::fs::remove_file(idx).expect("and its index");
            }
        };
        for gone in [1, 2] {
            let (dir, paths) = fresh(&format!("gone{gone}"));
            let last = paths.last().expect("last").clone();
            for p in &paths[paths.len() - gone..] {
                remove(p);
            }
            let kept = &paths[paths.len() - gone - 1];
            for access in [Access::ReadWrite, Access::ReadOnly] {
                match Journal::open(&dir, Options { access, ..opts(4096) }) {
                    Err(Error::Corrupt { segment, reason, .. }) => {
                        assert_eq!(segment, last, "{reason}");
                        assert!(reason.starts_with("the segment file is gone"), "{reason}");
                        assert!(reason.contains(&format!("the last segment left starts at offset {}", base_of(kept))), "{reason}");
                    }
                    other => panic!("{gone} gone, {access:?}: {:?}", other.map(|j| j.next_offset())),
                }
            }
            assert!(!last.exists(), "no segment made again in the place of the one gone");
            let report = crate::verify::verify_dir(&dir).expect("verify");
            assert_eq!(report.damage.len(), 1, "{:?}", report.damage);
            let reached = base_of(&paths[paths.len() - gone]);
            assert_eq!(report.damage[0].segment, last);
            assert!(report.damage[0].is_file_gone(&report));
            assert!(report.damage[0].reason.contains(&format!("the records from offset {reached} on are lost")), "{:?}", report.damage);
            let to = tmp.path().join(format!("salvaged{gone}"));
            let saved = crate::salvage::salvage_dir(&dir, &to).expect("salvage");
            assert_eq!(saved.records_copied, reached);
            let j = Journal::open(&to, opts(4096)).expect("the salvaged journal opens");
            assert_eq!(j.append(vec![NewRecord::scratch(vec![1])]).expect("append").start, reached);
        }

        // Its writer died after the seal, before making the next segment: `TIP` names the
        // segment sealed, and the open makes the next one.
        let (dir, paths) = fresh("unmade");
        let last = paths.last().expect("last");
        remove(last);
        let before = &paths[paths.len() - 2];
        let store = crate::segment::SegmentHeader::decode(&std::fs::read(before).expect("read"), before).expect("header");
        let tip = crate::tip::Tip { store_id: store.store_id, epoch: store.epoch, base: base_of(before) };
        std::fs::write(dir.join(crate::tip::TIP_FILE_NAME), tip.encode()).expect("tip");
        let j = Journal::open(&dir, opts(4096)).expect("a segment not made yet is made");
        assert_eq!(j.next_offset(), base_of(last));
        assert!(last.exists());
        drop(j);

        // A journal written before `TIP` was: the first read-write open writes it (a read-only
        // open writes nothing), and from then on a last segment gone is told.
        let (dir, paths) = fresh("older");
        let tip_path = dir.join(crate::tip::TIP_FILE_NAME);
        std::fs::remove_file(&tip_path).expect("no TIP");
        drop(Journal::open(&dir, Options { access: Access::ReadOnly, ..opts(4096) }).expect("read-only open"));
        assert!(!tip_path.exists());
        drop(Journal::open(&dir, opts(4096)).expect("open"));
        let read = crate::tip::read_tip(&OsFs, &dir);
        assert!(matches!(read, crate::tip::TipFile::Read(t) if t.base == base_of(paths.last().expect("last"))), "{read:?}");
        remove(paths.last().expect("last"));
        assert!(Journal::open(&dir, opts(4096)).map(|j| j.next_offset()).expect_err("told").to_string().contains("the segment file is gone"));

        // A `TIP` that does not read is said by verify and written again by the next open.
        let (dir, paths) = fresh("garbled");
        let tip_path = dir.join(crate::tip::TIP_FILE_NAME);
        let mut b = std::fs::read(&tip_path).expect("TIP");
        b[33] ^= 1;
        std::fs::write(&tip_path, &b).expect("garble");
        let report = crate::verify::verify_dir(&dir).expect("verify");
        assert!(report.is_clean());
        assert!(report.tip_note.as_ref().is_some_and(|n| n.contains("TIP: does not read (its checksum does not match)")), "{:?}", report.tip_note);
        drop(Journal::open(&dir, opts(4096)).expect("open"));
        assert_eq!(crate::verify::verify_dir(&dir).expect("verify").tip_note, None);
        remove(paths.last().expect("last"));
        assert!(Journal::open(&dir, opts(4096)).map(|j| j.next_offset()).expect_err("told").to_string().contains("the segment file is gone"));

        // Every segment gone, `TIP` left: no new journal in its place, until `TIP` is removed.
        let (dir, paths) = fresh("all");
        for p in &paths {
            remove(p);
        }
        for access in [Access::ReadWrite, Access::ReadOnly] {
            let e = Journal::open(&dir, Options { access, ..opts(4096) }).map(|j| j.next_offset()).expect_err("told");
            assert!(e.is_corruption() && e.to_string().contains("no segment file is left"), "{access:?}: {e}");
        }
        assert!(crate::verify::verify_dir(&dir).expect_err("told").to_string().contains("no segment file is left"));
        assert!(std::fs::read_dir(&dir).expect("list").all(|e| !e.expect("entry").file_name().to_string_lossy().ends_with(".seg")));
        std::fs::remove_file(dir.join(crate::tip::TIP_FILE_NAME)).expect("remove TIP");
        assert!(Journal::open(&dir, opts(4096)).expect("a new journal").open_report().created);
    }

    /// The first read-write open of a journal written before `TIP` was writes it; a write, a
    /// sync or a permission that fails then (at any of its calls) loses nothing and stops no
    /// open: the open goes on, says why, and the next open writes it.
    #[test]
    fn a_tip_that_cannot_be_written_at_an_open_stops_nothing() {
        use crate::sim::Fault;
        use crate::tip::{read_tip, TipFile, TIP_FILE_NAME};
        let fs = SimFs::new(9);
        let dir = Path::new("/t/journal");
        let j = Journal::open_with(Arc::new(fs.clone()), dir, opts(4096)).expect("open");
        append_numbered(&j, 60);
        let last = base_of(j.segment_paths().last().expect("last"));
        drop(j);
        crate::vfs::Vfs::remove_file(&fs, &dir.join(TIP_FILE_NAME)).expect("a journal without TIP");
        crate::vfs::Vfs::sync_dir(&fs, dir).expect("sync");
        let probe = fs.after_power_cut(0);
        drop(Journal::open_with(Arc::new(probe.clone()), dir, opts(4096)).expect("open"));
        assert!(matches!(read_tip(&probe, dir), TipFile::Read(t) if t.base == last));
        let (mut told, mut refused) = (0, 0);
        for k in 0..probe.ops() {
            for fault in [Fault::DiskFull, Fault::SyncFails, Fault::Denied] {
                let f = fs.after_power_cut(0);
                f.inject(k, fault);
                let j = Journal::open_with(Arc::new(f.clone()), dir, opts(4096)).unwrap_or_else(|e| panic!("{fault:?} at call {k}: {e}"));
                if let Some(why) = j.open_report().tip_unwritten {
                    if why.contains("writes are refused until the store is opened again") {
                        // The segment's header could not be made sure on disk: no `TIP`, no write.
                        assert!(why.contains("/t/journal/TIP was not written"), "{why}");
                        assert!(matches!(j.append(vec![NewRecord::scratch(vec![1])]), Err(Error::Poisoned { .. })), "{fault:?} at call {k}");
                        refused += 1;
                    } else {
                        assert!(why.contains("could not write /t/journal/TIP") && why.contains("nothing is lost"), "{why}");
                    }
                    told += 1;
                }
                drop(j);
                let j = Journal::open_with(Arc::new(f.clone()), dir, opts(4096)).expect("the next open");
                assert_eq!(j.open_report().tip_unwritten, None, "{fault:?} at call {k}");
                assert_eq!(j.read_vec(0, usize::MAX).expect("read").len(), 60);
                assert!(matches!(read_tip(&f, dir), TipFile::Read(t) if t.base == last), "{fault:?} at call {k}");
            }
        }
        // A full disk or a denied write at its write, a failed sync at its sync; a failed sync
        // of the segment itself refuses writes.
        assert!(told >= 3, "{told}");
        assert!(refused >= 1, "{refused}");
    }

    /// A writer that takes up a segment another process started (which failed, or died,
    /// before writing `TIP`) brings `TIP` up to it.
    #[test]
    fn a_writer_that_takes_up_a_segment_another_started_brings_tip_up_to_it() {
        use crate::sim::Fault;
        use crate::tip::{read_tip, TipFile};
        let run = |fs: &SimFs, fault: Option<u64>| -> (Option<Range<u64>>, bool) {
            let dir = Path::new("/t/journal");
            let a = Journal::open_with(Arc::new(fs.clone()), dir, opts(4096)).expect("open a");
            let b = Journal::open_with(Arc::new(fs.clone()), dir, opts(4096)).expect("open b");
            let mut roll = None;
            for i in 0..40u8 {
                let (before, segments) = (fs.ops(), a.segment_paths().len());
                if roll.is_none() && fault.is_some_and(|k| k >= before) {
                    if a.append(vec![NewRecord::scratch(vec![i; 150])]).is_err() {
                        // The roll stopped at `TIP`'s write: the other writer takes up the segment.
                        b.append(vec![NewRecord::scratch(vec![i; 150])]).expect("b appends");
                        let TipFile::Read(t) = read_tip(fs, dir) else { panic!("no TIP") };
                        let last = b.segment_paths().last().expect("last").clone();
                        return (None, t.base == base_of(&last));
                    }
                    continue;
                }
                a.append(vec![NewRecord::scratch(vec![i; 150])]).expect("append");
                if roll.is_none() && a.segment_paths().len() > segments {
                    roll = Some(before..fs.ops());
                }
            }
            (roll, false)
        };
        let probe = SimFs::new(3);
        let (roll, _) = run(&probe, None);
        let roll = roll.expect("a roll");
        let kinds = probe.kinds();
        let rename = roll.clone().find(|&k| kinds[k as usize] == "rename").expect("TIP's rename in the roll (the index's comes after)");
        assert_eq!(kinds[rename as usize - 2], "write", "{:?}", &kinds[roll.start as usize..roll.end as usize]);
        let fs = SimFs::new(3);
        fs.inject(rename - 2, Fault::DiskFull);
        let (_, brought_up) = run(&fs, Some(rename - 2));
        assert!(brought_up, "TIP names the segment the other writer took up");
    }

    /// A handle behind another (one that has not looked since the other rolled to a new
    /// segment) that finds the segment after its last seal gone, with `TIP` naming it, does not
    /// make it again (which gave the lost records' offsets to its own): its appends fail, naming
    /// the segment.
    #[test]
    fn a_handle_behind_a_removed_segment_does_not_make_it_again() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("journal");
        let (a, b) = (Journal::open(&dir, opts(4096)).expect("a"), Journal::open(&dir, opts(4096)).expect("b"));
        let before = b.segment_paths().len();
        for i in 0u8.. {
            b.append(vec![NewRecord::scratch(vec![i; 150])]).expect("append");
            if b.segment_paths().len() > before {
                break;
            }
        }
        let newest = b.segment_paths().last().expect("newest").clone();
        drop(b);
        std::fs::remove_file(&newest).expect("remove the newest segment");
        for _ in 0..2 {
            match a.append(vec![NewRecord::scratch(vec![1])]) {
                Err(Error::Corrupt { segment, reason, .. }) => {
                    assert_eq!(segment, newest);
                    assert!(reason.starts_with("the segment file is gone"), "{reason}");
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(!newest.exists(), "not made again");
    }

    /// A `TIP` that cannot be read (here a folder in its place) stops no open and no walk
    /// (salvage, the way out of damage, included): verify notes it, and an open that cannot
    /// write it says so.
    #[test]
    fn a_tip_that_cannot_be_read_stops_nothing() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("journal");
        let j = Journal::open(&dir, opts(4096)).expect("open");
        append_numbered(&j, 60);
        drop(j);
        let tip = dir.join(crate::tip::TIP_FILE_NAME);
        // A link to itself: it cannot be opened (it stopped every open and walk). The open
        // writes `TIP` in its place and says a removal before now is not told.
        std::fs::remove_file(&tip).expect("remove TIP");
        std::os::unix::fs::symlink("TIP", &tip).expect("a link to itself");
        let report = crate::verify::verify_dir(&dir).expect("verify");
        assert!(report.is_clean(), "{:?}", report.damage);
        assert!(report.tip_note.as_ref().is_some_and(|n| n.contains("does not read (it cannot be opened")), "{:?}", report.tip_note);
        let saved = crate::salvage::salvage_dir(&dir, &tmp.path().join("salvaged")).expect("salvage");
        assert_eq!(saved.records_copied, 60);
        let j = Journal::open(&dir, opts(4096)).expect("open");
        let said = j.open_report();
        assert_eq!(said.tip_unwritten, None);
        assert!(said.tip_rewritten.is_some_and(|w| w.contains("a segment file removed before now is not told")));
        assert_eq!(j.read_vec(0, usize::MAX).expect("read").len(), 60);
        drop(j);
        assert!(matches!(crate::tip::read_tip(&OsFs, &dir), crate::tip::TipFile::Read(_)));
        // A folder: it cannot be read, nor written over; the open says so.
        std::fs::remove_file(&tip).expect("remove TIP");
        std::fs::create_dir(&tip).expect("a folder in its place");
        let report = crate::verify::verify_dir(&dir).expect("verify");
        assert!(report.is_clean(), "{:?}", report.damage);
        assert!(report.tip_note.as_ref().is_some_and(|n| n.contains("does not read (it cannot be read")), "{:?}", report.tip_note);
        let j = Journal::open(&dir, opts(4096)).expect("open");
        assert!(j.open_report().tip_unwritten.is_some_and(|w| w.contains("could not write") && w.contains("remove it if it is not a file")));
        assert_eq!(j.open_report().tip_rewritten, None, "not written again, so not said to be");
        assert_eq!(j.read_vec(0, usize::MAX).expect("read").len(), 60);
        drop(j);
        let saved = crate::salvage::salvage_dir(&dir, &tmp.path().join("salvaged-again")).expect("salvage");
        assert_eq!(saved.records_copied, 60);
    }

    /// An open whose sync of the last segment fails (to bring `TIP` up to it) writes nothing
    /// more: not `TIP`, not the segment after a seal, not a record.
    #[test]
    fn an_open_whose_sync_fails_writes_nothing_more() {
        use crate::sim::Fault;
        use crate::tip::TIP_FILE_NAME;
        let fs = SimFs::new(6);
        let dir = Path::new("/s/journal");
        let j = Journal::open_with(Arc::new(fs.clone()), dir, opts(4096)).expect("open");
        append_numbered(&j, 40);
        let paths = j.segment_paths();
        drop(j);
        // The last segment's writer died after its seal, before starting the next; a journal
        // written before `TIP` was.
        let (sealed, next) = (&paths[paths.len() - 2], paths.last().expect("last"));
        crate::vfs::Vfs::remove_file(&fs, next).expect("remove");
        crate::vfs::Vfs::remove_file(&fs, &dir.join(TIP_FILE_NAME)).expect("remove TIP");
        crate::vfs::Vfs::sync_dir(&fs, dir).expect("sync");
        let probe = fs.snapshot();
        drop(Journal::open_with(Arc::new(probe.clone()), dir, opts(4096)).expect("open"));
        assert!(crate::vfs::Vfs::exists(&probe, next).expect("stat"), "an open makes the segment after the seal");
        let kinds = probe.kinds();
        let sync = kinds.iter().position(|k| *k == "sync_data").expect("the open's sync") as u64;
        let f = fs.snapshot();
        f.inject(sync, Fault::SyncFails);
        let j = Journal::open_with(Arc::new(f.clone()), dir, opts(4096)).expect("the open goes on");
        assert!(j.open_report().tip_unwritten.is_some_and(|w| w.contains("writes are refused")));
        assert!(matches!(j.append(vec![NewRecord::scratch(vec![1])]), Err(Error::Poisoned { .. })));
        let kept = base_of(next);
        assert_eq!(j.read_vec(0, usize::MAX).expect("reads go on").len() as u64, kept);
        drop(j);
        assert!(!crate::vfs::Vfs::exists(&f, next).expect("stat"), "no segment made after {}", sealed.display());
        assert!(!crate::vfs::Vfs::exists(&f, &dir.join(TIP_FILE_NAME)).expect("stat"), "no TIP written");
    }

    /// A seal its writer wrote and did not sync (it died first) is synced by the writer that
    /// reads it and starts the next segment, whether an open found the seal or an earlier
    /// `refresh` did (as ingest and the server refresh, then append): records acknowledged there
    /// survive a power cut with the seal before them (it could be lost, and every open then
    /// failed on a sealed segment with no seal).
    #[test]
    fn a_seal_its_writer_did_not_sync_is_synced_by_the_writer_that_reads_it() {
        for refreshed in [false, true] {
            let fs = SimFs::new(5);
            let dir = Path::new("/s/journal");
            let j = Journal::open_with(Arc::new(fs.clone()), dir, opts(64 << 10)).expect("open");
            append_numbered(&j, 20);
            let (path, next) = (j.segment_paths()[0].clone(), j.next_offset());
            let open = || Journal::open_with(Arc::new(fs.clone()), dir, opts(64 << 10)).expect("open");
            let before = refreshed.then(open);
            drop(j);
            // The seal a writer killed before its sync leaves: written, in the page cache only.
            let mut seal = Vec::new();
            crate::frame::encode_frame(&mut seal, next, now_unix_ms(), KIND_SEAL, 1, 0, &[]);
            let f = crate::vfs::Vfs::open_rw(&fs, &path).expect("open the segment");
            f.write_all_at(&seal, f.len().expect("len")).expect("write the seal");
            drop(f);
            let j = match before {
                Some(j) => {
                    j.refresh().expect("refresh");
                    j
                }
                None => open(),
            };
            let acked = j.append(vec![NewRecord::scratch(vec![99; 150])]).expect("append after the seal");
            assert_eq!(acked, next..next + 1);
            assert_eq!(j.segment_paths().len(), 2, "written in the next segment");
            drop(j);
            for seed in 0..16 {
                let after = fs.after_power_cut(seed);
                let j = Journal::open_with(Arc::new(after.clone()), dir, opts(64 << 10))
                    .unwrap_or_else(|e| panic!("refreshed {refreshed}, seed {seed}: {e}"));
                assert_eq!(j.read_vec(0, usize::MAX).expect("read").len() as u64, next + 1, "seed {seed}");
            }
        }
    }

    /// A handle keeps at most [`INDEX_WRITE_UNSAID_MAX`] index write failures for the user to be
    /// told, and counts every one.
    #[test]
    fn index_write_failures_kept_for_the_user_are_bounded() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("journal");
        let j = Journal::open(&dir, opts(4096)).expect("open");
        for i in 0..600u32 {
            j.append(vec![NewRecord::scratch(vec![i as u8; 150])]).expect("append");
        }
        let sealed: Vec<PathBuf> = j.segment_paths().split_last().expect("segments").1.to_vec();
        drop(j);
        assert!(sealed.len() > INDEX_WRITE_UNSAID_MAX, "{} sealed segments", sealed.len());
        for seg in &sealed {
            let idx = seg.with_extension(INDEX_SUFFIX.trim_start_matches('.'));
            std::fs::remove_file(&idx).expect("remove an index");
            std::fs::create_dir_all(idx.join("in the way")).expect("a folder in its place");
        }
        let j = Journal::open(&dir, opts(4096)).expect("reopen");
        assert_eq!(j.status().expect("status").index_write_failures, sealed.len() as u64);
        assert_eq!(j.take_index_write_failures().len(), INDEX_WRITE_UNSAID_MAX);
    }

    #[test]
    fn a_journal_that_cannot_be_written_is_read_as_it_is() {
        let fs = SimFs::new(41);
        let dir = Path::new("/store/journal");
        let j = Journal::open_with(Arc::new(fs.clone()), dir, opts(4096)).expect("open");
        append_numbered(&j, 60);
        let written = j.read_vec(0, usize::MAX).expect("read").into_iter().map(|r| r.payload).collect::<Vec<_>>();
        assert!(fs.list_dir(dir).expect("list").iter().filter(|n| n.ends_with(".seg")).count() > 1, "several segments");
        drop(j);
        let before = fs.snapshot();
        let ro: Arc<dyn Vfs> = Arc::new(crate::sim::ReadOnlyFs::new(Arc::new(fs.clone())));
        // To write: refused for want of write access, which a caller can tell.
        let Err(refused) = Journal::open_with(ro.clone(), dir, opts(4096)) else { panic!("a read-only file system refuses a writer") };
        assert!(refused.is_write_refused(), "{refused}");
        assert!(refused.to_string().contains("Read-only file system"), "{refused}");
        // To read: every record, and more appends refused by the handle.
        let j = Journal::open_with(ro.clone(), dir, Options { access: Access::ReadOnly, ..opts(4096) }).expect("a read-only open");
        assert!(j.is_read_only());
        j.refresh().expect("refresh");
        assert_eq!(j.read_vec(0, usize::MAX).expect("read").into_iter().map(|r| r.payload).collect::<Vec<_>>(), written);
        assert!(matches!(j.append(vec![NewRecord::scratch(vec![1])]), Err(Error::Invalid(_))));
        drop(j);
        for (name, bytes) in fs.list_dir(dir).expect("list").into_iter().map(|n| (n.clone(), fs.read_file(&dir.join(&n)).expect("read"))) {
            assert_eq!(before.read_file(&dir.join(&name)).expect("was there"), bytes, "{name} unchanged");
        }
        // A journal folder that is not there is said as such.
        let missing = Journal::open_with(ro, Path::new("/elsewhere/journal"), Options { access: Access::ReadOnly, ..opts(4096) });
        assert!(matches!(missing, Err(Error::NoJournal { .. })), "{:?}", missing.err());
        // Other failures are not taken for a refusal to write.
        assert!(!Error::io("write", dir, io::Error::from_raw_os_error(libc::ENOSPC)).is_write_refused());
        assert!(!Error::corrupt(dir, 0, "x").is_write_refused());
    }

    fn one_below(inner: &Arc<dyn Vfs>, path: &Path) -> crate::sim::ReadOnlyFs {
        crate::sim::ReadOnlyFs::below(inner.clone(), path)
    }

    #[test]
    fn what_refuses_a_write_is_found_without_writing() {
        let fs = SimFs::new(43);
        let dir = Path::new("/store/journal");
        let j = Journal::open_with(Arc::new(fs.clone()), dir, opts(4096)).expect("open");
        append_numbered(&j, 40);
        let last = j.segment_paths().last().cloned().expect("a segment");
        drop(j);
        // A torn tail: the look leaves it for the open that says it cuts it.
        let mut bytes = fs.read_file(&last).expect("read");
        bytes.extend_from_slice(&[0xAB; 40]);
        fs.write_file(&last, &bytes).expect("write");
        let before = fs.snapshot();
        let inner: Arc<dyn Vfs> = Arc::new(fs.clone());
        assert!(write_refused(&*inner, dir).is_none(), "a journal that can be written");
        let all = crate::sim::ReadOnlyFs::new(inner.clone());
        let e = write_refused(&all, dir).expect("a read-only mount");
        assert!(e.is_write_refused() && e.to_string().contains(&dir.display().to_string()), "{e}");
        let one = crate::sim::ReadOnlyFs::below(inner.clone(), &last);
        let e = write_refused(&one, dir).expect("the last segment refused");
        assert!(e.is_write_refused() && e.to_string().contains(&last.display().to_string()), "{e}");
        // A lock file or `TIP` another user owns does not stop a writer (one locks the lock
        // file open to read, the other is replaced by a rename).
        for file in [dir.join(LOCK_FILE_NAME), tip_path(dir)] {
            let one = crate::sim::ReadOnlyFs::below(inner.clone(), &file);
            assert!(write_refused(&one, dir).is_none(), "{}", file.display());
        }
        // What a refusal named is looked at again: a file, a folder, a file to be made.
        let recovered = dir.join(RECOVERED_DIR_NAME);
        crate::vfs::Vfs::create_dir_all(&fs, &recovered).expect("mkdir");
        let below = crate::sim::ReadOnlyFs::below(inner.clone(), &recovered);
        assert!(still_refused(&below, &recovered.join("x.torn")) && still_refused(&below, &recovered));
        assert!(!still_refused(&*inner, &recovered.join("x.torn")) && !still_refused(&*inner, &last));
        assert!(still_refused(&one_below(&inner, &last), &last));
        for name in fs.list_dir(dir).expect("list") {
            assert_eq!(fs.read_file(&dir.join(&name)).expect("read"), before.read_file(&dir.join(&name)).expect("was there"), "{name} unchanged");
        }
        // Not there: nothing refused (an open makes it).
        assert!(write_refused(&*inner, Path::new("/elsewhere/journal")).is_none());
        // A segment whose creation was cut short (a run under `sudo` that died starting it),
        // another user's: a writer's open sets it aside in the folder it may write, and writes
        // on the one before, which is what is judged.
        for bytes in [&b""[..], &[0u8; 100][..]] {
            let cut = dir.join(segment_file_name(base_of(&last) + 1_000_000));
            crate::vfs::Vfs::create_new(&fs, &cut).expect("create").write_all_at(bytes, 0).expect("write");
            assert!(write_refused(&one_below(&inner, &cut), dir).is_none(), "{} bytes", bytes.len());
            assert!(write_refused(&one_below(&inner, &last), dir).is_some(), "the one before judged");
            crate::vfs::Vfs::remove_file(&fs, &cut).expect("remove");
        }
    }

    /// With a bound on waits for the store's lock, an append and a refresh that another
    /// process's lock outlasts fail with `Busy` (naming the lock), writing nothing; while it is
    /// still held, later calls are answered without waiting the whole time again; appends
    /// waiting together all fail; once it is let go, the next append goes through, and the
    /// next wait is the whole one again. Unbounded (as opened), an append waits for it.
    #[test]
    fn waits_for_the_stores_lock_end_where_bounded_and_write_nothing() {
        use std::time::{Duration, Instant};
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("journal");
        let j = Arc::new(Journal::open(&dir, Options::default()).expect("open"));
        j.append(vec![NewRecord::scratch(vec![1])]).expect("append");
        let wait = Duration::from_millis(600);
        j.set_lock_wait(Some(wait));
        // Another open file description: as another process's lock.
        let held = OsFs.lock(&dir.join(LOCK_FILE_NAME), LockMode::Exclusive).expect("lock");
        let started = Instant::now();
        let e = j.append(vec![NewRecord::scratch(vec![2])]).expect_err("busy");
        assert!(started.elapsed() >= wait, "waited {:?}", started.elapsed());
        assert!(matches!(&e, Error::Busy { path, .. } if path.ends_with(LOCK_FILE_NAME)), "{e}");
        assert!(e.to_string().contains("has held the store's lock"), "{e}");
        // Still held: appends are answered at once (well inside the whole wait).
        let started = Instant::now();
        let appenders: Vec<_> = (3..6u8)
            .map(|b| {
                let j = Arc::clone(&j);
                std::thread::spawn(move || j.append(vec![NewRecord::scratch(vec![b])]))
            })
            .collect();
        for a in appenders {
            assert!(matches!(a.join().expect("join"), Err(Error::Busy { .. })));
        }
        assert!(started.elapsed() < wait, "answered in {:?}", started.elapsed());
        // A refresh (a shared lock, which another's shared lock would not keep waiting) waits
        // once too, then only tries.
        let started = Instant::now();
        assert!(matches!(j.refresh(), Err(Error::Busy { .. })));
        assert!(started.elapsed() >= wait, "waited {:?}", started.elapsed());
        let started = Instant::now();
        assert!(matches!(j.refresh(), Err(Error::Busy { .. })));
        assert!(started.elapsed() < wait, "answered in {:?}", started.elapsed());
        assert_eq!(j.next_offset(), 1, "nothing written");
        drop(held);
        assert_eq!(j.append(vec![NewRecord::scratch(vec![7])]).expect("the lock let go"), 1..2);
        let held = OsFs.lock(&dir.join(LOCK_FILE_NAME), LockMode::Exclusive).expect("lock");
        let started = Instant::now();
        assert!(matches!(j.refresh(), Err(Error::Busy { .. })));
        assert!(started.elapsed() >= wait, "the whole wait again: {:?}", started.elapsed());
        // A wait that ran out is remembered BUSY_REMEMBERED: then the whole wait again.
        let gave_up = guard(&j.busy[0]).expect("remembered");
        *guard(&j.busy[0]) = Some((gave_up.0, Instant::now().checked_sub(BUSY_REMEMBERED).expect("an instant that long ago")));
        let started = Instant::now();
        let e = j.refresh().expect_err("busy");
        assert!(started.elapsed() >= wait, "the whole wait after a while: {:?}", started.elapsed());
        assert!(matches!(e, Error::Busy { waited, .. } if waited >= wait), "said for all it waited: {e}");
        // An open bounded likewise gives up, to write or to read.
        for access in [Access::ReadWrite, Access::ReadOnly] {
            let opened = Journal::open(&dir, Options { open_lock_wait: Some(wait), access, ..Options::default() });
            assert!(matches!(opened, Err(Error::Busy { .. })), "{access:?}");
        }
        drop(held);
        // Held shared by another (a reader stopped while it read): refreshes go on, an append
        // waits once, then only tries, the refreshes between taking nothing from what it knows.
        let held = OsFs.lock(&dir.join(LOCK_FILE_NAME), LockMode::Shared).expect("lock");
        j.refresh().expect("a shared lock beside another");
        let started = Instant::now();
        assert!(matches!(j.append(vec![NewRecord::scratch(vec![9])]), Err(Error::Busy { .. })));
        assert!(started.elapsed() >= wait, "waited {:?}", started.elapsed());
        j.refresh().expect("a shared lock beside another");
        let started = Instant::now();
        assert!(matches!(j.append(vec![NewRecord::scratch(vec![9])]), Err(Error::Busy { .. })));
        assert!(started.elapsed() < wait, "only tried: {:?}", started.elapsed());
        drop(held);
        let held = OsFs.lock(&dir.join(LOCK_FILE_NAME), LockMode::Exclusive).expect("lock");
        // Unbounded: waits until it is let go.
        j.set_lock_wait(None);
        let waiting = {
            let j = Arc::clone(&j);
            std::thread::spawn(move || j.append(vec![NewRecord::scratch(vec![8])]))
        };
        std::thread::sleep(wait * 2);
        assert!(!waiting.is_finished(), "an unbounded append waits");
        drop(held);
        assert_eq!(waiting.join().expect("join").expect("append"), 2..3);
        let read: Vec<u8> = j.read_vec(0, usize::MAX).expect("read").iter().map(|r| r.payload[0]).collect();
        assert_eq!(read, [1, 7, 8]);
        drop(j);
        let reopened = Journal::open(&dir, Options::default()).expect("reopen");
        assert_eq!(reopened.read_vec(0, usize::MAX).expect("read").len(), 3);
        // On the simulated file system: an open whose wait is bounded lets the lock go once
        // open (an append then takes it), and gives up while another holds it.
        let fs = SimFs::new(5);
        let sim_dir = Path::new("/w/journal");
        let bounded = Options { open_lock_wait: Some(wait), ..Options::default() };
        let j = Journal::open_with(Arc::new(fs.clone()), sim_dir, bounded.clone()).expect("open");
        j.set_lock_wait(Some(wait));
        assert_eq!(j.append(vec![NewRecord::scratch(vec![1])]).expect("append"), 0..1);
        let held = fs.lock(&sim_dir.join(LOCK_FILE_NAME), LockMode::Exclusive).expect("lock");
        assert!(matches!(Journal::open_with(Arc::new(fs.clone()), sim_dir, bounded), Err(Error::Busy { .. })));
        assert!(matches!(j.append(vec![NewRecord::scratch(vec![2])]), Err(Error::Busy { .. })));
        drop(held);
        assert_eq!(j.append(vec![NewRecord::scratch(vec![3])]).expect("append"), 1..2);
    }
}
