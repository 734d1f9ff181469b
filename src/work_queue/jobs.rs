//! The jobs a queue holds and what its operations answer: jobs as taken and as read,
//! their states, the options they are added with, and the decoding of the scripts' replies.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use redis::{FromRedisValue, ToRedisArgs, Value};

use super::{Backoff, MAX_ATTEMPTS};
#[cfg(doc)]
use super::{JobError, MAX_PRIORITY, OnChildFailure, Settings, WorkQueue, Worker};
use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::show::Bytes;

/// A job a worker is done with, and the result to keep for it, if any: what
/// [`ack_and_take`](WorkQueue::ack_and_take) acks. A `&Job` converts to one with no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Done<'j> {
    pub(super) job: &'j Job,
    pub(super) result: Vec<u8>,
}

impl<'j> Done<'j> {
    /// `job`, done, with `result` to keep (see [`WorkQueue::ack_with`]). A value that is
    /// not sent as one argument is [`Error::InvalidInput`].
    pub fn with_result<V: ToRedisArgs>(job: &'j Job, result: V) -> Result<Self> {
        Ok(Done {
            job,
            result: input::value("result", &result)?,
        })
    }

    /// The job.
    pub fn job(&self) -> &'j Job {
        self.job
    }
}

impl<'j> From<&'j Job> for Done<'j> {
    fn from(job: &'j Job) -> Self {
        Done {
            job,
            result: Vec::new(),
        }
    }
}

/// What a [`Worker`]'s handler gives back for a job it did: nothing (`()`), or a result
/// the queue keeps ([`WorkQueue::ack_with`]; an empty one keeps nothing).
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::work_queue::{Stop, WorkQueue};
///
/// let client = redis::Client::open("redis://127.0.0.1/")?;
/// let queue = WorkQueue::new("invoices")?;
/// queue.worker().run(&client, &Stop::new(), |job| {
///     let total: u64 = job.payload_as().map_err(|e| e.to_string())?;
///     Ok::<_, String>(format!("{{\"total\":{total}}}"))
/// })?;
/// # Ok(()) }
/// ```
pub trait JobOutput {
    /// The result's bytes; empty for none.
    fn into_result(self) -> Vec<u8>;
}

impl JobOutput for () {
    fn into_result(self) -> Vec<u8> {
        Vec::new()
    }
}

impl JobOutput for Vec<u8> {
    fn into_result(self) -> Vec<u8> {
        self
    }
}

impl JobOutput for String {
    fn into_result(self) -> Vec<u8> {
        self.into_bytes()
    }
}

impl<T: JobOutput> JobOutput for Option<T> {
    fn into_result(self) -> Vec<u8> {
        self.map(JobOutput::into_result).unwrap_or_default()
    }
}

/// A job a worker loop finished, with the result its handler gave, until it is acked.
pub(super) struct Finished {
    pub(super) job: Job,
    pub(super) result: Vec<u8>,
}

impl std::ops::Deref for Finished {
    type Target = Job;

    fn deref(&self) -> &Job {
        &self.job
    }
}

impl<'j> From<&'j Finished> for Done<'j> {
    fn from(finished: &'j Finished) -> Self {
        Done {
            job: &finished.job,
            result: finished.result.clone(),
        }
    }
}

/// Where a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// Ready to be taken, in priority then arrival order.
    Waiting,
    /// Held back because its group was at a limit when it came up.
    Parked,
    /// Waiting for its delay (on add, or after a failed delivery).
    Delayed,
    /// Held by a worker under a lease.
    Leased,
    /// In the dead-letter queue, after its last delivery failed.
    Dead,
    /// A flow's parent waiting for its children ([`add_flow`](WorkQueue::add_flow)):
    /// listed and counted, by when it was added; [`remove`](WorkQueue::remove) drops it,
    /// [`clean`](WorkQueue::clean) leaves it to its flow.
    Blocked,
    /// Acked, and kept in the queue's history while the queue keeps completed jobs
    /// ([`Settings::keep_completed`]): read by [`job`](WorkQueue::job) with its result,
    /// listed and counted; [`clean`](WorkQueue::clean) and [`remove`](WorkQueue::remove)
    /// drop it.
    Completed,
}

impl State {
    /// The state's name in the scripts (`"waiting"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            State::Waiting => "waiting",
            State::Parked => "parked",
            State::Delayed => "delayed",
            State::Leased => "leased",
            State::Dead => "dead",
            State::Blocked => "blocked",
            State::Completed => "completed",
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for State {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "waiting" => State::Waiting,
            "parked" => State::Parked,
            "delayed" => State::Delayed,
            "leased" => State::Leased,
            "dead" => State::Dead,
            "blocked" => State::Blocked,
            "completed" => State::Completed,
            other => {
                return Err(Error::unexpected_reply(
                    "job state",
                    format!("{other:?} is not a job state"),
                ));
            }
        })
    }
}

/// What [`add`](WorkQueue::add) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Added {
    /// The job was added, in this state (waiting, or delayed).
    New(State),
    /// A job with this id is already in the queue, in this state; nothing changed.
    Duplicate(State),
}

impl Added {
    /// An add script's reply: added, and the job's state.
    pub(super) fn of((added, state): (bool, String)) -> Result<Self> {
        let state = state.parse()?;
        Ok(if added {
            Added::New(state)
        } else {
            Added::Duplicate(state)
        })
    }

    /// Whether the job was added.
    pub fn is_new(self) -> bool {
        matches!(self, Added::New(_))
    }

    /// The job's state now.
    pub fn state(self) -> State {
        match self {
            Added::New(state) | Added::Duplicate(state) => state,
        }
    }
}

/// How a job is added: its priority, delay, group, order within its priority, and
/// retries of its own. The default is priority 0, no delay, no group, first in first
/// out, and the retries of whoever nacks it (the [`WorkQueue`]'s or [`Worker`]'s
/// [`max_deliveries`](WorkQueue::with_max_deliveries) and [`Backoff`]).
///
/// ```
/// use std::time::Duration;
/// use redis_patterns::work_queue::{Backoff, JobOptions};
///
/// let options = JobOptions::new()
///     .priority(10)
///     .delay(Duration::from_secs(5))
///     .group("tenant-7")
///     .attempts(10)
///     .backoff(Backoff::Exponential { base: Duration::from_secs(1), max: Duration::from_secs(60) });
/// # let _ = options;
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobOptions {
    pub(super) priority: u8,
    pub(super) delay: Duration,
    pub(super) group: Option<String>,
    pub(super) attempts: Option<u32>,
    pub(super) backoff: Option<Backoff>,
    pub(super) lifo: bool,
    pub(super) remove_on_complete: bool,
    pub(super) remove_on_fail: bool,
    pub(super) trace_context: Option<String>,
}

impl JobOptions {
    /// The group as the add scripts take it: '' for none; an empty name is refused.
    pub(super) fn group_arg(&self) -> Result<&str> {
        match &self.group {
            Some(group) if group.is_empty() => Err(Error::invalid(
                "group",
                "must not be empty; leave it unset for no group",
            )),
            Some(group) => Ok(group),
            None => Ok(""),
        }
    }

    /// Refuses what a flow's jobs (`carrier`) do not take: retries, LIFO and removal,
    /// which [`add`](WorkQueue::add_with), [`add_deduplicated`](WorkQueue::add_deduplicated)
    /// and (but for LIFO) [`set_schedule`](WorkQueue::set_schedule) store with a job. An
    /// option silently dropped would surprise more than one refused.
    pub(super) fn priority_and_group_only(&self, carrier: &str) -> Result<()> {
        let unsupported = [
            ("attempts", self.attempts.is_some()),
            ("backoff", self.backoff.is_some()),
            ("lifo", self.lifo),
            ("remove_on_complete", self.remove_on_complete),
            ("remove_on_fail", self.remove_on_fail),
        ];
        match unsupported.iter().find(|(_, set)| *set) {
            Some((option, _)) => Err(Error::invalid(
                option,
                format!("{carrier} takes a priority and a group only: leave it unset"),
            )),
            None => Ok(()),
        }
    }

    /// The retry options as `add.lua` takes them: attempts (0 for none of its own), the
    /// backoff's kind, delay and longest delay.
    pub(super) fn retry_args(&self) -> Result<(u64, &'static str, Duration, Duration)> {
        let attempts = match self.attempts {
            None => 0,
            Some(n) if (1..=MAX_ATTEMPTS).contains(&n) => n,
            Some(n) => {
                return Err(Error::invalid(
                    "attempts",
                    format!("must be from 1 to {MAX_ATTEMPTS}, got {n}"),
                ));
            }
        };
        let (kind, delay, max) = match self.backoff {
            None => ("worker", Duration::ZERO, Duration::ZERO),
            Some(Backoff::Fixed(delay)) if delay.is_zero() => ("none", delay, delay),
            Some(Backoff::Fixed(delay)) => ("fixed", delay, Duration::ZERO),
            Some(Backoff::Exponential { base, max }) => ("exponential", base, max),
        };
        // The delays' range is the header's, checked by the generated call.
        Ok((u64::from(attempts), kind, delay, max))
    }

    /// Priority 0, no delay, no group, first in first out, no retries of its own.
    pub fn new() -> Self {
        JobOptions::default()
    }

    /// Jobs of a higher priority (up to [`MAX_PRIORITY`]) are taken first; jobs of one
    /// priority in the order they were added.
    pub fn priority(mut self, priority: u8) -> Self {
        self.priority = priority;
        self
    }

    /// The job can be taken only after `delay` (whole milliseconds, up to 10^12 ms). A
    /// delayed job holds no lease, so its delay never causes a second delivery.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// The group whose limits the job counts against (see [`Settings::group_limits`]); not
    /// empty.
    pub fn group(mut self, group: impl Into<String>) -> Self {
        self.group = Some(group.into());
        self
    }

    /// The job is taken before the jobs waiting at its priority, not after them: last in,
    /// first out (BullMQ's `lifo`). A retried job keeps its place in that order.
    pub fn lifo(mut self) -> Self {
        self.lifo = true;
        self
    }

    /// The most deliveries of this job, from 1 (never retried) to [`MAX_ATTEMPTS`]
    /// (BullMQ's `attempts`), instead of the `max_deliveries` of whoever nacks it or finds
    /// its lease run out. [`WorkQueue::fail`] (a handler's
    /// [`unrecoverable`](JobError::unrecoverable) error) still ends it for good.
    pub fn attempts(mut self, attempts: u32) -> Self {
        self.attempts = Some(attempts);
        self
    }

    /// The delay before each retry of this job (BullMQ's `backoff`), instead of the one
    /// whoever nacks it gives: [`Backoff::Fixed`] (`Duration::ZERO` for at once) or
    /// [`Backoff::Exponential`], which `nack.lua` draws from half of its delay to all of
    /// it, as [`Backoff::jittered`] does. Delays up to 10^12 ms.
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = Some(backoff);
        self
    }

    /// The job is dropped once acked, even while the queue keeps completed jobs
    /// ([`Settings::keep_completed`]): BullMQ's `removeOnComplete: true`. How many
    /// completed jobs are kept, and for how long, is the queue's setting alone.
    pub fn remove_on_complete(mut self) -> Self {
        self.remove_on_complete = true;
        self
    }

    /// The job is dropped when it dies, instead of going to the dead-letter queue
    /// ([`Settings::dead_letters`]): BullMQ's `removeOnFail: true`.
    pub fn remove_on_fail(mut self) -> Self {
        self.remove_on_fail = true;
        self
    }

    /// The producer's trace context, kept with the job and handed to every delivery as
    /// [`Job::trace_context`]: a W3C `traceparent`, then a space and the `tracestate`
    /// if there is one (at most 1,024 bytes; the queue never reads it). With the `otel`
    /// feature an add without one keeps the context of its own `send` span (see
    /// `work_queue::otel`); set this to carry a context of your own instead.
    pub fn trace_context(mut self, context: impl Into<String>) -> Self {
        self.trace_context = Some(context.into());
        self
    }
}

/// A job taken from the queue, held under a lease until [`ack`](WorkQueue::ack),
/// [`nack`](WorkQueue::nack), or its deadline.
///
/// Its `Debug` shows the payload as text, or as a byte string literal when it is not
/// UTF-8.
#[derive(Clone, PartialEq, Eq)]
pub struct Job {
    /// The job's id.
    pub id: String,
    /// The lease's token: only this delivery's holder can ack, nack or extend it. It is
    /// the 128 random bits the taking call drew (as 32 hex digits) and the delivery count,
    /// `<random>:<delivery>`, so no two deliveries of a job share one, even across a
    /// failover to a replica that missed some of them. The scripts compare it with Lua's
    /// `==` (by address in Redis, whatever the bytes; no hash is needed against timing:
    /// see [Tokens and timing](crate#tokens-and-timing)).
    pub token: String,
    /// Which delivery this is: 1 the first time the job is handed out.
    pub delivery: u32,
    /// When the lease runs out, in milliseconds of the server's clock (Unix time).
    pub deadline_ms: u64,
    /// The job's group, if it has one.
    pub group: Option<String>,
    /// The job's data, as added.
    pub payload: Vec<u8>,
    /// The trace context its producer kept with it
    /// ([`JobOptions::trace_context`]; with the `otel` feature, the add's `send` span),
    /// the same for every delivery; `None` for a job added without one.
    pub trace_context: Option<String>,
}

impl Job {
    /// The payload decoded as redis-rs decodes a bulk string (`String`, a number, your
    /// own `FromRedisValue`).
    pub fn payload_as<T: FromRedisValue>(&self) -> Result<T> {
        T::from_redis_value(Value::BulkString(self.payload.clone())).map_err(Error::from)
    }
}

impl fmt::Debug for Job {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Job")
            .field("id", &self.id)
            .field("token", &self.token)
            .field("delivery", &self.delivery)
            .field("deadline_ms", &self.deadline_ms)
            .field("group", &self.group)
            .field("payload", &Bytes(&self.payload))
            .field("trace_context", &self.trace_context)
            .finish()
    }
}

/// A job as [`job`](WorkQueue::job) and [`list`](WorkQueue::list) read it, for
/// operators.
#[derive(Clone, PartialEq, Eq)]
pub struct JobInfo {
    /// The job's id.
    pub id: String,
    /// Where it is.
    pub state: State,
    /// How many times it was handed out (reset by [`requeue`](WorkQueue::requeue)).
    pub deliveries: u32,
    /// Its priority.
    pub priority: u8,
    /// Its group, if any.
    pub group: Option<String>,
    /// The reason of its last failure ([`nack`](WorkQueue::nack), or a lease that ran out
    /// on its last delivery), if any.
    pub last_error: Option<Vec<u8>>,
    /// The time that goes with its state, in milliseconds of the server's clock: when a
    /// delayed job is due, when a lease runs out, when a dead job died, when a completed
    /// job was acked; `None` for waiting and parked jobs.
    pub at_ms: Option<u64>,
    /// When its last delivery was taken (ms, server clock), noted while the queue keeps
    /// completed jobs ([`Settings::keep_completed`]); with [`at_ms`](Self::at_ms), how
    /// long a completed job ran.
    pub started_ms: Option<u64>,
    /// The job's data.
    pub payload: Vec<u8>,
    /// Its last progress report ([`progress`](WorkQueue::progress)), if any; read by
    /// [`job`](WorkQueue::job) (a [`list`](WorkQueue::list) page leaves it `None`).
    pub progress: Option<Vec<u8>>,
    /// For a flow's parent ([`add_flow`](WorkQueue::add_flow)): how many of its children
    /// have not ended yet (0 once it runs). Read by [`job`](WorkQueue::job).
    pub pending_children: u64,
    /// For a flow's parent: its children that died under
    /// [`OnChildFailure::Continue`], in the order they died. Read by
    /// [`job`](WorkQueue::job); the parent's worker reads them there.
    pub failed_children: Vec<String>,
    /// A completed job's result ([`WorkQueue::ack_with`]), if it gave one. Read by
    /// [`job`](WorkQueue::job).
    pub result: Option<Vec<u8>>,
}

impl JobInfo {
    /// How long a completed job ran: from when its last delivery was taken to its ack.
    pub fn ran_for(&self) -> Option<Duration> {
        match (self.state, self.started_ms, self.at_ms) {
            (State::Completed, Some(started), Some(ended)) => {
                Some(Duration::from_millis(ended.saturating_sub(started)))
            }
            _ => None,
        }
    }
}

impl fmt::Debug for JobInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobInfo")
            .field("id", &self.id)
            .field("state", &self.state)
            .field("deliveries", &self.deliveries)
            .field("priority", &self.priority)
            .field("group", &self.group)
            .field("last_error", &self.last_error.as_deref().map(Bytes))
            .field("at_ms", &self.at_ms)
            .field("started_ms", &self.started_ms)
            .field("payload", &Bytes(&self.payload))
            .field("progress", &self.progress.as_deref().map(Bytes))
            .field("pending_children", &self.pending_children)
            .field("failed_children", &self.failed_children)
            .field("result", &self.result.as_deref().map(Bytes))
            .finish()
    }
}

/// How many jobs are in each state, counted at one instant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Ready to be taken.
    pub waiting: u64,
    /// Held back by their group's limits.
    pub parked: u64,
    /// Waiting for a delay.
    pub delayed: u64,
    /// Held by workers (a lease that ran out counts until a `take` hands it back).
    pub leased: u64,
    /// In the dead-letter queue.
    pub dead: u64,
    /// Kept as completed ([`Settings::keep_completed`]).
    pub completed: u64,
    /// Flow parents waiting for their children ([`add_flow`](WorkQueue::add_flow)).
    pub blocked: u64,
}

/// What a failed delivery led to: [`nack`](WorkQueue::nack)'s answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nacked {
    /// The job will be delivered again from this time on (ms, server clock): at once
    /// (waiting) or after its backoff (delayed).
    Retry {
        /// Its state now: waiting or delayed.
        state: State,
        /// When it can be taken again.
        at_ms: u64,
    },
    /// That was its last delivery: it is in the dead-letter queue (since `at_ms`).
    Dead {
        /// When it died.
        at_ms: u64,
    },
}

/// What [`remove`](WorkQueue::remove) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removed {
    /// The job was removed from this state.
    From(State),
    /// The job is held by a worker: it was left to it (ack or nack ends it).
    Running,
    /// There is no job with this id.
    NoSuchJob,
}

pub(super) fn bad_reply(detail: &str) -> Error {
    Error::unexpected_reply("work queue reply", detail.to_owned())
}

pub(super) fn negative(n: i64) -> Error {
    bad_reply(&format!("expected a time, got {n}"))
}

pub(super) fn unsigned(n: i64) -> Result<u64> {
    u64::try_from(n).map_err(|_| negative(n))
}

/// A job's fields as `job.lua` and `list.lua` answer them, after its state (`job.lua`)
/// or id (`list.lua`): deliveries, priority, group, last error, payload, time, start.
pub(super) type JobFields = (
    u64,
    u64,
    Option<String>,
    Option<Vec<u8>>,
    Vec<u8>,
    Option<u64>,
    Option<u64>,
);

pub(super) fn info(id: String, state: State, fields: JobFields) -> Result<JobInfo> {
    let (deliveries, priority, group, error, payload, at_ms, started_ms) = fields;
    Ok(JobInfo {
        id,
        state,
        deliveries: u32::try_from(deliveries).map_err(|_| bad_reply("a delivery past 2^32"))?,
        priority: u8::try_from(priority).map_err(|_| bad_reply("a priority past 255"))?,
        group,
        // A failure given no reason reads as none, as it always has.
        last_error: error.filter(|error| !error.is_empty()),
        at_ms,
        started_ms,
        payload,
        progress: None,
        pending_children: 0,
        failed_children: Vec::new(),
        result: None,
    })
}

/// A row of `take.lua`'s reply: id, token, delivery, deadline, group, payload, trace context.
pub(super) type TakenRow = (
    String,
    String,
    u64,
    u64,
    Option<String>,
    Vec<u8>,
    Option<String>,
);

/// `take.lua`'s reply, as its `@return` decodes it: a row per job.
pub(super) fn taken(rows: Vec<TakenRow>) -> Result<Vec<Job>> {
    rows.into_iter()
        .map(
            |(id, token, delivery, deadline_ms, group, payload, trace_context)| {
                Ok(Job {
                    id,
                    token,
                    delivery: u32::try_from(delivery)
                        .map_err(|_| bad_reply("a delivery past 2^32"))?,
                    deadline_ms,
                    group,
                    payload,
                    trace_context,
                })
            },
        )
        .collect()
}
