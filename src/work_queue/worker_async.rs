//! The consumer loop on an async connection: one job at a time, or several futures
//! side by side in one task.

use std::future::Future;
use std::sync::Mutex;
use std::sync::mpsc::channel;

use futures_util::future::{Either, FutureExt, select};
use futures_util::stream::{FuturesUnordered, StreamExt};

use super::renew::{Renewal, RenewalCounts, Renewals, renew_in_task, renew_on_thread};
use super::work_loop::{WorkStep, Working};
use super::{HandlerError, Job, JobOutput, Stop, WorkReport, Worker};
#[cfg(doc)]
use super::{WorkQueue, is_transient};
use crate::runtime::error::Result;

impl Worker<'_> {
    /// Runs the loop on an async connection (a `MultiplexedConnection`, a
    /// `ConnectionManager`, a cluster connection), on any runtime: one job at a time, or
    /// up to [`concurrency`](Self::concurrency) handler futures side by side in this
    /// task, each taken, renewed and ended on its own lease (the jobs that end are acked
    /// in the call that takes the next ones, as [`run_concurrent`](Self::run_concurrent)
    /// does).
    /// With nothing to take, the loop waits for a wake-up on `con`
    /// ([`wait_for_work`](WorkQueue::wait_for_work)), which holds the connection
    /// meanwhile: give the worker a connection of its own (a response timeout shorter
    /// than [`poll`](Self::poll) only cuts the waits short).
    ///
    /// The lease renewals run on a clone of `con` in the loop's task, beside the
    /// handler's future, unless [`renew_from`](Self::renew_from) gives them a thread and
    /// a connection of their own: do that when a handler may block its thread, which
    /// would stop renewals in the same task, and so that an outage of `con` alone does
    /// not stop them. Either way a job's lease is renewed until its ack or nack is
    /// settled, as the sync loops do: an ack retried through an outage longer than the
    /// lease keeps its job. A renewal that fails for another reason than a lost lease is
    /// counted and sent again at once, then at the next tick.
    ///
    /// An error that passes ([`is_transient`]: a failed connection, a demoted or
    /// restarting server) makes the loop send the call again after a pause that doubles
    /// from 10 ms up to 1 s, counted in [`WorkReport::server_retries`]; `con` must find
    /// its way back itself: a `ConnectionManager` reconnects, to the same address.
    ///
    /// ```no_run
    /// # async fn demo() -> redis_patterns::Result<()> {
    /// use redis_patterns::work_queue::{Job, Stop, WorkQueue};
    ///
    /// let client = redis::Client::open("redis://127.0.0.1/")?;
    /// let mut con = client.get_connection_manager().await?;
    /// let queue = WorkQueue::new("webhooks")?;
    /// let stop = Stop::new();
    /// let report = queue
    ///     .worker()
    ///     .renew_from(client.clone())
    ///     .run_async(&mut con, &stop, |job: Job| async move { deliver(&job.payload).await })
    ///     .await?;
    /// # Ok(()) }
    /// # async fn deliver(_: &[u8]) -> Result<(), String> { Ok(()) }
    /// ```
    pub async fn run_async<C, H, F, O, E>(
        &self,
        con: &mut C,
        stop: &Stop,
        mut handler: H,
    ) -> Result<WorkReport>
    where
        C: redis::aio::ConnectionLike + Clone + Send,
        H: FnMut(Job) -> F,
        F: Future<Output = std::result::Result<O, E>>,
        O: JobOutput,
        E: HandlerError,
    {
        let Some(client) = self.renew_from.clone() else {
            // Renewals in this task, on a clone of `con`.
            let renewals = Mutex::new(Renewals::new(self.queue, self.mode));
            let lock = || renewals.lock().unwrap_or_else(|e| e.into_inner());
            let hold = |renewal| lock().apply(renewal);
            let mut renewing = con.clone();
            let work = self.drive_async(con, stop, &mut handler, &hold);
            let renew = renew_in_task(&renewals, &mut renewing, self.renew_every());
            let report = match select(std::pin::pin!(work), std::pin::pin!(renew)).await {
                Either::Left((report, _)) => report,
                Either::Right(((), _)) => unreachable!("the renewals never end"),
            };
            let mut report = report?;
            lock().add_to(&mut report);
            return Ok(report);
        };
        // Renewals on a thread of their own.
        let (tx, rx) = channel::<Renewal>();
        let counts = std::sync::Arc::new(RenewalCounts::default());
        let (queue, mode, thread_counts) = (self.queue.clone(), self.mode, counts.clone());
        let thread = std::thread::spawn(move || {
            renew_on_thread(&queue, mode, &*client, rx, &thread_counts);
        });
        let hold = move |renewal| {
            let _ = tx.send(renewal);
        };
        let report = self.drive_async(con, stop, &mut handler, &hold).await;
        drop(hold);
        // The thread ends at its next wake-up (at most a third of a lease); its counts
        // are read now, and it is not waited for.
        drop(thread);
        let mut report = report?;
        counts.add_to(&mut report);
        Ok(report)
    }

    /// The async driver of the worker's loop ([`Working`]): its calls on `con`, the
    /// handlers as futures polled side by side in this task, a wait for work cut short
    /// when one of them ends.
    async fn drive_async<C, H, F, O, E>(
        &self,
        con: &mut C,
        stop: &Stop,
        handler: &mut H,
        renewals: &(dyn Fn(Renewal) + Sync),
    ) -> Result<WorkReport>
    where
        C: redis::aio::ConnectionLike + Send,
        H: FnMut(Job) -> F,
        F: Future<Output = std::result::Result<O, E>>,
        O: JobOutput,
        E: HandlerError,
    {
        let mut working = Working::new(self, stop, renewals);
        let mut running = FuturesUnordered::new();
        loop {
            while let Some(Some((job, outcome))) = running.next().now_or_never() {
                working.ended(job, outcome);
            }
            match working.step() {
                WorkStep::Run(op) => working.feed(op.run_async(con).await),
                WorkStep::Wait(op) if running.is_empty() => working.feed(op.run_async(con).await),
                WorkStep::Wait(op) => {
                    // A wait cut short holds `con` until it times out: with handlers
                    // running it lasts at most IN_FLIGHT_WAIT.
                    let wait = std::pin::pin!(op.run_async(con));
                    match select(wait, running.next()).await {
                        Either::Left((woken, _)) => working.feed(woken),
                        Either::Right((one, _)) => {
                            working.woke();
                            if let Some((job, outcome)) = one {
                                working.ended(job, outcome);
                            }
                        }
                    }
                }
                WorkStep::Start(jobs) => {
                    for job in jobs {
                        let work = working.scope_of(&job).wrap(handler(job.clone()));
                        running.push(async move {
                            let outcome = work.await.map(JobOutput::into_result);
                            (job, outcome.map_err(HandlerError::into_job_error))
                        });
                    }
                }
                WorkStep::AwaitEnd(_) => {
                    if let Some((job, outcome)) = running.next().await {
                        working.ended(job, outcome);
                    }
                }
                WorkStep::Pause(pause) => futures_timer::Delay::new(pause).await,
                WorkStep::Done(report) => return report,
            }
        }
    }
}
