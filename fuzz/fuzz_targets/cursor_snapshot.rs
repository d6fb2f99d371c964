//! Ingest's cursor snapshot reader: `snapshot::decode` on arbitrary bytes, and what it accepts
//! encodes to a snapshot it accepts again as the same cursors.
//! Input: `[mode, snapshot bytes…]`, as the state snapshot's target: the store id and epoch
//! expected are the ones the header names, and mode bit 0 fixes up the body length and both
//! CRCs so the body decoder is reached.
#![no_main]

use libfuzzer_sys::fuzz_target;
use origin_ingest::snapshot;

const HEADER: usize = snapshot::CURSORS_HEADER_SIZE;

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
    if let Ok(cursors) = snapshot::decode(&bytes, store, epoch) {
        let again = snapshot::encode(&cursors, store, epoch).expect("decoded cursors encode");
        let back = snapshot::decode(&again, store, epoch).expect("an encoded snapshot is accepted");
        assert_eq!(back, cursors, "the cursors survive a round trip");
    }
});
