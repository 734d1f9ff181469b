//! A cyclic barrier whose parties may crash (beyond the books).
//!
//! `n` parties meet at the barrier: each arrives and waits, and the `n`-th arrival
//! releases them all together; then the next **generation** begins, as with
//! `java.util.concurrent.CyclicBarrier`. A party holds a lease on the server's clock
//! while it waits, and renews it each time it asks again (at least every half lease, and
//! every [`MAX_BLOCK`](crate::wait::MAX_BLOCK)); a party that crashes stops renewing, and
//! when its lease runs out before the release the generation **breaks**: every waiter of
//! it answers [`Arrival::Broken`] instead of hanging, and the next generation begins at
//! once. (Java keeps a broken barrier broken until someone calls `reset`; here the party
//! that would reset it may be the one that crashed, so the barrier is ready again at
//! once, and the parties decide what a broken round means.) A party that gives up
//! ([`leave`](Barrier::leave), and [`arrive_within`](Barrier::arrive_within) on timeout)
//! breaks the generation too, as Java's timed `await` does, and
//! [`reset`](Barrier::reset) breaks it for everyone.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use std::time::Duration;
//! use redis_patterns::barrier::{Arrival, Barrier};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let barrier = Barrier::new("simulation-step", 3)?;
//! // Each of the three workers, at the end of its step:
//! match barrier.arrive_within(&mut con, Duration::from_secs(10), Duration::from_secs(60))? {
//!     Some(Arrival::Released(step)) => println!("all three finished step {step}"),
//!     Some(Arrival::Broken(step)) => println!("a worker was lost in step {step}"),
//!     None => println!("gave up waiting (the step is broken for the others)"),
//! }
//! # Ok(()) }
//! ```
//!
//! | Key | Type | Holds |
//! |---|---|---|
//! | `{name}:barrier` | hash | `parties` and `gen` (the current generation) |
//! | `{name}:arrived` | sorted set | the parties waiting in the current generation: token → lease deadline (ms, server clock) |
//! | `{name}:history` | sorted set | the last 1000 ended generations: member the generation, score twice it, plus 1 when it broke |
//! | `{name}:wake` | stream | one entry per ended generation: what waiters block on |
//!
//! (`name:barrier` and so on when `name` already holds a hash tag.) Every operation is
//! one script: `barrier/arrive`, `barrier/leave`, `barrier/reset` and `barrier/state`
//! (read-only). Each party sends the number of parties, and the first arrival stores it:
//! a party with another number is refused (`BAD_PARTIES`). From redis-cli, a party with
//! token `0123…` and a 10 s lease:
//!
//! ```text
//! redis-cli --eval scripts/barrier/arrive.lua '{step}:barrier' '{step}:arrived' '{step}:history' '{step}:wake' \
//!     , 0123456789abcdef0123456789abcdef 3 10000 ''
//! #   1) "waiting"  2) 1  3) "0-0"  4) 5000: block on the wake stream up to 5000 ms, then
//! #   run it again with the generation, 1, as the last argument (which renews the lease):
//! redis-cli XREAD BLOCK 5000 STREAMS '{step}:wake' 0-0
//! ```
//!
//! **Waiting** never depends on pub/sub: a waiting party's try answers the wake stream's
//! last id and how long to block at most (until the earliest lease that could break the
//! generation runs out, or half its own lease); the release or the break appends to the
//! stream, so every waiter wakes at once, and the bound makes each waiter see a lapsed
//! lease on its own: a crashed party breaks the generation for everyone within its lease
//! and one block. [`try_arrive`](Barrier::try_arrive) is one try (the [`Party`] remembers
//! the generation it joined, and asks about it next time);
//! [`arrive_within`](Barrier::arrive_within) and
//! [`arrive_within_async`](Barrier::arrive_within_async) are the loop, with a timeout.
//! Choose a lease of a few seconds at least: a waiter that cannot ask again within its
//! lease (a paused process, a slow network) breaks the generation.
//!
//! **After a failover** to a replica that missed the primary's last writes, the barrier
//! is as the replica had it. A lost arrival is made again by the party's next try (it
//! asks about a generation the barrier is still in, finds itself missing, and arrives);
//! a party holding a generation the new primary never reached answers broken; and a
//! release the old primary made may be lost, so that the released parties, gone on, let
//! the generation break when their leases run out. No waiter hangs: every wait is
//! bounded and asks again.
//!
//! **Beyond Redisson.** Redisson has no distributed cyclic barrier (its nearest,
//! `RCountDownLatch`, opens once per `trySetCount` and has no generations, no leases and
//! an `await` that waits for a pub/sub message alone). Curator's ZooKeeper barriers leave
//! a timed-out party's node behind (apache/curator#270), and the `micro_types` crate's
//! Redis barrier counts arrivals with `SCAN` inside Lua (undeclared keys, a walk of the
//! keyspace per poll). Here the parties are one sorted set of leases in one hash slot, a
//! crashed party breaks the round within its lease instead of hanging it, and every wait
//! is bounded.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::runtime::error::Error;
use crate::runtime::op::Op;
use crate::runtime::token;
use crate::runtime::wait::{self, Attempt, Wake};
use crate::scripts::barrier as script;

/// The most parties a barrier takes.
pub const MAX_PARTIES: u64 = 10_000;

/// How a generation ended for a party that waited in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// Every party arrived: the generation was released. Its number.
    Released(u64),
    /// A party's lease ran out, a party left, or the barrier was reset, before the
    /// release. The generation's number.
    Broken(u64),
}

/// The barrier as [`Barrier::state`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BarrierState {
    /// How many parties release a generation.
    pub parties: u64,
    /// The current generation.
    pub generation: u64,
    /// The parties waiting in it.
    pub waiting: u64,
    /// How many of those leases ran out: the next call breaks the generation.
    pub lapsed: u64,
}

/// One party at a barrier: a fresh token, and the generation it waits in (so that its
/// next try asks about that generation, not the next one). Clones share the generation.
#[derive(Debug, Clone)]
pub struct Party {
    token: String,
    joined: Arc<AtomicU64>,
}

impl Party {
    /// The party's token (32 random hex digits).
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The generation it waits in, if it arrived and its generation has not ended for it.
    pub fn generation(&self) -> Option<u64> {
        match self.joined.load(Ordering::Relaxed) {
            0 => None,
            g => Some(g),
        }
    }
}

/// A cyclic barrier of `parties` at `{name}:barrier`, with `{name}:arrived`,
/// `{name}:history` and `{name}:wake`.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use std::time::Duration;
/// use redis_patterns::barrier::{Arrival, Barrier};
/// use redis_patterns::wait::Attempt;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let barrier = Barrier::new("round", 2)?;
/// let (a, b) = (barrier.party(), barrier.party());
/// let lease = Duration::from_secs(10);
/// assert!(matches!(barrier.try_arrive(&a, lease).run(&mut con)?, Attempt::NotYet(_)));
/// assert_eq!(barrier.try_arrive(&b, lease).run(&mut con)?, Attempt::Done(Arrival::Released(1)));
/// // a asks again about generation 1, and learns it was released.
/// assert_eq!(barrier.try_arrive(&a, lease).run(&mut con)?, Attempt::Done(Arrival::Released(1)));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Barrier {
    name: String,
    parties: u64,
    state: String,
    arrived: String,
    history: String,
    wake: String,
}

impl Barrier {
    /// The barrier named `name`, released by `parties` (1 to [`MAX_PARTIES`]) arrivals.
    ///
    /// An empty `name`, one with a `}` but no hash tag (its keys could not share one
    /// cluster hash slot), or `parties` out of range is [`Error::InvalidInput`].
    pub fn new(name: impl Into<String>, parties: u64) -> crate::Result<Self> {
        let name = name.into();
        if !(1..=MAX_PARTIES).contains(&parties) {
            return Err(Error::invalid(
                "parties",
                format!("must be from 1 to {MAX_PARTIES}, got {parties}"),
            ));
        }
        Ok(Barrier {
            state: script::keys::state(&name)?,
            arrived: script::keys::arrived(&name)?,
            history: script::keys::history(&name)?,
            wake: script::keys::wake(&name)?,
            parties,
            name,
        })
    }

    /// The barrier's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How many parties release a generation.
    pub fn parties(&self) -> u64 {
        self.parties
    }

    /// The hash that holds the barrier: `{name}:barrier`.
    pub fn state_key(&self) -> &str {
        &self.state
    }

    /// The sorted set of waiting parties' lease deadlines: `{name}:arrived`.
    pub fn arrived_key(&self) -> &str {
        &self.arrived
    }

    /// The sorted set of ended generations' outcomes: `{name}:history`.
    pub fn history_key(&self) -> &str {
        &self.history
    }

    /// The wake stream waiters block on: `{name}:wake`.
    pub fn wake_key(&self) -> &str {
        &self.wake
    }

    /// A new party, with a fresh random token.
    pub fn party(&self) -> Party {
        Party {
            token: token::random(),
            joined: Arc::new(AtomicU64::new(0)),
        }
    }

    /// One try of `party`: it arrives (when it waits in no generation) or asks about the
    /// generation it waits in, renewing its lease to `lease` from now.
    /// [`Attempt::Done`] when its generation ended (released or broken: the party then
    /// waits in none, and its next try arrives at the next generation), or
    /// [`Attempt::NotYet`] with what to block on. One script (`barrier/arrive`).
    pub fn try_arrive(&self, party: &Party, lease: Duration) -> Op<Attempt<Arrival>> {
        let joined = party.joined.clone();
        let wake = self.wake.clone();
        script::arrive(
            &self.state,
            &self.arrived,
            &self.history,
            &self.wake,
            &party.token,
            self.parties,
            lease,
            party.generation(),
        )
        .map(move |(outcome, generation, id, ms)| {
            let done = match outcome.as_str() {
                "released" => Arrival::Released(generation),
                "broken" => Arrival::Broken(generation),
                "waiting" => {
                    let (Some(id), Some(ms)) = (id, ms) else {
                        return Err(Error::unexpected_reply(
                            "barrier/arrive answered waiting without a wake id",
                            generation.to_string(),
                        ));
                    };
                    joined.store(generation, Ordering::Relaxed);
                    return Ok(Attempt::NotYet(Wake::new(&wake, id, ms)?));
                }
                _ => {
                    return Err(Error::unexpected_reply(
                        "barrier/arrive answered an unknown outcome",
                        outcome,
                    ));
                }
            };
            joined.store(0, Ordering::Relaxed);
            Ok(Attempt::Done(done))
        })
    }

    /// Arrives as a new party and waits until its generation is released or broken, up
    /// to `timeout`, renewing its `lease` as it waits. `None` on timeout: the party then
    /// leaves, which breaks the generation for the others, as Java's timed `await` does
    /// (if the generation ended meanwhile, its outcome is answered instead). Blocks on
    /// the wake stream between tries, on `con` (a blocking command: use a connection of
    /// its own). See [`wait::until`].
    pub fn arrive_within(
        &self,
        con: &mut dyn redis::ConnectionLike,
        lease: Duration,
        timeout: Duration,
    ) -> crate::Result<Option<Arrival>> {
        let party = self.party();
        if let Some(arrival) = wait::until(con, timeout, || self.try_arrive(&party, lease))? {
            return Ok(Some(arrival));
        }
        if self.leave(&party).run(con)?.is_some() {
            return Ok(None);
        }
        // Not waiting any more: its generation ended between the last try and the leave.
        match self.try_arrive(&party, lease).run(con)? {
            Attempt::Done(arrival) => Ok(Some(arrival)),
            Attempt::NotYet(_) => {
                self.leave(&party).run(con)?;
                Ok(None)
            }
        }
    }

    /// [`arrive_within`](Self::arrive_within) on an async connection.
    #[cfg(feature = "aio")]
    pub async fn arrive_within_async<C: redis::aio::ConnectionLike>(
        &self,
        con: &mut C,
        lease: Duration,
        timeout: Duration,
    ) -> crate::Result<Option<Arrival>> {
        let party = self.party();
        let waited = wait::until_async(con, timeout, || self.try_arrive(&party, lease)).await?;
        if let Some(arrival) = waited {
            return Ok(Some(arrival));
        }
        if self.leave(&party).run_async(con).await?.is_some() {
            return Ok(None);
        }
        match self.try_arrive(&party, lease).run_async(con).await? {
            Attempt::Done(arrival) => Ok(Some(arrival)),
            Attempt::NotYet(_) => {
                self.leave(&party).run_async(con).await?;
                Ok(None)
            }
        }
    }

    /// Takes `party` out of the generation it waits in, which breaks it (the other
    /// waiters answer [`Arrival::Broken`]): the generation it broke, or `None` when the
    /// party was not waiting. One script (`barrier/leave`).
    pub fn leave(&self, party: &Party) -> Op<Option<u64>> {
        let joined = party.joined.clone();
        script::leave(
            &self.state,
            &self.arrived,
            &self.history,
            &self.wake,
            &party.token,
        )
        .map(move |broke| {
            if broke.is_some() {
                joined.store(0, Ordering::Relaxed);
            }
            Ok(broke)
        })
    }

    /// Breaks the current generation if a party waits in it (`CyclicBarrier.reset`): the
    /// generation it broke, or `None`. One script (`barrier/reset`).
    pub fn reset(&self) -> Op<Option<u64>> {
        script::reset(&self.state, &self.arrived, &self.history, &self.wake)
    }

    /// The barrier's parties, current generation and waiting parties, or `None` when no
    /// party ever arrived. One read-only script (`barrier/state`).
    pub fn state(&self) -> Op<Option<BarrierState>> {
        script::state(&self.state, &self.arrived).map(|reply| {
            Ok(
                reply.map(|(parties, generation, waiting, lapsed)| BarrierState {
                    parties,
                    generation,
                    waiting,
                    lapsed,
                }),
            )
        })
    }
}
