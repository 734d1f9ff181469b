//! A read-write lock whose every hold has a lease on the server's clock (beyond the
//! books): many readers, or one writer with a fencing token.
//!
//! Each holder names itself with a token of 128 random bits
//! ([`RwLock::random_token`]), drawn once per holder and passed to every call: holds are
//! counted per token (a token that takes a read hold twice gives it back twice; the same
//! for write holds), so reentrancy follows the token, not a thread. Every hold lasts its
//! lease from the call that took or [`extend`](RwLock::extend)ed it, measured by the
//! server's clock, so a holder that dies leaks nothing beyond one lease.
//!
//! - **Writers come first** by default: a writer that waits holds a place (renewed by its
//!   own retries, lapsing within [`place_lease`](RwLock::with_place_lease) if it dies),
//!   and a reader that holds nothing yet waits behind it, so a stream of readers cannot
//!   starve writers. [`prefer_readers`](RwLock::prefer_readers) lets readers in ahead of
//!   waiting writers instead. A token that already reads may always read again (else a
//!   reentrant reader would deadlock behind a writer that waits for it).
//! - **Fencing**: each new write hold gets the next number of a counter that never goes
//!   back (`{name}:fence`, as [`FencedLock`](crate::fenced_lock::FencedLock)'s), so a
//!   resource that remembers the highest number it saw can refuse a writer whose lease
//!   passed while it was paused.
//! - **Downgrade**: [`downgrade`](RwLock::downgrade) turns the write hold into a read hold
//!   with no writer in between. Upgrading is refused (`HOLDS_READ`): two readers that
//!   both upgrade would wait for each other for ever.
//! - **Waiting** never depends on pub/sub: a refused acquire answers the wake stream's last
//!   id and how long to block at most; each release, downgrade, withdrawn place or lapsed
//!   hold dropped appends to the stream. [`try_read`](RwLock::try_read) and
//!   [`try_write`](RwLock::try_write) are one attempt ([`Attempt`]); `read_within`,
//!   `write_within` and their `_async` forms wait, bounded by a timeout, through
//!   [`wait::until`].
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use std::time::Duration;
//! use redis_patterns::rw_lock::RwLock;
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let lock = RwLock::new("catalog")?;
//! let lease = Duration::from_secs(30);
//!
//! let me = RwLock::random_token();
//! if let Some(fence) = lock.write_within(&mut con, &me, lease, Duration::from_secs(5))? {
//!     // write_to_storage(data, fence): the storage refuses numbers lower than its last.
//!     lock.downgrade(&me, lease).run(&mut con)?; // now a reader, with no writer between
//!     lock.release_read(&me).run(&mut con)?;
//! }
//!
//! let reader = RwLock::random_token();
//! if lock.read_within(&mut con, &reader, lease, Duration::from_secs(5))?.is_some() {
//!     // ... read ...
//!     lock.release_read(&reader).run(&mut con)?;
//! }
//! # Ok(()) }
//! ```
//!
//! ## Keys
//!
//! A lock named `name` keeps six keys in `name`'s cluster hash slot (`{name}:…`, or
//! `name:…` when `name` already holds a hash tag):
//!
//! | Key | Type | Holds |
//! |---|---|---|
//! | `{name}:writer` | hash | the write hold: `t` token, `n` how many times taken, `f` fencing token; expires with its lease |
//! | `{name}:readers` | zset | read holder token → lease deadline (ms, server clock) |
//! | `{name}:read_holds` | hash | read holder token → how many read holds it took |
//! | `{name}:intents` | zset | waiting writer token → place deadline (ms, server clock) |
//! | `{name}:fence` | string | the counter fencing tokens come from; never deleted |
//! | `{name}:wake` | stream | one entry, appended each time the lock frees; goes after a minute |
//!
//! `readers`, `read_holds` and `intents` expire once their last deadline passes, so a
//! lock nobody uses leaves only its `fence`.
//!
//! From another language, the scripts are `scripts/rw_lock/*.lua`:
//!
//! ```text
//! $ redis-cli --eval scripts/rw_lock/acquire_write.lua '{catalog}:writer' '{catalog}:readers' \
//!     '{catalog}:read_holds' '{catalog}:intents' '{catalog}:fence' '{catalog}:wake' \
//!     , 9b1c0e6f4d2a48c7a1f3e5d7c9b0a2e4 30000 5000 100
//! 1) (integer) 1          # the fencing token (0: wait)
//! 2) "0-0"                # else XREAD BLOCK <3)> STREAMS {catalog}:wake <2)>, then call again
//! 3) (integer) 0
//! $ redis-cli --eval scripts/rw_lock/release_write.lua '{catalog}:writer' '{catalog}:wake' \
//!     , 9b1c0e6f4d2a48c7a1f3e5d7c9b0a2e4
//! (integer) 0
//! ```
//!
//! **At a failover** to a replica that missed the last writes, holds taken just before it
//! may be lost, and a writer may get the lock while an earlier one still works under its
//! lost hold; the fence counter may hand out a number again. A resource that refuses
//! numbers *not above* the highest it saw still refuses the earlier writer's, so fencing
//! holds; mutual exclusion does not, as with every Redis lock under asynchronous
//! replication ([`Op::wait_for`](crate::Op::wait_for) narrows the window). A waiter whose
//! wake entry was lost runs its script again within [`MAX_BLOCK`](crate::wait::MAX_BLOCK).
//!
//! ## Beyond Redisson
//!
//! | Redisson's `RReadWriteLock` | Here |
//! |---|---|
//! | a read unlock reads the lease of every read hold of every reader (O(R)) | one count per token and one sorted-set member: O(log R) |
//! | readers can starve writers ("non-fair mode") | a waiting writer's place stops new readers; `prefer_readers` to opt out |
//! | a client watchdog renews leases, with renewals that outlive the hold (#1966) or revive dead holders (PR #7098) | a lease on the server's clock, renewed only by an explicit `extend`; a lapsed hold is never brought back |
//! | wake-ups by pub/sub, lost ones wait for the lease (#4744, #5116) | a wake stream read from the id the script answered, every wait bounded |
//! | holder = client id + thread id | a caller's token, so any task or process can hold and release |
//! | no fencing token | every write hold returns one |

use std::time::Duration;

use crate::runtime::error::{Error, Result};
use crate::runtime::op::Op;
use crate::runtime::token;
use crate::runtime::wait::{self, Attempt, Wake};
use crate::scripts::rw_lock as script;

/// The most lapsed read holds, and lapsed writer places, that one acquire drops.
pub const RECLAIM_LIMIT: u64 = 100;

/// How long a waiting writer's place lasts between its retries, unless
/// [`RwLock::with_place_lease`] says otherwise.
pub const PLACE_LEASE: Duration = Duration::from_secs(5);

/// A read-write lock with leases, reentrancy per token, writer preference and fencing.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use std::time::Duration;
/// use redis_patterns::rw_lock::RwLock;
/// use redis_patterns::wait::Attempt;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let lock = RwLock::new("catalog")?;
/// let (a, b) = (RwLock::random_token(), RwLock::random_token());
/// let lease = Duration::from_secs(30);
///
/// assert_eq!(lock.try_read(&a, lease).run(&mut con)?, Attempt::Done(1));
/// assert_eq!(lock.try_read(&a, lease).run(&mut con)?, Attempt::Done(2)); // reentrant
/// assert!(matches!(lock.try_write(&b, lease).run(&mut con)?, Attempt::NotYet(_)));
/// assert_eq!(lock.release_read(&a).run(&mut con)?, Some(1));
/// assert_eq!(lock.release_read(&a).run(&mut con)?, Some(0));
/// assert!(matches!(lock.try_write(&b, lease).run(&mut con)?, Attempt::Done(_fence)));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RwLock {
    writer: String,
    readers: String,
    read_holds: String,
    intents: String,
    fence: String,
    wake: String,
    prefer_readers: bool,
    place_lease: Duration,
}

/// What [`RwLock::extend`] extended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extended {
    /// The token's write hold.
    pub write: bool,
    /// The token's read holds.
    pub read: bool,
}

impl RwLock {
    /// The lock named `name` (see [the keys](self#keys)), writers first, with waiting
    /// writers' places of [`PLACE_LEASE`].
    ///
    /// An empty `name`, or one with a `}` but no hash tag (its keys could not share a
    /// cluster hash slot), is [`crate::Error::InvalidInput`].
    pub fn new(name: impl AsRef<str>) -> Result<Self> {
        let name = name.as_ref();
        Ok(RwLock {
            writer: script::keys::writer(name)?,
            readers: script::keys::readers(name)?,
            read_holds: script::keys::read_holds(name)?,
            intents: script::keys::intents(name)?,
            fence: script::keys::fence(name)?,
            wake: script::keys::wake(name)?,
            prefer_readers: false,
            place_lease: PLACE_LEASE,
        })
    }

    /// Readers come in while writers wait (Redisson's behaviour): more read throughput,
    /// but a steady stream of readers can keep a writer out for ever.
    pub fn prefer_readers(mut self) -> Self {
        self.prefer_readers = true;
        self
    }

    /// How long a waiting writer keeps its place without calling again: a writer that
    /// dies while it waits holds readers back this long at most. The waiting methods call
    /// again within half of it. At least 100 ms ([`crate::Error::InvalidInput`] otherwise).
    pub fn with_place_lease(mut self, place_lease: Duration) -> Result<Self> {
        if place_lease < Duration::from_millis(100) {
            return Err(Error::invalid(
                "place_lease",
                "at least 100 ms, so that a waiting writer's retries keep its place",
            ));
        }
        self.place_lease = place_lease;
        Ok(self)
    }

    /// A fresh token: 128 random bits from the operating system, as 32 hex digits. Draw
    /// one per holder and pass it to each of its calls.
    pub fn random_token() -> String {
        token::random()
    }

    /// The key of the fencing token counter.
    pub fn fence_key(&self) -> &str {
        &self.fence
    }

    /// The key of the wake stream.
    pub fn wake_key(&self) -> &str {
        &self.wake
    }

    /// The keys, in the order of the [table](self#keys): writer, readers, read holds,
    /// intents, fence, wake.
    pub fn keys(&self) -> [&str; 6] {
        [
            &self.writer,
            &self.readers,
            &self.read_holds,
            &self.intents,
            &self.fence,
            &self.wake,
        ]
    }

    /// One attempt at a read hold for `token`, its lease `lease` from now: `Done(n)` with
    /// the token's read holds now, or what to wait on. One script (`rw_lock/acquire_read`)
    /// that first drops up to [`RECLAIM_LIMIT`] lapsed holds and places.
    pub fn try_read(&self, token: &str, lease: Duration) -> Op<Attempt<u64>> {
        let wake = self.wake.clone();
        script::acquire_read(
            &self.writer,
            &self.readers,
            &self.read_holds,
            &self.intents,
            &self.wake,
            token,
            lease,
            self.prefer_readers,
            RECLAIM_LIMIT,
        )
        .map(move |reply| attempt(&wake, reply))
    }

    /// Waits up to `timeout` for a read hold: the token's read holds, or `None` on
    /// timeout. Several round trips; blocks the connection meanwhile.
    pub fn read_within(
        &self,
        con: &mut dyn redis::ConnectionLike,
        token: &str,
        lease: Duration,
        timeout: Duration,
    ) -> Result<Option<u64>> {
        wait::until(con, timeout, || self.try_read(token, lease))
    }

    /// [`read_within`](Self::read_within) on an async connection.
    #[cfg(feature = "aio")]
    pub async fn read_within_async<C: redis::aio::ConnectionLike>(
        &self,
        con: &mut C,
        token: &str,
        lease: Duration,
        timeout: Duration,
    ) -> Result<Option<u64>> {
        wait::until_async(con, timeout, || self.try_read(token, lease)).await
    }

    /// One attempt at the write hold for `token`, its lease `lease` from now: `Done` with
    /// the hold's fencing token, or what to wait on. A refused attempt takes or renews
    /// the token's place as a waiting writer (new readers then wait): retry within the
    /// place lease, or [`withdraw`](Self::withdraw). A token that holds a read hold is
    /// refused with `HOLDS_READ`. One script (`rw_lock/acquire_write`).
    pub fn try_write(&self, token: &str, lease: Duration) -> Op<Attempt<u64>> {
        let wake = self.wake.clone();
        script::acquire_write(
            &self.writer,
            &self.readers,
            &self.read_holds,
            &self.intents,
            &self.fence,
            &self.wake,
            token,
            lease,
            Some(self.place_lease),
            RECLAIM_LIMIT,
        )
        .map(move |reply| attempt(&wake, reply))
    }

    /// Waits up to `timeout` for the write hold: its fencing token, or `None` on timeout,
    /// after giving up the waiting writer's place. Several round trips; blocks the
    /// connection meanwhile.
    pub fn write_within(
        &self,
        con: &mut dyn redis::ConnectionLike,
        token: &str,
        lease: Duration,
        timeout: Duration,
    ) -> Result<Option<u64>> {
        let fence = wait::until(con, timeout, || self.try_write(token, lease))?;
        if fence.is_none() {
            self.withdraw(token).run(con)?;
        }
        Ok(fence)
    }

    /// [`write_within`](Self::write_within) on an async connection.
    #[cfg(feature = "aio")]
    pub async fn write_within_async<C: redis::aio::ConnectionLike>(
        &self,
        con: &mut C,
        token: &str,
        lease: Duration,
        timeout: Duration,
    ) -> Result<Option<u64>> {
        let fence = wait::until_async(con, timeout, || self.try_write(token, lease)).await?;
        if fence.is_none() {
            self.withdraw(token).run_async(con).await?;
        }
        Ok(fence)
    }

    /// Gives back one read hold of `token`: the holds it has left (0: none), or `None`
    /// when it held none (never, or its lease passed). O(log R) whatever the number of
    /// readers R. One script (`rw_lock/release_read`).
    pub fn release_read(&self, token: &str) -> Op<Option<u64>> {
        script::release_read(&self.readers, &self.read_holds, &self.wake, token)
    }

    /// Gives back one write hold of `token`: the holds it has left (0: the lock is free),
    /// or `None` when it held none. One script (`rw_lock/release_write`).
    pub fn release_write(&self, token: &str) -> Op<Option<u64>> {
        script::release_write(&self.writer, &self.wake, token)
    }

    /// Runs what `token` still holds (write hold, read holds) for `lease` from now. A hold
    /// that lapsed is not brought back. One script (`rw_lock/extend`).
    pub fn extend(&self, token: &str, lease: Duration) -> Op<Extended> {
        script::extend(&self.writer, &self.readers, &self.read_holds, token, lease)
            .map(|(write, read)| Ok(Extended { write, read }))
    }

    /// Turns `token`'s write hold (all of it) into one more read hold for `lease`: the
    /// token's read holds now, or `None` when it held no write hold. One script
    /// (`rw_lock/downgrade`).
    pub fn downgrade(&self, token: &str, lease: Duration) -> Op<Option<u64>> {
        script::downgrade(
            &self.writer,
            &self.readers,
            &self.read_holds,
            &self.wake,
            token,
            lease,
        )
    }

    /// Gives up `token`'s place as a waiting writer: whether it had one. One script
    /// (`rw_lock/withdraw`).
    pub fn withdraw(&self, token: &str) -> Op<bool> {
        script::withdraw(&self.intents, &self.wake, token)
    }
}

/// An acquire script's reply as an attempt: a number above 0 is done.
pub(crate) fn attempt(wake: &str, (value, id, ms): (u64, String, u64)) -> Result<Attempt<u64>> {
    if value > 0 {
        Ok(Attempt::Done(value))
    } else {
        Ok(Attempt::NotYet(Wake::new(wake, id, ms)?))
    }
}
