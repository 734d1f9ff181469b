//! A countdown latch with generations, for processes that may crash (beyond the books).
//!
//! A latch is armed with a count; clients count it down, and when the count reaches
//! zero it opens and every waiter goes on. It stays open until it is armed again, which
//! starts a new **generation** (1, 2, 3, …). Generations are what keep waiters from
//! missing an opening: a waiter that saw generation `g` closed asks again about `g`, and
//! every generation before the current one has opened, so it learns that `g` opened even
//! when the latch was re-armed before it asked. That is also why arming refuses a closed
//! generation ([`Armed::Closed`]): replacing it would strand its waiters.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use std::time::Duration;
//! use redis_patterns::latch::{Armed, Latch, LatchState};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let latch = Latch::new("nightly-import")?;
//! let Armed::New(generation) = latch.arm(3, None).run(&mut con)? else {
//!     panic!("the last import has not finished");
//! };
//!
//! // Each of three workers, once its shard is loaded (a resent count-down with the same
//! // id counts once):
//! latch.count_down_in(generation, Some("shard-1")).run(&mut con)?;
//!
//! // The report waits for all three, up to a minute.
//! match latch.wait_within(&mut con, Some(generation), Duration::from_secs(60))? {
//!     Some(opened) => println!("generation {opened} is done"),
//!     None => println!("still waiting: {:?}", latch.state().run(&mut con)?),
//! }
//! # Ok(()) }
//! ```
//!
//! | Key | Type | Holds |
//! |---|---|---|
//! | `{name}:latch` | hash | `gen` (the current generation), `count`, `left` (0: open), `opened` (the last generation that opened) |
//! | `{name}:ids` | set | the ids that counted the current generation down (at most `count`; cleared when it opens) |
//! | `{name}:wake` | stream | one entry per opening: what waiters block on |
//!
//! (`name:latch` and so on when `name` already holds a hash tag.) Every operation is one
//! script: `latch/arm`, `latch/count_down`, `latch/state` and `latch/wait` (the last two
//! read-only). From redis-cli:
//!
//! ```text
//! redis-cli --eval scripts/latch/arm.lua '{import}:latch' '{import}:ids' , 3 ''
//! redis-cli --eval scripts/latch/count_down.lua '{import}:latch' '{import}:ids' '{import}:wake' , shard-1 1
//! redis-cli --eval scripts/latch/wait.lua '{import}:latch' '{import}:wake' , 1
//! #   1) 0  2) 1  3) "0-0"  4) 1000: closed; block, then ask again:
//! redis-cli XREAD BLOCK 1000 STREAMS '{import}:wake' 0-0
//! ```
//!
//! **Waiting** never depends on pub/sub. [`try_wait`](Latch::try_wait) answers
//! [`Attempt::Done`] with the generation that opened, or [`Attempt::NotYet`] with the wake
//! stream's last id; the waiter blocks on `XREAD` from that id (the opening count-down
//! appends to it, so every waiter wakes at once, and one that blocks after the append
//! returns at once), at most [`MAX_BLOCK`](crate::wait::MAX_BLOCK), then asks again.
//! [`wait_within`](Latch::wait_within) and [`wait_within_async`](Latch::wait_within_async)
//! are that loop, with a timeout. A latch nobody armed never reads open: a waiter then
//! waits for generation 1, the first of a new latch.
//!
//! **Count-downs** answer what is left ([`CountDown`]). With an id, a count-down counts at
//! most once per generation (the ids are kept until the generation opens), so a client
//! may resend one whose reply it lost; with a generation
//! ([`count_down_in`](Latch::count_down_in)) it counts only while that generation is the
//! latch's, so a slow client never counts down the next one. A count-down on a latch
//! nobody armed changes nothing and answers `None`.
//!
//! **Expiry.** Armed with a `ttl`, the latch's keys go `ttl` after the arm; the latch then
//! reads as [`LatchState::NotFound`] and its waiters wait on (it never opened) until their
//! timeout. Arming it again starts at generation 1, so a waiter still holding a generation
//! of the old latch could take an opening of the new one for its own: use a ttl longer
//! than any wait.
//!
//! **After a failover** to a replica that missed the primary's last writes, the latch is
//! as the replica had it: a count-down the primary acknowledged may be lost (its client
//! may count down again with the same id: it counts once), and a generation may read
//! closed again after it opened on the old primary. A waiter never reads open where the
//! new primary has no opening; a wake-up lost with the old primary costs at most one
//! [`MAX_BLOCK`](crate::wait::MAX_BLOCK). Where a lost count-down matters, count down with
//! [`Op::wait_for`](crate::Op::wait_for) and a replica.
//!
//! **Beyond Redisson.** Redisson's `RCountDownLatch` is one integer: `trySetCount` sets it
//! if absent, `countDown` decrements it and deletes it at zero, and `await` waits for a
//! pub/sub message. So a latch that opened, one that was deleted and one nobody set are
//! one state (`await` on a latch nobody set returns at once), an untimed `await` that
//! misses the message waits forever (redisson#3891, #4744), a count-down cannot be resent
//! safely, and re-arming has no generation, so a slow waiter misses an opening. Java's
//! `CountDownLatch` cannot be re-armed at all. Here a latch that does not exist is
//! [`LatchState::NotFound`], never open; every wait is bounded and asks the script again;
//! count-downs by id are idempotent; and generations keep every opening for its waiters.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::runtime::error::Error;
use crate::runtime::op::Op;
use crate::runtime::wait::{self, Attempt, Wake};
use crate::scripts::latch as script;

/// What [`Latch::arm`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Armed {
    /// A new generation began, with this number.
    New(u64),
    /// Nothing: this generation is closed (its count has not reached zero), and stands.
    Closed(u64),
}

/// What a count-down found and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountDown {
    /// The latch's generation.
    pub generation: u64,
    /// What is left of its count: 0 when it is open.
    pub remaining: u64,
    /// Whether this call counted (false: the generation was open already, the id had
    /// counted it down, or it was not the generation asked for).
    pub counted: bool,
}

/// A latch as [`Latch::state`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatchState {
    /// The current generation opened.
    Open {
        /// The generation.
        generation: u64,
        /// The count it was armed with.
        count: u64,
    },
    /// The current generation waits for count-downs.
    Closed {
        /// The generation.
        generation: u64,
        /// The count it was armed with.
        count: u64,
        /// What is left of it.
        remaining: u64,
    },
    /// Nobody armed the latch (or its keys expired or were deleted). Never open.
    NotFound,
}

/// A countdown latch at `{name}:latch`, with its ids at `{name}:ids` and its wake stream at
/// `{name}:wake`.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::latch::{Armed, Latch, LatchState};
/// use redis_patterns::wait::Attempt;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let latch = Latch::new("deploy")?;
/// assert_eq!(latch.state().run(&mut con)?, LatchState::NotFound); // never open
/// assert_eq!(latch.arm(2, None).run(&mut con)?, Armed::New(1));
/// assert_eq!(latch.arm(2, None).run(&mut con)?, Armed::Closed(1)); // stands
/// latch.count_down(Some("a")).run(&mut con)?;
/// latch.count_down(Some("a")).run(&mut con)?; // counts once
/// assert!(matches!(latch.try_wait(Some(1)).run(&mut con)?, Attempt::NotYet(_)));
/// latch.count_down(Some("b")).run(&mut con)?;
/// assert_eq!(latch.arm(2, None).run(&mut con)?, Armed::New(2));
/// // A waiter that saw generation 1 closed still learns that it opened.
/// assert_eq!(latch.try_wait(Some(1)).run(&mut con)?, Attempt::Done(1));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Latch {
    name: String,
    latch: String,
    ids: String,
    wake: String,
}

impl Latch {
    /// The latch named `name`, with its keys `{name}:latch`, `{name}:ids` and
    /// `{name}:wake`.
    ///
    /// An empty `name`, or one with a `}` but no hash tag (its keys could not share one
    /// cluster hash slot), is [`Error::InvalidInput`].
    pub fn new(name: impl Into<String>) -> crate::Result<Self> {
        let name = name.into();
        Ok(Latch {
            latch: script::keys::latch(&name)?,
            ids: script::keys::ids(&name)?,
            wake: script::keys::wake(&name)?,
            name,
        })
    }

    /// The latch's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The hash that holds the latch: `{name}:latch`.
    pub fn latch_key(&self) -> &str {
        &self.latch
    }

    /// The set of ids that counted the current generation down: `{name}:ids`.
    pub fn ids_key(&self) -> &str {
        &self.ids
    }

    /// The wake stream waiters block on: `{name}:wake`.
    pub fn wake_key(&self) -> &str {
        &self.wake
    }

    /// Arms the latch with a new generation of `count` (1 to 10,000) count-downs, its
    /// keys to live `ttl` from now (`None`: for ever): [`Armed::New`] with the
    /// generation, or [`Armed::Closed`] when the current generation has not opened (it
    /// stands, and nothing changes). One script (`latch/arm`).
    pub fn arm(&self, count: u64, ttl: Option<Duration>) -> Op<Armed> {
        script::arm(&self.latch, &self.ids, count, ttl).map(|(armed, generation)| {
            Ok(if armed {
                Armed::New(generation)
            } else {
                Armed::Closed(generation)
            })
        })
    }

    /// Counts the latch down by one, once per `id` in a generation (`None`: no id, every
    /// call counts): what it found and did, or `None` when nobody armed the latch. The
    /// count-down that opens the generation wakes every waiter. An id is 1 to 256 bytes.
    /// One script (`latch/count_down`).
    pub fn count_down(&self, id: Option<&str>) -> Op<Option<CountDown>> {
        self.count_down_op(None, id)
    }

    /// [`count_down`](Self::count_down), counting only while `generation` is the latch's
    /// (a slow client never counts down the next generation).
    pub fn count_down_in(&self, generation: u64, id: Option<&str>) -> Op<Option<CountDown>> {
        self.count_down_op(Some(generation), id)
    }

    fn count_down_op(&self, generation: Option<u64>, id: Option<&str>) -> Op<Option<CountDown>> {
        if id == Some("") {
            return Op::rejected(Error::invalid(
                "id",
                "must not be empty: pass None to count down without an id",
            ));
        }
        script::count_down(
            &self.latch,
            &self.ids,
            &self.wake,
            id.unwrap_or(""),
            generation,
        )
        .map(|reply| {
            Ok(reply.map(|(generation, remaining, counted)| CountDown {
                generation,
                remaining,
                counted,
            }))
        })
    }

    /// The latch's current generation, open or closed, or [`LatchState::NotFound`] (never
    /// open). One read-only script (`latch/state`).
    pub fn state(&self) -> Op<LatchState> {
        script::state(&self.latch).map(|reply| {
            Ok(match reply {
                None => LatchState::NotFound,
                Some((generation, count, 0, _)) => LatchState::Open { generation, count },
                Some((generation, count, remaining, _)) => LatchState::Closed {
                    generation,
                    count,
                    remaining,
                },
            })
        })
    }

    /// Whether `generation` (`None`: the current one; for a latch nobody armed, the first)
    /// has opened: [`Attempt::Done`] with the generation, or [`Attempt::NotYet`] with what
    /// to block on. To wait without missing an opening, ask again about the generation
    /// you saw closed ([`state`](Self::state), [`arm`](Self::arm) or
    /// [`count_down`](Self::count_down) tell it), not about `None`: the latch may be
    /// re-armed in between. One read-only script (`latch/wait`).
    pub fn try_wait(&self, generation: Option<u64>) -> Op<Attempt<u64>> {
        self.attempt(Arc::new(AtomicU64::new(generation.unwrap_or(0))))
    }

    /// One try that waits for the generation in `pin` (0: the current one), and pins the
    /// generation the script answered, so the next try asks about the same one.
    fn attempt(&self, pin: Arc<AtomicU64>) -> Op<Attempt<u64>> {
        let generation = match pin.load(Ordering::Relaxed) {
            0 => None,
            g => Some(g),
        };
        let wake = self.wake.clone();
        script::wait(&self.latch, &self.wake, generation).map(move |(open, generation, id, ms)| {
            pin.store(generation, Ordering::Relaxed);
            if open {
                return Ok(Attempt::Done(generation));
            }
            match (id, ms) {
                (Some(id), Some(ms)) => Ok(Attempt::NotYet(Wake::new(&wake, id, ms)?)),
                _ => Err(Error::unexpected_reply(
                    "latch/wait answered closed without a wake id",
                    generation.to_string(),
                )),
            }
        })
    }

    /// Waits until `generation` (`None`: the current one when it first asks; for a latch
    /// nobody armed, the first) opens, up to `timeout`: the generation that opened, or
    /// `None` on timeout. Blocks on the wake stream between tries, on `con` (a blocking
    /// command: use a connection of its own). See [`wait::until`].
    pub fn wait_within(
        &self,
        con: &mut dyn redis::ConnectionLike,
        generation: Option<u64>,
        timeout: Duration,
    ) -> crate::Result<Option<u64>> {
        let pin = Arc::new(AtomicU64::new(generation.unwrap_or(0)));
        wait::until(con, timeout, || self.attempt(pin.clone()))
    }

    /// [`wait_within`](Self::wait_within) on an async connection.
    #[cfg(feature = "aio")]
    pub async fn wait_within_async<C: redis::aio::ConnectionLike>(
        &self,
        con: &mut C,
        generation: Option<u64>,
        timeout: Duration,
    ) -> crate::Result<Option<u64>> {
        let pin = Arc::new(AtomicU64::new(generation.unwrap_or(0)));
        wait::until_async(con, timeout, || self.attempt(pin.clone())).await
    }
}
