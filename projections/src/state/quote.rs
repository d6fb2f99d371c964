//! Finding the event a quote-only source cites: the most recent visible message containing
//! the quote, else the most recent tool result; never a tool call (the agent's own `remember`
//! call contains the quote). Events their agent abandoned (a turn rewound) only when no other
//! does.

use std::collections::VecDeque;

use origin_engine::record::{Body, EventKind};
use origin_engine::Journal;

use crate::state::error::{Error, Result};
use crate::state::event::{body_at, event_in, EventMeta};
use crate::state::limits::QUOTE_RECORDS_CACHED_MAX;
use crate::state::State;

/// The form quotes are compared in: every whitespace character removed, lower-cased. So a
/// quote matches whatever the line breaks, indentation and case of the text.
pub fn fold(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).flat_map(char::to_lowercase).collect()
}

/// True if `quote` occurs in `text`, ignoring whitespace and case. An empty (or all
/// whitespace) quote matches nothing.
pub fn quote_matches(text: &str, quote: &str) -> bool {
    let q = fold(quote);
    !q.is_empty() && fold(text).contains(&q)
}

pub(crate) fn find(state: &State, journal: &Journal, quote: &str) -> Result<Option<EventMeta>> {
    let q = fold(quote);
    if q.is_empty() {
        return Ok(None);
    }
    let ev = &state.events;
    let citable = |n: u32| matches!(ev.rec(n).kind, EventKind::Message | EventKind::ToolResult);
    let found = most_recent(state, journal, &q, (0..ev.len() as u32).filter(|&n| citable(n) && state.counted(ev.id(n))).collect())?;
    if found.is_some() || state.superseded.is_empty() {
        return Ok(found);
    }
    // Else an event its agent abandoned (a turn rewound) that says it: it is not hidden, and
    // found by id; a quote is refused as said by no event only when none says it.
    let abandoned = state
        .superseded
        .iter()
        .filter_map(|id| ev.find(id))
        .filter(|&n| citable(n) && state.tombstones.hidden_by(ev.id(n)).is_none())
        .collect();
    most_recent(state, journal, &q, abandoned)
}

/// Of the events `numbers`, the most recent message whose text holds the folded quote `q`,
/// else the most recent tool result that does.
fn most_recent(state: &State, journal: &Journal, q: &str, mut numbers: Vec<u32>) -> Result<Option<EventMeta>> {
    let ev = &state.events;
    numbers.sort_by_key(|&n| std::cmp::Reverse(ev.order_key(n)));
    let candidates: Vec<EventMeta> = numbers.into_iter().map(|n| state.event_meta_of(n)).collect();
    let candidates: Vec<&EventMeta> = candidates.iter().collect();
    let mut cache: VecDeque<(u64, Body)> = VecDeque::new();
    let mut result: Option<&EventMeta> = None;
    for m in candidates {
        if m.kind == EventKind::ToolResult && result.is_some() {
            // A more recent tool result already matched; only a message can do better.
            continue;
        }
        let at = match cache.iter().position(|(o, _)| *o == m.offset) {
            Some(i) => i,
            None => {
                let body = body_at(journal, m.offset)?.ok_or_else(|| Error::Inconsistent {
                    id: m.id.clone(),
                    offset: m.offset,
                    index: m.index,
                    reason: "the journal has no record at that offset".into(),
                })?;
                if cache.len() >= QUOTE_RECORDS_CACHED_MAX {
                    cache.pop_front();
                }
                cache.push_back((m.offset, body));
                cache.len() - 1
            }
        };
        let ev = event_in(&cache[at].1, m)?;
        if fold(&ev.text).contains(q) {
            if m.kind == EventKind::Message {
                return Ok(Some(m.clone()));
            }
            result = Some(m);
        }
    }
    Ok(result.cloned())
}
