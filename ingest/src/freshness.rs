//! Keeping up with agents that are still writing, as the spec's "Freshness" says: ingest
//! everything in the background at start; before `search` and `timeline` at most every 10 s
//! (`ORIGIN_READ_INGEST_INTERVAL_MS`); always before `remember` and `correct`; a watch every
//! 60 s (`ORIGIN_WATCH_INTERVAL_MS`, 0 turns it off) that reads only files that changed; one
//! last ingest on exit within 5 s.
//!
//! What the user should know is said through a [`Say`] (`origin mcp` writes it to stderr): a
//! run that failed (once until it fails differently or works again), that it works again, a
//! file or folder that could not be read (once), a setting not understood. A read goes on from
//! what the store holds when its ingest fails; a write fails with the ingest's error.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use crate::ingest::{IngestError, Ingester, RunSummary};
use crate::snapshot::SnapshotUse;

/// Least time between the ingests that reads trigger.
pub const READ_INGEST_INTERVAL: Duration = Duration::from_secs(10);
/// Default watch interval.
pub const WATCH_INTERVAL_DEFAULT: Duration = Duration::from_secs(60);
/// How long the last ingest on exit may take.
pub const EXIT_INGEST_BUDGET: Duration = Duration::from_secs(5);

/// Where freshness says what the user should know (one message, no trailing newline).
pub type Say = Arc<dyn Fn(&str) + Send + Sync>;

fn guard<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The watch interval from `ORIGIN_WATCH_INTERVAL_MS` (see [`parse_watch_interval`]).
pub fn watch_interval_from_env() -> (Option<Duration>, Option<String>) {
    parse_watch_interval(std::env::var("ORIGIN_WATCH_INTERVAL_MS").ok().as_deref())
}

/// The watch interval for a value of `ORIGIN_WATCH_INTERVAL_MS`: unset, 60 s; `0`, no watch;
/// a number, that many milliseconds; anything else, 60 s and a warning to show.
pub fn parse_watch_interval(value: Option<&str>) -> (Option<Duration>, Option<String>) {
    let (every, warning) = parse_millis("ORIGIN_WATCH_INTERVAL_MS", value, WATCH_INTERVAL_DEFAULT, "watching every 60 s");
    (Some(every).filter(|d| !d.is_zero()), warning)
}

/// The read ingest interval from `ORIGIN_READ_INGEST_INTERVAL_MS` (see
/// [`parse_read_interval`]).
pub fn read_interval_from_env() -> (Duration, Option<String>) {
    parse_read_interval(std::env::var("ORIGIN_READ_INGEST_INTERVAL_MS").ok().as_deref())
}

/// The least time between the ingests reads trigger, for a value of
/// `ORIGIN_READ_INGEST_INTERVAL_MS`: unset, 10 s; a number, that many milliseconds (`0`: every
/// read ingests first); anything else, 10 s and a warning to show.
pub fn parse_read_interval(value: Option<&str>) -> (Duration, Option<String>) {
    parse_millis("ORIGIN_READ_INGEST_INTERVAL_MS", value, READ_INGEST_INTERVAL, "reads ingest at most every 10 s")
}

/// A number of milliseconds from the variable `name`'s `value`: `default` when unset or not a
/// number (then with a warning that ends with `instead`).
fn parse_millis(name: &str, value: Option<&str>, default: Duration, instead: &str) -> (Duration, Option<String>) {
    match value {
        None => (default, None),
        Some(v) => match v.trim().parse::<u64>() {
            Ok(ms) => (Duration::from_millis(ms), None),
            Err(_) => (default, Some(format!("{name}={v:?} is not a number of milliseconds; {instead}"))),
        },
    }
}

/// What has been said of runs, so that each thing is said once: the failure of the runs that
/// fail the same way in a row, and each file's problem until a full run no longer has it.
#[derive(Debug, Default)]
struct Reports {
    /// The error of the last run, when it failed.
    failing: Option<String>,
    /// Problems said and not yet gone.
    problems: HashSet<String>,
}

impl Reports {
    /// What to say after a run (`full`: of every file, not only of those that changed).
    /// `bounded`: writes wait for another's run at most [`WRITE_WAITS_FOR_RUN`].
    fn after(&mut self, full: bool, bounded: bool, result: &Result<RunSummary, IngestError>) -> Vec<String> {
        let mut say = Vec::new();
        match result {
            Err(e @ IngestError::Busy { .. }) => {
                let e = e.to_string();
                if self.failing.as_ref() != Some(&e) {
                    let writes = if bounded {
                        format!("remember and correct wait for it {} s at most, then record nothing", WRITE_WAITS_FOR_RUN.as_secs())
                    } else {
                        "remember and correct wait for it".to_owned()
                    };
                    say.push(format!("{e}: searches answer from what the store holds meanwhile; {writes}"));
                    self.failing = Some(e);
                }
            }
            Err(e) => {
                let e = e.to_string();
                if self.failing.as_ref() != Some(&e) {
                    say.push(format!(
                        "reading the agents' logs into the store failed: {e}. Searches answer from what the store \
                         holds, remember and correct fail, and the next ingest tries again"
                    ));
                    self.failing = Some(e);
                }
            }
            Ok(summary) => {
                if self.failing.take().is_some() {
                    say.push("reading the agents' logs into the store works again".to_owned());
                }
                let now: HashSet<String> = summary
                    .sources
                    .iter()
                    .flat_map(|(source, run)| run.problems.iter().map(move |p| format!("{source}: {p}")))
                    .collect();
                let mut new: Vec<&String> = now.iter().filter(|p| !self.problems.contains(*p)).collect();
                new.sort();
                say.extend(new.into_iter().cloned());
                if full {
                    self.problems = now;
                } else {
                    self.problems.extend(now);
                }
            }
        }
        say
    }
}

/// How long a read waits for a run under way (a first run of a large history takes minutes:
/// the read then answers from what is in the store so far).
pub const READ_WAITS_FOR_RUN: Duration = Duration::from_secs(5);

/// How long `remember` and `correct`, in a server whose waits are bounded
/// ([`Freshness::bound_waits`]), wait for the ingest they must run first: for a run under way in
/// this process, then for another process's ingest lock. Past it, nothing is recorded, and the
/// agent is told the store is busy (an MCP client gives a call a minute or more).
pub const WRITE_WAITS_FOR_RUN: Duration = Duration::from_secs(20);

/// Freshness for one process.
pub struct Freshness {
    ingester: Arc<Ingester>,
    read_interval: Duration,
    watch_interval: Option<Duration>,
    /// When the last run finished.
    last: Mutex<Option<Instant>>,
    /// Held for the length of a run: one run at a time in this process.
    running: Mutex<()>,
    /// What the watch saw of each log file last time: length and modification time.
    seen: Mutex<HashMap<PathBuf, (u64, Option<SystemTime>)>>,
    stop: Arc<(Mutex<bool>, Condvar)>,
    /// What was said of runs.
    reports: Mutex<Reports>,
    /// Whether what became of the cursors' snapshot was looked at (once, after the first run
    /// that needed the cursors).
    snapshot_looked: AtomicBool,
    say: Say,
    started: AtomicBool,
    /// Whether waits for what another holds end ([`Freshness::bound_waits`]).
    bounded: AtomicBool,
    /// Another process's run outlasted the last wait for it ([`Freshness::run_within`]), and no
    /// run here has had the ingest lock since.
    others_run: AtomicBool,
}

/// How long a read waits for another process's run while that run has outlasted an earlier
/// wait ([`Freshness::run_within`]): a try.
pub const OTHERS_RUN_RETRY: Duration = Duration::from_millis(50);

impl Freshness {
    /// Freshness with the spec's intervals (or those of `ORIGIN_READ_INGEST_INTERVAL_MS` and
    /// `ORIGIN_WATCH_INTERVAL_MS`; a value not understood is said through `say`).
    pub fn new(ingester: Arc<Ingester>, say: Say) -> Arc<Freshness> {
        let (read, read_warning) = read_interval_from_env();
        let (watch, watch_warning) = watch_interval_from_env();
        for w in [read_warning, watch_warning].into_iter().flatten() {
            say(&w);
        }
        Freshness::with_intervals(ingester, read, watch, say)
    }

    /// Freshness with chosen intervals (tests).
    pub fn with_intervals(ingester: Arc<Ingester>, read_interval: Duration, watch_interval: Option<Duration>, say: Say) -> Arc<Freshness> {
        Arc::new(Freshness {
            ingester,
            read_interval,
            watch_interval,
            last: Mutex::new(None),
            running: Mutex::new(()),
            seen: Mutex::new(HashMap::new()),
            stop: Arc::new((Mutex::new(false), Condvar::new())),
            reports: Mutex::new(Reports::default()),
            snapshot_looked: AtomicBool::new(false),
            say,
            started: AtomicBool::new(false),
            bounded: AtomicBool::new(false),
            others_run: AtomicBool::new(false),
        })
    }

    /// The ingester.
    pub fn ingester(&self) -> &Arc<Ingester> {
        &self.ingester
    }

    /// Bounds the waits of runs for another process's ingest lock, as a server answering an
    /// agent needs: a run in the background, or at the exit, waits for it at most
    /// [`READ_WAITS_FOR_RUN`] (and is tried again at the next look), and the ingest before a
    /// write at most [`WRITE_WAITS_FOR_RUN`], with any run under way in this process
    /// ([`Freshness::before_write`]). (A read waits for a run under way here, and for another
    /// process's, each at most [`READ_WAITS_FOR_RUN`], either way.)
    /// A process stopped while it held the lock kept the server's writes waiting for good.
    pub fn bound_waits(&self) {
        self.bounded.store(true, Ordering::SeqCst);
    }

    /// One run, of every file or only of those in `only`; what the user should know of it
    /// (a failure, a recovery, files that could not be read) is said. Where waits are bounded,
    /// another process's run is waited for at most [`READ_WAITS_FOR_RUN`].
    fn run(&self, only: Option<&HashSet<PathBuf>>) -> Result<RunSummary, IngestError> {
        if self.bounded.load(Ordering::SeqCst) {
            return self.run_within(only);
        }
        let result = self.ingester.run(only, &mut |_| {});
        self.after_run(only, result)
    }

    /// What follows a run (`result`, of every file or of `only`): its time kept, what the user
    /// should know of it said.
    fn after_run(&self, only: Option<&HashSet<PathBuf>>, result: Result<RunSummary, IngestError>) -> Result<RunSummary, IngestError> {
        *guard(&self.last) = Some(Instant::now());
        if result.is_ok() {
            self.others_run.store(false, Ordering::SeqCst);
        }
        let bounded = self.bounded.load(Ordering::SeqCst);
        for message in guard(&self.reports).after(only.is_none(), bounded, &result) {
            (self.say)(&message);
        }
        // Index files of sealed segments this process could not write, by this run or by any
        // write since the last (the tools' writes seal segments too).
        for message in self.ingester.journal().take_index_write_failures() {
            (self.say)(&message);
        }
        // Once, when the cursors were first needed (a run that failed before may not have).
        // Runs hold `running`, so one at a time gets here.
        if !self.snapshot_looked.load(Ordering::SeqCst)
            && let Some(used) = self.ingester.snapshot_use()
        {
            self.snapshot_looked.store(true, Ordering::SeqCst);
            if let SnapshotUse::Rejected { reason } = used {
                let path = self.ingester.snapshot_path().map(|p| format!(" {}", p.display())).unwrap_or_default();
                (self.say)(&format!("the ingest cursors' snapshot{path} was not used ({reason}); they were read again from the journal"));
            }
        }
        result
    }

    /// [`Freshness::run`] of every file (or of those in `only`) for a read, or in the
    /// background where waits are bounded: another process's run is waited for at most
    /// [`READ_WAITS_FOR_RUN`] ([`Ingester::run_within`]); while another's run has outlasted
    /// such a wait and no run here has had the lock since (a long first ingest elsewhere, or
    /// one stopped), only tried ([`OTHERS_RUN_RETRY`]), so that each read does not wait again.
    /// A failure, or that wait ending, is said (once).
    fn run_within(&self, only: Option<&HashSet<PathBuf>>) -> Result<RunSummary, IngestError> {
        let wait = if self.others_run.load(Ordering::SeqCst) { OTHERS_RUN_RETRY } else { READ_WAITS_FOR_RUN };
        let result = match self.ingester.run_within(only, &mut |_| {}, wait) {
            // Said as the wait it follows on from.
            Err(IngestError::Busy { path, holders, .. }) => Err(IngestError::Busy { path, waited: READ_WAITS_FOR_RUN, holders }),
            other => other,
        };
        self.others_run.store(matches!(result, Err(IngestError::Busy { .. })), Ordering::SeqCst);
        self.after_run(only, result)
    }

    /// A run whose failure has been said and changes nothing for the caller (the background,
    /// reads, the exit): its summary when it went well.
    fn run_said(&self, only: Option<&HashSet<PathBuf>>) -> Option<RunSummary> {
        self.run(only).ok()
    }

    /// Starts the background work: a full ingest now, then the watch. Once per process (`None`
    /// when started already, or when its thread could not start, which is said).
    pub fn start(self: &Arc<Self>) -> Option<JoinHandle<()>> {
        if self.started.swap(true, Ordering::SeqCst) {
            return None;
        }
        let me = self.clone();
        let spawned = std::thread::Builder::new().name("origin-freshness".into()).spawn(move || {
            {
                let _r = guard(&me.running);
                let now = me.stat_all();
                // After a failed run nothing is seen: the first look reads every file again.
                if let Some(summary) = me.run_said(None) {
                    me.saw(now, &summary);
                }
            }
            let Some(every) = me.watch_interval else { return };
            loop {
                let (lock, cv) = &*me.stop;
                let stopped = guard(lock);
                let (stopped, _) = cv.wait_timeout_while(stopped, every, |s| !*s).unwrap_or_else(|p| p.into_inner());
                if *stopped {
                    return;
                }
                drop(stopped);
                me.watch_once();
            }
        });
        match spawned {
            Ok(handle) => Some(handle),
            Err(e) => {
                (self.say)(&format!(
                    "the background ingest could not start ({e}); new log lines are read before searches and writes only"
                ));
                None
            }
        }
    }

    /// Stops the watch (the background thread ends at its next wake-up, at once if waiting).
    pub fn stop(&self) {
        let (lock, cv) = &*self.stop;
        *guard(lock) = true;
        cv.notify_all();
    }

    /// Files found now with their length and modification time.
    fn stat_all(&self) -> HashMap<PathBuf, (u64, Option<SystemTime>)> {
        self.ingester
            .discover()
            .into_iter()
            .flat_map(|(_, files, _)| files)
            .map(|f| {
                let meta = std::fs::metadata(&f.path).ok();
                let len = meta.as_ref().map_or(0, |m| m.len());
                let mtime = meta.and_then(|m| m.modified().ok());
                (f.path, (len, mtime))
            })
            .collect()
    }

    /// Takes `now` (files as stated before a run that went well) as what the watch has seen,
    /// except the files the run could not read, which count as changed at the next look.
    fn saw(&self, mut now: HashMap<PathBuf, (u64, Option<SystemTime>)>, summary: &RunSummary) {
        for run in summary.sources.values() {
            for p in &run.unread {
                now.remove(p);
            }
        }
        *guard(&self.seen) = now;
    }

    /// One look: ingests only the files that changed since the last look. Returns how many
    /// files changed. A file a run could not read, or all of them when the run failed, counts
    /// as changed at the next look too.
    pub fn watch_once(&self) -> usize {
        let _r = guard(&self.running);
        let now = self.stat_all();
        let changed: HashSet<PathBuf> = {
            let seen = guard(&self.seen);
            now.iter().filter(|(p, s)| seen.get(*p) != Some(*s)).map(|(p, _)| p.clone()).collect()
        };
        if changed.is_empty() {
            *guard(&self.seen) = now;
        } else if let Some(summary) = self.run_said(Some(&changed)) {
            self.saw(now, &summary);
        }
        changed.len()
    }

    /// Before `search` and `timeline`: ingests if the last ingest is older than the read
    /// interval. A run already under way (the one a server starts with, or the watch's) is
    /// waited for, at most [`READ_WAITS_FOR_RUN`], so that a read just after a start finds the
    /// lines written before it; it then counts as the read's ingest. A run that fails is said,
    /// and the read goes on from what the store holds: `None`, as when no run was due.
    pub fn before_read(&self) -> Option<RunSummary> {
        let waited_to = Instant::now() + READ_WAITS_FOR_RUN;
        let _r = loop {
            match self.running.try_lock() {
                Ok(r) => break r,
                Err(std::sync::TryLockError::Poisoned(p)) => break p.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) if Instant::now() < waited_to => std::thread::sleep(Duration::from_millis(5)),
                Err(std::sync::TryLockError::WouldBlock) => return None,
            }
        };
        let due = guard(&self.last).is_none_or(|t| t.elapsed() >= self.read_interval);
        if !due {
            return None;
        }
        // Another process's run (its lock) is waited for as long as one here would be.
        self.run_within(None).ok()
    }

    /// Before `remember` and `correct`: always ingests, after any run under way, so a line the
    /// agent just wrote can be cited. A failure is said and returned (the write fails). Where
    /// waits are bounded ([`Freshness::bound_waits`]), the run under way and another process's
    /// ingest lock are waited for [`WRITE_WAITS_FOR_RUN`] in all: past it, the write fails
    /// with [`IngestError::RunUnderWay`] or [`IngestError::Busy`].
    pub fn before_write(&self) -> Result<RunSummary, IngestError> {
        if !self.bounded.load(Ordering::SeqCst) {
            let _r = guard(&self.running);
            return self.run(None);
        }
        let started = Instant::now();
        let until = started + WRITE_WAITS_FOR_RUN;
        let _r = loop {
            match self.running.try_lock() {
                Ok(r) => break r,
                Err(std::sync::TryLockError::Poisoned(p)) => break p.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) if Instant::now() < until => std::thread::sleep(Duration::from_millis(5)),
                Err(std::sync::TryLockError::WouldBlock) => return Err(IngestError::RunUnderWay { waited: WRITE_WAITS_FOR_RUN }),
            }
        };
        let result = self.ingester.run_within(None, &mut |_| {}, until.saturating_duration_since(Instant::now()));
        // The ingest lock's wait running out is the write's failure alone (the agent is told,
        // with all the write waited); it is not said as a run's. (A journal's lock whose wait
        // ran out during the run is, as any failure of a run.)
        match result {
            Err(IngestError::Busy { path, holders, .. }) => Err(IngestError::Busy { path, waited: started.elapsed(), holders }),
            result => self.after_run(None, result),
        }
    }

    /// When the agent exits: one last ingest, waiting for it at most `budget`. Returns whether
    /// it ended in time (if not, it goes on until the process ends); a failure is said.
    pub fn on_exit(self: &Arc<Self>, budget: Duration) -> bool {
        self.stop();
        let (tx, rx) = std::sync::mpsc::channel();
        let me = self.clone();
        let spawned = std::thread::Builder::new().name("origin-exit-ingest".into()).spawn(move || {
            let _r = guard(&me.running);
            me.run_said(None);
            // The receiver is gone when the budget ran out first: nothing is waiting to hear.
            tx.send(()).ok();
        });
        if let Err(e) = spawned {
            (self.say)(&format!("the last ingest could not start ({e}); the next start reads what it would have"));
            return true;
        }
        match rx.recv_timeout(budget) {
            Ok(()) => true,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => false,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                (self.say)("the last ingest stopped on a bug (its thread panicked); the next start reads what it left");
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::SourceRun;

    fn summary(problems: &[&str]) -> Result<RunSummary, IngestError> {
        let run = SourceRun { problems: problems.iter().map(|p| (*p).to_owned()).collect(), ..SourceRun::default() };
        Ok(RunSummary { sources: [("codex", run)].into_iter().collect() })
    }

    #[test]
    fn each_problem_and_each_failure_is_said_once_until_it_goes() {
        let mut r = Reports::default();
        assert_eq!(r.after(true, false, &summary(&["a.jsonl: denied"])), ["codex: a.jsonl: denied"]);
        assert!(r.after(true, false, &summary(&["a.jsonl: denied"])).is_empty(), "said already");
        assert_eq!(r.after(false, false, &summary(&["b.jsonl: denied"])), ["codex: b.jsonl: denied"]);
        assert!(r.after(false, false, &summary(&[])).is_empty(), "a run of changed files only: nothing is gone");
        assert!(r.after(true, false, &summary(&["b.jsonl: denied"])).is_empty(), "a full run: a.jsonl is gone");
        assert_eq!(r.after(true, false, &summary(&["a.jsonl: denied", "b.jsonl: denied"])), ["codex: a.jsonl: denied"], "back");
        let fail = |m: &str| Err(IngestError::Worker(m.to_owned()));
        let said = r.after(true, false, &fail("disk full"));
        assert!(said.len() == 1 && said[0].contains("failed: disk full"), "{said:?}");
        assert!(r.after(false, false, &fail("disk full")).is_empty(), "the same failure again");
        assert!(r.after(true, false, &fail("lock")).len() == 1, "another failure");
        assert_eq!(r.after(true, false, &summary(&["a.jsonl: denied", "b.jsonl: denied"])), ["reading the agents' logs into the store works again"]);
        assert!(r.after(true, false, &summary(&[])).is_empty());
    }
}
