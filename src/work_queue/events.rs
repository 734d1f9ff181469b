//! What happened to each job, as the scripts that move jobs tell it: the queue's events,
//! the results workers keep, progress reports, and waiting for one job's end.
//!
//! Nothing here costs a queue that does not ask for it: events are off until
//! [`Settings::events`](super::Settings::events) turns them on, and a result is kept
//! only when a worker gives one ([`ack_with`](WorkQueue::ack_with)) or, while events are
//! on, as an empty mark of an ack without one.
//!
//! | key | type | holds |
//! |---|---|---|
//! | `{name}:events` | stream | `event` (`added`, `waiting`, `active`, `progress`, `completed`, `failed`, `stalled`, `dead`, `retried`), `job`, and `state`, `delivery`, `error` or `progress`; at most the queue's `events_max` entries |
//! | `{name}:results` | hash | job id → its result, while kept |
//! | `{name}:kept` | zset | job id → until when its result is kept (ms, server clock) |
//!
//! **Beyond BullMQ.** BullMQ's event stream is capped only approximately (`MAXLEN ~`), so
//! it may hold more than its cap, and its `QueueEvents` reader cannot tell that it missed
//! events the cap trimmed (users report both: BullMQ#1070). Here the cap is exact, and
//! every read says whether entries after the reader's last id went unread
//! ([`EventPage::lost`]); [`Events::wait_for`] then reads the job's state again, so a
//! waiter never waits for an end it missed. BullMQ keeps every completed job with its
//! return value unless told otherwise (BullMQ#366); here a result is kept for a bounded
//! time and size, both enforced by the scripts.

use std::time::{Duration, Instant};

use redis::ToRedisArgs;

use super::{Job, State, WorkQueue, script, unsigned};
use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::machine::{self, Machine, Step};
use crate::runtime::op::Op;
use crate::runtime::wait::{self, Attempt, MAX_BLOCK, Wake};

/// The longest progress report ([`WorkQueue::progress`]), in bytes.
pub const MAX_PROGRESS_BYTES: usize = 4096;
/// The most events one read answers ([`WorkQueue::events_after`]).
pub const MAX_EVENTS_READ: u64 = 1000;
/// The most log lines a job keeps ([`WorkQueue::log`]), and reads at once.
pub const MAX_LOG_LINES: u64 = 1000;
/// The longest log line ([`WorkQueue::log`]), in bytes.
pub const MAX_LOG_LINE_BYTES: usize = 4096;

/// A page of the log lines a job keeps ([`WorkQueue::logs`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobLogs {
    /// How many lines the job keeps.
    pub kept: u64,
    /// The page, oldest first.
    pub lines: Vec<Vec<u8>>,
}

/// What happened to a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// Added ([`add`](WorkQueue::add), [`add_deduplicated`](WorkQueue::add_deduplicated)),
    /// with its state (`waiting`, `delayed` or `parked`) as the detail.
    Added,
    /// Waiting out a delay, with when it is due (ms, server clock) as the detail: added
    /// with a delay, retried after a backoff (after its [`Failed`](Self::Failed)), or moved
    /// by a debounce window's replace.
    Delayed,
    /// Ready to be taken: a delayed job come due, or a flow's parent whose children ended.
    Waiting,
    /// Taken by a worker, with its delivery count (`1` the first time) as the detail.
    Active,
    /// Its lease ran out before its worker ended it: it waits to be taken again, with the
    /// error `lease ran out` (on its last delivery it is [`Dead`](Self::Dead) instead).
    Stalled,
    /// Acked: the job is done (its result, if kept, is in [`WorkQueue::result`]).
    Completed,
    /// A delivery failed (a nack); the job will be retried.
    Failed,
    /// It failed for good: it is in the dead-letter queue.
    Dead,
    /// A dead job was put back to waiting (`retry_dead`, `requeue`).
    Retried,
    /// Its worker reported progress ([`WorkQueue::progress`]).
    Progress,
}

impl EventKind {
    /// The name the scripts write (`completed`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Added => "added",
            EventKind::Delayed => "delayed",
            EventKind::Waiting => "waiting",
            EventKind::Active => "active",
            EventKind::Stalled => "stalled",
            EventKind::Completed => "completed",
            EventKind::Failed => "failed",
            EventKind::Dead => "dead",
            EventKind::Retried => "retried",
            EventKind::Progress => "progress",
        }
    }

    fn parse(name: &str) -> Result<Self> {
        Ok(match name {
            "added" => EventKind::Added,
            "delayed" => EventKind::Delayed,
            "waiting" => EventKind::Waiting,
            "active" => EventKind::Active,
            "stalled" => EventKind::Stalled,
            "completed" => EventKind::Completed,
            "failed" => EventKind::Failed,
            "dead" => EventKind::Dead,
            "retried" => EventKind::Retried,
            "progress" => EventKind::Progress,
            other => return Err(Error::unexpected_reply("an event no script writes", other)),
        })
    }
}

/// One entry of a queue's events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Its stream id: read on after it.
    pub id: String,
    /// What happened.
    pub kind: EventKind,
    /// The job's id.
    pub job: String,
    /// The error of a `Failed`, `Stalled` or `Dead` event, the report of a `Progress` one,
    /// the state of an `Added` one, the due time of a `Delayed` one, the delivery of an
    /// `Active` one; empty otherwise.
    pub detail: Vec<u8>,
}

/// One read of a queue's events ([`WorkQueue::events_after`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventPage {
    /// Entries after the id read from were trimmed by the cap before they were read.
    pub lost: bool,
    /// The stream's newest id (`0-0` for none): wait for entries after it.
    pub newest: String,
    /// The entries, oldest first.
    pub events: Vec<Event>,
}

/// How a job ended, as [`Events::wait_for`] learns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobEnd {
    /// Acked, with its result if one is kept.
    Completed(Option<Vec<u8>>),
    /// Failed for good, with its last error.
    Dead(Vec<u8>),
    /// Not in the queue, and nothing kept of it: removed, never added, or acked longer
    /// ago than the queue keeps results (or, with events off, acked without a result).
    Gone,
}

impl WorkQueue {
    /// Reports the progress of `job`, which this worker holds: [`job`](Self::job) shows
    /// the last report, and the events carry each one. At most [`MAX_PROGRESS_BYTES`]
    /// bytes, not empty. Answers the event's id, or `None` when events are off. Fails with
    /// [`LEASE_LOST`](super::LEASE_LOST) when the job is no longer held under its token.
    /// One script (`work_queue/progress`).
    pub fn progress<V: ToRedisArgs>(&self, job: &Job, progress: V) -> Op<Option<String>> {
        Op::try_build(|| {
            let progress = input::value("progress", &progress)?;
            let k = &self.keys;
            Ok(script::progress(
                &k.jobs, &k.events, &job.id, &job.token, &progress,
            ))
        })
    }

    /// Keeps a log line with `job`, which this worker holds (BullMQ's `job.log`): the job
    /// keeps its newest [`MAX_LOG_LINES`] lines, at most 64 KiB of them, until it ends
    /// ([`logs`](Self::logs) reads them). A line is 1 to [`MAX_LOG_LINE_BYTES`] bytes.
    /// Answers how many lines the job keeps. Fails with [`LEASE_LOST`](super::LEASE_LOST)
    /// when the job is no longer held under its token. One script (`work_queue/log`).
    pub fn log<V: ToRedisArgs>(&self, job: &Job, line: V) -> Op<u64> {
        self.log_keeping(job, line, MAX_LOG_LINES)
    }

    /// [`log`](Self::log), keeping only the newest `keep` lines (1 to [`MAX_LOG_LINES`];
    /// BullMQ's `keepLogs`).
    pub fn log_keeping<V: ToRedisArgs>(&self, job: &Job, line: V, keep: u64) -> Op<u64> {
        Op::try_build(|| {
            let line = input::value("line", &line)?;
            Ok(script::log(&self.keys.jobs, &job.id, &job.token, &line, keep).map(unsigned))
        })
    }

    /// Up to `count` (1 to [`MAX_LOG_LINES`]) of the log lines job `id` keeps, from the
    /// `offset`-th (0 for the oldest), and how many it keeps; none when there is no such
    /// job. One read-only script (`work_queue/logs`).
    pub fn logs(&self, id: &str, offset: u64, count: u64) -> Op<JobLogs> {
        script::logs(&self.keys.jobs, id, offset, count).map(|(kept, lines)| {
            Ok(JobLogs {
                kept: unsigned(kept)?,
                lines,
            })
        })
    }

    /// The result kept for job `id` ([`ack_with`](Self::ack_with)), or `None` when none is
    /// kept (none was given, or its time passed). One read-only script
    /// (`work_queue/result`).
    pub fn result(&self, id: &str) -> Op<Option<Vec<u8>>> {
        self.kept_result(id)
            .map(|kept| Ok(kept.filter(|r| !r.is_empty())))
    }

    /// The result kept for job `id` as it is: empty for an ack without a result, which
    /// the scripts mark so while events are on.
    fn kept_result(&self, id: &str) -> Op<Option<Vec<u8>>> {
        script::result(&self.keys.results, &self.keys.kept, id)
    }

    /// Up to `count` events after the stream id `after` (`0-0` for the oldest kept; 0 to
    /// [`MAX_EVENTS_READ`]; 0 reads only the newest id), and whether some went unread. One
    /// read-only script (`work_queue/events`); [`events`](Self::events) follows them.
    pub fn events_after(&self, after: &str, count: u64) -> Op<EventPage> {
        script::events(&self.keys.events, after, count).map(|(lost, newest, rows)| {
            let events = rows
                .into_iter()
                .map(|(id, kind, job, detail)| {
                    Ok(Event {
                        id,
                        kind: EventKind::parse(&kind)?,
                        job,
                        detail,
                    })
                })
                .collect::<Result<_>>()?;
            Ok(EventPage {
                lost,
                newest,
                events,
            })
        })
    }

    /// A reader of the queue's events after the stream id `after`: `0-0` for the oldest
    /// kept, or the last id an earlier reader handled ([`Events::last_id`]), to go on
    /// where it stopped, across a reconnect or a restart. [`newest_event`](Self::newest_event)
    /// gives the id to follow from now.
    ///
    /// ```no_run
    /// # fn demo() -> redis_patterns::Result<()> {
    /// use std::time::Duration;
    /// use redis_patterns::work_queue::{Changes, JobEnd, WorkQueue};
    ///
    /// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let queue = WorkQueue::new("reports")?;
    /// queue.configure(&Changes::new().events(10_000)?).run(&mut con)?;
    /// queue.add("report-7", "q3").run(&mut con)?;
    /// // A worker elsewhere takes it, and acks it with `ack_with(&job, pdf)`.
    /// match queue.wait_for_job(&mut con, "report-7", Duration::from_secs(60))? {
    ///     Some(JobEnd::Completed(pdf)) => println!("{} bytes", pdf.map_or(0, |p| p.len())),
    ///     Some(JobEnd::Dead(error)) => eprintln!("failed: {}", String::from_utf8_lossy(&error)),
    ///     Some(JobEnd::Gone) => eprintln!("removed"),
    ///     None => eprintln!("still running after a minute"),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn events(&self, after: &str) -> Events<'_> {
        Events {
            queue: self,
            after: after.to_owned(),
            lost: false,
        }
    }

    /// The id of the newest event (`0-0` for none): follow from it to see only what
    /// happens from now. One read-only script (`work_queue/events`).
    pub fn newest_event(&self) -> Op<String> {
        self.events_after("0-0", 0).map(|page| Ok(page.newest))
    }

    /// Waits until job `id` ends, or `timeout` passed (`None`): it reads where the events
    /// stand, then the job's state (so an end before the call is seen), then follows the
    /// events. Needs the queue's events on ([`Settings::events`](super::Settings::events));
    /// with them off it learns only an end before the call that the job's record still
    /// shows (a dead job, or a completed one while the queue
    /// [keeps them](super::Settings::keep_completed)), and otherwise times out. For
    /// a wait that survives a reconnect, keep an [`Events`] and call
    /// [`Events::wait_for`] again with a new connection.
    pub fn wait_for_job(
        &self,
        con: &mut dyn redis::ConnectionLike,
        id: &str,
        timeout: Duration,
    ) -> Result<Option<JobEnd>> {
        let mut events = self.events("0-0");
        machine::drive(&mut WaitFor::from_now(&mut events, id, timeout), con)
    }

    /// [`wait_for_job`](Self::wait_for_job) on an async connection.
    #[cfg(feature = "aio")]
    pub async fn wait_for_job_async<C: redis::aio::ConnectionLike>(
        &self,
        con: &mut C,
        id: &str,
        timeout: Duration,
    ) -> Result<Option<JobEnd>> {
        let mut events = self.events("0-0");
        machine::drive_async(&mut WaitFor::from_now(&mut events, id, timeout), con).await
    }
}

/// A job's end from its record (`None`: no job) and its kept result.
fn end_of(job: Option<RecordEnd>, result: Option<Vec<u8>>) -> Option<JobEnd> {
    let acked = result.is_some();
    let result = result.filter(|r| !r.is_empty());
    match job {
        Some((State::Dead, error, _)) => Some(JobEnd::Dead(error.unwrap_or_default())),
        // Kept in the queue's history, with its result.
        Some((State::Completed, _, kept)) => Some(JobEnd::Completed(kept)),
        Some(_) => None,
        None if acked => Some(JobEnd::Completed(result)),
        None => Some(JobEnd::Gone),
    }
}

/// A reader of a queue's events ([`WorkQueue::events`]) that remembers the last id it
/// handed out, so a new connection goes on from there: nothing is read twice, and nothing
/// is missed unless the stream's cap trimmed it first, which [`lost`](Self::lost) then
/// says.
#[derive(Debug, Clone)]
pub struct Events<'q> {
    queue: &'q WorkQueue,
    after: String,
    lost: bool,
}

impl Events<'_> {
    /// The id of the last event handed out (or the one it started after).
    pub fn last_id(&self) -> &str {
        &self.after
    }

    /// Whether events went unread since the last call that answered this (the cap
    /// trimmed them first); clears it.
    pub fn lost(&mut self) -> bool {
        std::mem::take(&mut self.lost)
    }

    /// One read, or what to block on when there is nothing new.
    fn attempt(&self) -> Op<Attempt<EventPage>> {
        let key = self.queue.keys.events.clone();
        self.queue
            .events_after(&self.after, MAX_EVENTS_READ)
            .map(move |page| {
                if page.events.is_empty() && !page.lost {
                    let within = MAX_BLOCK.as_millis() as u64;
                    return Ok(Attempt::NotYet(Wake::new(&key, page.newest, within)?));
                }
                Ok(Attempt::Done(page))
            })
    }

    /// Takes in a page: its events, with the last id and the lost flag moved on.
    fn handed(&mut self, page: Option<EventPage>) -> Vec<Event> {
        let Some(page) = page else {
            return Vec::new();
        };
        self.lost |= page.lost;
        if let Some(last) = page.events.last() {
            self.after = last.id.clone();
        }
        page.events
    }

    /// The next events (up to [`MAX_EVENTS_READ`]), waiting up to `timeout` for one;
    /// empty on timeout. Blocks on the stream (`XREAD BLOCK`), never polls.
    pub fn next(
        &mut self,
        con: &mut dyn redis::ConnectionLike,
        timeout: Duration,
    ) -> Result<Vec<Event>> {
        let page = wait::until(con, timeout, || self.attempt())?;
        Ok(self.handed(page))
    }

    /// [`next`](Self::next) on an async connection.
    #[cfg(feature = "aio")]
    pub async fn next_async<C: redis::aio::ConnectionLike>(
        &mut self,
        con: &mut C,
        timeout: Duration,
    ) -> Result<Vec<Event>> {
        let page = wait::until_async(con, timeout, || self.attempt()).await?;
        Ok(self.handed(page))
    }

    /// Follows the events until job `id` completes or dies, or `timeout` passed
    /// (`None`). When events went unread (the cap trimmed them), it reads the job's state
    /// to learn an end it missed. After an error (a dropped connection), call it again
    /// with a new connection: it goes on from the last event it read.
    pub fn wait_for(
        &mut self,
        con: &mut dyn redis::ConnectionLike,
        id: &str,
        timeout: Duration,
    ) -> Result<Option<JobEnd>> {
        machine::drive(&mut WaitFor::new(self, id, timeout), con)
    }

    /// [`wait_for`](Self::wait_for) on an async connection.
    #[cfg(feature = "aio")]
    pub async fn wait_for_async<C: redis::aio::ConnectionLike>(
        &mut self,
        con: &mut C,
        id: &str,
        timeout: Duration,
    ) -> Result<Option<JobEnd>> {
        machine::drive_async(&mut WaitFor::new(self, id, timeout), con).await
    }
}

/// The loop of [`Events::wait_for`] and [`WorkQueue::wait_for_job`], for both drivers:
/// read the events (blocking on the stream while there are none) until one says the job
/// ended, then read its result; where events went unread, or before following from now,
/// read the job's state instead.
struct WaitFor<'e, 'q> {
    events: &'e mut Events<'q>,
    id: String,
    deadline: Instant,
    at: WaitAt,
    output: Option<Result<Option<JobEnd>>>,
}

/// Where a [`WaitFor`] stands.
enum WaitAt {
    /// Reading the id of the newest event, to follow from it.
    Newest,
    /// Reading the job's record, to learn an end the events did not tell (then follows
    /// the events when it has not ended).
    Record,
    /// Reading the job's kept result: after an event said it completed, or when its
    /// record is gone.
    Result { completed: bool },
    /// Reading the events.
    Follow(Box<wait::Until<EventPage, NextPage>>),
}

/// The one read that [`WaitAt::Follow`] repeats.
type NextPage = Box<dyn FnMut() -> Op<Attempt<EventPage>> + Send>;

/// What [`WaitFor`] runs answers.
/// What a wait reads of a job's record: its state, last error and result.
type RecordEnd = (State, Option<Vec<u8>>, Option<Vec<u8>>);

enum WaitAnswer {
    Newest(String),
    Record(Option<RecordEnd>),
    Result(Option<Vec<u8>>),
    Follow(wait::Answered<EventPage>),
}

impl<'e, 'q> WaitFor<'e, 'q> {
    /// From the last event `events` handed out.
    fn new(events: &'e mut Events<'q>, id: &str, timeout: Duration) -> Self {
        let mut wait = WaitFor::from_now(events, id, timeout);
        wait.at = wait.follow();
        wait
    }

    /// From the newest event, once the job's record says it has not ended.
    fn from_now(events: &'e mut Events<'q>, id: &str, timeout: Duration) -> Self {
        WaitFor {
            events,
            id: id.to_owned(),
            deadline: Instant::now() + timeout,
            at: WaitAt::Newest,
            output: None,
        }
    }

    /// Reading the events from the last one handed out, until the deadline.
    fn follow(&self) -> WaitAt {
        let left = self.deadline.saturating_duration_since(Instant::now());
        let read = self.events.attempt();
        WaitAt::Follow(Box::new(wait::Until::new(
            left,
            Box::new(move || read.clone()),
        )))
    }

    /// After reading events that did not tell the end: on to the next read, or done at
    /// the deadline.
    fn go_on(&mut self) -> WaitAt {
        if Instant::now() >= self.deadline {
            self.output = Some(Ok(None));
        }
        self.follow()
    }
}

impl Machine for WaitFor<'_, '_> {
    type Answer = WaitAnswer;
    type Output = Result<Option<JobEnd>>;

    fn step(&mut self) -> Step<WaitAnswer, Result<Option<JobEnd>>> {
        if let Some(output) = self.output.take() {
            return Step::Done(output);
        }
        let queue = self.events.queue;
        match &mut self.at {
            WaitAt::Newest => Step::Run(queue.newest_event().map(|id| Ok(WaitAnswer::Newest(id)))),
            WaitAt::Record => Step::Run(queue.job(&self.id).map(|job| {
                Ok(WaitAnswer::Record(
                    job.map(|job| (job.state, job.last_error, job.result)),
                ))
            })),
            WaitAt::Result { .. } => Step::Run(
                queue
                    .kept_result(&self.id)
                    .map(|r| Ok(WaitAnswer::Result(r))),
            ),
            WaitAt::Follow(until) => match until.step() {
                Step::Run(op) => Step::Run(op.map(|a| Ok(WaitAnswer::Follow(a)))),
                Step::Pause(pause) => Step::Pause(pause),
                Step::Done(Err(err)) => Step::Done(Err(err)),
                Step::Done(Ok(page)) => {
                    let events = self.events.handed(page);
                    self.at = match end_among(&events, &self.id) {
                        Some(Ended::Completed) => WaitAt::Result { completed: true },
                        Some(Ended::Dead(error)) => {
                            return Step::Done(Ok(Some(JobEnd::Dead(error))));
                        }
                        None if self.events.lost() => WaitAt::Record,
                        None => self.go_on(),
                    };
                    self.step()
                }
            },
        }
    }

    fn feed(&mut self, answer: Result<WaitAnswer>) {
        let answer = match answer {
            Ok(answer) => answer,
            Err(err) => {
                self.output = Some(Err(err));
                return;
            }
        };
        match (answer, &mut self.at) {
            (WaitAnswer::Newest(id), _) => {
                self.events.after = id;
                self.at = WaitAt::Record;
            }
            (WaitAnswer::Record(None), _) => self.at = WaitAt::Result { completed: false },
            (WaitAnswer::Record(record), _) => match end_of(record, None) {
                Some(end) => self.output = Some(Ok(Some(end))),
                None => self.at = self.go_on(),
            },
            (WaitAnswer::Result(result), WaitAt::Result { completed: true }) => {
                let result = result.filter(|r| !r.is_empty());
                self.output = Some(Ok(Some(JobEnd::Completed(result))));
            }
            (WaitAnswer::Result(result), _) => self.output = Some(Ok(end_of(None, result))),
            (WaitAnswer::Follow(answered), WaitAt::Follow(until)) => until.feed(Ok(answered)),
            _ => unreachable!("an answer to another step"),
        }
    }
}

/// How a job ended, as its event says (the result is read after).
enum Ended {
    Completed,
    Dead(Vec<u8>),
}

/// The end of job `id` among `events`, if one is there.
fn end_among(events: &[Event], id: &str) -> Option<Ended> {
    events
        .iter()
        .filter(|event| event.job == id)
        .find_map(|event| match event.kind {
            EventKind::Completed => Some(Ended::Completed),
            EventKind::Dead => Some(Ended::Dead(event.detail.clone())),
            _ => None,
        })
}
