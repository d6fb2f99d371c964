//! The Claude Code adapter's `parse_line` over arbitrary lines with one carried state.
//! Input: `[mode, lines...]` (see `origin_fuzz::run_adapter` for the mode bits).
#![no_main]

use libfuzzer_sys::fuzz_target;
use origin_ingest::adapter::claude::Claude;
use origin_ingest::adapter::FileFormat;
use origin_ingest::source::Source;
use origin_fuzz::{log_file, run_adapter};

fuzz_target!(|data: &[u8]| {
    let files = [log_file(
        Source::ClaudeCode,
        "/nonexistent-origin-fuzz/.claude/projects/-home-dev-demo-app/7d0c2f4e-1b2a-4c3d-9e8f-0a1b2c3d4e5f.jsonl",
        FileFormat::Lines,
    )];
    run_adapter(&Claude, &files, data, |_, _, _| {});
});
