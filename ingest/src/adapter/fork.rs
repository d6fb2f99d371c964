//! The history a Codex fork copies from its parent.
//!
//! A forked rollout (`session_meta.forked_from_id`; a sub-agent spawned with its parent's
//! history too) begins with its own header, then the parent's rollout lines copied as they
//! were, each stamped again with the time of the fork: the parent's header first, then its
//! turns, up to where the fork was made. Indexing those lines again would list every message
//! before the fork twice (once per fork: an agent that forks sub-agents copies the same
//! history into each), under the fork's session.
//!
//! A line of a fork is taken for a copy when it is, less its `timestamp`, the line of its
//! parent's rollout at the same place (the fork's line `base + k` against the parent's line
//! `k`, `base` being the line of the fork's own header; a parent's line that is not a JSON
//! object, which Codex cannot have loaded and copied, is passed over and moves the places
//! after it by one): the copies are the run of such lines right after the header, and the
//! first line that differs ends it for good. A copy gives no
//! event and changes nothing (a copied `turn_context` or title is the parent's); the mirror
//! still keeps it, as it keeps every line. What is compared is only ever the line at its own
//! place, so a line the fork wrote itself is taken for a copy only if it is exactly the
//! parent's line there. When the parent's rollout is not found (deleted, or never on this
//! machine) or cannot be read, the copies are read as lines of the fork, as before: an answer
//! listed twice, never one lost.
//!
//! The parent is looked for by its thread id in file names: in the fork's own folder first
//! (a fork is most often made the day its parent ran), then below `sessions/` and
//! `archived_sessions/`; its plain file before its `.zst`. Its lines' prints are kept for the
//! process (the last [`CACHED_MAX`] parents), and read again when a fork's copy runs past
//! them and the parent has changed since.
//!
//! State kept in the fork's file state while its copy is open: [`PARENT_KEY`] (the parent's
//! rollout), [`BASE_KEY`] and [`SHIFT_KEY`]; [`COPIES_KEY`] counts the lines taken for copies.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use serde::de::IgnoredAny;
use serde_json::Value;
use xxhash_rust::xxh3::xxh3_128;

use super::State;
use crate::limits::DECODED_LOG_SIZE_BYTES_MAX;
use crate::walk;

/// State key: the parent's rollout, while the fork's lines may still be copies.
pub const PARENT_KEY: &str = "fork_parent";
/// State key: the line of the fork's own header (the parent's line `k` is the fork's `base + k`).
pub const BASE_KEY: &str = "fork_base";
/// State key: how many of the parent's lines before the place compared were passed over (not
/// JSON objects).
pub const SHIFT_KEY: &str = "fork_shift";
/// State key: how many of the fork's lines were taken for copies.
pub const COPIES_KEY: &str = "fork_copies";

/// Parents whose prints a process keeps.
const CACHED_MAX: usize = 8;

/// A parent's rollout as last read: its path, size and time of change, its lines' prints.
struct Parent {
    path: PathBuf,
    stamp: (u64, Option<SystemTime>),
    /// Per line, its print, or None for a line that is not a JSON object.
    prints: Arc<Vec<Option<u128>>>,
}

static CACHE: Mutex<Vec<Parent>> = Mutex::new(Vec::new());

/// A line's print: its bytes less a leading `{"timestamp":"…",` (what a copy writes again)
/// and a trailing `\r`.
fn print(line: &[u8]) -> u128 {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let rest = line
        .strip_prefix(b"{\"timestamp\":\"")
        .and_then(|r| memchr::memchr(b'"', r).and_then(|end| r[end + 1..].strip_prefix(b",")))
        .unwrap_or(line);
    xxh3_128(rest)
}

/// Called at a fork's own header (line `line_no`): notes its parent's rollout, if found, so
/// that the lines after the header are compared with the parent's.
pub fn begin(state: &mut State, fork: &Path, parent: &str, line_no: u64) {
    if let Some(path) = parent_rollout(fork, parent) {
        state.insert(PARENT_KEY.into(), Value::String(path.to_string_lossy().into_owned()));
        state.insert(BASE_KEY.into(), Value::from(line_no));
        state.insert(COPIES_KEY.into(), Value::from(0u64));
    }
}

/// True if line `line_no` of a fork is a copy of its parent's line at the same place (see the
/// module documentation); the first line that is not ends the copy.
pub fn is_copy(state: &mut State, line: &[u8], line_no: u64) -> bool {
    let Some(parent) = state.get(PARENT_KEY).and_then(Value::as_str) else { return false };
    let base = state.get(BASE_KEY).and_then(Value::as_u64).unwrap_or(u64::MAX);
    let mut shift = state.get(SHIFT_KEY).and_then(Value::as_u64).unwrap_or(0);
    let mut copy = false;
    if let Some(k) = line_no.checked_sub(base).filter(|&k| k >= 1) {
        let path = Path::new(parent);
        let mine = print(line);
        loop {
            match usize::try_from(k - 1 + shift).ok().and_then(|at| parent_print(path, at)) {
                Some(Some(p)) => {
                    copy = p == mine;
                    break;
                }
                Some(None) => shift += 1,
                None => break,
            }
        }
    }
    if copy {
        let n = state.get(COPIES_KEY).and_then(Value::as_u64).unwrap_or(0);
        state.insert(COPIES_KEY.into(), Value::from(n + 1));
        state.insert(SHIFT_KEY.into(), Value::from(shift));
    } else {
        state.remove(PARENT_KEY);
        state.remove(BASE_KEY);
        state.remove(SHIFT_KEY);
    }
    copy
}

/// Forgets every parent's prints read by this process (for tests: a later process).
#[cfg(test)]
pub fn forget_cached() {
    cache().clear();
}

fn cache() -> std::sync::MutexGuard<'static, Vec<Parent>> {
    CACHE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The parent's line `index` (0-based): its print, or None when it is not a JSON object;
/// None when the parent has no such line or cannot be read. The parent is read again when its
/// prints kept here end before `index` and it has changed since.
fn parent_print(path: &Path, index: usize) -> Option<Option<u128>> {
    if let Some(r) = cache().iter().find(|r| r.path == path)
        && let Some(&p) = r.prints.get(index)
    {
        return Some(p);
    }
    let meta = std::fs::metadata(path).ok()?;
    let stamp = (meta.len(), meta.modified().ok());
    if let Some(r) = cache().iter().find(|r| r.path == path && r.stamp == stamp) {
        return r.prints.get(index).copied();
    }
    let prints = Arc::new(read_prints(path).ok()?);
    let got = prints.get(index).copied();
    let mut c = cache();
    c.retain(|r| r.path != path);
    if c.len() >= CACHED_MAX {
        c.remove(0);
    }
    c.push(Parent { path: path.to_path_buf(), stamp, prints });
    got
}

/// Per complete line of a rollout (a `.zst` decoded, up to the size ingest reads), its print,
/// or None when it is not a JSON object.
fn read_prints(path: &Path) -> io::Result<Vec<Option<u128>>> {
    let file = File::open(path)?;
    let decoded: Box<dyn Read> = if path.extension().is_some_and(|e| e == "zst") { Box::new(zstd::Decoder::new(file)?) } else { Box::new(file) };
    let mut r = BufReader::with_capacity(1 << 16, decoded.take(DECODED_LOG_SIZE_BYTES_MAX));
    let (mut out, mut line) = (Vec::new(), Vec::new());
    loop {
        line.clear();
        r.read_until(b'\n', &mut line)?;
        // The end, or a last line not yet whole.
        if line.pop() != Some(b'\n') {
            return Ok(out);
        }
        let object = line.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') && serde_json::from_slice::<IgnoredAny>(&line).is_ok();
        out.push(object.then(|| print(&line)));
    }
}

/// The rollout of thread `parent`, found by its file name near the fork's rollout `fork`.
fn parent_rollout(fork: &Path, parent: &str) -> Option<PathBuf> {
    let parent = parent.to_ascii_lowercase();
    let (plain, zst) = (format!("-{parent}.jsonl"), format!("-{parent}.jsonl.zst"));
    let is_it = |p: &Path| {
        p.file_name().and_then(|n| n.to_str()).map(str::to_ascii_lowercase).is_some_and(|n| n.starts_with("rollout-") && (n.ends_with(&plain) || n.ends_with(&zst)))
    };
    // Its plain file when both are there (Codex writing a resumed thread plain again).
    let pick = |found: Vec<PathBuf>| found.iter().find(|p| p.extension().is_some_and(|e| e == "jsonl")).or(found.first()).cloned();
    let here = fork.parent().and_then(|d| std::fs::read_dir(d).ok()).map(|entries| {
        entries.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_file() && is_it(p)).collect::<Vec<_>>()
    });
    if let Some(found) = here.and_then(pick) {
        return Some(found);
    }
    let root = fork.ancestors().find(|a| a.file_name().is_some_and(|n| n == "sessions" || n == "archived_sessions"))?.parent()?;
    // Folders that cannot be listed were said by discovery.
    let mut problems = Vec::new();
    let mut found = walk::files(&root.join("sessions"), &is_it, &mut problems);
    found.extend(walk::files(&root.join("archived_sessions"), &is_it, &mut problems));
    pick(found)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn a_print_leaves_out_the_timestamp_only() {
        let a = br#"{"timestamp":"2026-10-20T08:03:11.000Z","type":"response_item","payload":{"x":1}}"#;
        let b = br#"{"timestamp":"2026-10-22T07:00:00.123Z","type":"response_item","payload":{"x":1}}"#;
        let c = br#"{"timestamp":"2026-10-22T07:00:00.123Z","type":"response_item","payload":{"x":2}}"#;
        assert_eq!(print(a), print(b));
        assert_ne!(print(b), print(c));
        assert_eq!(print(a), print(&[&a[..], b"\r"].concat()));
        // A line of another shape is compared whole.
        assert_ne!(print(br#"{"type":"x","timestamp":"1"}"#), print(br#"{"type":"x","timestamp":"2"}"#));
        assert_ne!(print(b"{\"timestamp\":\"1\"}"), print(b"{\"timestamp\":\"2\"}"));
    }
}
