//! Golden tests of adapters: every line of a fixture file through `parse_line`, with state
//! carried, compared with a reviewed JSON file. `ORIGIN_UPDATE_GOLDEN=1` rewrites the JSON
//! (then read the diff: a golden file is a claim about the format, not a snapshot).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{Adapter, FileFormat, Line, LogFile, State};

/// The project's own fixture home (laid out like a user's home directory).
pub fn fixture_home() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/agent-home")
}

/// Runs every complete line of `file` through `adapter` as ingest would (a final line without
/// a newline is left pending) and returns events, sessions, malformed lines and final state.
pub fn run(adapter: &dyn Adapter, file: &LogFile) -> Value {
    let bytes = match file.format {
        FileFormat::Lines => std::fs::read(&file.path).expect("read fixture"),
        FileFormat::ZstdLines => zstd::decode_all(std::fs::File::open(&file.path).expect("open fixture")).expect("zstd fixture"),
        FileFormat::Export => adapter.export(file).expect("export fixture"),
    };
    let mut state = State::new();
    adapter.begin(file, &mut state);
    let mut events = Vec::new();
    let mut sessions = Vec::new();
    let mut malformed = Vec::new();
    let mut line_no = 0u64;
    let mut rest: &[u8] = &bytes;
    while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
        line_no += 1;
        let line = &rest[..nl];
        rest = &rest[nl + 1..];
        match adapter.parse_line(file, &mut state, line, line_no) {
            Line::Parsed(p) => {
                events.extend(p.events.into_iter().map(|e| serde_json::to_value(e).expect("event json")));
                sessions.extend(p.sessions.into_iter().map(|s| serde_json::to_value(s).expect("session json")));
            }
            Line::Malformed(reason) => malformed.push(json!({ "line": line_no, "reason": reason })),
        }
    }
    json!({
        "file": file.mirror,
        "lines": line_no,
        "pending_bytes": rest.len(),
        "events": events,
        "sessions": sessions,
        "malformed": malformed,
        "state": Value::Object(state),
    })
}

/// Compares `value` with the golden file `name` (under `ingest/tests/golden/`).
pub fn check(name: &str, value: &Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name);
    let text = serde_json::to_string_pretty(value).expect("json") + "\n";
    if std::env::var_os("ORIGIN_UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, &text).expect("write golden");
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("golden file {}: {e} (ORIGIN_UPDATE_GOLDEN=1 writes it)", path.display()));
    if want != text {
        let got_path = path.with_extension("got.json");
        let _ = std::fs::write(&got_path, &text);
        panic!("{} differs from the golden file; the new output is in {}", path.display(), got_path.display());
    }
}
