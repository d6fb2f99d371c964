//! A simulated file system for fault tests: power cuts at any I/O call, torn writes at
//! 512-byte granularity, dropped unsynced bytes, failing fsync, a full disk.
//!
//! The model of what survives a power cut (also stated in FORMAT.md):
//! - A file's bytes up to its last `sync_data` survive. Of the bytes appended after it, a
//!   prefix survives, cut at a 512-byte boundary of the file, optionally followed by zeros
//!   (the size reached the disk, the data did not).
//! - A directory entry created, renamed or removed after the directory's last sync may or may
//!   not survive; each such change independently.
//!
//! Every choice is drawn from a seeded generator, so a failure replays from its seed.
//! One `SimFs` stands for one machine; its locks are real in-process locks.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::vfs::{LockFile, LockGuard, LockMode, Mapped, Vfs, VfsFile};

/// Sector size of the torn-write model.
pub const SECTOR_SIZE_BYTES: u64 = 512;

/// A fault to inject at a given I/O call (counted from 0 over every mutating call).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Power is cut at this call: a write persists a random sector-aligned prefix of itself,
    /// any other call does nothing; this call and every later one fail.
    PowerCut,
    /// This `sync_data` fails with EIO and makes nothing durable (a write call is unaffected).
    SyncFails,
    /// This write fails with ENOSPC after writing a sector-aligned prefix of itself.
    DiskFull,
    /// This write or `set_len` fails with EPERM and changes nothing (a file made immutable).
    Denied,
}

#[derive(Default)]
struct Node {
    data: Vec<u8>,
    durable: Vec<u8>,
}

type NodeRef = Arc<Mutex<Node>>;

struct State {
    /// Directory -> name -> node, as the running program sees it.
    live: BTreeMap<PathBuf, BTreeMap<String, NodeRef>>,
    /// Directory -> name -> node, as of the directory's last sync.
    durable: BTreeMap<PathBuf, BTreeMap<String, NodeRef>>,
    ops: u64,
    faults: HashMap<u64, Fault>,
    /// Calls of a kind that fail with [`Fault::Denied`], and how many more of them ([`SimFs::deny`]).
    denied: HashMap<&'static str, u32>,
    /// The kind of each mutating call made (`create`, `write`, `sync_data`, ...), in order.
    kinds: Vec<&'static str>,
    crashed: bool,
    rng: u64,
    locks: HashMap<PathBuf, (usize, bool)>,
}

/// The simulated file system. Cloning shares the same machine.
#[derive(Clone)]
pub struct SimFs {
    state: Arc<Mutex<State>>,
    lock_changed: Arc<Condvar>,
}

impl fmt::Debug for SimFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SimFs")
    }
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    // A panic while holding the lock is a test failure already; keep going to report it.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn lock_node(n: &Mutex<Node>) -> MutexGuard<'_, Node> {
    n.lock().unwrap_or_else(|p| p.into_inner())
}

fn split(path: &Path) -> io::Result<(PathBuf, String)> {
    let dir = path.parent().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no parent"))?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "bad name"))?;
    Ok((dir.to_path_buf(), name.to_owned()))
}

fn power_cut() -> io::Error {
    io::Error::other("simulated power cut")
}

impl State {
    fn next_rand(&mut self) -> u64 {
        // splitmix64: the generator only drives the simulation, it is not part of Origin.
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Counts a mutating call (of `kind`) and says which fault, if any, applies to it.
    fn tick(&mut self, kind: &'static str) -> io::Result<Option<Fault>> {
        if self.crashed {
            return Err(power_cut());
        }
        let op = self.ops;
        self.ops += 1;
        self.kinds.push(kind);
        let mut fault = self.faults.get(&op).copied();
        if fault.is_none()
            && let Some(n) = self.denied.get_mut(kind)
            && *n > 0
        {
            *n -= 1;
            fault = Some(Fault::Denied);
        }
        if fault == Some(Fault::PowerCut) {
            self.crashed = true;
        }
        Ok(fault)
    }

    fn node(&self, path: &Path) -> io::Result<NodeRef> {
        let (dir, name) = split(path)?;
        self.live
            .get(&dir)
            .and_then(|d| d.get(&name))
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{} not found", path.display())))
    }
}

impl SimFs {
    /// A new, empty machine whose random choices come from `seed`.
    pub fn new(seed: u64) -> Self {
        let state = State {
            live: BTreeMap::new(),
            durable: BTreeMap::new(),
            ops: 0,
            faults: HashMap::new(),
            denied: HashMap::new(),
            kinds: Vec::new(),
            crashed: false,
            rng: seed,
            locks: HashMap::new(),
        };
        SimFs { state: Arc::new(Mutex::new(state)), lock_changed: Arc::new(Condvar::new()) }
    }

    /// Injects `fault` at mutating call number `op` (0-based, counted from now on too).
    pub fn inject(&self, op: u64, fault: Fault) {
        lock(&self.state).faults.insert(op, fault);
    }

    /// Makes the next `count` calls of `kind` (`write` or `set_len`) fail with
    /// [`Fault::Denied`], whenever they come.
    pub fn deny(&self, kind: &'static str, count: u32) {
        lock(&self.state).denied.insert(kind, count);
    }

    /// How many mutating calls have been made.
    pub fn ops(&self) -> u64 {
        lock(&self.state).ops
    }

    /// The kind of each mutating call made so far (`create`, `remove`, `rename`, `sync_dir`,
    /// `remove_all`, `write`, `sync_data`, `set_len`), in order: call `n` is `kinds()[n]`.
    pub fn kinds(&self) -> Vec<&'static str> {
        lock(&self.state).kinds.clone()
    }

    /// True once a power cut has happened.
    pub fn crashed(&self) -> bool {
        lock(&self.state).crashed
    }

    /// The machine as it comes back after a power cut now: a new `SimFs` holding only what the
    /// model says survives, with fresh random choices from `seed`.
    pub fn after_power_cut(&self, seed: u64) -> SimFs {
        let st = lock(&self.state);
        let mut rng = State {
            live: BTreeMap::new(),
            durable: BTreeMap::new(),
            ops: 0,
            faults: HashMap::new(),
            denied: HashMap::new(),
            kinds: Vec::new(),
            crashed: false,
            rng: seed,
            locks: HashMap::new(),
        };
        let mut dirs: BTreeMap<PathBuf, BTreeMap<String, NodeRef>> = BTreeMap::new();
        let mut survivors: HashMap<*const Mutex<Node>, NodeRef> = HashMap::new();
        let all_dirs: Vec<PathBuf> = st.live.keys().chain(st.durable.keys()).cloned().collect();
        for dir in all_dirs {
            if dirs.contains_key(&dir) {
                continue;
            }
            let live = st.live.get(&dir).cloned().unwrap_or_default();
            let durable = st.durable.get(&dir).cloned().unwrap_or_default();
            let mut out = BTreeMap::new();
            let names: Vec<String> = live.keys().chain(durable.keys()).cloned().collect();
            for name in names {
                if out.contains_key(&name) {
                    continue;
                }
                let l = live.get(&name);
                let d = durable.get(&name);
                let chosen = match (l, d) {
                    (Some(l), Some(d)) if Arc::ptr_eq(l, d) => Some(l.clone()),
                    (Some(l), Some(d)) => Some(if rng.next_rand().is_multiple_of(2) { l.clone() } else { d.clone() }),
                    (Some(l), None) => (rng.next_rand().is_multiple_of(2)).then(|| l.clone()),
                    (None, Some(d)) => (rng.next_rand().is_multiple_of(2)).then(|| d.clone()),
                    (None, None) => None,
                };
                if let Some(node) = chosen {
                    let key = Arc::as_ptr(&node);
                    let copy = if let Some(c) = survivors.get(&key) {
                        c.clone()
                    } else {
                        let bytes = surviving_bytes(&lock_node(&node), &mut rng);
                        let c = Arc::new(Mutex::new(Node { data: bytes.clone(), durable: bytes }));
                        survivors.insert(key, c.clone());
                        c
                    };
                    out.insert(name, copy);
                }
            }
            dirs.insert(dir, out);
        }
        let next = SimFs::new(rng.next_rand());
        {
            let mut ns = lock(&next.state);
            ns.durable = dirs.clone();
            ns.live = dirs;
        }
        next
    }

    /// Reads a whole file (for tests).
    pub fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        let st = lock(&self.state);
        let node = st.node(path)?;
        let data = lock_node(&node).data.clone();
        Ok(data)
    }

    /// Replaces a whole file's bytes, durably (for tests that damage a journal).
    pub fn write_file(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let st = lock(&self.state);
        let node = st.node(path)?;
        let mut n = lock_node(&node);
        n.data = bytes.to_vec();
        n.durable = bytes.to_vec();
        Ok(())
    }

    /// Flips one bit of a file, durably.
    pub fn flip_bit(&self, path: &Path, bit: u64) -> io::Result<()> {
        let mut bytes = self.read_file(path)?;
        let byte = usize::try_from(bit / 8).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let b = bytes
            .get_mut(byte)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "bit beyond end of file"))?;
        *b ^= 1 << (bit % 8);
        self.write_file(path, &bytes)
    }

    /// A deep copy of the machine as it is (durable and live state alike).
    pub fn snapshot(&self) -> SimFs {
        let st = lock(&self.state);
        let mut map: HashMap<*const Mutex<Node>, NodeRef> = HashMap::new();
        let mut copy_tree = |tree: &BTreeMap<PathBuf, BTreeMap<String, NodeRef>>| {
            tree.iter()
                .map(|(d, names)| {
                    let names = names
                        .iter()
                        .map(|(n, node)| {
                            let key = Arc::as_ptr(node);
                            let c = map
                                .entry(key)
                                .or_insert_with(|| {
                                    let g = lock_node(node);
                                    Arc::new(Mutex::new(Node { data: g.data.clone(), durable: g.durable.clone() }))
                                })
                                .clone();
                            (n.clone(), c)
                        })
                        .collect();
                    (d.clone(), names)
                })
                .collect::<BTreeMap<_, _>>()
        };
        let live = copy_tree(&st.live);
        let durable = copy_tree(&st.durable);
        let next = SimFs::new(st.rng ^ 0x5555);
        {
            let mut ns = lock(&next.state);
            ns.live = live;
            ns.durable = durable;
        }
        next
    }
}

/// What survives of one file's bytes after a power cut, per the model above.
fn surviving_bytes(node: &Node, st: &mut State) -> Vec<u8> {
    if !node.data.starts_with(&node.durable) && st.next_rand().is_multiple_of(2) {
        // Truncated or rewritten since the last sync, and that change did not survive.
        return node.durable.clone();
    }
    let base = &node.data;
    let synced = base.iter().zip(node.durable.iter()).take_while(|(a, b)| a == b).count() as u64;
    let total = base.len() as u64;
    if total == synced {
        return base.clone();
    }
    // A cut point: the synced length, any 512-byte boundary after it, or the whole file.
    let mut cuts = vec![synced];
    let mut b = (synced / SECTOR_SIZE_BYTES + 1) * SECTOR_SIZE_BYTES;
    while b < total {
        cuts.push(b);
        b += SECTOR_SIZE_BYTES;
    }
    cuts.push(total);
    let cut = cuts[(st.next_rand() % cuts.len() as u64) as usize];
    let mut out = base[..cut as usize].to_vec();
    if st.next_rand().is_multiple_of(3) {
        // The size reached the disk but the data did not: a zero-filled tail.
        let len = cut + st.next_rand() % (total - cut + 1);
        out.resize(len as usize, 0);
    }
    out
}

struct SimFile {
    fs: SimFs,
    node: NodeRef,
    writable: bool,
}

struct SimLock {
    fs: SimFs,
    path: PathBuf,
    exclusive: bool,
}

impl LockGuard for SimLock {}

impl Drop for SimLock {
    fn drop(&mut self) {
        self.fs.release(&self.path, self.exclusive);
    }
}

impl Vfs for SimFs {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        let mut st = lock(&self.state);
        if st.crashed {
            return Err(power_cut());
        }
        // Directories are modelled as always durable: the journal creates them once, up front.
        let mut p = Some(path);
        while let Some(d) = p {
            st.live.entry(d.to_path_buf()).or_default();
            st.durable.entry(d.to_path_buf()).or_default();
            p = d.parent();
        }
        Ok(())
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let st = lock(&self.state);
        if st.crashed {
            return Err(power_cut());
        }
        st.live
            .get(path)
            .map(|d| d.keys().cloned().collect())
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such directory"))
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let st = lock(&self.state);
        if st.live.contains_key(path) {
            return Ok(true);
        }
        Ok(st.node(path).is_ok())
    }

    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn VfsFile>> {
        let st = lock(&self.state);
        if st.crashed {
            return Err(power_cut());
        }
        let node = st.node(path)?;
        Ok(Arc::new(SimFile { fs: self.clone(), node, writable: false }))
    }

    fn open_rw(&self, path: &Path) -> io::Result<Arc<dyn VfsFile>> {
        let st = lock(&self.state);
        if st.crashed {
            return Err(power_cut());
        }
        let node = st.node(path)?;
        Ok(Arc::new(SimFile { fs: self.clone(), node, writable: true }))
    }

    fn create_new(&self, path: &Path) -> io::Result<Arc<dyn VfsFile>> {
        let mut st = lock(&self.state);
        st.tick("create")?;
        if st.crashed {
            return Err(power_cut());
        }
        let (dir, name) = split(path)?;
        let d = st
            .live
            .get_mut(&dir)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such directory"))?;
        if d.contains_key(&name) {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, "file exists"));
        }
        let node: NodeRef = Arc::new(Mutex::new(Node::default()));
        d.insert(name, node.clone());
        Ok(Arc::new(SimFile { fs: self.clone(), node, writable: true }))
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut st = lock(&self.state);
        st.tick("remove")?;
        if st.crashed {
            return Err(power_cut());
        }
        let (dir, name) = split(path)?;
        st.live
            .get_mut(&dir)
            .and_then(|d| d.remove(&name))
            .map(|_| ())
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "not found"))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut st = lock(&self.state);
        st.tick("rename")?;
        if st.crashed {
            return Err(power_cut());
        }
        let (fdir, fname) = split(from)?;
        let (tdir, tname) = split(to)?;
        let node = st
            .live
            .get_mut(&fdir)
            .and_then(|d| d.remove(&fname))
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "not found"))?;
        st.live.entry(tdir).or_default().insert(tname, node);
        Ok(())
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        let mut st = lock(&self.state);
        let fault = st.tick("sync_dir")?;
        if st.crashed {
            return Err(power_cut());
        }
        if fault == Some(Fault::SyncFails) {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        let live = st.live.get(path).cloned().unwrap_or_default();
        st.durable.insert(path.to_path_buf(), live);
        Ok(())
    }

    fn lock(&self, path: &Path, mode: LockMode) -> io::Result<Box<dyn LockGuard>> {
        self.acquire(path, mode);
        Ok(Box::new(SimLock { fs: self.clone(), path: path.to_path_buf(), exclusive: mode == LockMode::Exclusive }))
    }

    fn open_lock(&self, path: &Path) -> io::Result<Box<dyn LockFile>> {
        Ok(Box::new(SimLockFile { fs: self.clone(), path: path.to_path_buf(), held: Mutex::new(None) }))
    }

    fn try_lock(&self, path: &Path) -> io::Result<Option<Box<dyn LockGuard>>> {
        let mut st = lock(&self.state);
        let entry = st.locks.entry(path.to_path_buf()).or_insert((0, false));
        if entry.1 || entry.0 > 0 {
            return Ok(None);
        }
        entry.1 = true;
        Ok(Some(Box::new(SimLock { fs: self.clone(), path: path.to_path_buf(), exclusive: true })))
    }

    fn is_held(&self, path: &Path) -> io::Result<bool> {
        if !self.exists(path)? {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        }
        Ok(lock(&self.state).locks.get(path).is_some_and(|l| l.1))
    }

    fn try_lock_dir(&self, path: &Path) -> io::Result<Option<Box<dyn LockGuard>>> {
        if !lock(&self.state).live.contains_key(path) {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        }
        self.try_lock(path)
    }

    fn remove_all(&self, path: &Path) -> io::Result<()> {
        let is_dir = lock(&self.state).live.contains_key(path);
        if !is_dir {
            return self.remove_file(path);
        }
        let mut st = lock(&self.state);
        st.tick("remove_all")?;
        if st.crashed {
            return Err(power_cut());
        }
        // Directories are modelled as always durable (see `create_dir_all`): so is their removal.
        let gone: Vec<PathBuf> = st.live.keys().filter(|d| d.starts_with(path)).cloned().collect();
        for d in gone {
            st.live.remove(&d);
            st.durable.remove(&d);
        }
        Ok(())
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        let mut st = lock(&self.state);
        st.tick("remove_dir")?;
        if st.crashed {
            return Err(power_cut());
        }
        let Some(files) = st.live.get(path) else { return Err(io::Error::from(io::ErrorKind::NotFound)) };
        if !files.is_empty() || st.live.keys().any(|d| d.parent() == Some(path)) {
            return Err(io::Error::from_raw_os_error(libc::ENOTEMPTY));
        }
        // Directories are modelled as always durable (see `create_dir_all`): so is their removal.
        st.live.remove(path);
        st.durable.remove(path);
        Ok(())
    }

    fn check_writable(&self, path: &Path) -> io::Result<()> {
        if lock(&self.state).live.contains_key(path) { Ok(()) } else { Err(io::Error::from(io::ErrorKind::NotFound)) }
    }
}

impl SimFs {
    /// Blocks until the in-process lock on `path` is granted in `mode`.
    fn acquire(&self, path: &Path, mode: LockMode) {
        self.acquire_by(path, mode, None);
    }

    /// [`SimFs::acquire`], giving up at `deadline` (if any): whether it was taken.
    fn acquire_by(&self, path: &Path, mode: LockMode, deadline: Option<std::time::Instant>) -> bool {
        let mut st = lock(&self.state);
        loop {
            let entry = st.locks.entry(path.to_path_buf()).or_insert((0, false));
            let free = match mode {
                LockMode::Shared => !entry.1,
                LockMode::Exclusive => !entry.1 && entry.0 == 0,
            };
            if free {
                match mode {
                    LockMode::Shared => entry.0 += 1,
                    LockMode::Exclusive => entry.1 = true,
                }
                return true;
            }
            st = match deadline {
                None => self.lock_changed.wait(st).unwrap_or_else(|p| p.into_inner()),
                Some(d) => {
                    let now = std::time::Instant::now();
                    if now >= d {
                        return false;
                    }
                    self.lock_changed.wait_timeout(st, d - now).unwrap_or_else(|p| p.into_inner()).0
                }
            };
        }
    }

    fn release(&self, path: &Path, exclusive: bool) {
        let mut st = lock(&self.state);
        if let Some(entry) = st.locks.get_mut(path) {
            if exclusive {
                entry.1 = false;
            } else {
                entry.0 = entry.0.saturating_sub(1);
            }
        }
        drop(st);
        self.lock_changed.notify_all();
    }
}

struct SimLockFile {
    fs: SimFs,
    path: PathBuf,
    held: Mutex<Option<bool>>,
}

impl LockFile for SimLockFile {
    fn lock(&self, mode: LockMode) -> io::Result<()> {
        self.fs.acquire(&self.path, mode);
        *self.held.lock().unwrap_or_else(|p| p.into_inner()) = Some(mode == LockMode::Exclusive);
        Ok(())
    }
    fn lock_within(&self, mode: LockMode, wait: std::time::Duration) -> io::Result<bool> {
        // A wait past what an instant can hold is no bound.
        if !self.fs.acquire_by(&self.path, mode, std::time::Instant::now().checked_add(wait)) {
            return Ok(false);
        }
        *self.held.lock().unwrap_or_else(|p| p.into_inner()) = Some(mode == LockMode::Exclusive);
        Ok(true)
    }
    fn unlock(&self) -> io::Result<()> {
        if let Some(exclusive) = self.held.lock().unwrap_or_else(|p| p.into_inner()).take() {
            self.fs.release(&self.path, exclusive);
        }
        Ok(())
    }
}

/// Closing a lock file lets its lock go, as closing a file's last descriptor does.
impl Drop for SimLockFile {
    fn drop(&mut self) {
        let _ = self.unlock();
    }
}

impl VfsFile for SimFile {
    fn len(&self) -> io::Result<u64> {
        Ok(lock_node(&self.node).data.len() as u64)
    }

    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
        if lock(&self.fs.state).crashed {
            return Err(power_cut());
        }
        let n = lock_node(&self.node);
        let len = n.data.len() as u64;
        if pos >= len {
            return Ok(0);
        }
        let start = pos as usize;
        let count = buf.len().min(n.data.len() - start);
        buf[..count].copy_from_slice(&n.data[start..start + count]);
        Ok(count)
    }

    fn write_all_at(&self, buf: &[u8], pos: u64) -> io::Result<()> {
        if !self.writable {
            return Err(io::Error::new(io::ErrorKind::PermissionDenied, "opened read-only"));
        }
        let mut st = lock(&self.fs.state);
        let fault = st.tick("write");
        let fault = match fault {
            Err(e) => return Err(e),
            Ok(f) => f,
        };
        if fault == Some(Fault::Denied) {
            return Err(io::Error::from_raw_os_error(libc::EPERM));
        }
        let keep = match fault {
            Some(Fault::PowerCut) | Some(Fault::DiskFull) => {
                // A sector-aligned prefix of this write reaches the file.
                let end = pos + buf.len() as u64;
                let mut cuts = vec![pos];
                let mut b = pos.div_ceil(SECTOR_SIZE_BYTES) * SECTOR_SIZE_BYTES;
                while b < end {
                    if b > pos {
                        cuts.push(b);
                    }
                    b += SECTOR_SIZE_BYTES;
                }
                let cut = cuts[(st.next_rand() % cuts.len() as u64) as usize];
                (cut - pos) as usize
            }
            _ => buf.len(),
        };
        drop(st);
        let mut n = lock_node(&self.node);
        let start = pos as usize;
        if n.data.len() < start + keep {
            n.data.resize(start + keep, 0);
        }
        n.data[start..start + keep].copy_from_slice(&buf[..keep]);
        match fault {
            Some(Fault::PowerCut) => Err(power_cut()),
            Some(Fault::DiskFull) => Err(io::Error::from_raw_os_error(libc::ENOSPC)),
            _ => Ok(()),
        }
    }

    fn sync_data(&self) -> io::Result<()> {
        let mut st = lock(&self.fs.state);
        let fault = st.tick("sync_data")?;
        if st.crashed {
            return Err(power_cut());
        }
        if fault == Some(Fault::SyncFails) {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        drop(st);
        let mut n = lock_node(&self.node);
        n.durable = n.data.clone();
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut st = lock(&self.fs.state);
        let fault = st.tick("set_len")?;
        if st.crashed {
            return Err(power_cut());
        }
        if fault == Some(Fault::Denied) {
            return Err(io::Error::from_raw_os_error(libc::EPERM));
        }
        drop(st);
        lock_node(&self.node).data.resize(len as usize, 0);
        Ok(())
    }

    fn map(&self) -> io::Result<Mapped> {
        if lock(&self.fs.state).crashed {
            return Err(power_cut());
        }
        Ok(Mapped::Owned(Arc::new(lock_node(&self.node).data.clone())))
    }
}

/// A file system mounted read-only, over another (tests): below its path (all of it by
/// default), every call that would change it fails with `EROFS`, as Linux answers on a
/// read-only mount, and the rest go through. A directory that exists is made as
/// `create_dir_all` makes it (nothing to do); locks go through (Origin opens a lock file for
/// reading where writing it is refused: see [`Vfs::lock`]), a writer failing at its first
/// write.
/// Clones share the mount: [`ReadOnlyFs::remount`] changes it for all of them.
#[derive(Debug, Clone)]
pub struct ReadOnlyFs {
    inner: Arc<dyn Vfs>,
    below: PathBuf,
    read_only: Arc<std::sync::atomic::AtomicBool>,
}

impl ReadOnlyFs {
    /// All of `inner`, read-only.
    pub fn new(inner: Arc<dyn Vfs>) -> ReadOnlyFs {
        ReadOnlyFs::below(inner, Path::new("/"))
    }

    /// `inner` with only what is below `path` read-only (a read-only mount there).
    pub fn below(inner: Arc<dyn Vfs>, path: &Path) -> ReadOnlyFs {
        ReadOnlyFs { inner, below: path.to_path_buf(), read_only: Arc::new(std::sync::atomic::AtomicBool::new(true)) }
    }

    /// Mounts it again, read-only or to write.
    pub fn remount(&self, read_only: bool) {
        self.read_only.store(read_only, std::sync::atomic::Ordering::SeqCst);
    }

    /// `Err(EROFS)` if `path` is on the read-only mount.
    fn refuse(&self, path: &Path) -> io::Result<()> {
        if self.read_only.load(std::sync::atomic::Ordering::SeqCst) && path.starts_with(&self.below) { Err(read_only()) } else { Ok(()) }
    }
}

fn read_only() -> io::Error {
    io::Error::from_raw_os_error(libc::EROFS)
}

impl Vfs for ReadOnlyFs {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        if self.inner.exists(path)? {
            return Ok(());
        }
        self.refuse(path)?;
        self.inner.create_dir_all(path)
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        self.inner.list_dir(path)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.inner.exists(path)
    }
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn VfsFile>> {
        let file = self.inner.open_read(path)?;
        Ok(if self.refuse(path).is_err() { Arc::new(ReadOnlyFile(file)) } else { file })
    }
    fn open_rw(&self, path: &Path) -> io::Result<Arc<dyn VfsFile>> {
        self.refuse(path)?;
        self.inner.open_rw(path)
    }
    fn create_new(&self, path: &Path) -> io::Result<Arc<dyn VfsFile>> {
        self.refuse(path)?;
        self.inner.create_new(path)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.refuse(path)?;
        self.inner.remove_file(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.refuse(from)?;
        self.refuse(to)?;
        self.inner.rename(from, to)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        self.inner.sync_dir(path)
    }
    fn lock(&self, path: &Path, mode: LockMode) -> io::Result<Box<dyn LockGuard>> {
        self.inner.lock(path, mode)
    }
    fn open_lock(&self, path: &Path) -> io::Result<Box<dyn LockFile>> {
        self.inner.open_lock(path)
    }
    fn try_lock(&self, path: &Path) -> io::Result<Option<Box<dyn LockGuard>>> {
        self.inner.try_lock(path)
    }
    fn remove_all(&self, path: &Path) -> io::Result<()> {
        self.refuse(path)?;
        self.inner.remove_all(path)
    }
    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        self.refuse(path)?;
        self.inner.remove_dir(path)
    }
    fn try_lock_dir(&self, path: &Path) -> io::Result<Option<Box<dyn LockGuard>>> {
        self.inner.try_lock_dir(path)
    }
    fn is_held(&self, path: &Path) -> io::Result<bool> {
        self.inner.is_held(path)
    }
    fn check_writable(&self, path: &Path) -> io::Result<()> {
        if !self.inner.exists(path)? {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        }
        self.refuse(path)?;
        self.inner.check_writable(path)
    }
}

/// A file of a [`ReadOnlyFs`]: writes fail with `EBADF`, as on a file opened for reading.
struct ReadOnlyFile(Arc<dyn VfsFile>);

impl VfsFile for ReadOnlyFile {
    fn len(&self) -> io::Result<u64> {
        self.0.len()
    }
    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
        self.0.read_at(buf, pos)
    }
    fn write_all_at(&self, _: &[u8], _: u64) -> io::Result<()> {
        Err(io::Error::from_raw_os_error(libc::EBADF))
    }
    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }
    fn set_len(&self, _: u64) -> io::Result<()> {
        Err(io::Error::from_raw_os_error(libc::EBADF))
    }
    fn map(&self) -> io::Result<Mapped> {
        self.0.map()
    }
}

/// Every file under the real directory `dir` with its bytes (tests: what a command left
/// unchanged). Panics on a failure to read, as a test would.
pub fn files_under(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut found = std::collections::BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                todo.push(p);
            } else {
                found.insert(p.clone(), std::fs::read(&p).expect("read"));
            }
        }
    }
    found
}
