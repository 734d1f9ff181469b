//! Waiting on a coordination primitive without missing a wake-up.
//!
//! A script that answers "not yet" (a held lock, a closed latch, a full semaphore) also
//! answers a [`Wake`]: what to block on, and how long the waiter may block before
//! something the script cannot signal (a lease running out) makes it worth asking again.
//! What to block on is one of two things.
//!
//! **A bell** (a list; the fair lock's): a script that frees the lock pushes one ring to
//! it, and the waiter blocks on `BLPOP <bell> <seconds>`. Redis hands a pushed item to
//! the one client blocked on the list the longest, so a release wakes one waiter, not all
//! of them, and the others stay blocked without sending anything. A ring pushed while
//! nobody blocks stays in the list for the next waiter, so none is missed between a
//! "not yet" and the block.
//!
//! **A wake stream** (a latch, a barrier, a semaphore, a read-write lock): the stream and
//! the last id it held when the script ran. Every script that frees something
//! appends to that stream (`XADD … MAXLEN 1`, the shared Lua helper `wake_waiters`), so
//! a waiter blocked on `XREAD BLOCK … STREAMS <stream> <last id>` wakes at
//! once, and one that blocks only after the append returns at once too: the id it reads
//! from is older. Pub/sub is never involved, and every wait is bounded, then the script
//! runs again.
//!
//! Every entry is for every waiter: a latch that opened, a barrier that let its parties
//! through, a lock that readers may share. Where one waiter alone can go on, the
//! primitive rings a bell instead.

use std::time::{Duration, Instant};

use redis::Value;

use crate::runtime::error::{Error, Result};
use crate::runtime::machine::{self, Machine, Step};
use crate::runtime::op::Op;

/// The longest one blocking read lasts before the script runs again, whatever the script
/// said: a wake-up lost to a failover or a deleted stream costs at most this.
pub const MAX_BLOCK: Duration = Duration::from_secs(1);

/// What a waiter blocks on after a script answered "not yet": the primitive's wake
/// stream, read from the last id it held, or its bell, for at most `within`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wake {
    /// The wake stream's key, or the bell's.
    pub key: String,
    /// For a wake stream, its last id when the script ran (`0-0` when it had none):
    /// anything appended later wakes the waiter. `None` for a bell.
    pub after: Option<String>,
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
            after: Some(after),
            within: Duration::from_millis(within_ms).min(MAX_BLOCK),
        })
    }

    /// A wake on the bell `key` (a list the primitive's scripts ring), from a script's
    /// "not yet" reply: the ms it said to block at most (capped at [`MAX_BLOCK`]).
    pub fn bell(key: &str, within_ms: u64) -> Wake {
        Wake {
            key: key.to_owned(),
            after: None,
            within: Duration::from_millis(within_ms).min(MAX_BLOCK),
        }
    }

    /// Blocks until the stream gets an entry after [`after`](Self::after) (or the bell
    /// rings for this waiter), or `min(within, timeout)` passed: true when it woke. One
    /// blocking command (`XREAD BLOCK`, or `BLPOP` on a bell): the connection is busy
    /// meanwhile, so on a multiplexed connection the other users of it wait too.
    pub fn block(&self, timeout: Duration) -> Op<bool> {
        self.read(self.within.min(timeout))
    }

    /// One blocking read of at most `timeout`: whether it woke (a stream entry or a
    /// ring) rather than timed out.
    fn read(&self, timeout: Duration) -> Op<bool> {
        // BLOCK 0 (and a BLPOP timeout of 0) waits forever: block at least 1 ms.
        let ms = timeout.as_millis().max(1) as u64;
        let cmd = match &self.after {
            None => {
                let mut cmd = redis::cmd("BLPOP");
                cmd.arg(&self.key)
                    .arg(format!("{}.{:03}", ms / 1000, ms % 1000));
                cmd
            }
            Some(after) => {
                let mut cmd = redis::cmd("XREAD");
                cmd.arg("COUNT")
                    .arg(1)
                    .arg("BLOCK")
                    .arg(ms)
                    .arg("STREAMS")
                    .arg(&self.key)
                    .arg(after);
                cmd
            }
        };
        Op::<Value>::native(cmd).map(|reply| Ok(!matches!(reply, Value::Nil)))
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
    attempt: impl FnMut() -> Op<Attempt<T>>,
) -> Result<Option<T>> {
    machine::drive(&mut Until::new(timeout, attempt), con)
}

/// [`until`] on an async connection.
#[cfg(feature = "aio")]
pub async fn until_async<T: 'static, C: redis::aio::ConnectionLike>(
    con: &mut C,
    timeout: Duration,
    attempt: impl FnMut() -> Op<Attempt<T>>,
) -> Result<Option<T>> {
    machine::drive_async(&mut Until::new(timeout, attempt), con).await
}

/// The loop of [`until`], for both drivers: try, then block on the wake the try answered
/// until woken or it is time to try again, and again, until the deadline.
pub(crate) struct Until<T, F> {
    attempt: F,
    deadline: Instant,
    /// What it blocks on and when it tries again regardless; `None` when it tries next.
    blocked: Option<(Wake, Instant)>,
    output: Option<Result<Option<T>>>,
}

/// What [`Until`] runs answers.
pub(crate) enum Answered<T> {
    Attempt(Attempt<T>),
    /// A blocking read ended: woken, or timed out; either way the next step tries again.
    Read,
}

impl<T, F: FnMut() -> Op<Attempt<T>>> Until<T, F> {
    pub(crate) fn new(timeout: Duration, attempt: F) -> Self {
        Until {
            attempt,
            deadline: Instant::now() + timeout,
            blocked: None,
            output: None,
        }
    }
}

impl<T: 'static, F: FnMut() -> Op<Attempt<T>>> Machine for Until<T, F> {
    type Answer = Answered<T>;
    type Output = Result<Option<T>>;

    fn step(&mut self) -> Step<Answered<T>, Result<Option<T>>> {
        if let Some(output) = self.output.take() {
            return Step::Done(output);
        }
        if let Some((wake, retry)) = &self.blocked {
            let now = Instant::now();
            if now >= self.deadline {
                // Timed out while it would block: no try after the deadline.
                return Step::Done(Ok(None));
            }
            let left = self.deadline.min(*retry).saturating_duration_since(now);
            if !left.is_zero() {
                return Step::Run(wake.read(left).map(|_| Ok(Answered::Read)));
            }
            self.blocked = None;
        }
        Step::Run((self.attempt)().map(|attempt| Ok(Answered::Attempt(attempt))))
    }

    fn feed(&mut self, answer: Result<Answered<T>>) {
        match answer {
            Err(err) => self.output = Some(Err(err)),
            Ok(Answered::Attempt(Attempt::Done(value))) => self.output = Some(Ok(Some(value))),
            Ok(Answered::Attempt(Attempt::NotYet(wake))) => {
                let now = Instant::now();
                if now >= self.deadline {
                    self.output = Some(Ok(None));
                } else {
                    let retry = now + wake.within;
                    self.blocked = Some((wake, retry));
                }
            }
            Ok(Answered::Read) => self.blocked = None,
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

    /// Whether a step of [`Until`] runs a blocking read of the wake stream.
    fn reads_the_stream<T: 'static>(step: Step<Answered<T>, Result<Option<T>>>) -> bool {
        let Step::Run(op) = step else {
            panic!("a step that runs nothing");
        };
        let packed = op.cmd().expect("a command").get_packed_command();
        String::from_utf8_lossy(&packed).contains("XREAD")
    }

    #[test]
    fn a_wake_up_tries_again() {
        let tries = std::cell::Cell::new(0);
        let mut until = Until::new(Duration::from_secs(60), || {
            tries.set(tries.get() + 1);
            Op::native(redis::cmd("PING")).map(|_: Value| Ok(Attempt::Done(1)))
        });
        assert!(!reads_the_stream(until.step()));
        let wake = Wake::new("w", "1-0".into(), 60_000).unwrap();
        until.feed(Ok(Answered::Attempt(Attempt::NotYet(wake))));
        assert!(reads_the_stream(until.step()));
        until.feed(Ok(Answered::Read));
        assert!(!reads_the_stream(until.step()), "tried again");
        until.feed(Ok(Answered::Attempt(Attempt::Done(7))));
        assert!(matches!(until.step(), Step::Done(Ok(Some(7)))));
        assert_eq!(tries.get(), 2);
    }

    #[test]
    fn a_try_after_the_deadline_ends_the_wait() {
        let mut until = Until::new(Duration::ZERO, || {
            Op::native(redis::cmd("PING")).map(|_: Value| Ok(Attempt::<u8>::Done(1)))
        });
        assert!(!reads_the_stream(until.step()));
        let wake = Wake::new("w", "0-0".into(), 10).unwrap();
        until.feed(Ok(Answered::Attempt(Attempt::NotYet(wake))));
        assert!(matches!(until.step(), Step::Done(Ok(None))));
    }

    #[test]
    fn a_bell_is_popped_for_at_most_its_time_and_a_ring_tries_again() {
        let bell = Wake::bell("{x}:bell", 60_000);
        assert_eq!(bell.within, MAX_BLOCK);
        let op = bell.read(Duration::from_millis(1250));
        let packed = op.cmd().expect("a command").get_packed_command();
        let text = String::from_utf8_lossy(&packed);
        assert!(text.contains("BLPOP") && text.contains("{x}:bell") && text.contains("1.250"));
        let mut until = Until::new(Duration::from_secs(60), || {
            Op::native(redis::cmd("PING")).map(|_: Value| Ok(Attempt::<u8>::Done(1)))
        });
        until.step();
        until.feed(Ok(Answered::Attempt(Attempt::NotYet(bell))));
        assert!(until.blocked.is_some());
        until.feed(Ok(Answered::Read));
        assert!(until.blocked.is_none(), "a ring tries again");
    }

    #[test]
    fn a_wake_blocks_at_most_max_block() {
        let wake = Wake::new("w", "0-0".into(), 60_000).unwrap();
        assert_eq!(wake.within, MAX_BLOCK);
        assert!(Wake::new("w", "nope".into(), 1).is_err());
    }
}
