//! The only code that does I/O for operations and batches: a plan (a state machine that
//! says which command or pipeline to send next and consumes its replies; see
//! [`request::CallPlan`](crate::runtime::request::CallPlan) and the batch's) is driven
//! by [`drive`] on a sync connection or [`drive_async`] on an async one. The recovery
//! loops (`NOSCRIPT`, a missing library, a flush between a load and a call) live in the
//! plans, once, so both kinds of connection recover alike.

use redis::{Cmd, Pipeline, Value};

use crate::runtime::error::Result;

/// What a plan wants next.
pub(crate) enum Action<'p, T> {
    /// Send one command.
    Cmd(&'p Cmd),
    /// Send a pipeline whose replies are all kept (`ignore_errors`).
    Pipe(&'p Pipeline),
    /// Send a pipeline packed, with `req_packed_commands`: for redis-rs's sync cluster
    /// connection, which routes it by its first command and takes no pipeline through
    /// `Pipeline::query`. An async connection sends it as a pipeline.
    Packed(&'p Pipeline),
    /// Finished.
    Done(Result<T>),
}

impl<'p, T> Action<'p, T> {
    /// What to send, for a plan that drives another: `Err` holds the inner plan's result.
    pub(crate) fn send<U>(self) -> std::result::Result<Action<'p, U>, Result<T>> {
        match self {
            Action::Cmd(cmd) => Ok(Action::Cmd(cmd)),
            Action::Pipe(pipe) => Ok(Action::Pipe(pipe)),
            Action::Packed(pipe) => Ok(Action::Packed(pipe)),
            Action::Done(result) => Err(result),
        }
    }
}

/// The answer to the last [`Action`].
pub(crate) enum Reply {
    /// To [`Action::Cmd`].
    One(redis::RedisResult<Value>),
    /// To [`Action::Pipe`] and [`Action::Packed`].
    Many(redis::RedisResult<Vec<Value>>),
}

/// A run of an operation or a batch, without its I/O.
pub(crate) trait Plan {
    type Output;
    /// What to send next, or the result.
    fn poll(&mut self) -> Action<'_, Self::Output>;
    /// The reply to what [`poll`](Self::poll) asked for; an error ends the run.
    fn feed(&mut self, reply: Reply) -> Result<()>;
}

/// Whether the sync connection is redis-rs's cluster connection, the one that takes no
/// pipeline through `Pipeline::query` (and answers the first error reply of a packed
/// pipeline for all of it).
pub(crate) fn is_sync_cluster(con: &dyn redis::ConnectionLike) -> bool {
    !con.supports_pipelining()
}

/// Runs `plan` on a sync connection.
pub(crate) fn drive<P: Plan>(
    plan: &mut P,
    con: &mut dyn redis::ConnectionLike,
) -> Result<P::Output> {
    loop {
        let reply = match plan.poll() {
            Action::Done(result) => return result,
            Action::Cmd(cmd) => Reply::One(cmd.query(con)),
            Action::Pipe(pipe) => Reply::Many(pipe.query(con)),
            Action::Packed(pipe) => {
                Reply::Many(con.req_packed_commands(&pipe.get_packed_pipeline(), 0, pipe.len()))
            }
        };
        plan.feed(reply)?;
    }
}

/// Runs `plan` on an async connection.
#[cfg(feature = "aio")]
pub(crate) async fn drive_async<P, C>(plan: &mut P, con: &mut C) -> Result<P::Output>
where
    P: Plan,
    C: redis::aio::ConnectionLike,
{
    loop {
        let reply = match plan.poll() {
            Action::Done(result) => return result,
            Action::Cmd(cmd) => Reply::One(cmd.query_async(con).await),
            Action::Pipe(pipe) | Action::Packed(pipe) => Reply::Many(pipe.query_async(con).await),
        };
        plan.feed(reply)?;
    }
}
