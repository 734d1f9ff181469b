//! A lock taken first come, first served, whose waiters hold their places under leases,
//! or in a barging mode (beyond the books).
//!
//! A waiter joins a queue with its first attempt and renews its place with each later
//! one: waiting *is* the heartbeat. It takes the lock when the lock is free and it is
//! first among the live places. A waiter that dies (killed, partitioned, or that simply
//! stops calling) loses its place within one place lease, wherever it stood in the queue,
//! and never blocks the waiters behind it; one that gives up calls
//! [`cancel`](FairLock::cancel) (the waiting methods do on timeout). Each script drops at
//! most [`RECLAIM_LIMIT`] lapsed places per call. The holder's lease, like the places, is
//! on the server's clock; every acquisition returns a fencing token from a counter that
//! never goes back (`{name}:fence`, [`FencedLock`](crate::fenced_lock::FencedLock)'s rule).
//! The lock is not reentrant: the holder asking again keeps the lock and its fencing token
//! (a retried call is harmless), and one [`release`](FairLock::release) frees it.
//!
//! Waiting never depends on pub/sub: a refused attempt answers what to block on and for
//! how long at most (never more than half the place lease, so the waiter renews its
//! place in time), and a release wakes one waiter (see
//! [Waking one waiter](#waking-one-waiter)).
//! [`try_acquire`](FairLock::try_acquire) is one attempt ([`Attempt`]);
//! [`acquire_within`](FairLock::acquire_within) and its async form wait, bounded by a
//! timeout, through [`wait::until`].
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use std::time::Duration;
//! use redis_patterns::fair_lock::FairLock;
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let lock = FairLock::new("payouts")?;
//! let me = FairLock::random_token();
//!
//! match lock.acquire_within(&mut con, &me, Duration::from_secs(30), Duration::from_secs(10))? {
//!     Some(fence) => {
//!         // write_to_storage(data, fence): the storage refuses numbers lower than its last.
//!         lock.release(&me).run(&mut con)?;
//!     }
//!     None => { /* timed out; our place is already given up */ }
//! }
//! # Ok(()) }
//! ```
//!
//! ## Barging
//!
//! [`with_order(Order::Any)`](FairLock::with_order) makes a lock's waiters barge, as a
//! `SET NX` lock's do: an attempt takes the lock whenever it is free and nobody waits in
//! line, so the releaser may take it again at once, and a waiter may wait through many
//! holds. A barging waiter still has a place (in `places`, not in `queue`), which tells a
//! release to ring the bell. One lock may have waiters of both kinds: those in line go
//! first. Which mode to pick:
//! `docs/which-lock.md`.
//!
//! ## Keys
//!
//! A lock named `name` keeps these keys in `name`'s cluster hash slot (`{name}:…`, or
//! `name:…` when `name` already holds a hash tag):
//!
//! | Key | Type | Holds |
//! |---|---|---|
//! | `{name}:owner` | hash | the holder: `t` token, `f` fencing token; expires with its lease |
//! | `{name}:queue` | zset | waiting token → ticket, in order of arrival (waiters in line) |
//! | `{name}:places` | zset | waiting token → place deadline (ms, server clock), every waiter |
//! | `{name}:fence` | string | the counter fencing tokens come from; never deleted |
//! | `{name}:bell` | list | at most one ring, for the barging waiters; goes after a minute |
//! | `{name}:turn:<token>` | list | one ring, when `token` frees the lock or its place while someone waits behind it; goes after a second |
//!
//! `queue` and `places` expire once the last place's deadline passes.
//!
//! From another language, the scripts are `scripts/fair_lock/*.lua`; call `acquire`
//! until its first reply is not 0, blocking between calls as it says:
//!
//! ```text
//! $ redis-cli --eval scripts/fair_lock/acquire.lua '{payouts}:owner' '{payouts}:queue' \
//!     '{payouts}:places' '{payouts}:fence' '{payouts}:bell' \
//!     , 9b1c0e6f4d2a48c7a1f3e5d7c9b0a2e4 30000 5000 100 fifo
//! 1) (integer) 0                                   # not yet: the fencing token once taken
//! 2) "5f0e2a1c9d8b7a6f5e4d3c2b1a098765"            # the holder, ahead of this waiter
//! 3) (integer) 1000       # BLPOP {payouts}:turn:5f0e2a1c9d8b7a6f5e4d3c2b1a098765 1.000, then call again
//! $ redis-cli --eval scripts/fair_lock/release.lua '{payouts}:owner' '{payouts}:queue' \
//!     '{payouts}:places' '{payouts}:bell' '{payouts}:turn:9b1c0e6f4d2a48c7a1f3e5d7c9b0a2e4' \
//!     , 9b1c0e6f4d2a48c7a1f3e5d7c9b0a2e4
//! (integer) 1
//! ```
//!
//! ## Waking one waiter
//!
//! A waiter in line blocks (`BLPOP`) on the turn key of the one just ahead of it: the
//! holder's, for the first in line. A release rings the holder's turn key once, so the
//! first in line wakes alone, takes the lock, and is now the one the second waits
//! behind; a waiter that cancels rings its own, so the one behind it moves up. A place
//! that lapses (its waiter died) wakes nobody: the one behind it was told to call again
//! by that place's deadline. The others stay blocked and send nothing, so what a hold
//! costs the server does not grow with the waiters. Barging waiters block on the bell,
//! which a release rings once while any wait, and Redis hands the ring to the one of
//! them blocked the longest. A ring nobody was blocked for stays in its list for the
//! waiter about to block. Every waiter still calls again within the time its last reply
//! said, to keep its place.
//!
//! **At a failover** to a replica that missed the last writes, the holder's key and
//! places taken just before it may be lost: a second client may take the lock while the
//! first still works, and the queue's order may change for the waiters that joined last.
//! The fence counter may hand out a number again; a resource that refuses numbers *not
//! above* the highest it saw still refuses the earlier holder's. A waiter whose ring was
//! lost calls again within [`MAX_BLOCK`](crate::wait::MAX_BLOCK).
//!
//! ## Beyond Redisson
//!
//! | Redisson's `RFairLock` | Here |
//! |---|---|
//! | each acquire `ZINCRBY`s every waiter's timeout (O(queue)) | a waiter renews only its own place: O(log N) |
//! | expired waiters pruned only from the head; live ones pruned and never woken (#3004) | lapsed places dropped anywhere, a bounded number per call, the head first |
//! | a killed waiter leaves the queue stuck (#4595, #3730); a timed-out one leaves keys (#5019) | a place lapses within one place lease; `acquire_within` cancels on timeout; the keys expire |
//! | deadlines from the client's clock (`currentTimeMillis` as ARGV) | the server's clock (`TIME`) |
//! | wake-ups by pub/sub, one channel per waiter | a bell (a list) that wakes one blocked waiter per ring, every wait bounded |
//! | no fencing token | every acquisition returns one |

use std::time::Duration;

use crate::runtime::error::{Error, Result};
use crate::runtime::op::Op;
use crate::runtime::token;
use crate::runtime::wait::{self, Attempt, Wake};
use crate::scripts::fair_lock as script;
pub use crate::semaphore::Order;

/// The most lapsed places that one acquire drops.
pub const RECLAIM_LIMIT: u64 = 100;

/// How long a waiter's place lasts between its attempts, unless
/// [`FairLock::with_place_lease`] says otherwise.
pub const PLACE_LEASE: Duration = Duration::from_secs(5);

/// A first-come-first-served lock with leased places and fencing tokens.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use std::time::Duration;
/// use redis_patterns::fair_lock::FairLock;
/// use redis_patterns::wait::Attempt;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let lock = FairLock::new("payouts")?;
/// let (a, b) = (FairLock::random_token(), FairLock::random_token());
/// let lease = Duration::from_secs(30);
///
/// let Attempt::Done(fence) = lock.try_acquire(&a, lease).run(&mut con)? else { panic!() };
/// assert!(matches!(lock.try_acquire(&b, lease).run(&mut con)?, Attempt::NotYet(_))); // b queues
/// assert!(lock.release(&a).run(&mut con)?);
/// assert_eq!(lock.try_acquire(&b, lease).run(&mut con)?, Attempt::Done(fence + 1));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FairLock {
    owner: String,
    queue: String,
    places: String,
    fence: String,
    bell: String,
    name: String,
    place_lease: Duration,
    order: Order,
}

impl FairLock {
    /// The lock named `name` (see [the keys](self#keys)), with places of [`PLACE_LEASE`].
    ///
    /// An empty `name`, or one with a `}` but no hash tag (its keys could not share a
    /// cluster hash slot), is [`crate::Error::InvalidInput`].
    pub fn new(name: impl AsRef<str>) -> Result<Self> {
        let name = name.as_ref();
        Ok(FairLock {
            owner: script::keys::owner(name)?,
            queue: script::keys::queue(name)?,
            places: script::keys::places(name)?,
            fence: script::keys::fence(name)?,
            bell: script::keys::bell(name)?,
            name: name.to_owned(),
            place_lease: PLACE_LEASE,
            order: Order::Fifo,
        })
    }

    /// Whether waiters wait in line ([`Order::Fifo`], the default) or barge
    /// ([`Order::Any`]: an attempt takes the lock whenever it is free and nobody waits in
    /// line; see [Barging](self#barging)).
    pub fn with_order(mut self, order: Order) -> Self {
        self.order = order;
        self
    }

    /// How long a waiter keeps its place without calling again: a waiter that dies holds
    /// up the queue this long at most. The waiting methods call again within half of it.
    /// At least 100 ms ([`crate::Error::InvalidInput`] otherwise).
    pub fn with_place_lease(mut self, place_lease: Duration) -> Result<Self> {
        if place_lease < Duration::from_millis(100) {
            return Err(Error::invalid(
                "place_lease",
                "at least 100 ms, so that a waiter's retries keep its place",
            ));
        }
        self.place_lease = place_lease;
        Ok(self)
    }

    /// A fresh token: 128 random bits from the operating system, as 32 hex digits. Draw
    /// one per acquisition and pass it to each of its attempts and to `release`.
    pub fn random_token() -> String {
        token::random()
    }

    /// The key of the fencing token counter.
    pub fn fence_key(&self) -> &str {
        &self.fence
    }

    /// The key of the bell, which barging waiters block on.
    pub fn bell_key(&self) -> &str {
        &self.bell
    }

    /// The turn key of `token`: rung when `token` frees the lock or its place, for the one
    /// just behind it in line.
    pub fn turn_key(&self, token: &str) -> Result<String> {
        script::keys::turn(&self.name, token)
    }

    /// The keys, in the order of the [table](self#keys): owner, queue, places, fence, bell
    /// (each token's turn key aside).
    pub fn keys(&self) -> [&str; 5] {
        [
            &self.owner,
            &self.queue,
            &self.places,
            &self.fence,
            &self.bell,
        ]
    }

    /// One attempt: takes the lock for `lease` when it is free and the token's turn has
    /// come (first in line, or with [`Order::Any`] nobody in line), or else joins the
    /// queue (or renews the token's place): `Done` with the fencing token, or what to wait
    /// on. Call again within the place lease to keep the place, or
    /// [`cancel`](Self::cancel). One script (`fair_lock/acquire`).
    pub fn try_acquire(&self, token: &str, lease: Duration) -> Op<Attempt<u64>> {
        let (bell, name) = (self.bell.clone(), self.name.clone());
        let order = match self.order {
            Order::Fifo => "fifo",
            Order::Any => "any",
        };
        script::acquire(
            &self.owner,
            &self.queue,
            &self.places,
            &self.fence,
            token,
            lease,
            self.place_lease,
            RECLAIM_LIMIT,
            order,
        )
        .map(move |(fence, ahead, ms)| {
            Ok(match fence {
                0 if ahead.is_empty() => Attempt::NotYet(Wake::bell(&bell, ms)),
                0 => Attempt::NotYet(Wake::bell(&script::keys::turn(&name, &ahead)?, ms)),
                fence => Attempt::Done(fence),
            })
        })
    }

    /// Waits up to `timeout` for the lock, in turn: its fencing token, or `None` on
    /// timeout, after giving up the place. Several round trips; blocks the connection
    /// meanwhile.
    pub fn acquire_within(
        &self,
        con: &mut dyn redis::ConnectionLike,
        token: &str,
        lease: Duration,
        timeout: Duration,
    ) -> Result<Option<u64>> {
        let fence = wait::until(con, timeout, || self.try_acquire(token, lease))?;
        if fence.is_none() {
            self.cancel(token).run(con)?;
        }
        Ok(fence)
    }

    /// [`acquire_within`](Self::acquire_within) on an async connection.
    #[cfg(feature = "aio")]
    pub async fn acquire_within_async<C: redis::aio::ConnectionLike>(
        &self,
        con: &mut C,
        token: &str,
        lease: Duration,
        timeout: Duration,
    ) -> Result<Option<u64>> {
        let fence = wait::until_async(con, timeout, || self.try_acquire(token, lease)).await?;
        if fence.is_none() {
            self.cancel(token).run_async(con).await?;
        }
        Ok(fence)
    }

    /// Frees the lock if `token` holds it, and wakes the next in line (or one barging
    /// waiter): whether it held it. One script (`fair_lock/release`).
    pub fn release(&self, token: &str) -> Op<bool> {
        Op::try_build(|| {
            Ok(script::release(
                &self.owner,
                &self.queue,
                &self.places,
                &self.bell,
                &script::keys::turn(&self.name, token)?,
                token,
            ))
        })
    }

    /// Runs the lock's lease `lease` from now if `token` holds it: whether it did. One
    /// script (`fair_lock/extend`).
    pub fn extend(&self, token: &str, lease: Duration) -> Op<bool> {
        script::extend(&self.owner, token, lease)
    }

    /// Gives up `token`'s place in the queue: whether it had one. One script
    /// (`fair_lock/cancel`).
    pub fn cancel(&self, token: &str) -> Op<bool> {
        Op::try_build(|| {
            let turn = script::keys::turn(&self.name, token)?;
            Ok(script::cancel(&self.queue, &self.places, &turn, token))
        })
    }
}
