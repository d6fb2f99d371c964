//! What the command line says to a person: errors once and with what to do next, readable
//! answers, and nothing made where nothing was asked for; on the real binary.

use std::process::Output;

use crate::cli_forget_restore::origin;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Commands that read no agents' logs, and compaction, on a store that is not there (a
/// mistyped `--home`): no journal there, said once, and nothing made (`get` said the id was
/// unknown and `tombstones` listed none, each from an empty store it had just made).
#[test]
fn a_store_that_is_not_there_is_said_and_not_made() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("mistyped");
    for args in [
        &["get", "ent_0123456789ab"][..],
        &["sources", "ent_0123456789ab"],
        &["tombstones"],
        &["forget", "ent_0123456789ab", "--reason", "a test"],
        &["restore", "tmb_0123456789ab"],
        &["journal", "compact"],
        &["status"],
    ] {
        let out = origin(&home, args);
        let said = stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {said}");
        assert!(said.contains("no Origin journal in"), "{args:?}: {said}");
        assert!(!said.contains("LOCK") && !said.contains("Unknown"), "{args:?}: {said}");
        assert!(!home.exists(), "{args:?} made {}", home.display());
    }
}

/// An error's cause is said once: the system's words that end the failure's message are not
/// said again on a line of their own.
#[test]
fn an_errors_cause_is_said_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"not a folder").expect("write");
    // A store below a file: the system's "Not a directory" ends the message, said once.
    let out = origin(&file.join("store"), &["status"]);
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert_eq!(said.matches("Not a directory").count(), 1, "{said}");
    // The store's folder a file: every command says so (each said what it met first, `get`
    // that there was no journal).
    for args in [&["status"][..], &["get", "ent_000000000000"], &["sources", "ent_000000000000"], &["tombstones"], &["search", "x"], &["mcp"]] {
        let out = origin(&file, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), format!("origin: {}: a file, not a folder: the store is a folder (pass --home DIR, or set ORIGIN_HOME)\n", file.display()), "{args:?}");
    }
}

/// A refused argument is named as the command line names it (`--cite`, `--limit`, `QUERY`),
/// not as the tool does (`sources`, `limit`), and a negative number is taken as the value it
/// is and refused for its range (clap took `-1` for a flag and advised `-- -1`, which failed
/// too).
#[test]
fn a_refused_argument_is_named_by_its_flag() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("store");
    let said = |args: &[&str]| {
        let out = origin(&home, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        stderr(&out)
    };
    assert_eq!(said(&["remember", "No sources given"]), "origin: `--cite` or `--quote` needs at least one source\n");
    assert!(said(&["remember", "x", "--cite", "ent_0123456789ab"]).starts_with("origin: `--cite` must be an event id"));
    assert!(said(&["remember", "x", "--quote", "y", "--valid-from", "tomorrow"]).starts_with("origin: `--valid-from` \"tomorrow\" is not a time"));
    assert_eq!(said(&["search", "test", "--limit", "-1"]), "origin: `--limit` must be an integer from 1 to 100, not -1\n");
    assert_eq!(said(&["remember", "x", "--quote", "y", "--confidence", "-0.5"]), "origin: `--confidence` must be a number from 0 to 1, not -0.5\n");
    let range = said(&["search", "x", "--since", "2026-10-02", "--until", "2026-10-01"]);
    assert!(range.starts_with("origin: `--until` (2026-10-01") && range.contains("is before `--since` (2026-10-02"), "{range}");
    assert_eq!(said(&["search", ",.;"]), "origin: `QUERY` has no word to search for (only spaces or punctuation)\n");
    // A time that begins with `-` is taken as the value it is (clap took `-3d` for a flag and
    // said "unexpected argument"), and a signed duration is said to be written unsigned.
    let signed = |flag: &str, value: &str, unsigned: &str| {
        format!("origin: `{flag}` \"{value}\": a duration counts back from now, unsigned; write \"{unsigned}\" (a time after now is a date or ISO 8601)\n")
    };
    assert_eq!(said(&["timeline", "--since", "-3d"]), signed("--since", "-3d", "3d"));
    assert_eq!(said(&["search", "x", "--until", "-12h"]), signed("--until", "-12h", "12h"));
    assert_eq!(said(&["remember", "x", "--quote", "y", "--valid-to", "-1w"]), signed("--valid-to", "-1w", "1w"));
    assert!(said(&["search", "x", "--since", "-2026-10-20"]).starts_with("origin: `--since` \"-2026-10-20\" is not a time"));
}

/// Ingest says where the malformed lines it skipped are (file and line, and why), and what it
/// could not read, on stderr, beside the table on stdout; an agents' home that is not there is
/// a mistake said at once (it printed a table of zeros).
#[test]
fn ingest_says_where_the_lines_it_skipped_are() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("store");
    let agents = crate::ingest_memory::fixtures().join("agent-home");
    let out = origin(&home, &["ingest", "--agents-home", agents.to_str().expect("utf-8")]);
    let (said, table) = (stderr(&out), String::from_utf8_lossy(&out.stdout).into_owned());
    assert!(out.status.success(), "{said}");
    let claude = said.lines().find(|l| l.starts_with("origin: claude-code: malformed line skipped: ")).unwrap_or_else(|| panic!("{said}"));
    assert!(claude.contains(".jsonl line ") && claude.contains(": invalid JSON"), "{claude}");
    assert!(!table.contains("malformed line skipped"), "{table}");
    let missing = dir.path().join("no-such-home");
    let out = origin(&home, &["ingest", "--agents-home", missing.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("no-such-home: no such folder"), "{}", stderr(&out));
    // Nor is a file.
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"not a folder").expect("write");
    let out = origin(&home, &["ingest", "--agents-home", file.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("a-file: not a folder"), "{}", stderr(&out));
    // The commands that read the store go on without logs: a search answers from it, saying
    // that none are read from there (as `origin mcp` does: it was silent).
    let out = origin(&home, &["search", "URLSearchParams", "--agents-home", missing.to_str().expect("utf-8")]);
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("URLSearchParams"), "{}", stderr(&out));
    assert!(stderr(&out).contains("no-such-home: no such folder; no agents' logs are read from it"), "{}", stderr(&out));
}

/// A salvage stopped part way left its folder marked unfinished: `status` and `verify` there
/// refuse it, saying so, and `origin journal salvage` run again into it starts over (the
/// command refused the folder as not empty).
#[test]
fn a_salvage_run_again_where_one_stopped_starts_over() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("store");
    assert!(origin(&home, &["journal", "stress", "--records", "50"]).status.success());
    // The salvage's folder as a store's journal, to be verified as one.
    let salvaged_home = dir.path().join("salvaged");
    let to = salvaged_home.join("journal");
    std::fs::create_dir_all(&to).expect("mkdir");
    assert!(origin(&home, &["journal", "salvage", "--to", to.to_str().expect("utf-8")]).status.success());
    drop(origin_engine::journal::mark_unfinished(&origin_engine::vfs::OsFs, &to, "a salvage of somewhere").expect("mark"));
    for args in [&["journal", "verify"][..], &["status"]] {
        let out = origin(&salvaged_home, args);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("is unfinished: a salvage of somewhere was writing it"), "{args:?}: {}", stderr(&out));
    }
    let out = origin(&home, &["journal", "salvage", "--to", to.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!to.join(origin_engine::journal::UNFINISHED_FILE_NAME).exists());
    let copied = origin_engine::Journal::open(&to, origin_engine::Options { access: origin_engine::Access::ReadOnly, ..Default::default() }).expect("open");
    assert_eq!(copied.read_vec(0, usize::MAX).expect("read").len(), 50);
    // A folder holding anything else is still refused.
    let other = dir.path().join("other");
    std::fs::create_dir_all(&other).expect("mkdir");
    std::fs::write(other.join("notes.txt"), b"mine").expect("write");
    let out = origin(&home, &["journal", "salvage", "--to", other.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(other.join("notes.txt").exists());
}

/// `journal dump` of a journal its damage stops from opening prints every readable record,
/// those after the damage included, says the damaged region on stderr where it is met, and
/// exits 1 (it refused to print anything: the tool to look inside a damaged journal showed
/// nothing of it).
#[test]
fn dump_shows_what_a_damaged_journal_holds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("store");
    assert!(origin(&home, &["journal", "stress", "--records", "50", "--size", "200", "--threads", "1"]).status.success());
    let segment = std::fs::read_dir(home.join("journal"))
        .expect("list")
        .map(|e| e.expect("entry").path())
        .find(|p| p.extension().is_some_and(|x| x == "seg"))
        .expect("a segment");
    let mut bytes = std::fs::read(&segment).expect("read");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&segment, &bytes).expect("write");
    let out = origin(&home, &["journal", "dump", "--json", "--limit", "1000"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("damage: ") && stderr(&out).contains(&segment.display().to_string()), "{}", stderr(&out));
    let offsets: Vec<u64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("json")["offset"].as_u64().expect("offset"))
        .collect();
    assert!(offsets.len() >= 45 && offsets.len() < 50, "one record or so lost: {offsets:?}");
    assert_eq!((offsets.first(), offsets.last()), (Some(&0), Some(&49)), "{offsets:?}");
    assert!(offsets.windows(2).all(|w| w[0] < w[1]), "{offsets:?}");
}

/// A session asked for under another source than its own is said to be that source's (it was
/// "Unknown session", as if there were none).
#[test]
fn a_session_asked_for_under_another_source_says_whose_it_is() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("store");
    let agents = crate::ingest_memory::fixtures().join("agent-home");
    assert!(origin(&home, &["ingest", "--agents-home", agents.to_str().expect("utf-8")]).status.success());
    let sessions = origin(&home, &["timeline", "--since", "2000-01-01", "--source", "zcode", "--json", "--limit", "1"]);
    let listed: serde_json::Value = serde_json::from_slice(&sessions.stdout).expect("json");
    let session = listed["sessions"][0]["session"].as_str().expect("a zcode session").to_owned();
    let out = origin(&home, &["timeline", "--session", &session, "--source", "grok"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("Unknown session {session} of grok: it is a session of zcode")), "{}", stderr(&out));
    let out = origin(&home, &["timeline", "--session", &session, "--source", "zcode"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// A replay or a salvage starts over only where one stopped and left nothing else: a folder
/// holding a stopped replay's marked journal beside a person's files is refused and left as it
/// is (they were removed), a replay stopped at its first word starts over, and a salvage into
/// the journal it salvages is refused (it removed the journal).
#[test]
fn starting_over_never_removes_what_a_person_keeps() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("store");
    assert!(origin(&home, &["journal", "stress", "--records", "20"]).status.success());
    let work = dir.path().join("work");
    std::fs::create_dir_all(work.join("src")).expect("mkdir");
    std::fs::write(work.join("src/lib.rs"), b"pub fn mine() {}").expect("write");
    drop(origin_engine::journal::mark_unfinished(&origin_engine::vfs::OsFs, &work.join("journal"), "a replay").expect("mark"));
    let out = origin(&home, &["journal", "replay", "--to", work.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("holds files no replay writes (src)"), "{}", stderr(&out));
    assert!(work.join("src/lib.rs").exists());
    // A replay stopped while it wrote its first word (that its store is unfinished) left only
    // that word's file, cut short: it starts over there (it was refused as not empty).
    let first = dir.path().join("first-word");
    std::fs::create_dir_all(&first).expect("mkdir");
    std::fs::write(first.join("replay.json.tmp"), b"{\n  \"unfini").expect("write");
    let out = origin(&home, &["journal", "replay", "--to", first.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!first.join("replay.json.tmp").exists() && first.join("replay.json").exists());
    // Beside anything else, that file is not taken for a replay's.
    let beside = dir.path().join("beside");
    std::fs::create_dir_all(&beside).expect("mkdir");
    std::fs::write(beside.join("replay.json.tmp"), b"{").expect("write");
    std::fs::write(beside.join("notes.txt"), b"mine").expect("write");
    let out = origin(&home, &["journal", "replay", "--to", beside.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(beside.join("notes.txt").exists() && beside.join("replay.json.tmp").exists());
    let journal = home.join("journal");
    let out = origin(&home, &["journal", "salvage", "--to", journal.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("is the journal salvaged"), "{}", stderr(&out));
    let status: serde_json::Value = serde_json::from_slice(&origin(&home, &["status", "--json"]).stdout).expect("json");
    assert_eq!(status["records"], 20);
}

/// A flag that means nothing without another is refused (`timeline --include-tools` lists a
/// session's tool calls: without `--session` it was taken and did nothing), and a dump from
/// past the journal's end says where the journal ends (it printed nothing, without a word).
#[test]
fn flags_that_would_do_nothing_are_said() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("store");
    assert!(origin(&home, &["journal", "stress", "--records", "5"]).status.success());
    let out = origin(&home, &["timeline", "--include-tools"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--session"), "{}", stderr(&out));
    let out = origin(&home, &["journal", "dump", "--from", "99"]);
    assert!(out.status.success() && out.stdout.is_empty(), "{}", stderr(&out));
    assert!(stderr(&out).contains("no record at or after offset 99: the journal's records end before offset 5"), "{}", stderr(&out));
    let out = origin(&home, &["journal", "dump", "--from", "3"]);
    assert!(out.status.success() && stderr(&out).is_empty(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);
}

/// A store a replay is making now, or a journal a salvage is writing now, is said to be so, with
/// "wait": a command run there meanwhile said the run had stopped and to run it again (two
/// runs into one folder), and one run before the replay's first word made a store there and
/// read this machine's agents' logs into it. Once the run is gone, it is said to have stopped.
#[test]
fn a_store_being_made_now_is_said_to_be_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fs = origin_engine::vfs::OsFs;
    // A replay's folder, held before its first word.
    let making = dir.path().join("making");
    std::fs::create_dir_all(&making).expect("mkdir");
    let held = origin_engine::journal::hold_folder(&fs, &making).expect("hold").expect("held");
    let out = origin(&making, &["search", "anything"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("is being made now by a replay") && stderr(&out).contains("wait for it to finish"), "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(&making).expect("list").count(), 0, "nothing made there");
    drop(held);
    // A salvage's journal, its mark held, then let go.
    let home = dir.path().join("salvaged");
    let journal = home.join("journal");
    let mark = origin_engine::journal::mark_unfinished(&fs, &journal, "a salvage of somewhere").expect("mark");
    for args in [&["status"][..], &["journal", "verify"], &["search", "anything"]] {
        let out = origin(&home, args);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("a salvage of somewhere is writing it now; wait for it to finish"), "{args:?}: {}", stderr(&out));
    }
    drop(mark);
    let out = origin(&home, &["status"]);
    assert!(stderr(&out).contains("was writing it and stopped before the end"), "{}", stderr(&out));
}

/// A command waiting for a store's lock says, after a few seconds, what it waits for and who
/// holds it (this process, here), then goes on once the lock is let go: a process stopped while
/// it held the lock (Ctrl-Z on an ingest) kept every other command waiting without a word.
#[test]
fn a_command_waiting_for_a_lock_says_who_holds_it() {
    use std::io::Read;
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("store");
    assert!(origin(&home, &["journal", "stress", "--records", "5"]).status.success());
    let lock_path = home.join("journal").join("LOCK");
    let held = std::fs::OpenOptions::new().read(true).write(true).open(&lock_path).expect("open LOCK");
    held.lock().expect("lock");
    // `origin status` waiting for the lock, past the 3 s after which it says so; `let_go` then
    // lets the lock go. What it said on stderr.
    let status_waiting = |let_go: &mut dyn FnMut()| {
        let mut child = std::process::Command::new(origin_tests::origin_bin())
            .arg("--home")
            .arg(&home)
            .arg("status")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        std::thread::sleep(std::time::Duration::from_millis(4500));
        assert!(child.try_wait().expect("wait").is_none(), "status answered while the lock was held");
        let_go();
        let status = child.wait().expect("wait");
        let mut said = String::new();
        child.stderr.take().expect("stderr").read_to_string(&mut said).expect("stderr");
        assert!(status.success(), "{said}");
        said
    };
    let said = status_waiting(&mut || held.unlock().expect("unlock"));
    let expected = format!("origin: waiting for {}: process {} (", lock_path.display(), std::process::id());
    assert!(said.contains(&expected) && said.contains("holds it; waiting until it lets go"), "{said}");
    assert_eq!(said.matches("origin: waiting for").count(), 1, "{said}");
    // A holder that is stopped is said to be, with how to let it go on.
    let script = "import fcntl, sys, time\nf = open(sys.argv[1], 'r+')\nfcntl.flock(f, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(120)\n";
    let mut holder = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(&lock_path)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(holder.stdout.take().expect("stdout")), &mut line).expect("read");
    assert_eq!(line.trim(), "held");
    let pid = holder.id();
    assert!(std::process::Command::new("kill").args(["-STOP", &pid.to_string()]).status().expect("kill").success());
    let said = status_waiting(&mut || {
        holder.kill().expect("kill the holder");
        holder.wait().expect("wait");
    });
    assert!(said.contains(&format!("process {pid} (")) && said.contains("python3 -c import fcntl, sys, time f = open("), "{said}");
    assert!(said.contains(&format!("holds it and is stopped: let it go on (`kill -CONT {pid}`")) && said.lines().count() == 1, "{said}");
}

/// A search while another process holds the store's ingest lock (an `origin ingest` stopped
/// with Ctrl-Z, here this test's process) waits for it 5 s, then answers from what the store
/// holds, saying why (it waited as long as the lock was held); a `remember` still waits, and
/// goes on once the lock is let go.
#[test]
fn a_search_answers_from_the_store_when_another_holds_the_ingest_lock() {
    use std::io::Read;
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("store");
    let agents = crate::ingest_memory::fixtures().join("agent-home");
    let agents = agents.to_str().expect("utf-8");
    assert!(origin(&home, &["ingest", "--agents-home", agents, "--recorded-home", "/home/dev"]).status.success());
    let lock = std::fs::OpenOptions::new().read(true).write(true).open(home.join("ingest.lock")).expect("ingest.lock");
    lock.lock().expect("lock");
    let started = std::time::Instant::now();
    let out = origin(&home, &["search", "URLSearchParams", "--json", "--agents-home", agents, "--recorded-home", "/home/dev"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "{:?}", started.elapsed());
    let found: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(!found["events"].as_array().expect("events").is_empty());
    assert!(stderr(&out).contains("another process has held the store's ingest lock") && stderr(&out).contains("searches answer from what the store holds meanwhile"), "{}", stderr(&out));
    // A write waits for the lock, as long as it is held.
    let mut remember = std::process::Command::new(origin_tests::origin_bin())
        .arg("--home")
        .arg(&home)
        .args(["remember", "Weather routes encode the city.", "--quote", "URLSearchParams", "--agents-home", agents, "--recorded-home", "/home/dev"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    std::thread::sleep(std::time::Duration::from_millis(6000));
    assert!(remember.try_wait().expect("wait").is_none(), "remember went on while another held the ingest lock");
    lock.unlock().expect("unlock");
    let status = remember.wait().expect("wait");
    let mut said = String::new();
    remember.stderr.take().expect("stderr").read_to_string(&mut said).expect("stderr");
    assert!(status.success(), "{said}");
    assert!(said.contains(&format!("origin: waiting for {}: process {}", home.join("ingest.lock").display(), std::process::id())), "{said}");
}
