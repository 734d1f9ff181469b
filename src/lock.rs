//! Locks with no owner: 《Redis 应用实例》 chapter 3 (`Lock`, `AutoReleaseLock`).
//!
//! Each operation is one native command. Neither lock knows who holds it: any client can
//! release it, and with [`AutoReleaseLock`] a holder that outlives its lease will, on
//! release, delete the lock that another client took since. The book says so too. When
//! that matters, use [`IdentityLock`](crate::identity_lock::IdentityLock) (release and
//! extend check a token) or [`FencedLock`](crate::fenced_lock::FencedLock) (adds fencing
//! tokens).
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use std::time::Duration;
//! use redis_patterns::lock::{AutoReleaseLock, Lock};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//!
//! let lock = Lock::new("Lock:10086")?;
//! assert!(lock.acquire().run(&mut con)?);
//! assert!(!lock.acquire().run(&mut con)?); // held
//! assert!(lock.release().run(&mut con)?);
//!
//! // Released by Redis after 10 s if the holder never releases it.
//! let lock = AutoReleaseLock::new("Lock:10087")?;
//! assert!(lock.acquire(Duration::from_secs(10)).run(&mut con)?);
//! # Ok(()) }
//! ```

use std::time::Duration;

use crate::runtime::input;
use crate::runtime::op::Op;

/// A lock that stays held until released (`SET key "" NX`, `DEL key`).
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::lock::Lock;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let lock = Lock::new("Lock:10086")?;
/// if lock.acquire().run(&mut con)? {
///     // ... the work ...
///     lock.release().run(&mut con)?;
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lock {
    key: String,
}

impl Lock {
    /// The lock stored at `key`.
    ///
    /// An empty key is [`Error::InvalidInput`](crate::Error::InvalidInput).
    pub fn new(key: impl Into<String>) -> crate::Result<Self> {
        let key = key.into();
        input::key("key", &key)?;
        Ok(Lock { key })
    }

    /// The lock's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Takes the lock: true if it was free, false if it is held.
    pub fn acquire(&self) -> Op<bool> {
        acquire(&self.key, None)
    }

    /// Frees the lock, whoever holds it: true if it was held, false if it was free.
    pub fn release(&self) -> Op<bool> {
        release(&self.key)
    }
}

/// A lock that Redis frees by itself after a lease (`SET key "" NX PX ttl`, `DEL key`).
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use std::time::Duration;
/// use redis_patterns::lock::AutoReleaseLock;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let lock = AutoReleaseLock::new("Lock:10087")?;
/// if lock.acquire(Duration::from_secs(10)).run(&mut con)? {
///     // ... the work, within 10 s: after that Redis frees the lock ...
///     lock.release().run(&mut con)?;
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoReleaseLock {
    key: String,
}

impl AutoReleaseLock {
    /// The lock stored at `key`.
    ///
    /// An empty key is [`Error::InvalidInput`](crate::Error::InvalidInput).
    pub fn new(key: impl Into<String>) -> crate::Result<Self> {
        let key = key.into();
        input::key("key", &key)?;
        Ok(AutoReleaseLock { key })
    }

    /// The lock's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Takes the lock for `ttl`: true if it was free, false if it is held.
    ///
    /// The book's `timeout` and `unit="sec"|"ms"` are one [`Duration`] here
    /// (`Duration::from_secs(10)`, `Duration::from_millis(500)`); it is sent as whole
    /// milliseconds, rounded down, from 1 ms to about 31,700 years.
    pub fn acquire(&self, ttl: Duration) -> Op<bool> {
        acquire(&self.key, Some(ttl))
    }

    /// Frees the lock, whoever holds it: true if it was held, false if it was free or
    /// had already expired.
    pub fn release(&self) -> Op<bool> {
        release(&self.key)
    }
}

/// `SET key "" NX [PX ttl]`, shared by both locks.
fn acquire(key: &str, ttl: Option<Duration>) -> Op<bool> {
    Op::try_build(|| {
        let mut cmd = redis::cmd("SET");
        cmd.arg(key).arg("").arg("NX");
        if let Some(ttl) = ttl {
            cmd.arg("PX").arg(input::ttl_ms(ttl)?);
        }
        Ok(Op::native(cmd))
    })
}

fn release(key: &str) -> Op<bool> {
    let mut cmd = redis::cmd("DEL");
    cmd.arg(key);
    Op::native(cmd)
}
