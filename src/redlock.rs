//! Redlock: one lock across independent Redis masters, with a best-effort fencing token
//! (beyond the books).
//!
//! Redlock is the algorithm of the Redis docs' "Distributed locks with Redis": the same
//! lock is taken on N independent masters (not replicas of each other, not one cluster),
//! and held when a majority granted it before its lease ran out. A lock on one server is
//! lost when that server fails over to a replica that missed the write; a Redlock survives
//! the loss of a minority of its servers.
//!
//! One acquisition, [`Redlock::acquire`]:
//!
//! 1. draws a fresh token and notes the time on this process's monotonic clock;
//! 2. runs `redlock/acquire.lua` on every server at once (`SET lock token NX PX ttl`, then
//!    `INCR` of that server's fencing counter `{name}:fence`);
//! 3. when a majority granted it, takes the highest number they answered as the lock's
//!    fencing token, and raises each granting server's counter to it
//!    (`redlock/raise.lua`), so that the next acquisition, whose majority shares a server
//!    with this one, answers a higher token;
//! 4. holds the lock when a majority granted and raised it, and its validity (the lease
//!    less the time steps 2–3 took, less a drift allowance of 1 % + 2 ms) is positive;
//!    otherwise releases it on every server (a server that did not answer may still have
//!    set it), waits a random delay and tries again, at most [`retries`](Redlock::retries)
//!    times.
//!
//! [`extend`](Redlock::extend) renews the lease on a majority (at most
//! [`max_extensions`](Redlock::max_extensions) times, so a stuck holder cannot keep the
//! lock forever), and [`release`](Redlock::release) frees it everywhere; both are the
//! token-checked scripts of [`IdentityLock`](crate::identity_lock::IdentityLock). Each
//! server is any connection: standalone, or a cluster connection (the keys of one server
//! share a hash slot).
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use std::time::Duration;
//! use redis_patterns::redlock::Redlock;
//!
//! let mut servers = Vec::new();
//! for url in ["redis://a:6379/", "redis://b:6379/", "redis://c:6379/"] {
//!     let con = redis::Client::open(url)?.get_connection()?;
//!     // A server that hangs must not eat the lease: bound each reply.
//!     con.set_read_timeout(Some(Duration::from_millis(50)))?;
//!     servers.push(con);
//! }
//! let lock = Redlock::new("invoice:42")?;
//! if let Some(held) = lock.acquire(&mut servers, Duration::from_secs(10))? {
//!     // Work while held.validity() lasts; write with held.fence() where the store
//!     // checks fencing tokens (see the fenced writes).
//!     lock.release(&mut servers, &held)?;
//! }
//! # Ok(()) }
//! ```
//!
//! # When Redlock is unsafe
//!
//! Redlock's promise rests on timing, and breaks in these cases (Kleppmann, "How to do
//! distributed locking", 2016, and antirez's reply "Is Redlock safe?"):
//!
//! - **A server restarts without its data.** A lock it granted is gone, so another
//!   client can get a majority including it while the first still holds the lock. Only
//!   `appendfsync always` (or keeping a restarted server out for one lease, the docs'
//!   "delayed restarts") prevents it; `appendfsync everysec` loses up to a second of
//!   writes. The fencing counter restarts too, so the next token can be lower than the
//!   last: the token is best-effort.
//! - **The holder pauses** (GC, swap, a stopped VM, a slow network) past its validity: it
//!   carries on as if it held the lock while another client does. No lease-based lock
//!   can stop this; a fencing token checked by the resource can.
//! - **Clocks jump.** The servers expire leases on their own clocks; a server whose clock
//!   jumps forward frees the lock early. The validity here is measured on this process's
//!   monotonic clock, so a jump of the client's wall clock does no harm.
//!
//! Measured (`SECONDS=30 cargo bench --bench redlock`, 2-core machine): five servers, six
//! clients taking the lock in turn, server 0 killed and started again every 100 ms. Without
//! persistence, 0 double grants and 0 fence inversions in 1,237 grants; with `appendfsync
//! always`, 0 in 1,153. One restarted server grants twice only when a holder held exactly
//! a majority that included it and the two others were free at that moment: rare, not
//! impossible. Two servers that restart together can undo a majority of three by themselves.
//!
//! So use Redlock for efficiency (two workers rarely doing the same job twice), and where
//! correctness depends on mutual exclusion, write through a resource that checks the
//! fencing token, or use a single-server lock with fencing
//! ([`FencedLock`](crate::fenced_lock::FencedLock)) and
//! [`Op::wait_for`](crate::Op::wait_for) on its replicas.
//!
//! # Beyond the peers
//!
//! | | Redisson `RedissonRedLock` | pottery `Redlock` | rslock | redlock-rs | here |
//! |---|---|---|---|---|---|
//! | status | deprecated | kept | kept | kept | kept |
//! | fencing token | none | none (`NextID` is a separate counter) | none | none | best-effort, monotone while no server loses data |
//! | extensions | renewed by a watchdog while the client lives | at most `num_extensions` (3) | `using()` extends automatically | none | at most `max_extensions` (10), on a majority |
//! | says when it is unsafe | deprecated without a reason | no | no | no | yes, above |

use std::time::{Duration, Instant};

use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::machine::{self, Fanout, Step};
use crate::runtime::op::Op;
use crate::runtime::token;
use crate::scripts;

/// One lock across independent Redis masters (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redlock {
    lock: String,
    fence: String,
    retries: u32,
    retry_delay: Duration,
    max_extensions: u32,
}

/// A Redlock held: its token, its fencing token and how long it stays valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    token: String,
    fence: u64,
    valid_until: Instant,
    extensions: u32,
}

impl Held {
    /// The token the lock is held with on each server.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The best-effort fencing token: higher than every earlier acquisition's while no
    /// server lost its data (see the [module docs](self#when-redlock-is-unsafe)).
    pub fn fence(&self) -> u64 {
        self.fence
    }

    /// How long the lock stays valid from now, on this process's monotonic clock; zero
    /// once it may have passed to someone else.
    pub fn validity(&self) -> Duration {
        self.valid_until.saturating_duration_since(Instant::now())
    }

    /// How many times the lock was extended.
    pub fn extensions(&self) -> u32 {
        self.extensions
    }
}

/// Whether each server answered, and what.
type Answers<T> = Vec<Result<T>>;

impl Redlock {
    /// The lock `name` on each server, with its fencing counter at `{name}:fence`. Three
    /// retries after a failed attempt, each after a random delay below 200 ms, and at most
    /// ten extensions per acquisition.
    ///
    /// An empty `name`, or one with a `}` but no hash tag, is
    /// [`crate::Error::InvalidInput`].
    pub fn new(name: impl Into<String>) -> Result<Self> {
        let name = name.into();
        Ok(Redlock {
            lock: scripts::redlock::keys::lock(&name)?,
            fence: scripts::redlock::keys::fence(&name)?,
            retries: 3,
            retry_delay: Duration::from_millis(200),
            max_extensions: 10,
        })
    }

    /// The lock tried again at most `retries` times after a failed attempt (0: once).
    pub fn retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// The bound of the random delay before each retry (so that contenders spread out).
    pub fn retry_delay(mut self, delay: Duration) -> Self {
        self.retry_delay = delay;
        self
    }

    /// The most times one acquisition may be extended.
    pub fn max_extensions(mut self, max: u32) -> Self {
        self.max_extensions = max;
        self
    }

    /// The lock's key on each server.
    pub fn key(&self) -> &str {
        &self.lock
    }

    /// The key of each server's fencing counter.
    pub fn fence_key(&self) -> &str {
        &self.fence
    }

    /// One server's share of an acquisition with `token` (`redlock/acquire`): that
    /// server's next fencing number, or `None` when another token holds the lock there.
    /// [`acquire`](Self::acquire) runs it on every server; it is here for an app that
    /// drives the servers itself (its own runtime, a batch per server).
    pub fn acquire_on_one(&self, token: &str, ttl: Duration) -> Op<Option<u64>> {
        scripts::redlock::acquire(&self.lock, &self.fence, token, ttl).map(counter)
    }

    /// One server's second step (`redlock/raise`): raises its fencing counter to `fence`
    /// while the lock is held there with `token`; the counter, or `None` when it is not
    /// held with `token`.
    pub fn raise_on_one(&self, token: &str, fence: u64) -> Op<Option<u64>> {
        scripts::redlock::raise(&self.lock, &self.fence, token, fence).map(counter)
    }

    /// Takes the lock for `ttl` on a majority of `servers`: what is held, or `None` when
    /// every attempt failed (the lock is held elsewhere, or the attempts took longer than
    /// the lease). Fails with the first server's error when fewer than a majority
    /// answered at all, once the servers that granted are freed again. The servers are
    /// asked at once, one thread each.
    pub fn acquire<C>(&self, servers: &mut [C], ttl: Duration) -> Result<Option<Held>>
    where
        C: redis::ConnectionLike + Send,
    {
        self.check(servers.len(), ttl)?;
        machine::drive_each(&mut Acquire::new(self, servers.len(), ttl), servers)
    }

    /// Sets the lease to `ttl` from now on a majority of `servers`: true when it did (the
    /// validity is then `ttl` less the time it took and the drift allowance), false when
    /// the lock was lost (a majority no longer holds it, or the validity ran out). More
    /// than [`max_extensions`](Self::max_extensions) extensions is
    /// [`crate::Error::InvalidInput`].
    pub fn extend<C>(&self, servers: &mut [C], held: &mut Held, ttl: Duration) -> Result<bool>
    where
        C: redis::ConnectionLike + Send,
    {
        self.check_extension(servers.len(), held, ttl)?;
        let start = Instant::now();
        let op = scripts::identity_lock::extend(&self.lock, &held.token, ttl);
        let answers = machine::drive_each(&mut Once::new(op), servers);
        Ok(self.extended(held, start, ttl, &answers))
    }

    /// Frees the lock on every server: on how many it was still held with `held`'s token.
    /// A server that does not answer keeps it until its lease runs out.
    pub fn release<C>(&self, servers: &mut [C], held: &Held) -> Result<usize>
    where
        C: redis::ConnectionLike + Send,
    {
        let op = scripts::identity_lock::release(&self.lock, &held.token);
        Ok(released(machine::drive_each(&mut Once::new(op), servers)))
    }

    /// [`acquire`](Self::acquire) on async connections, asking the servers at once.
    #[cfg(feature = "aio")]
    pub async fn acquire_async<C>(&self, servers: &mut [C], ttl: Duration) -> Result<Option<Held>>
    where
        C: redis::aio::ConnectionLike,
    {
        self.check(servers.len(), ttl)?;
        machine::drive_each_async(&mut Acquire::new(self, servers.len(), ttl), servers).await
    }

    /// [`extend`](Self::extend) on async connections.
    #[cfg(feature = "aio")]
    pub async fn extend_async<C>(
        &self,
        servers: &mut [C],
        held: &mut Held,
        ttl: Duration,
    ) -> Result<bool>
    where
        C: redis::aio::ConnectionLike,
    {
        self.check_extension(servers.len(), held, ttl)?;
        let start = Instant::now();
        let op = scripts::identity_lock::extend(&self.lock, &held.token, ttl);
        let answers = machine::drive_each_async(&mut Once::new(op), servers).await;
        Ok(self.extended(held, start, ttl, &answers))
    }

    /// [`release`](Self::release) on async connections.
    #[cfg(feature = "aio")]
    pub async fn release_async<C>(&self, servers: &mut [C], held: &Held) -> Result<usize>
    where
        C: redis::aio::ConnectionLike,
    {
        let op = scripts::identity_lock::release(&self.lock, &held.token);
        Ok(released(
            machine::drive_each_async(&mut Once::new(op), servers).await,
        ))
    }

    fn check(&self, servers: usize, ttl: Duration) -> Result<()> {
        if servers == 0 {
            return Err(Error::invalid("servers", "must name at least one server"));
        }
        input::ttl_ms(ttl)?;
        Ok(())
    }

    fn check_extension(&self, servers: usize, held: &Held, ttl: Duration) -> Result<()> {
        self.check(servers, ttl)?;
        if held.extensions >= self.max_extensions {
            return Err(Error::invalid(
                "extensions",
                format!(
                    "this acquisition was extended {} times, the most this Redlock allows; \
                     release it and acquire again, or raise max_extensions",
                    held.extensions
                ),
            ));
        }
        Ok(())
    }

    /// The servers that granted, with their numbers; the first error when fewer than a
    /// majority answered.
    fn granted(&self, answers: Answers<Option<u64>>) -> Result<Vec<(usize, u64)>> {
        let total = answers.len();
        let mut granted = Vec::new();
        let mut answered = 0;
        let mut first_error = None;
        for (i, answer) in answers.into_iter().enumerate() {
            match answer {
                Ok(number) => {
                    answered += 1;
                    if let Some(n) = number {
                        granted.push((i, n));
                    }
                }
                Err(err) => {
                    first_error.get_or_insert(err);
                }
            }
        }
        match first_error {
            Some(err) if answered < quorum(total) => Err(err),
            _ if granted.len() >= quorum(total) => Ok(granted),
            _ => Ok(Vec::new()),
        }
    }

    fn held(
        &self,
        token: String,
        fence: u64,
        start: Instant,
        ttl: Duration,
        raised: usize,
        servers: usize,
    ) -> Option<Held> {
        let valid_until = start + ttl.saturating_sub(drift(ttl));
        (raised >= quorum(servers) && valid_until > Instant::now()).then_some(Held {
            token,
            fence,
            valid_until,
            extensions: 0,
        })
    }

    fn extended(
        &self,
        held: &mut Held,
        start: Instant,
        ttl: Duration,
        answers: &Answers<bool>,
    ) -> bool {
        let renewed = answers.iter().filter(|a| matches!(a, Ok(true))).count();
        let valid_until = start + ttl.saturating_sub(drift(ttl));
        if renewed < quorum(answers.len()) || valid_until <= Instant::now() {
            return false;
        }
        held.valid_until = valid_until;
        held.extensions += 1;
        true
    }

    fn jitter(&self) -> Duration {
        let ms = u64::try_from(self.retry_delay.as_millis()).unwrap_or(u64::MAX);
        if ms == 0 {
            return Duration::ZERO;
        }
        Duration::from_millis(token::below(usize::try_from(ms).unwrap_or(usize::MAX)) as u64)
    }
}

/// A server's fencing counter as a script answered it: never negative.
fn counter(number: Option<i64>) -> Result<Option<u64>> {
    number
        .map(|n| {
            u64::try_from(n).map_err(|_| {
                Error::unexpected_reply("redlock answered a negative fencing number", n.to_string())
            })
        })
        .transpose()
}

/// A majority of `n` servers.
fn quorum(n: usize) -> usize {
    n / 2 + 1
}

/// The allowance for the servers' clocks running faster than this process's: 1 % of the
/// lease, plus 2 ms for the expiry's own granularity (the Redis docs' figure).
/// How many of the servers that granted the lock (`granted`, by index) raised their
/// counter, by their `answers` to `raise`.
fn raised(granted: &[(usize, u64)], answers: Answers<Option<u64>>) -> usize {
    answers
        .into_iter()
        .enumerate()
        .filter(|(i, answer)| {
            granted.iter().any(|&(g, _)| g == *i) && matches!(answer, Ok(Some(_)))
        })
        .count()
}

/// On how many servers a release found the lock still held.
fn released(answers: Answers<bool>) -> usize {
    answers
        .into_iter()
        .filter(|answer| matches!(answer, Ok(true)))
        .count()
}

fn drift(ttl: Duration) -> Duration {
    ttl / 100 + Duration::from_millis(2)
}

/// Redlock's attempts, for both drivers: take the lock on every server with a new token;
/// where a majority granted, raise the fencing counters to the highest number answered;
/// held when a majority raised within the lease, else released everywhere and tried
/// again after a random pause, up to `retries` more times.
struct Acquire<'r> {
    redlock: &'r Redlock,
    servers: usize,
    ttl: Duration,
    attempts_left: u32,
    at: AcquireAt,
    output: Option<Result<Option<Held>>>,
    /// Why the acquisition fails, answered once the servers that granted are released.
    failure: Option<Error>,
}

/// Where an [`Acquire`] stands.
enum AcquireAt {
    /// Pausing before the next attempt.
    Pause,
    /// Asking for the lock with a new token.
    Ask,
    /// Sent the acquire with `token`.
    Asked { token: String, start: Instant },
    /// A majority granted: raising the counters to `fence`.
    Raise {
        token: String,
        start: Instant,
        granted: Vec<(usize, u64)>,
        fence: u64,
    },
    /// The attempt failed: releasing what `token` holds.
    Release { token: String },
    /// Sent that release.
    Releasing,
}

impl<'r> Acquire<'r> {
    fn new(redlock: &'r Redlock, servers: usize, ttl: Duration) -> Self {
        Acquire {
            redlock,
            servers,
            ttl,
            attempts_left: redlock.retries + 1,
            at: AcquireAt::Ask,
            output: None,
            failure: None,
        }
    }
}

impl Fanout for Acquire<'_> {
    type Answer = Option<u64>;
    type Output = Result<Option<Held>>;

    fn step(&mut self) -> Step<Option<u64>, Result<Option<Held>>> {
        if let Some(output) = self.output.take() {
            return Step::Done(output);
        }
        match &self.at {
            AcquireAt::Pause => {
                self.at = AcquireAt::Ask;
                Step::Pause(self.redlock.jitter())
            }
            AcquireAt::Ask => {
                self.attempts_left -= 1;
                let token = token::random();
                let op = self.redlock.acquire_on_one(&token, self.ttl);
                self.at = AcquireAt::Asked {
                    token,
                    start: Instant::now(),
                };
                Step::Run(op)
            }
            AcquireAt::Raise { token, fence, .. } => {
                Step::Run(self.redlock.raise_on_one(token, *fence))
            }
            AcquireAt::Release { token } => {
                // Its answers do not matter: a server that kept the lock frees it when
                // its lease runs out.
                let op = scripts::identity_lock::release(&self.redlock.lock, token);
                self.at = AcquireAt::Releasing;
                Step::Run(op.map(|_| Ok(None)))
            }
            AcquireAt::Asked { .. } | AcquireAt::Releasing => unreachable!("awaiting answers"),
        }
    }

    fn feed(&mut self, answers: Answers<Option<u64>>) {
        self.at = match std::mem::replace(&mut self.at, AcquireAt::Releasing) {
            AcquireAt::Asked { token, start } => match self.redlock.granted(answers) {
                // Too few servers answered: free those that granted before failing, so
                // the lock is not held until their leases run out.
                Err(err) => {
                    self.failure = Some(err);
                    AcquireAt::Release { token }
                }
                Ok(granted) => match granted.iter().map(|&(_, n)| n).max() {
                    Some(fence) => AcquireAt::Raise {
                        token,
                        start,
                        granted,
                        fence,
                    },
                    None => AcquireAt::Release { token },
                },
            },
            AcquireAt::Raise {
                token,
                start,
                granted,
                fence,
            } => {
                let raised = raised(&granted, answers);
                let (ttl, servers) = (self.ttl, self.servers);
                match self
                    .redlock
                    .held(token.clone(), fence, start, ttl, raised, servers)
                {
                    Some(held) => {
                        self.output = Some(Ok(Some(held)));
                        return;
                    }
                    None => AcquireAt::Release { token },
                }
            }
            AcquireAt::Releasing if self.failure.is_some() => {
                self.output = self.failure.take().map(Err);
                return;
            }
            AcquireAt::Releasing if self.attempts_left == 0 => {
                self.output = Some(Ok(None));
                return;
            }
            AcquireAt::Releasing => AcquireAt::Pause,
            AcquireAt::Pause | AcquireAt::Ask | AcquireAt::Release { .. } => {
                unreachable!("fed without a run")
            }
        };
    }
}

/// One operation on every server, answering each server's result.
struct Once<T> {
    op: Option<Op<T>>,
    answers: Option<Answers<T>>,
}

impl<T> Once<T> {
    fn new(op: Op<T>) -> Self {
        Once {
            op: Some(op),
            answers: None,
        }
    }
}

impl<T: 'static> Fanout for Once<T> {
    type Answer = T;
    type Output = Answers<T>;

    fn step(&mut self) -> Step<T, Answers<T>> {
        match self.op.take() {
            Some(op) => Step::Run(op),
            None => Step::Done(self.answers.take().unwrap_or_default()),
        }
    }

    fn feed(&mut self, answers: Answers<T>) {
        self.answers = Some(answers);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_majority_is_more_than_half() {
        assert_eq!([1, 2, 3, 4, 5, 6, 7].map(quorum), [1, 2, 2, 3, 3, 4, 4]);
    }

    #[test]
    fn the_drift_allowance_is_a_hundredth_and_two_ms() {
        assert_eq!(drift(Duration::from_secs(10)), Duration::from_millis(102));
        assert_eq!(drift(Duration::from_millis(1)), Duration::from_micros(2010));
    }
}
