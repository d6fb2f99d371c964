//! The ZCode adapter's `parse_line` over arbitrary lines (export lines) with one carried
//! state. Input: `[mode, lines...]` (see `origin_fuzz::run_adapter`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use origin_ingest::adapter::zcode::Zcode;
use origin_ingest::adapter::FileFormat;
use origin_ingest::source::Source;
use origin_fuzz::{log_file, run_adapter};

fuzz_target!(|data: &[u8]| {
    let mut file = log_file(Source::Zcode, "/nonexistent-origin-fuzz/.zcode/cli/db/db.sqlite", FileFormat::Export);
    file.key = format!("{}#session/ses_fuzz", file.path.display());
    run_adapter(&Zcode, &[file], data, |_, _, _| {});
});
