//! The Cursor adapter's `parse_line` over arbitrary lines with one carried state.
//! Input: `[mode, lines...]` (see `origin_fuzz::run_adapter`); the mode's low bits choose a
//! JSONL transcript, a sub-agent transcript, a flat JSONL transcript, or a legacy `.txt`
//! transcript (once with the line count `begin` would have recorded, once without).
#![no_main]

use libfuzzer_sys::fuzz_target;
use origin_ingest::adapter::cursor::Cursor;
use origin_ingest::adapter::FileFormat;
use origin_ingest::source::Source;
use origin_fuzz::{log_file, run_adapter};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let t = "/nonexistent-origin-fuzz/.cursor/projects/home-dev-demo-app/agent-transcripts";
    let id = "7c1e4b2a-3d5f-4e6a-9b8c-0d1e2f3a4b5c";
    let sub = "b4a3c2d1-6e5f-4a7b-8c9d-1e2f3a4b5c6d";
    let files = [
        log_file(Source::Cursor, &format!("{t}/{id}/{id}.jsonl"), FileFormat::Lines),
        log_file(Source::Cursor, &format!("{t}/{id}/subagents/{sub}.jsonl"), FileFormat::Lines),
        log_file(Source::Cursor, &format!("{t}/{id}.jsonl"), FileFormat::Lines),
        log_file(Source::Cursor, &format!("{t}/{id}.txt"), FileFormat::Lines),
        log_file(Source::Cursor, &format!("{t}/{sub}.txt"), FileFormat::Lines),
    ];
    let mode = data.first().copied().unwrap_or(0);
    run_adapter(&Cursor, &files, data, |file, state, lines| {
        // `begin` counts a legacy file's complete lines; the files here do not exist, so say
        // what it would have counted (for one of the two legacy files).
        if file.path.ends_with(format!("{id}.txt")) && mode & 0x10 != 0 {
            state.insert("lines_at_begin".into(), Value::from(lines as u64));
        }
    });
});
