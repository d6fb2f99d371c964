//! Keeping up with agents that are still writing, as the spec's "Freshness" says: ingest
//! everything in the background at start; before `search` and `timeline` at most every 10 s;
//! always before `remember` and `correct`; a watch every 60 s (`ORIGIN_WATCH_INTERVAL_MS`, 0
//! turns it off) that reads only files that changed; one last ingest on exit within 5 s.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use crate::ingest::{IngestError, Ingester, RunSummary};

/// Least time between the ingests that reads trigger.
pub const READ_INGEST_INTERVAL: Duration = Duration::from_secs(10);
/// Default watch interval.
pub const WATCH_INTERVAL_DEFAULT: Duration = Duration::from_secs(60);
/// How long the last ingest on exit may take.
pub const EXIT_INGEST_BUDGET: Duration = Duration::from_secs(5);

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
    match value {
        None => (Some(WATCH_INTERVAL_DEFAULT), None),
        Some(v) => match v.trim().parse::<u64>() {
            Ok(0) => (None, None),
            Ok(ms) => (Some(Duration::from_millis(ms)), None),
            Err(_) => (
                Some(WATCH_INTERVAL_DEFAULT),
                Some(format!("ORIGIN_WATCH_INTERVAL_MS={v:?} is not a number of milliseconds; watching every 60 s")),
            ),
        },
    }
}

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
    /// The last error a background run met (shown by the caller; runs go on).
    last_error: Mutex<Option<String>>,
    started: AtomicBool,
}

impl Freshness {
    /// Freshness with the spec's intervals (watch from `ORIGIN_WATCH_INTERVAL_MS`).
    pub fn new(ingester: Arc<Ingester>) -> Arc<Freshness> {
        let (watch, _) = watch_interval_from_env();
        Freshness::with_intervals(ingester, READ_INGEST_INTERVAL, watch)
    }

    /// Freshness with chosen intervals (tests).
    pub fn with_intervals(ingester: Arc<Ingester>, read_interval: Duration, watch_interval: Option<Duration>) -> Arc<Freshness> {
        Arc::new(Freshness {
            ingester,
            read_interval,
            watch_interval,
            last: Mutex::new(None),
            running: Mutex::new(()),
            seen: Mutex::new(HashMap::new()),
            stop: Arc::new((Mutex::new(false), Condvar::new())),
            last_error: Mutex::new(None),
            started: AtomicBool::new(false),
        })
    }

    /// The ingester.
    pub fn ingester(&self) -> &Arc<Ingester> {
        &self.ingester
    }

    /// The last error a background run met, if any.
    pub fn last_error(&self) -> Option<String> {
        guard(&self.last_error).clone()
    }

    fn run(&self, only: Option<&HashSet<PathBuf>>) -> Result<RunSummary, IngestError> {
        let result = self.ingester.run(only, &mut |_| {});
        *guard(&self.last) = Some(Instant::now());
        match &result {
            Ok(_) => *guard(&self.last_error) = None,
            Err(e) => *guard(&self.last_error) = Some(e.to_string()),
        }
        result
    }

    /// Starts the background work: a full ingest now, then the watch. Once per process.
    pub fn start(self: &Arc<Self>) -> Option<JoinHandle<()>> {
        if self.started.swap(true, Ordering::SeqCst) {
            return None;
        }
        let me = self.clone();
        Some(std::thread::spawn(move || {
            {
                let _r = guard(&me.running);
                let _ = me.run(None);
                me.remember_seen();
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
        }))
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

    fn remember_seen(&self) {
        *guard(&self.seen) = self.stat_all();
    }

    /// One look: ingests only the files that changed since the last look. Returns how many
    /// files changed.
    pub fn watch_once(&self) -> usize {
        let _r = guard(&self.running);
        let now = self.stat_all();
        let changed: HashSet<PathBuf> = {
            let seen = guard(&self.seen);
            now.iter().filter(|(p, s)| seen.get(*p) != Some(*s)).map(|(p, _)| p.clone()).collect()
        };
        if !changed.is_empty() {
            let _ = self.run(Some(&changed));
        }
        *guard(&self.seen) = now;
        changed.len()
    }

    /// Before `search` and `timeline`: ingests if the last ingest is older than the read
    /// interval. Does not wait for a run already under way (its results arrive with it).
    pub fn before_read(&self) -> Result<Option<RunSummary>, IngestError> {
        let Ok(_r) = self.running.try_lock() else { return Ok(None) };
        let due = guard(&self.last).is_none_or(|t| t.elapsed() >= self.read_interval);
        if !due {
            return Ok(None);
        }
        self.run(None).map(Some)
    }

    /// Before `remember` and `correct`: always ingests, after any run under way, so a line the
    /// agent just wrote can be cited.
    pub fn before_write(&self) -> Result<RunSummary, IngestError> {
        let _r = guard(&self.running);
        self.run(None)
    }

    /// When the agent exits: one last ingest, waiting for it at most `budget`. Returns whether
    /// it finished in time (if not, it goes on until the process ends).
    pub fn on_exit(self: &Arc<Self>, budget: Duration) -> bool {
        self.stop();
        let (tx, rx) = std::sync::mpsc::channel();
        let me = self.clone();
        std::thread::spawn(move || {
            let _r = guard(&me.running);
            let ok = me.run(None).is_ok();
            let _ = tx.send(ok);
        });
        matches!(rx.recv_timeout(budget), Ok(true))
    }
}
