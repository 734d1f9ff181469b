//! Deduplication windows: an id that keeps a job from being added twice for a while after
//! it was added (BullMQ's `deduplication` with a `ttl`, `extend` and `replace`).

use std::time::Duration;

use redis::ToRedisArgs;

use super::{Added, JobOptions, State, WorkQueue, script, spans};
use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::op::Op;

/// The longest window ([`Deduplication::new`]): what `SET … PX` takes.
pub const MAX_WINDOW: Duration = Duration::from_millis(input::MAX_BLOCK_MS);

/// A deduplication window for [`add_deduplicated`](WorkQueue::add_deduplicated): the first
/// add of its id adds the job and opens the window; an add within it adds nothing.
///
/// ```
/// use std::time::Duration;
/// use redis_patterns::work_queue::Deduplication;
///
/// // Throttle: one job per user per minute, whatever the calls in between.
/// let throttle = Deduplication::new("user:7", Duration::from_secs(60))?;
/// // Debounce: the job runs once the calls have paused for 5 s, with the last payload.
/// let debounce = Deduplication::new("user:7", Duration::from_secs(5))?.extend().replace();
/// # let _ = (throttle, debounce);
/// # Ok::<(), redis_patterns::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deduplication {
    id: String,
    ttl: Duration,
    extend: bool,
    replace: bool,
}

impl Deduplication {
    /// A window of `ttl` (1 ms to [`MAX_WINDOW`], whole milliseconds) under the
    /// deduplication id `id` (not empty; it names a key of the queue, in its hash slot).
    pub fn new(id: impl Into<String>, ttl: Duration) -> Result<Self> {
        let id = id.into();
        if id.is_empty() {
            return Err(Error::invalid("deduplication id", "must not be empty"));
        }
        // The rule of every script's ttl, which the header of add_deduplicated states too.
        input::check_ms(&input::TTL, ttl)
            .map_err(|why| Error::invalid("deduplication window", why))?;
        Ok(Deduplication {
            id,
            ttl,
            extend: false,
            replace: false,
        })
    }

    /// An add within the window starts it again (BullMQ's `extend`).
    pub fn extend(mut self) -> Self {
        self.extend = true;
        self
    }

    /// An add within the window replaces the payload of the window's job while that job
    /// waits (waiting, parked or delayed), and a delayed one is then due after the new
    /// add's delay (BullMQ's `replace`): with [`extend`](Self::extend), a debounce.
    pub fn replace(mut self) -> Self {
        self.replace = true;
        self
    }

    /// The deduplication id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// What [`add_deduplicated`](WorkQueue::add_deduplicated) did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deduplicated {
    /// The job was added, in this state, and its window opened.
    Added(State),
    /// A job with this id is already in the queue, in this state: nothing changed and no
    /// window opened (as [`Added::Duplicate`](super::Added::Duplicate)).
    Duplicate(State),
    /// A window was open: no job was added.
    InWindow {
        /// The id of the job that opened the window.
        job: String,
        /// Its state now; `None` when it is no longer in the queue.
        state: Option<State>,
        /// Whether the window started again ([`Deduplication::extend`]).
        extended: bool,
        /// Whether the job's payload was replaced ([`Deduplication::replace`]).
        replaced: bool,
    },
}

impl WorkQueue {
    /// Adds a job with `options` unless a job was added under `dedup`'s id within its
    /// window, as [`Deduplicated`] tells; an id already in the queue is refused as
    /// [`add_with`](Self::add_with) refuses it. The window is a key of the queue,
    /// `{name}:dedup:<id>`, which expires with it: deleting the queue leaves it until then.
    /// One script (`work_queue/add_deduplicated`).
    ///
    /// ```no_run
    /// # fn demo() -> redis_patterns::Result<()> {
    /// use std::time::Duration;
    /// use redis_patterns::work_queue::{Deduplicated, Deduplication, JobOptions, WorkQueue};
    ///
    /// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let queue = WorkQueue::new("reindex")?;
    /// let window = Deduplication::new("doc:42", Duration::from_secs(10))?.extend().replace();
    /// let delay = JobOptions::new().delay(Duration::from_secs(10));
    /// match queue.add_deduplicated("reindex-42-v7", "v7", delay, &window).run(&mut con)? {
    ///     Deduplicated::Added(_) => println!("queued"),
    ///     Deduplicated::InWindow { job, .. } => println!("{job} will run with v7"),
    ///     Deduplicated::Duplicate(state) => println!("already {state:?}"),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn add_deduplicated<V: ToRedisArgs>(
        &self,
        id: &str,
        payload: V,
        options: JobOptions,
        dedup: &Deduplication,
    ) -> Op<Deduplicated> {
        Op::try_build(|| {
            let payload = input::value("payload", &payload)?;
            let group = options.group_arg()?;
            let (attempts, backoff, backoff_delay, backoff_max) = options.retry_args()?;
            let window = script::keys::window(self.name(), &dedup.id)?;
            let extended = dedup.extend;
            let (send, trace) = spans::send_context(
                options.trace_context.as_deref(),
                &self.name,
                "add_deduplicated",
                id,
                payload.len(),
            );
            let k = &self.keys;
            let op = script::add_deduplicated(
                &k.waiting,
                &k.delayed,
                &k.parked,
                &k.jobs,
                &k.signal,
                &k.events,
                &k.turns,
                &window,
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
                &dedup.id,
                dedup.ttl,
                dedup.extend,
                dedup.replace,
                &trace,
            );
            Ok(op
                .map(
                    move |(outcome, job, state): (String, String, Option<String>)| {
                        let state = state.map(|s| s.parse::<State>()).transpose()?;
                        let known = || {
                            state.ok_or_else(|| {
                                Error::unexpected_reply(
                                    "add_deduplicated",
                                    format!("{outcome} without a state"),
                                )
                            })
                        };
                        Ok(match outcome.as_str() {
                            "added" => Deduplicated::Added(known()?),
                            "duplicate" => Deduplicated::Duplicate(known()?),
                            "ignored" | "extended" | "replaced" => Deduplicated::InWindow {
                                job,
                                state,
                                extended,
                                replaced: outcome == "replaced",
                            },
                            other => {
                                return Err(Error::unexpected_reply(
                                    "add_deduplicated",
                                    format!("{other:?} is no outcome"),
                                ));
                            }
                        })
                    },
                )
                .map(move |deduplicated| {
                    if let Some(send) = &send {
                        match &deduplicated {
                            Deduplicated::Added(state) => send.added(Added::New(*state)),
                            Deduplicated::Duplicate(state) => send.added(Added::Duplicate(*state)),
                            Deduplicated::InWindow { .. } => send.end(),
                        }
                    }
                    Ok(deduplicated)
                }))
        })
    }
}
