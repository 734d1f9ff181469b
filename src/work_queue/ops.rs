//! The operations of a queue: adding, taking, acking, nacking and reading jobs.

use std::time::Duration;

use redis::{ToRedisArgs, Value};

use super::jobs::{info, negative, taken, unsigned};
use super::spans::SendSpan;
use super::{
    Added, Counts, Done, Job, JobInfo, JobOptions, Nacked, Removed, State, WorkQueue, Worker, flow,
    script, spans,
};
#[cfg(doc)]
use super::{LEASE_LOST, MAX_PAGE, MAX_TAKE, RESULT_TOO_BIG, Settings};
use crate::runtime::error::Result;
use crate::runtime::input;
use crate::runtime::op::Op;
use crate::runtime::token;

/// The longest delay `nack.lua` accepts; a longer backoff is cut to it.
const MAX_DELAY: Duration = Duration::from_millis(1_000_000_000_000);

impl Added {
    /// Reads an add's reply, and ends its `send` span with it.
    pub(super) fn sent(
        send: Option<SendSpan>,
    ) -> impl Fn((bool, String)) -> Result<Added> + Send + Sync + 'static {
        move |reply| {
            let added = Added::of(reply)?;
            if let Some(send) = &send {
                send.added(added);
            }
            Ok(added)
        }
    }
}

impl WorkQueue {
    /// Adds a job with priority 0, no delay and no group, unless a job with the same id
    /// is in the queue (in any state): then nothing changes and the answer says where
    /// that job is. Once a job is acked or removed its id can be added again. One script
    /// (`work_queue/add`).
    pub fn add<V: ToRedisArgs>(&self, id: &str, payload: V) -> Op<Added> {
        self.add_with(id, payload, JobOptions::new())
    }

    /// [`add`](Self::add) with a priority, a delay, a group, LIFO order or retries of the
    /// job's own (see [`JobOptions`]).
    pub fn add_with<V: ToRedisArgs>(&self, id: &str, payload: V, options: JobOptions) -> Op<Added> {
        Op::try_build(|| {
            let payload = input::value("payload", &payload)?;
            let group = options.group_arg()?;
            let (attempts, backoff, backoff_delay, backoff_max) = options.retry_args()?;
            let (send, trace) = spans::send_context(
                options.trace_context.as_deref(),
                &self.name,
                "add",
                id,
                payload.len(),
            );
            let k = &self.keys;
            let op = script::add(
                &k.waiting,
                &k.delayed,
                &k.parked,
                &k.jobs,
                &k.signal,
                &k.events,
                &k.turns,
                id,
                &payload,
                u64::from(options.priority),
                options.delay,
                group,
                attempts,
                backoff,
                backoff_delay,
                backoff_max,
                options.lifo,
                options.remove_on_complete,
                options.remove_on_fail,
                &trace,
            );
            Ok(op.map(Added::sent(send)))
        })
    }

    /// Takes up to `limit` jobs (1 to [`MAX_TAKE`]), each under the queue's lease, in
    /// priority then arrival order (or one per group's turn, round-robin, while
    /// [groups take turns](Settings::group_turns)); parks the jobs of groups at a limit. Before taking it
    /// hands back up to `limit` lapsed leases, promotes up to `limit` due delayed jobs and
    /// wakes up to `limit` rate-limited groups (see the [module docs](super)). An empty
    /// `Vec` when no job can be taken now ([`wait_for_work`](Self::wait_for_work) waits
    /// for one). One script (`work_queue/take`).
    ///
    /// The `Op` carries 128 random bits drawn when it is built, which make its jobs' lease
    /// tokens unique; build one for each call (running the same `Op` again reuses them,
    /// and tokens then differ only by the delivery count, which a failover can repeat).
    pub fn take(&self, limit: u64) -> Op<Vec<Job>> {
        self.ack_and_take(std::iter::empty::<&Job>(), limit)
    }

    /// Acks the jobs in `done` (up to [`MAX_TAKE`]), as [`ack`](Self::ack) acks one, and
    /// takes up to `limit` jobs, as [`take`](Self::take) does, in one call: a busy
    /// worker's one round trip per job, or per batch. Fails with [`LEASE_LOST`] when a job
    /// of `done` is no longer held under its token (or is there twice); nothing is acked
    /// or taken then. Each item is a `&Job`, or a [`Done`] that carries the job's result
    /// ([`Done::with_result`]). One script (`work_queue/take`).
    ///
    /// ```no_run
    /// # fn demo() -> redis_patterns::Result<()> {
    /// use redis_patterns::work_queue::{MAX_TAKE, WorkQueue};
    ///
    /// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let queue = WorkQueue::new("thumbnails")?;
    /// let mut jobs = queue.take(MAX_TAKE).run(&mut con)?;
    /// while !jobs.is_empty() {
    ///     for job in &jobs {
    ///         make_thumbnail(&job.payload);
    ///     }
    ///     jobs = queue.ack_and_take(&jobs, MAX_TAKE).run(&mut con)?;
    /// }
    /// # Ok(()) }
    /// # fn make_thumbnail(_: &[u8]) {}
    /// ```
    pub fn ack_and_take<'j, D: Into<Done<'j>>>(
        &self,
        done: impl IntoIterator<Item = D>,
        limit: u64,
    ) -> Op<Vec<Job>> {
        let done: Vec<Done<'j>> = done.into_iter().map(Into::into).collect();
        let done: Vec<&[u8]> = done
            .iter()
            .flat_map(|d| [d.job.id.as_bytes(), d.job.token.as_bytes(), &d.result])
            .collect();
        let k = &self.keys;
        script::take(
            &k.waiting,
            &k.delayed,
            &k.leased,
            &k.dead,
            &k.parked,
            &k.jobs,
            &k.groups,
            &k.wake,
            &k.idle,
            &k.signal,
            &k.events,
            &k.results,
            &k.kept,
            &k.turns,
            &k.completed,
            &k.blocked,
            self.lease,
            limit,
            u64::from(self.max_deliveries),
            &token::random(),
            &done,
        )
        .map(taken)
    }

    /// Waits until a job may be ready, or `timeout` passed: whether it woke for a job.
    /// Every script that makes a job ready (an add, a nack or an ack that frees a group's
    /// slot, a requeue, a take that leaves jobs behind) wakes one waiting worker, so a
    /// job added to an idle queue starts at once; a delayed job that comes due wakes no
    /// one, and is found by the next [`take`](Self::take) after a `timeout`. One blocking
    /// command (`BZPOPMIN {name}:signal <timeout>`): the connection is busy meanwhile, so
    /// give it a connection of its own, whose response timeout (if any) is longer than
    /// `timeout`.
    pub fn wait_for_work(&self, timeout: Duration) -> Op<bool> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("BZPOPMIN");
            cmd.arg(&self.keys.signal)
                .arg(input::block_timeout(Some(timeout))?);
            Ok(Op::<Value>::native(cmd).map(|woken| Ok(woken != Value::Nil)))
        })
    }

    /// Ends a job that was done: it leaves the queue. Fails with the code [`LEASE_LOST`]
    /// when `job` is no longer held under its token (its lease ran out and it was handed
    /// to another worker, or it was acked already); nothing changes then. Answers when it
    /// was acked (ms, server clock). One script (`work_queue/ack`).
    pub fn ack(&self, job: &Job) -> Op<u64> {
        self.ack_done(Done::from(job))
    }

    /// [`ack`](Self::ack) that keeps `result`, the job's outcome, for the queue's result
    /// time ([`Settings::results`]), where [`result`](Self::result) and
    /// [`wait_for_job`](Self::wait_for_job) read it. One longer than the queue's longest
    /// result fails with the code [`RESULT_TOO_BIG`], the job still held (ack it without,
    /// or nack it); an empty one keeps nothing.
    pub fn ack_with<V: ToRedisArgs>(&self, job: &Job, result: V) -> Op<u64> {
        Op::try_build(|| Ok(self.ack_done(Done::with_result(job, result)?)))
    }

    /// `ack.lua` with what `done` carries.
    pub(super) fn ack_done(&self, done: Done<'_>) -> Op<u64> {
        let k = &self.keys;
        let job = done.job;
        script::ack(
            &k.waiting,
            &k.leased,
            &k.parked,
            &k.jobs,
            &k.groups,
            &k.signal,
            &k.events,
            &k.results,
            &k.kept,
            &k.completed,
            &k.blocked,
            &job.id,
            &job.token,
            &done.result,
        )
        .map(unsigned)
    }

    /// Renews `job`'s lease: held for the queue's lease from now. Answers the new
    /// deadline (ms, server clock); fails with [`LEASE_LOST`] when the job is no longer
    /// held under its token (stop working on it then). One script
    /// (`work_queue/extend`).
    pub fn extend(&self, job: &Job) -> Op<u64> {
        let k = &self.keys;
        script::extend(&k.leased, &k.jobs, &job.id, &job.token, self.lease).map(unsigned)
    }

    /// Ends a failed delivery: the job is retried after the queue's backoff for this
    /// delivery, or goes to the dead-letter queue with `reason` if this was delivery
    /// number [`max_deliveries`](Self::with_max_deliveries). Fails with [`LEASE_LOST`] as
    /// [`ack`](Self::ack) does. One script (`work_queue/nack`).
    pub fn nack<R: ToRedisArgs>(&self, job: &Job, reason: R) -> Op<Nacked> {
        self.nack_after(job, self.backoff.jittered(job.delivery), reason)
    }

    /// [`nack`](Self::nack) with a delay of the caller's choosing (whole milliseconds up
    /// to 10^12 ms; zero for at once) instead of the backoff.
    pub fn nack_after<R: ToRedisArgs>(&self, job: &Job, delay: Duration, reason: R) -> Op<Nacked> {
        self.nack_with(job, delay, self.max_deliveries, reason)
    }

    /// `nack.lua` with the delay and the most deliveries given.
    pub(super) fn nack_with<R: ToRedisArgs>(
        &self,
        job: &Job,
        delay: Duration,
        max_deliveries: u32,
        reason: R,
    ) -> Op<Nacked> {
        Op::try_build(|| {
            let reason = input::value("reason", &reason)?;
            let k = &self.keys;
            let op = script::nack(
                &k.waiting,
                &k.delayed,
                &k.leased,
                &k.dead,
                &k.parked,
                &k.jobs,
                &k.groups,
                &k.signal,
                &k.events,
                &k.blocked,
                &job.id,
                &job.token,
                delay.min(MAX_DELAY),
                u64::from(max_deliveries),
                &reason,
            );
            Ok(op.map(|(state, at)| {
                let at_ms = u64::try_from(at).map_err(|_| negative(at))?;
                Ok(match state.parse()? {
                    State::Dead => Nacked::Dead { at_ms },
                    state => Nacked::Retry { state, at_ms },
                })
            }))
        })
    }

    /// Moves a dead job back to waiting with its delivery count reset (behind the jobs
    /// waiting at its priority): true if it was dead. One script
    /// (`work_queue/requeue`).
    pub fn requeue(&self, id: &str) -> Op<bool> {
        let k = &self.keys;
        script::requeue(&k.waiting, &k.dead, &k.jobs, &k.signal, &k.events, id)
    }

    /// Removes a job that is not held by a worker: waiting, parked, delayed, dead (this
    /// is how a dead letter is dropped) or completed. A leased job is left to its worker, which ends
    /// it with an ack or a nack. One script (`work_queue/remove`).
    pub fn remove(&self, id: &str) -> Op<Removed> {
        let k = &self.keys;
        script::remove(
            &k.waiting,
            &k.delayed,
            &k.dead,
            &k.parked,
            &k.jobs,
            &k.completed,
            &k.blocked,
            id,
        )
        .map(|(removed, state)| {
            Ok(match (removed, state) {
                (_, None) => Removed::NoSuchJob,
                (true, Some(state)) => Removed::From(state.parse()?),
                (false, Some(_)) => Removed::Running,
            })
        })
    }

    /// One job, for operators: `None` when there is no job with this id. One read-only
    /// script (`work_queue/job`).
    pub fn job(&self, id: &str) -> Op<Option<JobInfo>> {
        let k = &self.keys;
        let op = script::job(
            &k.delayed,
            &k.leased,
            &k.dead,
            &k.jobs,
            &k.completed,
            &k.blocked,
            id,
        );
        let id = id.to_owned();
        op.map(move |job| {
            job.map(|row| {
                let (state, deliveries, priority, group, error, payload, at, progress) =
                    (row.0, row.1, row.2, row.3, row.4, row.5, row.6, row.7);
                let (pending_children, failed, started, result) = (row.8, row.9, row.10, row.11);
                let fields = (deliveries, priority, group, error, payload, at, started);
                let info = info(id.clone(), state.parse()?, fields)?;
                Ok(JobInfo {
                    progress,
                    result,
                    pending_children,
                    failed_children: flow::failed_children(failed.as_deref().unwrap_or_default())?,
                    ..info
                })
            })
            .transpose()
        })
    }

    /// One page of the jobs in `state`, for operators: `count` jobs (1 to [`MAX_PAGE`])
    /// after skipping `offset`, waiting jobs in the order they will be taken, delayed
    /// ones by due time, leased ones by deadline, dead ones by when they died, parked
    /// ones by group, completed ones by when they were acked. One read-only script (`work_queue/list`); a page is one instant,
    /// and pages read one after another may skip or repeat a job that moved in between.
    pub fn list(&self, state: State, offset: u64, count: u64) -> Op<Vec<JobInfo>> {
        let k = &self.keys;
        script::list(
            &k.waiting,
            &k.delayed,
            &k.leased,
            &k.dead,
            &k.parked,
            &k.jobs,
            &k.completed,
            &k.blocked,
            state.as_str(),
            offset,
            count,
        )
        .map(move |rows| {
            rows.into_iter()
                .map(
                    |(id, deliveries, priority, group, error, payload, at, started)| {
                        info(
                            id,
                            state,
                            (deliveries, priority, group, error, payload, at, started),
                        )
                    },
                )
                .collect()
        })
    }

    /// How many jobs are in each state, at one instant. One read-only script
    /// (`work_queue/counts`).
    pub fn counts(&self) -> Op<Counts> {
        let k = &self.keys;
        script::counts(
            &k.waiting,
            &k.delayed,
            &k.leased,
            &k.dead,
            &k.parked,
            &k.completed,
            &k.blocked,
        )
        .map(
            |(waiting, parked, delayed, leased, dead, completed, blocked)| {
                Ok(Counts {
                    waiting,
                    parked,
                    delayed,
                    leased,
                    dead,
                    completed,
                    blocked,
                })
            },
        )
    }

    /// Pauses the queue: from now on [`take`](Self::take) hands out nothing (it still acks
    /// the jobs of [`ack_and_take`](Self::ack_and_take) and hands back lapsed leases), while
    /// adds are accepted and leased jobs run on and end as usual. Idle [`Worker`]s wait as
    /// on an empty queue, at no extra cost. True if the queue was running. One script
    /// (`work_queue/pause`); the flag is the field `#paused` of `{name}:jobs`.
    pub fn pause(&self) -> Op<bool> {
        script::pause(&self.keys.jobs)
    }

    /// Resumes a paused queue: jobs are handed out again, and one idle worker wakes at
    /// once (the wake-ups then chain from worker to worker while jobs are left). True if
    /// the queue was paused. One script (`work_queue/resume`).
    pub fn resume(&self) -> Op<bool> {
        script::resume(&self.keys.jobs, &self.keys.signal)
    }

    /// Whether the queue is paused. One read-only script (`work_queue/paused`).
    pub fn is_paused(&self) -> Op<bool> {
        script::paused(&self.keys.jobs)
    }

    /// The loop that takes jobs one at a time, renews each lease while the handler runs,
    /// and acks or nacks by the handler's result. See [`Worker`].
    pub fn worker(&self) -> Worker<'_> {
        Worker::new(self)
    }
}
