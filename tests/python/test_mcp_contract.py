"""Contract test of `origin mcp` against the official MCP Python SDK.

The contract is the MCP tools reference (shared/spec/origin-mcp-tools.txt): seven tools, their
parameters, defaults and ranges, the fields of entries, events, sessions, sources and forgets,
the times (ISO 8601, milliseconds, the server's offset: +08:00 under TZ=Asia/Shanghai), the
cut lengths of texts with the number of characters cut noted, and the error texts. Every
error, malformed arguments included, must come back as a tool error (isError), never as a
protocol error.

Run: `python3 -m pytest -q tests/python` (ORIGIN_BIN may name the binary; see conftest.py).
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal

import pytest

import mcp.types as types
from mcp import ClientSession, MCPError

from conftest import CLIENT_NAME, DEVICE, PROBE_BIG_MESSAGES, PROBE_BIG_TITLE, PROBE_PROJECT, PROBE_SMALL_SESSIONS, Store

pytestmark = pytest.mark.anyio

AUTHOR = f"{CLIENT_NAME}@{DEVICE}"
TOOLS = ["correct", "forget", "get", "remember", "search", "sources", "timeline"]
SOURCES = {"claude-code", "codex", "cursor", "zcode", "grok"}
ENTRY_KINDS = {"memory", "knowledge", "cognition"}
EVENT_KINDS = {"message", "tool_use", "tool_result", "meta", "system", "memory"}
ROLES = {"user", "assistant", "system"}
SHANGHAI = timezone(timedelta(hours=8))

ENTRY_FIELDS = {
    "id", "kind", "text", "confidence", "status", "concurrent", "project", "author", "created",
    "valid_from", "valid_to", "supersedes", "superseded_by", "root", "imported",
}
EVENT_FIELDS = {"id", "time", "source", "project", "session", "role", "kind", "text"}
SESSION_FIELDS = {"session", "source", "project", "title", "prompt", "started", "ended", "events"}
PROVENANCE_FIELDS = {"event_id", "time", "quote", "original_file", "mirror_file", "line", "raw"}
HISTORY_FIELDS = {"id", "supersedes", "author", "created", "status"}

TIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}\+08:00$")
ENTRY_ID_RE = re.compile(r"^ent_[0-9a-f]{12,32}$")
TOMBSTONE_RE = re.compile(r"^tmb_[0-9a-f]{12,32}$")
CUT_RE = re.compile(r"…\[(\d+) characters cut\]\Z")

SEARCH_CUT, TIMELINE_CUT, GET_CUT, ENTRY_SOURCE_CUT, RAW_CUT = 400, 1_000, 20_000, 500, 4_000

# Fixture texts used below (tests/fixtures/agent-home).
BIG_TOOL_RESULT_QUERY = "SKU-00011"  # a Read tool result of 30,554 characters in a Claude Code session
BIG_TOOL_RESULT_FILE = ".claude/projects/-home-dev-demo-app/4e1d7a2c-9b3f-4c6e-8d21-7f0a5b3c9e12.jsonl"
CHINESE = "库存"  # in a zcode (2026-11-05) and a grok (2026-11-04) message
CHINESE_QUOTE = "偶尔重复入库"  # in the same two messages; the zcode one is the more recent
JAPANESE = "締め処理"  # in a cursor session of 2026-10-22, 07:05 +08:00
TOOL_CALL_ONLY = "cargo clippy --all-targets -- -D warnings"  # only in a cursor tool call
TOOL_RESULT_ONLY = '"sku": "SKU-00011"'  # only in the big tool result
CODEX_PROMPT = "Find every place in src/server that loads all rows of a table into memory."


# ----------------------------------------------------------------------------- helpers


async def call(s: ClientSession, tool: str, args: Any) -> types.CallToolResult:
    """tools/call; a protocol error (JSON-RPC error) fails the test, as the spec forbids it."""
    try:
        return await s.call_tool(tool, args)
    except MCPError as e:
        pytest.fail(f"{tool} {_show(args)}: protocol error {e.error.code} {e.error.message!r}; the spec wants a tool result")


def _show(args: Any) -> str:
    text = json.dumps(args, ensure_ascii=False)
    return text if len(text) < 200 else text[:200] + f"…({len(text)} chars)"


def text_of(r: types.CallToolResult) -> str:
    return "".join(c.text for c in r.content if isinstance(c, types.TextContent))


def ok(r: types.CallToolResult) -> Any:
    """A successful result: one JSON text item."""
    assert r.is_error is not True, f"unexpected tool error: {text_of(r)}"
    assert len(r.content) == 1 and isinstance(r.content[0], types.TextContent), f"not one text item: {r.content}"
    return json.loads(r.content[0].text)


def err(r: types.CallToolResult) -> str:
    """A tool error: isError with a readable message in one text item."""
    assert r.is_error is True, f"expected a tool error (isError), got: {text_of(r)[:500]}"
    msg = text_of(r)
    assert msg.strip(), "a tool error without a message"
    return msg


async def get_ok(s: ClientSession, tool: str, args: dict[str, Any]) -> Any:
    return ok(await call(s, tool, args))


async def get_err(s: ClientSession, tool: str, args: dict[str, Any]) -> str:
    return err(await call(s, tool, args))


def parse_time(v: Any) -> datetime:
    assert isinstance(v, str) and TIME_RE.match(v), f"not ISO 8601 with milliseconds and +08:00: {v!r}"
    return datetime.fromisoformat(v)


def opt_time(v: Any) -> datetime | None:
    return None if v is None else parse_time(v)


def local(t: datetime) -> str:
    """How the server writes `t` under TZ=Asia/Shanghai."""
    t = t.astimezone(SHANGHAI)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}+08:00"


def uncut(text: str) -> tuple[str, int]:
    """(the text kept, the number of characters cut) of a text cut with its note."""
    m = CUT_RE.search(text)
    return (text[: m.start()], int(m.group(1))) if m else (text, 0)


def check_cut(text: Any, limit: int) -> tuple[str, int]:
    assert isinstance(text, str)
    kept, n = uncut(text)
    if n:
        assert len(kept) == limit, f"cut to {len(kept)} characters, not {limit}"
    else:
        assert len(text) <= limit, f"a text of {len(text)} characters was not cut to {limit}"
    return kept, n


def is_str_or_none(v: Any) -> bool:
    return v is None or isinstance(v, str)


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check_entry(e: dict[str, Any]) -> dict[str, Any]:
    missing = ENTRY_FIELDS - e.keys()
    assert not missing, f"entry without {sorted(missing)}: {e}"
    assert isinstance(e["id"], str) and ENTRY_ID_RE.match(e["id"]), e["id"]
    assert e["kind"] in ENTRY_KINDS, e["kind"]
    assert isinstance(e["text"], str) and e["text"]
    assert is_number(e["confidence"]) and 0 <= e["confidence"] <= 1, e["confidence"]
    assert e["status"] in ("active", "superseded"), e["status"]
    assert isinstance(e["concurrent"], bool)
    assert is_str_or_none(e["project"])
    assert isinstance(e["author"], str) and re.match(r"^[^@\s]+@[^@\s]+$", e["author"]), e["author"]
    parse_time(e["created"])
    opt_time(e["valid_from"])
    opt_time(e["valid_to"])
    for k in ("supersedes", "superseded_by"):
        assert e[k] is None or (isinstance(e[k], str) and ENTRY_ID_RE.match(e[k])), (k, e[k])
    assert isinstance(e["root"], str) and ENTRY_ID_RE.match(e["root"])
    assert isinstance(e["imported"], bool)
    if e["status"] == "active":
        assert e["superseded_by"] is None and e["concurrent"] is False, e
    else:
        assert isinstance(e["superseded_by"], str), e
    if e["supersedes"] is None:
        assert e["root"] == e["id"], "a first version is its own root"
    return e


def check_event(e: dict[str, Any], cut_at: int) -> tuple[str, int]:
    missing = EVENT_FIELDS - e.keys()
    assert not missing, f"event without {sorted(missing)}: {e}"
    assert isinstance(e["id"], str) and ":" in e["id"]
    src, rest = e["id"].split(":", 1)
    assert src in SOURCES and rest, e["id"]
    assert e["source"] == src, (e["source"], e["id"])
    parse_time(e["time"])
    assert is_str_or_none(e["project"])
    # A version of a memory file (kind memory) belongs to no session; every other event to one.
    if e["kind"] == "memory":
        assert e["session"] is None, e
    else:
        assert isinstance(e["session"], str) and e["session"], e
    assert e["role"] in ROLES, e["role"]
    assert e["kind"] in EVENT_KINDS, e["kind"]
    return check_cut(e["text"], cut_at)


def check_session(s: dict[str, Any]) -> dict[str, Any]:
    missing = SESSION_FIELDS - s.keys()
    assert not missing, f"session without {sorted(missing)}: {s}"
    assert isinstance(s["session"], str) and s["session"]
    assert s["source"] in SOURCES
    assert is_str_or_none(s["project"])
    assert is_str_or_none(s["title"]) and is_str_or_none(s["prompt"])
    if s["title"] is not None:
        assert s["prompt"] is None, f"a session with a title has no prompt: {s}"
    if s["prompt"] is not None:
        assert len(s["prompt"]) <= 80, f"prompt of {len(s['prompt'])} characters: {s['prompt']!r}"
    assert parse_time(s["started"]) <= parse_time(s["ended"]), s
    assert is_int(s["events"]) and s["events"] >= 0
    return s


def check_snippet(snippet: Any, words: list[str]) -> None:
    assert isinstance(snippet, str)
    assert "[" in snippet and "]" in snippet, f"no match in brackets: {snippet!r}"
    bare = snippet.replace("[", "").replace("]", "").strip("…")
    assert len(bare) <= 200, f"snippet of {len(bare)} characters: {snippet!r}"
    bracketed = " ".join(re.findall(r"\[([^\]]*)\]", snippet)).lower()
    assert any(w.lower() in bracketed or bracketed in w.lower() for w in words), (snippet, words)


async def find_event(s: ClientSession, query: str, **kw: Any) -> dict[str, Any]:
    found = await get_ok(s, "search", {"query": query, "scope": "events", **kw})
    assert found["events"], f"no event for {query!r}"
    return found["events"][0]


async def big_tool_result(s: ClientSession) -> dict[str, Any]:
    found = await get_ok(s, "search", {"query": BIG_TOOL_RESULT_QUERY, "include_tools": True, "scope": "events"})
    big = [e for e in found["events"] if e["kind"] == "tool_result" and uncut(e["text"])[1] > 0]
    assert big, f"the >25,000-character tool result was not found: {found}"
    return big[0]


# ----------------------------------------------------------------------------- the server


async def test_initialize_gives_server_info_and_the_instructions(store: Store) -> None:
    async with store.connect() as s:
        info = s.server_info
        assert info is not None and info.name == "origin"
        assert s.server_capabilities is not None and s.server_capabilities.tools is not None
        ins = s.instructions
        assert ins, "the server gives no MCP instructions"
        low = ins.lower()
        # The spec: search and read before answering about past work, citing entry and event
        # ids; remember decisions with reasons, facts and preferences citing events; imported
        # entries mirror memory files; correct what is wrong; forget only when the user asks,
        # with their reason.
        for needle in ("search", "timeline", "get", "sources", "past work", "cite", "entry id", "event id",
                       "remember", "decision", "reason", "fact", "preference", "imported", "memory file",
                       "correct", "forget only when the user asks"):
            assert needle in low, f"the instructions do not say {needle!r}: {ins}"


async def test_tools_list_declares_the_seven_tools_with_the_spec_parameters(store: Store) -> None:
    async with store.connect() as s:
        listed = (await s.list_tools()).tools
    tools = {t.name: t.input_schema for t in listed}
    assert sorted(tools) == TOOLS
    props = {name: schema.get("properties", {}) for name, schema in tools.items()}
    assert set(props["search"]) == {"query", "scope", "kind", "since", "until", "source", "project", "include_tools", "limit"}
    assert set(props["timeline"]) == {"since", "until", "source", "project", "session", "include_tools", "limit"}
    assert set(props["get"]) == {"id"} and set(props["sources"]) == {"id"}
    assert set(props["remember"]) == {"kind", "text", "sources", "confidence", "project", "valid_from", "valid_to"}
    assert set(props["correct"]) == {"id", "text", "kind", "confidence", "sources", "valid_from", "valid_to"}
    assert set(props["forget"]) == {"id", "reason"}
    sl = props["search"]["limit"]
    assert (sl["type"], sl["minimum"], sl["maximum"], sl["default"]) == ("integer", 1, 100, 20)
    assert props["search"]["scope"]["enum"] == ["all", "entries", "events"] and props["search"]["scope"]["default"] == "all"
    assert set(props["search"]["kind"]["enum"]) == ENTRY_KINDS
    assert set(props["search"]["source"]["enum"]) == SOURCES
    assert props["search"]["include_tools"]["type"] == "boolean" and props["search"]["include_tools"]["default"] is False
    tl = props["timeline"]["limit"]
    assert (tl["type"], tl["minimum"], tl["maximum"], tl["default"]) == ("integer", 1, 500, 50)
    assert props["timeline"]["since"]["default"] == "7d"
    assert props["timeline"]["include_tools"]["default"] is False
    for name in ("remember", "correct"):
        c = props[name]["confidence"]
        assert (c["type"], c["minimum"], c["maximum"]) == ("number", 0, 1)
    r = props["forget"]["reason"]
    assert (r["type"], r["minLength"], r["maxLength"]) == ("string", 1, 2000)
    assert set(tools["remember"].get("required", [])) == {"text", "sources", "confidence"}
    assert set(tools["correct"].get("required", [])) == {"id", "text"}
    assert set(tools["forget"].get("required", [])) == {"id", "reason"}
    assert tools["get"].get("required") == ["id"] and tools["sources"].get("required") == ["id"]


# ----------------------------------------------------------------------------- search


async def test_search_without_query_lists_the_most_recent_entries_20_by_default(store: Store) -> None:
    async with store.connect() as s:
        default = await get_ok(s, "search", {})
        twenty = await get_ok(s, "search", {"limit": 20})
        hundred = await get_ok(s, "search", {"limit": 100})
        one = await get_ok(s, "search", {"limit": 1})
        cognition = await get_ok(s, "search", {"kind": "cognition", "limit": 100})
        only_events = await get_ok(s, "search", {"scope": "events"})
    assert set(default) == {"entries", "events"} and default["events"] == []
    assert len(hundred["entries"]) > 20, "the fixtures' imported entries number more than 20"
    assert len(default["entries"]) == 20, "search's limit defaults to 20"
    assert [e["id"] for e in default["entries"]] == [e["id"] for e in twenty["entries"]]
    assert [e["id"] for e in default["entries"]] == [e["id"] for e in hundred["entries"][:20]]
    assert len(one["entries"]) == 1
    created = [parse_time(check_entry(e)["created"]) for e in hundred["entries"]]
    assert created == sorted(created, reverse=True), "the most recent entries first"
    for e in hundred["entries"]:
        # Entries derived from the agents' memory files, ingested on the device "laptop".
        assert e["imported"] is True and e["status"] == "active"
        assert e["author"].endswith(f"@{DEVICE}") and e["author"].split("@")[0] in SOURCES, e["author"]
    assert cognition["entries"] and all(e["kind"] == "cognition" for e in cognition["entries"])
    assert only_events["entries"] == []


async def test_search_limit_is_20_by_default_and_1_to_100(store: Store) -> None:
    q = "contractprobe"  # in 116 messages of the probe sessions
    async with store.connect() as s:
        default = await get_ok(s, "search", {"query": q})
        one = await get_ok(s, "search", {"query": q, "limit": 1})
        hundred = await get_ok(s, "search", {"query": q, "limit": 100})
        low = await get_err(s, "search", {"query": q, "limit": 0})
        high = await get_err(s, "search", {"query": q, "limit": 101})
    assert len(default["events"]) == 20
    assert len(one["events"]) == 1
    assert len(hundred["events"]) == 100
    for e in hundred["events"]:
        check_event(e, SEARCH_CUT)
        assert q in e["text"]
    assert "`limit`" in low and "`limit`" in high


async def test_search_events_have_the_spec_fields_and_snippets(store: Store) -> None:
    async with store.connect() as s:
        found = await get_ok(s, "search", {"query": "redis health check", "include_tools": True, "limit": 100})
    assert found["events"]
    for e in found["events"]:
        check_event(e, SEARCH_CUT)
        assert "snippet" in e
        check_snippet(e["snippet"], ["redis", "health", "check"])


async def test_search_in_chinese(store: Store) -> None:
    async with store.connect() as s:
        found = await get_ok(s, "search", {"query": CHINESE, "limit": 5})
    events = found["events"]
    assert {e["source"] for e in events} >= {"zcode", "grok"}, events
    for e in events:
        check_event(e, SEARCH_CUT)
        assert CHINESE in e["text"]
        assert f"[{CHINESE}]" in e["snippet"], e["snippet"]
        assert e["project"] == "inventory_sync"
    times = [parse_time(e["time"]) for e in events]
    assert local(times[0]) == events[0]["time"]


async def test_search_in_japanese(store: Store) -> None:
    async with store.connect() as s:
        found = await get_ok(s, "search", {"query": JAPANESE})
    events = found["events"]
    assert len(events) >= 2 and all(e["source"] == "cursor" for e in events), events
    for e in events:
        check_event(e, SEARCH_CUT)
        assert JAPANESE in e["text"]
        assert f"[{JAPANESE}]" in e["snippet"], e["snippet"]
        # 2026-10-21T23:05:00Z in the fixture, in the server's zone.
        assert e["time"] == "2026-10-22T07:05:00.000+08:00"


async def test_search_every_word_must_occur_in_full_matches_and_partial_ones_come_after(store: Store) -> None:
    """The spec: "every word must occur". Issue 5 goes beyond it on purpose: when fewer than
    `limit` documents contain every word, the list is filled with partial matches, each
    marked "match": "partial" and listed after every full match ("match": "all")."""
    async with store.connect() as s:
        results = {
            (CHINESE, "zebra"): await get_ok(s, "search", {"query": f"{CHINESE} zebra"}),
            ("テスト",): await get_ok(s, "search", {"query": "テスト"}),
            ("cargo", "clippy"): await get_ok(s, "search", {"query": "cargo clippy", "include_tools": True}),
        }
        for words, found in results.items():
            for group in ("entries", "events"):
                marks = [item["match"] for item in found[group]]
                assert marks == sorted(marks), f"partial matches must follow full ones: {marks}"
                for item in found[group]:
                    full = item["text"]
                    if group == "events":
                        full = (await get_ok(s, "get", {"id": item["id"]}))["text"]
                    has_all = all(w.lower() in full.lower() for w in words)
                    if item["match"] == "all":
                        assert has_all, f"a full match for {words} lacks a word: {item}"
                    else:
                        assert item["match"] == "partial", item
    assert all(e["match"] == "partial" for e in results[(CHINESE, "zebra")]["events"]), "no text holds zebra"


async def test_search_include_tools_is_false_by_default(store: Store) -> None:
    async with store.connect() as s:
        default = await get_ok(s, "search", {"query": BIG_TOOL_RESULT_QUERY})
        without = await get_ok(s, "search", {"query": BIG_TOOL_RESULT_QUERY, "include_tools": False})
        with_tools = await get_ok(s, "search", {"query": BIG_TOOL_RESULT_QUERY, "include_tools": True})
        calls = await get_ok(s, "search", {"query": "cargo clippy", "include_tools": True})
        no_calls = await get_ok(s, "search", {"query": "cargo clippy"})
    assert default["events"] == [] and without["events"] == []
    assert any(e["kind"] == "tool_result" for e in with_tools["events"])
    assert any(e["kind"] == "tool_use" for e in calls["events"])
    assert all(e["kind"] == "message" for e in no_calls["events"]), no_calls


async def test_search_text_is_cut_to_400_characters_with_the_cut_noted(store: Store) -> None:
    async with store.connect() as s:
        big = await big_tool_result(s)
    kept, n = check_event(big, SEARCH_CUT)
    assert len(kept) == 400 and n > 25_000 - 400, (len(kept), n)
    assert big["text"].endswith(f"…[{n} characters cut]")
    check_snippet(big["snippet"], ["sku", "00011"])


async def test_search_filters_scope_source_project_and_time(store: Store) -> None:
    async with store.connect() as s:
        entries_only = await get_ok(s, "search", {"query": "URLSearchParams", "scope": "entries"})
        events_only = await get_ok(s, "search", {"query": "URLSearchParams", "scope": "events", "include_tools": True})
        everything = await get_ok(s, "search", {"query": "URLSearchParams", "include_tools": True})
        grok = await get_ok(s, "search", {"query": CHINESE, "source": "grok"})
        project = await get_ok(s, "search", {"query": "cargo", "project": "inventory_sync", "include_tools": True})
        since = await get_ok(s, "search", {"query": JAPANESE, "since": "2026-10-22T07:00:00+08:00"})
        since_z = await get_ok(s, "search", {"query": JAPANESE, "since": "2026-10-21T23:00:00Z"})
        after = await get_ok(s, "search", {"query": JAPANESE, "since": "2026-10-22T07:10:00+08:00"})
        until = await get_ok(s, "search", {"query": CHINESE, "until": "2026-11-05"})
        week = await get_ok(s, "search", {"query": "ninedays", "since": "7d"})
        six = await get_ok(s, "search", {"query": "sixdays", "since": "7d"})
        week_any = await get_ok(s, "search", {"query": "contractprobe", "since": "7d", "limit": 100})
        no_since = await get_ok(s, "search", {"query": "ninedays"})
        two_weeks = await get_ok(s, "search", {"query": "ninedays", "since": "2w"})
        day = await get_ok(s, "search", {"query": "wombat", "since": "24h", "limit": 100})
        day_six = await get_ok(s, "search", {"query": "sixdays", "since": "24h"})
        half_hour = await get_ok(s, "search", {"query": "contractprobe", "since": "30m"})
        recent_entries = await get_ok(s, "search", {"since": "1h", "limit": 100})
        old_entries = await get_ok(s, "search", {"until": "2026-01-01", "limit": 100})
        demo = await get_ok(s, "search", {"project": "demo-app", "limit": 100})
        kind = await get_ok(s, "search", {"query": "commits", "kind": "cognition", "limit": 100})
    assert entries_only["events"] == [] and entries_only["entries"]
    assert any(e["match"] == "all" for e in entries_only["entries"])
    for e in entries_only["entries"]:
        check_entry(e)
        # Partial matches (here by the parts of the camelCase word: `URL`) come after.
        if e["match"] == "all":
            assert "URLSearchParams" in e["text"]
        else:
            assert e["match"] == "partial", e
    assert events_only["entries"] == [] and events_only["events"]
    assert {e["id"] for e in everything["entries"]} == {e["id"] for e in entries_only["entries"]}
    assert grok["events"] and all(e["source"] == "grok" for e in grok["events"])
    assert project["events"] and all(e["project"] == "inventory_sync" for e in project["events"])
    assert since["events"] and since_z["events"], "2026-10-22T07:05+08:00 is after 07:00+08:00 (23:00Z)"
    assert after["events"] == []
    assert until["events"] and all(parse_time(e["time"]) < datetime(2026, 11, 5, tzinfo=timezone.utc) for e in until["events"])
    assert all(e["source"] != "zcode" for e in until["events"]), "the zcode message is of 2026-11-05"
    assert week["events"] == [] and six["events"], "since 7d: the 6-day-old message, not the 9-day-old one"
    texts = " ".join(e["text"] for e in week_any["events"])
    assert "ninedays" not in texts
    assert no_since["events"], "search has no default since"
    assert two_weeks["events"] and day_six["events"] == [] and half_hour["events"] == []
    # The small probe sessions are 24 hours minus 0 to 53 minutes old when the module starts.
    assert PROBE_SMALL_SESSIONS - 20 <= len(day["events"]) <= PROBE_SMALL_SESSIONS
    # Entries by when they were written: the imported ones, at ingest.
    assert recent_entries["entries"] and old_entries["entries"] == []
    assert demo["entries"] and all(e["project"] == "demo-app" for e in demo["entries"])
    assert kind["entries"] and all(e["kind"] == "cognition" for e in kind["entries"])


# ----------------------------------------------------------------------------- timeline


async def test_timeline_since_defaults_to_7d(store: Store) -> None:
    p = store.probe
    async with store.connect() as s:
        default = (await get_ok(s, "timeline", {"limit": 500}))["sessions"]
        seven = (await get_ok(s, "timeline", {"since": "7d", "limit": 500}))["sessions"]
        ten = (await get_ok(s, "timeline", {"since": "10d", "limit": 500}))["sessions"]
        everything = (await get_ok(s, "timeline", {"since": "2025-01-01", "limit": 500}))["sessions"]
    ids = [x["session"] for x in default]
    assert ids == [x["session"] for x in seven], "timeline without since is timeline since 7d"
    assert p.big in ids and p.six_days in ids, "sessions of 2 and 6 days ago are in the last 7 days"
    assert p.nine_days not in ids, "a session of 9 days ago is not"
    assert p.nine_days in [x["session"] for x in ten]
    week_ago = datetime.now(timezone.utc) - timedelta(days=7, minutes=5)
    for x in default:
        check_session(x)
        assert parse_time(x["ended"]) >= week_ago, f"not active in the last 7 days: {x}"
    assert len(everything) > len(default)
    assert "4e1d7a2c-9b3f-4c6e-8d21-7f0a5b3c9e12" in [x["session"] for x in everything]


async def test_timeline_limit_is_50_by_default_and_1_to_500(store: Store) -> None:
    p = store.probe
    async with store.connect() as s:
        default = (await get_ok(s, "timeline", {}))["sessions"]
        fifty = (await get_ok(s, "timeline", {"limit": 50}))["sessions"]
        most = (await get_ok(s, "timeline", {"limit": 500}))["sessions"]
        one = (await get_ok(s, "timeline", {"limit": 1}))["sessions"]
        ev_default = await get_ok(s, "timeline", {"session": p.big})
        ev_all = await get_ok(s, "timeline", {"session": p.big, "limit": 500})
        ev_two = await get_ok(s, "timeline", {"session": p.big, "limit": 2})
        low = await get_err(s, "timeline", {"limit": 0})
        high = await get_err(s, "timeline", {"limit": 501})
        ev_high = await get_err(s, "timeline", {"session": p.big, "limit": 501})
    assert len(most) > 50, "the probe makes more than 50 sessions in the last 7 days"
    assert len(default) == 50, "timeline's limit defaults to 50"
    assert [x["session"] for x in default] == [x["session"] for x in fifty] == [x["session"] for x in most[:50]]
    assert len(one) == 1
    assert len(ev_all["events"]) == PROBE_BIG_MESSAGES
    assert len(ev_default["events"]) == 50, "a session's events: 50 by default"
    assert [e["id"] for e in ev_default["events"]] == [e["id"] for e in ev_all["events"][:50]], "its first events"
    assert [e["id"] for e in ev_two["events"]] == [e["id"] for e in ev_all["events"][:2]]
    for m in (low, high, ev_high):
        assert "`limit`" in m


async def test_timeline_sessions_have_the_spec_fields_newest_first(store: Store) -> None:
    p = store.probe
    async with store.connect() as s:
        everything = (await get_ok(s, "timeline", {"since": "2025-01-01", "limit": 500}))["sessions"]
        cursor = (await get_ok(s, "timeline", {"since": "2025-01-01", "source": "cursor", "limit": 500}))["sessions"]
        ledger = (await get_ok(s, "timeline", {"since": "2025-01-01", "project": "ledger_sync", "limit": 500}))["sessions"]
        until = (await get_ok(s, "timeline", {"since": "2025-01-01", "until": "2026-10-21T00:00:00+08:00", "limit": 500}))["sessions"]
    for x in everything:
        check_session(x)
    ended = [parse_time(x["ended"]) for x in everything]
    assert ended == sorted(ended, reverse=True), "sessions by their last activity, newest first"
    by_id = {x["session"]: x for x in everything}
    big = by_id[p.big]
    assert (big["source"], big["project"], big["title"], big["prompt"], big["events"]) == (
        "claude-code", PROBE_PROJECT, PROBE_BIG_TITLE, None, PROBE_BIG_MESSAGES)
    start = p.made_at - timedelta(days=2)
    assert big["started"] == local(start)
    assert big["ended"] == local(start + timedelta(seconds=PROBE_BIG_MESSAGES - 1))
    small = by_id[p.small[0]]
    assert small["title"] is None and small["prompt"] == "contractprobe wombat session 00"
    # A Chinese title and a Japanese first prompt from the fixtures.
    assert by_id["sess_f0a06a70-0cf6-4b66-9fad-b37adba48692"]["title"] == "排查库存重复入库"
    jp = by_id["e9d8c7b6-a5f4-4e3d-8c2b-1a0f9e8d7c6b"]
    assert jp["title"] is None and jp["prompt"].startswith(JAPANESE)
    long_prompts = [x for x in everything if x["prompt"] and len(x["prompt"]) == 80]
    assert long_prompts, "the fixtures have a first prompt longer than 80 characters"
    assert cursor and all(x["source"] == "cursor" for x in cursor)
    assert ledger and all(x["project"] == "ledger_sync" for x in ledger)
    assert until and all(parse_time(x["started"]) < datetime(2026, 10, 21, tzinfo=SHANGHAI) for x in until)
    assert len(until) < len(everything)


async def test_timeline_of_a_session_lists_its_events_oldest_first(store: Store) -> None:
    sid = "e9d8c7b6-a5f4-4e3d-8c2b-1a0f9e8d7c6b"
    async with store.connect() as s:
        msgs = await get_ok(s, "timeline", {"session": sid})
        full = await get_ok(s, "timeline", {"session": sid, "include_tools": True, "limit": 500})
        with_source = await get_ok(s, "timeline", {"session": sid, "source": "cursor"})
        sessions = (await get_ok(s, "timeline", {"since": "2025-01-01", "limit": 500}))["sessions"]
        counts = {}
        for x in sessions[-12:]:  # the fixtures' sessions
            listed = await get_ok(s, "timeline", {"session": x["session"], "source": x["source"], "include_tools": True, "limit": 500})
            counts[x["session"]] = (x["events"], len(listed["events"]))
    assert set(msgs) == {"session", "events"}
    check_session(msgs["session"])
    assert msgs["session"]["session"] == sid
    for e in msgs["events"] + full["events"]:
        check_event(e, TIMELINE_CUT)
        assert e["session"] == sid
    assert msgs["events"] and all(e["kind"] == "message" for e in msgs["events"]), "only messages by default"
    kinds = {e["kind"] for e in full["events"]}
    assert "tool_use" in kinds and "system" in kinds, kinds
    assert {e["id"] for e in msgs["events"]} < {e["id"] for e in full["events"]}
    times = [parse_time(e["time"]) for e in full["events"]]
    assert times == sorted(times), "oldest first"
    assert with_source == msgs
    for sid_, (count, listed) in counts.items():
        assert count == listed, f"session {sid_}: events says {count}, timeline lists {listed} visible events"


async def test_timeline_text_is_cut_to_1000_characters_with_the_cut_noted(store: Store) -> None:
    async with store.connect() as s:
        big = await big_tool_result(s)
        plain = await get_ok(s, "timeline", {"session": big["session"], "limit": 500})
        full = await get_ok(s, "timeline", {"session": big["session"], "include_tools": True, "limit": 500})
    assert big["id"] not in {e["id"] for e in plain["events"]}, "a tool result only with include_tools"
    (ev,) = [e for e in full["events"] if e["id"] == big["id"]]
    kept, n = check_event(ev, TIMELINE_CUT)
    s_kept, s_n = uncut(big["text"])
    assert len(kept) == 1000 and kept.startswith(s_kept)
    assert len(kept) + n == len(s_kept) + s_n, "the same text, noted with the characters cut"


# ----------------------------------------------------------------------------- get and sources


async def test_get_an_event_gives_its_text_cut_to_20000_and_its_context(store: Store) -> None:
    async with store.connect() as s:
        big = await big_tool_result(s)
        ev = await get_ok(s, "get", {"id": big["id"]})
    kept, n = check_event(ev, GET_CUT)
    for k in ("cwd", "git_branch", "agent_version"):
        assert k in ev and is_str_or_none(ev[k])
    assert (ev["cwd"], ev["git_branch"], ev["agent_version"]) == ("/home/dev/demo-app", "feat/healthz", "2.1.281")
    line = (store.agent_home / BIG_TOOL_RESULT_FILE).read_text(encoding="utf-8").split("\n")
    original = next(json.loads(l)["message"]["content"][0]["content"] for l in line if "toolu_01ReadBig" in l and '"tool_result"' in l)
    assert len(original) > 25_000
    assert len(kept) == 20_000 and kept == original[:20_000]
    assert n == len(original) - 20_000, f"{n} characters noted as cut, {len(original) - 20_000} were"
    assert ev["text"] == original[:20_000] + f"…[{len(original) - 20_000} characters cut]"
    assert ev["time"] == big["time"] and ev["session"] == big["session"]


async def test_get_a_short_event_is_not_cut(store: Store) -> None:
    async with store.connect() as s:
        ev0 = await find_event(s, JAPANESE)
        ev = await get_ok(s, "get", {"id": ev0["id"]})
    assert check_event(ev, GET_CUT)[1] == 0
    assert ev["text"] == ev0["text"]
    assert {"cwd", "git_branch", "agent_version"} <= ev.keys()


async def test_get_an_entry_gives_the_entry_its_sources_and_history(store: Store) -> None:
    async with store.connect() as s:
        listed = (await get_ok(s, "search", {"limit": 1}))["entries"][0]
        got = await get_ok(s, "get", {"id": listed["id"]})
    assert set(got) == {"entry", "sources", "history"}
    entry = check_entry(got["entry"])
    assert {k: v for k, v in entry.items() if k in ENTRY_FIELDS} == {k: v for k, v in listed.items() if k in ENTRY_FIELDS}
    assert got["sources"], "an imported entry cites its memory file's version"
    for src in got["sources"]:
        assert "quote" in src and is_str_or_none(src["quote"])
        check_event(src, ENTRY_SOURCE_CUT)
    (h,) = got["history"]
    assert set(h) >= HISTORY_FIELDS
    assert (h["id"], h["supersedes"], h["author"], h["created"], h["status"]) == (
        entry["id"], None, entry["author"], entry["created"], "active")


async def test_get_and_sources_of_unknown_ids(store: Store) -> None:
    async with store.connect() as s:
        for tool in ("get", "sources"):
            for id_ in ("ent_0123456789ab", "claude-code:00000000-0000-4000-8000-00000000dead", "zcode:prt_nothing"):
                assert await get_err(s, tool, {"id": id_}) == f"Unknown entry or event {id_}."
        assert await get_err(s, "forget", {"id": "ent_0123456789ab", "reason": "r"}) == "Unknown entry or event ent_0123456789ab."
        assert await get_err(s, "correct", {"id": "ent_0123456789ab", "text": "t"}) == "Unknown entry or event ent_0123456789ab."


async def test_sources_of_an_event_give_the_original_line(store: Store) -> None:
    async with store.connect() as s:
        big = await big_tool_result(s)
        src = await get_ok(s, "sources", {"id": big["id"]})
        jp = await find_event(s, JAPANESE)
        jp_src = await get_ok(s, "sources", {"id": jp["id"]})
    assert isinstance(src, list) and len(src) == 1
    (p,) = src
    assert set(p) >= PROVENANCE_FIELDS
    assert p["event_id"] == big["id"] and p["quote"] is None and p["time"] == big["time"]
    assert Path(p["original_file"]) == store.agent_home / BIG_TOOL_RESULT_FILE
    assert isinstance(p["mirror_file"], str) and Path(p["mirror_file"]).is_relative_to(store.home)
    assert Path(p["mirror_file"] + ".zst").exists() or Path(p["mirror_file"] + ".tail").exists()
    assert is_int(p["line"]) and p["line"] >= 1
    line = Path(p["original_file"]).read_text(encoding="utf-8").split("\n")[p["line"] - 1]
    assert len(line) > RAW_CUT
    kept, n = check_cut(p["raw"], RAW_CUT)
    assert kept == line[:RAW_CUT] and n == len(line) - RAW_CUT, "raw: the line as written, cut to 4,000 with the cut noted"
    (q,) = jp_src
    line = Path(q["original_file"]).read_text(encoding="utf-8").split("\n")[q["line"] - 1]
    assert q["raw"] == line and JAPANESE in json.loads(line)["message"]["content"][0]["text"]
    parse_time(q["time"])


async def test_sources_of_an_entry_list_its_cited_events(store: Store) -> None:
    async with store.connect() as s:
        listed = (await get_ok(s, "search", {"limit": 1}))["entries"][0]
        got = await get_ok(s, "get", {"id": listed["id"]})
        src = await get_ok(s, "sources", {"id": listed["id"]})
    assert [p["event_id"] for p in src] == [x["id"] for x in got["sources"]]
    for p in src:
        assert set(p) >= PROVENANCE_FIELDS
        parse_time(p["time"])
        assert is_str_or_none(p["quote"]) and is_str_or_none(p["mirror_file"]) and isinstance(p["original_file"], str)
        assert is_int(p["line"]) and p["line"] >= 1
        check_cut(p["raw"], RAW_CUT)


# ----------------------------------------------------------------------------- remember


async def test_remember_saves_an_entry_authored_by_the_client(fresh_store: Store) -> None:
    async with fresh_store.connect() as s:
        zh = [e for e in (await get_ok(s, "search", {"query": CHINESE_QUOTE}))["events"] if CHINESE_QUOTE in e["text"]]
        newest = max(zh, key=lambda e: parse_time(e["time"]))
        assert len(zh) >= 2
        before = datetime.now(timezone.utc) - timedelta(seconds=5)
        r = await get_ok(s, "remember", {
            "kind": "knowledge", "text": "Inventory sync books stock twice since last week.", "confidence": 0.8,
            "sources": [{"quote": CHINESE_QUOTE}], "project": "inventory_sync",
            "valid_from": "2026-10-20T00:00:00+08:00", "valid_to": "2030-01-01T00:00:00Z",
        })
        after = datetime.now(timezone.utc) + timedelta(seconds=5)
        assert set(r) == {"entry"}
        e = check_entry(r["entry"])
        assert e["author"] == AUTHOR
        assert (e["kind"], e["text"], e["confidence"], e["project"]) == (
            "knowledge", "Inventory sync books stock twice since last week.", 0.8, "inventory_sync")
        assert (e["status"], e["concurrent"], e["supersedes"], e["superseded_by"], e["root"], e["imported"]) == (
            "active", False, None, None, e["id"], False)
        assert e["valid_from"] == "2026-10-20T00:00:00.000+08:00"
        assert e["valid_to"] == "2030-01-01T08:00:00.000+08:00"
        assert before <= parse_time(e["created"]) <= after
        got = await get_ok(s, "get", {"id": e["id"]})
        assert check_entry(got["entry"]) == e
        (src,) = got["sources"]
        assert src["id"] == newest["id"], "a quote cites the most recent message containing it"
        assert src["quote"] == CHINESE_QUOTE
        found = await get_ok(s, "search", {"query": "Inventory sync books stock twice", "scope": "entries"})
        assert found["entries"][0]["id"] == e["id"], "best match first"
        assert check_entry(found["entries"][0])["author"] == AUTHOR

        # Defaults: kind memory, no project, no validity; a quote found only in a tool result.
        d = check_entry((await get_ok(s, "remember", {
            "text": "The product fixture lists SKU-00011 in Tokyo.", "confidence": 1,
            "sources": [{"quote": TOOL_RESULT_ONLY}],
        }))["entry"])
        assert (d["kind"], d["project"], d["valid_from"], d["valid_to"], d["author"]) == ("memory", None, None, None, AUTHOR)
        big = await big_tool_result(s)
        got = await get_ok(s, "get", {"id": d["id"]})
        (src,) = got["sources"]
        assert src["id"] == big["id"] and src["quote"] == TOOL_RESULT_ONLY
        kept, n = check_event(src, ENTRY_SOURCE_CUT)
        b_kept, b_n = uncut(big["text"])
        assert len(kept) == 500 and kept.startswith(b_kept) and len(kept) + n == len(b_kept) + b_n

        # An event id with a quote, matched ignoring whitespace and case; two sources.
        codex = await find_event(s, CODEX_PROMPT)
        two = check_entry((await get_ok(s, "remember", {
            "kind": "memory", "text": "Loading whole tables was found in src/server.", "confidence": 0,
            "sources": [{"event_id": codex["id"], "quote": "LOADS   all ROWS of a\ntable"}, {"event_id": newest["id"]}],
        }))["entry"])
        assert two["confidence"] == 0
        prov = await get_ok(s, "sources", {"id": two["id"]})
        assert [(p["event_id"], p["quote"]) for p in prov] == [(codex["id"], "LOADS   all ROWS of a\ntable"), (newest["id"], None)]
        for p in prov:
            assert set(p) >= PROVENANCE_FIELDS


async def test_remember_errors_have_the_spec_texts(fresh_store: Store) -> None:
    async with fresh_store.connect() as s:
        codex = await find_event(s, CODEX_PROMPT)
        q = "no message says this 9f8e7d"
        assert await get_err(s, "remember", {"text": "t", "confidence": 1, "sources": [{"quote": q}]}) == (
            f'No event contains the quote "{q}". Search for the event and cite its id instead.')
        # Tool calls are never matched by a quote.
        assert await get_err(s, "remember", {"text": "t", "confidence": 1, "sources": [{"quote": TOOL_CALL_ONLY}]}) == (
            f'No event contains the quote "{TOOL_CALL_ONLY}". Search for the event and cite its id instead.')
        q = "not in that event 4c3b"
        assert await get_err(s, "remember", {"text": "t", "confidence": 1, "sources": [{"event_id": codex["id"], "quote": q}]}) == (
            f'Quote not found in event {codex["id"]}: "{q}"')
        unknown = "codex:00000000-0000-0000-0000-000000000000:1"
        assert await get_err(s, "remember", {"text": "t", "confidence": 1, "sources": [{"event_id": unknown}]}) == (
            f"Unknown entry or event {unknown}.")
        # Nothing of that was saved.
        listed = (await get_ok(s, "search", {"limit": 100}))["entries"]
        assert [x for x in listed if x["author"] == AUTHOR] == []


async def test_an_entry_whose_validity_ended_is_left_out_of_search_but_got_by_id(fresh_store: Store) -> None:
    async with fresh_store.connect() as s:
        ev = await find_event(s, JAPANESE)
        text = "Nightly close tests failed because of the local date (expired note)."
        e = check_entry((await get_ok(s, "remember", {
            "text": text, "confidence": 0.9, "sources": [{"event_id": ev["id"]}],
            "valid_from": "2026-10-01", "valid_to": "2026-10-31T00:00:00+08:00",
        }))["entry"])
        assert e["valid_to"] == "2026-10-31T00:00:00.000+08:00"
        found = await get_ok(s, "search", {"query": "Nightly close tests local date", "scope": "entries"})
        listed = await get_ok(s, "search", {"limit": 100})
        got = await get_ok(s, "get", {"id": e["id"]})
    assert e["id"] not in [x["id"] for x in found["entries"]]
    assert e["id"] not in [x["id"] for x in listed["entries"]]
    assert check_entry(got["entry"])["id"] == e["id"] and got["entry"]["valid_to"] == e["valid_to"]


async def test_remember_ingests_new_lines_before_saving(isolated_store: Store) -> None:
    """The spec: to cite a line just written in the conversation, quote it: the server ingests
    new lines before it saves."""
    # A session whose log ends with a complete line (the other one of demo-app ends mid-line).
    log = isolated_store.agent_home / BIG_TOOL_RESULT_FILE
    assert log.read_bytes().endswith(b"\n")
    new_uuid = "5f0c3a9e-1d2b-4c8e-9a7f-000000000042"
    said = "Keep the healthz timeout at 500 ms unless the user says otherwise, please."
    # The prompt follows the log's last conversation line, as Claude Code writes it (a prompt
    # without a parent in a log that names parents would be a rewind to its start).
    last = [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines() if x.strip()]
    parent = [x["uuid"] for x in last if x.get("uuid") and x.get("sessionId") == "4e1d7a2c-9b3f-4c6e-8d21-7f0a5b3c9e12"][-1]
    async with isolated_store.connect() as s:
        await get_ok(s, "search", {"query": "healthz"})
        line = {
            "parentUuid": parent, "isSidechain": False, "type": "user", "sessionId": "4e1d7a2c-9b3f-4c6e-8d21-7f0a5b3c9e12",
            "uuid": new_uuid, "timestamp": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "cwd": "/home/dev/demo-app", "version": "2.1.281", "gitBranch": "feat/healthz",
            "message": {"role": "user", "content": said},
        }
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
        e = check_entry((await get_ok(s, "remember", {
            "kind": "cognition", "text": "Keeps the healthz timeout at 500 ms.", "confidence": 0.9,
            "sources": [{"quote": "healthz timeout at 500 ms unless"}],
        }))["entry"])
        got = await get_ok(s, "get", {"id": e["id"]})
        (src,) = got["sources"]
        assert src["id"] == f"claude-code:{new_uuid}" and src["text"] == said
        assert (src["role"], src["kind"], src["project"]) == ("user", "message", "demo-app")


# ----------------------------------------------------------------------------- correct


async def test_correct_makes_a_new_version_that_supersedes_the_old(fresh_store: Store) -> None:
    async with fresh_store.connect() as s:
        a = await find_event(s, JAPANESE)
        b = await find_event(s, CODEX_PROMPT)
        old = check_entry((await get_ok(s, "remember", {
            "kind": "cognition", "text": "Prefers UTC dates in close jobs.", "confidence": 0.7, "project": "ledger_sync",
            "sources": [{"event_id": a["id"]}], "valid_from": "2026-10-22",
        }))["entry"])
        new = check_entry((await get_ok(s, "correct", {"id": old["id"], "text": "Prefers Utc::now() in close jobs."}))["entry"])
        assert new["id"] != old["id"]
        assert (new["supersedes"], new["root"], new["status"], new["author"]) == (old["id"], old["id"], "active", AUTHOR)
        # The old kind, confidence, validity (and project) by default.
        assert (new["kind"], new["confidence"], new["valid_from"], new["valid_to"], new["project"]) == (
            old["kind"], old["confidence"], old["valid_from"], old["valid_to"], old["project"])
        assert parse_time(new["created"]) > parse_time(old["created"]), "a correction is dated after what it corrects"

        old_now = check_entry((await get_ok(s, "get", {"id": old["id"]}))["entry"])
        assert (old_now["status"], old_now["superseded_by"], old_now["concurrent"]) == ("superseded", new["id"], False)
        got = await get_ok(s, "get", {"id": new["id"]})
        assert [h["id"] for h in got["history"]] == [old["id"], new["id"]], "history oldest first"
        for h in got["history"]:
            assert set(h) >= HISTORY_FIELDS
            parse_time(h["created"])
        assert [(h["supersedes"], h["status"], h["author"]) for h in got["history"]] == [
            (None, "superseded", AUTHOR), (old["id"], "active", AUTHOR)]
        assert [x["id"] for x in got["sources"]] == [a["id"]], "sources carry over"
        listed = [x["id"] for x in (await get_ok(s, "search", {"limit": 100}))["entries"]]
        assert new["id"] in listed and old["id"] not in listed, "only current versions are listed"
        found = [x["id"] for x in (await get_ok(s, "search", {"query": "Prefers Utc close jobs", "scope": "entries"}))["entries"]]
        assert new["id"] in found and old["id"] not in found

        assert await get_err(s, "correct", {"id": old["id"], "text": "x"}) == (
            f"Entry {old['id']} was already corrected; its current version is {new['id']}. Correct that one instead.")

        third = check_entry((await get_ok(s, "correct", {
            "id": new["id"], "text": "Uses Utc::now() in close jobs.", "kind": "knowledge", "confidence": 0.95,
            "sources": [{"event_id": b["id"], "quote": "loads all rows"}], "valid_to": "2031-01-01T00:00:00+08:00",
        }))["entry"])
        assert (third["kind"], third["confidence"], third["valid_from"], third["valid_to"], third["root"]) == (
            "knowledge", 0.95, old["valid_from"], "2031-01-01T00:00:00.000+08:00", old["id"])
        got = await get_ok(s, "get", {"id": third["id"]})
        assert [(x["id"], x["quote"]) for x in got["sources"]] == [(a["id"], None), (b["id"], "loads all rows")], (
            "new sources are added to those that carry over")
        assert [h["id"] for h in got["history"]] == [old["id"], new["id"], third["id"]]
        assert await get_err(s, "correct", {"id": new["id"], "text": "x"}) == (
            f"Entry {new['id']} was already corrected; its current version is {third['id']}. Correct that one instead.")

        # Correcting an imported entry: the correction is the client's, made in Origin.
        imported = next(x for x in (await get_ok(s, "search", {"limit": 100}))["entries"] if x["imported"])
        fixed = check_entry((await get_ok(s, "correct", {"id": imported["id"], "text": imported["text"] + " (checked)"}))["entry"])
        assert (fixed["author"], fixed["imported"], fixed["supersedes"], fixed["root"], fixed["kind"]) == (
            AUTHOR, False, imported["id"], imported["root"], imported["kind"])


# ----------------------------------------------------------------------------- forget


async def test_forget_an_entry_hides_every_version_and_the_events_it_cites(fresh_store: Store) -> None:
    async with fresh_store.connect() as s:
        ev = await find_event(s, "clippy も通して")
        sess_before = await get_ok(s, "timeline", {"session": ev["session"], "include_tools": True, "limit": 500})
        e1 = check_entry((await get_ok(s, "remember", {"text": "Run clippy before finishing.", "confidence": 0.9,
                                                      "sources": [{"event_id": ev["id"]}]}))["entry"])
        e2 = check_entry((await get_ok(s, "correct", {"id": e1["id"], "text": "Run clippy with -D warnings before finishing."}))["entry"])
        f = await get_ok(s, "forget", {"id": e2["id"], "reason": "The user asked to forget this."})
        assert set(f) == {"tombstone", "forgotten_entries", "excluded_events"}
        assert isinstance(f["tombstone"], str) and TOMBSTONE_RE.match(f["tombstone"])
        assert isinstance(f["forgotten_entries"], list) and sorted(f["forgotten_entries"]) == sorted([e1["id"], e2["id"]])
        assert is_int(f["excluded_events"]) and f["excluded_events"] == 1

        for id_ in (e1["id"], e2["id"], ev["id"]):
            assert await get_err(s, "get", {"id": id_}) == f"{id_} has been forgotten."
            assert await get_err(s, "sources", {"id": id_}) == f"{id_} has been forgotten."
        assert await get_err(s, "correct", {"id": e2["id"], "text": "x"}) == f"{e2['id']} has been forgotten."
        assert await get_err(s, "remember", {"text": "t", "confidence": 1, "sources": [{"event_id": ev["id"]}]}) == (
            f"Event {ev['id']} has been forgotten and cannot be cited.")
        found = await get_ok(s, "search", {"query": "clippy", "include_tools": True, "limit": 100})
        assert ev["id"] not in [x["id"] for x in found["events"]]
        assert not ({e1["id"], e2["id"]} & {x["id"] for x in found["entries"]})
        sess_after = await get_ok(s, "timeline", {"session": ev["session"], "include_tools": True, "limit": 500})
        assert ev["id"] not in [x["id"] for x in sess_after["events"]]
        assert sess_after["session"]["events"] == sess_before["session"]["events"] - 1, "a session counts its visible events"

        again = await get_ok(s, "forget", {"id": e2["id"], "reason": "again"})
        assert again == {"tombstone": None, "forgotten_entries": [], "excluded_events": 0}
        again = await get_ok(s, "forget", {"id": ev["id"], "reason": "again"})
        assert again == {"tombstone": None, "forgotten_entries": [], "excluded_events": 0}


async def test_forget_an_event_hides_every_entry_that_cites_it(fresh_store: Store) -> None:
    async with fresh_store.connect() as s:
        ev = await find_event(s, CODEX_PROMPT)
        other = await find_event(s, JAPANESE)
        e = check_entry((await get_ok(s, "remember", {"text": "Whole-table loads exist in src/server.", "confidence": 0.6,
                                                     "sources": [{"event_id": ev["id"]}, {"event_id": other["id"]}]}))["entry"])
        f = await get_ok(s, "forget", {"id": ev["id"], "reason": "x" * 2000})
        assert TOMBSTONE_RE.match(f["tombstone"])
        assert f["forgotten_entries"] == [e["id"]] and f["excluded_events"] == 1
        assert await get_err(s, "get", {"id": e["id"]}) == f"{e['id']} has been forgotten."
        assert await get_err(s, "get", {"id": ev["id"]}) == f"{ev['id']} has been forgotten."
        still = await get_ok(s, "get", {"id": other["id"]})
        assert still["id"] == other["id"], "the entry's other event stays visible"
        assert await get_err(s, "forget", {"id": "codex:not-a-known-event", "reason": "r"}) == "Unknown entry or event codex:not-a-known-event."


# ----------------------------------------------------------------------------- malformed arguments

HUGE = "x" * 100_000
ENTRY = "<an entry of the test's store>"  # replaced by a real entry id (correct looks the entry up first)

MALFORMED: dict[str, list[tuple[Any, str]]] = {
    "search": [
        ({"query": 5}, "query"), ({"query": ["a"]}, "query"), ({"query": HUGE}, "query"),
        ({"scope": "everything"}, "scope"), ({"scope": 1}, "scope"),
        ({"kind": "opinion"}, "kind"), ({"kind": True}, "kind"),
        ({"since": "yesterday"}, "since"), ({"since": ""}, "since"), ({"since": 7}, "since"), ({"since": "-3d"}, "since"),
        ({"until": "13/45/2026"}, "until"), ({"until": "2026-13-01"}, "until"),
        ({"source": "vim"}, "source"), ({"source": 3}, "source"),
        ({"project": 5}, "project"),
        ({"include_tools": "yes"}, "include_tools"), ({"include_tools": 1}, "include_tools"),
        ({"limit": 0}, "limit"), ({"limit": 101}, "limit"), ({"limit": -1}, "limit"), ({"limit": "ten"}, "limit"),
        ({"limit": 2.5}, "limit"), ({"limit": True}, "limit"), ({"limit": [20]}, "limit"), ({"limit": 1e20}, "limit"),
        ({"colour": "blue"}, "colour"),
    ],
    "timeline": [
        ({"since": "last week"}, "since"), ({"since": 7}, "since"), ({"until": "13/45/2026"}, "until"),
        ({"source": "vim"}, "source"), ({"project": 5}, "project"),
        ({"session": 5}, "session"), ({"session": ""}, "session"),
        ({"include_tools": "true"}, "include_tools"),
        ({"limit": 0}, "limit"), ({"limit": 501}, "limit"), ({"limit": "50"}, "limit"), ({"limit": 1.5}, "limit"),
        ({"query": "x"}, "query"),
    ],
    "get": [
        ({}, "id"), ({"id": 42}, "id"), ({"id": None}, "id"), ({"id": ["ent_0123456789ab"]}, "id"),
        ({"id": ""}, "id"), ({"id": "ent_xyz"}, "id"), ({"id": "ent_0123456789a"}, "id"), ({"id": "nosource:1"}, "id"),
        ({"id": "claude-code:"}, "id"), ({"id": "ent_" + "a" * 300}, "id"),
        ({"id": "ent_0123456789ab", "full": True}, "full"),
    ],
    "sources": [
        ({}, "id"), ({"id": 42}, "id"), ({"id": "ent_xyz"}, "id"), ({"id": "nosource:1"}, "id"),
        ({"id": "ent_0123456789ab", "depth": 2}, "depth"),
    ],
    "remember": [
        ({"confidence": 1, "sources": [{"quote": "q"}]}, "text"),
        ({"text": "", "confidence": 1, "sources": [{"quote": "q"}]}, "text"),
        ({"text": "   ", "confidence": 1, "sources": [{"quote": "q"}]}, "text"),
        ({"text": 5, "confidence": 1, "sources": [{"quote": "q"}]}, "text"),
        ({"text": HUGE, "confidence": 1, "sources": [{"quote": "q"}]}, "text"),
        ({"text": "t", "sources": [{"quote": "q"}]}, "confidence"),
        ({"text": "t", "confidence": 2, "sources": [{"quote": "q"}]}, "confidence"),
        ({"text": "t", "confidence": -0.1, "sources": [{"quote": "q"}]}, "confidence"),
        ({"text": "t", "confidence": 1.01, "sources": [{"quote": "q"}]}, "confidence"),
        ({"text": "t", "confidence": "0.5", "sources": [{"quote": "q"}]}, "confidence"),
        ({"text": "t", "confidence": True, "sources": [{"quote": "q"}]}, "confidence"),
        ({"text": "t", "confidence": 1}, "sources"),
        ({"text": "t", "confidence": 1, "sources": []}, "sources"),
        ({"text": "t", "confidence": 1, "sources": "q"}, "sources"),
        ({"text": "t", "confidence": 1, "sources": {"quote": "q"}}, "sources"),
        ({"text": "t", "confidence": 1, "sources": ["q"]}, "sources[0]"),
        ({"text": "t", "confidence": 1, "sources": [{}]}, "sources[0]"),
        ({"text": "t", "confidence": 1, "sources": [{"event_id": 7}]}, "sources[0].event_id"),
        ({"text": "t", "confidence": 1, "sources": [{"quote": 5}]}, "sources[0].quote"),
        ({"text": "t", "confidence": 1, "sources": [{"event_id": "not-an-event"}]}, "sources[0].event_id"),
        ({"text": "t", "confidence": 1, "sources": [{"quote": "x" * 2001}]}, "sources[0].quote"),
        ({"text": "t", "confidence": 1, "sources": [{"quote": "q", "page": 1}]}, "page"),
        ({"text": "t", "confidence": 1, "sources": [{"quote": "q"}] * 51}, "sources"),
        ({"text": "t", "confidence": 1, "sources": [{"quote": "q"}], "kind": "opinion"}, "kind"),
        ({"text": "t", "confidence": 1, "sources": [{"quote": "q"}], "kind": 1}, "kind"),
        ({"text": "t", "confidence": 1, "sources": [{"quote": "q"}], "project": 5}, "project"),
        ({"text": "t", "confidence": 1, "sources": [{"quote": "q"}], "valid_from": "someday"}, "valid_from"),
        ({"text": "t", "confidence": 1, "sources": [{"quote": "q"}], "valid_to": 2026}, "valid_to"),
        ({"text": "t", "confidence": 1, "sources": [{"quote": "q"}], "tags": ["a"]}, "tags"),
    ],
    "correct": [
        ({"text": "t"}, "id"), ({"id": ENTRY}, "text"), ({"id": 5, "text": "t"}, "id"),
        ({"id": "claude-code:abc", "text": "t"}, "id"), ({"id": ENTRY, "text": ""}, "text"),
        ({"id": ENTRY, "text": "t", "kind": "opinion"}, "kind"),
        ({"id": ENTRY, "text": "t", "confidence": 1.5}, "confidence"),
        ({"id": ENTRY, "text": "t", "confidence": "high"}, "confidence"),
        ({"id": ENTRY, "text": "t", "sources": "q"}, "sources"),
        ({"id": ENTRY, "text": "t", "sources": [{}]}, "sources[0]"),
        ({"id": ENTRY, "text": "t", "valid_to": "never"}, "valid_to"),
        ({"id": ENTRY, "text": "t", "project": "p"}, "project"),
    ],
    "forget": [
        ({"reason": "r"}, "id"), ({"id": "ent_0123456789ab"}, "reason"),
        ({"id": "ent_0123456789ab", "reason": ""}, "reason"), ({"id": "ent_0123456789ab", "reason": "   "}, "reason"),
        ({"id": "ent_0123456789ab", "reason": "x" * 2001}, "reason"), ({"id": "ent_0123456789ab", "reason": 5}, "reason"),
        ({"id": 5, "reason": "r"}, "id"), ({"id": "bogus", "reason": "r"}, "id"),
        ({"id": "ent_0123456789ab", "reason": "r", "force": True}, "force"),
    ],
}


@pytest.mark.parametrize("tool", TOOLS)
async def test_malformed_arguments_are_tool_errors_naming_the_argument(fresh_store: Store, tool: str) -> None:
    problems = []
    async with fresh_store.connect() as s:
        entry = (await get_ok(s, "search", {"limit": 1}))["entries"][0]["id"]
        for args, name in MALFORMED[tool]:
            if isinstance(args, dict) and args.get("id") == ENTRY:
                args = {**args, "id": entry}
            try:
                r = await s.call_tool(tool, args)
            except MCPError as e:
                problems.append(f"{tool} {_show(args)}: protocol error {e.error.code} {e.error.message!r}")
                continue
            msg = text_of(r)
            if r.is_error is not True:
                problems.append(f"{tool} {_show(args)}: accepted: {msg[:200]}")
            elif f"`{name}`" not in msg:
                problems.append(f"{tool} {_show(args)}: {msg!r} does not name `{name}`")
        # What the spec allows at the edges of the ranges is accepted.
        if tool == "search":
            for limit in (1, 100):
                ok(await call(s, "search", {"query": "cargo", "limit": limit}))
        if tool == "timeline":
            for limit in (1, 500):
                ok(await call(s, "timeline", {"limit": limit}))
        if tool == "remember":
            ev = await find_event(s, CODEX_PROMPT)
            for c in (0, 1, 0.5):
                ok(await call(s, "remember", {"text": f"edge {c}", "confidence": c, "sources": [{"event_id": ev["id"]}]}))
        if tool == "forget":
            ev = await find_event(s, JAPANESE)
            ok(await call(s, "forget", {"id": ev["id"], "reason": "y" * 2000}))
    assert not problems, "\n".join(problems)


async def test_an_unknown_tool_is_a_tool_error(store: Store) -> None:
    async with store.connect() as s:
        msg = await get_err(s, "recall", {"query": "x"})
    assert "recall" in msg


class RawToolCall(types.Request[dict[str, Any], Literal["tools/call"]]):
    """tools/call with params as given, to send arguments that are not an object."""

    method: Literal["tools/call"] = "tools/call"
    params: dict[str, Any]


async def test_arguments_that_are_not_an_object_are_a_tool_error(store: Store) -> None:
    """The spec: errors, invalid input among them, come back as tool errors (isError) with a
    readable message, never as protocol errors."""
    problems = []
    async with store.connect() as s:
        for tool, arguments in (("get", [1, 2]), ("get", "ent_0123456789ab"), ("search", 5), ("timeline", True)):
            try:
                r = await s.send_request(RawToolCall(params={"name": tool, "arguments": arguments}), types.CallToolResult)
            except MCPError as e:
                problems.append(f"tools/call {tool} with arguments {arguments!r}: protocol error {e.error.code} {e.error.message!r}")
                continue
            if r.is_error is not True:
                problems.append(f"tools/call {tool} with arguments {arguments!r}: accepted: {text_of(r)[:200]}")
        # The same connection still serves well-formed calls.
        await get_ok(s, "search", {"query": CHINESE, "limit": 1})
    assert not problems, "\n".join(problems)
