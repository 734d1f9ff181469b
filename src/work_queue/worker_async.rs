//! The consumer loop on an async connection: one job at a time, or several futures
//! side by side in one task.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::jobs::Finished;
use super::renew::{Renewal, RenewalCounts, renew_held, renewing, retrying_async};
use super::retry::{FIRST_RETRY_PAUSE, retry_pause_async};
use super::worker::IN_FLIGHT_WAIT;
use super::{
    Done, HandlerError, Job, JobError, JobOutput, LEASE_LOST, MAX_TAKE, MemoryPolicy, OnEviction,
    Stop, WorkReport, Worker, memory_policy_async,
};
#[cfg(doc)]
use super::{WorkQueue, is_transient};
use crate::runtime::error::Result;
use crate::runtime::op::Op;

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
    /// counted and sent again at the next tick.
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
    #[cfg(feature = "aio")]
    pub async fn run_async<C, H, F, O, E>(
        &self,
        con: &mut C,
        stop: &Stop,
        mut handler: H,
    ) -> Result<WorkReport>
    where
        C: redis::aio::ConnectionLike + Clone + Send,
        H: FnMut(Job) -> F,
        F: std::future::Future<Output = std::result::Result<O, E>>,
        O: JobOutput,
        E: HandlerError,
    {
        use futures_util::future::{Either, select};

        let mut report = WorkReport::default();
        if self.on_eviction != OnEviction::Ignore {
            let mut pause = FIRST_RETRY_PAUSE;
            let (policy, meaning) = loop {
                match memory_policy_async(con).await {
                    Ok(found) => break found,
                    Err(_) if stop.is_stopped() => break (None, MemoryPolicy::Unknown),
                    Err(_) => retry_pause_async(&mut pause).await,
                }
            };
            report.memory_policy = self.judge_memory(policy, meaning)?;
        }
        let renewals_failed = AtomicU64::new(0);
        let every = self.renew_every();
        // Renewals on a thread of their own, when asked for.
        let renewer = self.renew_from.clone().map(|client| {
            let (tx, rx) = std::sync::mpsc::channel::<Renewal>();
            let counts = Arc::new(RenewalCounts::default());
            let (queue, mode, thread_counts) = (self.queue.clone(), self.mode, counts.clone());
            let thread = std::thread::spawn(move || {
                renew_held(&queue, mode, &*client, rx, &thread_counts);
            });
            (tx, counts, thread)
        });
        let mut next: Vec<Job> = Vec::new();
        let many = self.concurrency > 1;
        // A job taken in the call that acked the last one is run before stopping.
        let result: Result<()> = async {
            if many {
                let renewer = renewer.as_ref().map(|(tx, _, _)| tx);
                let failed = &renewals_failed;
                return self
                    .run_many_async(con, stop, &mut handler, &mut report, renewer, failed)
                    .await;
            }
            while !(stop.is_stopped() && next.is_empty()) {
                if next.is_empty() {
                    let take = self.queue.take(1).via(self.mode);
                    match retrying_async(&take, con, stop, &mut report).await? {
                        Some(jobs) => next = jobs,
                        None => continue,
                    }
                }
                let Some(job) = next.pop() else {
                    // The connection's response timeout is shorter than the wait: what
                    // it misses is one wake-up, and the next take looks anyway.
                    retrying_async(&self.wait(), con, stop, &mut report).await?;
                    continue;
                };
                let outcome = if let Some((tx, _, _)) = &renewer {
                    let _ = tx.send(Renewal::Hold(job.clone(), every));
                    handler(job.clone()).await
                } else {
                    let mut renewals = con.clone();
                    let extend = self.queue.extend(&job).via(self.mode);
                    let failed = &renewals_failed;
                    let renew = async move {
                        loop {
                            futures_timer::Delay::new(every).await;
                            // Stop renewing once the lease is lost; the ack or nack tells.
                            match extend.run_async(&mut renewals).await {
                                Err(err) if err.code() == Some(LEASE_LOST) => {
                                    std::future::pending::<()>().await;
                                }
                                Err(_) => {
                                    failed.fetch_add(1, Ordering::Relaxed);
                                }
                                Ok(_) => {}
                            }
                        }
                    };
                    let work = handler(job.clone());
                    match select(std::pin::pin!(work), std::pin::pin!(renew)).await {
                        Either::Left((outcome, _)) => outcome,
                        Either::Right(((), _)) => unreachable!("the renewals never end"),
                    }
                };
                // The lease is renewed until the ack or nack is settled: one retried
                // through an outage must not outlive it.
                let settle = self.settle(&job, outcome, stop.is_stopped());
                let renewals = renewer.is_none().then(|| con.clone());
                let settled = renewing(
                    retrying_async(&settle, con, stop, &mut report),
                    self.extends([&job]),
                    renewals,
                    every,
                    &renewals_failed,
                )
                .await;
                if let Some((tx, _, _)) = &renewer {
                    let _ = tx.send(Renewal::Release(job.token.clone()));
                }
                match settled {
                    Ok(Some((ending, jobs))) => {
                        report.count(Ok(ending))?;
                        next = jobs;
                    }
                    Ok(None) => report.lost += 1,
                    Err(err) => report.count(Err(err))?,
                }
            }
            Ok(())
        }
        .await;
        report.renewals_failed += renewals_failed.into_inner();
        if let Some((tx, counts, thread)) = renewer {
            drop(tx);
            // The thread ends at its next wake-up (at most a third of a lease); its
            // counts are read now, and it is not waited for.
            drop(thread);
            counts.add_to(&mut report);
        }
        result.map(|()| report)
    }
}

impl Worker<'_> {
    /// [`run_async`](Self::run_async) with a [`concurrency`](Self::concurrency) above 1:
    /// up to that many handler futures at once, polled in this task, each job renewed on
    /// its own (in its future, or by the renewals thread).
    #[cfg(feature = "aio")]
    async fn run_many_async<C, H, F, O, E>(
        &self,
        con: &mut C,
        stop: &Stop,
        handler: &mut H,
        report: &mut WorkReport,
        renewer: Option<&std::sync::mpsc::Sender<Renewal>>,
        failed: &AtomicU64,
    ) -> Result<()>
    where
        C: redis::aio::ConnectionLike + Clone + Send,
        H: FnMut(Job) -> F,
        F: std::future::Future<Output = std::result::Result<O, E>>,
        O: JobOutput,
        E: HandlerError,
    {
        use futures_util::future::{Either, FutureExt, select};
        use futures_util::stream::{FuturesUnordered, StreamExt};

        let every = self.renew_every();
        let slots = self.concurrency as usize;
        // One job's future: its handler, with its renewals beside it unless the renewals
        // thread holds it.
        let start = |job: Job, work: F, mut renewals: C| {
            let extend = self.queue.extend(&job).via(self.mode);
            async move {
                let outcome = match renewer {
                    Some(tx) => {
                        let _ = tx.send(Renewal::Hold(job.clone(), every));
                        work.await
                    }
                    None => {
                        let renew = async {
                            loop {
                                futures_timer::Delay::new(every).await;
                                match extend.run_async(&mut renewals).await {
                                    Err(err) if err.code() == Some(LEASE_LOST) => {
                                        std::future::pending::<()>().await;
                                    }
                                    Err(_) => {
                                        failed.fetch_add(1, Ordering::Relaxed);
                                    }
                                    Ok(_) => {}
                                }
                            }
                        };
                        match select(std::pin::pin!(work), std::pin::pin!(renew)).await {
                            Either::Left((outcome, _)) => outcome,
                            Either::Right(((), _)) => unreachable!("the renewals never end"),
                        }
                    }
                };
                let outcome = outcome.map(JobOutput::into_result);
                (job, outcome.map_err(HandlerError::into_job_error))
            }
        };
        let release = |job: &Job| {
            if let Some(tx) = renewer {
                let _ = tx.send(Renewal::Release(job.token.clone()));
            }
        };
        // The connection that renews jobs while they are settled, unless the renewals
        // thread holds them.
        let renewals = |con: &C| renewer.is_none().then(|| con.clone());
        let mut running = FuturesUnordered::new();
        let mut finished: Vec<Finished> = Vec::new();
        let mut ended: Vec<(Job, std::result::Result<Vec<u8>, JobError>)> = Vec::new();
        loop {
            while let Some(Some(one)) = running.next().now_or_never() {
                ended.push(one);
            }
            for (job, outcome) in ended.drain(..) {
                match outcome {
                    Ok(result) => finished.push(Finished { job, result }),
                    Err(why) => {
                        let nack = self.nack(&job, why);
                        let holding = renewals(con);
                        let nacked = renewing(
                            retrying_async(&nack, con, stop, report),
                            self.extends([&job]),
                            holding,
                            every,
                            failed,
                        )
                        .await;
                        release(&job);
                        match nacked {
                            Ok(Some((ending, _))) => report.count(Ok(ending))?,
                            Ok(None) => report.lost += 1,
                            Err(err) => report.count(Err(err))?,
                        }
                    }
                }
            }
            let stopping = stop.is_stopped();
            let free = if stopping { 0 } else { slots - running.len() };
            if free == 0 {
                if stopping {
                    // Acks what ended; takes nothing.
                    for job in std::mem::take(&mut finished) {
                        self.ack_holding(&job, con, stop, report, renewals(con), failed)
                            .await?;
                        release(&job);
                    }
                }
                match running.next().await {
                    Some(one) => ended.push(one),
                    None => return Ok(()),
                }
                continue;
            }
            let done: Vec<Finished> = finished
                .drain(..finished.len().min(MAX_TAKE as usize))
                .collect();
            let take = self
                .queue
                .ack_and_take(&done, (free as u64).min(MAX_TAKE))
                .via(self.mode);
            let holding = renewals(con);
            let taken = renewing(
                retrying_async(&take, con, stop, report),
                self.extends(done.iter().map(|d| &d.job)),
                holding,
                every,
                failed,
            )
            .await;
            let jobs = match taken {
                Ok(Some(jobs)) => jobs,
                Ok(None) => {
                    finished.extend(done);
                    continue;
                }
                Err(err) if err.code() == Some(LEASE_LOST) => {
                    // One of them was lost: ack them one by one to tell which.
                    for job in done {
                        self.ack_holding(&job, con, stop, report, renewals(con), failed)
                            .await?;
                        release(&job);
                    }
                    continue;
                }
                Err(err) => return Err(err),
            };
            for job in &done {
                release(job);
                report.acked += 1;
            }
            if !jobs.is_empty() {
                for job in jobs {
                    let work = handler(job.clone());
                    running.push(start(job, work, con.clone()));
                }
                continue;
            }
            // Nothing to take: a wake-up, or a handler that ends, whichever comes first.
            // A wait cut short holds `con` until it times out: with handlers running it
            // lasts at most IN_FLIGHT_WAIT, so that the ones that end are acked soon.
            let wait = if running.is_empty() {
                self.wait()
            } else {
                self.wait_at_most(IN_FLIGHT_WAIT)
            };
            let one = {
                let waiting = std::pin::pin!(retrying_async(&wait, con, stop, report));
                if running.is_empty() {
                    waiting.await?;
                    None
                } else {
                    match select(waiting, running.next()).await {
                        Either::Left((woken, _)) => {
                            woken?;
                            None
                        }
                        Either::Right((one, _)) => one,
                    }
                }
            };
            ended.extend(one);
        }
    }
}

impl Worker<'_> {
    /// The lease renewals of `jobs`.
    #[cfg(feature = "aio")]
    fn extends<'j>(&self, jobs: impl IntoIterator<Item = &'j Job>) -> Vec<Op<u64>> {
        jobs.into_iter()
            .map(|job| self.queue.extend(job).via(self.mode))
            .collect()
    }

    /// Acks `job` (finished, its result kept) alone, renewing its lease meanwhile on
    /// `renewals` when given, and counts the outcome.
    #[cfg(feature = "aio")]
    async fn ack_holding<C>(
        &self,
        job: &Finished,
        con: &mut C,
        stop: &Stop,
        report: &mut WorkReport,
        renewals: Option<C>,
        failed: &AtomicU64,
    ) -> Result<()>
    where
        C: redis::aio::ConnectionLike + Send,
    {
        let ack = self.queue.ack_done(Done::from(job)).via(self.mode);
        let acked = renewing(
            retrying_async(&ack, con, stop, report),
            self.extends([&job.job]),
            renewals,
            self.renew_every(),
            failed,
        )
        .await;
        match acked {
            Ok(Some(_)) => report.acked += 1,
            Ok(None) => report.lost += 1,
            Err(err) => report.count(Err(err))?,
        }
        Ok(())
    }
}
