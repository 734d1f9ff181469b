//! Failures and what comes after them: the backoff of a failed job, a handler's error,
//! the errors that pass and the pauses before a call is sent again.

use std::fmt;
use std::time::Duration;

#[cfg(doc)]
use super::{WorkQueue, Worker};
use crate::runtime::error::Error;
use crate::runtime::token;

/// How long a failed job waits before its next delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backoff {
    /// The same delay after every failure.
    Fixed(Duration),
    /// `base` after the first delivery fails, doubling after each further one, never
    /// more than `max`.
    Exponential {
        /// The delay after the first failure.
        base: Duration,
        /// The longest delay.
        max: Duration,
    },
}

impl Backoff {
    /// The delay after delivery number `delivery` (1 for the first) failed.
    ///
    /// ```
    /// use std::time::Duration;
    /// use redis_patterns::work_queue::Backoff;
    ///
    /// let backoff = Backoff::Exponential { base: Duration::from_secs(1), max: Duration::from_secs(60) };
    /// assert_eq!(backoff.delay(1), Duration::from_secs(1));
    /// assert_eq!(backoff.delay(3), Duration::from_secs(4));
    /// assert_eq!(backoff.delay(30), Duration::from_secs(60));
    /// ```
    pub fn delay(&self, delivery: u32) -> Duration {
        match *self {
            Backoff::Fixed(delay) => delay,
            Backoff::Exponential { base, max } => {
                let doublings = delivery.saturating_sub(1);
                if doublings >= 32 {
                    return max;
                }
                base.checked_mul(1 << doublings)
                    .map_or(max, |delay| delay.min(max))
            }
        }
    }

    /// The delay [`nack`](WorkQueue::nack) uses: [`Fixed`](Backoff::Fixed) as it is, and
    /// [`Exponential`](Backoff::Exponential) at a random point between half of
    /// [`delay`](Self::delay) and all of it, so that jobs that failed together (an outage
    /// of what they call) do not all come back at the same moment.
    pub fn jittered(&self, delivery: u32) -> Duration {
        let delay = self.delay(delivery);
        match self {
            Backoff::Fixed(_) => delay,
            Backoff::Exponential { .. } => delay / 2 + jitter(delay / 2),
        }
    }
}

/// A random duration from zero to `most`.
pub(super) fn jitter(most: Duration) -> Duration {
    const STEPS: u32 = 1 << 16;
    most * token::below(STEPS as usize + 1) as u32 / STEPS
}

/// Whether an error can pass, so that the [`Worker`] loop sends the call again (on a new
/// connection, after a pause) rather than stop: a failed connection (an I/O error, a
/// closed or refused connection, a timeout), or the error reply of a server that changes
/// roles, loads its data or moves slots:
///
/// | Code | When |
/// |---|---|
/// | `UNBLOCKED` | a blocked `BZPOPMIN` when its server is demoted (`REPLICAOF`, a managed failover) |
/// | `READONLY` | a write sent to a replica: a demoted primary, or a stale address |
/// | `LOADING` | a server loading its RDB or AOF after a restart |
/// | `MASTERDOWN` | a replica that lost its primary (`replica-serve-stale-data no`) |
/// | `TRYAGAIN`, `CLUSTERDOWN` | a cluster moving slots, or with slots uncovered |
/// | `BUSY` | a server running a long script |
/// | (sentinel) no primary found | the sentinels name no primary that answers as one: a failover under way |
///
/// Every other error (a script's declared code, `NOPERM`, `WRONGTYPE`, `OOM`, …) is
/// fatal: the loop returns it.
pub fn is_transient(err: &Error) -> bool {
    match err {
        Error::Redis(err) => {
            err.is_io_error()
                || err.is_connection_dropped()
                || err.is_connection_refusal()
                || err.is_timeout()
                || err.kind() == redis::ErrorKind::MasterNameNotFoundBySentinel
                || err
                    .code()
                    .is_some_and(|code| TRANSIENT_CODES.contains(&code))
        }
        Error::ResponseTimeout { .. } => true,
        _ => false,
    }
}

/// The server error codes [`is_transient`] lets pass.
const TRANSIENT_CODES: [&str; 7] = [
    "UNBLOCKED",
    "READONLY",
    "LOADING",
    "MASTERDOWN",
    "TRYAGAIN",
    "CLUSTERDOWN",
    "BUSY",
];

/// A failure of the connection rather than an answer of the server's: the command may or
/// may not have run, and a new connection may do better.
pub(super) fn is_connection_failure(err: &Error) -> bool {
    match err {
        Error::Redis(err) => {
            err.is_io_error() || err.is_connection_dropped() || err.is_connection_refusal()
        }
        _ => false,
    }
}

/// What a [`Worker`]'s handler asks for a job it could not do, beyond a retry: fail it
/// for good, or hold its group back for a while. Any error that is [`fmt::Display`]
/// converts into a [`retry`](Self::retry) (so `?` works in a handler that returns
/// `Result<(), JobError>`), and a handler may return any `Display` error instead: it is
/// retried.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use std::time::Duration;
/// use redis_patterns::work_queue::{JobError, Stop, WorkQueue};
///
/// let client = redis::Client::open("redis://127.0.0.1/")?;
/// let queue = WorkQueue::new("webhooks")?;
/// queue.worker().run(&client, &Stop::new(), |job| -> Result<(), JobError> {
///     let url = std::str::from_utf8(&job.payload).map_err(JobError::unrecoverable)?;
///     match post(url)? {
///         429 => Err(JobError::rate_limit_group(Duration::from_secs(30), "429 from the tenant's endpoint")),
///         _ => Ok(()),
///     }
/// })?;
/// # Ok(()) }
/// # fn post(_: &str) -> Result<u16, std::io::Error> { Ok(200) }
/// ```
///
/// `JobError` is not itself `Display` (that is what lets every `Display` error convert
/// into it); [`message`](Self::message) is its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobError {
    pub(super) message: String,
    pub(super) kind: JobErrorKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum JobErrorKind {
    Retry,
    Unrecoverable,
    RateLimitGroup(Duration),
}

impl JobError {
    /// The job is nacked: retried after the queue's backoff, or dead after its last
    /// delivery.
    pub fn retry(why: impl fmt::Display) -> Self {
        JobError {
            message: why.to_string(),
            kind: JobErrorKind::Retry,
        }
    }

    /// The job fails for good: dead at once, whatever its delivery count
    /// ([`WorkQueue::fail`]; BullMQ's `UnrecoverableError`).
    pub fn unrecoverable(why: impl fmt::Display) -> Self {
        JobError {
            message: why.to_string(),
            kind: JobErrorKind::Unrecoverable,
        }
    }

    /// The job's group is held back for `hold` and the job goes back, its delivery not
    /// counted ([`WorkQueue::rate_limit_group`]; BullMQ Pro's `rateLimitGroup`). A job
    /// without a group is retried instead.
    pub fn rate_limit_group(hold: Duration, why: impl fmt::Display) -> Self {
        JobError {
            message: why.to_string(),
            kind: JobErrorKind::RateLimitGroup(hold),
        }
    }

    /// The error's text: what a nack keeps as the job's last error.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl<E: fmt::Display> From<E> for JobError {
    fn from(why: E) -> Self {
        JobError::retry(why)
    }
}

/// What a [`Worker`]'s handler may fail with: any [`fmt::Display`] error (retried), or a
/// [`JobError`], which says what to do.
pub trait HandlerError {
    /// The error as a [`JobError`].
    fn into_job_error(self) -> JobError;
}

impl<E: fmt::Display> HandlerError for E {
    fn into_job_error(self) -> JobError {
        JobError::retry(self)
    }
}

impl HandlerError for JobError {
    fn into_job_error(self) -> JobError {
        self
    }
}

/// The longest pause before a loop sends a call again after a failed connection or a
/// transient server error; the pauses double from 10 ms up to it.
const MOST_RETRY_PAUSE: Duration = Duration::from_secs(1);
/// The first such pause.
const FIRST_RETRY_PAUSE: Duration = Duration::from_millis(10);

/// How a loop meets the errors that pass ([`is_transient`]): it counts them and pauses
/// before it sends the call again, from 10 ms doubling up to 1 s, each pause drawn from
/// half of it to all of it; a call that succeeds starts the pauses over.
#[derive(Debug)]
pub(super) struct Retries {
    pause: Duration,
    /// Failed connections met.
    pub(super) reconnects: u64,
    /// Other errors that pass met (a demoted, loading or resharding server).
    pub(super) server_retries: u64,
}

impl Default for Retries {
    fn default() -> Self {
        Retries {
            pause: FIRST_RETRY_PAUSE,
            reconnects: 0,
            server_retries: 0,
        }
    }
}

impl Retries {
    /// The pause before sending again after `err`, counted; `None` for an error that
    /// does not pass.
    pub(super) fn after(&mut self, err: &Error) -> Option<Duration> {
        if !is_transient(err) {
            return None;
        }
        if is_connection_failure(err) {
            self.reconnects += 1;
        } else if !matches!(err, Error::ResponseTimeout { .. }) {
            // A response timeout only cut a wait short.
            self.server_retries += 1;
        }
        let pause = self.pause / 2 + jitter(self.pause / 2);
        self.pause = (self.pause * 2).min(MOST_RETRY_PAUSE);
        Some(pause)
    }

    /// A call went through: the next error pauses from the first pause again.
    pub(super) fn passed(&mut self) {
        self.pause = FIRST_RETRY_PAUSE;
    }
}
