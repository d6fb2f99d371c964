//! Golden and focused tests of the Claude Code adapter over the project's own fixture home
//! (`tests/fixtures/agent-home`, standing for `/home/dev`).

use std::path::PathBuf;
use std::sync::LazyLock;

use proptest::prelude::*;
use serde_json::{json, Value};

use super::{Claude, PENDING_SUMMARIES};
use crate::adapter::{golden, Adapter, FileFormat, Line, LogFile, MemoryFile, MemoryScope, Project, State};
use crate::source::{Homes, Source};

const MAIN: &str = "-home-dev-demo-app/4e1d7a2c-9b3f-4c6e-8d21-7f0a5b3c9e12.jsonl";
const SUBAGENT: &str = "-home-dev-demo-app/4e1d7a2c-9b3f-4c6e-8d21-7f0a5b3c9e12/subagents/agent-b7e2d41.jsonl";
const COMPACTED: &str = "-home-dev-demo-app/8c3f1b6e-2d7a-4e90-b5c4-6a9d0e1f2b37.jsonl";
const LEDGER: &str = "-home-dev-src-ledger-sync/d29a6c41-5e8b-4f13-a7d0-3b2c1e9f8a56.jsonl";

fn homes() -> Homes {
    Homes::under(&golden::fixture_home())
}

/// The discovered log file whose mirror is `mirror`.
fn log_file(mirror: &str) -> LogFile {
    let (files, problems) = Claude.discover(&homes());
    assert!(problems.is_empty(), "{problems:?}");
    files.into_iter().find(|f| f.mirror == mirror).unwrap_or_else(|| panic!("{mirror} not discovered"))
}

/// The file's lines split on `\n` (the last element is the pending tail, possibly empty).
fn raw_lines(file: &LogFile) -> Vec<Vec<u8>> {
    let bytes = std::fs::read(&file.path).expect("read fixture");
    bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect()
}

fn raw_json(file: &LogFile, line_no: usize) -> Value {
    serde_json::from_slice(&raw_lines(file)[line_no - 1]).expect("fixture line is JSON")
}

fn events(run: &Value) -> &Vec<Value> {
    run["events"].as_array().expect("events")
}

fn sessions(run: &Value) -> &Vec<Value> {
    run["sessions"].as_array().expect("sessions")
}

fn first_prompts(run: &Value) -> Vec<&str> {
    sessions(run).iter().filter_map(|s| s["first_prompt"].as_str()).collect()
}

fn titles(run: &Value) -> Vec<&str> {
    sessions(run).iter().filter_map(|s| s["title"].as_str()).collect()
}

fn event<'a>(run: &'a Value, id: &str) -> &'a Value {
    events(run).iter().find(|e| e["id"] == id).unwrap_or_else(|| panic!("no event {id}"))
}

#[test]
fn claude_discover_finds_sessions_and_subagent_transcripts() {
    let (files, problems) = Claude.discover(&homes());
    assert!(problems.is_empty(), "{problems:?}");
    let mirrors: Vec<&str> = files.iter().map(|f| f.mirror.as_str()).collect();
    // Sorted by path components (so a session's folder comes before its own file); the sub-agent's `.meta.json`, the memory folder and CLAUDE.md are not logs.
    assert_eq!(mirrors, [SUBAGENT, MAIN, COMPACTED, LEDGER]);
    let claude_dir = homes().claude;
    for f in &files {
        assert_eq!(f.source, Source::ClaudeCode);
        assert_eq!(f.format, FileFormat::Lines);
        assert_eq!(f.path, claude_dir.join("projects").join(&f.mirror));
        assert_eq!(f.key, f.path.to_string_lossy());
    }
}

#[test]
fn claude_discover_of_a_home_without_claude_is_empty() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (files, problems) = Claude.discover(&Homes::under(dir.path()));
    assert!(files.is_empty() && problems.is_empty());
}

#[test]
fn claude_golden_demo_app_session() {
    golden::check("claude-demo-app-session.json", &golden::run(&Claude, &log_file(MAIN)));
}

#[test]
fn claude_golden_demo_app_subagent() {
    golden::check("claude-demo-app-subagent.json", &golden::run(&Claude, &log_file(SUBAGENT)));
}

#[test]
fn claude_golden_demo_app_compacted_session() {
    golden::check("claude-demo-app-compacted.json", &golden::run(&Claude, &log_file(COMPACTED)));
}

#[test]
fn claude_golden_ledger_sync_session() {
    golden::check("claude-ledger-sync-session.json", &golden::run(&Claude, &log_file(LEDGER)));
}

#[test]
fn claude_big_tool_result_is_one_event_with_its_full_text() {
    let file = log_file(MAIN);
    let run = golden::run(&Claude, &file);
    let big: Vec<&Value> = events(&run).iter().filter(|e| e["text"].as_str().is_some_and(|t| t.chars().count() > 25_000)).collect();
    assert_eq!(big.len(), 1, "exactly one event holds the big tool result");
    let raw = raw_json(&file, 11);
    let want = raw["message"]["content"][0]["content"].as_str().expect("tool_result content");
    assert!(want.chars().count() > 25_000);
    let e = big[0];
    assert_eq!(e["id"], format!("claude-code:{}", raw["uuid"].as_str().expect("uuid")));
    assert_eq!(e["kind"], "ToolResult");
    assert_eq!(e["role"], "User");
    assert_eq!(e["line"], 11);
    assert_eq!(e["text_cut_chars"], 0);
    assert_eq!(e["text"].as_str(), Some(want));
}

#[test]
fn claude_split_response_lines_keep_their_own_ids_kinds_and_roles() {
    let run = golden::run(&Claude, &log_file(MAIN));
    // Lines 4-6 are one API response (one message.id): thinking, text, tool_use.
    let want = [
        ("claude-code:dbb0a6b7-43eb-5296-beb8-fdf6c67f0cf1", 4, "Meta"),
        ("claude-code:ab9b4894-52c5-5ec8-aaa8-5f54665f9ef5", 5, "Message"),
        ("claude-code:db3035a2-87e6-5171-bfff-ed7fae04e22d", 6, "ToolUse"),
    ];
    for (id, line, kind) in want {
        let e = event(&run, id);
        assert_eq!((e["line"].as_u64(), e["kind"].as_str(), e["role"].as_str()), (Some(line), Some(kind), Some("Assistant")), "{id}");
    }
    let read = event(&run, "claude-code:db3035a2-87e6-5171-bfff-ed7fae04e22d");
    assert_eq!(read["text"], r#"Read {"file_path":"/home/dev/demo-app/src/server/index.ts"}"#);
    assert_eq!(read["time_unix_ms"], 1_792_486_804_300_i64); // 2026-10-20T09:00:04.300Z
    assert_eq!(read["git_branch"], "feat/healthz");
    assert_eq!(read["agent_version"], "2.1.281");
    assert_eq!(read["project"], "demo-app");
    // Every conversation line has its own uuid, so ids never repeat.
    let mut ids: Vec<&str> = events(&run).iter().map(|e| e["id"].as_str().expect("id")).collect();
    let count = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), count);
}

#[test]
fn claude_japanese_and_emoji_text_is_kept_whole() {
    let run = golden::run(&Claude, &log_file(MAIN));
    let prompt = event(&run, "claude-code:b23ccd48-f021-5d56-b411-6dd8b1cc8cc6");
    assert_eq!((prompt["role"].as_str(), prompt["kind"].as_str()), (Some("User"), Some("Message")));
    assert_eq!(prompt["text"], "ありがとう！🙏 redis が落ちている時、503 のレスポンスに理由も入れてくれる？");
    let reply = event(&run, "claude-code:edbee320-5fec-5157-83a8-c08e51eb36d2");
    assert!(reply["text"].as_str().is_some_and(|t| t.starts_with("追加しました ✅")));
    // The second prompt is not the session's first prompt.
    assert_eq!(first_prompts(&run), ["Add a GET /healthz endpoint that pings redis and returns 503 when redis is down. Keep the server tests green."]);
}

#[test]
fn claude_torn_last_line_is_pending_not_malformed() {
    let file = log_file(COMPACTED);
    let tail = raw_lines(&file).pop().expect("tail");
    assert!(!tail.is_empty(), "the fixture ends without a newline");
    let run = golden::run(&Claude, &file);
    assert_eq!(run["pending_bytes"], tail.len());
    assert_eq!(run["lines"], 17);
    assert!(run["malformed"].as_array().expect("malformed").iter().all(|m| m["line"] != 18));
    // Parsed now, the fragment would be lost as malformed; pending, it is read whole once the
    // agent finishes the line.
    let mut state = State::new();
    assert!(matches!(Claude.parse_line(&file, &mut state, &tail, 18), Line::Malformed(_)), "a torn fragment is not valid JSON");
}

#[test]
fn claude_malformed_line_is_counted_and_parsing_goes_on() {
    let run = golden::run(&Claude, &log_file(COMPACTED));
    let malformed = run["malformed"].as_array().expect("malformed");
    assert_eq!(malformed.len(), 1);
    assert_eq!(malformed[0]["line"], 7);
    assert!(malformed[0]["reason"].as_str().is_some_and(|r| r.starts_with("invalid JSON")));
    // Lines after it still give events.
    assert!(events(&run).iter().any(|e| e["line"] == 8));
    assert_eq!(events(&run).last().expect("events")["line"], 17);
}

#[test]
fn claude_unknown_and_session_state_lines_give_no_events_and_are_not_malformed() {
    let file = log_file(COMPACTED);
    let lines = raw_lines(&file);
    let mut state = State::new();
    for line_no in [1, 12] {
        // `mode` and an unknown `workflow-checkpoint` type.
        match Claude.parse_line(&file, &mut state, &lines[line_no - 1], line_no as u64) {
            Line::Parsed(p) => assert!(p.events.is_empty() && p.sessions.is_empty(), "line {line_no}"),
            Line::Malformed(r) => panic!("line {line_no} malformed: {r}"),
        }
    }
}

#[test]
fn claude_compaction_and_command_wrappers_are_meta_and_never_the_first_prompt() {
    let file = log_file(COMPACTED);
    let run = golden::run(&Claude, &file);
    let kind_of = |line: u64| -> Vec<(&str, &str)> {
        events(&run)
            .iter()
            .filter(|e| e["line"] == line)
            .map(|e| (e["role"].as_str().expect("role"), e["kind"].as_str().expect("kind")))
            .collect()
    };
    assert_eq!(kind_of(8), [("User", "Meta")], "/compact command wrapper");
    assert_eq!(kind_of(9), [("System", "System")], "compact_boundary");
    assert_eq!(kind_of(10), [("User", "Meta")], "isCompactSummary");
    assert_eq!(kind_of(11), [("User", "Meta")], "isMeta local-command output");
    assert_eq!(kind_of(5), [("User", "Message")], "queued_command typed mid-turn");
    assert_eq!(event(&run, "claude-code:84896186-57b8-5890-b0f2-d8166cdc8fff")["text"], "and add it to .env.example too");
    assert_eq!(first_prompts(&run), ["Make the health check timeout configurable via HEALTH_TIMEOUT_MS (default 500)."]);

    // Read from the /compact line on with a fresh state (as if the file began there): the first
    // prompt is the next thing the person typed, not the wrapper, summary or command output.
    let lines = raw_lines(&file);
    let mut state = State::new();
    let mut prompts = Vec::new();
    for line_no in 8..=17 {
        if let Line::Parsed(p) = Claude.parse_line(&file, &mut state, &lines[line_no - 1], line_no as u64) {
            prompts.extend(p.sessions.into_iter().filter_map(|s| s.first_prompt));
        }
    }
    assert_eq!(prompts, ["ok, now the README part"]);
}

#[test]
fn claude_version_is_taken_per_line_across_an_upgrade() {
    let run = golden::run(&Claude, &log_file(COMPACTED));
    let version_at = |line: u64| event_at(&run, line)["agent_version"].as_str().map(str::to_owned);
    assert_eq!(version_at(6).as_deref(), Some("2.1.281"));
    assert_eq!(version_at(9).as_deref(), Some("2.1.283"));
    assert_eq!(version_at(17).as_deref(), Some("2.1.283"));
}

fn event_at(run: &Value, line: u64) -> &Value {
    events(run).iter().find(|e| e["line"] == line).unwrap_or_else(|| panic!("no event on line {line}"))
}

#[test]
fn claude_sidechain_lines_form_a_sub_agent_session_whose_prompt_is_not_the_persons() {
    let run = golden::run(&Claude, &log_file(SUBAGENT));
    // The parent agent's prompt is a message of the sub-agent's own session ...
    let first = event_at(&run, 1);
    assert_eq!((first["role"].as_str(), first["kind"].as_str()), (Some("User"), Some("Message")));
    let child = "4e1d7a2c-9b3f-4c6e-8d21-7f0a5b3c9e12/agent-b7e2d41";
    assert_eq!(first["session"], child);
    assert!(first["text"].as_str().is_some_and(|t| t.starts_with("Search src/server")));
    assert!(events(&run).iter().all(|e| e["session"] == child));
    // ... which names its parent, and whose first prompt it is ...
    let s = sessions(&run);
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!(s[0]["parent"], "4e1d7a2c-9b3f-4c6e-8d21-7f0a5b3c9e12");
    assert!(s[0]["first_prompt"].as_str().is_some_and(|p| p.starts_with("Search src/server")));
    // ... not the person's session's.
    let main = golden::run(&Claude, &log_file(MAIN));
    assert!(first_prompts(&main).iter().all(|p| !p.starts_with("Search src/server")));
}

#[test]
fn claude_title_priority_is_custom_then_ai_then_summary() {
    let run = golden::run(&Claude, &log_file(LEDGER));
    // The legacy summary (line 1, no sessionId) names the session once the session is known;
    // an ai-title then wins over it, a custom title over both, and a later ai-title changes
    // nothing.
    assert_eq!(titles(&run), ["Idempotent ledger import", "Make ledger import idempotent", "账本导入幂等", "账本导入幂等"]);
    assert!(sessions(&run).iter().all(|s| s["session"] == "d29a6c41-5e8b-4f13-a7d0-3b2c1e9f8a56"));
    assert_eq!(first_prompts(&run), ["请把 import_batch 改成幂等的：同一个 batch_id 重复导入时直接跳过，并补上单元测试。"]);
    let project: Vec<&Value> = sessions(&run).iter().map(|s| &s["project"]).filter(|p| !p.is_null()).collect();
    assert_eq!(project, [&json!("ledger_sync")], "the project comes from cwd, not from the escaped folder name");
}

/// A legacy summary titles the session once the line its `leafUuid` names is read (here line 17
/// of the file, the summary being line 1), and not before.
#[test]
fn claude_summary_titles_the_session_once_its_leaf_is_read() {
    let file = log_file(LEDGER);
    let lines = raw_lines(&file);
    let mut state = State::new();
    let mut titles = Vec::new();
    for line_no in 1..=17 {
        if let Line::Parsed(p) = Claude.parse_line(&file, &mut state, &lines[line_no - 1], line_no as u64) {
            titles.extend(p.sessions.into_iter().filter_map(|s| s.title.map(|t| (line_no, s.session, t))));
        }
    }
    assert_eq!(titles, [(17, "d29a6c41-5e8b-4f13-a7d0-3b2c1e9f8a56".to_owned(), "Idempotent ledger import".to_owned())]);
}

/// Legacy summaries title a session only when their leaf is in its file, read before or after
/// them; of those, the last in the file; a file resumed from others starts with their
/// summaries, which do not title it.
#[test]
fn claude_summary_titles_only_with_its_leaf_in_the_file() {
    let file = log_file(LEDGER);
    let user = |uuid: &str| {
        format!(
            r#"{{"type":"user","uuid":"{uuid}","sessionId":"s1","timestamp":"2026-10-20T09:00:00.000Z","message":{{"role":"user","content":"hello {uuid}"}}}}"#
        )
    };
    let summary = |text: &str, leaf: &str| format!(r#"{{"type":"summary","summary":"{text}","leafUuid":"{leaf}"}}"#);
    let title_after = |lines: &[String]| {
        let mut state = State::new();
        let mut title = None;
        for (i, l) in lines.iter().enumerate() {
            if let Line::Parsed(p) = Claude.parse_line(&file, &mut state, l.as_bytes(), i as u64 + 1) {
                for s in p.sessions {
                    if s.title.is_some() {
                        title = s.title;
                    }
                }
            }
        }
        (title, state.contains_key(PENDING_SUMMARIES))
    };
    // Another file's conversation: no title.
    assert_eq!(title_after(&[summary("Elsewhere", "u-other"), user("u1"), user("u2")]), (None, true));
    // The leaf after the summary, or before it (a summary written once its conversation ended).
    assert_eq!(title_after(&[summary("Here", "u2"), user("u1"), user("u2")]), (Some("Here".into()), false));
    assert_eq!(title_after(&[user("u1"), user("u2"), summary("After", "u2")]), (Some("After".into()), false));
    let mut after_more: Vec<String> = (1..=8).map(|i| user(&format!("u{i}"))).collect();
    after_more.push(summary("Seven lines on", "u1"));
    assert_eq!(title_after(&after_more), (Some("Seven lines on".into()), false));
    after_more.insert(0, user("u0"));
    after_more.push(summary("Too far back", "u0"));
    assert_eq!(title_after(&after_more), (Some("Seven lines on".into()), true), "u0 is nine lines back");
    // Of two in the file, the later line, whichever leaf is read first.
    let two = [summary("First", "u2"), summary("Second", "u1"), user("u1"), user("u2")];
    assert_eq!(title_after(&two).0, Some("Second".into()));
    // Waiting summaries are bounded: the earliest give way.
    let mut many: Vec<String> = (0..40).map(|i| summary(&format!("S{i}"), &format!("leaf{i}"))).collect();
    many.push(user("leaf0"));
    assert_eq!(title_after(&many), (None, true), "leaf0's summary was let go");
    many.push(user("leaf39"));
    assert_eq!(title_after(&many).0, Some("S39".into()));
}

#[test]
fn claude_error_tool_result_is_a_tool_result() {
    let run = golden::run(&Claude, &log_file(LEDGER));
    let e = event_at(&run, 10);
    assert_eq!((e["role"].as_str(), e["kind"].as_str()), (Some("User"), Some("ToolResult")));
    assert!(e["text"].as_str().is_some_and(|t| t.starts_with("Exit code 101\nerror[E0599]")));
}

#[test]
fn claude_memory_files_lists_user_project_and_auto_memory() {
    let home = golden::fixture_home();
    let homes = homes();
    let mem = |path: PathBuf, scope: MemoryScope, project: Option<&str>| MemoryFile { source: Source::ClaudeCode, path, scope, project: project.map(str::to_owned) };

    // The project as a directory on this disk: its CLAUDE.md.
    let project_dir = home.join("demo-app");
    let project = project_dir.to_string_lossy().into_owned();
    assert_eq!(
        Claude.memory_files(&homes, &[Project::here(project_dir.clone())], &mut Vec::new()),
        [mem(homes.claude.join("CLAUDE.md"), MemoryScope::User, None), mem(project_dir.join("CLAUDE.md"), MemoryScope::Project, Some(&project))]
    );

    // Auto memory is found under the escaped absolute path, so only the path the fixture
    // stands for (`/home/dev/demo-app`, as the records' cwd name it) finds it.
    let auto = homes.claude.join("projects/-home-dev-demo-app/memory");
    assert_eq!(
        Claude.memory_files(&homes, &[Project { cwd: PathBuf::from("/home/dev/demo-app"), dir: None }], &mut Vec::new()),
        [
            mem(homes.claude.join("CLAUDE.md"), MemoryScope::User, None),
            mem(auto.join("MEMORY.md"), MemoryScope::Project, Some("/home/dev/demo-app")),
            mem(auto.join("project_healthz.md"), MemoryScope::Project, Some("/home/dev/demo-app")),
        ]
    );

    // Later versions exist at the same relative paths.
    let later = home.join("../agent-home-later");
    for rel in ["demo-app/CLAUDE.md", ".claude/projects/-home-dev-demo-app/memory/project_healthz.md"] {
        let (a, b) = (std::fs::read_to_string(home.join(rel)).expect("fixture"), std::fs::read_to_string(later.join(rel)).expect("later fixture"));
        assert_ne!(a, b, "{rel}");
    }
}

/// Every line of every discovered fixture file (complete lines and torn tails).
static FIXTURE_LINES: LazyLock<Vec<Vec<u8>>> = LazyLock::new(|| {
    let (files, _) = Claude.discover(&homes());
    files.iter().flat_map(raw_lines).filter(|l| !l.is_empty()).collect()
});

/// Every value position in `v` (JSON pointers), root excluded.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => m.iter().for_each(|(k, c)| {
            let p = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
            out.push(p.clone());
            pointers(c, p, out);
        }),
        Value::Array(a) => a.iter().enumerate().for_each(|(i, c)| {
            let p = format!("{at}/{i}");
            out.push(p.clone());
            pointers(c, p, out);
        }),
        _ => {}
    }
}

fn odd_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        Just(json!(true)),
        Just(json!(-1)),
        Just(json!(1e308)),
        Just(json!(u64::MAX)),
        Just(json!("")),
        Just(json!("<command-name>")),
        Just(json!("2026-13-45T99:99:99Z")),
        Just(json!([])),
        Just(json!({})),
        Just(json!([null, 1, "x", {"type": "text"}])),
        Just(json!({"type": null, "text": 5})),
        any::<String>().prop_map(Value::String),
    ]
}

#[derive(Clone, Debug)]
enum Mutation {
    Set(usize, u8),
    Delete(usize, usize),
    Insert(usize, Vec<u8>),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Set(i, b)),
        (any::<usize>(), 1usize..64).prop_map(|(i, n)| Mutation::Delete(i, n)),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..8)).prop_map(|(i, b)| Mutation::Insert(i, b)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn mutate(mut line: Vec<u8>, ops: &[Mutation]) -> Vec<u8> {
    for op in ops {
        let len = line.len().max(1);
        match op {
            Mutation::Set(i, b) => {
                if let Some(x) = line.get_mut(i % len) {
                    *x = *b;
                }
            }
            Mutation::Delete(i, n) => {
                let start = (i % len).min(line.len());
                let end = (start + n).min(line.len());
                line.drain(start..end);
            }
            Mutation::Insert(i, b) => {
                let at = (i % len).min(line.len());
                line.splice(at..at, b.iter().copied());
            }
            Mutation::Truncate(i) => line.truncate(i % len),
        }
    }
    line
}

/// Parses `line` with a fresh state and with the state left by a real session line.
fn parse_both_ways(line: &[u8]) {
    let file = log_file(LEDGER);
    let mut fresh = State::new();
    let _ = Claude.parse_line(&file, &mut fresh, line, 1);
    let mut warm = State::new();
    let _ = Claude.parse_line(&file, &mut warm, &FIXTURE_LINES[0], 1);
    let _ = Claude.parse_line(&file, &mut warm, line, 2);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn claude_parse_line_never_panics_on_arbitrary_bytes(line in prop::collection::vec(any::<u8>(), 0..512)) {
        parse_both_ways(&line);
    }

    #[test]
    fn claude_parse_line_never_panics_on_mutated_fixture_lines(pick in any::<prop::sample::Index>(), ops in prop::collection::vec(mutation(), 1..6)) {
        let line: Vec<u8> = pick.get::<Vec<u8>>(&FIXTURE_LINES).clone();
        parse_both_ways(&mutate(line, &ops));
    }

    #[test]
    fn claude_parse_line_never_panics_on_fixture_lines_with_odd_values(pick in any::<prop::sample::Index>(), at in any::<prop::sample::Index>(), odd in odd_value()) {
        let Ok(mut v) = serde_json::from_slice::<Value>(pick.get::<Vec<u8>>(&FIXTURE_LINES)) else { return Ok(()) };
        let mut ps = Vec::new();
        pointers(&v, String::new(), &mut ps);
        if !ps.is_empty() {
            if let Some(slot) = v.pointer_mut(at.get::<String>(&ps)) {
                *slot = odd;
            }
        }
        parse_both_ways(&serde_json::to_vec(&v).expect("json"));
    }
}

#[test]
fn claude_synthetic_assistant_lines_are_system_notices_not_model_output() {
    let file = log_file(MAIN);
    let mut state = State::new();
    let line = |extra: &str, model: &str| {
        format!(
            r#"{{"type":"assistant","uuid":"u-1","sessionId":"s-1","timestamp":"2026-10-20T09:00:00Z",{extra}"message":{{"role":"assistant","model":"{model}","content":[{{"type":"text","text":"API Error: 529 overloaded"}}]}}}}"#
        )
    };
    for (extra, model) in [(r#""isApiErrorMessage":true,"#, "claude-opus-4"), ("", "<synthetic>")] {
        let Line::Parsed(p) = Claude.parse_line(&file, &mut state, line(extra, model).as_bytes(), 1) else { panic!("parsed") };
        assert_eq!((p.events[0].role, p.events[0].kind), (origin_engine::record::Role::System, origin_engine::record::EventKind::System), "{extra} {model}");
    }
    let Line::Parsed(p) = Claude.parse_line(&file, &mut state, line("", "claude-opus-4").as_bytes(), 2) else { panic!("parsed") };
    assert_eq!((p.events[0].role, p.events[0].kind), (origin_engine::record::Role::Assistant, origin_engine::record::EventKind::Message), "a real reply");
}

#[test]
fn claude_persisted_output_is_read_from_the_file_the_preview_names() {
    let home = tempfile::tempdir().expect("tempdir");
    let project = home.path().join(".claude/projects/-w-p");
    let session = "5a1e0000-0000-4000-8000-000000000001";
    let full = format!("test result: FAILED. 760 passed; 1 failed\n{}", "ok\n".repeat(20_000));
    std::fs::create_dir_all(project.join(session).join("tool-results")).expect("mkdir");
    std::fs::write(project.join(session).join("tool-results/bmm1.txt"), &full).expect("write");
    let line = |saved: &str| {
        let preview = format!("<persisted-output>\nOutput too large (60.0KB). Full output saved to: {saved}\n\nPreview (first 2KB):\ntest result: FAIL");
        json!({"type": "user", "uuid": "u-9", "sessionId": session, "timestamp": "2026-10-20T09:00:00Z",
               "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": preview}]}})
        .to_string()
    };
    let recorded = format!("/home/dev/.claude/projects/-w-p/{session}/tool-results/bmm1.txt");
    let text = |log: PathBuf, saved: &str| -> String {
        let file = LogFile { source: Source::ClaudeCode, key: log.to_string_lossy().into_owned(), mirror: String::new(), path: log, format: FileFormat::Lines };
        let Line::Parsed(p) = Claude.parse_line(&file, &mut State::new(), line(saved).as_bytes(), 1) else { panic!("parsed") };
        p.events[0].text.clone()
    };
    // The session's own log and a sub-agent's inside its folder both find it.
    for log in [project.join(format!("{session}.jsonl")), project.join(session).join("subagents/agent-1.jsonl")] {
        let got = text(log, &recorded);
        assert!(got.starts_with("test result: FAILED. 760 passed; 1 failed"), "{}", &got[..80]);
        assert!(got.chars().count() > 10_000, "the full output, cut to the event limit: {}", got.len());
    }
    // A file that is not there, or a path that is no session's tool-results: the preview stands.
    for saved in [format!("/home/dev/.claude/projects/-w-p/{session}/tool-results/gone.txt"), "/etc/passwd".to_owned(), format!("/x/{session}/../tool-results/bmm1.txt")] {
        let got = text(project.join(format!("{session}.jsonl")), &saved);
        assert!(got.starts_with("<persisted-output>"), "{saved}: {got}");
    }
    // The file gone, the line's own `toolUseResult` keeps the whole output: it is read.
    let gone = format!("/home/dev/.claude/projects/-w-p/{session}/tool-results/gone.txt");
    let mut v: Value = serde_json::from_str(&line(&gone)).unwrap();
    v["toolUseResult"] = json!({"stdout": full, "stderr": "warning: unused import", "interrupted": false});
    let file = LogFile { source: Source::ClaudeCode, key: String::new(), mirror: String::new(), path: project.join(format!("{session}.jsonl")), format: FileFormat::Lines };
    let Line::Parsed(p) = Claude.parse_line(&file, &mut State::new(), v.to_string().as_bytes(), 1) else { panic!("parsed") };
    let got = &p.events[0].text;
    assert!(got.starts_with("test result: FAILED. 760 passed; 1 failed"), "{}", &got[..80]);
    assert!(got.ends_with("warning: unused import"), "its end kept, with stderr: {}", &got[got.len() - 80..]);
    // Another tool's result (`content`) alike; a result of neither shape leaves the preview.
    v["toolUseResult"] = json!({"type": "text", "content": "the whole answer"});
    let Line::Parsed(p) = Claude.parse_line(&file, &mut State::new(), v.to_string().as_bytes(), 1) else { panic!("parsed") };
    assert_eq!(p.events[0].text, "the whole answer");
    v["toolUseResult"] = json!({"filenames": ["a.rs"]});
    let Line::Parsed(p) = Claude.parse_line(&file, &mut State::new(), v.to_string().as_bytes(), 1) else { panic!("parsed") };
    assert!(p.events[0].text.starts_with("<persisted-output>"));
    // The line's `toolUseResult` is one tool's: given to one block of the line, read once
    // (read for every block, a line of many was parsed again for each: hours at 32 MiB).
    let block = v["message"]["content"][0].clone();
    v["message"]["content"] = json!([block.clone(), block.clone(), block]);
    v["toolUseResult"] = json!({"type": "text", "content": "the whole answer"});
    let Line::Parsed(p) = Claude.parse_line(&file, &mut State::new(), v.to_string().as_bytes(), 1) else { panic!("parsed") };
    let texts: Vec<&str> = p.events.iter().map(|e| e.text.as_str()).collect();
    assert_eq!(texts[0], "the whole answer");
    assert!(texts[1..].iter().all(|t| t.starts_with("<persisted-output>")), "{texts:?}");
}

#[test]
fn claude_auto_memory_is_found_from_a_cwd_below_the_git_root_and_user_topics_are_the_users() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let homes = Homes::under(tmp.path());
    let root = tmp.path().join("work/repo");
    let below = root.join("services/api");
    std::fs::create_dir_all(&below).expect("mkdir");
    let escaped: String = root.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    let memory = homes.claude.join("projects").join(escaped).join("memory");
    std::fs::create_dir_all(&memory).expect("mkdir");
    std::fs::write(memory.join("MEMORY.md"), "- [Prefers pnpm](feedback_pnpm.md)\n").expect("write");
    std::fs::write(memory.join("user_role.md"), "---\nname: Role\ntype: user\n---\nThe user is a backend engineer.\n").expect("write");
    let got = |projects: &[PathBuf]| -> Vec<(String, MemoryScope, Option<String>)> {
        Claude
            .memory_files(&homes, &projects.iter().cloned().map(Project::here).collect::<Vec<_>>(), &mut Vec::new())
            .into_iter()
            .filter(|m| m.path.starts_with(&memory))
            .map(|m| (m.path.file_name().expect("name").to_string_lossy().into_owned(), m.scope, m.project))
            .collect()
    };
    let project = Some(root.to_string_lossy().into_owned());
    let want = [("MEMORY.md".to_owned(), MemoryScope::Project, project), ("user_role.md".to_owned(), MemoryScope::User, None)];
    assert_eq!(got(std::slice::from_ref(&below)), want, "found from a cwd below the root");
    assert_eq!(got(&[below.clone(), root.clone()]), want, "found once for both");
}

#[test]
fn claude_shell_and_ide_wrappers_are_meta_and_never_the_first_prompt() {
    let file = log_file(MAIN);
    let mut state = State::new();
    let line = |n: u32, text: &str| {
        json!({"type": "user", "uuid": format!("w-{n}"), "sessionId": "s-w", "timestamp": "2026-10-20T09:00:00Z", "message": {"role": "user", "content": text}}).to_string()
    };
    let wrapped = ["<bash-input>ls</bash-input>", "<bash-stdout>a b</bash-stdout><bash-stderr></bash-stderr>", "<ide_opened_file>The user opened src/a.ts in the IDE.</ide_opened_file>", "<ide_selection>x = 1</ide_selection>"];
    for (n, text) in wrapped.iter().enumerate() {
        let Line::Parsed(p) = Claude.parse_line(&file, &mut state, line(n as u32, text).as_bytes(), n as u64 + 1) else { panic!("parsed") };
        assert_eq!(p.events[0].kind, origin_engine::record::EventKind::Meta, "{text}");
        assert!(p.sessions.iter().all(|s| s.first_prompt.is_none()), "{text}");
    }
    let Line::Parsed(p) = Claude.parse_line(&file, &mut state, line(9, "fix the cache").as_bytes(), 9) else { panic!("parsed") };
    assert_eq!(p.sessions[0].first_prompt.as_deref(), Some("fix the cache"), "the person's own words are the first prompt");
}

#[test]
fn claude_empty_thinking_and_text_blocks_make_no_event() {
    let file = log_file(MAIN);
    let mut state = State::new();
    let line = json!({"type": "assistant", "uuid": "t-1", "sessionId": "s-t", "timestamp": "2026-10-20T09:00:00Z",
        "message": {"role": "assistant", "content": [{"type": "thinking", "thinking": "", "signature": "abc"}, {"type": "text", "text": "  "}, {"type": "text", "text": "the answer"}]}})
    .to_string();
    let Line::Parsed(p) = Claude.parse_line(&file, &mut state, line.as_bytes(), 1) else { panic!("parsed") };
    let got: Vec<(&str, &str)> = p.events.iter().map(|e| (e.id.as_str(), e.text.as_str())).collect();
    assert_eq!(got, [("claude-code:t-1:2", "the answer")], "the block keeps its number in the id");
}

/// What no person typed is not the person's message: a background task's notice (as a user
/// line, or queued), a message another session queued, the marker of an interrupted turn, and
/// Claude's caveat before local commands' output; a prompt the person queued while the agent
/// worked is theirs, its text read from its blocks too (a pasted image beside it), and so is a
/// prompt of theirs that begins with the word "Caveat".
#[test]
fn claude_text_no_person_typed_is_meta_and_queued_prompts_are_read_whole() {
    let file = log_file(LEDGER);
    let base = json!({"sessionId": "s1", "cwd": "/home/dev/p", "timestamp": "2026-10-20T09:00:00.000Z"});
    let with = |extra: Value| {
        let mut v = base.clone();
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        v.to_string()
    };
    let notice = "<task-notification>\n<task-id>b7x</task-id>\n<status>completed</status>\n</task-notification>";
    let lines = [
        with(json!({"type": "user", "uuid": "n1", "message": {"role": "user", "content": "Run the build in the background"}})),
        with(json!({"type": "user", "uuid": "n2", "message": {"role": "user", "content": notice}})),
        with(json!({"type": "attachment", "uuid": "n3", "attachment": {"type": "queued_command", "commandMode": "task-notification", "prompt": notice}})),
        with(json!({"type": "attachment", "uuid": "n4", "attachment": {"type": "queued_command", "commandMode": "prompt", "origin": {"kind": "peer"}, "prompt": "Please also bump the version"}})),
        with(json!({"type": "attachment", "uuid": "n5", "isMeta": true, "attachment": {"type": "queued_command", "prompt": "from the harness"}})),
        with(json!({"type": "user", "uuid": "n6", "message": {"role": "user", "content": [{"type": "text", "text": "[Request interrupted by user for tool use]"}]}})),
        with(json!({"type": "attachment", "uuid": "n7", "attachment": {"type": "queued_command", "commandMode": "prompt", "origin": {"kind": "human"},
            "prompt": [{"type": "text", "text": "also rename the module, see the screenshot"}, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]}})),
        with(json!({"type": "attachment", "uuid": "n8", "attachment": {"type": "queued_command", "prompt": "and keep the old name as an alias"}})),
        with(json!({"type": "user", "uuid": "n9", "message": {"role": "user", "content": "Caveat: the staging data is a week old"}})),
        with(json!({"type": "user", "uuid": "n10", "message": {"role": "user", "content": "Caveat: The messages below were generated by the user while running local commands. DO NOT respond to these messages."}})),
    ];
    let mut state = State::new();
    let mut kinds = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        match Claude.parse_line(&file, &mut state, l.as_bytes(), i as u64 + 1) {
            Line::Parsed(p) => kinds.extend(p.events.into_iter().map(|e| (e.id, serde_json::to_value(e.kind).unwrap(), e.text))),
            Line::Malformed(r) => panic!("line {}: {r}", i + 1),
        }
    }
    let kind_of = |id: &str| kinds.iter().find(|(i, _, _)| i == &format!("claude-code:{id}")).map(|(_, k, _)| k.as_str().unwrap().to_owned());
    for id in ["n1", "n7", "n8", "n9"] {
        assert_eq!(kind_of(id).as_deref(), Some("Message"), "{id}: {kinds:?}");
    }
    for id in ["n2", "n3", "n4", "n5", "n6", "n10"] {
        assert_eq!(kind_of(id).as_deref(), Some("Meta"), "{id}: {kinds:?}");
    }
    let queued = kinds.iter().find(|(i, _, _)| i == "claude-code:n7").unwrap();
    assert_eq!(queued.2, "also rename the module, see the screenshot\n[image]");
}

/// A legacy summary waiting for a leaf whose uuid is long (2,000 characters, within what a line
/// may give) titles the session when that leaf is read: the uuid is kept whole as it waits.
#[test]
fn claude_summary_waiting_for_a_long_leaf_titles_when_it_comes() {
    let file = log_file(LEDGER);
    let leaf = "u".repeat(2_000);
    let summary = json!({"type": "summary", "summary": "Long leaf", "leafUuid": leaf}).to_string();
    let user = json!({"type": "user", "uuid": leaf, "sessionId": "s1", "timestamp": "2026-10-20T09:00:00.000Z", "message": {"role": "user", "content": "hello"}}).to_string();
    let mut state = State::new();
    let mut titles = Vec::new();
    for (i, l) in [summary, user].iter().enumerate() {
        if let Line::Parsed(p) = Claude.parse_line(&file, &mut state, l.as_bytes(), i as u64 + 1) {
            titles.extend(p.sessions.into_iter().filter_map(|s| s.title));
        }
    }
    assert_eq!(titles, vec!["Long leaf".to_owned()]);
    assert!(!state.contains_key(PENDING_SUMMARIES));
}
