//! `origin mcp` over stdio, driven by rmcp's client: the tools, their errors, and several
//! servers on one store.

use std::path::{Path, PathBuf};
use std::process::Command;

use origin_tests::origin_bin;
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

fn sample() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/agent-home")
}

fn server_command(home: &Path) -> tokio::process::Command {
    server_command_reading(home, &sample())
}

/// [`server_command`] started with its stdin, stdout and stderr piped to this process.
fn spawn_piped(home: &Path) -> std::process::Child {
    server_command(home)
        .as_std_mut()
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn origin mcp")
}

/// [`server_command`], reading the agents' logs in `agents`.
fn server_command_reading(home: &Path, agents: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(origin_bin());
    cmd.arg("--home")
        .arg(home)
        .arg("mcp")
        .arg("--agents-home")
        .arg(agents)
        .args(["--recorded-home", "/home/dev"])
        .env("TZ", "Asia/Shanghai")
        .env("ORIGIN_WATCH_INTERVAL_MS", "0")
        .env("ORIGIN_DEVICE", "laptop")
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("GROK_HOME")
        .env_remove("ZCODE_HOME");
    cmd
}

async fn connect(home: &Path, client: &str) -> RunningService<RoleClient, ClientConfig> {
    connect_with(home, client, &[]).await
}

/// [`connect`], the server given these environment variables besides.
async fn connect_with(home: &Path, client: &str, env: &[(&str, &str)]) -> RunningService<RoleClient, ClientConfig> {
    let mut command = server_command(home);
    command.envs(env.iter().copied());
    let transport = TokioChildProcess::new(command).expect("spawn origin mcp");
    let info = ClientConfig::new(ClientCapabilities::default(), Implementation::new(client, "1.0"));
    info.serve(transport).await.expect("initialize")
}

async fn call(c: &RunningService<RoleClient, ClientConfig>, tool: &str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else { panic!("arguments must be an object") };
    c.call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args)).await.expect("tools/call must not be a protocol error")
}

fn text(r: &CallToolResult) -> String {
    r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("")
}

fn ok(r: &CallToolResult) -> Value {
    assert_ne!(r.is_error, Some(true), "unexpected tool error: {}", text(r));
    serde_json::from_str(&text(r)).expect("one JSON text item")
}

fn err(r: &CallToolResult) -> String {
    assert_eq!(r.is_error, Some(true), "expected a tool error, got {}", text(r));
    text(r)
}

fn ingest(home: &Path) {
    ingest_from(home, &sample());
}

/// `origin ingest` of the agents' logs in `agents` into the store at `home`.
fn ingest_from(home: &Path, agents: &Path) {
    let out = Command::new(origin_bin())
        .arg("--home")
        .arg(home)
        .args(["ingest", "--agents-home"])
        .arg(agents)
        .args(["--recorded-home", "/home/dev"])
        .output()
        .expect("origin ingest");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A store of one Claude Code log, `.claude/projects/-p/s1.jsonl` holding `log`, ingested before
/// any server starts (a read does not wait for a server's own ingest at its start): the folder,
/// the store's home and the agents' home.
fn store_of_claude_log(log: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (home, agents) = (dir.path().join("store"), dir.path().join("agents"));
    let path = agents.join(".claude/projects/-p/s1.jsonl");
    std::fs::create_dir_all(path.parent().expect("folder")).expect("log folder");
    std::fs::write(&path, log).expect("log");
    ingest_from(&home, &agents);
    (dir, home, agents)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seven_tools_answer_as_the_spec_says() {
    let dir = tempfile::tempdir().expect("tempdir");
    ingest(dir.path());
    let c = connect(dir.path(), "claude-code").await;
    let info = c.peer_info().expect("server info");
    assert!(info.instructions.as_deref().unwrap_or("").contains("cite entry ids"), "instructions");
    let tools = c.list_all_tools().await.expect("tools/list");
    let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(names, ["correct", "forget", "get", "remember", "search", "sources", "timeline"]);

    // search, in Chinese, with times in the server's zone (TZ=Asia/Shanghai).
    let found = ok(&call(&c, "search", json!({ "query": "库存", "limit": 5 })).await);
    assert_eq!(found.as_object().expect("object").keys().collect::<Vec<_>>(), ["entries", "events"]);
    assert_eq!(
        found["events"][0].as_object().expect("event").keys().take(9).collect::<Vec<_>>(),
        ["id", "time", "source", "project", "session", "role", "kind", "text", "snippet"],
        "{found}"
    );
    let events = found["events"].as_array().expect("events");
    assert!(!events.is_empty(), "{found}");
    for e in events {
        assert!(e["time"].as_str().expect("time").ends_with("+08:00"), "{e}");
        assert!(e["snippet"].as_str().expect("snippet").contains("[库存]"), "{e}");
        assert!(e["text"].as_str().expect("text").chars().count() <= 400 + 40);
    }
    let event_id = events[0]["id"].as_str().expect("id").to_owned();

    // get and sources of an event.
    let ev = ok(&call(&c, "get", json!({ "id": event_id })).await);
    assert_eq!(ev["id"], event_id.as_str());
    assert!(ev.get("cwd").is_some() && ev.get("git_branch").is_some() && ev.get("agent_version").is_some());
    let src = ok(&call(&c, "sources", json!({ "id": event_id })).await);
    let s0 = &src.as_array().expect("list")[0];
    assert_eq!(s0["event_id"], event_id.as_str());
    assert!(s0["line"].as_u64().expect("line") >= 1);
    assert!(s0["original_file"].as_str().is_some());

    // remember with a quote-only source; author is <client>@<device>.
    let quote = "同步上周开始偶尔重复入库";
    let rem = ok(&call(&c, "remember", json!({ "kind": "knowledge", "text": "Inventory sync sometimes books stock twice since last week.", "confidence": 0.8, "sources": [{ "quote": quote }] })).await);
    let entry = &rem["entry"];
    let id = entry["id"].as_str().expect("entry id").to_owned();
    assert!(id.starts_with("ent_") && id.len() >= 16);
    assert_eq!(entry["author"], "claude-code@laptop");
    assert_eq!(entry["status"], "active");
    assert_eq!(entry["root"], id.as_str());
    assert!(entry["created"].as_str().expect("created").ends_with("+08:00"));
    let got = ok(&call(&c, "get", json!({ "id": id })).await);
    assert_eq!(got["sources"][0]["quote"], quote);
    assert_eq!(got["history"].as_array().expect("history").len(), 1);

    // correct, then correcting the superseded version names the current one.
    let corrected = ok(&call(&c, "correct", json!({ "id": id, "text": "Inventory sync books stock twice when two imports overlap." })).await);
    let new_id = corrected["entry"]["id"].as_str().expect("new id").to_owned();
    assert_eq!(corrected["entry"]["supersedes"], id.as_str());
    let again = err(&call(&c, "correct", json!({ "id": id, "text": "x" })).await);
    assert_eq!(again, format!("Entry {id} was already corrected; its current version is {new_id}. Correct that one instead."));
    // A validity that would end before it starts names the bound the call gave: a start moved
    // past the end the corrected version keeps names `valid_from`; an end given names itself.
    let bounded = ok(&call(&c, "correct", json!({ "id": new_id, "text": "Inventory sync books stock twice.", "valid_to": "2027-01-01" })).await);
    let new_id = bounded["entry"]["id"].as_str().expect("new id").to_owned();
    let start = err(&call(&c, "correct", json!({ "id": new_id, "text": "x", "valid_from": "2028-01-01" })).await);
    assert!(start.starts_with("Invalid input: `valid_from` must be before the `valid_to` the corrected version keeps"), "{start}");
    let end = err(&call(&c, "correct", json!({ "id": new_id, "text": "x", "valid_from": "2028-01-01", "valid_to": "2027-06-01" })).await);
    assert!(end.starts_with("Invalid input: `valid_to` must be after `valid_from`"), "{end}");

    // forget the entry: every version hidden; then it is forgotten everywhere.
    let f = ok(&call(&c, "forget", json!({ "id": new_id, "reason": "the user asked" })).await);
    // Fields come in the spec's order (as JSON objects are read in order by people and agents).
    assert_eq!(f.as_object().expect("object").keys().collect::<Vec<_>>(), ["tombstone", "forgotten_entries", "excluded_events"]);
    assert!(f["tombstone"].as_str().expect("tombstone").starts_with("tmb_"));
    assert_eq!(f["forgotten_entries"].as_array().expect("list").len(), 3);
    assert_eq!(err(&call(&c, "get", json!({ "id": id })).await), format!("{id} has been forgotten."));
    let f2 = ok(&call(&c, "forget", json!({ "id": new_id, "reason": "again" })).await);
    assert_eq!(f2["tombstone"], Value::Null);

    // errors with the spec's texts.
    assert_eq!(err(&call(&c, "get", json!({ "id": "ent_0123456789ab" })).await), "Unknown entry or event ent_0123456789ab.");
    let nq = err(&call(&c, "remember", json!({ "text": "t", "confidence": 1, "sources": [{ "quote": "no message says this 9f8e7d" }] })).await);
    assert_eq!(nq, "No event contains the quote \"no message says this 9f8e7d\". Search for the event and cite its id instead.");
    // The entry's forget hid the event it cited: it cannot be cited any more.
    let fe = err(&call(&c, "remember", json!({ "text": "t", "confidence": 1, "sources": [{ "event_id": event_id }] })).await);
    assert_eq!(fe, format!("Event {event_id} has been forgotten and cannot be cited."));
    let other = ok(&call(&c, "search", json!({ "query": "selectAll", "limit": 1 })).await)["events"][0]["id"].as_str().expect("another event").to_owned();
    let qe = err(&call(&c, "remember", json!({ "text": "t", "confidence": 1, "sources": [{ "event_id": other, "quote": "not in that event 4c3b" }] })).await);
    assert_eq!(qe, format!("Quote not found in event {other}: \"not in that event 4c3b\""));

    // timeline: sessions, then one session's events.
    let tl = ok(&call(&c, "timeline", json!({ "since": "2025-01-01", "limit": 3 })).await);
    let sessions = tl["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 3);
    let sid = sessions[0]["session"].as_str().expect("session").to_owned();
    let one = ok(&call(&c, "timeline", json!({ "session": sid, "limit": 500 })).await);
    assert!(!one["events"].as_array().expect("events").is_empty());
    c.cancel().await.expect("close");
}

/// `kind` filters the entries ("Entries of this kind only") and `source` the events ("Events
/// of this source only"); neither empties the other half, which only `scope` leaves out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_filters_each_apply_to_the_half_the_spec_names() {
    let dir = tempfile::tempdir().expect("tempdir");
    ingest(dir.path());
    let c = connect(dir.path(), "claude-code").await;
    let rem = ok(&call(&c, "remember", json!({ "kind": "knowledge", "text": "库存 is booked twice by the sync.", "confidence": 0.8, "sources": [{ "quote": "同步上周开始偶尔重复入库" }] })).await);
    let id = rem["entry"]["id"].as_str().expect("id").to_owned();
    let all = ok(&call(&c, "search", json!({ "query": "库存" })).await);
    let source = all["events"][0]["source"].as_str().expect("an event").to_owned();
    let knowledge = ok(&call(&c, "search", json!({ "query": "库存", "kind": "knowledge" })).await);
    assert_eq!(knowledge["entries"][0]["id"], id.as_str(), "{knowledge}");
    assert_eq!(knowledge["events"], all["events"], "kind leaves the events as they were");
    let memory = ok(&call(&c, "search", json!({ "query": "库存", "kind": "memory" })).await);
    assert_eq!((memory["entries"].as_array().map(Vec::len), &memory["events"]), (Some(0), &all["events"]), "{memory}");
    let of_source = ok(&call(&c, "search", json!({ "query": "库存", "source": source, "limit": 100 })).await);
    assert_eq!(of_source["entries"], all["entries"], "source leaves the entries as they were");
    let events = of_source["events"].as_array().expect("events");
    assert!(!events.is_empty() && events.iter().all(|e| e["source"] == source.as_str()), "{of_source}");
    let only = ok(&call(&c, "search", json!({ "query": "库存", "scope": "entries", "source": source })).await);
    assert_eq!((&only["entries"], only["events"].as_array().map(Vec::len)), (&all["entries"], Some(0)));
    c.cancel().await.expect("close");
}

/// A version of a memory file is an event of no session: `session` is null (not "").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_file_version_belongs_to_no_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    ingest(dir.path());
    let c = connect(dir.path(), "claude-code").await;
    let listed = ok(&call(&c, "search", json!({ "limit": 100 })).await);
    let imported = listed["entries"].as_array().expect("entries").iter().find(|e| e["imported"] == true).expect("an imported entry").clone();
    let got = ok(&call(&c, "get", json!({ "id": imported["id"] })).await);
    let source = &got["sources"][0];
    assert_eq!(source["kind"], "memory", "{got}");
    assert_eq!(source["session"], Value::Null, "{got}");
    let event = ok(&call(&c, "get", json!({ "id": source["id"] })).await);
    assert_eq!((&event["kind"], &event["session"]), (&json!("memory"), &Value::Null), "{event}");
    c.cancel().await.expect("close");
}

/// A Grok session rewound: the turns it abandoned leave search, the timeline and the session's
/// count; `get` still finds them, marked `"status": "superseded"`, and an entry citing one
/// shows it so; a quote only an abandoned turn says cites it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewound_turn_leaves_search_and_the_timeline_and_get_marks_it_superseded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (home, agents) = (dir.path().join("store"), dir.path().join("agents"));
    let chat = agents.join(".grok/sessions/%2Fhome%2Fdev%2Fp/sess-r/chat_history.jsonl");
    std::fs::create_dir_all(chat.parent().expect("folder")).expect("log folder");
    let user = |text: &str, i: u32| format!(r#"{{"type":"user","content":[{{"type":"text","text":"{text}"}}],"prompt_index":{i}}}"#);
    let assistant = |text: &str| format!(r#"{{"type":"assistant","content":"{text}"}}"#);
    let write = |lines: &[String]| std::fs::write(&chat, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).expect("log");
    let first = [user("how do we ship the walrus release", 0), assistant("tag walrus from master")];
    write(&[first[0].clone(), first[1].clone(), user("and the pelican build", 1), assistant("pelican builds nightly")]);
    ingest_from(&home, &agents);
    let transport = TokioChildProcess::new(server_command_reading(&home, &agents)).expect("spawn origin mcp");
    let c = ClientConfig::new(ClientCapabilities::default(), Implementation::new("grok", "1.0")).serve(transport).await.expect("initialize");
    let cited = ok(&call(&c, "remember", json!({ "kind": "knowledge", "text": "Pelican builds run nightly.", "confidence": 0.9, "sources": [{ "event_id": "grok:sess-r:4" }] })).await);
    // Rewound to before the pelican question, then asked another.
    write(&[first[0].clone(), first[1].clone(), user("and the heron build", 1), assistant("heron builds weekly")]);
    // Read by another process (the server's own reads wait 10 seconds after `remember`'s).
    ingest_from(&home, &agents);
    let found = |r: Value| r["events"].as_array().expect("events").iter().map(|e| e["id"].as_str().expect("id").to_owned()).collect::<Vec<_>>();
    assert_eq!(found(ok(&call(&c, "search", json!({ "query": "pelican", "scope": "events" })).await)), Vec::<String>::new());
    assert_eq!(found(ok(&call(&c, "search", json!({ "query": "heron", "scope": "events" })).await)), ["grok:sess-r:v2:4", "grok:sess-r:v2:3"]);
    assert_eq!(found(ok(&call(&c, "search", json!({ "query": "walrus", "scope": "events" })).await)).len(), 2);
    let one = ok(&call(&c, "timeline", json!({ "session": "sess-r", "limit": 500 })).await);
    let texts: Vec<&str> = one["events"].as_array().expect("events").iter().map(|e| e["text"].as_str().expect("text")).collect();
    assert_eq!(texts.len(), 4, "{one}");
    assert!(texts.iter().all(|t| !t.contains("pelican")), "{one}");
    let listed = ok(&call(&c, "timeline", json!({ "since": "2000-01-01", "limit": 500 })).await);
    let session = listed["sessions"].as_array().expect("sessions").iter().find(|s| s["session"] == "sess-r").expect("listed").clone();
    assert_eq!(session["events"], 4, "{session}");
    let gone = ok(&call(&c, "get", json!({ "id": "grok:sess-r:3" })).await);
    assert_eq!((&gone["text"], &gone["status"]), (&json!("and the pelican build"), &json!("superseded")), "{gone}");
    let kept = ok(&call(&c, "get", json!({ "id": "grok:sess-r:1" })).await);
    assert_eq!(kept.get("status"), None, "{kept}");
    let lines = ok(&call(&c, "sources", json!({ "id": "grok:sess-r:3" })).await);
    assert_eq!(lines[0]["status"], "superseded", "{lines}");
    let lines = ok(&call(&c, "sources", json!({ "id": "grok:sess-r:1" })).await);
    assert_eq!(lines[0].get("status"), None, "{lines}");
    let entry = ok(&call(&c, "get", json!({ "id": cited["entry"]["id"] })).await);
    assert_eq!(entry["sources"][0]["status"], "superseded", "{entry}");
    // A quote only an abandoned turn says cites it; one a current event says too cites that.
    let quoted = |quote: &str| {
        let c = &c;
        let quote = quote.to_owned();
        async move {
            let saved = ok(&call(c, "remember", json!({ "kind": "knowledge", "text": "Builds.", "confidence": 0.5, "sources": [{ "quote": quote }] })).await);
            let entry = ok(&call(c, "get", json!({ "id": saved["entry"]["id"] })).await);
            (entry["sources"][0]["id"].as_str().expect("id").to_owned(), entry["sources"][0].get("status").cloned())
        }
    };
    assert_eq!(quoted("the pelican build").await, ("grok:sess-r:3".to_owned(), Some(json!("superseded"))));
    assert_eq!(quoted("build").await, ("grok:sess-r:v2:4".to_owned(), None));
    c.cancel().await.expect("close");
}

/// A session whose messages were all forgotten but whose tool calls remain is still listed,
/// and `timeline` of it answers with no events (messages asked for) rather than "Unknown
/// session"; with `include_tools` it lists the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeline_of_a_session_with_only_tool_events_left_is_empty_not_unknown() {
    let dir = tempfile::tempdir().expect("tempdir");
    ingest(dir.path());
    let c = connect(dir.path(), "claude-code").await;
    let listed = ok(&call(&c, "timeline", json!({ "since": "2000-01-01", "limit": 500 })).await);
    let mut chosen = None;
    for s in listed["sessions"].as_array().expect("sessions") {
        let id = s["session"].as_str().expect("id").to_owned();
        let messages = ok(&call(&c, "timeline", json!({ "session": id, "limit": 500 })).await);
        let all = ok(&call(&c, "timeline", json!({ "session": id, "include_tools": true, "limit": 500 })).await);
        let (m, a) = (messages["events"].as_array().expect("events").clone(), all["events"].as_array().expect("events").len());
        if a > m.len() {
            chosen = Some((id, m, a));
            break;
        }
    }
    let (id, messages, all) = chosen.expect("a sample session with tool events");
    for m in &messages {
        ok(&call(&c, "forget", json!({ "id": m["id"], "reason": "the user asked" })).await);
    }
    let left = ok(&call(&c, "timeline", json!({ "session": id, "limit": 500 })).await);
    assert_eq!(left["session"]["session"], id.as_str(), "{left}");
    assert_eq!(left["events"].as_array().map(Vec::len), Some(0), "{left}");
    let with_tools = ok(&call(&c, "timeline", json!({ "session": id, "include_tools": true, "limit": 500 })).await);
    assert_eq!(with_tools["events"].as_array().map(Vec::len), Some(all - messages.len()), "{with_tools}");
    let nope = err(&call(&c, "timeline", json!({ "session": "no-such-session" })).await);
    assert_eq!(nope, "Unknown session no-such-session.");
    c.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_arguments_are_tool_errors_naming_the_argument() {
    let dir = tempfile::tempdir().expect("tempdir");
    ingest(dir.path());
    let c = connect(dir.path(), "codex").await;
    let huge = "x".repeat(100_000);
    let cases = [
        ("search", json!({ "limit": 0 }), "limit"),
        ("search", json!({ "limit": 101 }), "limit"),
        ("search", json!({ "limit": "ten" }), "limit"),
        ("search", json!({ "limit": 2.5 }), "limit"),
        ("search", json!({ "scope": "everything" }), "scope"),
        ("search", json!({ "kind": "opinion" }), "kind"),
        ("search", json!({ "since": "yesterday" }), "since"),
        ("search", json!({ "source": "vim" }), "source"),
        ("search", json!({ "include_tools": "yes" }), "include_tools"),
        ("search", json!({ "query": huge }), "query"),
        ("search", json!({ "colour": "blue" }), "colour"),
        ("search", json!({ "project": huge }), "project"),
        ("timeline", json!({ "session": huge }), "session"),
        // A filter by a blank name, which would match nothing, is refused: meant as no filter.
        ("search", json!({ "query": "release", "project": "" }), "project"),
        ("search", json!({ "project": " " }), "project"),
        ("timeline", json!({ "project": "" }), "project"),
        ("timeline", json!({ "session": "" }), "session"),
        ("remember", json!({ "text": "t", "confidence": 1, "project": huge, "sources": [{ "quote": "q" }] }), "project"),
        ("timeline", json!({ "limit": 501 }), "limit"),
        ("timeline", json!({ "until": "13/45/2026" }), "until"),
        ("get", json!({}), "id"),
        ("get", json!({ "id": 42 }), "id"),
        ("get", json!({ "id": "ent_xyz" }), "id"),
        ("sources", json!({ "id": "nosource:1" }), "id"),
        ("remember", json!({ "text": "t", "sources": [{ "quote": "q" }] }), "confidence"),
        ("remember", json!({ "text": "t", "confidence": 2, "sources": [{ "quote": "q" }] }), "confidence"),
        ("remember", json!({ "text": "", "confidence": 1, "sources": [{ "quote": "q" }] }), "text"),
        ("remember", json!({ "text": "t", "confidence": 1, "sources": [] }), "sources"),
        ("remember", json!({ "text": "t", "confidence": 1, "sources": "q" }), "sources"),
        ("remember", json!({ "text": "t", "confidence": 1, "sources": [{}] }), "sources[0]"),
        ("remember", json!({ "text": "t", "confidence": 1, "sources": [{ "event_id": 7 }] }), "sources[0].event_id"),
        ("remember", json!({ "text": huge, "confidence": 1, "sources": [{ "quote": "q" }] }), "text"),
        ("remember", json!({ "text": "t", "confidence": 1, "sources": [{ "quote": "q" }], "valid_from": "2030-01-01", "valid_to": "2029-01-01" }), "valid_to"),
        ("remember", json!({ "text": "t", "confidence": 1, "sources": [{ "quote": "q" }], "valid_from": "2030-01-01", "valid_to": "2030-01-01" }), "valid_to"),
        ("correct", json!({ "id": "ent_0123456789ab" }), "text"),
        ("forget", json!({ "id": "ent_0123456789ab", "reason": "" }), "reason"),
        ("forget", json!({ "id": "ent_0123456789ab" }), "reason"),
    ];
    for (tool, args, arg) in cases {
        let r = call(&c, tool, args.clone()).await;
        let msg = err(&r);
        assert!(msg.contains(&format!("`{arg}`")), "{tool} {args}: {msg} does not name `{arg}`");
    }
    // A search range whose end comes before its start holds nothing: said, naming both.
    let backwards = err(&call(&c, "search", json!({ "query": "release", "since": "2026-10-02T00:00:00Z", "until": "2026-10-01T00:00:00Z" })).await);
    assert!(backwards.starts_with("Invalid input: `until` (2026-") && backwards.contains(") is before `since` (2026-"), "{backwards}");
    // Timeline's is not a range of times: sessions started before `until`, active since `since`.
    ok(&call(&c, "timeline", json!({ "since": "2026-10-02T00:00:00Z", "until": "2026-10-01T00:00:00Z" })).await);
    let unknown = err(&call(&c, "recall", json!({})).await);
    assert!(unknown.contains("recall"), "{unknown}");
    // Queries within the length the tool takes that the index cannot search: worded after the
    // argument, saying why.
    let punctuation = err(&call(&c, "search", json!({ "query": ",.;" })).await);
    assert_eq!(punctuation, "Invalid input: `query` has no word to search for (only spaces or punctuation)");
    let long_chinese = err(&call(&c, "search", json!({ "query": "机器学习".repeat(400) })).await);
    assert!(
        long_chinese.starts_with("Invalid input: `query` asks for 1599 terms (a word is one; a run of Chinese")
            && long_chinese.ends_with("the most is 128: use fewer words"),
        "{long_chinese}"
    );
    c.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_servers_on_one_store_see_each_others_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    ingest(dir.path());
    let a = connect(dir.path(), "claude-code").await;
    let b = connect(dir.path(), "cursor").await;
    let ev = ok(&call(&a, "search", json!({ "query": "库存", "limit": 1 })).await)["events"][0]["id"].as_str().expect("id").to_owned();
    let rem = ok(&call(&a, "remember", json!({ "text": "Zebra-crossing octopus decision 51b2.", "confidence": 1, "sources": [{ "event_id": ev }] })).await);
    let id = rem["entry"]["id"].as_str().expect("id").to_owned();
    let seen = ok(&call(&b, "search", json!({ "query": "octopus 51b2", "scope": "entries" })).await);
    assert_eq!(seen["entries"][0]["id"], id.as_str(), "a remember in one server is found by search in another: {seen}");
    ok(&call(&b, "forget", json!({ "id": id, "reason": "test" })).await);
    let gone = ok(&call(&a, "search", json!({ "query": "octopus 51b2", "scope": "entries" })).await);
    assert_eq!(gone["entries"].as_array().expect("entries").len(), 0, "a forget in one hides it in all: {gone}");
    assert_eq!(err(&call(&a, "get", json!({ "id": id })).await), format!("{id} has been forgotten."));
    a.cancel().await.expect("close");
    b.cancel().await.expect("close");
}

/// A stopped process ([`stopped_lock_holder`]), ended when dropped (a test that fails leaves
/// none behind).
struct Holder(std::process::Child);

impl Holder {
    fn id(&self) -> u32 {
        self.0.id()
    }

    /// Ends it (it lets its lock go).
    fn end(mut self) {
        self.0.kill().expect("kill the holder");
        self.0.wait().expect("wait");
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A process holding the store's lock (`path`) and stopped, as Ctrl-Z stops an `origin ingest`
/// part way through: `python3`, which takes the lock, then is sent SIGSTOP.
fn stopped_lock_holder(path: &Path) -> Holder {
    let script = "import fcntl, sys, time\nf = open(sys.argv[1], 'r+')\nfcntl.flock(f, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(300)\n";
    let mut holder = Command::new("python3").args(["-c", script]).arg(path).stdout(std::process::Stdio::piped()).spawn().expect("python3");
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(holder.stdout.take().expect("stdout")), &mut line).expect("read");
    assert_eq!(line.trim(), "held");
    let holder = Holder(holder);
    assert!(Command::new("kill").args(["-STOP", &holder.id().to_string()]).status().expect("kill").success());
    holder
}

/// A call answered within `secs` (a call waiting for good fails the test rather than hangs it).
async fn call_within(c: &RunningService<RoleClient, ClientConfig>, secs: u64, tool: &str, args: Value) -> CallToolResult {
    tokio::time::timeout(std::time::Duration::from_secs(secs), call(c, tool, args)).await.unwrap_or_else(|_| panic!("{tool} not answered in {secs} s"))
}

/// While a stopped process holds the journal's lock (caught part way through an append), a
/// server's search answers from what it has read of the store, and a `remember` records
/// nothing and says the store is busy, naming the stopped process and how to let it go on;
/// while one holds the ingest lock, a `remember` does the same once it has waited 20 s for it.
/// A search waits for either lock 5 s, then, while it is still held, only tries it; a `forget`
/// of an entry another process wrote, which the server has not read, records nothing and says
/// the store is busy (not that the entry is unknown). Once the holder is gone, a `remember` is
/// recorded, and only it: every call waited for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_answers_while_a_stopped_process_holds_the_stores_locks() {
    let dir = tempfile::tempdir().expect("tempdir");
    ingest(dir.path());
    let c = connect_with(dir.path(), "claude-code", &[("ORIGIN_READ_INGEST_INTERVAL_MS", "0")]).await;
    let ev = ok(&call(&c, "search", json!({ "query": "库存", "limit": 1 })).await)["events"][0]["id"].as_str().expect("id").to_owned();
    let remember = |text: &str| json!({ "text": text, "confidence": 1, "sources": [{ "event_id": ev }] });
    for (lock, waits) in [(dir.path().join("journal").join("LOCK"), 5), (dir.path().join("ingest.lock"), 20)] {
        // An entry another process writes, which the server has not read yet.
        let written: Value = serde_json::from_str(&origin_ok(dir.path(), &["remember", &format!("Heron tally {waits}."), "--quote", "库存", "--json"])).expect("json");
        let written = written["entry"]["id"].as_str().expect("id").to_owned();
        let holder = stopped_lock_holder(&lock);
        let pid = holder.id();
        if waits == 5 {
            // A forget planned from what the server has read would call it unknown.
            let refused = err(&call_within(&c, 30, "forget", json!({ "id": written, "reason": "test" })).await);
            assert!(refused.starts_with("Nothing was recorded: the Origin store is busy ("), "{refused}");
        }
        for round in 0..2 {
            let started = std::time::Instant::now();
            let found = ok(&call_within(&c, 30, "search", json!({ "query": "库存", "limit": 1 })).await);
            assert_eq!(found["events"][0]["id"], ev.as_str(), "{found}");
            // The lock waited for once (5 s), then only tried while it is still held. (The
            // journal's may have been waited for first by the server's background checkpoint.)
            let waited = started.elapsed();
            if round == 1 {
                assert!(waited < std::time::Duration::from_secs(4), "search {round}: {waited:?}");
            } else if waits == 20 {
                assert!(waited >= std::time::Duration::from_secs(5), "search {round}: {waited:?}");
            }
        }
        let started = std::time::Instant::now();
        let refused = err(&call_within(&c, 60, "remember", remember(&format!("Walrus ledger {waits} never recorded."))).await);
        assert!(refused.starts_with("Nothing was recorded: the Origin store is busy (") && refused.ends_with("Try again in a moment."), "{refused}");
        assert!(refused.contains(&format!("process {pid} (")) && refused.contains("python3 -c import fcntl") && refused.contains(&format!("is stopped: let it go on (`kill -CONT {pid}`")), "{refused}");
        if waits == 20 {
            assert!(started.elapsed() >= std::time::Duration::from_secs(20), "waited {:?}", started.elapsed());
            assert!(refused.contains("has held the store's ingest lock") && refused.contains(" for 20 s ("), "{refused}");
        } else {
            assert!(refused.contains("has held the store's lock") && refused.contains(" for 5 s: "), "{refused}");
        }
        holder.end();
        ok(&call_within(&c, 30, "remember", remember(&format!("Walrus ledger {waits} recorded."))).await);
    }
    let entries = ok(&call(&c, "search", json!({ "query": "walrus", "scope": "entries" })).await);
    let mut texts: Vec<&str> = entries["entries"].as_array().expect("entries").iter().map(|e| e["text"].as_str().expect("text")).collect();
    texts.sort();
    assert_eq!(texts, ["Walrus ledger 20 recorded.", "Walrus ledger 5 recorded."], "{entries}");
    let herons = ok(&call(&c, "search", json!({ "query": "heron tally", "scope": "entries" })).await);
    assert_eq!(herons["entries"].as_array().expect("entries").iter().filter(|e| e["match"] == "all").count(), 2, "not forgotten: {herons}");
    c.cancel().await.expect("close");
    origin_ok(dir.path(), &["journal", "verify"]);
}

/// A server started while a stopped process holds the journal's lock answers each call, after
/// 5 s, that it could not open the store, naming that process and how to let it go on (it said
/// the store was "still opening" for as long as the process was stopped); once the process is
/// gone, the next call opens it and is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_started_while_a_stopped_process_holds_the_journals_lock_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    ingest(dir.path());
    let holder = stopped_lock_holder(&dir.path().join("journal").join("LOCK"));
    let pid = holder.id();
    let c = connect(dir.path(), "claude-code").await;
    let refused = err(&call_within(&c, 60, "search", json!({ "query": "库存", "limit": 1 })).await);
    assert!(refused.starts_with("Origin could not open its store: ") && refused.contains("has held the store's lock"), "{refused}");
    assert!(refused.contains(&format!("process {pid} (")) && refused.contains(&format!("is stopped: let it go on (`kill -CONT {pid}`")), "{refused}");
    holder.end();
    // A failed open is tried again by a call at least 1 s after it ended.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let found = ok(&call_within(&c, 60, "search", json!({ "query": "库存", "limit": 1 })).await);
    assert_eq!(found["events"].as_array().expect("events").len(), 1, "{found}");
    c.cancel().await.expect("close");
}

/// `origin` run as a command on the store at `home`, which must succeed: its standard output.
fn origin_ok(home: &Path, args: &[&str]) -> String {
    let out = Command::new(origin_bin()).arg("--home").arg(home).args(args).output().expect("run origin");
    assert!(out.status.success(), "origin {args:?}: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A server that has not looked at the journal since another process filled segments and
/// `origin journal compact` merged them (the files it had not reached are gone): it finds what
/// was written since, and its next write goes after the last record (it created the merged
/// segment's file again and wrote offsets the merged segment holds: a damaged journal that no
/// process could open).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_behind_a_compaction_reads_and_writes_past_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    ingest(home);
    // No background refresh during the test: the server looks at the journal at its calls only.
    let a = connect_with(home, "claude-code", &[("ORIGIN_MERGE_INTERVAL_MS", "600000")]).await;
    let ev = ok(&call(&a, "search", json!({ "query": "库存", "limit": 1 })).await)["events"][0]["id"].as_str().expect("id").to_owned();
    let remember = |text: &str| json!({ "text": text, "confidence": 1, "sources": [{ "event_id": ev }] });
    ok(&call(&a, "remember", remember("Before the compaction: walrus 7c1.")).await);
    // Another process writes records of a segment each; the compaction merges them.
    origin_ok(home, &["journal", "stress", "--records", "4", "--size", "30000", "--threads", "1", "--segment-size", "40000"]);
    let compacted = origin_ok(home, &["journal", "compact"]);
    let segments = || std::fs::read_dir(home.join("journal")).expect("journal").filter(|e| e.as_ref().expect("entry").path().extension().is_some_and(|x| x == "seg")).count();
    assert_eq!(segments(), 2, "the sealed segments merged into one: {compacted}");
    let b = connect(home, "cursor").await;
    ok(&call(&b, "remember", remember("After the compaction, by another server: narwhal 9d4.")).await);
    b.cancel().await.expect("close");
    let seen = ok(&call(&a, "search", json!({ "query": "narwhal 9d4", "scope": "entries" })).await);
    assert_eq!(seen["entries"].as_array().expect("entries").len(), 1, "the server behind reads past the compaction: {seen}");
    ok(&call(&a, "remember", remember("After the compaction, by the server behind: dugong 2e8.")).await);
    a.cancel().await.expect("close");
    assert_eq!(segments(), 2, "no merged segment's file created again");
    origin_ok(home, &["journal", "verify"]);
    for word in ["walrus", "narwhal", "dugong"] {
        let found = origin_ok(home, &["search", word, "--scope", "entries"]);
        assert!(found.contains(word), "{word}: {found}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_shows_one_winner_and_its_loser_is_concurrent() {
    use origin_engine::record::{Body, Citation, EntryKind, EntryVersion};
    use origin_engine::{Journal, NewRecord, Options};
    let dir = tempfile::tempdir().expect("tempdir");
    ingest(dir.path());
    let event_id = {
        let c = connect(dir.path(), "claude-code").await;
        let id = ok(&call(&c, "search", json!({ "query": "库存", "limit": 1 })).await)["events"][0]["id"].as_str().expect("id").to_owned();
        c.cancel().await.expect("close");
        id
    };
    // Two corrections of one version, as two devices or two racing processes write them.
    let v1 = EntryVersion {
        id: "ent_00000000000000a1".into(),
        root: "ent_00000000000000a1".into(),
        supersedes: None,
        kind: EntryKind::Knowledge,
        text: "Stock is booked once per import.".into(),
        confidence: 0.5,
        project: None,
        author: "codex@desktop".into(),
        created_unix_ms: 1_792_000_000_000,
        valid_from_unix_ms: None,
        valid_to_unix_ms: None,
        sources: vec![Citation { event_id: event_id.clone(), quote: None }],
        imported: false,
    };
    let a = EntryVersion { id: "ent_00000000000000b2".into(), supersedes: Some(v1.id.clone()), text: "Fork A".into(), created_unix_ms: v1.created_unix_ms + 10, ..v1.clone() };
    let b = EntryVersion { id: "ent_00000000000000c3".into(), supersedes: Some(v1.id.clone()), text: "Fork B".into(), created_unix_ms: v1.created_unix_ms + 20, ..v1.clone() };
    {
        let j = Journal::open(dir.path().join("journal"), Options::default()).expect("open");
        let recs = [Body::Remembered(v1.clone()), Body::Corrected(b.clone()), Body::Corrected(a.clone())];
        j.append(recs.iter().map(|r| NewRecord::new(r).expect("encode")).collect()).expect("append");
    }
    let c = connect(dir.path(), "claude-code").await;
    let winner = ok(&call(&c, "get", json!({ "id": b.id })).await);
    assert_eq!(winner["entry"]["status"], "active", "the later-created correction wins: {winner}");
    let loser = ok(&call(&c, "get", json!({ "id": a.id })).await);
    assert_eq!(loser["entry"]["status"], "superseded");
    assert_eq!(loser["entry"]["concurrent"], true);
    assert_eq!(loser["entry"]["superseded_by"], b.id.as_str());
    let history = winner["history"].as_array().expect("history");
    assert_eq!(history.len(), 3, "every version, forks included: {history:?}");
    assert_eq!(history[0]["id"], v1.id.as_str());
    let again = err(&call(&c, "correct", json!({ "id": a.id, "text": "x" })).await);
    assert_eq!(again, format!("Entry {} was already corrected; its current version is {}. Correct that one instead.", a.id, b.id));
    c.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_cannot_open_still_answers_the_handshake_and_each_call_says_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The journal's folder is a file: the store cannot open.
    std::fs::write(dir.path().join("journal"), b"not a folder").expect("write");
    let c = connect(dir.path(), "claude-code").await;
    assert_eq!(c.list_all_tools().await.expect("tools/list").len(), 7);
    for (tool, args) in [("search", json!({"query": "x"})), ("remember", json!({"content": "a fact", "kind": "knowledge"}))] {
        let e = err(&call(&c, tool, args).await);
        assert!(e.starts_with("Origin could not open its store: opening the store in "), "{tool}: {e}");
        assert!(e.contains("journal"), "{tool}: {e}");
    }
    c.cancel().await.expect("close");
    assert_eq!(std::fs::read(dir.path().join("journal")).expect("read"), b"not a folder", "nothing touched");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_rebuilt_its_state_saves_a_snapshot_when_its_client_leaves() {
    let dir = tempfile::tempdir().expect("tempdir");
    ingest(dir.path());
    let snapshot = dir.path().join("projections").join("state.snap");
    assert!(!snapshot.exists(), "ingest alone writes no snapshot");
    let c = connect(dir.path(), "claude-code").await;
    ok(&call(&c, "search", json!({"query": "healthz"})).await);
    c.cancel().await.expect("close");
    // The server saves on its way out (after its last ingest, 5 s at most).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !snapshot.exists() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(snapshot.exists(), "no state snapshot after the server closed");
    // The next server loads it instead of replaying the journal, with the same answers.
    let c = connect(dir.path(), "claude-code").await;
    let found = ok(&call(&c, "search", json!({"query": "healthz"})).await);
    c.cancel().await.expect("close");
    assert!(found.to_string().contains("healthz"), "{found}");
}

/// A snapshot that cannot be used (here damaged) is not trusted, and the server says why on
/// stderr, once: the projections' and the ingest cursors' alike; it answers as before.
#[test]
fn a_server_says_which_snapshots_it_did_not_use_and_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    ingest(dir.path());
    let serve = |stderr: std::process::Stdio| {
        let mut child = server_command(dir.path())
            .as_std_mut()
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("origin mcp");
        let (to, from) = (child.stdin.take().expect("stdin"), child.stdout.take().expect("stdout"));
        talk(child, to, from, |_| {});
    };
    // The first server saves both snapshots on its way out.
    serve(std::process::Stdio::null());
    let state = dir.path().join("projections").join("state.snap");
    let cursors = origin_ingest::snapshot::path_in(dir.path());
    for file in [&state, &cursors] {
        let mut bytes = std::fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let at = bytes.len() / 2;
        bytes[at] ^= 0x40;
        std::fs::write(file, bytes).expect("damaged");
    }
    let stderr_path = dir.path().join("stderr");
    serve(std::fs::File::create(&stderr_path).expect("stderr file").into());
    let said = std::fs::read_to_string(&stderr_path).expect("stderr");
    // Each said once, naming its file.
    for (what, file) in [("the projections' snapshot", &state), ("the ingest cursors' snapshot", &cursors)] {
        let what = format!("{what} {} was not used (", file.display());
        assert_eq!(said.matches(&what).count(), 1, "{what}: {said}");
    }
}

/// SIGTERM ends a session as the end of stdin does: the server saves its snapshot and exits
/// (with stdin still open, as a client that sends SIGTERM leaves it), instead of dying with
/// what it had not saved.
#[test]
fn a_server_sent_sigterm_saves_its_snapshot_and_exits() {
    a_server_sent_a_signal_saves_its_snapshot_and_exits("-TERM");
}

/// SIGINT (a terminal's Ctrl-C) ends a session as SIGTERM does (it killed the server outright,
/// without its last ingest and snapshot).
#[test]
fn a_server_sent_sigint_saves_its_snapshot_and_exits() {
    a_server_sent_a_signal_saves_its_snapshot_and_exits("-INT");
}

fn a_server_sent_a_signal_saves_its_snapshot_and_exits(signal: &str) {
    use std::io::{BufRead, Write};
    let dir = tempfile::tempdir().expect("tempdir");
    ingest(dir.path());
    let snapshot = dir.path().join("projections").join("state.snap");
    let mut child = Command::new(origin_bin())
        .arg("--home")
        .arg(dir.path())
        .args(["mcp", "--agents-home"])
        .arg(sample())
        .args(["--recorded-home", "/home/dev"])
        .env("ORIGIN_WATCH_INTERVAL_MS", "0")
        .env("ORIGIN_DEVICE", "laptop")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn origin mcp");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut send = |v: Value| writeln!(stdin, "{v}").and_then(|()| stdin.flush()).expect("write");
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}));
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "healthz"}}}));
    let mut line = String::new();
    loop {
        line.clear();
        assert!(stdout.read_line(&mut line).expect("read") > 0, "the server ended before answering");
        let v: Value = serde_json::from_str(&line).expect("a JSON line");
        if v["id"] == 2 {
            assert_ne!(v["result"]["isError"], true, "{v}");
            break;
        }
    }
    assert!(!snapshot.exists(), "saved before the session ended");
    let killed = Command::new("kill").args([signal, &child.id().to_string()]).status().expect("kill");
    assert!(killed.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "still running 30 s after {signal}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(status.success(), "{signal}: {status:?}");
    assert!(snapshot.exists(), "no state snapshot after {signal}");
    drop(stdin);
}

/// A client that stops reading (closes its end of the server's stdout) while its stdin stays
/// open ends the session: the server's next write fails, and it saves and exits (it went on,
/// idle, answering into the closed pipe until stdin closed).
#[test]
fn a_server_whose_client_stops_reading_ends_its_session() {
    use std::io::{BufRead, Read, Write};
    let dir = tempfile::tempdir().expect("tempdir");
    ingest(dir.path());
    let mut child = spawn_piped(dir.path());
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut send = |v: Value| writeln!(stdin, "{v}").and_then(|()| stdin.flush());
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})).expect("write");
    let mut line = String::new();
    assert!(stdout.read_line(&mut line).expect("read") > 0, "the server ended before answering");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).expect("write");
    drop(stdout);
    // Calls go on coming in; each answer meets the closed pipe.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut id = 2;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "still running 30 s after its client stopped reading");
        let _ = send(json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
        id += 1;
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(status.success(), "{status:?}");
    let mut said = String::new();
    child.stderr.take().expect("stderr").read_to_string(&mut said).expect("stderr");
    assert!(said.contains("the client stopped reading"), "{said}");
}

/// A store whose journal holds `records` ingested records of `per` short messages each; the
/// first record's first message says `alphaword`, the last record's last says `omegaword`.
fn store_of_many_events(home: &Path, records: usize, per: usize) {
    origin_tests::append_message_records(home, 0..records, per, |n| {
        let mut text = format!("note {n} about topic{} and build", n % 97);
        if n == 0 {
            text.push_str(" alphaword");
        }
        if n == records * per - 1 {
            text.push_str(" omegaword");
        }
        text
    });
}

fn segment_files(home: &Path) -> usize {
    std::fs::read_dir(home.join("projections").join("index"))
        .map(|d| d.filter_map(Result::ok).filter(|e| e.path().extension().is_some_and(|x| x == "segment")).count())
        .unwrap_or(0)
}

/// `ORIGIN_INDEX_COMMIT_MB` sets the memory that calls for a segment: a catch-up of 15,000
/// small events under 1 MiB writes several segments, which hold them all (and the sample
/// logs' events).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_writes_a_segment_each_time_its_memory_reaches_the_budget_set() {
    let dir = tempfile::tempdir().expect("tempdir");
    store_of_many_events(dir.path(), 3, 5_000);
    let c = connect_with(dir.path(), "claude-code", &[("ORIGIN_INDEX_COMMIT_MB", "1")]).await;
    let found = ok(&call(&c, "search", json!({"query": "omegaword"})).await);
    assert!(found.to_string().contains("omegaword"), "{found}");
    c.cancel().await.expect("close");
    let index_dir = dir.path().join("projections").join("index");
    let listed = || origin_projections::Index::open_shared(&index_dir).map(|i| (i.segments().len(), i.doc_count())).unwrap_or((0, 0));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while listed().1 < 15_000 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (segments, docs) = listed();
    assert!(docs >= 15_000, "{docs} documents");
    assert!(segments >= 2, "{segments} segment(s) under a budget of 1 MiB");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_writes_the_index_of_a_large_catch_up_on_a_thread_of_its_own_and_keeps_every_event() {
    let dir = tempfile::tempdir().expect("tempdir");
    // More events than one in-memory segment holds (50,000, as set here): the first segment is
    // written on a thread of its own while the rest are fed.
    store_of_many_events(dir.path(), 13, 5_000);
    let c = connect_with(dir.path(), "claude-code", &[("ORIGIN_INDEX_COMMIT_DOCS", "50000")]).await;
    for word in ["alphaword", "omegaword"] {
        let found = ok(&call(&c, "search", json!({"query": word})).await);
        assert!(found.to_string().contains(word), "{word}: {found}");
    }
    c.cancel().await.expect("close");
    // On its way out the server installs that segment and writes the rest: the manifest lists
    // two segments holding every event of the store (read as another process reads it).
    let index_dir = dir.path().join("projections").join("index");
    let listed = || {
        origin_projections::Index::open_shared(&index_dir).map(|i| (i.segments().len(), i.doc_count())).unwrap_or((0, 0))
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while listed().0 < 2 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (segments, docs) = listed();
    assert_eq!(segments, 2);
    assert!(docs >= 65_000, "{docs} documents");
    assert_eq!(segment_files(dir.path()), 2);
    // The next server finds every event from the segments.
    let c = connect(dir.path(), "claude-code").await;
    for word in ["alphaword", "omegaword"] {
        let found = ok(&call(&c, "search", json!({"query": word})).await);
        assert!(found.to_string().contains(word), "{word}: {found}");
    }
    let found = ok(&call(&c, "search", json!({"query": "topic7 build", "limit": 5})).await);
    assert!(found.to_string().contains("topic7"), "{found}");
    c.cancel().await.expect("close");
}

/// A commit of the text index that fails fails no call: its documents stay searchable in
/// memory, timeline answers, and once segment files can be written again the documents are
/// written. Here every segment file a commit would write is taken by a folder (a full disk
/// fails the same way; tried by hand on a 1.2 MB tmpfs, FORMAT.md's fault section).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_whose_index_cannot_be_written_answers_from_memory_and_writes_it_later() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (home, agents) = (dir.path().join("store"), dir.path().join("no-agents"));
    std::fs::create_dir_all(&agents).expect("agents folder");
    origin_tests::append_message_records(&home, 0..1, 10, |n| format!("note {n} before the folders"));
    let mut command = server_command_reading(&home, &agents);
    command.env("ORIGIN_INDEX_COMMIT_DOCS", "5").env("ORIGIN_MERGE_INTERVAL_MS", "100");
    let info = ClientConfig::new(ClientCapabilities::default(), Implementation::new("claude-code", "1.0"));
    let c = info.serve(TokioChildProcess::new(command).expect("spawn origin mcp")).await.expect("initialize");
    let index_dir = home.join("projections").join("index");
    let on_disk = || origin_projections::Index::open_shared(&index_dir).map(|i| i.doc_count()).unwrap_or(0);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while on_disk() < 10 && std::time::Instant::now() < deadline {
        ok(&call(&c, "search", json!({"query": "note"})).await);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(on_disk(), 10);
    // Every segment id a commit or merge would take next is a folder's name.
    let taken: Vec<PathBuf> = (0..2_000)
        .map(|id| index_dir.join(format!("{id:020}.segment")))
        .filter(|p| !p.exists())
        .map(|p| p.with_extension("segment.tmp"))
        .collect();
    for p in &taken {
        std::fs::create_dir(p).expect("folder");
    }
    origin_tests::append_message_records(&home, 1..3, 10, |n| format!("note {n} blockedword"));
    for round in 0..5 {
        let found = ok(&call(&c, "search", json!({"query": "blockedword", "limit": 50})).await);
        assert_eq!(found["events"].as_array().map(Vec::len), Some(20), "round {round}: {found}");
        ok(&call(&c, "timeline", json!({"limit": 5})).await);
        tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    }
    assert_eq!(on_disk(), 10, "no segment could be written");
    for p in &taken {
        std::fs::remove_dir(p).expect("folder removed");
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while on_disk() < 30 && std::time::Instant::now() < deadline {
        ok(&call(&c, "search", json!({"query": "blockedword"})).await);
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(on_disk(), 30, "the documents written once segment files could be");
    let found = ok(&call(&c, "search", json!({"query": "blockedword", "limit": 50})).await);
    assert_eq!(found["events"].as_array().map(Vec::len), Some(20), "{found}");
    c.cancel().await.expect("close");
}

/// Logs that cannot be ingested (here because the store's ingest lock is a folder) fail no
/// read: `search` and `timeline` answer from what the store holds, `remember` fails saying why,
/// and stderr says it once however often it happens; once ingest works again, stderr says so
/// and a read finds the lines written meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_whose_logs_cannot_be_ingested_answers_from_the_store_and_says_why_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (home, agents) = (dir.path().join("store"), dir.path().join("agents"));
    let log = agents.join(".claude/projects/-p/s1.jsonl");
    std::fs::create_dir_all(log.parent().expect("folder")).expect("log folder");
    std::fs::write(&log, format!("{}\n", crate::ingest_incremental::line("m1", "firstmarker said"))).expect("log");
    origin_tests::append_message_records(&home, 0..1, 10, |n| format!("note {n} stored"));
    let lock = home.join("ingest.lock");
    if lock.exists() {
        std::fs::remove_file(&lock).expect("lock file");
    }
    std::fs::create_dir(&lock).expect("a folder in the lock's place");
    let stderr_path = dir.path().join("stderr");
    let stderr = std::fs::File::create(&stderr_path).expect("stderr file");
    let mut command = server_command_reading(&home, &agents);
    command.env("ORIGIN_READ_INGEST_INTERVAL_MS", "0");
    let (transport, _) = TokioChildProcess::builder(command).stderr(stderr).spawn().expect("spawn origin mcp");
    let info = ClientConfig::new(ClientCapabilities::default(), Implementation::new("claude-code", "1.0"));
    let c = info.serve(transport).await.expect("initialize");
    for _ in 0..3 {
        let found = ok(&call(&c, "search", json!({"query": "stored", "limit": 50})).await);
        assert_eq!(found["events"].as_array().map(Vec::len), Some(10), "{found}");
        let found = ok(&call(&c, "search", json!({"query": "firstmarker"})).await);
        assert_eq!(found["events"].as_array().map(Vec::len), Some(0), "not ingested: {found}");
        ok(&call(&c, "timeline", json!({"limit": 5})).await);
    }
    let e = err(&call(&c, "remember", json!({"kind": "memory", "text": "t", "confidence": 0.5, "sources": [{"quote": "note 1 stored"}]})).await);
    assert!(e.contains("ingest.lock"), "{e}");
    let said = std::fs::read_to_string(&stderr_path).expect("stderr");
    let failures: Vec<&str> = said.lines().filter(|l| l.contains("failed") && l.contains("ingest.lock")).collect();
    assert_eq!(failures.len(), 1, "said once: {said}");
    assert!(!said.contains("works again"), "{said}");
    std::fs::remove_dir(&lock).expect("folder gone");
    let found = ok(&call(&c, "search", json!({"query": "firstmarker"})).await);
    assert_eq!(found["events"].as_array().map(Vec::len), Some(1), "ingested once it could be: {found}");
    ok(&call(&c, "remember", json!({"kind": "memory", "text": "t", "confidence": 0.5, "sources": [{"quote": "firstmarker said"}]})).await);
    let said = std::fs::read_to_string(&stderr_path).expect("stderr");
    assert_eq!(said.lines().filter(|l| l.contains("works again")).count(), 1, "{said}");
    c.cancel().await.expect("close");
}

/// An event over ingest's 50,000 characters is stored cut, with ingest's marker; the tools cut
/// it again, and their note counts every character of the event not shown: those ingest cut
/// too, and not the marker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_cut_at_ingest_notes_every_character_the_tools_do_not_show() {
    let original = format!("hugemarker {}", "abcdefghij".repeat(6_000));
    let total = original.chars().count();
    assert!(total > 50_000);
    let (_dir, home, agents) = store_of_claude_log(&format!("{}\n", crate::ingest_incremental::line("m1", &original)));
    let transport = TokioChildProcess::new(server_command_reading(&home, &agents)).expect("spawn origin mcp");
    let c = ClientConfig::new(ClientCapabilities::default(), Implementation::new("claude-code", "1.0")).serve(transport).await.expect("initialize");
    let expect = |shown: usize| format!("{}…[{} characters cut]", &original[..shown], total - shown);
    let found = ok(&call(&c, "search", json!({"query": "hugemarker"})).await);
    let event = &found["events"][0];
    assert_eq!(event["text"], expect(400).as_str(), "search");
    let got = ok(&call(&c, "get", json!({"id": event["id"]})).await);
    assert_eq!(got["text"], expect(20_000).as_str(), "get");
    let timeline = ok(&call(&c, "timeline", json!({"session": event["session"]})).await);
    assert_eq!(timeline["events"][0]["text"], expect(1_000).as_str(), "timeline");
    c.cancel().await.expect("close");
}

/// A log line whose event id is longer than the text index holds is ingested; the event is
/// left out of search (stderr says so, once) and kept in the store; the server starts and
/// every other event is found, those after it too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_the_text_index_cannot_hold_is_left_out_of_search_and_said_once() {
    let long = "u".repeat(5_000);
    let lines = [("m1", "widget before"), (long.as_str(), "widget long id"), ("m3", "widget after")];
    let (dir, home, agents) = store_of_claude_log(&lines.iter().map(|(uuid, t)| crate::ingest_incremental::line(uuid, t) + "\n").collect::<String>());
    let stderr_path = dir.path().join("stderr");
    let stderr = std::fs::File::create(&stderr_path).expect("stderr file");
    let (transport, _) = TokioChildProcess::builder(server_command_reading(&home, &agents)).stderr(stderr).spawn().expect("spawn origin mcp");
    let c = ClientConfig::new(ClientCapabilities::default(), Implementation::new("claude-code", "1.0")).serve(transport).await.expect("initialize");
    for _ in 0..2 {
        let found = ok(&call(&c, "search", json!({"query": "widget"})).await);
        let ids: Vec<&str> = found["events"].as_array().expect("events").iter().map(|e| e["id"].as_str().expect("id")).collect();
        assert_eq!(ids.len(), 2, "{found}");
        assert!(ids.iter().all(|id| id.len() < 100), "{ids:?}");
    }
    let timeline = ok(&call(&c, "timeline", json!({"session": "s1"})).await);
    let texts: Vec<&str> = timeline["events"].as_array().expect("events").iter().map(|e| e["text"].as_str().expect("text")).collect();
    assert_eq!(texts, ["widget before", "widget long id", "widget after"], "the store keeps it");
    // And reads, traces and forgets it by its id, however long.
    let id = timeline["events"][1]["id"].as_str().expect("id").to_owned();
    assert_eq!(id.len(), "claude-code:".len() + 5_000);
    assert_eq!(ok(&call(&c, "get", json!({"id": id})).await)["text"], "widget long id");
    assert_eq!(ok(&call(&c, "sources", json!({"id": id})).await)[0]["event_id"], id.as_str());
    assert_eq!(ok(&call(&c, "forget", json!({"id": id, "reason": "the user asked"})).await)["excluded_events"], 1);
    c.cancel().await.expect("close");
    let said = std::fs::read_to_string(&stderr_path).expect("stderr");
    let lines: Vec<&str> = said.lines().filter(|l| l.contains("left out of search")).collect();
    assert_eq!(lines.len(), 1, "said once: {said}");
    assert!(lines[0].contains("1 document was") && lines[0].contains("5012 bytes"), "{said}");
}

/// A tool call's input is indexed as the JSON it is: the first word of each line a Write call
/// writes is found, and bracketed in its snippet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_calls_input_is_searched_as_json() {
    let write = json!({
        "type": "assistant", "uuid": "a1", "sessionId": "s1", "cwd": "/home/dev/p", "timestamp": "2026-10-20T09:00:01.000Z",
        "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Write",
            "input": {"file_path": "/home/dev/p/a.py", "content": "import os\ndef frobnicate():\n\treturn 1\n"}}]}
    });
    let (_dir, home, agents) = store_of_claude_log(&format!("{}\n{write}\n", crate::ingest_incremental::line("m1", "write the file")));
    let transport = TokioChildProcess::new(server_command_reading(&home, &agents)).expect("spawn origin mcp");
    let c = ClientConfig::new(ClientCapabilities::default(), Implementation::new("claude-code", "1.0")).serve(transport).await.expect("initialize");
    let found = ok(&call(&c, "search", json!({"query": "def", "include_tools": true})).await);
    let events = found["events"].as_array().expect("events");
    assert_eq!(events.len(), 1, "{found}");
    assert_eq!((&events[0]["kind"], &events[0]["match"]), (&json!("tool_use"), &json!("all")), "{found}");
    assert!(events[0]["snippet"].as_str().expect("snippet").contains("os\\n[def] frobnicate"), "{found}");
    let found = ok(&call(&c, "search", json!({"query": "\"return 1\"", "include_tools": true})).await);
    assert_eq!(found["events"].as_array().map(Vec::len), Some(1), "{found}");
    c.cancel().await.expect("close");
}

/// Clients start the server with pipes, which it reads and writes without blocking (the
/// runtime's poller wakes it). Its input and output may also be files (or a terminal): then it
/// reads and writes them through tokio's blocking `stdin` and `stdout`, and answers the same.
#[test]
fn a_server_whose_input_and_output_are_files_answers_as_over_pipes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    ingest(&home);
    // The handshake, the tool list and a search, then a call whose arguments are refused.
    let refused = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "search", "arguments": []}});
    let input = dir.path().join("in.jsonl");
    std::fs::write(&input, format!("{}{refused}\n", handshake_requests())).expect("requests");
    let output = dir.path().join("out.jsonl");
    let status = server_command(&home)
        .as_std_mut()
        .stdin(std::fs::File::open(&input).expect("input"))
        .stdout(std::fs::File::create(&output).expect("output"))
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("origin mcp");
    let status = exit_within(status, 60);
    assert!(status.success(), "{status}");
    let answers: Vec<Value> =
        std::fs::read_to_string(&output).expect("output").lines().map(|l| serde_json::from_str(l).expect("one JSON-RPC message per line")).collect();
    let by_id = |id: u64| answers.iter().find(|a| a["id"] == json!(id)).unwrap_or_else(|| panic!("no answer to request {id}: {answers:?}"));
    assert_eq!(by_id(1)["result"]["serverInfo"]["name"], json!("origin"));
    let tools: Vec<&str> = by_id(2)["result"]["tools"].as_array().expect("tools").iter().map(|t| t["name"].as_str().expect("name")).collect();
    assert_eq!(tools.len(), 7, "{tools:?}");
    let search = &by_id(3)["result"];
    assert_ne!(search["isError"], json!(true), "{search}");
    let found: Value = serde_json::from_str(search["content"][0]["text"].as_str().expect("text")).expect("JSON text");
    assert!(!found["events"].as_array().expect("events").is_empty(), "{found}");
    let refused = &by_id(4)["result"];
    assert_eq!(refused["isError"], json!(true), "{refused}");
}

/// The requests of [`talk`]: the handshake, the tool list, a search.
fn handshake_requests() -> String {
    [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1.0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "库存", "limit": 5}}}),
    ]
    .iter()
    .map(|r| format!("{r}\n"))
    .collect()
}

/// Sends [`handshake_requests`] on `to`, reads answers from `from` until requests 1 to 3 are
/// answered (lines that are not JSON, such as the server's own messages on a shared stderr, are
/// passed over), then closes `to`; checks the answers and that the server exits within 60 s.
fn talk(mut child: std::process::Child, mut to: impl std::io::Write, from: impl std::io::Read + Send + 'static, close: impl FnOnce(&mut dyn std::io::Write)) {
    use std::io::BufRead;
    to.write_all(handshake_requests().as_bytes()).expect("requests");
    to.flush().expect("flush");
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(from).lines() {
            let Ok(line) = line else { return };
            if let Ok(v) = serde_json::from_str::<Value>(&line)
                && tx.send(v).is_err()
            {
                return;
            }
        }
    });
    let mut answers: Vec<Value> = Vec::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !(1..=3).all(|id| answers.iter().any(|a| a["id"] == json!(id))) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(v) => answers.push(v),
            Err(e) => {
                let _ = child.kill();
                panic!("no answer to every request within 60 s ({e}): {answers:?}");
            }
        }
    }
    close(&mut to);
    drop(to);
    let by_id = |id: u64| answers.iter().find(|a| a["id"] == json!(id)).expect("answered");
    assert_eq!(by_id(1)["result"]["serverInfo"]["name"], json!("origin"));
    assert_eq!(by_id(2)["result"]["tools"].as_array().expect("tools").len(), 7);
    let found: Value = serde_json::from_str(by_id(3)["result"]["content"][0]["text"].as_str().expect("text")).expect("JSON");
    assert!(!found["events"].as_array().expect("events").is_empty(), "{found}");
    let status = exit_within(child, 60);
    assert!(status.success(), "{status}");
}

/// The child's exit status, once it exits; killed, and a failure, if that takes over `secs`.
fn exit_within(mut child: std::process::Child, secs: u64) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("the server did not exit within {secs} s of the end of its input");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Node's child processes (Claude Code, Cursor, VS Code) get socket pairs for stdio, not pipes:
/// the server polls those too.
#[test]
fn a_server_on_a_socket_pair_answers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    ingest(&home);
    use rustix::fs::{OFlags, fcntl_getfl};
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().expect("socket pair");
    let theirs_kept = theirs.try_clone().expect("clone");
    let child = server_command(&home)
        .as_std_mut()
        .stdin(std::os::fd::OwnedFd::from(theirs.try_clone().expect("clone")))
        .stdout(std::os::fd::OwnedFd::from(theirs))
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("origin mcp");
    let from = ours.try_clone().expect("clone");
    talk(child, ours.try_clone().expect("clone"), from, |_| {
        // While the server runs, its end (the same socket as `theirs_kept`) is polled.
        assert!(fcntl_getfl(&theirs_kept).expect("flags").contains(OFlags::NONBLOCK), "the socket is read through the poller");
        ours.shutdown(std::net::Shutdown::Write).expect("shutdown");
    });
    assert!(!fcntl_getfl(&theirs_kept).expect("flags").contains(OFlags::NONBLOCK), "the socket left non-blocking");
}

/// On pipes, stdin is read without blocking while the server runs, and is in blocking mode
/// again when it has exited (another holder of the pipe expects it). Output shares its pipe
/// with stderr here, so it stays on the blocking path (a message to stderr must never meet a
/// non-blocking pipe), and the server still answers.
#[test]
fn a_server_on_pipes_leaves_them_blocking_and_answers_with_stderr_on_its_output() {
    use rustix::fs::{OFlags, fcntl_getfl};
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    ingest(&home);
    let (in_read, in_write) = std::io::pipe().expect("pipe");
    let (out_read, out_write) = std::io::pipe().expect("pipe");
    let in_read_kept = in_read.try_clone().expect("clone");
    let out_write_kept = out_write.try_clone().expect("clone");
    let child = server_command(&home)
        .as_std_mut()
        .stdin(in_read)
        .stdout(out_write.try_clone().expect("clone"))
        .stderr(out_write)
        .spawn()
        .expect("origin mcp");
    // While the server runs, its input (the same pipe as ours) is non-blocking, its output not.
    talk(child, in_write, out_read, |_| {
        assert!(fcntl_getfl(&in_read_kept).expect("flags").contains(OFlags::NONBLOCK), "stdin is read through the poller");
        assert!(!fcntl_getfl(&out_write_kept).expect("flags").contains(OFlags::NONBLOCK), "stdout shares stderr: blocking");
    });
    assert!(!fcntl_getfl(&in_read_kept).expect("flags").contains(OFlags::NONBLOCK), "stdin left non-blocking");
    assert!(!fcntl_getfl(&out_write_kept).expect("flags").contains(OFlags::NONBLOCK), "stdout left non-blocking");
}

/// A client's last line without its end (written before it closes its output) is answered.
#[test]
fn the_last_line_without_its_end_is_answered() {
    use std::io::Write;
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    ingest(&home);
    let mut child = spawn_piped(&home);
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(handshake_requests().trim_end().as_bytes()).expect("requests");
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    let answered: Vec<Value> = String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let search = answered.iter().find(|a| a["id"] == json!(3)).unwrap_or_else(|| panic!("the last call answered: {answered:?}\n{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(search["result"]["isError"], json!(false), "{search}");
}

/// Lines a client may send that the protocol layer would drop without an answer or refuse as a
/// protocol error, written to the real server as bytes: each is answered as the spec wants (a
/// tool error, or the call itself), and the session goes on. A lone half of a surrogate pair
/// (a JavaScript string cut inside an emoji), a number no JSON value holds, a call without a
/// name, a call longer than the server reads (or longer once its bytes that are not UTF-8 are
/// read as U+FFFD), and a call that is not JSON but names its id;
/// a line that is not JSON and names no request is said on stderr.
#[test]
fn lines_the_protocol_would_drop_are_answered() {
    use std::io::{BufRead, Write};
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = spawn_piped(dir.path());
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                if tx.send(v).is_err() {
                    return;
                }
            }
        }
    });
    let mut stdin = child.stdin.take().expect("stdin");
    let mut send = |line: &[u8]| {
        stdin.write_all(line).expect("write");
        stdin.write_all(b"\n").expect("write");
        stdin.flush().expect("flush");
    };
    send(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#);
    send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    send(br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search","arguments":{"query":"kiwi \ud83d"}}}"#);
    send(br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search","arguments":{"query":"kiwi","limit":1e400}}}"#);
    send(br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"arguments":{"query":"kiwi"}}}"#);
    let mut long = br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"remember","arguments":{"text":""#.to_vec();
    long.resize(long.len() + (16 << 20) + 10, b'a');
    long.extend_from_slice(br#"","confidence":1,"sources":[{"quote":"q"}]}}}"#);
    send(&long);
    send(br#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"search","arguments":{"query":"kiwi"}}}"#);
    // As the TypeScript SDK writes a request: its id last.
    let mut long = br#"{"method":"tools/call","params":{"name":"remember","arguments":{"text":""#.to_vec();
    long.resize(long.len() + (16 << 20) + 10, b'a');
    long.extend_from_slice(br#"","confidence":1,"sources":[{"quote":"q"}]}},"jsonrpc":"2.0","id":7}"#);
    send(&long);
    // The same with its id across the most the server reads (16 MiB less 64 KiB, newline
    // included), and a call just within it, which the protocol layer (16 MiB) takes: the
    // server reads nothing it cannot answer.
    let head = br#"{"method":"tools/call","params":{"name":"remember","arguments":{"text":""#;
    let read_max = (16 << 20) - (64 << 10);
    for (id, length) in [(8, read_max + 3), (9, read_max - 1)] {
        let tail = format!(r#"","confidence":1,"sources":[{{"quote":"q"}}]}}}},"jsonrpc":"2.0","id":{id}}}"#);
        let mut long = head.to_vec();
        long.resize(length - tail.len(), b'a');
        long.extend_from_slice(tail.as_bytes());
        send(&long);
    }
    // Bytes that are not UTF-8 in an argument: read as U+FFFD, the call goes through.
    send(b"{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"tools/call\",\"params\":{\"name\":\"search\",\"arguments\":{\"query\":\"kiwi \xff\xfe\"}}}");
    // A line that is not JSON and names no request: said on stderr (eight at most), not answered.
    for _ in 0..10 {
        send(b"hello, server");
    }
    // A call that is not JSON (its last brace missing) but names its id: answered.
    send(br#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"search","arguments":{"query":"kiwi"}}"#);
    // A call of 6 MiB of bytes that are not UTF-8, 18 MiB once each is read as U+FFFD: answered.
    let mut grown = br#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"search","arguments":{"query":""#.to_vec();
    grown.resize(grown.len() + (6 << 20), 0xff);
    grown.extend_from_slice(br#""}}}"#);
    send(&grown);
    // A call longer than the server reads after a byte order mark: answered.
    let mut long = b"\xef\xbb\xbf".to_vec();
    long.extend_from_slice(br#"{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"remember","arguments":{"text":""#);
    long.resize(long.len() + (16 << 20) + 10, b'a');
    long.extend_from_slice(br#"","confidence":1,"sources":[{"quote":"q"}]}}}"#);
    send(&long);
    let mut answers = std::collections::BTreeMap::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while answers.len() < 13 {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let Ok(v) = rx.recv_timeout(left) else { break };
        if let Some(id) = v["id"].as_i64() {
            answers.insert(id, v);
        }
    }
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(answers.keys().copied().collect::<Vec<_>>(), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13], "every line answered: {answers:?}\n{stderr}");
    let result = |id: i64| -> (bool, String) {
        let r = &answers[&id]["result"];
        assert!(r.is_object(), "{id}: a tool result, not a protocol error: {}", answers[&id]);
        (r["isError"] == true, r["content"][0]["text"].as_str().unwrap_or_default().to_owned())
    };
    assert_eq!(result(2).0, false, "the query with its half surrogate read as U+FFFD: {:?}", result(2));
    assert_eq!(result(10).0, false, "the query with bytes not UTF-8 read as U+FFFD: {:?}", result(10));
    let (error, text) = result(3);
    assert!(error && text.contains("`limit`"), "{text}");
    let (error, text) = result(4);
    assert!(error && text.contains("`name` is missing"), "{text}");
    let (error, text) = result(5);
    assert!(error && text.contains("longer than the 16 MiB"), "{text}");
    assert_eq!(result(6).0, false, "the session goes on: {:?}", result(6));
    for id in [7, 8, 13] {
        let (error, text) = result(id);
        assert!(error && text.contains("longer than the 16 MiB"), "{id}: {text}");
    }
    let (error, text) = result(9);
    assert!(error && text.contains("`text` is longer than"), "9: {text}");
    assert!(stderr.contains("longer than 16 MiB was passed over"), "{stderr}");
    let (error, text) = result(11);
    assert!(error && text.contains("the call is not JSON Origin can read (EOF while parsing an object"), "11: {text}");
    let (error, text) = result(12);
    assert!(error && text.contains("once its bytes that are not UTF-8 are read as U+FFFD"), "12: {text}");
    assert_eq!(stderr.matches("a message that is not JSON came in").count(), 8, "{stderr}");
    assert_eq!(stderr.matches("later ones are not said").count(), 1, "{stderr}");
    assert!(stderr.contains("came in (expected value at line 1 column 1); it names no call Origin can answer"), "{stderr}");
}

/// An entry cites each event once (the spec: `sources` gives one item per cited event): the
/// same event cited by id, by id with a quote and by a quote alone is one source, with the
/// quote; a correction citing it again with another quote keeps one, with the new quote.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_cites_each_event_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    ingest(dir.path());
    let c = connect(dir.path(), "claude-code").await;
    let found = ok(&call(&c, "search", json!({ "query": "库存", "limit": 1 })).await);
    let event = &found["events"][0];
    let event_id = event["id"].as_str().expect("id").to_owned();
    let text = event["text"].as_str().expect("text");
    let quote: String = text.chars().take(6).collect();
    let other: String = text.chars().skip(2).take(6).collect();
    let sources = json!([{ "event_id": event_id }, { "event_id": event_id, "quote": quote }, { "quote": quote }, { "event_id": event_id }]);
    let entry = ok(&call(&c, "remember", json!({ "text": "Stock is booked once per import.", "confidence": 0.9, "sources": sources })).await);
    let id = entry["entry"]["id"].as_str().expect("entry id").to_owned();
    let got = ok(&call(&c, "get", json!({ "id": id })).await);
    let cited = got["sources"].as_array().expect("sources");
    assert_eq!(cited.len(), 1, "{got}");
    assert_eq!((cited[0]["id"].as_str(), cited[0]["quote"].as_str()), (Some(event_id.as_str()), Some(quote.as_str())), "{got}");
    let traced = ok(&call(&c, "sources", json!({ "id": id })).await);
    assert_eq!(traced.as_array().map(Vec::len), Some(1), "{traced}");
    let corrected = ok(&call(&c, "correct", json!({ "id": id, "text": "Stock is booked once per import run.", "sources": [{ "event_id": event_id, "quote": other }] })).await);
    let new_id = corrected["entry"]["id"].as_str().expect("new id").to_owned();
    let traced = ok(&call(&c, "sources", json!({ "id": new_id })).await);
    let items = traced.as_array().expect("list");
    assert_eq!(items.len(), 1, "{traced}");
    assert_eq!((items[0]["event_id"].as_str(), items[0]["quote"].as_str()), (Some(event_id.as_str()), Some(other.as_str())), "{traced}");
    c.cancel().await.expect("close");
}

/// A server whose standard output cannot be written (a full disk: `/dev/full`) says what it
/// was doing and the I/O error, not the protocol layer's internal type names, and exits 3.
#[test]
fn a_server_that_cannot_write_its_answers_says_so_plainly() {
    use std::io::Write;
    let dir = tempfile::tempdir().expect("tempdir");
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
    let mut cmd = server_command(dir.path()).into_std();
    let mut child = cmd.stdin(std::process::Stdio::piped()).stdout(full).stderr(std::process::Stdio::piped()).spawn().expect("spawn origin mcp");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"raw\",\"version\":\"1\"}}}\n")
        .expect("write");
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("origin: the connection to the client failed when sending initialize response (No space left on device"), "{stderr}");
    assert!(!stderr.contains("rmcp::"), "{stderr}");
}

/// A second `initialize` in a session is refused with an error, and the session's agent stays
/// the first's: a `remember` after it is signed by the first client (the second was taken, and
/// changed who later writes were signed by).
#[test]
fn a_second_initialize_is_refused_and_the_first_client_signs() {
    use std::io::{BufRead, Write};
    let dir = tempfile::tempdir().expect("tempdir");
    ingest(dir.path());
    let mut child = spawn_piped(dir.path());
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut ask = |v: Value| -> Value {
        writeln!(stdin, "{v}").and_then(|()| stdin.flush()).expect("write");
        if v.get("id").is_none() {
            return Value::Null;
        }
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).expect("read") > 0, "the server ended before answering {v}");
        serde_json::from_str(&line).expect("json")
    };
    let init = |id: u64, name: &str| json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": name, "version": "1"}}});
    let first = ask(init(1, "first-agent"));
    assert!(first["result"]["serverInfo"]["name"] == "origin", "{first}");
    ask(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let second = ask(init(2, "second-agent"));
    assert_eq!(second["id"], 2, "{second}");
    assert!(second["error"]["message"].as_str().is_some_and(|m| m.contains("initialized already")), "{second}");
    let remembered = ask(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "remember", "arguments": {"text": "The server has no health route yet.", "confidence": 0.9, "sources": [{"quote": "No health or readiness route exists"}]}}}));
    let entry: Value = serde_json::from_str(remembered["result"]["content"][0]["text"].as_str().expect("text")).unwrap_or_else(|e| panic!("{e}: {remembered}"));
    assert_eq!(entry["entry"]["author"], "first-agent@laptop", "{entry}");
    drop(stdin);
    assert!(child.wait().expect("wait").success());
}
