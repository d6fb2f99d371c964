//! The history a Codex fork copies from its parent.
//!
//! A forked rollout (`session_meta.forked_from_id`; a sub-agent spawned with its parent's
//! history too) begins with its own header, then the parent's rollout lines that Codex loaded,
//! copied as they were but each stamped again with the time of the fork: the parent's header
//! first, then its turns, up to where the fork was made. Indexing those lines again would list
//! every message before the fork twice (once per fork: an agent that forks sub-agents copies
//! the same history into each), under the fork's session.
//!
//! A line of a fork is taken for a copy when it is, less its `timestamp`, the line of its
//! parent's rollout at the same place: the fork's line `base + k` against the parent's line
//! `k`, `base` being the line of the fork's own header, the places after a parent's line that
//! Codex did not copy moved by one. Codex does not copy a line it cannot load (not a JSON
//! object), which is always passed over; it may leave out a record of a type some of its
//! versions do not know (other than `session_meta`, `response_item`, `turn_context`,
//! `event_msg`, `compacted`) and a legacy ghost snapshot, which are passed over when the
//! fork's line is not them. The copies are the run of such lines right after the header; the
//! first line that is not one ends it for good. A copy gives no event and changes nothing (a
//! copied `turn_context` or title is the parent's); the mirror still keeps it, as it keeps
//! every line. Only the line at its own place is compared, so a line the fork wrote itself is
//! taken for a copy only if it is exactly the parent's line there (a turn's lines carry its
//! turn id; a user's message would have to be the parent's next one, word for word).
//!
//! The copies are read as lines of the fork, as before this module (the history listed
//! twice, nothing lost), when the parent's rollout is not found (deleted, or never on this
//! machine: but when the missing parent was itself a fork, its copied header, the fork's next
//! line, names its parent, whose copied lines are then compared in the same way), cannot be
//! read, or decodes to
//! more than ingest reads (ingest then reads none of it either); and from the first place the
//! parent has not written yet (Codex writes a rollout behind the conversation: a sub-agent
//! forked in the middle of a turn may copy lines its parent's file does not hold yet).
//!
//! The parent is found by its thread id among the rollouts discovery listed in this run
//! ([`listed`]; its plain file before its `.zst`), or, when it has moved since (compressed
//! when cold, archived), in the fork's folder and then below `sessions/` and
//! `archived_sessions/`. What its lines are is kept for the process (the last [`CACHED_MAX`]
//! parents, at most [`PARENT_LINES_MAX`] lines each), each line held at most up to the size
//! ingest parses, and read again when a fork's
//! copy runs past what was read and the parent has changed since.
//!
//! State kept in the fork's file state while its copy is open: [`FROM_KEY`] (the parent's
//! thread id), [`PARENT_KEY`] (its rollout as last found), [`BASE_KEY`] and [`SHIFT_KEY`];
//! [`COPIES_KEY`] counts the lines taken for copies; [`MISSING_KEY`] names a parent not found
//! until the line after the fork's header.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use serde::Deserialize;
use serde_json::Value;
use xxhash_rust::xxh3::xxh3_64;

use super::State;
use crate::limits::{DECODED_LOG_SIZE_BYTES_MAX, LINE_SIZE_BYTES_MAX};
use crate::walk;

/// State key: the parent's thread id, while the fork's lines may still be copies.
pub const FROM_KEY: &str = "fork_from";
/// State key: the parent's rollout as last found.
pub const PARENT_KEY: &str = "fork_parent";
/// State key: the line of the fork's own header (the parent's line `k` is the fork's `base + k`).
pub const BASE_KEY: &str = "fork_base";
/// State key: how many of the parent's lines before the place compared were passed over.
pub const SHIFT_KEY: &str = "fork_shift";
/// State key: how many of the fork's lines were taken for copies.
pub const COPIES_KEY: &str = "fork_copies";

/// Parents whose lines a process keeps.
const CACHED_MAX: usize = 8;
/// Lines of a parent kept (16 bytes each): a fork's copy longer than this is compared this
/// far, the rest read as the fork's lines (rollouts run to thousands of lines).
const PARENT_LINES_MAX: usize = 1_000_000;

/// What a line of the parent's rollout is to the comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kept {
    /// A line Codex copies: its print.
    Line(u64),
    /// A line Codex may have left out when it loaded the parent (a record type some of its
    /// versions do not know, a legacy ghost snapshot): its print; passed over when the fork's
    /// line is not it.
    Droppable(u64),
    /// A line Codex cannot load (not a JSON object): always passed over.
    Unloadable,
    /// A line longer than ingest gives an adapter: the fork's copy of it is not given either;
    /// a fork's line that is given here is not its copy.
    Long,
}

/// A parent's rollout as last read: its path, size and time of change, what its lines are.
struct Parent {
    path: PathBuf,
    stamp: (u64, Option<SystemTime>),
    lines: Arc<Vec<Kept>>,
}

static CACHE: Mutex<Vec<Parent>> = Mutex::new(Vec::new());

/// Per Codex home (the folder holding `sessions/`), its rollouts by thread id, as its last
/// discovery listed them.
static LISTED: Mutex<Vec<(PathBuf, HashMap<String, PathBuf>)>> = Mutex::new(Vec::new());

fn lock<T>(m: &'static Mutex<T>) -> MutexGuard<'static, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A line's print: the 64-bit hash of its bytes less a leading `{"timestamp":"…",` (what a
/// copy writes again) and a trailing `\r`. Each comparison is of two lines at one place, so
/// a line taken for another by its hash is a chance of one in 2^64 per line; 8 bytes a line
/// keep a parent of a million lines in 16 MB.
fn print(line: &[u8]) -> u64 {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let rest = line
        .strip_prefix(b"{\"timestamp\":\"")
        .and_then(|r| memchr::memchr(b'"', r).and_then(|end| r[end + 1..].strip_prefix(b",")))
        .unwrap_or(line);
    xxh3_64(rest)
}

/// Notes the rollouts discovery listed below Codex home `root`, by thread id (lower case),
/// for the forks of this run to find their parents in.
pub fn listed(root: &Path, rollouts: impl Iterator<Item = (String, PathBuf)>) {
    let mut by_id: HashMap<String, PathBuf> = HashMap::new();
    for (id, path) in rollouts {
        // Its plain file before its `.zst` (discovery lists one of them; both, only in a
        // race with Codex).
        let plain = path.extension().is_some_and(|e| e == "jsonl");
        match by_id.get(&id) {
            Some(had) if !plain || had.extension().is_some_and(|e| e == "jsonl") => {}
            _ => {
                by_id.insert(id, path);
            }
        }
    }
    let mut l = lock(&LISTED);
    l.retain(|(r, _)| r != root);
    l.push((root.to_path_buf(), by_id));
}

/// State key: the parent whose rollout was not found and the line of the fork's header, while
/// the next line may be that parent's copied header (see [`missing_parent_header`]).
pub const MISSING_KEY: &str = "fork_missing";

/// Called at a fork's own header (line `line_no`): notes its parent's rollout, if found, so
/// that the lines after the header are compared with the parent's; if not, notes the parent
/// missing ([`missing_parent_header`]).
pub fn begin(state: &mut State, fork: &Path, parent: &str, line_no: u64) {
    let parent = parent.to_ascii_lowercase();
    match parent_rollout(fork, &parent) {
        Some(path) => {
            state.insert(FROM_KEY.into(), Value::String(parent));
            state.insert(PARENT_KEY.into(), Value::String(path.to_string_lossy().into_owned()));
            state.insert(BASE_KEY.into(), Value::from(line_no));
            state.insert(COPIES_KEY.into(), Value::from(0u64));
        }
        None => {
            state.insert(MISSING_KEY.into(), serde_json::json!([parent, line_no]));
        }
    }
}

/// Called at a header of another thread than the fork's (line `line_no`, thread `id`, forked
/// from `from`): right after the header of a fork whose parent's rollout is gone, it is that
/// parent's own header, copied, and when that parent was itself a fork, the lines after it are
/// compared with its parent's (a fork of a fork whose middle rollout is gone: the middle's own
/// lines, copied here only, are read as the fork's; its parent's are not read again).
pub fn missing_parent_header(state: &mut State, fork: &Path, id: &str, from: Option<&str>, line_no: u64) {
    let Some(missing) = state.remove(MISSING_KEY) else { return };
    let named = missing.get(0).and_then(Value::as_str).is_some_and(|m| m.eq_ignore_ascii_case(id));
    let next = missing.get(1).and_then(Value::as_u64).is_some_and(|at| at + 1 == line_no);
    if let (true, true, Some(from)) = (named, next, from.filter(|f| !f.is_empty() && !f.eq_ignore_ascii_case(id))) {
        begin(state, fork, from, line_no);
    }
}

/// True if line `line_no` of fork `fork` is a copy of its parent's line at the same place
/// (see the module documentation); the first line that is not ends the copy.
pub fn is_copy(state: &mut State, fork: &Path, line: &[u8], line_no: u64) -> bool {
    // A missing parent's header is looked for on the line after the fork's only.
    if state.get(MISSING_KEY).and_then(|m| m.get(1)).and_then(Value::as_u64).is_some_and(|at| line_no > at + 1) {
        state.remove(MISSING_KEY);
    }
    let Some(mut parent) = state.get(PARENT_KEY).and_then(Value::as_str).map(PathBuf::from) else { return false };
    let base = state.get(BASE_KEY).and_then(Value::as_u64).unwrap_or(u64::MAX);
    let mut shift = state.get(SHIFT_KEY).and_then(Value::as_u64).unwrap_or(0);
    let mut copy = false;
    if let Some(k) = line_no.checked_sub(base).filter(|&k| k >= 1) {
        let mine = print(line);
        let mut moved = false;
        loop {
            let Ok(at) = usize::try_from(k - 1 + shift) else { break };
            match parent_line(&parent, at) {
                Ok(Some(Kept::Line(p))) => {
                    copy = p == mine;
                    break;
                }
                Ok(Some(Kept::Droppable(p))) if p == mine => {
                    copy = true;
                    break;
                }
                Ok(Some(Kept::Droppable(_) | Kept::Unloadable)) => shift += 1,
                Ok(Some(Kept::Long) | None) => break,
                // Moved since (compressed when cold, archived): found again by its id, once.
                Err(e) if e.kind() == io::ErrorKind::NotFound && !moved => {
                    moved = true;
                    let again = state.get(FROM_KEY).and_then(Value::as_str).and_then(|id| parent_rollout(fork, id));
                    match again {
                        Some(p) if p != parent => parent = p,
                        _ => break,
                    }
                }
                Err(_) => break,
            }
        }
    }
    if copy {
        let n = state.get(COPIES_KEY).and_then(Value::as_u64).unwrap_or(0);
        state.insert(COPIES_KEY.into(), Value::from(n + 1));
        state.insert(SHIFT_KEY.into(), Value::from(shift));
        state.insert(PARENT_KEY.into(), Value::String(parent.to_string_lossy().into_owned()));
    } else {
        for key in [FROM_KEY, PARENT_KEY, BASE_KEY, SHIFT_KEY] {
            state.remove(key);
        }
    }
    copy
}

/// Forgets every parent's lines read by this process, and what discovery listed (for tests:
/// a later process).
#[cfg(test)]
pub fn forget_cached() {
    lock(&CACHE).clear();
    lock(&LISTED).clear();
}

/// What the parent's line `index` (0-based) is; None when the parent has no such line. The
/// parent is read again when the lines kept here end before `index` and it has changed since.
fn parent_line(path: &Path, index: usize) -> io::Result<Option<Kept>> {
    if let Some(r) = lock(&CACHE).iter().find(|r| r.path == path)
        && let Some(&k) = r.lines.get(index)
    {
        return Ok(Some(k));
    }
    let meta = std::fs::metadata(path)?;
    let stamp = (meta.len(), meta.modified().ok());
    if let Some(r) = lock(&CACHE).iter().find(|r| r.path == path && r.stamp == stamp) {
        return Ok(r.lines.get(index).copied());
    }
    let lines = Arc::new(read_lines(path)?);
    let got = lines.get(index).copied();
    let mut c = lock(&CACHE);
    c.retain(|r| r.path != path);
    if c.len() >= CACHED_MAX {
        c.remove(0);
    }
    c.push(Parent { path: path.to_path_buf(), stamp, lines });
    Ok(got)
}

/// What each complete line of a rollout is (a `.zst` decoded): each line held at most up to
/// the size ingest parses. A `.zst` that decodes to more than ingest reads is an error, as it
/// is to ingest (which then reads none of the parent: its copies are not copies of anything
/// stored).
fn read_lines(path: &Path) -> io::Result<Vec<Kept>> {
    read_lines_within(path, DECODED_LOG_SIZE_BYTES_MAX, PARENT_LINES_MAX)
}

/// [`read_lines`] with a `.zst` refused past `decoded_max` bytes, and at most `lines_max` lines.
fn read_lines_within(path: &Path, decoded_max: u64, lines_max: usize) -> io::Result<Vec<Kept>> {
    let file = crate::bytes::open_regular(path)?;
    let zst = path.extension().is_some_and(|e| e == "zst");
    let decoded: Box<dyn Read> = if zst { Box::new(zstd::Decoder::new(file)?.take(decoded_max + 1)) } else { Box::new(file) };
    let mut r = BufReader::with_capacity(1 << 16, decoded);
    let (mut out, mut line, mut long, mut total) = (Vec::new(), Vec::new(), false, 0u64);
    loop {
        let buf = r.fill_buf()?;
        // The end; a last line without its newline is not whole yet.
        if buf.is_empty() || out.len() >= lines_max {
            return Ok(out);
        }
        let (used, end) = match memchr::memchr(b'\n', buf) {
            Some(i) => (i + 1, Some(i)),
            None => (buf.len(), None),
        };
        if !long {
            line.extend_from_slice(&buf[..end.unwrap_or(used)]);
            if line.len() > LINE_SIZE_BYTES_MAX {
                (long, line) = (true, Vec::new());
            }
        }
        r.consume(used);
        total += used as u64;
        if zst && total > decoded_max {
            return Err(io::Error::new(io::ErrorKind::FileTooLarge, format!("{} decodes to more than {decoded_max} bytes", path.display())));
        }
        if end.is_some() {
            out.push(if long { Kept::Long } else { kept(&line) });
            long = false;
            line.clear();
        }
    }
}

/// The record types every Codex version loads (others are left out by a version that does
/// not know them).
const LOADED_TYPES: &[&str] = &["session_meta", "response_item", "turn_context", "event_msg", "compacted"];

/// What a parent's line (at most [`LINE_SIZE_BYTES_MAX`]) is to the comparison.
fn kept(line: &[u8]) -> Kept {
    #[derive(Deserialize)]
    struct Head<'a> {
        #[serde(rename = "type", borrow)]
        ty: Option<std::borrow::Cow<'a, str>>,
        #[serde(borrow)]
        payload: Option<PayloadHead<'a>>,
    }
    #[derive(Deserialize)]
    struct PayloadHead<'a> {
        #[serde(rename = "type", borrow)]
        ty: Option<std::borrow::Cow<'a, str>>,
    }
    let object = line.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    let Some(head) = object.then(|| serde_json::from_slice::<Head<'_>>(line).ok()).flatten() else { return Kept::Unloadable };
    let ty = head.ty.as_deref().unwrap_or("");
    let ghost = ty == "response_item" && head.payload.and_then(|p| p.ty).as_deref() == Some("ghost_snapshot");
    if LOADED_TYPES.contains(&ty) && !ghost { Kept::Line(print(line)) } else { Kept::Droppable(print(line)) }
}

/// The rollout of thread `parent` (lower case) of the Codex home of the fork's rollout `fork`:
/// as its discovery listed it (a parent it did not list is not looked for further); without
/// one (a fork read on its own), in the fork's folder, then below the home.
fn parent_rollout(fork: &Path, parent: &str) -> Option<PathBuf> {
    let root = fork.ancestors().find(|a| a.file_name().is_some_and(|n| n == "sessions" || n == "archived_sessions")).and_then(Path::parent);
    if let Some(root) = root
        && let Some(found) = lock(&LISTED).iter().find(|(r, _)| r == root).map(|(_, by_id)| by_id.get(parent).cloned())
    {
        // Moved since it was listed: looked for below the home.
        if found.as_deref().is_none_or(Path::is_file) {
            return found;
        }
    }
    let (plain, zst) = (format!("-{parent}.jsonl"), format!("-{parent}.jsonl.zst"));
    let is_it = |p: &Path| {
        p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
            let id_end = |suffix: &str| n.len() >= suffix.len() && n.is_char_boundary(n.len() - suffix.len()) && n[n.len() - suffix.len()..].eq_ignore_ascii_case(suffix);
            n.starts_with("rollout-") && ((n.ends_with(".jsonl") && id_end(&plain)) || (n.ends_with(".jsonl.zst") && id_end(&zst)))
        })
    };
    // Its plain file when both are there (Codex writing a resumed thread plain again).
    let pick = |found: Vec<PathBuf>| found.iter().find(|p| p.extension().is_some_and(|e| e == "jsonl")).or(found.first()).cloned();
    let here = fork.parent().and_then(|d| std::fs::read_dir(d).ok()).map(|entries| {
        entries.filter_map(Result::ok).map(|e| e.path()).filter(|p| is_it(p) && p.is_file()).collect::<Vec<_>>()
    });
    if let Some(found) = here.and_then(pick) {
        return Some(found);
    }
    let root = root?;
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

    #[test]
    fn a_parents_lines_are_told_apart_as_codex_loads_them() {
        let dir = tempfile::tempdir().unwrap();
        let long = format!(r#"{{"timestamp":"t","type":"response_item","payload":{{"type":"function_call_output","output":"{}"}}}}"#, "x".repeat(LINE_SIZE_BYTES_MAX));
        let lines = [
            r#"{"timestamp":"t","type":"session_meta","payload":{"id":"p"}}"#.to_owned(),
            r#"{"timestamp":"t","type":"world_state","payload":{}}"#.to_owned(),
            r#"{"timestamp":"t","type":"response_item","payload":{"type":"ghost_snapshot"}}"#.to_owned(),
            r#"{"timestamp":"t","type":"response_item","payload":{"type":"message"}"#.to_owned(),
            r#"["not", "an object"]"#.to_owned(),
            long.clone(),
            r#"{"timestamp":"t","type":"event_msg","payload":{"type":"token_count"}}"#.to_owned(),
        ];
        let text = lines.iter().map(|l| format!("{l}\n")).collect::<String>() + r#"{"timestamp":"t","type":"event_"#;
        let plain = dir.path().join("p.jsonl");
        std::fs::write(&plain, &text).unwrap();
        let want = vec![
            Kept::Line(print(lines[0].as_bytes())),
            Kept::Droppable(print(lines[1].as_bytes())),
            Kept::Droppable(print(lines[2].as_bytes())),
            Kept::Unloadable,
            Kept::Unloadable,
            Kept::Long,
            Kept::Line(print(lines[6].as_bytes())),
        ];
        assert_eq!(read_lines(&plain).unwrap(), want, "the last line, not whole yet, is not one");
        let zst = dir.path().join("p.jsonl.zst");
        std::fs::write(&zst, zstd::encode_all(text.as_bytes(), 1).unwrap()).unwrap();
        assert_eq!(read_lines(&zst).unwrap(), want);
        // A `.zst` decoding to more than ingest reads is refused, as ingest refuses it.
        let size = text.len() as u64;
        assert_eq!(read_lines_within(&zst, size, usize::MAX).unwrap(), want);
        assert_eq!(read_lines_within(&zst, size - 1, usize::MAX).unwrap_err().kind(), io::ErrorKind::FileTooLarge);
        assert_eq!(read_lines_within(&plain, 10, usize::MAX).unwrap(), want, "a plain log has no such bound");
        // At most so many lines kept: a longer copy is compared that far.
        assert_eq!(read_lines_within(&plain, u64::MAX, 3).unwrap(), want[..3]);
    }
}
