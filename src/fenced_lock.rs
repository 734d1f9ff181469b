//! A lock whose every acquisition returns a fencing token (beyond the book).
//!
//! A lease-based lock cannot stop a holder that was paused (GC, swap, a slow network)
//! past its lease from carrying on while another client holds the lock. Fencing tokens
//! can: each acquisition gets a number larger than every earlier one, the holder sends it
//! with each write, and the resource refuses a write whose token is lower than one it has
//! seen. This is the fix Kleppmann's "How to do distributed locking" asks for, and what
//! Redisson's `RFencedLock` does.
//!
//! The tokens come from a counter stored beside the lock, at `{name}:fence` (the same
//! cluster hash slot as `name`). Deleting that key restarts the tokens at 1, so leave it.
//! The token also stands for the holder in [`release`](FencedLock::release) and
//! [`extend`](FencedLock::extend), which use the token-checked scripts of
//! [`IdentityLock`](crate::identity_lock::IdentityLock). Tokens are sequential, not
//! secret: they tell holders apart, they do not keep out a client that means harm.
//!
//! **After a failover** to a replica that missed the primary's last writes, the counter
//! is where the replica had it: the new primary can hand out a token that the old one
//! already gave, and a second holder may get the lock while the first still holds it
//! (the lock key was lost too). A resource that refuses tokens *not above* the highest it
//! has seen still refuses the repeated token, so fencing keeps its promise; what breaks is
//! only mutual exclusion, as with every Redis lock under asynchronous replication. Where
//! that matters, acquire with [`Op::wait_for`](crate::Op::wait_for) and a replica.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use std::time::Duration;
//! use redis_patterns::fenced_lock::FencedLock;
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let lock = FencedLock::new("invoice:42")?;
//!
//! if let Some(token) = lock.acquire(Duration::from_secs(30)).run(&mut con)? {
//!     // write_to_storage(data, token): the storage refuses tokens lower than its last.
//!     lock.release(token).run(&mut con)?;
//! }
//! # Ok(()) }
//! ```

use std::time::Duration;

use crate::runtime::error::Error;
use crate::runtime::op::Op;
use crate::scripts;

/// A lease-based lock that hands out strictly increasing fencing tokens.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use std::time::Duration;
/// use redis_patterns::fenced_lock::FencedLock;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let lock = FencedLock::new("invoice:42")?;
/// assert_eq!(lock.fence_key(), "{invoice:42}:fence");
///
/// let ttl = Duration::from_secs(30);
/// let first = lock.acquire(ttl).run(&mut con)?.expect("the lock is free");
/// assert_eq!(lock.acquire(ttl).run(&mut con)?, None); // held
/// assert!(lock.release(first).run(&mut con)?);
/// let second = lock.acquire(ttl).run(&mut con)?.expect("the lock is free again");
/// assert!(second > first); // the storage now refuses writes that carry `first`
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FencedLock {
    name: String,
    fence: String,
}

impl FencedLock {
    /// The lock stored at `name`, with its token counter at `{name}:fence`.
    ///
    /// An empty `name`, or one with a `}` but no hash tag (its counter could not share
    /// its cluster hash slot), is [`crate::Error::InvalidInput`].
    pub fn new(name: impl Into<String>) -> crate::Result<Self> {
        let name = name.into();
        let fence = scripts::fenced_lock::keys::fence(&name)?;
        Ok(FencedLock {
            name: scripts::fenced_lock::keys::lock(&name)?,
            fence,
        })
    }

    /// The lock's key (also its name).
    pub fn key(&self) -> &str {
        &self.name
    }

    /// The key of the token counter: `{name}:fence`, or `name:fence` when `name` already
    /// holds a hash tag.
    pub fn fence_key(&self) -> &str {
        &self.fence
    }

    /// Takes the lock for `ttl`: the new fencing token, or `None` when the lock is held.
    /// One atomic script (`fenced_lock/acquire`).
    pub fn acquire(&self, ttl: Duration) -> Op<Option<u64>> {
        scripts::fenced_lock::acquire(&self.name, &self.fence, ttl).map(|token| {
            token
                .map(|t| u64::try_from(t).map_err(|_| negative_token(t)))
                .transpose()
        })
    }

    /// Frees the lock if it holds `token`: true if it did, false for another token or a
    /// free lock.
    pub fn release(&self, token: u64) -> Op<bool> {
        Op::try_build(|| {
            let token = fence_token(token)?;
            Ok(scripts::identity_lock::release(&self.name, &token))
        })
    }

    /// Sets the lease to `ttl` from now if the lock holds `token`: true if it did, false
    /// for another token or a free lock.
    pub fn extend(&self, token: u64, ttl: Duration) -> Op<bool> {
        Op::try_build(|| {
            let token = fence_token(token)?;
            Ok(scripts::identity_lock::extend(&self.name, &token, ttl))
        })
    }
}

/// Tokens start at 1; 0 can never be held.
fn fence_token(token: u64) -> crate::Result<String> {
    if token == 0 {
        return Err(Error::invalid(
            "token",
            "fencing tokens start at 1; 0 is never held",
        ));
    }
    Ok(token.to_string())
}

fn negative_token(token: i64) -> Error {
    Error::unexpected_reply(
        "fenced_lock/acquire returned a negative token",
        token.to_string(),
    )
}
