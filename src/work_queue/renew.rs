//! Lease renewals while handlers run: the renewals thread of the sync loops, and the
//! renewals beside an async ack.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[cfg(feature = "aio")]
use super::retry::{FIRST_RETRY_PAUSE, is_connection_failure, retry_pause_async};
use super::worker::Link;
use super::{Connect, Job, LEASE_LOST, WorkQueue, WorkReport};
#[cfg(feature = "aio")]
use super::{Stop, is_transient};
#[cfg(feature = "aio")]
use crate::runtime::error::{Error, Result};
#[cfg(feature = "aio")]
use crate::runtime::op::Op;
use crate::runtime::op::ScriptMode;

/// Runs `settle` (an ack or nack, retried through failures) while renewing the leases of
/// `extends` every `every` on `renewals`, so that a settle that outlasts a lease does not
/// lose its job to another worker; without `renewals` (a renewals thread holds the
/// jobs), `settle` alone. A lost lease is left alone; a failed renewal is counted in
/// `failed` and tried again at the next turn.
#[cfg(feature = "aio")]
pub(super) async fn renewing<T, C>(
    settle: impl std::future::Future<Output = T>,
    extends: Vec<Op<u64>>,
    renewals: Option<C>,
    every: Duration,
    failed: &AtomicU64,
) -> T
where
    C: redis::aio::ConnectionLike + Send,
{
    use futures_util::future::{Either, select};

    let Some(mut renewals) = renewals else {
        return settle.await;
    };
    let renew = async {
        let mut lost = vec![false; extends.len()];
        loop {
            futures_timer::Delay::new(every).await;
            for (extend, lost) in extends.iter().zip(&mut lost) {
                if *lost {
                    continue;
                }
                match extend.run_async(&mut renewals).await {
                    Err(err) if err.code() == Some(LEASE_LOST) => *lost = true,
                    Err(_) => {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(_) => {}
                }
            }
        }
    };
    match select(std::pin::pin!(settle), std::pin::pin!(renew)).await {
        Either::Left((settled, _)) => settled,
        Either::Right(((), _)) => unreachable!("the renewals never end"),
    }
}

/// Runs `op` on `con` until it gets an answer other than an error that passes, pausing
/// between tries; `None` when `stop` was raised first.
#[cfg(feature = "aio")]
pub(super) async fn retrying_async<T: 'static, C>(
    op: &Op<T>,
    con: &mut C,
    stop: &Stop,
    report: &mut WorkReport,
) -> Result<Option<T>>
where
    C: redis::aio::ConnectionLike + Send,
{
    let mut pause = FIRST_RETRY_PAUSE;
    loop {
        match op.run_async(con).await {
            Err(err) if is_transient(&err) => {
                if is_connection_failure(&err) {
                    report.reconnects += 1;
                } else if !matches!(err, Error::ResponseTimeout { .. }) {
                    report.server_retries += 1;
                }
                if stop.is_stopped() {
                    return Ok(None);
                }
                retry_pause_async(&mut pause).await;
            }
            result => return result.map(Some),
        }
    }
}

/// What the renewals thread is told: renew a job every so often from now on, or no more.
pub(super) enum Renewal {
    Hold(Job, Duration),
    /// The job with this token.
    Release(String),
}

/// What the renewals thread counts.
#[derive(Default)]
pub(super) struct RenewalCounts {
    failed: AtomicU64,
    reconnects: AtomicU64,
    retries: AtomicU64,
}

impl RenewalCounts {
    pub(super) fn add_to(&self, report: &mut WorkReport) {
        report.renewals_failed += self.failed.load(Ordering::Relaxed);
        report.reconnects += self.reconnects.load(Ordering::Relaxed);
        report.server_retries += self.retries.load(Ordering::Relaxed);
    }
}

/// The renewals thread: renews every held job every `every` (a third of the lease) on a
/// connection of its own, until the channel closes. A job whose lease is lost is dropped
/// (its ack or nack tells); a renewal that failed otherwise is sent again at once on a
/// new connection, and at the next tick.
pub(super) fn renew_held(
    queue: &WorkQueue,
    mode: ScriptMode,
    client: &dyn Connect,
    rx: std::sync::mpsc::Receiver<Renewal>,
    counts: &RenewalCounts,
) {
    use std::sync::mpsc::RecvTimeoutError;
    use std::time::Instant;

    let mut con = Link::new(client);
    // Each held job with when it is renewed next, and how often.
    let mut held: Vec<(Job, Instant, Duration)> = Vec::new();
    loop {
        let now = Instant::now();
        let next = held.iter().map(|(_, at, _)| *at).min();
        let message = match next {
            Some(at) => rx.recv_timeout(at.saturating_duration_since(now)),
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match message {
            Ok(Renewal::Hold(job, every)) => held.push((job, Instant::now() + every, every)),
            Ok(Renewal::Release(token)) => held.retain(|(job, _, _)| job.token != token),
            Err(RecvTimeoutError::Timeout) => {
                let now = Instant::now();
                held.retain_mut(|(job, at, every)| {
                    if *at > now {
                        return true;
                    }
                    *at = now + *every;
                    renew(queue, mode, job, &mut con, &counts.failed)
                });
                counts.reconnects.store(con.reconnects, Ordering::Relaxed);
                counts.retries.store(con.retries, Ordering::Relaxed);
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Renews `job`'s lease on `con`, opening it again and sending the renewal once more
/// when it failed; whether to go on renewing (false once the lease is lost).
fn renew(
    queue: &WorkQueue,
    mode: ScriptMode,
    job: &Job,
    con: &mut Link<'_>,
    failed: &AtomicU64,
) -> bool {
    let extend = queue.extend(job).via(mode);
    for _ in 0..2 {
        match con.try_run(&extend) {
            Ok(_) => return true,
            Err(err) if err.code() == Some(LEASE_LOST) => return false,
            Err(_) => {
                failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    // Tried again at the next tick, while the lease may still be held.
    true
}
