//! The state snapshot reader: `snapshot::reencode` (decode every byte as `State::open` does,
//! then encode the state again) on arbitrary bytes.
//! Input: `[mode, snapshot bytes…]` ([`origin_fuzz::snapshot_input`]): the store id and epoch
//! expected are the ones the header names, and mode bit 0 fixes up the body length and both
//! CRCs (a fuzzer practically never guesses a CRC32), so the body decoder is reached; without
//! it the checks in front are tested.
#![no_main]

use libfuzzer_sys::fuzz_target;
use origin_projections::state::snapshot;

fuzz_target!(|data: &[u8]| {
    let Some((bytes, store, epoch)) = origin_fuzz::snapshot_input(data, origin_engine::record::kinds_read_fingerprint(origin_projections::state::State::reads_kind)) else { return };
    if let Ok(again) = snapshot::reencode(&bytes, store, epoch) {
        // What was accepted writes a snapshot that is accepted and written the same again.
        let third = snapshot::reencode(&again, store, epoch).expect("a re-encoded snapshot is accepted");
        assert_eq!(third, again, "encoding is stable");
    }
});
