//! Long-running loops, written once for sync and async connections.
//!
//! [`wire`](crate::runtime::wire) runs one operation as a plan that says what to send and
//! takes the replies. A loop that runs many operations (a waiter, the scheduler, the
//! worker and its renewals, Redlock's attempts) is built the same way, one level up: a
//! [`Machine`] holds the loop's state and says what to do next ([`Step`]: run this
//! operation, pause this long, or done), and is fed each operation's result. It never
//! does I/O and never sleeps; a driver does that, and a driver is a few lines:
//! [`drive`] on a sync connection, [`drive_async`] on an async one, [`drive_each`] and
//! [`drive_each_async`] for a [`Fanout`] (the same operation on several servers at once).
//! So the loop's logic (what to send after a transient error, when to give up, what a
//! reply means) has one home, and a fix to it reaches both kinds of connection.
//!
//! To write a loop:
//!
//! 1. Put every variable the loop carries from one turn to the next in a struct, with an
//!    enum for where it stands when the next step depends on more than the variables.
//! 2. Give it an `Answer` enum with one variant per kind of operation it runs, and build
//!    each operation as `op.map(|x| Ok(Answer::Kind(x)))`.
//! 3. `step` reads the state and answers the next [`Step`]; `feed` takes the result of
//!    the last [`Step::Run`] (an `Err` too: the machine decides whether it passes) and
//!    moves the state on. Clock reads (`Instant::now()`) are fine in both: a deadline is
//!    the caller's, on this process's monotonic clock, whichever driver runs it.
//! 4. The public sync and async methods build the machine and hand it to a driver.
//!
//! A loop that also runs the caller's code (the worker's handlers) adds its own steps
//! for that and has drivers of its own (`work_queue::worker`), built the same way.

use std::time::Duration;

use crate::runtime::error::Result;
use crate::runtime::op::Op;

/// What a loop wants next.
pub(crate) enum Step<A, T> {
    /// Run this operation, then feed its result.
    Run(Op<A>),
    /// Pause this long, then ask again.
    Pause(Duration),
    /// The loop ended with this.
    Done(T),
}

/// A loop on one connection, without its I/O (see the [module docs](self)).
pub(crate) trait Machine {
    /// What each operation it runs answers, as one type.
    type Answer: 'static;
    /// What the loop ends with.
    type Output;
    /// What to do next.
    fn step(&mut self) -> Step<Self::Answer, Self::Output>;
    /// The result of the last [`Step::Run`].
    fn feed(&mut self, answer: Result<Self::Answer>);
}

/// A loop that runs each operation on several servers at once (Redlock), without its I/O.
pub(crate) trait Fanout {
    /// What each operation answers on one server.
    type Answer: 'static;
    /// What the loop ends with.
    type Output;
    /// What to do next; a [`Step::Run`] goes to every server.
    fn step(&mut self) -> Step<Self::Answer, Self::Output>;
    /// The results of the last [`Step::Run`], in the servers' order.
    fn feed(&mut self, answers: Vec<Result<Self::Answer>>);
}

/// Something a sync driver runs operations on: a connection, or one that opens itself
/// again after a failure (the worker's).
pub(crate) trait RunOps {
    fn run_op<T: 'static>(&mut self, op: &Op<T>) -> Result<T>;
}

impl RunOps for dyn redis::ConnectionLike + '_ {
    fn run_op<T: 'static>(&mut self, op: &Op<T>) -> Result<T> {
        op.run(self)
    }
}

/// Runs `machine` to its end, running its operations on `con`.
pub(crate) fn drive<M: Machine, R: RunOps + ?Sized>(machine: &mut M, con: &mut R) -> M::Output {
    loop {
        match machine.step() {
            Step::Run(op) => machine.feed(con.run_op(&op)),
            Step::Pause(pause) => std::thread::sleep(pause),
            Step::Done(output) => return output,
        }
    }
}

/// Runs `machine` to its end on an async connection.
#[cfg(feature = "aio")]
pub(crate) async fn drive_async<M, C>(machine: &mut M, con: &mut C) -> M::Output
where
    M: Machine,
    C: redis::aio::ConnectionLike,
{
    loop {
        match machine.step() {
            Step::Run(op) => machine.feed(op.run_async(con).await),
            Step::Pause(pause) => futures_timer::Delay::new(pause).await,
            Step::Done(output) => return output,
        }
    }
}

/// Runs `machine` to its end, each operation on every server at once (one scoped thread
/// each; inline for one server).
pub(crate) fn drive_each<M, C>(machine: &mut M, servers: &mut [C]) -> M::Output
where
    M: Fanout,
    M::Answer: Send,
    C: redis::ConnectionLike + Send,
{
    loop {
        match machine.step() {
            Step::Run(op) => machine.feed(on_each(servers, &op)),
            Step::Pause(pause) => std::thread::sleep(pause),
            Step::Done(output) => return output,
        }
    }
}

/// Runs `machine` to its end on async connections, each operation on every server at once.
#[cfg(feature = "aio")]
pub(crate) async fn drive_each_async<M, C>(machine: &mut M, servers: &mut [C]) -> M::Output
where
    M: Fanout,
    C: redis::aio::ConnectionLike,
{
    loop {
        match machine.step() {
            Step::Run(op) => {
                let runs = servers.iter_mut().map(|con| op.run_async(con));
                machine.feed(futures_util::future::join_all(runs).await);
            }
            Step::Pause(pause) => futures_timer::Delay::new(pause).await,
            Step::Done(output) => return output,
        }
    }
}

/// `op` on every server at once, one scoped thread each (inline for one server).
fn on_each<C, T>(servers: &mut [C], op: &Op<T>) -> Vec<Result<T>>
where
    C: redis::ConnectionLike + Send,
    T: Send + 'static,
{
    if let [con] = servers {
        return vec![op.run(con)];
    }
    std::thread::scope(|scope| {
        let threads: Vec<_> = servers
            .iter_mut()
            .map(|con| scope.spawn(move || op.run(con)))
            .collect();
        threads
            .into_iter()
            .map(|thread| {
                thread
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

/// The simplest loop: operations run one after another, each answer folded into a state
/// that may name the next operation (a walk that pages on, a sum over partitions).
pub(crate) struct Chain<A, S, F> {
    next: std::collections::VecDeque<Op<A>>,
    state: Option<S>,
    fold: F,
    failed: Option<crate::Error>,
}

impl<A, S, F> Chain<A, S, F>
where
    F: FnMut(&mut S, A) -> Result<Option<Op<A>>>,
{
    /// Runs `ops` in order, then each operation `fold` names, folding every answer into
    /// `state`.
    pub(crate) fn new(ops: impl IntoIterator<Item = Op<A>>, state: S, fold: F) -> Self {
        Chain {
            next: ops.into_iter().collect(),
            state: Some(state),
            fold,
            failed: None,
        }
    }
}

impl<A: 'static, S, F> Machine for Chain<A, S, F>
where
    F: FnMut(&mut S, A) -> Result<Option<Op<A>>>,
{
    type Answer = A;
    type Output = Result<S>;

    fn step(&mut self) -> Step<A, Result<S>> {
        if let Some(err) = self.failed.take() {
            return Step::Done(Err(err));
        }
        match self.next.pop_front() {
            Some(op) => Step::Run(op),
            None => Step::Done(Ok(self.state.take().expect("a chain ends once"))),
        }
    }

    fn feed(&mut self, answer: Result<A>) {
        let state = self.state.as_mut().expect("a chain ends once");
        match answer.and_then(|answer| (self.fold)(state, answer)) {
            Ok(Some(op)) => self.next.push_front(op),
            Ok(None) => {}
            Err(err) => {
                self.next.clear();
                self.failed = Some(err);
            }
        }
    }
}
