//! Lease renewals: every job a worker holds is renewed every third of its lease until its
//! ack or nack is settled. [`Renewals`] is the logic, once: which job is due, what an
//! answer means (a lost lease drops the job, its ack or nack tells; another failure is
//! counted and sent again at once, then at the next tick). It is driven from a thread of
//! its own on a sync connection ([`renew_on_thread`], for the sync loops and
//! [`Worker::renew_from`](super::Worker::renew_from)), or in the async loop's task on a
//! clone of its connection ([`renew_in_task`]).

use std::sync::Mutex;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use super::worker::Link;
use super::{Connect, Job, LEASE_LOST, Retries, WorkQueue, WorkReport};
use crate::runtime::error::Result;
use crate::runtime::op::{Op, ScriptMode};

/// What the renewals are told: renew a job every so often from now on, or no more.
pub(super) enum Renewal {
    Hold(Job, Duration),
    /// The job with this id and token. The jobs of one take share a token when their
    /// deliveries are the same (`<random>:<delivery>`), so the token alone does not tell
    /// them apart.
    Release(String, String),
}

/// The held jobs and when each is renewed next.
pub(super) struct Renewals<'q> {
    queue: &'q WorkQueue,
    mode: ScriptMode,
    held: Vec<Held>,
    /// The id and token of the job whose renewal is in flight.
    in_flight: Option<(String, String)>,
    failed: u64,
    retries: Retries,
}

struct Held {
    job: Job,
    next: Instant,
    every: Duration,
    /// The last renewal failed and was sent again at once.
    again: bool,
}

/// What the renewals do next.
pub(super) enum RenewStep {
    Run(Op<u64>),
    /// Nothing due: the next renewal is due in this long (`None`: no job held).
    Idle(Option<Duration>),
}

impl<'q> Renewals<'q> {
    pub(super) fn new(queue: &'q WorkQueue, mode: ScriptMode) -> Self {
        Renewals {
            queue,
            mode,
            held: Vec::new(),
            in_flight: None,
            failed: 0,
            retries: Retries::default(),
        }
    }

    pub(super) fn apply(&mut self, renewal: Renewal) {
        match renewal {
            Renewal::Hold(job, every) => self.held.push(Held {
                job,
                next: Instant::now() + every,
                every,
                again: false,
            }),
            Renewal::Release(id, token) => self
                .held
                .retain(|held| !(held.job.id == id && held.job.token == token)),
        }
    }

    pub(super) fn step(&mut self) -> RenewStep {
        let now = Instant::now();
        match self.held.iter().min_by_key(|held| held.next) {
            Some(held) if held.next <= now => {
                self.in_flight = Some((held.job.id.clone(), held.job.token.clone()));
                RenewStep::Run(self.queue.extend(&held.job).via(self.mode))
            }
            Some(held) => RenewStep::Idle(Some(held.next - now)),
            None => RenewStep::Idle(None),
        }
    }

    /// The answer to the renewal [`step`](Self::step) sent.
    pub(super) fn feed(&mut self, answer: Result<u64>) {
        let Some((id, token)) = self.in_flight.take() else {
            return;
        };
        // Released meanwhile: its ack or nack settled it.
        let Some(at) = self
            .held
            .iter()
            .position(|held| held.job.id == id && held.job.token == token)
        else {
            return;
        };
        match answer {
            Err(err) if err.code() == Some(LEASE_LOST) => {
                self.held.swap_remove(at);
            }
            Err(err) => {
                self.failed += 1;
                self.retries.after(&err);
                let held = &mut self.held[at];
                held.again = !held.again;
                if !held.again {
                    held.next = Instant::now() + held.every;
                }
            }
            Ok(_) => {
                let held = &mut self.held[at];
                held.again = false;
                held.next = Instant::now() + held.every;
            }
        }
    }

    pub(super) fn add_to(&self, report: &mut WorkReport) {
        report.renewals_failed += self.failed;
        report.reconnects += self.retries.reconnects;
        report.server_retries += self.retries.server_retries;
    }
}

/// What a renewals thread counted so far, read by the loop when it ends.
#[derive(Default)]
pub(super) struct RenewalCounts(Mutex<WorkReport>);

impl RenewalCounts {
    pub(super) fn add_to(&self, report: &mut WorkReport) {
        let counted = *self.0.lock().unwrap_or_else(|e| e.into_inner());
        report.renewals_failed += counted.renewals_failed;
        report.reconnects += counted.reconnects;
        report.server_retries += counted.server_retries;
    }
}

/// The renewals thread: renews every job held on `renewals` on a connection of its own
/// (opened again after a failure), until the channel closes.
pub(super) fn renew_on_thread(
    queue: &WorkQueue,
    mode: ScriptMode,
    client: &dyn Connect,
    renewals: Receiver<Renewal>,
    counts: &RenewalCounts,
) {
    let mut link = Link::new(client);
    let mut held = Renewals::new(queue, mode);
    loop {
        match held.step() {
            RenewStep::Run(extend) => {
                held.feed(link.try_run(&extend));
                let mut counted = WorkReport::default();
                held.add_to(&mut counted);
                *counts.0.lock().unwrap_or_else(|e| e.into_inner()) = counted;
            }
            RenewStep::Idle(due) => {
                let told = match due {
                    Some(due) => renewals.recv_timeout(due),
                    None => renewals.recv().map_err(|_| RecvTimeoutError::Disconnected),
                };
                match told {
                    Ok(renewal) => held.apply(renewal),
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
        }
    }
}

/// The renewals in the async loop's task: renews every job held on `renewals` on `con`,
/// until the loop drops it. It sleeps at most `every` at a time, so a job held while it
/// sleeps (due `every` after its take) is renewed on time.
#[cfg(feature = "aio")]
pub(super) async fn renew_in_task<C>(renewals: &Mutex<Renewals<'_>>, con: &mut C, every: Duration)
where
    C: redis::aio::ConnectionLike + Send,
{
    let lock = || renewals.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let step = lock().step();
        match step {
            RenewStep::Run(extend) => {
                let answer = extend.run_async(con).await;
                lock().feed(answer);
            }
            RenewStep::Idle(due) => {
                let sleep = due.map_or(every, |due| due.min(every));
                futures_timer::Delay::new(sleep).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::error::Error;

    fn job(token: &str) -> Job {
        job_of(token, token)
    }

    fn job_of(id: &str, token: &str) -> Job {
        Job {
            id: id.into(),
            token: token.into(),
            delivery: 1,
            deadline_ms: 0,
            group: None,
            payload: Vec::new(),
            trace_context: None,
        }
    }

    fn lost() -> Error {
        Error::Script {
            script: "work_queue/extend",
            path: "scripts/work_queue/extend.lua",
            code: LEASE_LOST.into(),
            message: "gone".into(),
        }
    }

    fn dropped() -> Error {
        let io = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        Error::Redis(redis::RedisError::from(io))
    }

    fn is_run(step: RenewStep) -> bool {
        matches!(step, RenewStep::Run(_))
    }

    #[test]
    fn a_failed_renewal_is_sent_again_at_once_then_at_the_next_tick() {
        let queue = WorkQueue::new("q").unwrap();
        let mut renewals = Renewals::new(&queue, ScriptMode::Eval);
        assert!(matches!(renewals.step(), RenewStep::Idle(None)));
        renewals.apply(Renewal::Hold(job("a"), Duration::ZERO));
        assert!(is_run(renewals.step()));
        renewals.feed(Err(dropped()));
        assert!(is_run(renewals.step()), "sent again at once");
        renewals.held[0].every = Duration::from_secs(3600);
        renewals.feed(Err(dropped()));
        assert!(
            matches!(renewals.step(), RenewStep::Idle(Some(_))),
            "then at the next tick"
        );
        let mut report = WorkReport::default();
        renewals.add_to(&mut report);
        assert_eq!((report.renewals_failed, report.reconnects), (2, 2));
    }

    #[test]
    fn a_lost_lease_or_a_release_ends_the_renewals_of_a_job() {
        let queue = WorkQueue::new("q").unwrap();
        let mut renewals = Renewals::new(&queue, ScriptMode::Eval);
        renewals.apply(Renewal::Hold(job("a"), Duration::ZERO));
        renewals.apply(Renewal::Hold(job("b"), Duration::from_secs(3600)));
        assert!(is_run(renewals.step()));
        renewals.feed(Err(lost()));
        assert!(
            matches!(renewals.step(), RenewStep::Idle(Some(_))),
            "only b is held"
        );
        // Released while its renewal is in flight: the answer is dropped.
        renewals.held[0].next = Instant::now();
        assert!(is_run(renewals.step()));
        renewals.apply(Renewal::Release("b".into(), "b".into()));
        renewals.feed(Ok(1));
        assert!(matches!(renewals.step(), RenewStep::Idle(None)));
    }

    /// Two jobs of one take share a token: the release of one leaves the other's
    /// renewals going, and an answer counts for the job it was sent for.
    #[test]
    fn jobs_of_one_take_are_told_apart_by_their_ids() {
        let queue = WorkQueue::new("q").unwrap();
        let mut renewals = Renewals::new(&queue, ScriptMode::Eval);
        renewals.apply(Renewal::Hold(job_of("x", "t:1"), Duration::ZERO));
        renewals.apply(Renewal::Hold(job_of("y", "t:1"), Duration::from_secs(3600)));
        renewals.apply(Renewal::Release("x".into(), "t:1".into()));
        assert_eq!(renewals.held.len(), 1);
        assert_eq!(renewals.held[0].job.id, "y");
        // y's renewal lost its lease: y goes, whatever else holds its token.
        renewals.apply(Renewal::Hold(job_of("z", "t:1"), Duration::from_secs(3600)));
        renewals.held[0].next = Instant::now();
        assert!(is_run(renewals.step()));
        renewals.feed(Err(lost()));
        let left: Vec<&str> = renewals.held.iter().map(|h| h.job.id.as_str()).collect();
        assert_eq!(left, ["z"]);
    }
}
