//! ZCode (Z.ai): sessions live in SQLite, `<ZCODE_HOME or ~/.zcode>/cli/db/db.sqlite`, with
//! OpenCode's tables (`session`, `message`, `part`; ZCode adds `session.task_type`). Not
//! line-based: every session is one [`FileFormat::Export`] log, key `<db path>#session/<id>`,
//! mirrored as `cli/db/db.sqlite/sessions/<id>.jsonl` (an id a file name cannot hold as it is:
//! see [`mirror_name`]). The database is opened read-only through
//! a `mode=ro` URI, which reads the `-wal` file too; an SQLite error is a problem (discover) or
//! an error (export), never a panic.
//!
//! The export is one JSON line per `part` row joined with its message and session, ordered by
//! `message.time_created, message.id, part.time_created, part.id`, keys in this order:
//! `{"part":{"id","message_id","time_created","time_updated","data"},"message":{"id","role",
//! "time_created"},"session":{"id","directory","title","parent_id","version","task_type"}}`.
//! `data` is the row's JSON with its keys sorted (kept as a string if it is not JSON), each
//! string over 1 MiB as JSON writes it cut to what 512 KiB hold of its beginning and of its end,
//! with a note of the bytes left out; optional
//! session columns a build lacks are null. Only columns that do not move while a session grows
//! are exported (no `time_updated` of sessions or messages, no message data beyond its role), so
//! an export grows by appending until a part is updated in place (a tool finishing, streamed
//! text), the title is generated, or a row is deleted. Ingest then records the lines of the
//! parts that are new or changed since, appended to what it recorded of the session (each line
//! names its part, [`Adapter::export_row`]): the mirror holds every line read of each part, in
//! the order read, not the export as it is now; the later lines with events at the times of a
//! line appended go with it, so that events of one millisecond keep the export's order. (A new
//! version, the export recorded whole again, only when that cannot be: see
//! `Ingester::export_as_growth`.) Events are keyed on row
//! ids, so a part's later line replaces its events; a deleted part's stay. A session is exported only when the
//! stamp of what its export is made of moved ([`Adapter::export_stamp`]: taken at discovery,
//! one pass over the tables per run at most, none when the database's files (their sizes,
//! times and headers; in WAL mode the first read after a burst of writes moves them once more)
//! are as at the process's last run; hashing columns, no JSON built).
//!
//! Mapping, per part (`part.data.type`), event id `zcode:<part id>`: `text` → message, or meta
//! when `synthetic` or `transcriptVisibility: hidden`; `reasoning` → assistant/meta; `tool` →
//! `zcode:<id>:use` (assistant/tool_use, `<tool> <state.input>`) and, once the tool has
//! finished, `zcode:<id>:result` (user/tool_result, `state.output`, or `state.error` for the
//! `error` state; a `pending`/`running` tool has no result yet); `file` → meta naming the file;
//! `step-start`, `step-finish` and every other type → meta with the part's JSON. Role is the
//! message's `role` (user, assistant, system). Time is `part.time_created` (ms), else
//! `message.time_created`. cwd and project come from `session.directory`, the agent version
//! from `session.version`; no git branch is stored. Session title: `session.title`; parent:
//! `session.parent_id` for `subagent_child` sessions (or when `task_type` is unknown), not for
//! forks. First prompt: the first visible text part of a user message.

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use origin_engine::record::{EventKind, Role, SessionChange};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use serde::Serialize;
use serde_json::Value;

use super::{Adapter, FileFormat, Line, LogFile, MemoryFile, MemoryScope, Parsed, Project, State};
use crate::limits::{DECODED_LOG_SIZE_BYTES_MAX, FILES_PER_SOURCE_MAX};
use crate::source::{Homes, Source};
use crate::text::{str_of, event, first_prompt, project_of};

/// The Zcode adapter.
pub struct Zcode;

/// The database, below ZCode's home.
const DB: &str = "cli/db/db.sqlite";
/// What separates the database path from the session id in a key.
const KEY_SESSION: &str = "#session/";

/// `path` as an SQLite URI path: every byte but unreserved ones and `/` percent-encoded.
fn uri_path(path: &Path) -> String {
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes = path.to_string_lossy().replace('\\', "/").into_bytes();
    let mut out = String::with_capacity(bytes.len());
    for b in bytes {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Opens the database read-only (the `-wal` file is read too; nothing is written). The
/// database and the files SQLite opens beside it (`-journal`, `-wal`, `-shm`) must be regular
/// files or absent: SQLite opens them itself, and one that is a pipe kept the open waiting for
/// good (and every command of the store behind the ingest lock).
fn open(db: &Path) -> rusqlite::Result<Connection> {
    for suffix in ["", "-journal", "-wal", "-shm"] {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        if std::fs::metadata(&p).is_ok_and(|m| !m.is_file()) {
            return Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
                Some(format!("{} is not a regular file (a pipe, a socket, a device or a folder): the database is not read", Path::new(&p).display())),
            ));
        }
    }
    let uri = format!("file:{}?mode=ro", uri_path(db));
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(uri, flags)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    Ok(conn)
}

/// The column names of `table`.
fn columns(conn: &Connection, table: &str) -> rusqlite::Result<HashSet<String>> {
    let mut stmt = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
    let names = stmt.query_map([table], |r| r.get::<_, String>(0))?.collect::<rusqlite::Result<HashSet<_>>>()?;
    Ok(names)
}

/// A column as JSON: text and blobs as strings, numbers as numbers.
fn json_of(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::from(i),
        ValueRef::Real(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        ValueRef::Text(t) | ValueRef::Blob(t) => Value::String(String::from_utf8_lossy(t).into_owned()),
    }
}

/// A time column as integer milliseconds (text holding a number is accepted).
fn ms_of(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Integer(i) => Value::from(i),
        ValueRef::Real(f) if f.is_finite() => Value::from(f as i64),
        ValueRef::Text(t) => std::str::from_utf8(t).ok().and_then(|s| s.trim().parse::<i64>().ok()).map_or(Value::Null, Value::from),
        _ => Value::Null,
    }
}

/// A JSON column: parsed (keys sorted, whatever serde_json's map keeps), or kept as a string
/// if it is not JSON.
fn data_of(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Text(t) | ValueRef::Blob(t) => match serde_json::from_slice(t) {
            Ok(v) => sorted(v),
            // Written by JavaScript: a string cut inside a pair leaves a lone surrogate.
            Err(_) => match crate::json::without_lone_surrogates(t).and_then(|f| serde_json::from_slice(&f).ok()) {
                Some(v) => sorted(v),
                None => sorted(Value::String(String::from_utf8_lossy(t).into_owned())),
            },
        },
        other => json_of(other),
    }
}

/// Most bytes of one string in an export, as JSON writes it (a control character takes six): a
/// longer one (a tool's output of many megabytes) keeps as much of its beginning and end as
/// half of this holds each, a note of the bytes left out between them. Far more
/// than an event keeps of a text (50,000 characters, its end among them), and it keeps every
/// line of the export far below the 32 MiB ingest parses (such a line's tool call and output
/// were not read at all), and a long output out of every version the session's export is
/// recorded again in.
const EXPORT_STRING_BYTES_MAX: usize = 1024 * 1024;

/// `v` with every object's keys in sorted order, and every string bounded
/// ([`EXPORT_STRING_BYTES_MAX`]).
fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut kv: Vec<(String, Value)> = m.into_iter().collect();
            kv.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(kv.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        Value::String(s) if s.len() > EXPORT_STRING_BYTES_MAX / 6 && escaped_len(s.chars()) > EXPORT_STRING_BYTES_MAX => Value::String(bounded(&s)),
        other => other,
    }
}

/// The bytes `chars` take written in a JSON string (a control character as `\u00XX`).
fn escaped_len(chars: impl Iterator<Item = char>) -> usize {
    chars.map(|c| match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }).sum()
}

/// A string whose JSON is over [`EXPORT_STRING_BYTES_MAX`]: as much of its beginning and of its
/// end as half of that holds each, cut between characters, and between them how many bytes
/// were left out.
fn bounded(s: &str) -> String {
    let half = EXPORT_STRING_BYTES_MAX / 2;
    let (mut head, mut room) = (0, half);
    for (i, c) in s.char_indices() {
        let n = escaped_len(std::iter::once(c));
        if n > room {
            break;
        }
        room -= n;
        head = i + c.len_utf8();
    }
    let (mut tail, mut room) = (s.len(), half);
    for (i, c) in s.char_indices().rev() {
        let n = escaped_len(std::iter::once(c));
        if n > room || i < head {
            break;
        }
        room -= n;
        tail = i;
    }
    format!("{}\n[… {} bytes left out of the export …]\n{}", &s[..head], tail - head, &s[tail..])
}

/// A session id safe to use as a file name in a mirror path: the id itself when it is made of
/// ASCII letters, digits, `-`, `_` and `.` (not first); else those kept, `_` for the others,
/// and `+` with a hash of the id (two ids that differ only where a file name cannot hold them
/// shared one mirror; `+` is in no name of the first kind).
fn mirror_name(id: &str) -> String {
    let mut s: String = id.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
    if s.is_empty() || s.starts_with('.') {
        s.insert(0, '_');
    }
    if s != id {
        s.push_str(&format!("+{:016x}", xxhash_rust::xxh3::xxh3_64(id.as_bytes())));
    }
    s
}

/// Session ids in the database, sorted.
fn session_ids(db: &Path) -> rusqlite::Result<Vec<String>> {
    let conn = open(db)?;
    let mut stmt = conn.prepare("SELECT id FROM session WHERE id IS NOT NULL ORDER BY id")?;
    let ids = stmt.query_map([], |r| Ok(json_of(r.get_ref(0)?)))?;
    let mut out = Vec::new();
    for id in ids {
        match id? {
            Value::String(s) => out.push(s),
            Value::Null => {}
            other => out.push(other.to_string()),
        }
    }
    Ok(out)
}

/// The exported session columns (repeated on every line, so each line stands alone).
#[derive(Serialize)]
struct SessionOut {
    id: String,
    directory: Value,
    title: Value,
    parent_id: Value,
    version: Value,
    task_type: Value,
}

#[derive(Serialize)]
struct PartOut {
    id: Value,
    message_id: Value,
    time_created: Value,
    time_updated: Value,
    data: Value,
}

#[derive(Serialize)]
struct MessageOut {
    id: Value,
    role: Value,
    time_created: Value,
}

#[derive(Serialize)]
struct ExportLine<'a> {
    part: PartOut,
    message: MessageOut,
    session: &'a SessionOut,
}

/// The session stamps of one database, taken when its files were as `files` says.
struct Stamps {
    db: PathBuf,
    files: Vec<u8>,
    sessions: HashMap<String, String>,
}

/// Passes [`session_stamps`] made in this process (for tests: at most one a run).
pub static STAMP_PASSES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The stamps this process took last, at its last run's discovery.
static STAMPS: Mutex<Option<Stamps>> = Mutex::new(None);

/// What the database's files say of its changes: the sizes and times of change of the
/// database and its `-wal`, the database header (its change counter) and the `-shm` index's
/// header (SQLite counts every transaction there), so that two writes within one tick of the
/// file system's clock are told apart.
fn db_files(db: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    // The `-shm` index's two copies of its header (96 bytes), which writers change; not the
    // read marks after them, which readers (this one among them) move.
    for (suffix, head) in [("", 100usize), ("-wal", 0), ("-shm", 96)] {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        if let Ok(m) = std::fs::metadata(&p) {
            out.extend_from_slice(&m.len().to_le_bytes());
            let since = m.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).unwrap_or_default();
            out.extend_from_slice(&since.as_nanos().to_le_bytes());
        }
        if head > 0 {
            if let Ok(mut f) = crate::bytes::open_regular(Path::new(&p)) {
                let mut buf = vec![0u8; head];
                let n = io::Read::read(&mut f, &mut buf).unwrap_or(0);
                out.extend_from_slice(&buf[..n]);
            }
        }
        out.push(0xff);
    }
    out
}

/// Takes the stamps of `db`'s sessions for this run, unless its files are as when they were
/// taken last (once per run at most: discovery calls it).
fn refresh_stamps(db: &Path) {
    let files = db_files(db);
    let mut held = STAMPS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !held.as_ref().is_some_and(|s| s.db == db && s.files == files) {
        // A stamp that cannot be taken is none: the sessions are exported, as they always were.
        *held = session_stamps(db).ok().map(|sessions| Stamps { db: db.to_path_buf(), files, sessions });
    }
}

/// Each session's stamp: a hash of every column value its export is made of (the session's
/// columns; per part, the part's columns and its message's id, time and role), summed over
/// the parts so that their order does not count, with their number. One pass over the tables,
/// no JSON built: far cheaper than the exports.
fn session_stamps(db: &Path) -> rusqlite::Result<HashMap<String, String>> {
    STAMP_PASSES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let conn = open(db)?;
    let have = columns(&conn, "session")?;
    let col = |name: &str| if have.contains(name) { format!("s.{name}") } else { "NULL".to_owned() };
    let sql = format!("SELECT s.id, {}, {}, {}, {}, {} FROM session s WHERE s.id IS NOT NULL", col("directory"), col("title"), col("parent_id"), col("version"), col("task_type"));
    let mut heads: HashMap<String, u64> = HashMap::new();
    let mut stmt = conn.prepare(&sql)?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let id = id_of(r.get_ref(0)?);
        heads.insert(id, row_hash(r, 1..6)?);
    }
    let part_updated = if columns(&conn, "part")?.contains("time_updated") { "p.time_updated" } else { "NULL" };
    let role = "CASE WHEN json_valid(m.data) THEN json_extract(m.data, '$.role') ELSE m.data END";
    let sql = format!("SELECT m.session_id, p.id, p.message_id, p.time_created, {part_updated}, p.data, m.id, m.time_created, {role} FROM part p JOIN message m ON m.id = p.message_id");
    let mut parts: HashMap<String, (u64, u64)> = HashMap::new();
    let mut stmt = conn.prepare(&sql)?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let e = parts.entry(id_of(r.get_ref(0)?)).or_default();
        e.0 = e.0.wrapping_add(row_hash(r, 1..9)?);
        e.1 += 1;
    }
    Ok(heads
        .into_iter()
        .map(|(id, head)| {
            let (sum, n) = parts.get(&id).copied().unwrap_or_default();
            (id, format!("{head:016x}-{sum:016x}-{n}"))
        })
        .collect())
}

/// A session id as [`session_ids`] lists it.
fn id_of(v: ValueRef<'_>) -> String {
    match json_of(v) {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

/// A hash of the row's columns `cols`, each with its type.
fn row_hash(r: &rusqlite::Row<'_>, cols: std::ops::Range<usize>) -> rusqlite::Result<u64> {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for i in cols {
        match r.get_ref(i)? {
            ValueRef::Null => h.update(&[0]),
            ValueRef::Integer(v) => {
                h.update(&[1]);
                h.update(&v.to_le_bytes());
            }
            ValueRef::Real(v) => {
                h.update(&[2]);
                h.update(&v.to_le_bytes());
            }
            ValueRef::Text(t) | ValueRef::Blob(t) => {
                h.update(&[3]);
                h.update(&(t.len() as u64).to_le_bytes());
                h.update(t);
            }
        }
    }
    Ok(h.digest())
}

fn export_session(db: &Path, id: &str) -> Result<Vec<u8>, String> {
    let conn = open(db).map_err(|e| e.to_string())?;
    let sql_err = |e: rusqlite::Error| e.to_string();
    let have = columns(&conn, "session").map_err(sql_err)?;
    let col = |name: &str| if have.contains(name) { format!("s.{name}") } else { "NULL".to_owned() };
    let sql = format!(
        "SELECT {}, {}, {}, {}, {} FROM session s WHERE s.id = ?1",
        col("directory"),
        col("title"),
        col("parent_id"),
        col("version"),
        col("task_type")
    );
    let session = conn
        .query_row(&sql, [id], |r| {
            Ok(SessionOut {
                id: id.to_owned(),
                directory: json_of(r.get_ref(0)?),
                title: json_of(r.get_ref(1)?),
                parent_id: json_of(r.get_ref(2)?),
                version: json_of(r.get_ref(3)?),
                task_type: json_of(r.get_ref(4)?),
            })
        })
        .map_err(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => format!("no session {id}"),
            e => e.to_string(),
        })?;
    let part_updated = if columns(&conn, "part").map_err(sql_err)?.contains("time_updated") { "p.time_updated" } else { "NULL" };
    let sql = format!(
        "SELECT p.id, p.message_id, p.time_created, {part_updated}, p.data, m.id, m.time_created, m.data \
         FROM part p JOIN message m ON m.id = p.message_id \
         WHERE m.session_id = ?1 \
         ORDER BY m.time_created, m.id, p.time_created, p.id"
    );
    let mut stmt = conn.prepare(&sql).map_err(sql_err)?;
    let mut rows = stmt.query([id]).map_err(sql_err)?;
    let mut out = Vec::new();
    while let Some(r) = rows.next().map_err(sql_err)? {
        let get = |i: usize| r.get_ref(i).map_err(sql_err);
        let message_data = data_of(get(7)?);
        let line = ExportLine {
            part: PartOut { id: json_of(get(0)?), message_id: json_of(get(1)?), time_created: ms_of(get(2)?), time_updated: ms_of(get(3)?), data: data_of(get(4)?) },
            message: MessageOut { id: json_of(get(5)?), role: message_data.get("role").cloned().unwrap_or(Value::Null), time_created: ms_of(get(6)?) },
            session: &session,
        };
        serde_json::to_writer(&mut out, &line).map_err(|e| e.to_string())?;
        out.push(b'\n');
        if out.len() as u64 > DECODED_LOG_SIZE_BYTES_MAX {
            return Err(format!("export larger than {DECODED_LOG_SIZE_BYTES_MAX} bytes"));
        }
    }
    Ok(out)
}

impl Adapter for Zcode {
    fn source(&self) -> Source {
        Source::Zcode
    }

    fn logs_rewritten(&self) -> bool {
        true
    }

    fn discover(&self, homes: &Homes) -> (Vec<LogFile>, Vec<String>) {
        let db = homes.zcode.join(DB);
        match std::fs::metadata(&db) {
            Ok(m) if m.is_file() => {}
            // Not installed (or no database yet).
            Ok(_) => return (Vec::new(), Vec::new()),
            Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => return (Vec::new(), Vec::new()),
            // A folder on its way without permission: said, as a folder that cannot be listed is.
            Err(e) => return (Vec::new(), vec![format!("cannot read {}: {e}", db.display())]),
        }
        let mut ids = match session_ids(&db) {
            Ok(ids) => ids,
            Err(e) => return (Vec::new(), vec![format!("cannot list ZCode sessions in {}: {e}", db.display())]),
        };
        refresh_stamps(&db);
        let mut problems = Vec::new();
        if ids.len() > FILES_PER_SOURCE_MAX {
            ids.truncate(FILES_PER_SOURCE_MAX);
            problems.push(format!("more than {FILES_PER_SOURCE_MAX} sessions in {}: the rest were left out", db.display()));
        }
        let files = ids
            .into_iter()
            .map(|id| LogFile {
                source: Source::Zcode,
                key: format!("{}{KEY_SESSION}{id}", db.display()),
                mirror: format!("{DB}/sessions/{}.jsonl", mirror_name(&id)),
                path: db.clone(),
                format: FileFormat::Export,
            })
            .collect();
        (files, problems)
    }

    fn export_stamp(&self, file: &LogFile) -> Option<String> {
        // Taken at this run's discovery: a database written to during the run is not hashed
        // again for every session (a change after discovery is seen at the next run).
        let (_, id) = file.key.rsplit_once(KEY_SESSION)?;
        let held = STAMPS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        held.as_ref().filter(|s| s.db == file.path)?.sessions.get(id).cloned()
    }

    fn export(&self, file: &LogFile) -> io::Result<Vec<u8>> {
        let Some((_, id)) = file.key.rsplit_once(KEY_SESSION) else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{} names no ZCode session", file.key)));
        };
        export_session(&file.path, id).map_err(|e| io::Error::other(format!("{}: {e}", file.key)))
    }

    fn export_row(&self, line: &[u8]) -> Option<String> {
        // The part's id, which every line of the export begins with (see `ExportLine`).
        let rest = line.strip_prefix(br#"{"part":{"id":"#)?;
        match <Value as serde::Deserialize>::deserialize(&mut serde_json::Deserializer::from_slice(rest)).ok()? {
            Value::String(s) if !s.is_empty() => Some(format!("s{s}")),
            Value::Number(n) => Some(format!("n{n}")),
            _ => None,
        }
    }

    fn parse_line(&self, _file: &LogFile, state: &mut State, line: &[u8], line_no: u64) -> Line {
        let v: Value = match serde_json::from_slice(line) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => return Line::Malformed("not a JSON object".into()),
            Err(e) => return Line::Malformed(format!("invalid JSON: {e}")),
        };
        let (part, message, session) = (&v["part"], &v["message"], &v["session"]);
        let id = match &part["id"] {
            Value::String(s) if !s.is_empty() => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => return Line::Malformed("part without id".into()),
        };
        let Some(session_id) = str_of(session, "id").map(str::to_owned) else { return Line::Malformed("no session id".into()) };
        let data = &part["data"];
        let Some(ty) = str_of(data, "type") else { return Line::Malformed("part data without type".into()) };
        let Some(time) = part["time_created"].as_i64().or_else(|| message["time_created"].as_i64()) else {
            return Line::Malformed("part without time".into());
        };
        // Milliseconds of a date jiff can show (years -9999 to 9999): a time in other units
        // (microseconds, say) would be shown as a made-up date and sort before every other.
        if jiff::Timestamp::from_millisecond(time).is_err() {
            return Line::Malformed(format!("time_created {time} is not a time in milliseconds"));
        }
        let role = match str_of(message, "role") {
            Some("user") => Role::User,
            Some("system") => Role::System,
            _ => Role::Assistant,
        };
        let cwd = str_of(session, "directory").filter(|d| !d.is_empty());
        let version = str_of(session, "version").filter(|d| !d.is_empty());

        let mut items: Vec<(String, Role, EventKind, String)> = Vec::new();
        // A tool's call and result, dated when it started and ended where the part says.
        let (mut started, mut ended) = (None, None);
        let mut prompt = None;
        let base = format!("zcode:{id}");
        match ty {
            "text" => {
                let text = str_of(data, "text").unwrap_or_default().to_owned();
                let hidden = data["synthetic"].as_bool() == Some(true) || str_of(data, "transcriptVisibility") == Some("hidden");
                if !hidden && role == Role::User && !text.trim().is_empty() {
                    prompt = Some(text.clone());
                }
                items.push((base, role, if hidden { EventKind::Meta } else { EventKind::Message }, text));
            }
            "reasoning" => items.push((base, Role::Assistant, EventKind::Meta, str_of(data, "text").unwrap_or_default().to_owned())),
            "tool" => {
                let name = str_of(data, "tool").unwrap_or("tool");
                let st = &data["state"];
                let input = match &st["input"] {
                    Value::Null => String::new(),
                    i => i.to_string(),
                };
                items.push((format!("{base}:use"), Role::Assistant, EventKind::ToolUse, format!("{name} {input}").trim_end().to_owned()));
                // The part is written when the tool ends: its call is dated when it started, its
                // result when it ended (`state.time`, milliseconds), when the part says.
                let at = |key: &str| st["time"][key].as_i64().filter(|t| jiff::Timestamp::from_millisecond(*t).is_ok());
                (started, ended) = (at("start"), at("end"));
                let text_of = |v: &Value| match v {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    other => other.to_string(),
                };
                let result = match str_of(st, "status") {
                    Some("completed") => Some(text_of(&st["output"])),
                    Some("error") => Some(text_of(&st["error"])),
                    // Pending or running: no result yet (the part is updated in place).
                    _ => None,
                };
                if let Some(r) = result {
                    items.push((format!("{base}:result"), Role::User, EventKind::ToolResult, r));
                }
            }
            "file" => {
                let name = str_of(data, "filename").or_else(|| str_of(data, "url").filter(|u| !u.starts_with("data:"))).unwrap_or("");
                let mime = str_of(data, "mime").unwrap_or("file");
                items.push((base, role, EventKind::Meta, format!("[{mime}] {name}").trim_end().to_owned()));
            }
            // step-start, step-finish, patch, snapshot, agent, subtask, ...: meta, as recorded.
            _ => items.push((base, role, EventKind::Meta, data.to_string())),
        }

        let mut out = Parsed::default();
        for (eid, role, kind, text) in items {
            let at = match kind {
                EventKind::ToolUse => started,
                EventKind::ToolResult => ended,
                _ => None,
            }
            .unwrap_or(time);
            let mut e = event(eid, at, &session_id, cwd, role, kind, text, line_no);
            e.agent_version = version.map(str::to_owned);
            out.events.push(e);
        }

        let project = cwd.and_then(project_of);
        let title = str_of(session, "title").map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned);
        let parent = match (str_of(session, "parent_id").filter(|p| !p.is_empty()), str_of(session, "task_type")) {
            (Some(p), Some("subagent_child") | None) => Some(p.to_owned()),
            _ => None,
        };
        let told = Value::from(vec![
            project.clone().map_or(Value::Null, Value::String),
            title.clone().map_or(Value::Null, Value::String),
            parent.clone().map_or(Value::Null, Value::String),
        ]);
        let first = match prompt {
            Some(p) if !state.contains_key("first_prompt") => {
                state.insert("first_prompt".into(), Value::Bool(true));
                Some(first_prompt(&p))
            }
            _ => None,
        };
        if first.is_some() || state.get("told") != Some(&told) {
            state.insert("told".into(), told);
            out.sessions.push(SessionChange { session: session_id, project, title, first_prompt: first, parent });
        }
        Line::Parsed(out)
    }

    fn memory_files(&self, _homes: &Homes, projects: &[Project], problems: &mut Vec<String>) -> Vec<MemoryFile> {
        // ZCode injects the project's AGENTS.md; its own memory feature's files are not known.
        let mut out = projects
            .iter()
            .filter_map(|p| Some(MemoryFile { source: Source::Zcode, path: p.dir.as_ref()?.join("AGENTS.md"), scope: MemoryScope::Project, project: p.name() }))
            .collect();
        super::keep_regular(&mut out, problems);
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::adapter::golden;
    use proptest::prelude::*;
    use serde_json::json;

    const WEATHER: &str = "sess_71c14891-29f3-4228-8d70-d7127a5c0cb9";
    const INVENTORY: &str = "sess_f0a06a70-0cf6-4b66-9fad-b37adba48692";
    const CHILD: &str = "sess_subagent_agent_27bbe84b";

    fn homes() -> Homes {
        Homes::under(&golden::fixture_home())
    }

    fn fixture(session: &str) -> LogFile {
        let (files, problems) = Zcode.discover(&homes());
        assert!(problems.is_empty(), "{problems:?}");
        files.into_iter().find(|f| f.key.ends_with(&format!("#session/{session}"))).expect("fixture session")
    }


    #[test]
    fn zcode_discovers_one_export_per_session() {
        let (files, problems) = Zcode.discover(&homes());
        assert!(problems.is_empty(), "{problems:?}");
        let db = homes().zcode.join("cli/db/db.sqlite");
        let got: Vec<(String, String)> = files.iter().map(|f| (f.key.clone(), f.mirror.clone())).collect();
        let want: Vec<(String, String)> = [WEATHER, INVENTORY, CHILD]
            .iter()
            .map(|id| (format!("{}#session/{id}", db.display()), format!("cli/db/db.sqlite/sessions/{id}.jsonl")))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(got, want);
        for f in &files {
            assert_eq!((f.source, &f.format, &f.path), (Source::Zcode, &FileFormat::Export, &db));
        }
        let none = Homes::under(Path::new("/nonexistent/origin-test-home"));
        assert_eq!(Zcode.discover(&none), (Vec::new(), Vec::new()));
    }

    #[test]
    fn zcode_golden_weather_api() {
        golden::check("zcode-weather-api.json", &golden::run(&Zcode, &fixture(WEATHER)));
    }

    #[test]
    fn zcode_golden_inventory_sync() {
        golden::check("zcode-inventory-sync.json", &golden::run(&Zcode, &fixture(INVENTORY)));
    }

    #[test]
    fn zcode_golden_subagent() {
        golden::check("zcode-subagent.json", &golden::run(&Zcode, &fixture(CHILD)));
    }

    #[test]
    fn zcode_golden_export_lines() {
        // The exported bytes themselves are a claim: what Origin keeps, mirrors and cites.
        let bytes = Zcode.export(&fixture(CHILD)).expect("export");
        let text = String::from_utf8(bytes).expect("utf-8");
        assert!(text.ends_with('\n'));
        let lines: Vec<&str> = text.lines().collect();
        golden::check("zcode-subagent-export.json", &json!(lines));
    }

    #[test]
    fn zcode_export_is_deterministic_and_ordered() {
        for id in [WEATHER, INVENTORY, CHILD] {
            let file = fixture(id);
            let a = Zcode.export(&file).expect("export");
            let b = Zcode.export(&file).expect("export");
            assert_eq!(a, b);
            let rows: Vec<Value> = a.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).expect("json line")).collect();
            assert!(!rows.is_empty());
            let keys: Vec<(i64, String, i64, String)> = rows
                .iter()
                .map(|r| {
                    let s = |v: &Value| v.as_str().expect("id").to_owned();
                    (r["message"]["time_created"].as_i64().expect("t"), s(&r["message"]["id"]), r["part"]["time_created"].as_i64().expect("t"), s(&r["part"]["id"]))
                })
                .collect();
            let mut sorted = keys.clone();
            sorted.sort();
            assert_eq!(keys, sorted);
            assert!(rows.iter().all(|r| r["session"]["id"] == id));
        }
    }

    #[test]
    fn zcode_weather_api_maps_parts_as_the_format_notes_say() {
        let run = golden::run(&Zcode, &fixture(WEATHER));
        let events = run["events"].as_array().expect("events");
        assert_eq!(run["malformed"], json!([]));
        // The hidden synthetic reminder is meta and not the first prompt.
        let first = &events[0];
        assert_eq!((first["role"].as_str(), first["kind"].as_str()), (Some("User"), Some("Meta")));
        assert!(first["text"].as_str().is_some_and(|t| t.starts_with("<system-reminder>")));
        let sessions = run["sessions"].as_array().expect("sessions");
        assert_eq!(sessions.len(), 2);
        assert_eq!(sessions[0]["title"], "Cache forecast responses for ten minutes");
        assert_eq!(sessions[0]["parent"], Value::Null);
        assert_eq!(
            sessions[1]["first_prompt"],
            "Add a 10-minute cache in front of the upstream forecast call. Check first whether anything already caches."
        );
        // Every tool part gives a use and a result with matching ids.
        let uses: Vec<&str> = events.iter().filter(|e| e["kind"] == "ToolUse").filter_map(|e| e["id"].as_str()).collect();
        let results: Vec<&str> = events.iter().filter(|e| e["kind"] == "ToolResult").filter_map(|e| e["id"].as_str()).collect();
        assert_eq!(uses.len(), 4);
        assert_eq!(uses.iter().map(|u| u.replace(":use", ":result")).collect::<Vec<_>>(), results);
        assert!(events.iter().filter(|e| e["kind"] == "ToolUse").all(|e| e["role"] == "Assistant"));
        assert!(events.iter().filter(|e| e["kind"] == "ToolResult").all(|e| e["role"] == "User"));
        for e in events {
            assert_eq!(e["session"], WEATHER);
            assert_eq!(e["project"], "weather-api");
            assert_eq!(e["agent_version"], "3.12.0");
            assert_eq!(e["git_branch"], Value::Null);
        }
        // Times are the parts' own.
        let times: Vec<i64> = events.iter().filter_map(|e| e["time_unix_ms"].as_i64()).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
        assert!(times[0] >= 1_793_865_730_000);
    }

    #[test]
    fn zcode_inventory_sync_keeps_long_output_errors_and_running_tools() {
        let run = golden::run(&Zcode, &fixture(INVENTORY));
        let events = run["events"].as_array().expect("events");
        let results: Vec<&Value> = events.iter().filter(|e| e["kind"] == "ToolResult").collect();
        assert_eq!(results.len(), 2);
        let long = results[0]["text"].as_str().expect("text");
        assert!(long.chars().count() > 25_000 && results[0]["text_cut_chars"] == 0);
        assert_eq!(results[1]["text"], "Error: File does not exist. Current working directory: /home/dev/src/inventory_sync");
        // The last Bash is still running: a use, no result.
        let last = events.last().expect("events");
        assert_eq!(last["kind"], "ToolUse");
        assert!(last["id"].as_str().is_some_and(|i| i.ends_with(":use")));
        assert_eq!(run["sessions"][0]["title"], "排查库存重复入库");
        assert_eq!(run["sessions"][0]["first_prompt"], "库存同步上周开始偶尔重复入库，帮我看看最近谁改过 sync 模块？");
        assert!(events.iter().all(|e| e["project"] == "inventory_sync"));
        assert!(events.iter().any(|e| e["kind"] == "Meta" && e["text"] == "先看 git 历史，找出改动 sync 的提交。"));
    }

    #[test]
    fn zcode_subagent_names_its_parent() {
        let run = golden::run(&Zcode, &fixture(CHILD));
        // One change says it all: the first line is the prompt.
        assert_eq!(
            run["sessions"],
            json!([{"session": CHILD, "project": "weather-api", "title": "Find existing caches",
                    "first_prompt": "List every place in src/ that caches upstream responses (Map, lru, ttl).", "parent": WEATHER}])
        );
    }

    #[test]
    fn zcode_times_that_are_no_date_in_milliseconds_are_malformed() {
        let file = fixture(WEATHER);
        let mut state = State::new();
        let line = |t: i64| {
            json!({"part": {"id": "p1", "time_created": t, "data": {"type": "text", "text": "hi"}}, "message": {"role": "user"}, "session": {"id": "s"}})
                .to_string()
        };
        let ok = Zcode.parse_line(&file, &mut state, line(1_760_000_000_000).as_bytes(), 1);
        assert!(matches!(&ok, Line::Parsed(p) if p.events.len() == 1 && p.events[0].time_unix_ms == 1_760_000_000_000), "{ok:?}");
        for micros in [1_760_000_000_000_000, i64::MIN] {
            match Zcode.parse_line(&file, &mut state, line(micros).as_bytes(), 2) {
                Line::Malformed(why) => assert!(why.contains("not a time in milliseconds"), "{why}"),
                other => panic!("{micros}: {other:?}"),
            }
        }
    }

    #[test]
    fn zcode_sqlite_trouble_is_reported_not_panicked() {
        let home = tempfile::tempdir().expect("tempdir");
        let homes = Homes::under(home.path());
        let db = homes.zcode.join(DB);
        std::fs::create_dir_all(db.parent().expect("parent")).expect("mkdir");
        std::fs::write(&db, b"this is not an SQLite database, just bytes long enough to have a header.....").expect("write");
        let (files, problems) = Zcode.discover(&homes);
        assert!(files.is_empty());
        assert_eq!(problems.len(), 1, "{problems:?}");
        let file = LogFile { source: Source::Zcode, path: db.clone(), key: format!("{}#session/x", db.display()), mirror: String::new(), format: FileFormat::Export };
        assert!(Zcode.export(&file).is_err());
        // A database without the tables.
        std::fs::remove_file(&db).expect("rm");
        Connection::open(&db).and_then(|c| c.execute_batch("CREATE TABLE other (x);")).expect("db");
        let (files, problems) = Zcode.discover(&homes);
        assert!(files.is_empty() && problems.len() == 1, "{problems:?}");
        assert!(Zcode.export(&file).is_err());
        // A session that is not there, a key without a session.
        let gone = LogFile { key: format!("{}#session/nope", fixture(WEATHER).path.display()), ..fixture(WEATHER) };
        assert!(Zcode.export(&gone).is_err());
        let bare = LogFile { key: "db.sqlite".into(), ..fixture(WEATHER) };
        assert!(Zcode.export(&bare).is_err());
    }

    #[test]
    fn zcode_export_tolerates_missing_optional_columns_and_odd_paths() {
        let home = tempfile::tempdir().expect("tempdir");
        let db = home.path().join("odd ?#% dir/db.sqlite");
        std::fs::create_dir_all(db.parent().expect("parent")).expect("mkdir");
        let conn = Connection::open(&db).expect("db");
        conn.execute_batch(
            "CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT, title TEXT);
             CREATE TABLE message (id TEXT, session_id TEXT, time_created INTEGER, data TEXT);
             CREATE TABLE part (id TEXT, message_id TEXT, session_id TEXT, time_created INTEGER, data TEXT);
             INSERT INTO session VALUES ('s', '/w/p', 't');
             INSERT INTO message VALUES ('m', 's', 5, '{\"role\":\"user\"}');
             INSERT INTO part VALUES ('p', 'm', 's', NULL, '{\"type\":\"text\",\"text\":\"hi\"}');
             INSERT INTO part VALUES ('q', 'm', 's', 7, 'not json');",
        )
        .expect("schema");
        drop(conn);
        let file = LogFile { source: Source::Zcode, path: db.clone(), key: format!("{}#session/s", db.display()), mirror: String::new(), format: FileFormat::Export };
        let run = golden::run(&Zcode, &file);
        assert_eq!(run["events"][0]["time_unix_ms"], 5, "message time when the part has none: {run}");
        assert_eq!(run["events"][0]["kind"], "Message");
        assert_eq!(run["malformed"], json!([{"line": 2, "reason": "part data without type"}]));
        assert_eq!(run["sessions"], json!([{"session": "s", "project": "p", "title": "t", "first_prompt": "hi", "parent": null}]));
    }

    /// ZCode runs on Node: a string cut inside a surrogate pair is stored with a lone
    /// surrogate's escape, which `serde_json` refuses. The part and the message are read with
    /// U+FFFD in its place (the tool call and its result were lost; the prompt, its role lost,
    /// was the assistant's).
    #[test]
    fn zcode_a_lone_surrogate_in_a_column_is_read_as_the_replacement_character() {
        let home = tempfile::tempdir().expect("tempdir");
        let db = home.path().join("db.sqlite");
        let conn = Connection::open(&db).expect("db");
        conn.execute_batch(
            r#"CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT, title TEXT);
             CREATE TABLE message (id TEXT, session_id TEXT, time_created INTEGER, data TEXT);
             CREATE TABLE part (id TEXT, message_id TEXT, session_id TEXT, time_created INTEGER, data TEXT);
             INSERT INTO session VALUES ('s', '/w/p', 't');
             INSERT INTO message VALUES ('m', 's', 5, '{"role":"user","summary":{"diffs":[{"after":"cut \ud83d"}]}}');
             INSERT INTO part VALUES ('p', 'm', 's', 6, '{"type":"text","text":"why does the chart \ud83d"}');
             INSERT INTO message VALUES ('n', 's', 7, '{"role":"assistant"}');
             INSERT INTO part VALUES ('q', 'n', 's', 8, '{"type":"tool","tool":"bash","callID":"c","state":{"status":"completed","input":{"command":"ls"},"output":"a \ude00 b"}}');"#,
        )
        .expect("schema");
        drop(conn);
        let file = LogFile { source: Source::Zcode, path: db.clone(), key: format!("{}#session/s", db.display()), mirror: String::new(), format: FileFormat::Export };
        let run = golden::run(&Zcode, &file);
        assert_eq!(run["malformed"], json!([]), "{run}");
        let events = run["events"].as_array().expect("events");
        let shown: Vec<(&str, &str, &str)> = events.iter().map(|e| (e["role"].as_str().unwrap(), e["kind"].as_str().unwrap(), e["text"].as_str().unwrap())).collect();
        assert_eq!(shown[0], ("User", "Message", "why does the chart \u{fffd}"), "{run}");
        assert!(shown.iter().any(|(_, k, t)| *k == "ToolResult" && t.contains("a \u{fffd} b")), "{run}");
    }

    #[test]
    fn zcode_reads_the_wal_and_exports_grow_by_appending() {
        let home = tempfile::tempdir().expect("tempdir");
        let homes = Homes::under(home.path());
        let db = homes.zcode.join(DB);
        std::fs::create_dir_all(db.parent().expect("parent")).expect("mkdir");
        // ZCode keeps its connection open: rows may sit in the -wal file, not yet in the db.
        let writer = Connection::open(&db).expect("db");
        writer
            .execute_batch(
                "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;
                 CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT, title TEXT, parent_id TEXT, version TEXT, task_type TEXT);
                 CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER, time_updated INTEGER, data TEXT);
                 CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, time_created INTEGER, time_updated INTEGER, data TEXT);
                 INSERT INTO session VALUES ('sess_a', '/home/dev/p', 'T', NULL, '1.0', 'interactive');
                 INSERT INTO message VALUES ('msg_1', 'sess_a', 10, 10, '{\"role\":\"user\"}');
                 INSERT INTO part VALUES ('prt_1', 'msg_1', 'sess_a', 11, 11, '{\"type\":\"text\",\"text\":\"first\"}');",
            )
            .expect("schema");
        assert!(db.with_file_name("db.sqlite-wal").is_file());
        let (files, problems) = Zcode.discover(&homes);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(files.len(), 1);
        let before = Zcode.export(&files[0]).expect("export");
        assert_eq!(before.iter().filter(|&&b| b == b'\n').count(), 1);
        writer
            .execute_batch(
                "INSERT INTO message VALUES ('msg_2', 'sess_a', 20, 25, '{\"role\":\"assistant\"}');
                 INSERT INTO part VALUES ('prt_2', 'msg_2', 'sess_a', 21, 21, '{\"type\":\"text\",\"text\":\"second\"}');
                 UPDATE session SET title = 'T' WHERE id = 'sess_a';",
            )
            .expect("insert");
        let after = Zcode.export(&files[0]).expect("export");
        assert!(after.starts_with(&before) && after.len() > before.len());
        drop(writer);
    }

    /// The times an export line's events take are those `parse_line` gives them.
    #[test]
    fn zcode_export_times_are_the_times_of_the_lines_events() {
        let line = |part: serde_json::Value| {
            serde_json::json!({"part": part, "message": {"id": "m", "role": "assistant", "time_created": 5}, "session": {"id": "s"}}).to_string().into_bytes()
        };
        let tool = |status: &str, time: serde_json::Value| serde_json::json!({"id": "p", "time_created": 10, "data": {"type": "tool", "tool": "bash", "state": {"status": status, "input": {}, "output": "o", "time": time}}});
        let cases = [
            line(serde_json::json!({"id": "p", "time_created": 10, "data": {"type": "text", "text": "t"}})),
            line(serde_json::json!({"id": "p", "time_created": null, "data": {"type": "reasoning", "text": "t"}})),
            line(tool("running", serde_json::json!({"start": 11}))),
            line(tool("completed", serde_json::json!({"start": 11, "end": 12}))),
            line(tool("error", serde_json::json!({"start": 11}))),
            line(tool("completed", serde_json::json!({"start": 11, "end": 99_999_999_999_999_999i64}))),
        ];
        let file = LogFile { source: Source::Zcode, path: PathBuf::from("/x/db.sqlite"), key: "/x/db.sqlite#session/s".into(), mirror: String::new(), format: FileFormat::Export };
        for l in &cases {
            let Line::Parsed(p) = Zcode.parse_line(&file, &mut State::new(), l, 1) else { panic!("parsed") };
            let mut want: Vec<i64> = p.events.iter().map(|e| e.time_unix_ms).collect();
            let mut got = Zcode.export_times(&file, l);
            want.sort();
            got.sort();
            assert_eq!(got, want, "{}", String::from_utf8_lossy(l));
        }
    }

    /// Ids that differ only where a file name cannot hold them get mirrors of their own; a
    /// plain id is its own name.
    #[test]
    fn zcode_mirror_names_are_safe_and_distinct() {
        assert_eq!(mirror_name("ses_01JX.a-b"), "ses_01JX.a-b");
        let odd = ["a/b", "a_b", "a:b", "a b", ".a", "_.a", "", "_", "数据"];
        let names: HashSet<String> = odd.iter().map(|id| mirror_name(id)).collect();
        assert_eq!(names.len(), odd.len(), "{names:?}");
        for n in &names {
            assert!(!n.is_empty() && !n.starts_with('.') && n.chars().all(|c| c.is_ascii_alphanumeric() || "-_.+".contains(c)), "{n:?}");
        }
    }

    #[test]
    fn zcode_memory_files_are_project_agents_md() {
        let root = tempfile::tempdir().expect("tempdir");
        let a = root.path().join("a");
        let b = root.path().join("b");
        std::fs::create_dir_all(&a).expect("mkdir");
        std::fs::create_dir_all(&b).expect("mkdir");
        std::fs::write(a.join("AGENTS.md"), "- x\n").expect("write");
        let files = Zcode.memory_files(&homes(), &[Project::here(a.clone()), Project::here(b)], &mut Vec::new());
        assert_eq!(
            files,
            vec![MemoryFile { source: Source::Zcode, path: a.join("AGENTS.md"), scope: MemoryScope::Project, project: Some(a.to_string_lossy().into_owned()) }]
        );
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            prop::sample::select(vec!["user", "assistant", "text", "tool", "reasoning", "step-start", "file", "completed", "error", "hidden", "subagent_child"])
                .prop_map(|s| Value::String(s.to_owned())),
            ".{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(
                    (
                        prop::sample::select(vec![
                            "part", "message", "session", "id", "data", "type", "text", "role", "time_created", "tool", "state", "status", "input",
                            "output", "error", "synthetic", "transcriptVisibility", "directory", "title", "parent_id", "task_type", "version"
                        ]),
                        inner
                    ),
                    0..6
                )
                .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn zcode_parse_line_never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512), line_no in any::<u64>()) {
            let file = LogFile { source: Source::Zcode, path: std::path::PathBuf::from("/x/db.sqlite"), key: "/x/db.sqlite#session/s".into(), mirror: String::new(), format: FileFormat::Export };
            let _ = Zcode.parse_line(&file, &mut State::new(), &bytes, line_no);
        }

        #[test]
        fn zcode_parse_line_never_panics_on_odd_json(v in json_value(), line_no in any::<u64>()) {
            let file = LogFile { source: Source::Zcode, path: std::path::PathBuf::from("/x/db.sqlite"), key: "/x/db.sqlite#session/s".into(), mirror: String::new(), format: FileFormat::Export };
            let _ = Zcode.parse_line(&file, &mut State::new(), v.to_string().as_bytes(), line_no);
        }

        #[test]
        fn zcode_parse_line_never_panics_on_odd_fields(
            (id, time, ty, text, tool, status) in (json_value(), json_value(), json_value(), json_value(), json_value(), json_value()),
            (input, output, error, hidden, role, mtime) in (json_value(), json_value(), json_value(), json_value(), json_value(), json_value()),
            (sid, dir, title, parent, task, version) in (json_value(), json_value(), json_value(), json_value(), json_value(), json_value()),
            line_no in any::<u64>(),
        ) {
            let line = json!({
                "part": {"id": id, "time_created": time, "data": {"type": ty, "text": text, "tool": tool, "synthetic": hidden.clone(), "transcriptVisibility": hidden,
                         "state": {"status": status, "input": input, "output": output, "error": error}}},
                "message": {"role": role, "time_created": mtime},
                "session": {"id": sid, "directory": dir, "title": title, "parent_id": parent, "task_type": task, "version": version},
            });
            let file = LogFile { source: Source::Zcode, path: std::path::PathBuf::from("/x/db.sqlite"), key: "/x/db.sqlite#session/s".into(), mirror: String::new(), format: FileFormat::Export };
            let mut state = State::new();
            let _ = Zcode.parse_line(&file, &mut state, line.to_string().as_bytes(), line_no);
            let _ = Zcode.parse_line(&file, &mut state, line.to_string().as_bytes(), line_no);
        }
    }
}
