//! A counting semaphore whose permits come back when a holder crashes (beyond the books).
//!
//! A semaphore has a capacity: how many permits may be held at once. A client takes `n`
//! permits under a token and a lease (on the server's clock), renews the lease while it
//! works ([`extend`](Semaphore::extend)), and gives them back
//! ([`release`](Semaphore::release)). A client that crashes simply stops renewing: its
//! permits come back once its lease has run out, reclaimed by the next acquire (at most
//! [`RECLAIM_PER_CALL`] lapsed holdings, and as many lapsed waiting places, per call), so
//! nothing leaks beyond one lease.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use std::time::Duration;
//! use redis_patterns::semaphore::{Order, Semaphore};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let exports = Semaphore::new("exports")?;
//! exports.set_capacity(10).run(&mut con)?; // an operator's call, once
//!
//! // Up to 2 s for 5 permits, in line behind earlier requests.
//! let lease = Duration::from_secs(30);
//! match exports.acquire_within(&mut con, 5, lease, Order::Fifo, Duration::from_secs(2))? {
//!     Some(holding) => {
//!         // ... work, calling exports.extend(&holding.token, lease) before 30 s pass ...
//!         exports.release(&holding.token).run(&mut con)?;
//!     }
//!     None => println!("busy, try later"),
//! }
//! let state = exports.state().run(&mut con)?;
//! assert_eq!(state.used, state.held); // the invariant
//! # Ok(()) }
//! ```
//!
//! # Capacity
//!
//! The capacity lives in Redis, set by [`set_capacity`](Semaphore::set_capacity) (from 0
//! to 1,000), so every client agrees on it. A semaphore whose capacity was never set
//! answers every acquire with the declared error `NO_CAPACITY` rather than take a
//! default: two clients built with different defaults could not agree on one. Raising
//! the capacity wakes as many waiters as the permits it adds, at once. Lowering it below the permits in use drains:
//! holders keep theirs, and nothing is granted until in use + the permits asked for fits
//! again. A request for more than the capacity is refused (`BAD_N`), when it asks and
//! whenever it asks again after the capacity was lowered, so it never blocks a queue.
//!
//! # Order
//!
//! A request is never granted while a live waiting request is ahead of it in the queue.
//! With [`Order::Fifo`] a request that cannot be granted takes a place in that queue,
//! under a lease of its own ([`PLACE_LEASE`]) that each try renews: it is granted when it
//! is first among live waiters and its permits fit, so a request for 5 is not starved by a
//! stream of requests for 1. A waiter that stops asking (it crashed, or gave up) loses its
//! place after the place lease; lapsed places are dropped wherever they are in the queue.
//! With [`Order::Any`] a request takes no place in line: it is granted whenever its
//! permits fit and no one waits in line, which is faster but lets larger requests starve
//! (it is noted in `places` for two seconds while it waits, so that releases ring for it).
//!
//! # Waiting
//!
//! [`try_acquire`](Semaphore::try_acquire) is one try: [`Attempt::Done`] with the
//! holding, or [`Attempt::NotYet`] with what to block on (`BLPOP`), for at most the time
//! until the next lease or place could run out (never more than [`wait::MAX_BLOCK`]):
//!
//! - a request in line behind another blocks on that one's turn key,
//!   `{name}:turn:<token>`, which it rings when it leaves the line (granted, or giving up
//!   its place), so the one behind moves up;
//! - the first in line, and the requests out of line, block on the bell `{name}:bell`,
//!   which every release, every reclaimed lease and every raise of the capacity rings
//!   once for each permit that comes back, for as many as wait: Redis hands a ring to the
//!   one client blocked on the list the longest, so permits that come back wake as many
//!   waiters as they can let in, not all of them.
//!
//! A ring nobody was blocked for stays in its list (a second for a turn key, a minute for
//! the bell), so a wake-up is never missed, and none depends on pub/sub. What a grant
//! costs the server does not grow with the waiters. A dropped place wakes nobody: the one
//! behind it was told to ask again by then. With both orders on one semaphore, a ring
//! may go to a request out of line while the first in line waits: that one asks again
//! within its wait.
//! [`acquire_within`](Semaphore::acquire_within) and
//! [`acquire_within_async`](Semaphore::acquire_within_async) loop on it up to a timeout,
//! and give up their place when it runs out.
//!
//! # Redis keys
//!
//! | Key | Type | Holds |
//! |---|---|---|
//! | `{name}:state` | hash | `capacity`; `used`, the permits held; `seq`, the queue's last ticket |
//! | `{name}:leases` | zset | token → the holding's deadline (ms, server clock) |
//! | `{name}:held` | hash | token → the permits it holds |
//! | `{name}:queue` | zset | waiting token → its ticket (arrival order) |
//! | `{name}:places` | zset | waiting token → its place's deadline (ms, server clock) |
//! | `{name}:bell` | list | at most one ring, for the first in line and the requests out of line; expires after a minute idle |
//! | `{name}:turn:<token>` | list | one ring, when `token` leaves the line with someone behind it; expires after a second |
//!
//! All share `name`'s hash slot (`name` may hold a hash tag of its own:
//! `{tenant:7}:exports` gives `{tenant:7}:exports:state`, …).
//!
//! # From another language
//!
//! The scripts are `scripts/semaphore/*.lua`; their headers are the contract. With
//! redis-cli:
//!
//! ```text
//! $ redis-cli --eval scripts/semaphore/set_capacity.lua '{exports}:state' '{exports}:places' \
//!     '{exports}:bell' , 10
//! (nil)
//! $ K='{exports}:state {exports}:leases {exports}:held {exports}:queue {exports}:places {exports}:bell'
//! $ A=9f86d081884c7d659a2feaa0c55ad015 B=0b1fa2e4c37d5a6b8e9f0a1b2c3d4e5f
//! $ redis-cli --eval scripts/semaphore/acquire.lua $K "{exports}:turn:$A" , $A 5 30000 5000 100
//! 1) (integer) 1767225630000     # granted: the holding's deadline (ms, server clock)
//! 2) ""
//! 3) (integer) 0
//! $ redis-cli --eval scripts/semaphore/acquire.lua $K "{exports}:turn:$B" , $B 6 30000 5000 100
//! 1) (nil)                       # not yet: first in line, so block on the bell, then ask again
//! 2) ""
//! 3) (integer) 1000
//! $ redis-cli BLPOP '{exports}:bell' 1.000
//! $ redis-cli --eval scripts/semaphore/release.lua $K "{exports}:turn:$A" , $A
//! (integer) 5
//! ```
//!
//! # Failover
//!
//! Replication is asynchronous: a replica promoted after it missed the last grants has
//! fewer holdings than the clients think, and may grant those permits again (more than
//! the capacity held for up to one lease), as every Redis lock may. The tokens are the
//! callers' 128 random bits, so a promoted replica never hands out a token twice, and a
//! holder's extend on the new primary answers nil: it learns that its permits were lost.
//! A ring lost in the failover costs a waiter at most [`wait::MAX_BLOCK`]. Where
//! over-granting matters, acquire with [`Op::wait_for`](crate::Op::wait_for).
//!
//! # Beyond Redisson
//!
//! | Redisson | Here |
//! |---|---|
//! | `RSemaphore` records no holders: a crashed client's permits are gone for good (#4462), and anyone may release | every holding is a token with a lease; lapsed ones come back, a bounded number per call; only the token releases |
//! | `RPermitExpirableSemaphore` leases on the client's clock, and reclaims without bound in `availablePermits` | leases on the server's clock; every call bounded |
//! | `acquire()` waits on a pub/sub message alone, and misses releases (#5761, #5762) | a ring in a list, kept until a waiter pops it, every wait bounded, then the script runs again |
//! | no order: a request for many permits starves behind requests for few | an optional FIFO queue under place leases, lapsed places dropped anywhere in it |
//! | capacity changes by adding or removing permits, which a crash can undo | one capacity in Redis; lowering it drains |
//!
//! npm's `redis-semaphore` (`MultiSemaphore`) scores its permits by the *client's* clock
//! (`Date.now()` sent to the script), removes every expired one in each call without a
//! bound, takes the capacity from each caller (two clients with different limits disagree
//! on it), retries on a fixed interval (no wake-up), and keeps no order: a request for 5
//! permits starves behind a stream of requests for 1. Here the capacity is one value in
//! Redis, leases are on the server's clock, reclaim is bounded, waiters are woken, and
//! [`Order::Fifo`] keeps them in line.

use std::time::Duration;

use crate::runtime::error::{Error, Result};
use crate::runtime::op::Op;
use crate::runtime::token;
use crate::runtime::wait::{self, Attempt, Wake};
use crate::scripts::semaphore as script;

/// How many lapsed holdings, and lapsed waiting places, each acquire reclaims first.
pub const RECLAIM_PER_CALL: u64 = 100;

/// How long a waiting request keeps its place in the queue without asking again
/// ([`Order::Fifo`]), unless [`Semaphore::with_place_lease`] says otherwise. The waiting
/// forms ask at least every [`wait::MAX_BLOCK`], and within half a place lease.
pub const PLACE_LEASE: Duration = Duration::from_secs(5);

/// Whether a request that cannot be granted waits in line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// It takes no place: granted whenever its permits fit and no one waits in line.
    Any,
    /// It takes a place in the queue, and is granted when it is first among the live
    /// waiters and its permits fit.
    Fifo,
}

/// Permits held: what an acquire grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holding {
    /// The token that holds them: it releases and extends them.
    pub token: String,
    /// How many permits.
    pub permits: u64,
    /// When the lease runs out, in ms of the server's clock.
    pub deadline_ms: u64,
}

/// The semaphore at one moment, as [`Semaphore::state`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct State {
    /// The capacity; `None` until it is set.
    pub capacity: Option<u64>,
    /// The permits in use, as the scripts count them.
    pub used: u64,
    /// The sum of the permits of every holding (lapsed ones not yet reclaimed too): always
    /// `used`.
    pub held: u64,
    /// The sum of the permits of the holdings whose lease has not run out: `used` once no
    /// lapsed holding is left to reclaim.
    pub live: u64,
    /// How many holdings.
    pub holdings: u64,
    /// How many waiting requests have a live place in the queue.
    pub waiters: u64,
}

impl State {
    /// Whether the invariant holds: the permits in use are the sum of the holdings.
    pub fn consistent(&self) -> bool {
        self.used == self.held && self.live <= self.held
    }
}

/// A counting semaphore in keys that share `name`'s hash slot (see the [module
/// docs](self)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Semaphore {
    name: String,
    state: String,
    leases: String,
    held: String,
    queue: String,
    places: String,
    bell: String,
    place_lease: Duration,
}

impl Semaphore {
    /// The semaphore named `name`, with its keys `{name}:state`, `{name}:leases`,
    /// `{name}:held`, `{name}:queue`, `{name}:places` and `{name}:bell` (and each token's
    /// `{name}:turn:<token>`).
    ///
    /// An empty `name`, or one with a `}` but no hash tag, is
    /// [`Error::InvalidInput`].
    pub fn new(name: impl Into<String>) -> Result<Self> {
        let name = name.into();
        Ok(Semaphore {
            state: script::keys::state(&name)?,
            leases: script::keys::leases(&name)?,
            held: script::keys::held(&name)?,
            queue: script::keys::queue(&name)?,
            places: script::keys::places(&name)?,
            bell: script::keys::bell(&name)?,
            name,
            place_lease: PLACE_LEASE,
        })
    }

    /// How long a waiting request keeps its place in line without asking again
    /// ([`Order::Fifo`]): a waiter that dies holds up the line this long at most. The
    /// waiting methods ask again within half of it. From 100 ms to 10^7 ms
    /// ([`crate::Error::InvalidInput`] otherwise); [`PLACE_LEASE`] unless set.
    pub fn with_place_lease(mut self, place_lease: Duration) -> Result<Self> {
        if !(Duration::from_millis(100)..=Duration::from_millis(10_000_000)).contains(&place_lease)
        {
            return Err(Error::invalid(
                "place_lease",
                format!(
                    "from 100 ms (so that a waiter's tries keep its place) to 10^7 ms, got {place_lease:?}"
                ),
            ));
        }
        self.place_lease = place_lease;
        Ok(self)
    }

    /// The semaphore's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The bell that the first in line and the waiters out of line block on:
    /// `{name}:bell`.
    pub fn bell_key(&self) -> &str {
        &self.bell
    }

    /// The turn key of `token`: rung when `token` leaves the line, for the one just
    /// behind it, which blocks on it. `{name}:turn:<token>`.
    pub fn turn_key(&self, token: &str) -> Result<String> {
        script::keys::turn(&self.name, token)
    }

    /// The state hash (`capacity`, `used`, `seq`): `{name}:state`.
    pub fn state_key(&self) -> &str {
        &self.state
    }

    /// A fresh token for [`try_acquire`](Self::try_acquire): 128 random bits as 32 hex
    /// digits. Keep it for every try of one request, and for its release.
    pub fn random_token() -> String {
        token::random()
    }

    /// Sets the capacity (0 to 1,000): the capacity before, `None` when it had none.
    /// Raising it wakes waiters; lowering it drains. One script
    /// (`semaphore/set_capacity`).
    pub fn set_capacity(&self, capacity: u64) -> Op<Option<u64>> {
        script::set_capacity(&self.state, &self.places, &self.bell, capacity)
    }

    /// One try to take `n` permits (1 to 1,000) under `token` for `lease`: the holding,
    /// or what to block on before the next try. A token that holds permits already gets
    /// its lease renewed (so a try sent twice is answered as the first). With
    /// [`Order::Fifo`] a try that is not granted takes, or keeps, a place in the queue
    /// for the [place lease](Self::with_place_lease); try again (after blocking on what
    /// the try said) before it runs out,
    /// or [`release`](Self::release) to give it up. One script (`semaphore/acquire`).
    ///
    /// `NO_CAPACITY` when the capacity was never set; `BAD_N` when `n` is above the
    /// capacity, or differs from what `token` holds.
    pub fn try_acquire(
        &self,
        token: &str,
        n: u64,
        lease: Duration,
        order: Order,
    ) -> Op<Attempt<Holding>> {
        let place = (order == Order::Fifo).then_some(self.place_lease);
        let (bell, name) = (self.bell.clone(), self.name.clone());
        let owned = token.to_owned();
        Op::try_build(|| {
            Ok(script::acquire(
                &self.state,
                &self.leases,
                &self.held,
                &self.queue,
                &self.places,
                &self.bell,
                &script::keys::turn(&self.name, token)?,
                token,
                n,
                lease,
                place,
                RECLAIM_PER_CALL,
            )
            .map(move |(deadline, ahead, block_ms)| {
                Ok(match deadline {
                    Some(deadline_ms) => Attempt::Done(Holding {
                        token: owned.clone(),
                        permits: n,
                        deadline_ms,
                    }),
                    // In line behind another: its turn key; first in line or out of it,
                    // the bell.
                    None if ahead.is_empty() => Attempt::NotYet(Wake::bell(&bell, block_ms)),
                    None => {
                        Attempt::NotYet(Wake::bell(&script::keys::turn(&name, &ahead)?, block_ms))
                    }
                })
            }))
        })
    }

    /// Takes `n` permits for `lease` under a fresh token, waiting up to `timeout`:
    /// `None` when the time ran out (the request's place, or its note out of line, is
    /// given up then). Blocks between tries on what each try said, on this connection.
    pub fn acquire_within(
        &self,
        con: &mut dyn redis::ConnectionLike,
        n: u64,
        lease: Duration,
        order: Order,
        timeout: Duration,
    ) -> Result<Option<Holding>> {
        let token = Semaphore::random_token();
        let got = wait::until(con, timeout, || self.try_acquire(&token, n, lease, order))?;
        if got.is_none() {
            self.release(&token).run(con)?;
        }
        Ok(got)
    }

    /// [`acquire_within`](Self::acquire_within) on an async connection.
    #[cfg(feature = "aio")]
    pub async fn acquire_within_async<C: redis::aio::ConnectionLike>(
        &self,
        con: &mut C,
        n: u64,
        lease: Duration,
        order: Order,
        timeout: Duration,
    ) -> Result<Option<Holding>> {
        let token = Semaphore::random_token();
        let got =
            wait::until_async(con, timeout, || self.try_acquire(&token, n, lease, order)).await?;
        if got.is_none() {
            self.release(&token).run_async(con).await?;
        }
        Ok(got)
    }

    /// Gives back the permits `token` holds, and its place in the queue if it waits:
    /// how many permits came back (0 when it held none, or they were reclaimed). Rings
    /// the bell for one waiter, and the turn key for the one behind it in line. One
    /// script (`semaphore/release`).
    pub fn release(&self, token: &str) -> Op<u64> {
        Op::try_build(|| {
            Ok(script::release(
                &self.state,
                &self.leases,
                &self.held,
                &self.queue,
                &self.places,
                &self.bell,
                &script::keys::turn(&self.name, token)?,
                token,
            ))
        })
    }

    /// Sets the lease of `token`'s permits to `lease` from now: the new deadline (ms,
    /// server clock), or `None` when it holds none (its lease ran out: the permits are
    /// reclaimed then, and lost). One script (`semaphore/extend`).
    pub fn extend(&self, token: &str, lease: Duration) -> Op<Option<u64>> {
        script::extend(
            &self.state,
            &self.leases,
            &self.held,
            &self.bell,
            token,
            lease,
        )
    }

    /// The capacity, the permits in use, the sums of the holdings and the waiters, read
    /// at one moment (see [`State::consistent`]). Reads every holding: at most 1,000.
    /// One read-only script (`semaphore/state`).
    pub fn state(&self) -> Op<State> {
        script::state(&self.state, &self.leases, &self.held, &self.places).map(
            |(capacity, used, held, live, holdings, waiters)| {
                Ok(State {
                    capacity,
                    used,
                    held,
                    live,
                    holdings,
                    waiters,
                })
            },
        )
    }
}
