//! The state snapshot reader: `snapshot::reencode` (decode every byte as `State::open` does,
//! then encode the state again) on arbitrary bytes.
//! Input: `[mode, snapshot bytes…]`. The store id and epoch expected are the ones the header
//! names (bytes 16..40), so inputs are not all refused as another store's. Mode bit 0 fixes up
//! the body length, the body CRC and the header CRC (a fuzzer practically never guesses a
//! CRC32), so the body decoder is reached; without it the checks in front are tested.
#![no_main]

use libfuzzer_sys::fuzz_target;
use origin_projections::state::snapshot;

const HEADER: usize = 64;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let mut bytes = rest.to_vec();
    if bytes.len() >= HEADER && mode & 1 != 0 {
        let body_len = (bytes.len() - HEADER) as u64;
        bytes[48..56].copy_from_slice(&body_len.to_le_bytes());
        let body_crc = crc32fast::hash(&bytes[HEADER..]);
        bytes[56..60].copy_from_slice(&body_crc.to_le_bytes());
        let header_crc = crc32fast::hash(&bytes[..60]);
        bytes[60..64].copy_from_slice(&header_crc.to_le_bytes());
    }
    let (store, epoch) = if bytes.len() >= HEADER {
        let mut s = [0u8; 16];
        s.copy_from_slice(&bytes[16..32]);
        (s, u64::from_le_bytes(bytes[32..40].try_into().expect("8 bytes")))
    } else {
        ([0u8; 16], 0)
    };
    if let Ok(again) = snapshot::reencode(&bytes, store, epoch) {
        // What was accepted writes a snapshot that is accepted and written the same again.
        let third = snapshot::reencode(&again, store, epoch).expect("a re-encoded snapshot is accepted");
        assert_eq!(third, again, "encoding is stable");
    }
});
