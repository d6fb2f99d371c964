//! The one place payloads are encoded and decoded: bincode 2.0.1 with a fixed configuration,
//! behind a codec id stored in every segment header so compaction can migrate it.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::limits::RECORD_PAYLOAD_DECODED_SIZE_MAX;
use crate::record::{Body, RecordKind, RecordOrigin};

/// Codec id written in segment headers: bincode 2.0.1, standard configuration (little-endian,
/// variable-length integers), payload = `(Option<RecordOrigin>, body)`.
pub const CODEC_ID: u8 = 1;

fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_little_endian().with_variable_int_encoding().with_limit::<RECORD_PAYLOAD_DECODED_SIZE_MAX>()
}

fn to_bytes<T: Serialize>(v: &T) -> Result<Vec<u8>> {
    bincode::serde::encode_to_vec(v, config()).map_err(|e| Error::Invalid(format!("payload does not encode: {e}")))
}

fn from_bytes<T: DeserializeOwned>(bytes: &[u8], offset: u64) -> Result<T> {
    let (v, used) = bincode::serde::decode_from_slice(bytes, config())
        .map_err(|e| Error::Decode { offset, reason: e.to_string() })?;
    if used != bytes.len() {
        return Err(Error::Decode { offset, reason: format!("{} trailing bytes after the payload", bytes.len() - used) });
    }
    Ok(v)
}

/// Encodes a body (and the origin of a record received from another store) as a payload.
pub fn encode(origin: Option<&RecordOrigin>, body: &Body) -> Result<Vec<u8>> {
    match body {
        Body::Scratch(b) => Ok(b.clone()),
        Body::Ingested(v) => to_bytes(&(origin, v)),
        Body::Remembered(v) | Body::Corrected(v) => to_bytes(&(origin, v)),
        Body::Forgotten(v) => to_bytes(&(origin, v)),
        Body::Restored(v) => to_bytes(&(origin, v)),
        Body::Imported(v) => to_bytes(&(origin, v)),
        Body::TokenCreated(v) => to_bytes(&(origin, v)),
        Body::TokenRevoked(v) => to_bytes(&(origin, v)),
        Body::DeviceSeen(v) => to_bytes(&(origin, v)),
    }
}

/// Decodes a payload of the given kind and schema version.
pub fn decode(kind: u8, kind_version: u8, payload: &[u8], offset: u64) -> Result<(Option<RecordOrigin>, Body)> {
    let kind = RecordKind::from_u8(kind).ok_or_else(|| Error::Decode { offset, reason: format!("unknown record kind {kind}") })?;
    if kind_version != kind.current_version() {
        return Err(Error::Decode {
            offset,
            reason: format!("{} version {kind_version} is not one this build reads", kind.name()),
        });
    }
    fn with<T: DeserializeOwned>(p: &[u8], offset: u64, f: impl FnOnce(T) -> Body) -> Result<(Option<RecordOrigin>, Body)> {
        let (origin, v): (Option<RecordOrigin>, T) = from_bytes(p, offset)?;
        Ok((origin, f(v)))
    }
    match kind {
        RecordKind::Scratch => Ok((None, Body::Scratch(payload.to_vec()))),
        RecordKind::Ingested => with(payload, offset, Body::Ingested),
        RecordKind::Remembered => with(payload, offset, Body::Remembered),
        RecordKind::Corrected => with(payload, offset, Body::Corrected),
        RecordKind::Forgotten => with(payload, offset, Body::Forgotten),
        RecordKind::Restored => with(payload, offset, Body::Restored),
        RecordKind::Imported => with(payload, offset, Body::Imported),
        RecordKind::TokenCreated => with(payload, offset, Body::TokenCreated),
        RecordKind::TokenRevoked => with(payload, offset, Body::TokenRevoked),
        RecordKind::DeviceSeen => with(payload, offset, Body::DeviceSeen),
    }
}

/// Compresses a payload if that is worth it; returns the frame flags and stored bytes.
pub fn compress(payload: Vec<u8>) -> (u16, Vec<u8>) {
    use crate::frame::FLAG_ZSTD;
    use crate::limits::{COMPRESS_LEVEL, COMPRESS_SIZE_BYTES_MIN};
    if payload.len() < COMPRESS_SIZE_BYTES_MIN {
        return (0, payload);
    }
    match zstd::bulk::compress(&payload, COMPRESS_LEVEL) {
        // Keep compression only when it saves at least an eighth.
        Ok(c) if c.len() < payload.len() - payload.len() / 8 => (FLAG_ZSTD, c),
        _ => (0, payload),
    }
}

/// Decompresses a stored payload into `out`, refusing sizes over the limit before allocating.
pub fn decompress_into(stored: &[u8], out: &mut Vec<u8>, offset: u64) -> Result<()> {
    let size = zstd::zstd_safe::get_frame_content_size(stored)
        .map_err(|_| Error::Decode { offset, reason: "payload is not a zstd frame".into() })?
        .ok_or_else(|| Error::Decode { offset, reason: "zstd frame without a content size".into() })?;
    if size > RECORD_PAYLOAD_DECODED_SIZE_MAX as u64 {
        return Err(Error::Decode { offset, reason: format!("payload claims {size} bytes decompressed") });
    }
    out.clear();
    out.reserve(size as usize);
    let mut d = zstd::bulk::Decompressor::new().map_err(|e| Error::Decode { offset, reason: e.to_string() })?;
    let n = d.decompress_to_buffer(stored, out).map_err(|e| Error::Decode { offset, reason: e.to_string() })?;
    if n as u64 != size {
        return Err(Error::Decode { offset, reason: "zstd frame shorter than it claims".into() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::*;

    fn sample_bodies() -> Vec<Body> {
        let ev = Event {
            id: "claude-code:7d0c".into(),
            time_unix_ms: 1_760_000_000_123,
            session: "s1".into(),
            project: Some("demo-app".into()),
            role: Role::User,
            kind: EventKind::Message,
            text: "发布流程 リリース 🚀".into(),
            text_cut_chars: 0,
            cwd: Some("/home/dev/demo-app".into()),
            git_branch: None,
            agent_version: Some("2.1.281".into()),
            line: 3,
        };
        let ver = EntryVersion {
            id: "ent_3f9a1c2b7d4e".into(),
            root: "ent_3f9a1c2b7d4e".into(),
            supersedes: None,
            kind: EntryKind::Memory,
            text: "Releases are tagged from master.".into(),
            confidence: 0.9,
            project: None,
            author: "claude-code@laptop".into(),
            created_unix_ms: 5,
            valid_from_unix_ms: None,
            valid_to_unix_ms: Some(9),
            sources: vec![Citation { event_id: ev.id.clone(), quote: Some("tag".into()) }],
            imported: false,
        };
        vec![
            Body::Ingested(Ingested {
                source: "claude-code".into(),
                path: "/p".into(),
                mirror: "claude-code/p".into(),
                file_version: 1,
                byte_start: 0,
                byte_end: 10,
                line_start: 1,
                line_end: 2,
                prefix_hash: 7,
                raw_zstd: vec![1, 2, 3],
                events: vec![ev.clone()],
                sessions: vec![SessionChange {
                    session: "s1".into(),
                    project: None,
                    title: Some("t".into()),
                    first_prompt: None,
                    parent: None,
                }],
                malformed_lines: 1,
                cut_lines: 0,
                state: br#"{"cwd":"/home/dev/demo-app"}"#.to_vec(),
            }),
            Body::Remembered(ver.clone()),
            Body::Corrected(ver.clone()),
            Body::Forgotten(Forgotten {
                tombstone: "tmb_1".into(),
                target: ev.id.clone(),
                reason: "key".into(),
                author: "user@laptop".into(),
                time_unix_ms: 1,
                hidden_entries: vec![],
                hidden_events: vec![ev.id.clone()],
            }),
            Body::Restored(Restored { tombstone: "tmb_1".into(), author: "user@laptop".into(), time_unix_ms: 2 }),
            Body::Imported(Imported {
                source: "claude-code".into(),
                path: "/home/dev/CLAUDE.md".into(),
                scope: MemoryScope::User,
                event: ev,
                entries: vec![ver],
                keys: vec!["# Releases/0".into()],
                ended: vec!["ent_1".into()],
            }),
            Body::TokenCreated(TokenCreated { name: "laptop".into(), hash: [3; 32], time_unix_ms: 1 }),
            Body::TokenRevoked(TokenRevoked { name: "laptop".into(), time_unix_ms: 1 }),
            Body::DeviceSeen(DeviceSeen { name: "laptop".into(), store_id: [1; 16], epoch: 0, time_unix_ms: 1 }),
            Body::Scratch(vec![0, 1, 2]),
        ]
    }

    #[test]
    fn every_body_round_trips_with_and_without_origin() {
        let origin = RecordOrigin { store_id: [9; 16], epoch: 2, offset: 77 };
        for body in sample_bodies() {
            let kind = body.kind();
            for o in [None, Some(&origin)] {
                let bytes = encode(o, &body).expect("encodes");
                let (got_origin, got) = decode(kind as u8, kind.current_version(), &bytes, 0).expect("decodes");
                assert_eq!(got, body);
                if kind != RecordKind::Scratch {
                    assert_eq!(got_origin.as_ref(), o);
                }
            }
        }
    }

    #[test]
    fn decode_refuses_unknown_kind_version_and_garbage() {
        assert!(decode(200, 1, b"", 0).is_err());
        assert!(decode(RecordKind::Remembered as u8, 2, b"", 0).is_err());
        assert!(decode(RecordKind::Remembered as u8, 1, &[0xff; 40], 0).is_err());
    }

    #[test]
    fn compression_round_trips_and_refuses_oversized_claims() {
        let payload = "the same line again\n".repeat(1000).into_bytes();
        let (flags, stored) = compress(payload.clone());
        assert_eq!(flags, crate::frame::FLAG_ZSTD);
        let mut out = Vec::new();
        decompress_into(&stored, &mut out, 0).expect("decompresses");
        assert_eq!(out, payload);
        assert!(decompress_into(b"not zstd at all", &mut out, 0).is_err());
    }
}
