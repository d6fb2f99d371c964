//! The payload codec: `decode` for every kind byte and version, `decompress_into`.
//!
//! Input: `[kind, kind_version, payload...]`. The payload is decoded as the given kind and
//! version, and again as the known kind `kind % 10` at its current version (so every run
//! reaches a real decoder), and offered to `decompress_into`.
//!
//! Checks: never panics; a decoded payload re-encodes to a canonical form (the kind's current
//! version) that decodes and re-encodes to itself; scratch payloads come back byte for byte.
#![no_main]

use libfuzzer_sys::fuzz_target;
use origin_engine::codec::{decode, decompress_into, encode};
use origin_engine::record::{Body, RecordKind};

fn check(kind: u8, version: u8, payload: &[u8]) {
    let Ok((origin, body)) = decode(kind, version, payload, 7) else { return };
    if let Body::Scratch(b) = &body {
        assert_eq!(b, payload);
        return;
    }
    let canonical = encode(origin.as_ref(), &body).expect("a decoded body encodes");
    // `encode` writes the kind's current version (a record of an older one, decoded, is
    // written as today's): the canonical form is read at that version.
    let current = RecordKind::from_u8(kind).map_or(version, RecordKind::current_version);
    let (origin2, body2) = decode(kind, current, &canonical, 7).expect("a re-encoded body decodes");
    assert_eq!(origin, origin2);
    assert_eq!(body.kind(), body2.kind());
    let again = encode(origin2.as_ref(), &body2).expect("encodes");
    assert_eq!(canonical, again, "re-encoding is not stable");
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let (kind, version, payload) = (data[0], data[1], &data[2..]);
    check(kind, version, payload);
    let known = RecordKind::ALL[kind as usize % RecordKind::ALL.len()];
    check(known as u8, known.current_version(), payload);
    let mut out = Vec::new();
    if decompress_into(payload, &mut out, 7).is_ok() {
        assert!(out.len() <= origin_engine::limits::RECORD_PAYLOAD_DECODED_SIZE_MAX);
    }
});
