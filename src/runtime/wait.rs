//! Waiting on a coordination primitive without missing a wake-up.
//!
//! A script that answers "not yet" (a held lock, a closed latch, a full semaphore) also
//! answers a [`Wake`]: the primitive's wake stream, the last id it held when the script
//! ran, and how long the waiter may block before something the script cannot signal (a
//! lease running out) makes it worth asking again. Every script that frees something
//! appends to that stream (`XADD … MAXLEN 1`, the shared Lua helper `wake_waiters`), so a
//! waiter blocked on `XREAD BLOCK … STREAMS <stream> <last id>` wakes at once, and one
//! that blocks only after the append returns at once too: the id it reads from is older.
//! Pub/sub is never involved, and every wait is bounded, then the script runs again.

use std::time::{Duration, Instant};

use redis::Value;

use crate::runtime::error::{Error, Result};
use crate::runtime::op::Op;

/// The longest one blocking read lasts before the script runs again, whatever the script
/// said: a wake-up lost to a failover or a deleted stream costs at most this.
pub const MAX_BLOCK: Duration = Duration::from_secs(1);

/// What a waiter blocks on after a script answered "not yet": the primitive's wake
/// stream, read from the last id it held, for at most `within`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wake {
    /// The wake stream's key.
    pub key: String,
    /// The stream's last id when the script ran (`0-0` when it had none): anything
    /// appended later wakes the waiter.
    pub after: String,
    /// How long the waiter may block before it should run the script again (the time to
    /// the earliest lease that could free what it waits for), at most [`MAX_BLOCK`].
    pub within: Duration,
}

impl Wake {
    /// A wake from a script's "not yet" reply: the stream the caller passed, the last id
    /// the script answered and the ms it said to block at most (capped at [`MAX_BLOCK`]).
    /// An id that is no stream id is an unexpected reply.
    pub fn new(key: &str, after: String, within_ms: u64) -> Result<Wake> {
        if !is_stream_id(&after) {
            return Err(Error::unexpected_reply("a wake id is no stream id", after));
        }
        Ok(Wake {
            key: key.to_owned(),
            after,
            within: Duration::from_millis(within_ms).min(MAX_BLOCK),
        })
    }

    /// Blocks until the stream gets an entry after [`after`](Self::after), or
    /// `min(within, timeout)` passed: true when it woke for an entry. One blocking command
    /// (`XREAD BLOCK`): the connection is busy meanwhile, so on a multiplexed connection
    /// the other users of it wait too.
    pub fn block(&self, timeout: Duration) -> Op<bool> {
        // XREAD BLOCK 0 waits forever: block at least 1 ms.
        let ms = self.within.min(timeout).as_millis().max(1);
        let mut cmd = redis::cmd("XREAD");
        cmd.arg("COUNT")
            .arg(1)
            .arg("BLOCK")
            .arg(ms as u64)
            .arg("STREAMS")
            .arg(&self.key)
            .arg(&self.after);
        Op::<Value>::native(cmd).map(|reply| Ok(reply != Value::Nil))
    }
}

/// `<ms>-<seq>`, as Redis prints a stream id.
fn is_stream_id(id: &str) -> bool {
    let Some((ms, seq)) = id.split_once('-') else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit());
    digits(ms) && digits(seq)
}

/// One try of a waiting operation: done, or what to block on before the next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt<T> {
    /// The script granted what was asked.
    Done(T),
    /// Not yet: block on this, then try again.
    NotYet(Wake),
}

/// Runs `attempt` until it is done or `timeout` passed (on this process's monotonic
/// clock: the timeout is the caller's, every lease is the server's): `None` on timeout.
/// Between tries it blocks on the wake the last try answered, on the same connection.
/// Each family's waiting methods (`acquire_within`, `wait`, …) are this loop; it is here
/// for an app that builds its own attempts.
pub fn until<T: 'static>(
    con: &mut dyn redis::ConnectionLike,
    timeout: Duration,
    mut attempt: impl FnMut() -> Op<Attempt<T>>,
) -> Result<Option<T>> {
    let deadline = Instant::now() + timeout;
    loop {
        match attempt().run(con)? {
            Attempt::Done(value) => return Ok(Some(value)),
            Attempt::NotYet(wake) => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(None);
                }
                wake.block(left).run(con)?;
            }
        }
    }
}

/// [`until`] on an async connection.
#[cfg(feature = "aio")]
pub async fn until_async<T: 'static, C: redis::aio::ConnectionLike>(
    con: &mut C,
    timeout: Duration,
    mut attempt: impl FnMut() -> Op<Attempt<T>>,
) -> Result<Option<T>> {
    let deadline = Instant::now() + timeout;
    loop {
        match attempt().run_async(con).await? {
            Attempt::Done(value) => return Ok(Some(value)),
            Attempt::NotYet(wake) => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(None);
                }
                wake.block(left).run_async(con).await?;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wake_id_is_a_stream_id() {
        assert!(is_stream_id("0-0"));
        assert!(is_stream_id("1700000000000-12"));
        for bad in ["", "0", "-0", "0-", "1-x", "+1-0", "1-0-0", " 1-0"] {
            assert!(!is_stream_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_wake_blocks_at_most_max_block() {
        let wake = Wake::new("w", "0-0".into(), 60_000).unwrap();
        assert_eq!(wake.within, MAX_BLOCK);
        assert!(Wake::new("w", "nope".into(), 1).is_err());
    }
}
