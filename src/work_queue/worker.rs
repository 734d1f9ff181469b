//! The consumer loop: its settings, the sync loops (one job at a time, or several on
//! threads), what it reports, and the connections it opens again.

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::renew::{Renewal, RenewalCounts, renew_on_thread};
use super::retry::{JobErrorKind, jitter};
use super::spans::HandlerScope;
use super::work_loop::{WorkStep, Working};
use super::{
    HandlerError, Job, JobError, JobOutput, LEASE_LOST, MAX_CONCURRENCY, MemoryPolicy, Nacked,
    OnEviction, WorkQueue, is_transient,
};
use crate::runtime::error::{Error, Result};
use crate::runtime::machine::RunOps;
use crate::runtime::op::{Op, ScriptMode};

/// The longest a concurrent worker with jobs still running waits for new work before it
/// looks for jobs that ended, to ack them.
pub(super) const IN_FLIGHT_WAIT: Duration = Duration::from_millis(100);

/// A flag that asks a [`Worker`] to stop: it finishes the job in hand, acks or nacks it,
/// and returns. Clones share the flag.
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    /// A flag not yet raised.
    pub fn new() -> Self {
        Stop::default()
    }

    /// Asks every worker watching this flag to stop.
    pub fn stop(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether [`stop`](Self::stop) was called.
    pub fn is_stopped(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// What a [`Worker`] did before it stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkReport {
    /// Jobs the handler finished and that were acked.
    pub acked: u64,
    /// Jobs the handler failed that will be delivered again.
    pub retried: u64,
    /// Jobs the handler failed on their last delivery, or for good
    /// ([`JobError::unrecoverable`]): now in the dead-letter queue.
    pub dead: u64,
    /// Jobs given back with their group held back ([`JobError::rate_limit_group`]).
    pub held_back: u64,
    /// Jobs whose lease was lost before they ended (the handler outlived the lease and
    /// another worker took the job): their ack or nack changed nothing.
    pub lost: u64,
    /// Lease renewals that failed for a reason other than a lost lease (a closed
    /// connection, a server that did not answer, a demoted server): each was tried again
    /// on a new connection. Jobs whose lease ran out meanwhile are counted in `lost`.
    pub renewals_failed: u64,
    /// Connections the loop opened again after one failed (the server closed an idle
    /// one, a proxy or `CLIENT KILL` cut it, the server restarted), or after a server
    /// error that calls for a new connection (see `server_retries`).
    pub reconnects: u64,
    /// Calls of the loop (takes, acks, nacks, waits) that met a server changing roles,
    /// loading its data or moving slots (`UNBLOCKED`, `READONLY`, `LOADING`,
    /// `MASTERDOWN`, `TRYAGAIN`, `CLUSTERDOWN`, `BUSY`: see [`is_transient`]) and were
    /// sent again, on a new connection, after a pause.
    pub server_retries: u64,
    /// What the loop found of its server's `maxmemory-policy` when it started (see
    /// [`OnEviction`]).
    pub memory_policy: MemoryPolicy,
}

/// What a [`Worker`] opens its connections with, and opens again when one fails:
/// [`redis::Client`], [`redis::cluster::ClusterClient`] (feature `cluster`),
/// a `Mutex<redis::sentinel::SentinelClient>` (feature `sentinel`: the primary the
/// sentinels name at each new connection), or your own (a list of servers, asked which is the
/// primary now).
pub trait Connect: Sync {
    /// A new connection.
    fn connect(&self) -> redis::RedisResult<Box<dyn redis::ConnectionLike + Send>>;
}

impl Connect for redis::Client {
    fn connect(&self) -> redis::RedisResult<Box<dyn redis::ConnectionLike + Send>> {
        Ok(Box::new(self.get_connection()?))
    }
}

/// The primary the sentinels name now (feature `sentinel`), through a
/// `redis::sentinel::SentinelClient` in a `Mutex` (it needs `&mut` to ask): each new
/// connection asks the sentinels, so a loop whose connection failed after a failover
/// finds the new primary.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use std::sync::Mutex;
/// use redis::sentinel::{SentinelClient, SentinelServerType};
/// use redis_patterns::work_queue::{Stop, WorkQueue};
///
/// let sentinels = vec!["redis://10.0.0.1:26379", "redis://10.0.0.2:26379", "redis://10.0.0.3:26379"];
/// let client = SentinelClient::build(sentinels, "jobs".into(), None, SentinelServerType::Master)?;
/// let client = Mutex::new(client);
/// let queue = WorkQueue::new("emails")?;
/// let report = queue.worker().run(&client, &Stop::new(), |job| send(&job.payload))?;
/// # Ok(()) }
/// # fn send(_: &[u8]) -> Result<(), String> { Ok(()) }
/// ```
#[cfg(feature = "sentinel")]
impl Connect for std::sync::Mutex<redis::sentinel::SentinelClient> {
    fn connect(&self) -> redis::RedisResult<Box<dyn redis::ConnectionLike + Send>> {
        // A panic elsewhere while asking leaves the client as usable as before.
        let mut client = self.lock().unwrap_or_else(|e| e.into_inner());
        Ok(Box::new(client.get_connection()?))
    }
}

#[cfg(feature = "cluster")]
impl Connect for redis::cluster::ClusterClient {
    fn connect(&self) -> redis::RedisResult<Box<dyn redis::ConnectionLike + Send>> {
        Ok(Box::new(self.get_connection()?))
    }
}

/// The consumer loop of a [`WorkQueue`]: takes jobs, renews each one's lease every third
/// of the lease while its handler runs, then acks it (`Ok`) or nacks it with the error's
/// text and the queue's backoff (`Err`; a [`JobError`] may ask to fail it for good or to
/// hold its group back instead). A finished job is acked in the same call that
/// takes the next ([`ack_and_take`](WorkQueue::ack_and_take)), so a busy worker makes one
/// round trip per job. With nothing to take it waits for a wake-up
/// ([`wait_for_work`](WorkQueue::wait_for_work)): a job added to an idle queue starts at
/// once; a delayed job that comes due is found within [`poll`](Self::poll).
///
/// [`run`](Self::run) runs one job at a time on the calling thread;
/// [`run_concurrent`](Self::run_concurrent) runs up to [`concurrency`](Self::concurrency)
/// jobs on threads of its own, each under its own lease, on the same two connections.
/// Either returns when the [`Stop`] flag is raised (after the jobs in hand), or with the
/// first error that cannot pass: a failed connection, and a server that changes roles,
/// loads its data or moves slots (a failover, a restart: see [`is_transient`]), only
/// make it open a new connection and send the call again, after a pause that doubles
/// from 10 ms up to 1 s; [`WorkReport`] counts them.
///
/// A handler that panics unwinds through the loop: its job is not acked, and is handed
/// out again once its lease runs out.
#[derive(Clone)]
pub struct Worker<'q> {
    pub(super) queue: &'q WorkQueue,
    pub(super) poll: Duration,
    /// How the loop's operations run their scripts.
    pub(super) mode: ScriptMode,
    pub(super) concurrency: u64,
    pub(super) on_eviction: OnEviction,
    /// Where the async loop's renewals connect from, if not the loop's connection.
    pub(super) renew_from: Option<Arc<dyn Connect + Send>>,
}

impl fmt::Debug for Worker<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worker")
            .field("queue", &self.queue.name)
            .field("poll", &self.poll)
            .field("mode", &self.mode)
            .field("concurrency", &self.concurrency)
            .field("on_eviction", &self.on_eviction)
            .field("renew_from", &self.renew_from.is_some())
            .finish()
    }
}

impl<'q> Worker<'q> {
    pub(super) fn new(queue: &'q WorkQueue) -> Self {
        Worker {
            queue,
            poll: Duration::from_millis(200),
            mode: ScriptMode::Eval,
            concurrency: 1,
            on_eviction: OnEviction::Warn,
            renew_from: None,
        }
    }
}

impl Worker<'_> {
    /// The longest wait for a wake-up before looking for jobs again (200 ms by default),
    /// which is how late a delayed job that came due may start. Each wait is drawn at
    /// random from 80 % to 100 % of it, so that workers started together do not look in
    /// step.
    pub fn poll(mut self, interval: Duration) -> Self {
        self.poll = interval;
        self
    }

    /// How the loop's takes, acks, nacks and renewals run their scripts
    /// ([`ScriptMode::Eval`] by default): see [`Op::via`].
    ///
    /// ```no_run
    /// # fn demo() -> redis_patterns::Result<()> {
    /// use redis_patterns::ScriptMode;
    /// use redis_patterns::work_queue::{Stop, WorkQueue};
    ///
    /// let client = redis::Client::open("redis://127.0.0.1/")?;
    /// let queue = WorkQueue::new("thumbnails")?;
    /// let worker = queue.worker().via(ScriptMode::Functions);
    /// worker.run(&client, &Stop::new(), |_job| Ok::<(), String>(()))?;
    /// # Ok(()) }
    /// ```
    pub fn via(mut self, mode: ScriptMode) -> Self {
        self.mode = mode;
        self
    }

    /// How many jobs [`run_concurrent`](Self::run_concurrent) and
    /// [`run_async`](Self::run_async) run at once (1 to [`MAX_CONCURRENCY`]; 1 by default), each
    /// under its own lease: on threads of their own for `run_concurrent`, as futures
    /// polled side by side in the loop's task for `run_async`.
    pub fn concurrency(mut self, jobs: u64) -> Result<Self> {
        if jobs == 0 || jobs > MAX_CONCURRENCY {
            return Err(Error::invalid(
                "concurrency",
                format!("must be from 1 to {MAX_CONCURRENCY}, got {jobs}"),
            ));
        }
        self.concurrency = jobs;
        Ok(self)
    }

    /// What the loop does when its server's `maxmemory-policy` may evict the queue's keys
    /// ([`OnEviction::Warn`] by default): it looks once, as it starts, with `CONFIG GET`
    /// (where the server refuses it, [`WorkReport::memory_policy`] is
    /// [`MemoryPolicy::Unknown`] and, with `tracing`, one warning says so).
    pub fn on_eviction(mut self, on_eviction: OnEviction) -> Self {
        self.on_eviction = on_eviction;
        self
    }

    /// Where [`run_async`](Self::run_async) sends its lease renewals from: a thread of
    /// their own, on a sync connection opened (and opened again when it fails) with
    /// `client`. Without it the renewals run in the loop's task beside the handler, and a
    /// handler that blocks its thread (CPU work outside `spawn_blocking`, a sync call)
    /// stops them: its lease runs out, and the job runs a second time elsewhere. With it
    /// a blocked handler cannot stop them, on any runtime, `current_thread` included; it
    /// costs one OS thread and one connection per running loop.
    pub fn renew_from(mut self, client: impl Connect + Send + 'static) -> Self {
        self.renew_from = Some(Arc::new(client));
        self
    }

    pub(super) fn renew_every(&self) -> Duration {
        (self.queue.lease / 3).max(Duration::from_millis(1))
    }

    /// One wait for a wake-up, with its jitter (at least 1 ms, which the command needs).
    pub(super) fn wait(&self) -> Op<bool> {
        let wait = self.poll * 4 / 5 + jitter(self.poll / 5);
        self.queue
            .wait_for_work(wait.max(Duration::from_millis(1)))
            .via(self.mode)
    }

    /// A wait for work of at most `most` (and at most `poll`).
    pub(super) fn wait_at_most(&self, most: Duration) -> Op<bool> {
        self.queue
            .wait_for_work(most.min(self.poll).max(Duration::from_millis(1)))
            .via(self.mode)
    }

    /// The call that ends a failed job as its handler's error asks.
    pub(super) fn nack(&self, job: &Job, why: JobError) -> Op<Ending> {
        let nacked = |nacked| {
            Ok(match nacked {
                Nacked::Dead { .. } => Ending::Dead,
                Nacked::Retry { .. } => Ending::Retried,
            })
        };
        match why.kind {
            JobErrorKind::RateLimitGroup(hold) if job.group.is_some() => self
                .queue
                .rate_limit_group(job, hold)
                .map(|_| Ok(Ending::HeldBack)),
            JobErrorKind::Unrecoverable => self.queue.fail(job, why.message).map(nacked),
            _ => self.queue.nack(job, why.message).map(nacked),
        }
        .via(self.mode)
    }

    pub(super) fn judge_memory(
        &self,
        policy: Option<String>,
        meaning: MemoryPolicy,
    ) -> Result<MemoryPolicy> {
        match (meaning, policy) {
            (MemoryPolicy::AllKeys, Some(policy)) if self.on_eviction == OnEviction::Refuse => {
                return Err(Error::EvictingServer { policy });
            }
            (MemoryPolicy::AllKeys, Some(_policy)) => {
                #[cfg(feature = "tracing")]
                tracing::warn!(
                    queue = %self.queue.name,
                    policy = %_policy,
                    "the server's maxmemory-policy may evict the queue's keys and lose its \
                     jobs silently: set it to noeviction"
                );
            }
            (MemoryPolicy::Unknown, _policy) => {
                #[cfg(feature = "tracing")]
                tracing::warn!(
                    queue = %self.queue.name,
                    policy = ?_policy,
                    "could not read the server's maxmemory-policy (CONFIG GET refused): make \
                     sure it is noeviction, or the queue's keys may be evicted"
                );
            }
            _ => {}
        }
        Ok(meaning)
    }

    /// Runs the loop on sync connections it opens with `client` (a [`redis::Client`], a
    /// cluster client, your own [`Connect`]): one for taking and ending jobs, one for
    /// lease renewals, sent from another thread while the handler runs on this one. A
    /// connection that fails (the server's `timeout` closed it while it sat idle, a proxy
    /// or `CLIENT KILL` cut it, the server restarted), and a server that answers with an
    /// error that passes ([`is_transient`]: a demoted primary's `UNBLOCKED` and
    /// `READONLY`, a restarted server's `LOADING`, …), make the loop open a new
    /// connection and send the call again, after a pause that doubles from 10 ms up to
    /// 1 s; a renewal that failed is sent again at once on the new connection.
    /// [`WorkReport`] counts them. After a failover, a `client` that always opens the
    /// same address reaches the demoted node and waits until it is a primary again: give
    /// the worker a [`Connect`] that finds the primary (Sentinel, a DNS name the
    /// provider moves, or a cluster client) to go on at once.
    ///
    /// Runs one job at a time; a [`concurrency`](Self::concurrency) above 1 is
    /// [`Error::InvalidInput`] here (see [`run_concurrent`](Self::run_concurrent)).
    ///
    /// ```no_run
    /// # fn demo() -> redis_patterns::Result<()> {
    /// use redis_patterns::work_queue::{Stop, WorkQueue};
    ///
    /// let client = redis::Client::open("redis://127.0.0.1/")?;
    /// let queue = WorkQueue::new("thumbnails")?;
    /// let stop = Stop::new();
    /// let on_signal = stop.clone(); // raise it from a signal handler or another thread
    /// let report = queue.worker().run(&client, &stop, |job| {
    ///     let path: String = job.payload_as().map_err(|e| e.to_string())?;
    ///     make_thumbnail(&path)
    /// })?;
    /// println!("{} done, {} to retry, {} dead", report.acked, report.retried, report.dead);
    /// # Ok(()) }
    /// # fn make_thumbnail(_: &str) -> Result<(), String> { Ok(()) }
    /// ```
    pub fn run<H, O, E>(
        &self,
        client: &dyn Connect,
        stop: &Stop,
        mut handler: H,
    ) -> Result<WorkReport>
    where
        H: FnMut(&Job) -> std::result::Result<O, E>,
        O: JobOutput,
        E: HandlerError,
    {
        if self.concurrency > 1 {
            return Err(Error::invalid(
                "concurrency",
                "run runs one job at a time: use run_concurrent for more",
            ));
        }
        let mut inline = |jobs: Vec<Job>, working: &mut Working<'_, '_>| {
            for job in jobs {
                let outcome = {
                    let _scope = working.scope_of(&job).enter();
                    handler(&job).map(JobOutput::into_result)
                };
                working.ended(job, outcome.map_err(HandlerError::into_job_error));
            }
        };
        // The handler runs inside `Start`: none is running at any other step.
        self.drive(client, stop, &mut inline, &mut |_, _| {})
    }

    /// Runs up to [`concurrency`](Self::concurrency) jobs at once, each on a thread of
    /// its own (scoped: they end with the call) and under its own lease, on two
    /// connections opened with `client`, as [`run`](Self::run) does: this thread takes
    /// and ends the jobs, up to the free slots ([`MAX_TAKE`](super::MAX_TAKE) per call), acking those
    /// finished in the same call; another renews the leases of all the jobs in hand. A failed job is
    /// nacked at once. While slots are free and the queue is empty this thread waits for
    /// a wake-up: for at most [`poll`](Self::poll) when no job runs, and at most 100 ms
    /// while some do, so that the jobs that end meanwhile are acked within that (their
    /// leases renewed until then). Faults are met as in [`run`](Self::run).
    ///
    /// ```no_run
    /// # fn demo() -> redis_patterns::Result<()> {
    /// use redis_patterns::work_queue::{Stop, WorkQueue};
    ///
    /// let client = redis::Client::open("redis://127.0.0.1/")?;
    /// let queue = WorkQueue::new("thumbnails")?;
    /// let report = queue
    ///     .worker()
    ///     .concurrency(8)?
    ///     .run_concurrent(&client, &Stop::new(), |job| make_thumbnail(&job.payload))?;
    /// # Ok(()) }
    /// # fn make_thumbnail(_: &[u8]) -> Result<(), String> { Ok(()) }
    /// ```
    pub fn run_concurrent<H, O, E>(
        &self,
        client: &dyn Connect,
        stop: &Stop,
        handler: H,
    ) -> Result<WorkReport>
    where
        H: Fn(&Job) -> std::result::Result<O, E> + Sync,
        O: JobOutput,
        E: HandlerError,
    {
        let (work_tx, work_rx) = channel::<(Job, HandlerScope)>();
        let work_rx = Mutex::new(work_rx);
        let (done_tx, done_rx) = channel::<(Job, Outcome)>();
        let mut panicked = None;
        let report = std::thread::scope(|scope| {
            for _ in 0..self.concurrency {
                let (work_rx, done_tx, handler) = (&work_rx, done_tx.clone(), &handler);
                scope.spawn(move || {
                    loop {
                        // The lock is held while waiting for a job, not while running it.
                        let next = work_rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                        let Ok((job, scope)) = next else { return };
                        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
                            let _scope = scope.enter();
                            handler(&job).map(JobOutput::into_result)
                        }));
                        let outcome = match outcome {
                            Ok(done) => Outcome::Ended(done.map_err(HandlerError::into_job_error)),
                            Err(panic) => Outcome::Panicked(panic),
                        };
                        if done_tx.send((job, outcome)).is_err() {
                            return;
                        }
                    }
                });
            }
            let mut hand_over = |(job, outcome), working: &mut Working<'_, '_>| match outcome {
                Outcome::Ended(outcome) => working.ended(job, outcome),
                Outcome::Panicked(panic) => {
                    working.panicked(&job);
                    panicked.get_or_insert(panic);
                }
            };
            let mut start = |jobs: Vec<Job>, working: &mut Working<'_, '_>| {
                for job in jobs {
                    let scope = working.scope_of(&job);
                    let _ = work_tx.send((job, scope));
                }
            };
            let mut collect = |wait: Option<Duration>, working: &mut Working<'_, '_>| {
                if let Some(wait) = wait
                    && let Ok(one) = done_rx.recv_timeout(wait)
                {
                    hand_over(one, working);
                }
                for one in done_rx.try_iter() {
                    hand_over(one, working);
                }
            };
            let report = self.drive(client, stop, &mut start, &mut collect);
            // The handler threads end once the work channel closes.
            drop(work_tx);
            report
        });
        if let Some(panic) = panicked {
            std::panic::resume_unwind(panic);
        }
        report
    }

    /// The sync driver of the worker's loop ([`Working`]): its calls on a connection
    /// opened with `client`, the renewals on a thread of their own; `start` starts the
    /// handlers of the jobs taken, `collect` hands on those that ended, waiting up to
    /// the time given for one (none: only those that ended already).
    fn drive(
        &self,
        client: &dyn Connect,
        stop: &Stop,
        start: &mut dyn FnMut(Vec<Job>, &mut Working<'_, '_>),
        collect: &mut dyn FnMut(Option<Duration>, &mut Working<'_, '_>),
    ) -> Result<WorkReport> {
        let counts = RenewalCounts::default();
        let report = std::thread::scope(|scope| {
            let (renew_tx, renew_rx) = channel::<Renewal>();
            let counts = &counts;
            scope.spawn(move || renew_on_thread(self.queue, self.mode, client, renew_rx, counts));
            let renewals = move |renewal| {
                let _ = renew_tx.send(renewal);
            };
            let mut working = Working::new(self, stop, &renewals);
            let mut link = Link::new(client);
            loop {
                collect(None, &mut working);
                match working.step() {
                    WorkStep::Run(op) | WorkStep::Wait(op) => working.feed(link.try_run(&op)),
                    WorkStep::Start(jobs) => start(jobs, &mut working),
                    WorkStep::AwaitEnd(most) => collect(Some(most), &mut working),
                    WorkStep::Pause(pause) => std::thread::sleep(pause),
                    WorkStep::Done(report) => break report,
                }
            }
        });
        let mut report = report?;
        counts.add_to(&mut report);
        Ok(report)
    }
}

/// What a handler thread of [`Worker::run_concurrent`] hands back.
enum Outcome {
    /// With the result to keep ('' for none), or why it failed.
    Ended(std::result::Result<Vec<u8>, JobError>),
    Panicked(Box<dyn std::any::Any + Send>),
}

/// How a job the worker held ended.
pub(super) enum Ending {
    Acked,
    Retried,
    Dead,
    HeldBack,
}

impl Ending {
    /// As the `settle` span's outcome says it.
    pub(super) fn as_str(&self) -> &'static str {
        match self {
            Ending::Acked => "ack",
            Ending::Retried => "retry",
            Ending::Dead => "dead",
            Ending::HeldBack => "held_back",
        }
    }
}

impl WorkReport {
    pub(super) fn count(&mut self, ending: Result<Ending>) -> Result<()> {
        match ending {
            Ok(Ending::Acked) => self.acked += 1,
            Ok(Ending::Retried) => self.retried += 1,
            Ok(Ending::Dead) => self.dead += 1,
            Ok(Ending::HeldBack) => self.held_back += 1,
            Err(err) if err.code() == Some(LEASE_LOST) => self.lost += 1,
            Err(err) => return Err(err),
        }
        Ok(())
    }
}

/// A sync connection of the worker loop's, opened on first use and again after it failed
/// or its server answered with an error that passes (the loop that runs on it counts
/// them and pauses: see `Retries`).
pub(super) struct Link<'c> {
    client: &'c dyn Connect,
    con: Option<Box<dyn redis::ConnectionLike + Send>>,
}

impl<'c> Link<'c> {
    pub(super) fn new(client: &'c dyn Connect) -> Self {
        Link { client, con: None }
    }

    /// Runs `op` once on the connection, opened first if it is not; after an error that
    /// passes the connection is dropped, to be opened again by the next call.
    pub(super) fn try_run<T: 'static>(&mut self, op: &Op<T>) -> Result<T> {
        let con = match &mut self.con {
            Some(con) => con,
            None => self.con.insert(self.client.connect()?),
        };
        let result = op.run(con.as_mut());
        if let Err(err) = &result
            && is_transient(err)
        {
            // A demoted server's connection stays on it: a new one may reach the primary.
            self.con = None;
        }
        result
    }
}

impl RunOps for Link<'_> {
    fn run_op<T: 'static>(&mut self, op: &Op<T>) -> Result<T> {
        self.try_run(op)
    }
}
