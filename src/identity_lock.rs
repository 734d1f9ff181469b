//! A lock that only its holder can release: 《Redis 应用实例》 chapter 4 (`IdentityLock`),
//! plus a lease and `extend`.
//!
//! The holder takes the lock with a secret token; [`release`](IdentityLock::release) and
//! [`extend`](IdentityLock::extend) act only when the lock still holds that token. The
//! book's release is WATCH/GET/MULTI/DEL: three round trips that give up (return false)
//! when another client touches the key in between. Here it is one script,
//! `scripts/identity_lock/release.lua`, which never gives up. The book's lock has no lease,
//! so a holder that dies leaves it held forever; here the lease is an argument.
//!
//! The scripts compare the token with Lua's `==`, which in Redis compares two interned
//! strings by address, whatever their bytes; the token needs no hash against timing (a
//! caller that may run the scripts may `GET` it), unlike a session's: see [Tokens and
//! timing](crate#tokens-and-timing).
//!
//! # Without Lua on newer servers
//!
//! A lock built [`with_server`](IdentityLock::with_server) sends the server's own
//! compare-and-delete and compare-and-set where it has them, and runs the scripts
//! elsewhere, with the same answers and errors:
//!
//! | Server | `release` | `extend` |
//! |---|---|---|
//! | Redis 7.0–8.2, Valkey 8.0 | script | script |
//! | Valkey 8.1, Redis 8.4 and later | script | `SET key token IFEQ token PX ttl` |
//! | Valkey 9 and later | `DELIFEQ key token` | `SET key token IFEQ token PX ttl` |
//!
//! Redis 8.4's own compare-and-delete, `DELEX key IFEQ token`, is not used yet: no Debian
//! package carries Redis 8.4 for the test suite to check it on.
//!
//! A native call needs no `@scripting` permission (an ACL can then deny `EVAL` and
//! `EVALSHA` altogether) and never meets `NOSCRIPT`; `cargo bench --bench identity_lock`
//! compares both ways on the server `REDIS_SERVER_BIN` names.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use std::time::Duration;
//! use redis_patterns::identity_lock::IdentityLock;
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let lock = IdentityLock::new("report:lock")?;
//! let token = IdentityLock::random_token();
//!
//! if lock.acquire(&token, Some(Duration::from_secs(30))).run(&mut con)? {
//!     // ... work; renew the lease if it runs long:
//!     lock.extend(&token, Duration::from_secs(30)).run(&mut con)?;
//!     assert!(!lock.release("not-the-token").run(&mut con)?);
//!     assert!(lock.release(&token).run(&mut con)?);
//! }
//! # Ok(()) }
//! ```

use std::time::Duration;

use crate::runtime::input;
use crate::runtime::op::Op;
use crate::scripts;
use crate::server::{Capability, Server};

/// Whether, and how long, a lock stays held with a given token: what
/// [`IdentityLock::lease`] answers.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use std::time::Duration;
/// use redis_patterns::identity_lock::{Holding, IdentityLock};
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let lock = IdentityLock::new("report:lock")?;
/// let token = IdentityLock::random_token();
/// if lock.acquire(&token, Some(Duration::from_secs(30))).run(&mut con)? {
///     // ... part of the work; then, before the next part:
///     match lock.lease(&token).run(&mut con)? {
///         Holding::NotHeld => return Ok(()), // the lease ran out: stop
///         Holding::Expires(left) if left < Duration::from_secs(5) => {
///             lock.extend(&token, Duration::from_secs(30)).run(&mut con)?;
///         }
///         Holding::Expires(_) | Holding::Forever => {}
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holding {
    /// The lock is free, or held with another token.
    NotHeld,
    /// Held with the token and no lease: until released.
    Forever,
    /// Held with the token for this much longer (to the millisecond).
    Expires(Duration),
}

/// A lock whose release and extend check the holder's token.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use std::time::Duration;
/// use redis_patterns::identity_lock::IdentityLock;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let lock = IdentityLock::new("report:lock")?;
/// let token = IdentityLock::random_token();
/// if lock.acquire(&token, Some(Duration::from_secs(30))).run(&mut con)? {
///     // ... the work ...
///     assert!(lock.release(&token).run(&mut con)?); // only with the holder's token
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityLock {
    key: String,
    native: Native,
}

/// The native commands a lock sends instead of its scripts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Native {
    set_if_equal: bool,
    delete_if_equal: bool,
}

impl IdentityLock {
    /// The lock stored at `key`.
    ///
    /// An empty key is [`Error::InvalidInput`](crate::Error::InvalidInput).
    pub fn new(key: impl Into<String>) -> crate::Result<Self> {
        Ok(IdentityLock {
            key: scripts::identity_lock::keys::lock(&key.into())?,
            native: Native::default(),
        })
    }

    /// The lock, sending `server`'s own compare-and-delete (`DELIFEQ`) and compare-and-set
    /// (`SET … IFEQ`) where it has them, and the scripts elsewhere (see the [module
    /// docs](self#without-lua-on-newer-servers)). The answers and errors are the same.
    ///
    /// ```no_run
    /// # fn demo() -> redis_patterns::Result<()> {
    /// use redis_patterns::identity_lock::IdentityLock;
    /// use redis_patterns::server::Server;
    ///
    /// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let server = Server::probe(&mut con)?; // once per client
    /// let lock = IdentityLock::new("report:lock")?.with_server(&server);
    /// # Ok(()) }
    /// ```
    pub fn with_server(mut self, server: &Server) -> Self {
        self.native = Native {
            set_if_equal: server.supports(Capability::SetIfEqual),
            delete_if_equal: server.supports(Capability::DeleteIfEqual),
        };
        self
    }

    /// The lock's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// A fresh token: 128 random bits from the operating system, as 32 hex digits.
    ///
    /// # Panics
    ///
    /// If the operating system's random source fails, as `std` does for its hash seeds.
    pub fn random_token() -> String {
        crate::runtime::token::random()
    }

    /// Takes the lock with `token` (`SET key token NX [PX ttl]`): true if it was free,
    /// false if it is held.
    ///
    /// Without a `ttl` the lock is held until released, as in the book; with one, Redis
    /// frees it after `ttl` (whole milliseconds, rounded down).
    pub fn acquire(&self, token: &str, ttl: Option<Duration>) -> Op<bool> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("SET");
            cmd.arg(&self.key)
                .arg(input::token("token", token)?)
                .arg("NX");
            if let Some(ttl) = ttl {
                cmd.arg("PX").arg(input::ttl_ms(ttl)?);
            }
            Ok(Op::native(cmd))
        })
    }

    /// Frees the lock if it holds `token`: true if it did, false for another token or a
    /// free lock. One atomic script (`identity_lock/release`), or `DELIFEQ` on a server
    /// that has it (see [`with_server`](Self::with_server)).
    pub fn release(&self, token: &str) -> Op<bool> {
        if !self.native.delete_if_equal {
            return scripts::identity_lock::release(&self.key, token);
        }
        Op::try_build(|| {
            let mut cmd = redis::cmd("DELIFEQ");
            cmd.arg(&self.key).arg(input::token("token", token)?);
            Ok(Op::native(cmd))
        })
    }

    /// How long the lock stays held with `token`. One read-only script
    /// (`identity_lock/lease`, run with `EVALSHA_RO`).
    pub fn lease(&self, token: &str) -> Op<Holding> {
        scripts::identity_lock::lease(&self.key, token).map(|ms| {
            Ok(match ms {
                None => Holding::NotHeld,
                Some(ms) => match u64::try_from(ms) {
                    Ok(ms) => Holding::Expires(Duration::from_millis(ms)),
                    Err(_) => Holding::Forever,
                },
            })
        })
    }

    /// Sets the lease to `ttl` from now if the lock holds `token`: true if it did, false
    /// for another token or a free lock (then the caller no longer holds the lock and
    /// must stop). One atomic script (`identity_lock/extend`), or `SET key token IFEQ
    /// token PX ttl` on a server that has it (see [`with_server`](Self::with_server)).
    pub fn extend(&self, token: &str, ttl: Duration) -> Op<bool> {
        if !self.native.set_if_equal {
            return scripts::identity_lock::extend(&self.key, token, ttl);
        }
        Op::try_build(|| {
            let token = input::token("token", token)?;
            let mut cmd = redis::cmd("SET");
            cmd.arg(&self.key)
                .arg(token)
                .arg("IFEQ")
                .arg(token)
                .arg("PX")
                .arg(input::ttl_ms(ttl)?);
            Ok(Op::native(cmd))
        })
    }
}
