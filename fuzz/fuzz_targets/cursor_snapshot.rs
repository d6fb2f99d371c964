//! Ingest's cursor snapshot reader: `snapshot::decode` on arbitrary bytes, and what it accepts
//! encodes to a snapshot it accepts again as the same cursors.
//! Input: `[mode, snapshot bytes…]`, as the state snapshot's target
//! ([`origin_fuzz::snapshot_input`]).
#![no_main]

use libfuzzer_sys::fuzz_target;
use origin_ingest::snapshot;

fuzz_target!(|data: &[u8]| {
    let Some((bytes, store, epoch)) = origin_fuzz::snapshot_input(data, origin_engine::record::kinds_read_fingerprint(origin_ingest::cursor::reads_kind)) else { return };
    if let Ok((cursors, last)) = snapshot::decode(&bytes, store, epoch) {
        let again = snapshot::encode(&cursors, store, epoch, last).expect("decoded cursors encode");
        let back = snapshot::decode(&again, store, epoch).expect("an encoded snapshot is accepted");
        assert_eq!(back, (cursors, last), "the cursors survive a round trip");
    }
});
