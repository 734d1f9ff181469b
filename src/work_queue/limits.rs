//! The limits a queue owns, for each group or for the whole queue.

use std::time::Duration;

use super::script;
#[cfg(doc)]
use super::{Changes, Settings};
use crate::runtime::error::{Error, Result};
use crate::runtime::input;

/// A concurrency and a rate limit, for each group of a queue or for the whole queue (see
/// [`Settings`]): how many jobs may be held at once, and how many may start in any span
/// of a period. Both are off by default.
///
/// ```
/// use std::time::Duration;
/// use redis_patterns::work_queue::Limits;
///
/// // At most 2 jobs at once, at most 10 started in any second.
/// let limits = Limits::new()
///     .concurrency(2)?
///     .rate(10, Duration::from_secs(1))?;
/// assert_eq!(limits.rate_limit(), Some((10, Duration::from_secs(1))));
/// # Ok::<(), redis_patterns::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub(super) concurrency: u64,
    pub(super) rate: u64,
    pub(super) period: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            concurrency: 0,
            rate: 0,
            period: Duration::from_secs(1),
        }
    }
}

impl Limits {
    /// No limits.
    pub fn new() -> Self {
        Limits::default()
    }

    /// At most `max` jobs held at once (1 to 10^6).
    pub fn concurrency(mut self, max: u64) -> Result<Self> {
        if !(1..=1_000_000).contains(&max) {
            return Err(Error::invalid(
                "concurrency",
                format!(
                    "must be an integer from 1 to 1000000 (leave it unset for no limit), got {max}"
                ),
            ));
        }
        self.concurrency = max;
        Ok(self)
    }

    /// At most `count` jobs started in any span of `period` (`count` from 1 to 1000,
    /// `period` whole milliseconds from 1 ms to 10^10 ms).
    pub fn rate(mut self, count: u64, period: Duration) -> Result<Self> {
        if !(1..=1000).contains(&count) {
            return Err(Error::invalid(
                "rate",
                format!(
                    "must be an integer from 1 to 1000 (leave it unset for no limit), got {count}"
                ),
            ));
        }
        // The bounds of `group_period` and `queue_period` alike, named for this call.
        if input::check_param(&script::CONFIGURE.args[2], period).is_err() {
            return Err(Error::invalid(
                "period",
                format!("must be whole milliseconds from 1 ms to 10^10 ms, got {period:?}"),
            ));
        }
        self.rate = count;
        self.period = period;
        Ok(self)
    }

    /// The concurrency limit, if any.
    pub fn concurrency_limit(&self) -> Option<u64> {
        (self.concurrency > 0).then_some(self.concurrency)
    }

    /// The rate limit, if any: jobs started per period.
    pub fn rate_limit(&self) -> Option<(u64, Duration)> {
        (self.rate > 0).then_some((self.rate, self.period))
    }

    /// The period of the rate limit, kept while there is no rate (1 s unless set): a
    /// rate set later without a period of its own ([`Changes::group_rate`]) counts in it.
    pub fn period(&self) -> Duration {
        self.period
    }
}
