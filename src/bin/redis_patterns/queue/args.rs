//! The command lines of `queue` and `queues`: the actions, their flags, and the bounds
//! the flags take from the scripts' headers.

use std::ffi::OsString;
use std::time::Duration;

use clap::{ArgGroup, Args, Subcommand, ValueEnum};
use redis_patterns::work_queue::{Changes, State};
use redis_patterns::{Rule, catalog};

use crate::shared::{Failure, WHOLE_0, uint_from_text};

const EXAMPLES: &str = "Examples:\n  \
    redis-patterns queues --url redis://127.0.0.1:6379\n  \
    redis-patterns queue emails counts --url redis://127.0.0.1:6379\n  \
    REDIS_URL=redis://127.0.0.1:6379 redis-patterns queue emails metrics --prometheus\n  \
    redis-patterns queue emails list dead --count 50 --json\n  \
    redis-patterns queue emails job welcome:42\n  \
    redis-patterns queue emails retry --all-dead\n  \
    redis-patterns queue emails limits --group-concurrency 2 --group-rate 10 --group-period-ms 1000\n  \
    redis-patterns queue emails limits --events-max 10000 --group-turns on\n  \
    redis-patterns queue emails pause && redis-patterns queue emails delete";

/// The server a command talks to, by default `REDIS_URL`'s, as every example's.
pub(crate) const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

/// Marks a queue's name that is also an action's (`queue counts counts`): clap reads a
/// subcommand's name as the subcommand wherever it stands. No argument of a command
/// line holds a NUL, so the mark is never part of a name.
pub(super) const MARK: char = '\0';

/// The command line with the queue's name marked when it is also an action's.
pub fn name_first(args: impl Iterator<Item = OsString>) -> Vec<OsString> {
    let mut args: Vec<OsString> = args.collect();
    if args.get(1).is_none_or(|a| a != "queue") {
        return args;
    }
    let mut i = 2;
    while let Some(arg) = args.get(i).and_then(|a| a.to_str()) {
        match arg {
            "--url" => i += 2,
            "--cluster" => i += 1,
            _ if arg.starts_with("--url=") => i += 1,
            _ if arg.starts_with('-') => break,
            _ => {
                if Action::has_subcommand(arg) || arg == "help" {
                    args[i] = format!("{MARK}{arg}").into();
                }
                break;
            }
        }
    }
    args
}

/// The range a `work_queue` script's header gives its argument `arg`: the one source
/// of the bounds that the flags' help states and their parsers check.
fn range(script: &str, arg: &str) -> (u64, u64) {
    let param = catalog::find(script)
        .and_then(|s| s.args.iter().find(|p| p.name == arg))
        .unwrap_or_else(|| panic!("{script} has no argument `{arg}`"));
    match param.rule {
        Rule::Range { min, max } => (min.max(0) as u64, max.max(0) as u64),
        _ => panic!("{script}'s `{arg}` has no range"),
    }
}

/// `from 1 to 1440`, as a help text says a range.
fn range_words(script: &str, arg: &str) -> String {
    let (min, max) = range(script, arg);
    format!("{min} to {max}")
}

/// A help text that ends with the range of `configure`'s argument `arg`.
fn setting_help(what: &str, arg: &str) -> String {
    format!("{what} ({})", range_words("work_queue/configure", arg))
}

/// The parser of a number within the range of `script`'s argument `arg`.
fn within(
    script: &'static str,
    arg: &'static str,
) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync + 'static {
    move |text| {
        let n = whole(text)?;
        let (min, max) = range(script, arg);
        if (min..=max).contains(&n) {
            Ok(n)
        } else {
            Err(format!("must be from {min} to {max}"))
        }
    }
}

#[derive(Args)]
#[command(after_help = EXAMPLES)]
pub struct QueueArgs {
    /// The queue's name, as `WorkQueue::new` takes it (its keys are `{<name>}:…`).
    pub(super) name: String,
    /// The server: `redis://host:port` (`rediss://` for TLS).
    #[arg(long, env = "REDIS_URL", hide_env_values = true, default_value = DEFAULT_URL, global = true)]
    pub(super) url: String,
    /// The URL is a node of a cluster.
    #[arg(long, global = true)]
    pub(super) cluster: bool,
    #[command(subcommand)]
    pub(super) action: Action,
}

/// `redis-patterns queues`: the queues on a server.
#[derive(Args)]
pub struct QueuesArgs {
    /// The server: `redis://host:port` (`rediss://` for TLS).
    #[arg(long, env = "REDIS_URL", hide_env_values = true, default_value = DEFAULT_URL)]
    pub(super) url: String,
    /// The URL is a node of a cluster: every primary is searched.
    #[arg(long)]
    pub(super) cluster: bool,
    /// Prints JSON: an array of the queues, each with its counts.
    #[arg(long)]
    pub(super) json: bool,
}

#[derive(Subcommand)]
pub(super) enum Action {
    /// The jobs in each state, and whether the queue is paused.
    Counts {
        /// Prints JSON: an object of the counts and `paused`.
        #[arg(long)]
        json: bool,
    },
    /// The counts, the next job's age, and while metrics are on the totals and the jobs
    /// ended per minute.
    Metrics {
        #[arg(
            long,
            default_value_t = 60,
            value_parser = within("work_queue/metrics", "minutes"),
            help = format!(
                "How many of the last minutes to read ({}; at most the window kept)",
                range_words("work_queue/metrics", "minutes")
            )
        )]
        minutes: u64,
        /// Prints the metrics in Prometheus' text format instead.
        #[arg(long, conflicts_with = "json")]
        prometheus: bool,
        /// Prints JSON: the counts, the next job's age, and the totals and minutes
        /// (null totals while metrics are off).
        #[arg(long)]
        json: bool,
    },
    /// One page of the jobs in a state, in the order the state keeps them.
    List {
        /// The state.
        #[arg(value_enum)]
        state: AnyState,
        #[arg(
            long,
            default_value_t = 0,
            value_parser = within("work_queue/list", "offset"),
            help = format!(
                "How many jobs to skip ({})",
                range_words("work_queue/list", "offset")
            )
        )]
        offset: u64,
        #[arg(
            long,
            default_value_t = 20,
            value_parser = within("work_queue/list", "count"),
            help = format!(
                "How many jobs to show ({})",
                range_words("work_queue/list", "count")
            )
        )]
        count: u64,
        /// Prints JSON: an array of the jobs.
        #[arg(long)]
        json: bool,
    },
    /// One job: its state, deliveries, priority, group, last error, time and payload.
    Job {
        /// The job's id.
        id: String,
        /// Prints JSON: an object of the job.
        #[arg(long)]
        json: bool,
    },
    /// The queue's settings: limits, dead-letter cap, metrics, events, results, turns.
    Settings {
        /// Prints JSON: an object of the settings, as `configure` takes them (0 for
        /// no limit, no metrics, no events).
        #[arg(long)]
        json: bool,
    },
    /// Pauses the queue: workers take nothing until `resume` (running jobs go on).
    Pause {
        /// Pauses a queue that has no keys yet (one that has never had a job).
        #[arg(long)]
        create: bool,
    },
    /// Resumes a paused queue.
    Resume,
    /// Moves a dead job back to waiting, or every dead job with `--all-dead`.
    #[command(group(ArgGroup::new("which").required(true).args(["id", "all_dead"])))]
    Retry {
        /// The dead job's id.
        id: Option<String>,
        /// Every dead job, oldest first, 100 per call.
        #[arg(long)]
        all_dead: bool,
    },
    /// Removes a job that no worker holds (waiting, parked, delayed, dead, completed or blocked).
    Remove {
        /// The job's id.
        id: String,
    },
    /// Removes every waiting and parked job (and delayed ones with `--delayed`).
    ///
    /// 100 per call, until none is left; jobs held by workers are left to them.
    Drain {
        /// Removes the delayed jobs too.
        #[arg(long)]
        delayed: bool,
    },
    /// Removes every job in a state, 100 per call.
    Clean {
        /// The state (leased jobs belong to their workers).
        #[arg(value_enum)]
        state: CleanState,
        /// Only the dead or completed jobs that ended at least this long ago, in ms.
        #[arg(long, value_name = "MS", value_parser = whole, default_value_t = 0)]
        grace_ms: u64,
    },
    /// Deletes a paused queue: its jobs, 100 per call, then its keys.
    Delete {
        /// Deletes the jobs workers hold too (their acks then fail with LEASE_LOST).
        #[arg(long)]
        force: bool,
    },
    /// Changes a job's priority (higher goes first).
    Priority {
        /// The job's id.
        id: String,
        #[arg(
            value_parser = within("work_queue/set_priority", "priority"),
            help = format!(
                "The new priority ({})",
                range_words("work_queue/set_priority", "priority")
            )
        )]
        priority: u64,
    },
    /// Delays a waiting, parked or delayed job until that many ms from now; with 0,
    /// makes a delayed job wait at once.
    Delay {
        /// The job's id.
        id: String,
        #[arg(
            value_parser = within("work_queue/set_delay", "delay"),
            help = format!(
                "The delay in whole milliseconds ({}; 0 makes a delayed job wait at once)",
                range_words("work_queue/set_delay", "delay")
            )
        )]
        ms: u64,
    },
    /// Makes a delayed job wait at once, at its rank.
    Promote {
        /// The job's id.
        id: String,
    },
    /// Changes the settings the flags name and keeps the others, then prints them all.
    ///
    /// The change is one script, which keeps every setting no flag names, so two
    /// operators who change different settings at once both keep theirs. Without
    /// flags, prints the settings. A concurrency or a rate of 0 is no limit; a period
    /// without its rate changes the window of the rate the queue has.
    #[command(visible_alias = "configure")]
    Limits(LimitFlags),
}

#[derive(Clone, Copy, ValueEnum)]
enum Switch {
    On,
    Off,
}

#[derive(Args)]
pub(super) struct LimitFlags {
    #[arg(long, value_name = "N", value_parser = whole,
        help = setting_help("The most jobs of one group held at once; 0: no limit", "group_concurrency"))]
    group_concurrency: Option<u64>,
    #[arg(long, value_name = "N", value_parser = whole,
        help = setting_help("The most jobs of one group started per period; 0: no limit", "group_rate"))]
    group_rate: Option<u64>,
    #[arg(long, value_name = "MS", value_parser = whole,
        help = setting_help("The period of the group rate, in ms", "group_period"))]
    group_period_ms: Option<u64>,
    #[arg(long, value_name = "N", value_parser = whole,
        help = setting_help("The most jobs of the queue held at once; 0: no limit", "queue_concurrency"))]
    queue_concurrency: Option<u64>,
    #[arg(long, value_name = "N", value_parser = whole,
        help = setting_help("The most jobs of the queue started per period; 0: no limit", "queue_rate"))]
    queue_rate: Option<u64>,
    #[arg(long, value_name = "MS", value_parser = whole,
        help = setting_help("The period of the queue rate, in ms", "queue_period"))]
    queue_period_ms: Option<u64>,
    #[arg(long, value_name = "N", value_parser = whole,
        help = setting_help("The most dead jobs kept", "dead_max"))]
    dead_max: Option<u64>,
    #[arg(long, value_name = "MS", value_parser = whole,
        help = setting_help("How long a dead job is kept, in ms", "dead_age"))]
    dead_age_ms: Option<u64>,
    #[arg(long, value_name = "N", value_parser = whole,
        help = setting_help("The most completed jobs kept; 0 keeps none", "completed_max"))]
    completed_max: Option<u64>,
    #[arg(long, value_name = "MS", value_parser = whole,
        help = setting_help("How long a completed job is kept, in ms", "completed_age"))]
    completed_age_ms: Option<u64>,
    #[arg(long, value_name = "N", value_parser = whole,
        help = setting_help("The minutes of per-minute metrics kept; 0 turns metrics off", "metrics_minutes"))]
    metrics_minutes: Option<u64>,
    #[arg(long, value_name = "N", value_parser = whole,
        help = setting_help("The most events kept in {<name>}:events; 0 turns events off", "events_max"))]
    events_max: Option<u64>,
    #[arg(long, value_name = "MS", value_parser = whole,
        help = setting_help("How long a job's result is kept, in ms", "result_ttl"))]
    result_ttl_ms: Option<u64>,
    #[arg(long, value_name = "BYTES", value_parser = whole,
        help = setting_help("The longest result kept, in bytes", "result_max"))]
    result_max_bytes: Option<u64>,
    /// Whether the groups with jobs ready take turns (round-robin between groups).
    #[arg(long, value_enum, value_name = "on|off")]
    group_turns: Option<Switch>,
    /// Sets up a queue that has no keys yet (one that has never had a job).
    #[arg(long)]
    create: bool,
}

impl LimitFlags {
    /// The changes the flags name; an out-of-range value is a usage error that names
    /// its flag, as the Rust API checks it.
    pub(super) fn changes(&self) -> Result<Changes, Failure> {
        let mut c = Changes::new();
        let number =
            |c: Changes,
             flag: &str,
             value: Option<u64>,
             set: fn(Changes, u64) -> redis_patterns::Result<Changes>| {
                match value {
                    Some(n) => set(c, n).map_err(|err| flag_error(flag, n, err)),
                    None => Ok(c),
                }
            };
        let ms = |c: Changes,
                  flag: &str,
                  value: Option<u64>,
                  set: fn(Changes, Duration) -> redis_patterns::Result<Changes>| {
            match value {
                Some(n) => set(c, Duration::from_millis(n)).map_err(|err| flag_error(flag, n, err)),
                None => Ok(c),
            }
        };
        c = number(
            c,
            "group-concurrency",
            self.group_concurrency,
            Changes::group_concurrency,
        )?;
        c = number(c, "group-rate", self.group_rate, Changes::group_rate)?;
        c = ms(
            c,
            "group-period-ms",
            self.group_period_ms,
            Changes::group_period,
        )?;
        c = number(
            c,
            "queue-concurrency",
            self.queue_concurrency,
            Changes::queue_concurrency,
        )?;
        c = number(c, "queue-rate", self.queue_rate, Changes::queue_rate)?;
        c = ms(
            c,
            "queue-period-ms",
            self.queue_period_ms,
            Changes::queue_period,
        )?;
        c = number(c, "dead-max", self.dead_max, Changes::dead_max)?;
        c = ms(c, "dead-age-ms", self.dead_age_ms, Changes::dead_age)?;
        c = number(
            c,
            "completed-max",
            self.completed_max,
            Changes::completed_max,
        )?;
        c = ms(
            c,
            "completed-age-ms",
            self.completed_age_ms,
            Changes::completed_age,
        )?;
        c = number(
            c,
            "metrics-minutes",
            self.metrics_minutes,
            Changes::metrics_minutes,
        )?;
        c = number(c, "events-max", self.events_max, Changes::events)?;
        c = ms(c, "result-ttl-ms", self.result_ttl_ms, Changes::result_ttl)?;
        c = number(
            c,
            "result-max-bytes",
            self.result_max_bytes,
            Changes::result_max,
        )?;
        if let Some(turns) = self.group_turns {
            c = c.group_turns(matches!(turns, Switch::On));
        }
        Ok(c)
    }
}

/// A value the crate refused, as a usage error that names its flag.
fn flag_error(flag: &str, value: impl std::fmt::Display, err: redis_patterns::Error) -> Failure {
    let why = match err {
        redis_patterns::Error::InvalidInput { why, .. } => why,
        err => return err.into(),
    };
    // The crate's "got …" shows the value as the API takes it (`0ns`): the flag's instead.
    let why = why
        .rsplit_once(", got ")
        .map_or(why.as_str(), |(why, _)| why)
        .to_owned();
    Failure::usage(format!("--{flag} {value}: {why}"))
}

#[derive(Clone, Copy, ValueEnum)]
pub(super) enum AnyState {
    Waiting,
    Parked,
    Delayed,
    Leased,
    Dead,
    Completed,
    Blocked,
}

impl From<AnyState> for State {
    fn from(state: AnyState) -> State {
        match state {
            AnyState::Waiting => State::Waiting,
            AnyState::Parked => State::Parked,
            AnyState::Delayed => State::Delayed,
            AnyState::Leased => State::Leased,
            AnyState::Dead => State::Dead,
            AnyState::Completed => State::Completed,
            AnyState::Blocked => State::Blocked,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub(super) enum CleanState {
    Waiting,
    Parked,
    Delayed,
    Dead,
    Completed,
}

impl From<CleanState> for State {
    fn from(state: CleanState) -> State {
        match state {
            CleanState::Waiting => State::Waiting,
            CleanState::Parked => State::Parked,
            CleanState::Delayed => State::Delayed,
            CleanState::Dead => State::Dead,
            CleanState::Completed => State::Completed,
        }
    }
}

/// A whole number, 0 or more, by the scripts' one rule for integers.
fn whole(text: &str) -> Result<u64, String> {
    uint_from_text(text).ok_or_else(|| format!("must be {WHOLE_0}"))
}

impl Action {
    /// Whether the action writes; one on a queue with no keys is refused (a typo
    /// would otherwise pass for a queue), unless it says `--create`.
    pub(super) fn writes(&self) -> bool {
        match self {
            Action::Counts { .. }
            | Action::Metrics { .. }
            | Action::List { .. }
            | Action::Job { .. }
            | Action::Settings { .. } => false,
            Action::Limits(flags) => !flags.changes().is_ok_and(|c| c.is_empty()),
            _ => true,
        }
    }

    /// Whether the action was told to act on a queue with no keys.
    pub(super) fn creates(&self) -> bool {
        matches!(self, Action::Pause { create: true })
            || matches!(self, Action::Limits(flags) if flags.create)
    }
}
