//! What operators do to a queue: its settings (limits the queue owns, the dead-letter
//! cap, the metrics window, events and results), its metrics, and bulk and per-job
//! changes.

use std::fmt::Write as _;
use std::time::Duration;

use redis::ToRedisArgs;

use super::{Counts, Job, Limits, Nacked, State, WorkQueue, script};
use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::op::Op;

/// The most jobs one bulk call ([`retry_dead`](WorkQueue::retry_dead),
/// [`clean`](WorkQueue::clean), [`delete`](WorkQueue::delete)) handles.
pub const MAX_BULK: u64 = 100;
/// The longest metrics window, in minutes: a day.
pub const MAX_METRICS_MINUTES: u64 = 1_440;

/// A queue's own settings, kept in Redis and read by every `take`: the limits of each
/// group and of the whole queue, the dead-letter cap, the completed jobs kept, the minutes
/// of metrics kept, the events kept, the bounds of kept results and whether groups take
/// turns. Read them with
/// [`WorkQueue::settings`]. [`WorkQueue::configure`] with a `Settings` sets every one of
/// them (those it was not given to their defaults): a whole configuration, as a deploy
/// writes it. To change some and keep the others, name them in [`Changes`].
///
/// The defaults (a queue nobody configured): no limits, at most 10,000 dead jobs kept for
/// at most 180 days (Sidekiq's caps), no completed jobs, no metrics and no events: a queue
/// that does not ask for them does not pay for them (two hash commands, or one `XADD`, in
/// each script that ends a job). A result is kept only when a worker gives one
/// ([`ack_with`](WorkQueue::ack_with)): for an hour, and at most 16 KiB, unless set.
///
/// ```
/// use std::time::Duration;
/// use redis_patterns::work_queue::{Limits, Settings};
///
/// let settings = Settings::new()
///     .group_limits(Limits::new().concurrency(2)?.rate(10, Duration::from_secs(1))?)
///     .queue_limits(Limits::new().concurrency(50)?)
///     .dead_letters(1_000, Duration::from_secs(7 * 86_400))?
///     .metrics_minutes(60)?;
/// assert_eq!(settings.dead_max(), 1_000);
/// # Ok::<(), redis_patterns::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    group: Limits,
    queue: Limits,
    dead_max: u64,
    dead_age: Duration,
    metrics_minutes: u64,
    events_max: u64,
    result_ttl: Duration,
    result_max: u64,
    group_turns: bool,
    completed_max: u64,
    completed_age: Duration,
}

/// The most events a queue's stream keeps ([`Settings::events`]).
pub const MAX_EVENTS: u64 = 100_000;
/// The longest a result is kept ([`Settings::results`]): 30 days.
pub const MAX_RESULT_TTL: Duration = Duration::from_secs(30 * 86_400);
/// The longest result kept ([`Settings::results`]), in bytes: 16 KiB. A script's
/// arguments cost the server about 1.3 ms per MiB before it runs (Lua copies them), and a
/// `take` acks up to [`MAX_TAKE`](super::MAX_TAKE) jobs: larger outputs belong in a store
/// of their own, with their key as the result.
pub const MAX_RESULT_BYTES: u64 = 1 << 14;

impl Default for Settings {
    fn default() -> Self {
        Settings {
            group: Limits::default(),
            queue: Limits::default(),
            dead_max: 10_000,
            dead_age: Duration::from_secs(180 * 86_400),
            metrics_minutes: 0,
            events_max: 0,
            result_ttl: Duration::from_secs(3_600),
            result_max: 16_384,
            group_turns: false,
            completed_max: 0,
            completed_age: Duration::from_secs(7 * 86_400),
        }
    }
}

impl Settings {
    /// The defaults.
    pub fn new() -> Self {
        Settings::default()
    }

    /// The limits of each group: how many of one group's jobs may be held at once and
    /// start per period. A job whose group is at a limit is parked (out of the way of
    /// other groups' jobs) until a job of its group ends or the window passes.
    pub fn group_limits(mut self, limits: Limits) -> Self {
        self.group = limits;
        self
    }

    /// The limits of the whole queue: how many of its jobs may be held at once (BullMQ's
    /// global concurrency) and start per period (its worker `limiter`), whichever worker
    /// takes them.
    pub fn queue_limits(mut self, limits: Limits) -> Self {
        self.queue = limits;
        self
    }

    /// The dead-letter cap: at most `max` dead jobs (1 to 10^7), each kept at most `age`
    /// (whole milliseconds from 1 ms to 10^12 ms); the oldest go first. A death drops up
    /// to two jobs beyond the cap and each `take` up to its `limit`, so a lowered cap is
    /// met over the next calls.
    pub fn dead_letters(mut self, max: u64, age: Duration) -> Result<Self> {
        input::check_param(&script::CONFIGURE.args[6], max)?;
        input::check_param(&script::CONFIGURE.args[7], age)?;
        self.dead_max = max;
        self.dead_age = age;
        Ok(self)
    }

    /// The queue's history of completed jobs (BullMQ's `removeOnComplete: {count, age}`):
    /// an acked job stays in state [`Completed`](State::Completed) with its record, its
    /// result and when it ran ([`WorkQueue::job`], [`WorkQueue::list`]), at most `max`
    /// of them (0 to 10^7; 0, the default, keeps none) for at most `age` (whole
    /// milliseconds, 1 ms to 10^12 ms; 7 days by default). Each ack drops up to two of
    /// the oldest beyond either bound, and each `take` up to its `limit` (so a lowered
    /// bound is met over the next calls). A job added with
    /// [`JobOptions::remove_on_complete`](super::JobOptions::remove_on_complete) is not
    /// kept. While completed jobs are kept, an id is not added again until its completed
    /// job is dropped (as in BullMQ).
    pub fn keep_completed(mut self, max: u64, age: Duration) -> Result<Self> {
        input::check_param(configure_arg("completed_max"), max)?;
        input::check_param(configure_arg("completed_age"), age)?;
        self.completed_max = max;
        self.completed_age = age;
        Ok(self)
    }

    /// How many minutes of per-minute metrics to keep (0 to [`MAX_METRICS_MINUTES`]), which
    /// turns metrics on; 0, the default, keeps none (the totals stand still too).
    pub fn metrics_minutes(mut self, minutes: u64) -> Result<Self> {
        input::check_param(&script::CONFIGURE.args[8], minutes)?;
        self.metrics_minutes = minutes;
        Ok(self)
    }

    /// Turns the queue's events on: what happens to each job (completed, failed, dead,
    /// retried, progress) is appended to its stream `{name}:events` in the same call,
    /// which keeps the newest `max` (1 to [`MAX_EVENTS`]; 0 turns events off, the
    /// default). A lower cap trims the stream when it is set. See
    /// [`WorkQueue::events`].
    pub fn events(mut self, max: u64) -> Result<Self> {
        input::check_param(&script::CONFIGURE.args[9], max)?;
        self.events_max = max;
        Ok(self)
    }

    /// The bounds of kept results: each is kept for `ttl` (whole milliseconds, 1 ms to
    /// [`MAX_RESULT_TTL`]), and one longer than `max_bytes` (1 to [`MAX_RESULT_BYTES`]) is
    /// refused. The defaults: an hour, 16 KiB.
    pub fn results(mut self, ttl: Duration, max_bytes: u64) -> Result<Self> {
        input::check_param(&script::CONFIGURE.args[10], ttl)?;
        input::check_param(&script::CONFIGURE.args[11], max_bytes)?;
        self.result_ttl = ttl;
        self.result_max = max_bytes;
        Ok(self)
    }

    /// Turns round-robin between groups on (or off, the default): the groups with jobs
    /// ready take turns, one job per turn, so one group's backlog of thousands of jobs does
    /// not hold back the jobs of every other group behind it (BullMQ Pro's groups). Jobs
    /// without a group are one group of their own; priority orders the jobs of one group,
    /// not the turns. A queue with turns off pays for them one `EXISTS` per `take`, shared
    /// with the keys of events and results.
    /// Switching loses nothing: each `take` moves up to 2 × its `limit` waiting jobs into
    /// their groups' turns, or (turns off) hands up to `limit` jobs of groups with a turn
    /// back to waiting. While turns are on, jobs waiting for their group's turn are
    /// [parked](super::State::Parked) (and counted so). See "Groups that take turns" in
    /// the [module docs](super).
    pub fn group_turns(mut self, on: bool) -> Self {
        self.group_turns = on;
        self
    }

    /// Whether the groups take turns ([`group_turns`](Self::group_turns)).
    pub fn takes_turns(&self) -> bool {
        self.group_turns
    }

    /// The most events kept; 0 when events are off.
    pub fn events_max(&self) -> u64 {
        self.events_max
    }

    /// How long a result is kept.
    pub fn result_ttl(&self) -> Duration {
        self.result_ttl
    }

    /// The longest result kept, in bytes.
    pub fn result_max(&self) -> u64 {
        self.result_max
    }

    /// The limits of each group.
    pub fn group(&self) -> Limits {
        self.group
    }

    /// The limits of the whole queue.
    pub fn queue(&self) -> Limits {
        self.queue
    }

    /// The most dead jobs kept.
    pub fn dead_max(&self) -> u64 {
        self.dead_max
    }

    /// How long a dead job is kept.
    pub fn dead_age(&self) -> Duration {
        self.dead_age
    }

    /// The most completed jobs kept; 0 when none are.
    pub fn completed_max(&self) -> u64 {
        self.completed_max
    }

    /// How long a completed job is kept.
    pub fn completed_age(&self) -> Duration {
        self.completed_age
    }

    /// The minutes of metrics kept; 0 when metrics are off.
    pub fn metrics_window(&self) -> u64 {
        self.metrics_minutes
    }
}

/// Changes to a queue's settings, for [`WorkQueue::configure`]: each setting named here
/// is checked as it is named, and every setting not named stays as the queue has it. The
/// merge happens in the script, in one call, so two operators who change different
/// settings at the same moment both keep their change (a read, then a write from the
/// client, would lose one of them).
///
/// ```
/// use std::time::Duration;
/// use redis_patterns::work_queue::Changes;
///
/// // A group concurrency of 3 and events on; the limits' rates, the dead-letter cap,
/// // metrics, results and turns stay as they are.
/// let changes = Changes::new().group_concurrency(3)?.events(1_000)?;
/// assert!(!changes.is_empty());
/// assert!(Changes::new().group_rate(1_001).is_err());
/// # Ok::<(), redis_patterns::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Changes {
    group_concurrency: Option<u64>,
    group_rate: Option<u64>,
    group_period: Option<Duration>,
    queue_concurrency: Option<u64>,
    queue_rate: Option<u64>,
    queue_period: Option<Duration>,
    dead_max: Option<u64>,
    dead_age: Option<Duration>,
    metrics_minutes: Option<u64>,
    events_max: Option<u64>,
    result_ttl: Option<Duration>,
    result_max: Option<u64>,
    group_turns: Option<bool>,
    completed_max: Option<u64>,
    completed_age: Option<Duration>,
}

/// `configure`'s argument `name`, whose rule checks the setting of that name.
fn configure_arg(name: &str) -> &'static crate::Param {
    script::CONFIGURE
        .args
        .iter()
        .find(|arg| arg.name == name)
        .unwrap_or_else(|| panic!("work_queue/configure has no argument `{name}`"))
}

impl Changes {
    /// No change.
    pub fn new() -> Self {
        Changes::default()
    }

    /// Whether nothing is named.
    pub fn is_empty(&self) -> bool {
        *self == Changes::default()
    }

    /// The limits of each group, all three of them: its concurrency, rate and period (a
    /// limit `limits` does not set becomes none). See [`Settings::group_limits`].
    pub fn group_limits(mut self, limits: Limits) -> Self {
        self.group_concurrency = Some(limits.concurrency);
        self.group_rate = Some(limits.rate);
        self.group_period = Some(limits.period);
        self
    }

    /// The limits of the whole queue, all three of them. See [`Settings::queue_limits`].
    pub fn queue_limits(mut self, limits: Limits) -> Self {
        self.queue_concurrency = Some(limits.concurrency);
        self.queue_rate = Some(limits.rate);
        self.queue_period = Some(limits.period);
        self
    }

    /// The most jobs of one group held at once (up to 10^6); 0 for no limit.
    pub fn group_concurrency(mut self, max: u64) -> Result<Self> {
        input::check_param(configure_arg("group_concurrency"), max)?;
        self.group_concurrency = Some(max);
        Ok(self)
    }

    /// The most jobs of one group started per period (up to 1000); 0 for no limit. The
    /// period stays as it is unless [`group_period`](Self::group_period) names one.
    pub fn group_rate(mut self, count: u64) -> Result<Self> {
        input::check_param(configure_arg("group_rate"), count)?;
        self.group_rate = Some(count);
        Ok(self)
    }

    /// The period of the group rate (whole milliseconds, 1 ms to 10^10 ms).
    pub fn group_period(mut self, period: Duration) -> Result<Self> {
        input::check_param(configure_arg("group_period"), period)?;
        self.group_period = Some(period);
        Ok(self)
    }

    /// The most jobs of the whole queue held at once (up to 10^6); 0 for no limit.
    pub fn queue_concurrency(mut self, max: u64) -> Result<Self> {
        input::check_param(configure_arg("queue_concurrency"), max)?;
        self.queue_concurrency = Some(max);
        Ok(self)
    }

    /// The most jobs of the whole queue started per period (up to 1000); 0 for no limit.
    /// The period stays as it is unless [`queue_period`](Self::queue_period) names one.
    pub fn queue_rate(mut self, count: u64) -> Result<Self> {
        input::check_param(configure_arg("queue_rate"), count)?;
        self.queue_rate = Some(count);
        Ok(self)
    }

    /// The period of the queue rate (whole milliseconds, 1 ms to 10^10 ms).
    pub fn queue_period(mut self, period: Duration) -> Result<Self> {
        input::check_param(configure_arg("queue_period"), period)?;
        self.queue_period = Some(period);
        Ok(self)
    }

    /// The most dead jobs kept (1 to 10^7). See [`Settings::dead_letters`].
    pub fn dead_max(mut self, max: u64) -> Result<Self> {
        input::check_param(configure_arg("dead_max"), max)?;
        self.dead_max = Some(max);
        Ok(self)
    }

    /// How long a dead job is kept (whole milliseconds, 1 ms to 10^12 ms).
    pub fn dead_age(mut self, age: Duration) -> Result<Self> {
        input::check_param(configure_arg("dead_age"), age)?;
        self.dead_age = Some(age);
        Ok(self)
    }

    /// The minutes of per-minute metrics kept (up to [`MAX_METRICS_MINUTES`]); 0 turns
    /// metrics off. See [`Settings::metrics_minutes`].
    pub fn metrics_minutes(mut self, minutes: u64) -> Result<Self> {
        input::check_param(configure_arg("metrics_minutes"), minutes)?;
        self.metrics_minutes = Some(minutes);
        Ok(self)
    }

    /// The most events kept (up to [`MAX_EVENTS`]); 0 turns events off. See
    /// [`Settings::events`].
    pub fn events(mut self, max: u64) -> Result<Self> {
        input::check_param(configure_arg("events_max"), max)?;
        self.events_max = Some(max);
        Ok(self)
    }

    /// How long a result is kept (whole milliseconds, 1 ms to [`MAX_RESULT_TTL`]).
    pub fn result_ttl(mut self, ttl: Duration) -> Result<Self> {
        input::check_param(configure_arg("result_ttl"), ttl)?;
        self.result_ttl = Some(ttl);
        Ok(self)
    }

    /// The longest result kept, in bytes (1 to [`MAX_RESULT_BYTES`]).
    pub fn result_max(mut self, max_bytes: u64) -> Result<Self> {
        input::check_param(configure_arg("result_max"), max_bytes)?;
        self.result_max = Some(max_bytes);
        Ok(self)
    }

    /// Whether the groups with jobs ready take turns. See [`Settings::group_turns`].
    pub fn group_turns(mut self, on: bool) -> Self {
        self.group_turns = Some(on);
        self
    }

    /// The most completed jobs kept (up to 10^7); 0 keeps none. See
    /// [`Settings::keep_completed`].
    pub fn completed_max(mut self, max: u64) -> Result<Self> {
        input::check_param(configure_arg("completed_max"), max)?;
        self.completed_max = Some(max);
        Ok(self)
    }

    /// How long a completed job is kept (whole milliseconds, 1 ms to 10^12 ms).
    pub fn completed_age(mut self, age: Duration) -> Result<Self> {
        input::check_param(configure_arg("completed_age"), age)?;
        self.completed_age = Some(age);
        Ok(self)
    }
}

/// Every setting of `settings`, as a whole configuration sets them.
impl From<&Settings> for Changes {
    fn from(settings: &Settings) -> Self {
        Changes {
            metrics_minutes: Some(settings.metrics_minutes),
            events_max: Some(settings.events_max),
            dead_max: Some(settings.dead_max),
            dead_age: Some(settings.dead_age),
            result_ttl: Some(settings.result_ttl),
            result_max: Some(settings.result_max),
            group_turns: Some(settings.group_turns),
            completed_max: Some(settings.completed_max),
            completed_age: Some(settings.completed_age),
            ..Changes::new()
                .group_limits(settings.group)
                .queue_limits(settings.queue)
        }
    }
}

impl From<Settings> for Changes {
    fn from(settings: Settings) -> Self {
        Changes::from(&settings)
    }
}

/// What [`configure`](WorkQueue::configure) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Configured {
    /// Whether a setting changed.
    pub changed: bool,
    /// Groups with parked jobs woken because the group limits changed (at most 100 per
    /// call: the jobs of further groups start as their groups' jobs end).
    pub groups_woken: u64,
}

/// Jobs ended in one minute of the server's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Minute {
    /// The minute: Unix time in ms divided by 60,000.
    pub minute: u64,
    /// Jobs acked.
    pub completed: u64,
    /// Deliveries that failed: nacks, and leases that ran out. A job that fails three
    /// times before it succeeds or dies counts three.
    pub failed_deliveries: u64,
}

/// A queue's metrics at one instant ([`metrics`](WorkQueue::metrics)).
///
/// The counts and the next job's age are read whether metrics are on or not; the totals
/// and the minutes are counted only while they are on ([`window`](Self::window) above
/// 0, [`Settings::metrics_minutes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metrics {
    /// The jobs in each state.
    pub counts: Counts,
    /// The minutes of per-minute metrics the queue keeps; 0 when metrics are off: then
    /// nothing is counted (the totals stand where they stood) and `minutes` is empty.
    pub window: u64,
    /// Jobs acked, in all (while metrics were on).
    pub completed: u64,
    /// Deliveries that failed (nacks, and leases that ran out), in all: a job retried
    /// three times counts three, so this is not a count of jobs; those that died are
    /// [`dead`](Self::dead).
    pub failed_deliveries: u64,
    /// Jobs that went to the dead-letter queue, in all.
    pub dead: u64,
    /// How long the job next in line has been ready (since its add, or the end of its
    /// delay): the first waiting job, or while groups take turns the first job of the
    /// group whose turn is next (the longer wait of the two). `None` when no job waits.
    pub next_job_age: Option<Duration>,
    /// Per minute, newest first.
    pub minutes: Vec<Minute>,
}

impl Metrics {
    /// Whether the queue counts its metrics ([`window`](Self::window) above 0).
    pub fn is_on(&self) -> bool {
        self.window > 0
    }

    /// The metrics in Prometheus' text format, each sample labelled `queue="<queue>"`:
    /// the jobs per state (a gauge), the next job's age in seconds (a gauge, absent when
    /// no job waits), and while metrics are on the totals (counters; absent when they
    /// are off, as nothing counts them). Per-minute rows are for dashboards that read
    /// [`minutes`](Self::minutes); Prometheus derives rates from the counters.
    ///
    /// ```
    /// use redis_patterns::work_queue::{Counts, Metrics};
    ///
    /// let metrics = Metrics {
    ///     counts: Counts { waiting: 3, ..Counts::default() },
    ///     window: 60,
    ///     completed: 10,
    ///     failed_deliveries: 1,
    ///     dead: 0,
    ///     next_job_age: None,
    ///     minutes: Vec::new(),
    /// };
    /// let text = metrics.prometheus("emails");
    /// assert!(text.contains("redis_patterns_queue_jobs{queue=\"emails\",state=\"waiting\"} 3\n"));
    /// assert!(text.contains("redis_patterns_queue_completed_total{queue=\"emails\"} 10\n"));
    /// assert!(text.contains("redis_patterns_queue_failed_deliveries_total{queue=\"emails\"} 1\n"));
    /// ```
    pub fn prometheus(&self, queue: &str) -> String {
        let label = prometheus_label(queue);
        let mut out = String::new();
        out.push_str("# HELP redis_patterns_queue_jobs Jobs in each state.\n");
        out.push_str("# TYPE redis_patterns_queue_jobs gauge\n");
        let c = &self.counts;
        for (state, n) in [
            (State::Waiting, c.waiting),
            (State::Parked, c.parked),
            (State::Delayed, c.delayed),
            (State::Leased, c.leased),
            (State::Dead, c.dead),
        ] {
            let _ = writeln!(
                out,
                "redis_patterns_queue_jobs{{queue=\"{label}\",state=\"{state}\"}} {n}"
            );
        }
        let totals = [
            ("completed", "Jobs acked.", self.completed),
            (
                "failed_deliveries",
                "Deliveries that failed (nacks and lapsed leases; a job may fail several).",
                self.failed_deliveries,
            ),
            ("dead", "Jobs moved to the dead-letter queue.", self.dead),
        ];
        if !self.is_on() {
            let _ = writeln!(
                out,
                "# Metrics are off for queue \"{label}\": no totals are counted."
            );
        }
        for (name, help, n) in totals.into_iter().filter(|_| self.is_on()) {
            let _ = writeln!(out, "# HELP redis_patterns_queue_{name}_total {help}");
            let _ = writeln!(out, "# TYPE redis_patterns_queue_{name}_total counter");
            let _ = writeln!(
                out,
                "redis_patterns_queue_{name}_total{{queue=\"{label}\"}} {n}"
            );
        }
        if let Some(age) = self.next_job_age {
            out.push_str(
                "# HELP redis_patterns_queue_next_job_age_seconds How long the next job has been ready.\n",
            );
            out.push_str("# TYPE redis_patterns_queue_next_job_age_seconds gauge\n");
            let _ = writeln!(
                out,
                "redis_patterns_queue_next_job_age_seconds{{queue=\"{label}\"}} {}",
                age.as_secs_f64()
            );
        }
        out
    }
}

/// A label value as Prometheus' text format writes it: `\`, `"` and newlines escaped.
fn prometheus_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl WorkQueue {
    /// Changes the settings that `changes` names, for every worker, and keeps the others:
    /// the next `take` of any worker applies them. Pass [`Changes`] to change some, or
    /// [`Settings`] to set them all. When the group limits change, groups
    /// with parked jobs are woken so that what the new limits allow starts; idle workers
    /// are woken too. One script (`work_queue/configure`), which merges the changes with
    /// the settings it finds, so concurrent changes of different settings all hold.
    ///
    /// ```no_run
    /// # fn demo() -> redis_patterns::Result<()> {
    /// use redis_patterns::work_queue::{Changes, Limits, Settings, WorkQueue};
    ///
    /// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let queue = WorkQueue::new("reports")?;
    /// // A whole configuration: every setting, the defaults where none is given.
    /// let settings = Settings::new().group_limits(Limits::new().concurrency(2)?);
    /// queue.configure(&settings).run(&mut con)?;
    /// assert_eq!(queue.settings().run(&mut con)?, settings);
    /// // One change: events on, the group limits and the rest as they are.
    /// queue.configure(&Changes::new().events(10_000)?).run(&mut con)?;
    /// let now = queue.settings().run(&mut con)?;
    /// assert_eq!((now.events_max(), now.group()), (10_000, settings.group()));
    /// # Ok(()) }
    /// ```
    pub fn configure<C: Clone + Into<Changes>>(&self, changes: &C) -> Op<Configured> {
        let k = &self.keys;
        let c: Changes = changes.clone().into();
        script::configure(
            &k.parked,
            &k.jobs,
            &k.wake,
            &k.signal,
            &k.events,
            c.group_concurrency,
            c.group_rate,
            c.group_period,
            c.queue_concurrency,
            c.queue_rate,
            c.queue_period,
            c.dead_max,
            c.dead_age,
            c.metrics_minutes,
            c.events_max,
            c.result_ttl,
            c.result_max,
            c.group_turns.map(u64::from),
            c.completed_max,
            c.completed_age,
        )
        .map(|(changed, groups_woken)| {
            Ok(Configured {
                changed,
                groups_woken,
            })
        })
    }

    /// The queue's settings as every `take` reads them (the defaults where
    /// [`configure`](Self::configure) never ran). One read-only script
    /// (`work_queue/settings`).
    pub fn settings(&self) -> Op<Settings> {
        script::settings(&self.keys.jobs).map(|values| {
            let Ok::<[i64; 15], _>([gc, gr, gp, qc, qr, qp, dm, da, mm, em, rt, rm, gt, cm, ca]) =
                values.try_into()
            else {
                return Err(Error::unexpected_reply("settings", "not fifteen settings"));
            };
            let [gc, gr, gp, qc, qr, qp, dm, da, mm, em, rt, rm, cm, ca] =
                [gc, gr, gp, qc, qr, qp, dm, da, mm, em, rt, rm, cm, ca].map(|n| n.max(0) as u64);
            let limits = |concurrency, rate, period| Limits {
                concurrency,
                rate,
                period: Duration::from_millis(period),
            };
            Ok(Settings {
                group: limits(gc, gr, gp),
                queue: limits(qc, qr, qp),
                dead_max: dm,
                dead_age: Duration::from_millis(da),
                metrics_minutes: mm,
                events_max: em,
                result_ttl: Duration::from_millis(rt),
                result_max: rm,
                group_turns: gt == 1,
                completed_max: cm,
                completed_age: Duration::from_millis(ca),
            })
        })
    }

    /// The queue's counts, the next job's age, and while metrics are on its totals and the
    /// last `minutes` minutes of completed jobs and failed deliveries (1 to
    /// [`MAX_METRICS_MINUTES`]; at most the window kept). One read-only script
    /// (`work_queue/metrics`); the scripts that end jobs count them as they do, at no
    /// extra round trip. [`Metrics::window`] says whether metrics are on.
    pub fn metrics(&self, minutes: u64) -> Op<Metrics> {
        let k = &self.keys;
        script::metrics(
            &k.waiting,
            &k.delayed,
            &k.leased,
            &k.dead,
            &k.parked,
            &k.jobs,
            &k.turns,
            &k.completed,
            &k.blocked,
            minutes,
        )
        .map(
            |(counts, completed, failed_deliveries, died, age, window, rows)| {
                let counts: Vec<u64> = counts
                    .into_iter()
                    .filter_map(|n| u64::try_from(n).ok())
                    .collect();
                let [waiting, parked, delayed, leased, dead, kept, blocked] = counts[..] else {
                    return Err(Error::unexpected_reply(
                        "work_queue/metrics",
                        "not seven counts of jobs, one per state",
                    ));
                };
                let counts = Counts {
                    waiting,
                    parked,
                    delayed,
                    leased,
                    dead,
                    completed: kept,
                    blocked,
                };
                Ok(Metrics {
                    counts,
                    window,
                    completed,
                    failed_deliveries,
                    dead: died,
                    next_job_age: age.map(Duration::from_millis),
                    minutes: rows
                        .into_iter()
                        .map(|(minute, completed, failed_deliveries)| Minute {
                            minute,
                            completed,
                            failed_deliveries,
                        })
                        .collect(),
                })
            },
        )
    }

    /// Whether the queue has any key on the server: jobs, settings, a pause flag, metrics,
    /// events, results or schedules. A queue nobody used (a name with a typo in it) has
    /// none, and reads as an empty queue with the default settings. One native `EXISTS`
    /// of its keys, which share one hash slot.
    pub fn exists(&self) -> Op<bool> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("EXISTS");
            cmd.arg(&self.keys()[..])
                .arg(script::keys::schedules(&self.name)?)
                .arg(script::keys::due(&self.name)?);
            Ok(Op::<u64>::native(cmd).map(|found| Ok(found > 0)))
        })
    }

    /// Gives `job` back and holds its group's jobs back for `hold` (an upstream answered
    /// "too many requests" for this tenant): the job is parked with its delivery not
    /// counted, and no job of its group starts until `hold` has passed; other groups go
    /// on. A shorter hold never shortens a longer one. Answers until when (ms, server
    /// clock). Fails with `NO_GROUP` for a job without a group, and with [`LEASE_LOST`]
    /// as [`ack`](Self::ack) does. One script (`work_queue/rate_limit_group`); a
    /// [`Worker`](super::Worker)'s handler asks for it with
    /// [`JobError::rate_limit_group`](super::JobError::rate_limit_group).
    ///
    /// [`LEASE_LOST`]: super::LEASE_LOST
    pub fn rate_limit_group(&self, job: &Job, hold: Duration) -> Op<u64> {
        let k = &self.keys;
        script::rate_limit_group(
            &k.leased, &k.parked, &k.jobs, &k.groups, &k.wake, &k.idle, &job.id, &job.token, hold,
        )
        .map(super::unsigned)
    }

    /// Fails `job` for good: it goes to the dead-letter queue with `reason` whatever its
    /// delivery count (BullMQ's `UnrecoverableError`). One script (`work_queue/nack`,
    /// with `max_deliveries` 1).
    pub fn fail<R: ToRedisArgs>(&self, job: &Job, reason: R) -> Op<Nacked> {
        self.nack_with(job, Duration::ZERO, 1, reason)
    }

    /// Moves up to `count` dead jobs (1 to [`MAX_BULK`]) back to waiting, oldest first,
    /// as [`requeue`](Self::requeue) moves one. Answers how many left the dead-letter
    /// queue: call again while it answers `count`. One script (`work_queue/retry_dead`).
    pub fn retry_dead(&self, count: u64) -> Op<u64> {
        let k = &self.keys;
        script::retry_dead(&k.waiting, &k.dead, &k.jobs, &k.signal, &k.events, count)
    }

    /// Removes up to `count` jobs (1 to [`MAX_BULK`]) in `state`, first first: waiting
    /// (draining the queue), parked, delayed, dead or completed. Leased jobs are left to
    /// their workers: `state` [`Leased`](State::Leased) (or
    /// [`Blocked`](State::Blocked), which no list holds) is [`Error::InvalidInput`].
    /// Answers how many went: call again while it answers `count`. One script
    /// (`work_queue/clean`).
    pub fn clean(&self, state: State, count: u64) -> Op<u64> {
        self.clean_ended_before(state, Duration::ZERO, count)
    }

    /// [`clean`](Self::clean) with a grace time (BullMQ's `clean(grace, limit, type)`):
    /// only the dead or completed jobs that ended at least `grace` ago go (whole
    /// milliseconds up to 10^12 ms), oldest first. The other states have no end time:
    /// for them a `grace` other than zero fails with the code `BAD_GRACE`.
    pub fn clean_ended_before(&self, state: State, grace: Duration, count: u64) -> Op<u64> {
        Op::try_build(|| {
            if matches!(state, State::Leased | State::Blocked) {
                return Err(Error::invalid(
                    "state",
                    "leased jobs belong to their workers, and blocked ones to their flows: remove \
                     waiting, parked, delayed, dead or completed ones",
                ));
            }
            let k = &self.keys;
            Ok(script::clean(
                &k.waiting,
                &k.delayed,
                &k.dead,
                &k.parked,
                &k.jobs,
                &k.completed,
                state.as_str(),
                count,
                grace,
            ))
        })
    }

    /// Deletes the queue, up to `count` jobs (1 to [`MAX_BULK`]) per call, then its keys
    /// (settings, metrics and pause flag included). The queue must be
    /// [paused](Self::pause) (else `NOT_PAUSED`); jobs held by workers are refused with
    /// `JOBS_RUNNING` unless `force`. Answers the jobs left: call again until it answers 0.
    /// One script (`work_queue/delete_queue`).
    pub fn delete(&self, count: u64, force: bool) -> Op<u64> {
        let k = &self.keys;
        script::delete_queue(
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
            count,
            force,
        )
    }

    /// Changes a job's priority: a waiting or parked job moves to its new place at once,
    /// keeping its arrival order among the jobs of that priority; any other job waits at
    /// the new priority when it next waits. Answers the job's state; `None` when there is
    /// no job with this id. One script (`work_queue/set_priority`).
    pub fn set_priority(&self, id: &str, priority: u8) -> Op<Option<State>> {
        let k = &self.keys;
        script::set_priority(&k.waiting, &k.parked, &k.jobs, id, u64::from(priority))
            .map(|state| state.map(|s| s.parse()).transpose())
    }

    /// Delays a job that is waiting, parked or delayed until `delay` from now (whole
    /// milliseconds up to 10^12 ms); a `delay` of zero [promotes](Self::promote) a
    /// delayed job, and leaves a waiting or parked job as it is (it is ready already).
    /// Answers whether it moved and its state after the call (`None`: no such job); a
    /// leased, dead or blocked job (a flow's parent waiting for its children) is left
    /// alone. One script (`work_queue/set_delay`).
    pub fn set_delay(&self, id: &str, delay: Duration) -> Op<(bool, Option<State>)> {
        let k = &self.keys;
        script::set_delay(
            &k.waiting, &k.delayed, &k.parked, &k.jobs, &k.signal, id, delay,
        )
        .map(|(moved, state)| Ok((moved, state.map(|s| s.parse()).transpose()?)))
    }

    /// Makes a delayed job wait at once, at its rank: true if it was delayed. One script
    /// (`work_queue/set_delay`, with a delay of 0).
    pub fn promote(&self, id: &str) -> Op<bool> {
        self.set_delay(id, Duration::ZERO)
            .map(|(moved, _)| Ok(moved))
    }
}
