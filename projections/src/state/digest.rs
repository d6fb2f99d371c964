//! A deterministic hash of the whole state, derived structures included, so a test can tell
//! an incrementally built state from a full rebuild (FNV-1a, 64 bits: stable across builds).

use crate::state::snapshot::encode_body;
use crate::state::State;

struct Fnv(u64);

impl Fnv {
    fn bytes(&mut self, b: &[u8]) {
        for x in b {
            self.0 ^= u64::from(*x);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.bytes(s.as_bytes());
    }
}

pub(crate) fn digest(s: &State) -> u64 {
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    h.u64(s.read_to);
    // What a snapshot holds: every version, end, tombstone, event locator and session.
    h.bytes(&encode_body(s));
    // What is derived from it, as each structure holds it now.
    for (id, root) in &s.entries.roots {
        h.str(id);
        h.str(&root.current);
        h.u64(root.versions.len() as u64);
        root.versions.iter().for_each(|v| h.str(v));
        h.u64(root.losers.len() as u64);
        root.losers.iter().for_each(|v| h.str(v));
    }
    for (ev, set) in &s.entries.cited_by {
        h.str(ev);
        h.u64(set.len() as u64);
        set.iter().for_each(|v| h.str(v));
    }
    for map in [&s.tombstones.hidden_by, &s.tombstones.hides, &s.tombstones.by_target] {
        h.u64(map.len() as u64);
        for (id, set) in map {
            h.str(id);
            h.u64(set.len() as u64);
            set.iter().for_each(|t| h.str(t));
        }
    }
    for st in &s.sessions.slots {
        h.str(s.events.source_name(st.source));
        h.str(&st.session);
        h.u64(st.visible_count);
        h.u64(st.events.len() as u64);
        for n in st.events.iter() {
            let (time, offset, index) = s.events.order_key(n);
            h.u64(time as u64);
            h.u64(offset);
            h.u64(u64::from(index));
            h.str(s.events.id(n));
        }
    }
    h.0
}
