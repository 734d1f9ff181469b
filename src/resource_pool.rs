//! A pool of named resources that clients take and give back: 《Redis 应用实例》
//! chapter 10 (`ResourcePool`), plus leases that return a crashed client's resource.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use std::time::Duration;
//! use redis_patterns::resource_pool::ResourcePool;
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let pool = ResourcePool::new("printers")?;
//! pool.associate("printer-1").run(&mut con)?;
//! pool.associate("printer-2").run(&mut con)?;
//!
//! // The book's way: held until released.
//! let printer = pool.acquire().run(&mut con)?.expect("a free printer");
//! assert!(pool.release(&printer).run(&mut con)?);
//!
//! // With a lease: back in the pool after 30 s if this client dies.
//! if let Some(lease) = pool.acquire_with_lease(Duration::from_secs(30)).run(&mut con)? {
//!     // ... print on lease.resource ...
//!     assert!(pool.release_lease(&lease).run(&mut con)?);
//! }
//! assert_eq!(pool.total_count().run(&mut con)?, 2);
//! # Ok(()) }
//! ```
//!
//! A pool named `name` keeps two sets, as in the book: `{name}:available` and
//! `{name}:occupied`, and for leases a sorted set `{name}:leases` (resource → lease
//! deadline, in milliseconds of the server's clock) and a hash `{name}:holders` (resource →
//! the holder's token). All four share `name`'s cluster hash slot; they are derived once,
//! when the pool is built, and a name that cannot give them one slot (empty, or with a `}`
//! but no hash tag) is refused there.
//!
//! Resources are names the application chooses (`"printer-1"`, a host and port, a
//! connection id), so they are `&str` here and `String` in what `acquire` returns: set
//! members that name things, not opaque payloads. Tokens are strings too.
//!
//! | Book | Here | Wire |
//! |---|---|---|
//! | `ResourcePool(client, pool_name)` | [`ResourcePool::new(name)`](ResourcePool::new) → `Result` | none |
//! | `associate(r)` → `True`/`False`/`None` | [`associate(r)`](ResourcePool::associate) → `bool` | script `resource_pool/associate` |
//! | `disassociate(r)` | [`disassociate(r)`](ResourcePool::disassociate) → `bool` | script `resource_pool/disassociate` |
//! | `acquire()` → resource or `None` | [`acquire()`](ResourcePool::acquire) → `Option<String>` | script `resource_pool/acquire` |
//! | `release(r)` | [`release(r)`](ResourcePool::release) → `bool` | script `resource_pool/release` |
//! | `available_count()` / `occupied_count()` | [`available_count`](ResourcePool::available_count) / [`occupied_count`](ResourcePool::occupied_count) | `SCARD` |
//! | `total_count()` | [`total_count()`](ResourcePool::total_count) | script `resource_pool/total_count` (read-only) |
//! | `is_available(r)` / `is_occupied(r)` | [`is_available`](ResourcePool::is_available) / [`is_occupied`](ResourcePool::is_occupied) | `SISMEMBER` |
//! | `has(r)` → 0/1 | [`has(r)`](ResourcePool::has) → `bool` | script `resource_pool/has` (read-only) |
//! | (none) | [`acquire_with_lease(ttl)`](ResourcePool::acquire_with_lease) → `Option<Lease>` | script `resource_pool/acquire_lease` |
//! | (none) | [`release_lease(&lease)`](ResourcePool::release_lease), [`extend_lease(&lease, ttl)`](ResourcePool::extend_lease) | scripts `release_lease`, `extend_lease` |
//! | (none) | [`reclaim(limit)`](ResourcePool::reclaim) | script `resource_pool/reclaim` |
//!
//! What differs from the book, and why:
//!
//! - **No spurious failures.** The book's `associate` and `acquire` read under WATCH and
//!   give up (`None`) when another client touched the sets meanwhile, so under load an
//!   empty pool and a busy one look the same. Here each is one script: `associate` is
//!   false only when the pool has the resource, and `acquire` is `None` only when no
//!   resource is available.
//! - **Leases** (beyond the book, like Redisson's `RPermitExpirableSemaphore`). A
//!   resource taken with [`acquire_with_lease`](ResourcePool::acquire_with_lease) comes
//!   with a [`Lease`]: a fresh random token, which the lease scripts compare with Lua's
//!   `==` (by address in Redis, whatever the bytes; no hash is needed against timing:
//!   see [Tokens and timing](crate#tokens-and-timing)). Once its deadline (server clock)
//!   has passed, the resource goes back to the pool, so a client that crashed cannot keep
//!   it forever. Expired leases are reclaimed in bounded batches: each acquire first
//!   reclaims up to [`RECLAIM_ON_ACQUIRE`] of them, and
//!   [`reclaim(limit)`](ResourcePool::reclaim) does it on demand (at most 1000 per call).
//!   Until then an expired resource still counts as occupied, and its holder can still
//!   release it.
//! - **How the two APIs meet.** Both hand out resources from the same `available` set and
//!   count held ones in the same `occupied` set. [`release`](ResourcePool::release) frees
//!   only a resource held *without* a lease; a leased one is freed only by its token
//!   ([`release_lease`](ResourcePool::release_lease)), by its lease running out, or by
//!   [`disassociate`](ResourcePool::disassociate), which removes it and its lease. So a
//!   client whose lease ran out, and whose resource may now belong to someone else, frees
//!   nothing. A resource taken with [`acquire`](ResourcePool::acquire) has no lease and
//!   stays held until released.
//! - `has` returns a `bool` (the book's is 0/1); `disassociate` also drops the lease, so
//!   a removed resource never comes back when its lease runs out.

use std::time::Duration;

use crate::runtime::input;
use crate::runtime::op::Op;
use crate::runtime::token;
use crate::scripts::resource_pool as script;

/// How many expired leases each acquire reclaims before it picks a resource.
pub const RECLAIM_ON_ACQUIRE: u64 = 10;

/// A resource held under a lease: what [`ResourcePool::acquire_with_lease`] returns, and
/// what releases or extends it.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use std::time::Duration;
/// use redis_patterns::resource_pool::ResourcePool;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let pool = ResourcePool::new("db_connections")?;
/// if let Some(lease) = pool.acquire_with_lease(Duration::from_secs(10)).run(&mut con)? {
///     println!("using {} (token {})", lease.resource, lease.token);
///     // Work runs long: renew before the 10 s are up; false means it was lost.
///     assert!(pool.extend_lease(&lease, Duration::from_secs(10)).run(&mut con)?);
///     pool.release_lease(&lease).run(&mut con)?;
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The resource held.
    pub resource: String,
    /// The holder's secret for this acquisition (32 random hex digits).
    pub token: String,
}

/// A pool of resources in two sets, `{name}:available` and `{name}:occupied`, with leases
/// in `{name}:leases` and `{name}:holders`.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::resource_pool::ResourcePool;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let pool = ResourcePool::new("workers")?;
/// assert!(pool.associate("w1").run(&mut con)?);
/// assert!(!pool.associate("w1").run(&mut con)?); // already in the pool
/// let w = pool.acquire().run(&mut con)?;
/// assert_eq!(w.as_deref(), Some("w1"));
/// assert_eq!(pool.acquire().run(&mut con)?, None); // every resource is held
/// assert!(pool.is_occupied("w1").run(&mut con)?);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourcePool {
    name: String,
    available: String,
    occupied: String,
    leases: String,
    holders: String,
}

impl ResourcePool {
    /// The pool named `name` (the book's `pool_name`), with its keys
    /// `{name}:available`, `{name}:occupied`, `{name}:leases` and `{name}:holders`.
    ///
    /// An empty `name`, or one with a `}` but no hash tag (its keys could not share one
    /// cluster hash slot), is [`Error::InvalidInput`](crate::Error::InvalidInput).
    pub fn new(name: impl Into<String>) -> crate::Result<Self> {
        let name = name.into();
        Ok(ResourcePool {
            available: script::keys::available(&name)?,
            occupied: script::keys::occupied(&name)?,
            leases: script::keys::leases(&name)?,
            holders: script::keys::holders(&name)?,
            name,
        })
    }

    /// The pool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The set of available resources: `{name}:available` (`name:available` when `name`
    /// holds a hash tag).
    pub fn available_key(&self) -> &str {
        &self.available
    }

    /// The set of held resources: `{name}:occupied`.
    pub fn occupied_key(&self) -> &str {
        &self.occupied
    }

    /// The sorted set of lease deadlines (milliseconds, server clock): `{name}:leases`.
    pub fn leases_key(&self) -> &str {
        &self.leases
    }

    /// The hash of leased resources' holder tokens: `{name}:holders`.
    pub fn holders_key(&self) -> &str {
        &self.holders
    }

    /// Adds `resource` to the pool as available: true if added, false if the pool already
    /// has it (available or held). One script (`resource_pool/associate`).
    pub fn associate(&self, resource: &str) -> Op<bool> {
        script::associate(&self.available, &self.occupied, resource)
    }

    /// Removes `resource` from the pool, available or held, with its lease: true if the
    /// pool had it. One script (`resource_pool/disassociate`).
    pub fn disassociate(&self, resource: &str) -> Op<bool> {
        script::disassociate(
            &self.available,
            &self.occupied,
            &self.leases,
            &self.holders,
            resource,
        )
    }

    /// Takes an available resource, held with no lease until [`release`](Self::release);
    /// `None` only when every resource is held (never because of other clients). Reclaims
    /// up to [`RECLAIM_ON_ACQUIRE`] expired leases first. One script
    /// (`resource_pool/acquire`).
    pub fn acquire(&self) -> Op<Option<String>> {
        script::acquire(
            &self.available,
            &self.occupied,
            &self.leases,
            &self.holders,
            RECLAIM_ON_ACQUIRE,
        )
    }

    /// Takes an available resource for `ttl` (server clock) under a fresh random token;
    /// `None` only when every resource is held by a live holder. Reclaims up to
    /// [`RECLAIM_ON_ACQUIRE`] expired leases first. One script
    /// (`resource_pool/acquire_lease`).
    pub fn acquire_with_lease(&self, ttl: Duration) -> Op<Option<Lease>> {
        let token = token::random();
        let op = script::acquire_lease(
            &self.available,
            &self.occupied,
            &self.leases,
            &self.holders,
            ttl,
            &token,
            RECLAIM_ON_ACQUIRE,
        );
        op.map(move |resource| {
            Ok(resource.map(|resource| Lease {
                resource,
                token: token.clone(),
            }))
        })
    }

    /// Gives back a resource held with no lease: true if it was, false if it was not held
    /// or is held under a lease (only [`release_lease`](Self::release_lease) frees that).
    /// One script (`resource_pool/release`).
    pub fn release(&self, resource: &str) -> Op<bool> {
        script::release(&self.available, &self.occupied, &self.holders, resource)
    }

    /// Gives back a leased resource if it is still held with the lease's token: true if
    /// it was; false once the lease was reclaimed (even if someone else holds the resource
    /// now). One script (`resource_pool/release_lease`).
    pub fn release_lease(&self, lease: &Lease) -> Op<bool> {
        script::release_lease(
            &self.available,
            &self.occupied,
            &self.leases,
            &self.holders,
            &lease.resource,
            &lease.token,
        )
    }

    /// Sets the lease's deadline to `ttl` from now (server clock) if the resource is still
    /// held with its token: true if it was, false if the lease was lost. One script
    /// (`resource_pool/extend_lease`).
    pub fn extend_lease(&self, lease: &Lease, ttl: Duration) -> Op<bool> {
        script::extend_lease(
            &self.leases,
            &self.holders,
            &lease.resource,
            &lease.token,
            ttl,
        )
    }

    /// Returns up to `limit` (1 to 1000) resources whose lease ran out to the pool; how
    /// many it returned. One script (`resource_pool/reclaim`).
    pub fn reclaim(&self, limit: u64) -> Op<u64> {
        script::reclaim(
            &self.available,
            &self.occupied,
            &self.leases,
            &self.holders,
            limit,
        )
    }

    /// How many resources are available (`SCARD`).
    pub fn available_count(&self) -> Op<u64> {
        scard(&self.available)
    }

    /// How many resources are held, with or without a lease (`SCARD`). A resource whose
    /// lease ran out counts as held until it is reclaimed.
    pub fn occupied_count(&self) -> Op<u64> {
        scard(&self.occupied)
    }

    /// How many resources the pool has, available and held, counted at one moment. One
    /// read-only script (`resource_pool/total_count`).
    pub fn total_count(&self) -> Op<u64> {
        script::total_count(&self.available, &self.occupied)
    }

    /// Whether `resource` is available (`SISMEMBER`).
    pub fn is_available(&self, resource: &str) -> Op<bool> {
        sismember(&self.available, resource)
    }

    /// Whether `resource` is held, with or without a lease (`SISMEMBER`).
    pub fn is_occupied(&self, resource: &str) -> Op<bool> {
        sismember(&self.occupied, resource)
    }

    /// Whether the pool has `resource`, available or held. One read-only script
    /// (`resource_pool/has`).
    pub fn has(&self, resource: &str) -> Op<bool> {
        script::has(&self.available, &self.occupied, resource)
    }
}

/// A resource name is never empty: the scripts' `resource` rule, for the native reads.
fn checked(resource: &str) -> crate::Result<&str> {
    input::check_param(&script::HAS.args[0], resource)?;
    Ok(resource)
}

fn scard(key: &str) -> Op<u64> {
    let mut cmd = redis::cmd("SCARD");
    cmd.arg(key);
    Op::native(cmd)
}

fn sismember(key: &str, resource: &str) -> Op<bool> {
    Op::try_build(|| {
        let mut cmd = redis::cmd("SISMEMBER");
        cmd.arg(key).arg(checked(resource)?);
        Ok(Op::native(cmd))
    })
}
