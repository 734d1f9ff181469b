//! Job schedulers: recurring jobs that any number of scheduler processes add exactly
//! once per run (beyond the books; BullMQ's job schedulers, Sidekiq Enterprise's periodic
//! jobs, Celery beat).
//!
//! A [`Schedule`] is named, per queue: it runs either every N ms
//! ([`Schedule::every`], at the times `offset + k × every` since the Unix epoch) or at
//! the times of a cron expression in a time zone (`Schedule::cron`, feature `cron`),
//! and at each run adds a job from its template (payload, priority, group) with the id
//! `<schedule>:<run ms>`. Its next run time is kept in Redis, so a [`Scheduler`] loop in
//! every process of an app is fine: each run is added by exactly one of them.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use std::time::Duration;
//! use redis_patterns::work_queue::{JobOptions, Missed, Schedule, Stop, WorkQueue};
//!
//! let client = redis::Client::open("redis://127.0.0.1/")?;
//! let mut con = client.get_connection()?;
//! let queue = WorkQueue::new("reports")?;
//!
//! // Every 5 minutes, at :00, :05, … (the offset moves the runs within the period).
//! let every = Schedule::every(Duration::from_secs(300))
//!     .payload("rollup")
//!     .options(JobOptions::new().priority(5).group("tenant-7"));
//! queue.set_schedule("rollup", &every).run(&mut con)?;
//! # #[cfg(feature = "cron")] {
//! // At 02:30 every night in Paris; after an outage, the last 3 missed runs still run.
//! let nightly = Schedule::cron("0 30 2 * * *", "Europe/Paris")?
//!     .missed(Missed::CatchUp(3))
//!     .payload("backup");
//! queue.set_schedule("backup", &nightly).run(&mut con)?;
//! # }
//!
//! // In every process: fire the runs as they come due (one of them adds each run).
//! let stop = Stop::new();
//! let report = queue.scheduler().run(&client, &stop)?;
//! # let _ = report;
//! # Ok(()) }
//! ```
//!
//! # Keys
//!
//! Three keys beside the queue's, in its hash slot:
//!
//! | Key | Type | Holds |
//! |---|---|---|
//! | `{name}:schedules` | hash | per schedule `s`: `t:<s>` its timing (`every <ms> <offset>` or `cron <tz> <expr>`), `o:<s>` `<revision> <catch_up> <priority>`, `d:<s>` the jobs' payload, `g:<s>` their group |
//! | `{name}:due` | zset | schedule → its next run time (ms, server clock) |
//! | `{name}:schedules_wake` | stream | an entry per [`set_schedule`](WorkQueue::set_schedule), which wakes sleeping schedulers; it lives a minute |
//!
//! A scheduler reads the due schedules with `due.lua` (one `ZRANGE … BYSCORE` and the
//! server's clock) and fires each with `fire.lua`, one script that (a) checks that the
//! schedule's next run time and revision are still what it read (compare-and-set: a
//! scheduler that lost the race gets [`Fired::AlreadyFired`], not an error), (b) checks
//! that the run time is not after the server's clock, (c) adds the job(s) as
//! [`add`](WorkQueue::add) adds one (the same Lua helper, `add_job`), with the id
//! `<schedule>:<run ms>`, and (d) moves the next run time, all at once. Whatever crashes
//! between two calls, a run is added once or not yet; a fire replayed after a lost reply
//! finds its jobs by id and adds nothing. Only a caller can compute a cron expression's
//! times: the Rust side (the [`croner`](https://docs.rs/croner) crate and `chrono-tz`)
//! passes them to `fire.lua`, which checks them against the server's clock; an `every`
//! schedule's times are computed in Lua. A [`Schedule`] changed with
//! [`set_schedule`](WorkQueue::set_schedule) gets a new revision, so a fire computed for
//! its old timing changes nothing.
//!
//! # Missed runs
//!
//! When nobody fired a schedule for a while (no scheduler ran, or all were stopped),
//! several of its run times are due at once. Each schedule says what to add then:
//!
//! - [`Missed::Skip`] (the default): one job, for the latest run time due; the earlier
//!   ones are skipped (counted in [`Fired::Done::skipped`]). A run is always at least
//!   this one job, however late.
//! - [`Missed::CatchUp(n)`](Missed::CatchUp): the latest `n` run times due, oldest first
//!   (`n` from 1 to [`MAX_CATCH_UP`], 100, so one call stays bounded); earlier ones are
//!   skipped. `CatchUp(1)` is `Skip`.
//!
//! Then the schedule goes on from its first run time after now. Setting a schedule again
//! with the same timing (as an app does at every start) keeps its stored next run time,
//! so a deploy neither skips a run nor adds one twice.
//!
//! # Faults
//!
//! - **A scheduler dies** (`SIGKILL`, a lost machine) between `due` and `fire`, or in the
//!   middle of a batch: the runs it did not fire are still due, and the next scheduler
//!   fires them. One that dies after `fire` ran but before its reply leaves nothing to
//!   redo. The fault bench (`PART=schedulers cargo bench --bench work_queue`) kills one
//!   of 8 schedulers every 2 s and counts 0 runs added twice and 0 missed.
//! - **A failover** promotes a replica that may lack the last writes: a run fired just
//!   before (its job and its moved next run time, written together by one script) may
//!   be lost with them, and is then fired again on the new primary, under the same job
//!   id. A job that was already taken and acked on the old primary runs again: as with
//!   every job of this queue, delivery is at least once, so make handlers idempotent.
//!   [`Op::wait_for`](crate::Op::wait_for) does not help a scheduler; the loop treats the
//!   errors of a failover as passing ([`is_transient`](super::is_transient)) and goes
//!   on with a new connection.
//! - **Clocks**: run times are on the server's clock; the schedulers' own clocks only
//!   choose how long they sleep (and where a cron schedule's first run falls when it is
//!   set: the first time after the setting process's now).
//!
//! # Beyond BullMQ and Celery
//!
//! BullMQ's job schedulers have fired twice (BullMQ#453: repeatable jobs duplicated by a
//! `count` field; #3165: a scheduler firing several times within seconds), because the
//! next run is derived from job ids and options rather than kept as one record that a
//! single atomic step advances. Celery beat keeps its schedule in the process: two beats
//! run every task twice, so it must be kept single by hand (or by a lock of one's own),
//! and a crashed beat misses runs until it is restarted. Sidekiq Enterprise runs periodic
//! jobs from an elected leader. Here the next run time lives in Redis and only a
//! `fire.lua` that read it unchanged moves it, so every process can run a [`Scheduler`]:
//! no leader, no single beat, and a run is added once whatever crashes, with a stated
//! policy for the runs nobody was there to fire.
//!
//! From another language, with redis-cli (a queue `mail`, a schedule `digest` every
//! minute; `due.lua` answers the server's clock, the next run, the due rows with their
//! run time and revision, and the wake stream's last id to block on with `XREAD BLOCK`
//! until the next run):
//!
//! ```text
//! $ redis-cli --eval scripts/work_queue/set_schedule.lua '{mail}:schedules' '{mail}:due' \
//!     '{mail}:schedules_wake' , digest 60000 0 '' '' 0 0 '' 'weekly' '' 1
//!     # name, every ms, offset, cron, tz, catch_up, priority, group, payload, first, keep
//! $ redis-cli --eval scripts/work_queue/due.lua '{mail}:schedules' '{mail}:due' \
//!     '{mail}:schedules_wake' , 100
//! $ redis-cli --eval scripts/work_queue/fire.lua '{mail}:waiting' '{mail}:delayed' '{mail}:parked' \
//!     '{mail}:jobs' '{mail}:signal' '{mail}:schedules' '{mail}:due' '{mail}:turns' \
//!     , digest 1795464180000 1
//!     # name, run time and revision as due.lua answered them
//! ```

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{Connect, JobOptions, Link, Retries, Stop, WorkQueue, script, spans};
use crate::runtime::error::{Error, Result};
use crate::runtime::machine::{self, Machine, Step};
use crate::runtime::op::Op;
use crate::runtime::wait::{MAX_BLOCK, Wake};

/// The most missed runs one schedule adds at once ([`Missed::CatchUp`]).
pub const MAX_CATCH_UP: u32 = 100;
/// The most schedules one page of [`schedules`](WorkQueue::schedules) holds, and one
/// [`due_schedules`](WorkQueue::due_schedules) call answers.
pub const MAX_SCHEDULES_PAGE: u64 = 100;

/// What a schedule adds for runs nobody fired in time (see [Missed
/// runs](self#missed-runs)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Missed {
    /// One job, for the latest run time due.
    #[default]
    Skip,
    /// The latest `n` run times due (1 to [`MAX_CATCH_UP`]).
    CatchUp(u32),
}

/// When a schedule runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Timing {
    /// At `offset + k × every` (ms since the Unix epoch, server clock).
    Every {
        /// The time between runs (1 ms to 10^12 ms).
        every: Duration,
        /// Where the runs fall within `every` (below it).
        offset: Duration,
    },
    /// At the times of a cron expression (with or without seconds) in a time zone.
    Cron {
        /// The expression, as [`croner`](https://docs.rs/croner) reads it.
        expr: String,
        /// The IANA time zone (`Europe/Paris`, `UTC`).
        tz: String,
    },
}

/// A schedule: when it runs, what to do with missed runs, and the job it adds each run.
/// Built with [`every`](Self::every) or `cron` (feature `cron`), set with
/// [`WorkQueue::set_schedule`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    timing: Timing,
    missed: Missed,
    payload: Vec<u8>,
    options: JobOptions,
    first_run: Option<u64>,
}

impl Schedule {
    /// Runs every `every` (whole milliseconds, 1 ms to 10^12 ms), at the multiples of
    /// `every` since the Unix epoch (moved by [`offset`](Self::offset)). Needs no feature.
    pub fn every(every: Duration) -> Self {
        Schedule::new(Timing::Every {
            every,
            offset: Duration::ZERO,
        })
    }

    /// Runs at the times of the cron expression `expr` in the IANA time zone `tz`: five
    /// fields (minute granularity) or six (seconds first), with croner's extensions (`L`,
    /// `#`, `W`, `@daily`, …). A time that a daylight saving change skips or repeats is
    /// as croner computes it. An expression or time zone that does not parse is
    /// [`Error::InvalidInput`]. Feature `cron`.
    #[cfg(feature = "cron")]
    pub fn cron(expr: &str, tz: &str) -> Result<Self> {
        cron::parse(expr)?;
        cron::zone(tz)?;
        Ok(Schedule::new(Timing::Cron {
            expr: expr.to_owned(),
            tz: tz.to_owned(),
        }))
    }

    fn new(timing: Timing) -> Self {
        Schedule {
            timing,
            missed: Missed::Skip,
            payload: Vec::new(),
            options: JobOptions::new(),
            first_run: None,
        }
    }

    /// Moves the runs of an [`every`](Self::every) schedule within the period: every hour
    /// at :15 is `every(1 h).offset(15 min)`. Below `every`; a cron schedule ignores it.
    pub fn offset(mut self, offset: Duration) -> Self {
        if let Timing::Every { offset: o, .. } = &mut self.timing {
            *o = offset;
        }
        self
    }

    /// What to add for missed runs (default [`Missed::Skip`]).
    pub fn missed(mut self, missed: Missed) -> Self {
        self.missed = missed;
        self
    }

    /// The payload of the jobs (empty by default).
    pub fn payload(mut self, payload: impl Into<Vec<u8>>) -> Self {
        self.payload = payload.into();
        self
    }

    /// The jobs' priority, group, retries ([`JobOptions::attempts`],
    /// [`JobOptions::backoff`]) and removal ([`JobOptions::remove_on_complete`],
    /// [`JobOptions::remove_on_fail`]), as [`add_with`](WorkQueue::add_with) stores them
    /// with each job. A delay is refused (a job runs at its run time), and so is LIFO (a
    /// job is added behind those of its priority), and a trace context (each run's jobs
    /// carry that of their firing, with the `otel` feature).
    pub fn options(mut self, options: JobOptions) -> Self {
        self.options = options;
        self
    }

    /// The first run time (ms since the Unix epoch, server clock, up to 10^15), instead
    /// of the first time of the schedule after now; the stored next run time is then
    /// replaced even when the timing is unchanged.
    pub fn first_run_at(mut self, ms: u64) -> Self {
        self.first_run = Some(ms);
        self
    }

    /// When it runs.
    pub fn timing(&self) -> &Timing {
        &self.timing
    }
}

/// A schedule as Redis holds it ([`WorkQueue::schedule`], [`WorkQueue::schedules`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleInfo {
    /// Its name.
    pub name: String,
    /// Its next run time (ms since the Unix epoch, server clock).
    pub next_run_ms: u64,
    /// When it runs.
    pub timing: Timing,
    /// What it adds for missed runs.
    pub missed: Missed,
    /// The jobs' priority.
    pub priority: u8,
    /// The jobs' group.
    pub group: Option<String>,
    /// The jobs' payload.
    pub payload: Vec<u8>,
}

/// A schedule whose run time has come, as [`WorkQueue::due_schedules`] read it: what
/// [`WorkQueue::fire`] needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueSchedule {
    /// Its name.
    pub name: String,
    /// The run time due (ms, server clock).
    pub run_ms: u64,
    /// The revision it was read at (each [`set_schedule`](WorkQueue::set_schedule)
    /// makes a new one).
    pub revision: u64,
    /// When it runs.
    pub timing: Timing,
    /// What it adds for missed runs.
    pub missed: Missed,
}

/// What [`WorkQueue::due_schedules`] read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Due {
    /// The server's clock (ms).
    pub now_ms: u64,
    /// The earliest next run time after now; `None` without schedules.
    pub next_ms: Option<u64>,
    /// The schedules due, earliest first.
    pub due: Vec<DueSchedule>,
    /// What to block on until the next run: `{name}:schedules_wake`, which
    /// [`set_schedule`](WorkQueue::set_schedule) appends to, from the id it held, for the
    /// time to [`next_ms`](Self::next_ms) (at most [`MAX_BLOCK`]).
    pub wake: Wake,
}

/// What [`WorkQueue::fire`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fired {
    /// It fired the run.
    Done {
        /// The run times whose jobs it added (`<schedule>:<run ms>`), oldest first.
        added: Vec<u64>,
        /// Runs whose job was already in the queue (a replayed fire).
        already_there: u64,
        /// Missed run times skipped by the schedule's [`Missed`] policy.
        skipped: u64,
        /// The schedule's next run time.
        next_ms: u64,
    },
    /// Another scheduler fired this run first, or the schedule changed or went: nothing
    /// changed.
    AlreadyFired,
    /// The run time is after the server's clock: nothing changed.
    NotDue,
    /// A cron schedule's times given ended before now (the call came late): nothing
    /// changed; read the schedule again.
    MoreTimes,
}

/// What a [`Scheduler`] did before it stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScheduleReport {
    /// Runs whose jobs it added.
    pub added: u64,
    /// Missed runs it skipped by their schedule's policy.
    pub skipped: u64,
    /// Fires another scheduler won (or a changed schedule made moot).
    pub already_fired: u64,
    /// Connections it opened again after one failed.
    pub reconnects: u64,
    /// Calls sent again after a server error that passes.
    pub server_retries: u64,
}

impl ScheduleReport {
    fn count(&mut self, fired: &Fired) {
        match fired {
            Fired::Done { added, skipped, .. } => {
                self.added += added.len() as u64;
                self.skipped += skipped;
            }
            Fired::AlreadyFired => self.already_fired += 1,
            Fired::NotDue | Fired::MoreTimes => {}
        }
    }
}

fn missed_of(catch_up: u64) -> Missed {
    match catch_up {
        0 => Missed::Skip,
        n => Missed::CatchUp(n as u32),
    }
}

fn timing_of(every: u64, offset: u64, cron: String, tz: String) -> Timing {
    if every > 0 {
        Timing::Every {
            every: Duration::from_millis(every),
            offset: Duration::from_millis(offset),
        }
    } else {
        Timing::Cron { expr: cron, tz }
    }
}

type Row = (
    String,
    u64,
    u64,
    u64,
    String,
    String,
    u64,
    u64,
    Option<String>,
    Vec<u8>,
);

fn info_of(row: Row) -> Result<ScheduleInfo> {
    let (name, next, every, offset, cron, tz, catch_up, priority, group, payload) = row;
    Ok(ScheduleInfo {
        name,
        next_run_ms: next,
        timing: timing_of(every, offset, cron, tz),
        missed: missed_of(catch_up),
        priority: u8::try_from(priority)
            .map_err(|_| Error::unexpected_reply("schedule", "priority above 255"))?,
        group,
        payload,
    })
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl WorkQueue {
    /// The three keys of the queue's schedules: `{name}:schedules`, `{name}:due` and
    /// `{name}:schedules_wake`.
    pub fn schedule_keys(&self) -> Result<[String; 3]> {
        Ok([
            script::keys::schedules(self.name())?,
            script::keys::due(self.name())?,
            script::keys::schedules_wake(self.name())?,
        ])
    }

    /// Creates or changes the schedule `name` (upsert): answers whether it is new and its
    /// next run time (ms, server clock). With the timing unchanged, the stored next run
    /// time is kept (unless [`first_run_at`](Schedule::first_run_at)); otherwise it is
    /// the schedule's first time after now. An empty name, a bad timing (an `every` of
    /// 0 or above 10^12 ms, an offset not below it), a catch-up of 0 or above
    /// [`MAX_CATCH_UP`], or a delay in the options are [`Error::InvalidInput`]. One
    /// script (`work_queue/set_schedule`).
    pub fn set_schedule(&self, name: &str, schedule: &Schedule) -> Op<(bool, u64)> {
        Op::try_build(|| {
            let [schedules, due, wake] = self.schedule_keys()?;
            let catch_up = match schedule.missed {
                Missed::Skip => 0,
                Missed::CatchUp(n) if (1..=MAX_CATCH_UP).contains(&n) => u64::from(n),
                Missed::CatchUp(_) => {
                    return Err(Error::invalid(
                        "missed",
                        format!("catch up 1 to {MAX_CATCH_UP} runs"),
                    ));
                }
            };
            let options = &schedule.options;
            if !options.delay.is_zero() {
                return Err(Error::invalid(
                    "options",
                    "a scheduled job runs at its run time: leave its delay at 0",
                ));
            }
            if options.lifo {
                return Err(Error::invalid(
                    "lifo",
                    "a scheduled job is added at its run time behind the jobs of its priority: \
                     leave it unset",
                ));
            }
            if options.trace_context.is_some() {
                return Err(Error::invalid(
                    "trace_context",
                    "each run's jobs carry the context of their firing (with the `otel` \
                     feature): leave it unset",
                ));
            }
            let (attempts, backoff, backoff_delay, backoff_max) = options.retry_args()?;
            let group = options.group_arg()?;
            let keep = schedule.first_run.is_none();
            let (every, offset, expr, tz, first) = match &schedule.timing {
                Timing::Every { every, offset } => {
                    if offset >= every {
                        return Err(Error::invalid("offset", "must be below every"));
                    }
                    (Some(*every), *offset, "", "", schedule.first_run)
                }
                Timing::Cron { expr, tz } => {
                    let first = match schedule.first_run {
                        Some(first) => first,
                        None => first_cron_run(expr, tz, now_ms())?,
                    };
                    (
                        None,
                        Duration::ZERO,
                        expr.as_str(),
                        tz.as_str(),
                        Some(first),
                    )
                }
            };
            Ok(script::set_schedule(
                &schedules,
                &due,
                &wake,
                name,
                every,
                offset,
                expr,
                tz,
                catch_up,
                u64::from(options.priority),
                group,
                &schedule.payload,
                first,
                keep,
                attempts,
                backoff,
                backoff_delay,
                backoff_max,
                options.remove_on_complete,
                options.remove_on_fail,
            ))
        })
    }

    /// The schedule `name`; `None` when there is none. One read-only script
    /// (`work_queue/schedule`).
    pub fn schedule(&self, name: &str) -> Op<Option<ScheduleInfo>> {
        Op::try_build(|| {
            let [schedules, due, _] = self.schedule_keys()?;
            Ok(script::schedule(&schedules, &due, name).map(|row| row.map(info_of).transpose()))
        })
    }

    /// One page of the queue's schedules by next run time: `count` (1 to
    /// [`MAX_SCHEDULES_PAGE`]) after the first `offset`. Pages read one after another may
    /// skip or repeat a schedule that fired in between. One read-only script
    /// (`work_queue/schedules`).
    pub fn schedules(&self, offset: u64, count: u64) -> Op<Vec<ScheduleInfo>> {
        Op::try_build(|| {
            let [schedules, due, _] = self.schedule_keys()?;
            Ok(script::schedules(&schedules, &due, offset, count)
                .map(|rows| rows.into_iter().map(info_of).collect()))
        })
    }

    /// Removes the schedule `name` (the jobs it added stay): whether there was one. One
    /// script (`work_queue/remove_schedule`).
    pub fn remove_schedule(&self, name: &str) -> Op<bool> {
        Op::try_build(|| {
            let [schedules, due, _] = self.schedule_keys()?;
            Ok(script::remove_schedule(&schedules, &due, name))
        })
    }

    /// The server's clock, the earliest next run time, and up to `limit` schedules due
    /// (1 to [`MAX_SCHEDULES_PAGE`]): what a scheduler loop fires. One read-only script
    /// (`work_queue/due`); [`Scheduler`] runs it.
    pub fn due_schedules(&self, limit: u64) -> Op<Due> {
        Op::try_build(|| {
            let [schedules, due, wake] = self.schedule_keys()?;
            Ok(script::due(&schedules, &due, &wake, limit).map(
                move |(now_ms, next_ms, rows, last_wake)| {
                    let within = next_ms.map_or(MAX_BLOCK.as_millis() as u64, |next| {
                        next.saturating_sub(now_ms)
                    });
                    Ok(Due {
                        now_ms,
                        next_ms,
                        wake: Wake::new(&wake, last_wake, within)?,
                        due: rows
                            .into_iter()
                            .map(|(name, run_ms, revision, every, cron, tz, catch_up)| {
                                DueSchedule {
                                    name,
                                    run_ms,
                                    revision,
                                    timing: timing_of(every, 0, cron, tz),
                                    missed: missed_of(catch_up),
                                }
                            })
                            .collect(),
                    })
                },
            ))
        })
    }

    /// Fires the run of `due` (as [`due_schedules`](Self::due_schedules) read it at
    /// `now_ms`, server clock): adds its job(s) and moves its next run time, unless
    /// another scheduler did first (see the [module docs](self)). A cron schedule needs
    /// the feature `cron` (without it: [`Error::InvalidInput`]). One script
    /// (`work_queue/fire`).
    pub fn fire(&self, due: &DueSchedule, now_ms: u64) -> Op<Fired> {
        Op::try_build(|| {
            let [schedules, due_key, _] = self.schedule_keys()?;
            let times = match &due.timing {
                Timing::Every { .. } => Vec::new(),
                Timing::Cron { expr, tz } => {
                    let n = match due.missed {
                        Missed::Skip => 1,
                        Missed::CatchUp(n) => n.max(1) as usize,
                    };
                    cron_times(expr, tz, due.run_ms, now_ms, n)?
                }
            };
            let (send, trace) = spans::SendSpan::firing(&self.name, &due.name);
            let k = &self.keys;
            Ok(script::fire(
                &k.waiting,
                &k.delayed,
                &k.parked,
                &k.jobs,
                &k.signal,
                &schedules,
                &due_key,
                &k.turns,
                &due.name,
                due.run_ms,
                due.revision,
                &trace,
                &times,
            )
            .map(move |(outcome, added, already_there, skipped, next_ms)| {
                if let Some(send) = &send {
                    send.end();
                }
                Ok(match outcome.as_str() {
                    "fired" => Fired::Done {
                        added: added.into_iter().map(|t| t as u64).collect(),
                        already_there,
                        skipped,
                        next_ms,
                    },
                    "already_fired" => Fired::AlreadyFired,
                    "not_due" => Fired::NotDue,
                    "more_times" => Fired::MoreTimes,
                    other => {
                        return Err(Error::unexpected_reply(
                            "fire",
                            format!("{other:?} is no outcome of fire"),
                        ));
                    }
                })
            }))
        })
    }

    /// The loop that fires this queue's schedules (see [`Scheduler`]).
    pub fn scheduler(&self) -> Scheduler<'_> {
        Scheduler {
            queue: self,
            batch: MAX_SCHEDULES_PAGE,
            max_wait: Duration::from_secs(1),
        }
    }
}

/// The loop that fires a queue's schedules: it reads up to `batch` due schedules, fires
/// each and reads again, and with nothing due blocks until the earliest next run time, at
/// most `max_wait` (1 s by default). The block is on `{name}:schedules_wake`, which
/// [`set_schedule`](WorkQueue::set_schedule) appends to, so a schedule set meanwhile
/// wakes it at once and its first run is fired on time. Run one in every process that
/// likes: each run is added once ([module docs](self)). It blocks its connection 200 ms
/// at a time, and sees a [`Stop`] between two blocks.
#[derive(Debug, Clone)]
pub struct Scheduler<'q> {
    queue: &'q WorkQueue,
    batch: u64,
    max_wait: Duration,
}

impl Scheduler<'_> {
    /// How many due schedules one read answers (1 to [`MAX_SCHEDULES_PAGE`], the
    /// default).
    pub fn batch(mut self, batch: u64) -> Result<Self> {
        if !(1..=MAX_SCHEDULES_PAGE).contains(&batch) {
            return Err(Error::invalid(
                "batch",
                format!("1 to {MAX_SCHEDULES_PAGE} schedules"),
            ));
        }
        self.batch = batch;
        Ok(self)
    }

    /// The longest sleep between two reads of the due schedules (default 1 s; at least
    /// 1 ms): it bounds how late a wake-up lost to a failover is made up for.
    pub fn max_wait(mut self, max_wait: Duration) -> Self {
        self.max_wait = max_wait.max(Duration::from_millis(1));
        self
    }

    /// What to block on after a read that found nothing due: the wake stream, until the
    /// next run time, at most `max_wait`.
    fn sleep(&self, due: &Due) -> Wake {
        let until_next = due.next_ms.map_or(self.max_wait, |next| {
            Duration::from_millis(next.saturating_sub(due.now_ms))
        });
        Wake {
            within: until_next.min(self.max_wait),
            ..due.wake.clone()
        }
    }

    /// Fires due schedules until `stop` is raised, on connections from `client` (opened
    /// again after a failure, as [`Worker::run`](super::Worker::run) does); returns what
    /// it did, or the first error that does not pass (a script's, a cron schedule
    /// without the `cron` feature).
    pub fn run(&self, client: &dyn Connect, stop: &Stop) -> Result<ScheduleReport> {
        machine::drive(&mut Firing::new(self, stop), &mut Link::new(client))
    }

    /// [`run`](Self::run) on an async connection (a `ConnectionManager` reconnects by
    /// itself); an error that passes ([`is_transient`](super::is_transient)) is retried
    /// after a pause. While nothing is due it blocks `con` 200 ms at a time (`XREAD
    /// BLOCK`): on a multiplexed connection, other commands wait behind it meanwhile.
    #[cfg(feature = "aio")]
    pub async fn run_async<C>(&self, con: &mut C, stop: &Stop) -> Result<ScheduleReport>
    where
        C: redis::aio::ConnectionLike + Send,
    {
        machine::drive_async(&mut Firing::new(self, stop), con).await
    }
}

/// The loop of [`Scheduler::run`], for both drivers: read the due schedules, fire each,
/// read again at once after a fire, else block on the wake stream until the next run
/// time (a step at a time, to see a [`Stop`]); after an error that passes, pause and
/// read again (a fire is added once however often it is sent).
struct Firing<'s, 'q> {
    scheduler: &'s Scheduler<'q>,
    stop: &'s Stop,
    read: Op<Due>,
    at: FiringAt,
    retries: Retries,
    report: ScheduleReport,
    failed: Option<Error>,
}

/// Where a [`Firing`] stands.
enum FiringAt {
    Read,
    /// Firing `due.due[next]`.
    Fire {
        due: Due,
        next: usize,
    },
    /// Blocking on `wake` for `left` more, `step` of it in the read sent.
    Sleep {
        wake: Wake,
        left: Duration,
        step: Duration,
    },
    /// Pausing after an error that passes.
    Retry(Duration),
}

/// What [`Firing`] runs answers.
enum FiringAnswer {
    Due(Due),
    Fired(Fired),
    Woke(bool),
}

impl<'s, 'q> Firing<'s, 'q> {
    fn new(scheduler: &'s Scheduler<'q>, stop: &'s Stop) -> Self {
        Firing {
            scheduler,
            stop,
            read: scheduler.queue.due_schedules(scheduler.batch),
            at: FiringAt::Read,
            retries: Retries::default(),
            report: ScheduleReport::default(),
            failed: None,
        }
    }
}

impl Machine for Firing<'_, '_> {
    type Answer = FiringAnswer;
    type Output = Result<ScheduleReport>;

    fn step(&mut self) -> Step<FiringAnswer, Result<ScheduleReport>> {
        if let Some(err) = self.failed.take() {
            return Step::Done(Err(err));
        }
        if self.stop.is_stopped() {
            self.report.reconnects = self.retries.reconnects;
            self.report.server_retries = self.retries.server_retries;
            return Step::Done(Ok(std::mem::take(&mut self.report)));
        }
        match &mut self.at {
            FiringAt::Read => Step::Run(self.read.clone().map(|due| Ok(FiringAnswer::Due(due)))),
            FiringAt::Fire { due, next } => match due.due.get(*next) {
                Some(one) => Step::Run(
                    self.scheduler
                        .queue
                        .fire(one, due.now_ms)
                        .map(|fired| Ok(FiringAnswer::Fired(fired))),
                ),
                // After a fire, the next read answers the moved run times.
                None if !due.due.is_empty() => {
                    self.at = FiringAt::Read;
                    self.step()
                }
                None => {
                    let wake = self.scheduler.sleep(due);
                    self.at = FiringAt::Sleep {
                        left: wake.within,
                        wake,
                        step: Duration::ZERO,
                    };
                    self.step()
                }
            },
            FiringAt::Sleep { left, .. } if left.is_zero() => {
                self.at = FiringAt::Read;
                self.step()
            }
            FiringAt::Sleep { wake, left, step } => {
                *step = (*left).min(BLOCK_STEP);
                Step::Run(wake.block(*step).map(|woke| Ok(FiringAnswer::Woke(woke))))
            }
            FiringAt::Retry(pause) => {
                let pause = *pause;
                self.at = FiringAt::Read;
                Step::Pause(pause)
            }
        }
    }

    fn feed(&mut self, answer: Result<FiringAnswer>) {
        let answer = match answer {
            Ok(answer) => answer,
            Err(err) => {
                match self.retries.after(&err) {
                    Some(pause) => self.at = FiringAt::Retry(pause),
                    None => self.failed = Some(err),
                }
                return;
            }
        };
        self.retries.passed();
        match (answer, &mut self.at) {
            (FiringAnswer::Due(due), _) => self.at = FiringAt::Fire { due, next: 0 },
            (FiringAnswer::Fired(fired), FiringAt::Fire { next, .. }) => {
                self.report.count(&fired);
                *next += 1;
            }
            (FiringAnswer::Woke(false), FiringAt::Sleep { left, step, .. }) => *left -= *step,
            (FiringAnswer::Woke(true), _) => self.at = FiringAt::Read,
            _ => unreachable!("an answer to another step"),
        }
    }
}

/// The longest one blocking read of a sleeping scheduler: below the response timeout of a
/// multiplexed connection (500 ms by default), and how soon it sees its [`Stop`].
const BLOCK_STEP: Duration = Duration::from_millis(200);

#[cfg(feature = "cron")]
mod cron {
    use chrono::{DateTime, TimeZone};
    use croner::Cron;
    use croner::parser::{CronParser, Seconds};

    use crate::runtime::error::{Error, Result};

    pub(super) fn parse(expr: &str) -> Result<Cron> {
        CronParser::builder()
            .seconds(Seconds::Optional)
            .build()
            .parse(expr)
            .map_err(|err| Error::invalid("cron", format!("{expr:?} does not parse: {err}")))
    }

    pub(super) fn zone(tz: &str) -> Result<chrono_tz::Tz> {
        tz.parse()
            .map_err(|_| Error::invalid("tz", format!("{tz:?} is no IANA time zone")))
    }

    pub(super) fn at(tz: chrono_tz::Tz, ms: u64) -> Result<DateTime<chrono_tz::Tz>> {
        tz.timestamp_millis_opt(ms as i64)
            .single()
            .ok_or_else(|| Error::invalid("run", format!("{ms} ms is out of range")))
    }

    pub(super) fn ms(t: &DateTime<chrono_tz::Tz>) -> u64 {
        t.timestamp_millis().max(0) as u64
    }

    pub(super) fn failed(err: croner::errors::CronError) -> Error {
        Error::invalid("cron", format!("no next time: {err}"))
    }
}

/// The first run time of a cron schedule after `now` (ms).
#[cfg(feature = "cron")]
fn first_cron_run(expr: &str, tz: &str, now: u64) -> Result<u64> {
    let cron = cron::parse(expr)?;
    let start = cron::at(cron::zone(tz)?, now)?;
    let next = cron
        .find_next_occurrence(&start, false)
        .map_err(cron::failed)?;
    Ok(cron::ms(&next))
}

#[cfg(not(feature = "cron"))]
fn first_cron_run(_: &str, _: &str, _: u64) -> Result<u64> {
    Err(no_cron())
}

#[cfg(not(feature = "cron"))]
fn no_cron() -> Error {
    Error::invalid(
        "schedule",
        "a cron schedule needs the `cron` feature of redis-patterns",
    )
}

/// The times `fire.lua` takes for a cron schedule whose run `run` came due by `now`:
/// the latest `n` times after `run` up to `now`, then times after `now`, in order, at
/// most 101 in all.
#[cfg(feature = "cron")]
fn cron_times(expr: &str, tz: &str, run: u64, now: u64, n: usize) -> Result<Vec<u64>> {
    let cron = cron::parse(expr)?;
    let now_at = cron::at(cron::zone(tz)?, now)?;
    let mut back = Vec::new();
    let mut at = now_at;
    let mut inclusive = true;
    while back.len() < n {
        match cron.find_previous_occurrence(&at, inclusive) {
            Ok(t) if cron::ms(&t) > run && cron::ms(&t) <= now => {
                back.push(cron::ms(&t));
                at = t;
                inclusive = false;
            }
            _ => break,
        }
    }
    back.reverse();
    let mut times = back;
    let ahead = (101 - times.len()).min(3);
    let mut at = now_at;
    for _ in 0..ahead {
        let t = cron
            .find_next_occurrence(&at, false)
            .map_err(cron::failed)?;
        let t_ms = cron::ms(&t);
        if times.last().is_none_or(|&last| t_ms > last) && t_ms > run {
            times.push(t_ms);
        }
        at = t;
    }
    Ok(times)
}

#[cfg(not(feature = "cron"))]
fn cron_times(_: &str, _: &str, _: u64, _: u64, _: usize) -> Result<Vec<u64>> {
    Err(no_cron())
}
