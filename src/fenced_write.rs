//! Writes to a resource in Redis that carry a fencing token, refused when the token is
//! older than one the resource has seen (beyond the books).
//!
//! A lease-based lock cannot stop a holder that was paused (GC, swap, a slow network)
//! past its lease from writing while the next holder works. Fencing tokens can, when the
//! resource checks them (Kleppmann's "How to do distributed locking"): each holder of a
//! [`FencedLock`](crate::fenced_lock::FencedLock) gets a larger token than every earlier
//! one, sends it with each write, and the resource refuses a write whose token is below
//! the highest it has seen. For a resource that lives in Redis, these scripts are that
//! check: no outside store is needed.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use std::time::Duration;
//! use redis_patterns::fenced_lock::FencedLock;
//! use redis_patterns::fenced_write::{self, FencedResource};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let lock = FencedLock::new("invoice:42:lock")?;
//! let invoice = FencedResource::new("invoice:42")?;
//!
//! let ttl = Duration::from_secs(10);
//! let a = lock.acquire(ttl).run(&mut con)?.expect("free");
//! // Client A is paused for longer than its lease (a GC pause, a stalled VM)...
//! // ...its lease runs out and client B takes the lock, with a larger token.
//! let b = lock.acquire(ttl).run(&mut con)?.expect("A's lease ran out");
//! invoice.fence(b).run(&mut con)?; // B shuts older holders out before it reads
//! invoice.set(b, "paid", None).run(&mut con)?;
//!
//! // A wakes up and writes what it computed before the pause: refused, nothing changes.
//! let err = invoice.set(a, "open", None).run(&mut con).unwrap_err();
//! assert_eq!(fenced_write::stale(&err), Some(b));
//! # Ok(()) }
//! ```
//!
//! # The rule
//!
//! A write (`set`, `hset`, `delete`) with `token` is applied when `token` is at least the
//! highest token seen, which then becomes `token`; otherwise it is refused with the
//! error `STALE_TOKEN` and changes nothing. Equal tokens pass, so one holder writes as
//! often as it likes; and so a paused holder whose successor has not written yet still
//! gets through. A new holder that must shut older ones out at once calls
//! [`fence`](FencedResource::fence) right after it acquires, which raises the highest
//! token seen without writing the resource. Tokens are those `fenced_lock` hands out:
//! from 1 to 2^53 - 1.
//!
//! The refusal is an error reply, not a value to compare: a client that ignores what a
//! write answers (as many do) still stops, since redis-py raises, ioredis rejects and
//! Jedis throws. Its message starts with the highest token seen
//! (`STALE_TOKEN highest 7, token 5: …`); in Rust, [`stale`] reads it from the error.
//!
//! # Redis keys
//!
//! | Key | Type | Holds |
//! |---|---|---|
//! | `key` | string or hash (any, for `delete`) | the resource, named as the app likes |
//! | `{key}:max_token` | string | the highest token a write carried; never expires, and outlives `delete` so that an older holder cannot write the resource back |
//!
//! Both share `key`'s hash slot. The lock needs no slot in common with them: the
//! tokens are plain numbers.
//!
//! # From another language
//!
//! ```text
//! $ redis-cli --eval scripts/fenced_write/set.lua invoice:42 '{invoice:42}:max_token' , 8 '' paid
//! (integer) 0                        # applied; no token was seen before
//! $ redis-cli --eval scripts/fenced_write/set.lua invoice:42 '{invoice:42}:max_token' , 7 '' open
//! (error) STALE_TOKEN highest 8, token 7: a write with a token below the highest seen is refused
//! ```
//!
//! # Failover
//!
//! A replica promoted after it missed the last writes has the resource and its highest
//! token as they were together before those writes (one script, replicated as a whole),
//! so the rule still holds for what the new primary keeps: no write is applied over a
//! higher token it has. The lost writes are lost, as every write Redis acknowledged and
//! did not replicate; wait for replicas with [`Op::wait_for`](crate::Op::wait_for) where
//! that matters. `fenced_lock`'s counter may repeat a token after a failover; a repeated
//! token equals the highest seen at most, so it passes only for the holder that got it.
//!
//! # Beyond Redisson
//!
//! | Redisson | Here |
//! |---|---|
//! | `RFencedLock` hands out tokens, and leaves checking them to the resource: an outside store must keep the highest | the check for a resource in Redis, in the same script as the write |
//! | `RedissonRedLock` (deprecated) has no fencing at all | any lock that hands out increasing tokens can fence a Redis resource |

use std::time::Duration;

use crate::runtime::error::{Error, Result};
use crate::runtime::op::Op;
use crate::scripts::fenced_write as script;

/// A resource in Redis (a string or a hash at `key`) written only with fencing tokens,
/// with the highest token seen at `{key}:max_token`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FencedResource {
    key: String,
    max_token: String,
}

impl FencedResource {
    /// The resource at `key`, with its highest token seen at `{key}:max_token`
    /// (`key:max_token` when `key` holds a hash tag).
    ///
    /// An empty `key`, or one with a `}` but no hash tag, is
    /// [`Error::InvalidInput`].
    pub fn new(key: impl Into<String>) -> Result<Self> {
        let key = key.into();
        Ok(FencedResource {
            max_token: script::keys::max_token(&key)?,
            key: script::keys::resource(&key)?,
        })
    }

    /// The resource's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The key of the highest token seen: `{key}:max_token`.
    pub fn max_token_key(&self) -> &str {
        &self.max_token
    }

    /// Sets the string at `key` to `value` (with a time to live, if given) when `token`
    /// is at least the highest seen: the highest seen before, 0 for none. `STALE_TOKEN`
    /// (see [`stale`]) otherwise, with nothing written. One script (`fenced_write/set`).
    pub fn set(&self, token: u64, value: impl AsRef<[u8]>, ttl: Option<Duration>) -> Op<u64> {
        script::set(&self.key, &self.max_token, token, ttl, value.as_ref())
    }

    /// Sets fields of the hash at `key` (1 to 1000 pairs; the other fields stay) when
    /// `token` is at least the highest seen: the highest seen before. `STALE_TOKEN`
    /// otherwise. One script (`fenced_write/hset`).
    pub fn hset<F: AsRef<[u8]>, V: AsRef<[u8]>>(&self, token: u64, fields: &[(F, V)]) -> Op<u64> {
        let flat: Vec<&[u8]> = fields
            .iter()
            .flat_map(|(f, v)| [f.as_ref(), v.as_ref()])
            .collect();
        script::hset(&self.key, &self.max_token, token, &flat)
    }

    /// Deletes `key` when `token` is at least the highest seen: the highest seen before.
    /// The highest token stays. `STALE_TOKEN` otherwise. One script
    /// (`fenced_write/delete`).
    pub fn delete(&self, token: u64) -> Op<u64> {
        script::delete(&self.key, &self.max_token, token)
    }

    /// Raises the highest token seen to `token` without writing the resource: from then
    /// on, writes with older tokens are refused. The highest seen before; `STALE_TOKEN`
    /// when `token` is below it (the caller's lock was lost). One script
    /// (`fenced_write/fence`).
    pub fn fence(&self, token: u64) -> Op<u64> {
        script::fence(&self.max_token, token)
    }

    /// The highest token seen, 0 for none. `GET`.
    pub fn highest(&self) -> Op<u64> {
        let mut cmd = redis::cmd("GET");
        cmd.arg(&self.max_token);
        Op::<Option<u64>>::native(cmd).map(|highest| Ok(highest.unwrap_or(0)))
    }
}

/// The highest token seen, when `err` is a fenced write's `STALE_TOKEN` refusal.
pub fn stale(err: &Error) -> Option<u64> {
    match err {
        Error::Script { code, message, .. } if code == "STALE_TOKEN" => message
            .strip_prefix("highest ")?
            .split(',')
            .next()?
            .parse()
            .ok(),
        _ => None,
    }
}
