//! The consumer loop: its settings, the sync loops (one job at a time, or several on
//! threads), what it reports, and the connections it opens again.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::jobs::Finished;
use super::renew::{Renewal, RenewalCounts, renew_held};
use super::retry::{FIRST_RETRY_PAUSE, JobErrorKind, is_connection_failure, jitter, retry_pause};
use super::{
    Done, HandlerError, Job, JobError, JobOutput, LEASE_LOST, MAX_CONCURRENCY, MAX_TAKE,
    MemoryPolicy, Nacked, OnEviction, WorkQueue, is_transient, memory_policy,
};
use crate::runtime::error::{Error, Result};
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
/// [`redis::Client`], or [`redis::cluster::ClusterClient`] (feature `cluster`), or your
/// own (one that asks Sentinel, or a list of servers, which node is the primary now).
pub trait Connect: Sync {
    /// A new connection.
    fn connect(&self) -> redis::RedisResult<Box<dyn redis::ConnectionLike + Send>>;
}

impl Connect for redis::Client {
    fn connect(&self) -> redis::RedisResult<Box<dyn redis::ConnectionLike + Send>> {
        Ok(Box::new(self.get_connection()?))
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

    /// The call that ends a job by the handler's result and takes the next one: on
    /// success an [`ack_and_take`](WorkQueue::ack_and_take) (an [`ack`](WorkQueue::ack)
    /// once the loop is asked to stop), on failure a [`nack`](WorkQueue::nack).
    pub(super) fn settle<O: JobOutput, E: HandlerError>(
        &self,
        job: &Job,
        outcome: std::result::Result<O, E>,
        stopping: bool,
    ) -> Op<(Ending, Vec<Job>)> {
        let op = match outcome.map(JobOutput::into_result) {
            Ok(result) if stopping => self
                .queue
                .ack_done(Done { job, result })
                .map(|_| Ok((Ending::Acked, Vec::new()))),
            Ok(result) => self
                .queue
                .ack_and_take([Done { job, result }], 1)
                .map(|next| Ok((Ending::Acked, next))),
            Err(why) => self.nack(job, why),
        };
        op.via(self.mode)
    }

    /// The call that ends a failed job as its handler's error asks.
    pub(super) fn nack<E: HandlerError>(&self, job: &Job, why: E) -> Op<(Ending, Vec<Job>)> {
        let why = why.into_job_error();
        let nacked = |nacked| {
            Ok(match nacked {
                Nacked::Dead { .. } => (Ending::Dead, Vec::new()),
                Nacked::Retry { .. } => (Ending::Retried, Vec::new()),
            })
        };
        match why.kind {
            JobErrorKind::RateLimitGroup(hold) if job.group.is_some() => self
                .queue
                .rate_limit_group(job, hold)
                .map(|_| Ok((Ending::HeldBack, Vec::new()))),
            JobErrorKind::Unrecoverable => self.queue.fail(job, why.message).map(nacked),
            _ => self.queue.nack(job, why.message).map(nacked),
        }
        .via(self.mode)
    }

    /// Looks at the server's `maxmemory-policy` as [`on_eviction`](Self::on_eviction)
    /// says; refuses to go on with [`Error::EvictingServer`] when asked to.
    pub(super) fn check_memory(&self, con: &mut Link<'_>, stop: &Stop) -> Result<MemoryPolicy> {
        if self.on_eviction == OnEviction::Ignore {
            return Ok(MemoryPolicy::NotChecked);
        }
        let mut pause = FIRST_RETRY_PAUSE;
        let (policy, meaning) = loop {
            match con.with(memory_policy) {
                Ok(found) => break found,
                Err(_) if stop.is_stopped() => return Ok(MemoryPolicy::Unknown),
                Err(_) => retry_pause(&mut pause),
            }
        };
        self.judge_memory(policy, meaning)
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
        let mut report = WorkReport::default();
        let counts = RenewalCounts::default();
        let outcome = std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::channel::<Renewal>();
            let counts = &counts;
            scope.spawn(move || renew_held(self.queue, self.mode, client, rx, counts));
            let mut con = Link::new(client);
            let result = (|| {
                report.memory_policy = self.check_memory(&mut con, stop)?;
                let mut next: Vec<Job> = Vec::new();
                loop {
                    // A job taken in the call that acked the last one is run before stopping.
                    if stop.is_stopped() && next.is_empty() {
                        return Ok(());
                    }
                    if next.is_empty() {
                        match con.run(&self.queue.take(1).via(self.mode), stop)? {
                            Some(jobs) => next = jobs,
                            None => continue,
                        }
                    }
                    let Some(job) = next.pop() else {
                        con.run(&self.wait(), stop)?;
                        continue;
                    };
                    let _ = tx.send(Renewal::Hold(job.clone(), self.renew_every()));
                    let outcome = handler(&job);
                    let settle = self.settle(&job, outcome, stop.is_stopped());
                    // Renewed until the job is settled: an ack retried through an outage
                    // longer than the lease keeps the job.
                    let settled = con.run(&settle, stop);
                    let _ = tx.send(Renewal::Release(job.token.clone()));
                    match settled {
                        Ok(Some((ending, jobs))) => {
                            report.count(Ok(ending))?;
                            next = jobs;
                        }
                        // Stopped while the connection was down: the job's lease runs out.
                        Ok(None) => report.lost += 1,
                        Err(err) if err.code() == Some(LEASE_LOST) => report.lost += 1,
                        Err(err) => return Err(err),
                    }
                }
            })();
            report.reconnects += con.reconnects;
            report.server_retries += con.retries;
            result
        });
        counts.add_to(&mut report);
        outcome.map(|()| report)
    }

    /// Runs up to [`concurrency`](Self::concurrency) jobs at once, each on a thread of
    /// its own (scoped: they end with the call) and under its own lease, on two
    /// connections opened with `client`, as [`run`](Self::run) does: this thread takes
    /// and ends the jobs, up to the free slots ([`MAX_TAKE`] per call), acking those
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
        use std::sync::Mutex;
        use std::sync::mpsc::{RecvTimeoutError, channel};

        let mut report = WorkReport::default();
        let counts = RenewalCounts::default();
        let slots = self.concurrency;
        let (work_tx, work_rx) = channel::<Job>();
        let work_rx = Mutex::new(work_rx);
        let outcome = std::thread::scope(|scope| {
            let (renew_tx, renew_rx) = channel::<Renewal>();
            let counts = &counts;
            scope.spawn(move || renew_held(self.queue, self.mode, client, renew_rx, counts));
            let (done_tx, done_rx) = channel::<(Job, Outcome)>();
            for _ in 0..slots {
                let (work_rx, done_tx, handler) = (&work_rx, done_tx.clone(), &handler);
                scope.spawn(move || {
                    loop {
                        let next = work_rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                        let Ok(job) = next else { return };
                        let outcome =
                            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                handler(&job).map_err(HandlerError::into_job_error)
                            }));
                        let outcome = match outcome {
                            Ok(Ok(output)) => Outcome::Done(output.into_result()),
                            Ok(Err(why)) => Outcome::Failed(why),
                            Err(panic) => Outcome::Panicked(panic),
                        };
                        if done_tx.send((job, outcome)).is_err() {
                            return;
                        }
                    }
                });
            }
            drop(done_tx);
            let mut con = Link::new(client);
            let mut panicked = None;
            let result = (|| {
                report.memory_policy = self.check_memory(&mut con, stop)?;
                let mut running = 0u64;
                let mut finished: Vec<Finished> = Vec::new();
                let mut ended: Vec<(Job, Outcome)> = Vec::new();
                loop {
                    ended.extend(done_rx.try_iter());
                    for (job, outcome) in ended.drain(..) {
                        running -= 1;
                        match outcome {
                            Outcome::Done(result) => finished.push(Finished { job, result }),
                            Outcome::Failed(why) => {
                                let nacked = con.run(&self.nack(&job, why), stop);
                                let _ = renew_tx.send(Renewal::Release(job.token.clone()));
                                match nacked {
                                    Ok(Some((ending, _))) => report.count(Ok(ending))?,
                                    Ok(None) => report.lost += 1,
                                    Err(err) => report.count(Err(err))?,
                                }
                            }
                            Outcome::Panicked(panic) => {
                                // Its lease runs out; the loop stops and unwinds.
                                let _ = renew_tx.send(Renewal::Release(job.token.clone()));
                                panicked.get_or_insert(panic);
                            }
                        }
                    }
                    let stopping = stop.is_stopped() || panicked.is_some();
                    let free = if stopping { 0 } else { slots - running };
                    if free == 0 || stopping {
                        // Acks what ended; takes nothing.
                        for job in std::mem::take(&mut finished) {
                            let ack = self.queue.ack_done(Done::from(&job)).via(self.mode);
                            let acked = con.run(&ack.map(|_| Ok(Ending::Acked)), stop);
                            let _ = renew_tx.send(Renewal::Release(job.token.clone()));
                            match acked {
                                Ok(Some(ending)) => report.count(Ok(ending))?,
                                Ok(None) => report.lost += 1,
                                Err(err) => report.count(Err(err))?,
                            }
                        }
                        if running == 0 && stopping {
                            return Ok(());
                        }
                        match done_rx.recv_timeout(self.poll) {
                            Ok(one) => ended.push(one),
                            Err(RecvTimeoutError::Timeout) => {}
                            Err(RecvTimeoutError::Disconnected) => return Ok(()),
                        }
                        continue;
                    }
                    let done: Vec<Finished> = finished
                        .drain(..finished.len().min(MAX_TAKE as usize))
                        .collect();
                    let take = self
                        .queue
                        .ack_and_take(&done, free.min(MAX_TAKE))
                        .via(self.mode);
                    let jobs = match con.run(&take, stop) {
                        Ok(Some(jobs)) => jobs,
                        Ok(None) => {
                            // Stopped while the connection was down: acked on the next turn.
                            finished.extend(done);
                            continue;
                        }
                        Err(err) if err.code() == Some(LEASE_LOST) => {
                            // One of them was lost: ack them one by one to tell which.
                            finished.extend(done);
                            for job in std::mem::take(&mut finished) {
                                let ack = self.queue.ack_done(Done::from(&job)).via(self.mode);
                                let acked = con.run(&ack.map(|_| Ok(Ending::Acked)), stop);
                                let _ = renew_tx.send(Renewal::Release(job.token.clone()));
                                match acked {
                                    Ok(Some(ending)) => report.count(Ok(ending))?,
                                    Ok(None) => report.lost += 1,
                                    Err(err) => report.count(Err(err))?,
                                }
                            }
                            continue;
                        }
                        Err(err) => return Err(err),
                    };
                    for job in done {
                        let _ = renew_tx.send(Renewal::Release(job.token.clone()));
                        report.acked += 1;
                    }
                    if jobs.is_empty() {
                        // With jobs still running, a job that ends is acked within
                        // IN_FLIGHT_WAIT, not at the end of a whole `poll`.
                        let wait = if running > 0 {
                            self.wait_at_most(IN_FLIGHT_WAIT)
                        } else {
                            self.wait()
                        };
                        con.run(&wait, stop)?;
                        continue;
                    }
                    for job in jobs {
                        let _ = renew_tx.send(Renewal::Hold(job.clone(), self.renew_every()));
                        running += 1;
                        let _ = work_tx.send(job);
                    }
                }
            })();
            drop(work_tx);
            report.reconnects += con.reconnects;
            report.server_retries += con.retries;
            (result, panicked)
        });
        let (result, panicked) = outcome;
        if let Some(panic) = panicked {
            std::panic::resume_unwind(panic);
        }
        counts.add_to(&mut report);
        result.map(|()| report)
    }
}

/// What a handler thread of [`Worker::run_concurrent`] hands back.
enum Outcome {
    /// With the result to keep ('' for none).
    Done(Vec<u8>),
    Failed(JobError),
    Panicked(Box<dyn std::any::Any + Send>),
}

/// How a job the worker held ended.
pub(super) enum Ending {
    Acked,
    Retried,
    Dead,
    HeldBack,
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
/// or its server answered with an error that passes.
pub(super) struct Link<'c> {
    client: &'c dyn Connect,
    con: Option<Box<dyn redis::ConnectionLike + Send>>,
    pub(super) reconnects: u64,
    pub(super) retries: u64,
}

impl<'c> Link<'c> {
    pub(super) fn new(client: &'c dyn Connect) -> Self {
        Link {
            client,
            con: None,
            reconnects: 0,
            retries: 0,
        }
    }

    /// Runs `f` once on the connection, opened first if it is not; after an error that
    /// passes the connection is dropped, to be opened again by the next call.
    pub(super) fn with<T>(
        &mut self,
        f: impl FnOnce(&mut dyn redis::ConnectionLike) -> Result<T>,
    ) -> Result<T> {
        let con = match &mut self.con {
            Some(con) => con,
            None => {
                let con = self.client.connect().map_err(Error::from);
                let con = match con {
                    Ok(con) => con,
                    Err(err) => {
                        self.count(&err);
                        return Err(err);
                    }
                };
                self.con.insert(con)
            }
        };
        let result = f(con.as_mut());
        if let Err(err) = &result
            && is_transient(err)
        {
            // A demoted server's connection stays on it: a new one may reach the primary.
            self.con = None;
            self.count(err);
        }
        result
    }

    fn count(&mut self, err: &Error) {
        if is_connection_failure(err) {
            self.reconnects += 1;
        } else if is_transient(err) {
            self.retries += 1;
        }
    }

    /// Runs `op` once (see [`with`](Self::with)).
    pub(super) fn try_run<T: 'static>(&mut self, op: &Op<T>) -> Result<T> {
        self.with(|con| op.run(con))
    }

    /// Runs `op` until it gets an answer other than an error that passes, pausing
    /// between tries; `None` when `stop` was raised first.
    pub(super) fn run<T: 'static>(&mut self, op: &Op<T>, stop: &Stop) -> Result<Option<T>> {
        let mut pause = FIRST_RETRY_PAUSE;
        loop {
            match self.try_run(op) {
                Err(err) if is_transient(&err) => {
                    if stop.is_stopped() {
                        return Ok(None);
                    }
                    retry_pause(&mut pause);
                }
                result => return result.map(Some),
            }
        }
    }
}
