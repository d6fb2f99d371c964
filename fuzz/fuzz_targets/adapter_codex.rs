//! The Codex adapter's `parse_line` over arbitrary lines with one carried state.
//! Input: `[mode, lines...]` (see `origin_fuzz::run_adapter`); the mode's low bits choose a
//! rollout named with a thread id, a cold `.jsonl.zst` one, one whose name has no thread id,
//! or `session_index.jsonl`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use origin_ingest::adapter::codex::Codex;
use origin_ingest::adapter::FileFormat;
use origin_ingest::source::Source;
use origin_fuzz::{log_file, run_adapter};

fuzz_target!(|data: &[u8]| {
    let root = "/nonexistent-origin-fuzz/.codex";
    let files = [
        log_file(Source::Codex, &format!("{root}/sessions/2026/10/20/rollout-2026-10-20T16-03-11-019a0f3e-7c21-7d40-9b8e-2f61a4c0d5e1.jsonl"), FileFormat::Lines),
        log_file(Source::Codex, &format!("{root}/sessions/2026/10/02/rollout-2026-10-02T13-20-09-0199a6b1-3f2c-7e18-b4a5-6d0c91e8f273.jsonl.zst"), FileFormat::ZstdLines),
        log_file(Source::Codex, &format!("{root}/archived_sessions/rollout-broken.jsonl"), FileFormat::Lines),
        log_file(Source::Codex, &format!("{root}/session_index.jsonl"), FileFormat::Lines),
    ];
    run_adapter(&Codex, &files, data, |_, _, _| {});
});
