//! The Grok Build adapter's `parse_line` over arbitrary lines with one carried state.
//! Input: `[mode, lines...]` (see `origin_fuzz::run_adapter`). With mode bit 4 the state
//! starts with the session times `begin` reads from side files (`created_ms`, `updated_ms`,
//! turn times and turn lines), so the time spreading is exercised.
#![no_main]

use libfuzzer_sys::fuzz_target;
use origin_ingest::adapter::grok::Grok;
use origin_ingest::adapter::FileFormat;
use origin_ingest::source::Source;
use origin_fuzz::{log_file, run_adapter};
use serde_json::json;

fuzz_target!(|data: &[u8]| {
    let files = [log_file(
        Source::Grok,
        "/nonexistent-origin-fuzz/.grok/sessions/%2Fhome%2Fdev%2Fdemo-app/0199e1d2-5b3a-7c4d-8e9f-a0b1c2d3e4f5/chat_history.jsonl",
        FileFormat::Lines,
    )];
    let mode = data.first().copied().unwrap_or(0);
    run_adapter(&Grok, &files, data, |_, state, lines| {
        if mode & 0x10 != 0 {
            let n = lines as u64;
            state.insert("created_ms".into(), json!(1_760_000_000_000i64));
            state.insert("updated_ms".into(), json!(1_760_000_900_000i64));
            state.insert("turn_times".into(), json!({"0": [1_760_000_100_000i64, 1_760_000_200_000i64], "1": [1_760_000_300_000i64, 1_760_000_250_000i64]}));
            state.insert("turn_lines".into(), json!({"0": [2, n / 2], "1": [n / 2 + 1, n]}));
            state.insert("lines".into(), json!(n));
        }
    });
});
