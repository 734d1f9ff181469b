//! The one place that runs commands and scripts: an [`Op`] is built once and can run on a
//! sync connection, on an async one, or inside a [`Batch`](crate::Batch).

use std::fmt;
use std::sync::Arc;

use redis::{Cmd, FromRedisValue, Value};

use crate::runtime::durability::{Acks, Durability, Durable};
use crate::runtime::error::{Error, Result};
use crate::runtime::library;
use crate::runtime::request::{
    CallPlan, CallReply, Decode, Request, Undo, decode_as, put_back, reply_error,
};
use crate::runtime::script::Script;
use crate::runtime::show;
use crate::runtime::trace::Trace;
use crate::runtime::wire::{self, Action, Plan, Reply};

/// One operation of a pattern: a script call or a native command, with how its reply
/// decodes into `T`.
///
/// Nothing is sent until it runs:
///
/// ```no_run
/// # async fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::{Batch, counter::Counter};
///
/// let client = redis::Client::open("redis://127.0.0.1/")?;
/// let visits = Counter::new("visits")?;
///
/// // On a sync connection.
/// let mut con = client.get_connection()?;
/// let n = visits.increase(1).run(&mut con)?;
///
/// // Awaited on an async one (MultiplexedConnection, ConnectionManager, cluster, ...).
/// let mut con = client.get_multiplexed_async_connection().await?;
/// let n = visits.increase(1).run_async(&mut con).await?;
///
/// // Inside a pipeline.
/// let mut batch = Batch::new();
/// let a = batch.add(visits.increase(1));
/// let b = batch.add(visits.get());
/// let mut replies = batch.run_async(&mut con).await?;
/// let (a, b) = (a.take(&mut replies)?, b.take(&mut replies)?);
/// # Ok(()) }
/// ```
///
/// Input is checked when the `Op` is built: an invalid one fails with
/// [`Error::InvalidInput`] when run, before any I/O.
///
/// An `Op` is a value, as redis-rs's `Cmd` is: run it as often as needed (a retry, a
/// poll), clone it, log it with `{:?}`:
///
/// ```
/// use redis_patterns::counter::Counter;
///
/// let op = Counter::new("visits")?.increase(1);
/// assert_eq!(
///     format!("{op:?}"),
///     r#"Op { cmd: "INCRBY visits 1", script: None }"#
/// );
/// let again = op.clone(); // the same command, the same decoding
/// # let _ = again;
/// # Ok::<(), redis_patterns::Error>(())
/// ```
#[must_use = "an Op does nothing until it is run"]
pub struct Op<T> {
    pub(crate) request: Result<Request>,
    pub(crate) decode: Decode<T>,
    pub(crate) undo: Option<Undo>,
    /// How its script runs when it runs alone.
    pub(crate) mode: ScriptMode,
    /// What its write waits for, in the same round trip ([`Op::wait_for`]).
    pub(crate) wait: Option<Durability>,
}

impl<T> Clone for Op<T> {
    fn clone(&self) -> Self {
        Op {
            request: self.request.clone(),
            decode: Arc::clone(&self.decode),
            undo: self.undo.clone(),
            mode: self.mode,
            wait: self.wait,
        }
    }
}

/// How an operation runs its script: `EVALSHA` of the script, or `FCALL` of its function
/// in the crate's Functions library ([`catalog::FUNCTIONS`](crate::catalog::FUNCTIONS)).
/// Both give the same replies and the same errors.
///
/// Every operation runs with [`Eval`](ScriptMode::Eval) unless it was built with
/// [`Op::via`]. There is no process-wide setting: two libraries (or two parts of an
/// app) in one process may each choose, and the app's own places that run operations for
/// it take a mode of their own ([`Worker::via`](crate::work_queue::Worker::via),
/// [`Cache::via`](crate::cache::Cache::via) for `get_or_compute`,
/// [`Stats::via`](crate::stats::Stats::via) for `access_time`,
/// [`TimeSeries::via`](crate::time_series::TimeSeries::via) for its cleaning loops).
///
/// A [`Batch`](crate::Batch) always sends `EVALSHA`, whatever its operations' modes: a
/// transaction carries the `SCRIPT LOAD` of each script it calls inside its MULTI/EXEC,
/// so that it is never cut short by a missing script, and a plain pipeline loads the
/// scripts of the calls that got `NOSCRIPT`. With `FCALL`, the same guarantee would take
/// `FUNCTION LOAD` of the whole library (every script of the crate, over 300 kB
/// the server compiles) in every transaction, or a library missing mid-transaction.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::{ScriptMode, identity_lock::IdentityLock};
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let lock = IdentityLock::new("report:lock")?;
/// // This call through FCALL; the library is loaded on first use if the server lacks it.
/// lock.release("secret").via(ScriptMode::Functions).run(&mut con)?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScriptMode {
    /// `EVALSHA` (`EVALSHA_RO` for read-only scripts); on `NOSCRIPT`, `SCRIPT LOAD` and
    /// again.
    #[default]
    Eval,
    /// `FCALL` (`FCALL_RO` for read-only scripts) of the script's function; when the
    /// server lacks the library (a restart without persistence, `FUNCTION FLUSH`, a new
    /// shard), `FUNCTION LOAD REPLACE` of the library and again. Scripts that are not the
    /// crate's own (an app's, generated by `redis-patterns-codegen`) run with `EVALSHA`.
    Functions,
}

/// The command as `MONITOR` would show it (binary bytes escaped), the script's name, or
/// why the input was rejected.
impl<T> fmt::Debug for Op<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.request {
            Ok(request) => f
                .debug_struct("Op")
                .field("cmd", &show::command(request.cmd()))
                .field("script", &request.script().map(|s| s.name))
                .finish(),
            Err(err) => f.debug_struct("Op").field("rejected", err).finish(),
        }
    }
}

impl<T: FromRedisValue + 'static> Op<T> {
    /// A native command whose reply decodes straight into `T`.
    pub(crate) fn native(cmd: Cmd) -> Self {
        Op::from_parts(Ok(Request::Native(cmd)), decode_as::<T>)
    }
}

impl<T: 'static> Op<T> {
    pub(crate) fn from_parts(
        request: Result<Request>,
        decode: impl Fn(Value) -> Result<T> + Send + Sync + 'static,
    ) -> Self {
        Op {
            request,
            decode: Arc::new(decode),
            undo: None,
            mode: ScriptMode::Eval,
            wait: None,
        }
    }

    /// The same operation, which takes a value out of Redis: when a reply does not
    /// decode, `undo` gives the command that puts its value back, and the runtime sends it
    /// before returning the decoding error.
    pub(crate) fn with_undo(
        mut self,
        undo: impl Fn(&Value) -> Option<Cmd> + Send + Sync + 'static,
    ) -> Self {
        self.undo = Some(Arc::new(undo));
        self
    }

    /// Decodes a reply; when that fails, also gives the command that puts its value
    /// back, if the operation took one out.
    fn decode_reply(&self, value: Value) -> (Result<T>, Option<Cmd>) {
        let undo = self.undo.as_ref().and_then(|undo| undo(&value));
        match (self.decode)(value) {
            Ok(decoded) => (Ok(decoded), None),
            failed => (failed, undo),
        }
    }

    /// For a [`Batch`](crate::Batch), which decodes when a slot is read: the command that
    /// puts back the value of a reply that will not decode.
    pub(crate) fn repair(&self) -> Option<Undo> {
        let undo = self.undo.clone()?;
        let decode = Arc::clone(&self.decode);
        Some(Arc::new(move |value: &Value| {
            decode(value.clone())
                .is_err()
                .then(|| undo(value))
                .flatten()
        }))
    }

    /// An operation whose input was rejected: running it returns `err` without any I/O.
    pub(crate) fn rejected(err: Error) -> Self {
        Op {
            request: Err(err),
            // Only reachable through a Slot read from another batch's replies.
            decode: Arc::new(|_| {
                Err(Error::unexpected_reply(
                    "no reply for a rejected operation",
                    "its input was rejected before it was sent",
                ))
            }),
            undo: None,
            mode: ScriptMode::Eval,
            wait: None,
        }
    }

    /// Builds the operation with `build`, or a rejected one if `build` fails.
    pub(crate) fn try_build(build: impl FnOnce() -> Result<Op<T>>) -> Self {
        build().unwrap_or_else(Op::rejected)
    }

    /// Post-processes the decoded reply.
    pub fn map<U: 'static>(self, f: impl Fn(T) -> Result<U> + Send + Sync + 'static) -> Op<U> {
        let decode = self.decode;
        Op {
            request: self.request,
            decode: Arc::new(move |value| decode(value).and_then(&f)),
            undo: self.undo,
            mode: self.mode,
            wait: self.wait,
        }
    }

    /// The same operation, run with `mode` (the default is [`ScriptMode::Eval`]). A
    /// native command runs as it is either way.
    ///
    /// ```
    /// use redis_patterns::{ScriptMode, counter::Counter};
    ///
    /// let op = Counter::new("visits")?.increase(1).via(ScriptMode::Functions);
    /// assert_eq!(op.mode(), ScriptMode::Functions);
    /// # Ok::<(), redis_patterns::Error>(())
    /// ```
    pub fn via(mut self, mode: ScriptMode) -> Self {
        self.mode = mode;
        self
    }

    /// The `FCALL` of its script's function, when it calls one of the crate's scripts and
    /// runs with [`ScriptMode::Functions`].
    fn function_call(&self, request: &Request) -> Option<Cmd> {
        let script = request.script()?;
        if !self.runs_as_function(script) {
            return None;
        }
        let mut cmd = redis::cmd(if script.is_read_only() {
            "FCALL_RO"
        } else {
            "FCALL"
        });
        cmd.arg(library::function_name(script));
        // EVALSHA's arguments after the command and the SHA1: the key count, keys, args.
        for arg in request.cmd().args_iter().skip(2) {
            if let redis::Arg::Simple(bytes) = arg {
                cmd.arg(bytes);
            }
        }
        Some(cmd)
    }

    /// Whether `script` runs with `FCALL`: this operation runs with
    /// [`ScriptMode::Functions`], and the script is one of the crate's own.
    fn runs_as_function(&self, script: &'static Script) -> bool {
        self.mode == ScriptMode::Functions && library::is_own(script)
    }

    /// How its script runs when it runs alone ([`via`](Self::via)).
    pub fn mode(&self) -> ScriptMode {
        self.mode
    }

    /// The script this operation calls, if it calls one.
    pub fn script(&self) -> Option<&'static Script> {
        self.request.as_ref().ok().and_then(Request::script)
    }

    /// The command this operation sends, or `None` if its input was rejected.
    pub fn cmd(&self) -> Option<&Cmd> {
        self.request.as_ref().ok().map(Request::cmd)
    }

    /// The same operation, which then waits, in the same round trip, until `durability`
    /// is met or its timeout is up: `WAIT` for replicas to acknowledge the write, and
    /// `WAITAOF` for the append-only file to be fsynced (on servers that have it). The
    /// reply is the value, decoded as before, with what acknowledged it ([`Durable`]).
    ///
    /// Waiting never turns an applied write into an error: fewer replicas than asked, a
    /// server without `WAITAOF` ([`Aof::Unsupported`](crate::Aof::Unsupported)), or a
    /// refused `WAIT` are all reported in [`Durable::acks`], beside the value; check
    /// [`Durable::is_met`]. A reply that is an error (a script's declared error, a
    /// `WRONGTYPE`) is the operation's error, as without the wait.
    ///
    /// The `WAIT` goes on the connection that sent the write, right behind it (behind the
    /// call that actually ran, when a missing script or library was loaded first), so it
    /// waits for that write, on the node that took it: on a cluster connection the whole
    /// round trip goes to the node of the operation's key. On a multiplexed connection it
    /// waits for the connection's latest write, which may be another task's later one:
    /// never less than asked.
    ///
    /// ```no_run
    /// # fn demo() -> redis_patterns::Result<()> {
    /// use std::time::Duration;
    /// use redis_patterns::{Durability, work_queue::WorkQueue};
    ///
    /// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let queue = WorkQueue::new("emails")?;
    /// let added = queue
    ///     .add("welcome:42", "to=ann@example.com")
    ///     .wait_for(Durability::replicas(1).timeout(Duration::from_millis(500)))
    ///     .run(&mut con)?;
    /// if !added.is_met() {
    ///     // Applied on the primary, but no replica had it within 500 ms: a failover now
    ///     // could lose it. Retrying is safe here (the job id deduplicates).
    ///     eprintln!("job added, acknowledged by {} replicas", added.replicas());
    /// }
    /// let _state = added.value.state();
    /// # Ok(()) }
    /// ```
    ///
    /// A timeout of zero is refused ([`Error::InvalidInput`], before any I/O): `WAIT`
    /// takes it as "forever". Keep the connection's response timeout above the wait's.
    pub fn wait_for(self, durability: Durability) -> Op<Durable<T>> {
        if self.wait.is_some() {
            return Op::rejected(Error::invalid(
                "durability",
                "the operation already waits: call wait_for once",
            ));
        }
        if let (Ok(_), Err(err)) = (&self.request, durability.check()) {
            return Op::rejected(err);
        }
        let decode = self.decode;
        let undo = self.undo.map(|undo| -> Undo {
            Arc::new(move |value: &Value| match value {
                Value::Array(parts) => parts.first().and_then(|value| undo(value)),
                _ => None,
            })
        });
        Op {
            request: self.request,
            decode: Arc::new(move |value| {
                let (value, acks) = split_durable(value)?;
                Ok(Durable {
                    value: decode(value)?,
                    acks: Acks::from_replies(durability, acks),
                })
            }),
            undo,
            mode: self.mode,
            wait: Some(durability),
        }
    }

    /// The commands that follow the call in its round trip: its wait, if any.
    fn followers(&self) -> Vec<Cmd> {
        self.wait.map(|d| d.commands()).unwrap_or_default()
    }

    /// The reply that decodes: the call's own, or with a wait, the call's and the wait's
    /// replies as one array (split again by the decoder [`wait_for`](Self::wait_for) made).
    fn reply_value(&self, value: Value, acks: Vec<Value>) -> Value {
        if self.wait.is_some() {
            Value::Array(vec![value, Value::Array(acks)])
        } else {
            value
        }
    }

    /// Runs on a sync connection: `redis::Connection`, a cluster connection, a pooled one.
    ///
    /// A script runs with `EVALSHA` (`EVALSHA_RO` when it writes nothing). If the server
    /// answers `NOSCRIPT` (it restarted, failed over, or ran `SCRIPT FLUSH`), the call is
    /// sent again behind its script's `SCRIPT LOAD`, both in one round trip (a pipeline),
    /// up to five times; a call that got `NOSCRIPT` did not run, so nothing runs twice.
    ///
    /// With [`ScriptMode::Functions`] ([`via`](Self::via)), the crate's scripts run with
    /// `FCALL`/`FCALL_RO` instead; if the server lacks the
    /// library, the call is sent again right behind `FUNCTION LOAD REPLACE` of the
    /// library, in one round trip (a pipeline, not a transaction, so that a user without
    /// the `multi` permission recovers too), up to five times (a `FUNCTION FLUSH` can land
    /// between the load and the call). A call that found no function did not run, so
    /// nothing runs twice; if the load failed (a user without `function|load`), the error
    /// is the load's.
    ///
    /// Whenever `run` returns an error that the server answered, the operation did not
    /// run (or, for a script's declared error, wrote nothing).
    ///
    /// With the `tracing` feature, each run is a span (see [`crate::trace`]).
    pub fn run(&self, con: &mut dyn redis::ConnectionLike) -> Result<T> {
        let trace = self.trace();
        let result = trace.in_scope(|| self.run_traced(con, &trace));
        trace.finish(&result);
        result
    }

    /// The span of one run: the script, how it is sent, how many keys.
    fn trace(&self) -> Trace {
        let Ok(request) = &self.request else {
            return Trace::op("rejected", "none", 0);
        };
        let Some(script) = request.script() else {
            return Trace::op("native", "native", usize::from(request.route().is_some()));
        };
        let fcall = self.runs_as_function(script);
        // EVALSHA <sha1> <numkeys> …: the key count is the third argument.
        let keys = match request.cmd().args_iter().nth(2) {
            Some(redis::Arg::Simple(n)) => std::str::from_utf8(n).ok().and_then(|n| n.parse().ok()),
            _ => None,
        };
        Trace::op(
            script.name,
            if fcall { "FCALL" } else { "EVALSHA" },
            keys.unwrap_or(0),
        )
    }

    /// The plan of one run: the call with its recovery ([`CallPlan`]), then the
    /// decoding, and the put-back of a popped value that did not decode.
    fn plan<'a>(&'a self, packed: bool, trace: &'a Trace) -> Result<OpRun<'a, T>> {
        let request = self.request.as_ref().map_err(Clone::clone)?;
        let fcall = self.function_call(request);
        Ok(OpRun {
            op: self,
            request,
            call: CallPlan::new(request, fcall, self.followers(), packed, trace),
            undo: None,
            done: None,
        })
    }

    fn run_traced(&self, con: &mut dyn redis::ConnectionLike, trace: &Trace) -> Result<T> {
        // redis-rs's sync cluster connection takes a pipeline only packed.
        let mut plan = self.plan(wire::is_sync_cluster(con), trace)?;
        wire::drive(&mut plan, con)
    }

    /// Runs on an async connection: `MultiplexedConnection`, `ConnectionManager`, an async
    /// cluster connection, a pooled one. Same behaviour as [`run`](Self::run).
    #[cfg(feature = "aio")]
    pub async fn run_async<C>(&self, con: &mut C) -> Result<T>
    where
        C: redis::aio::ConnectionLike,
    {
        let trace = self.trace();
        let result = trace
            .instrument(async {
                let mut plan = self.plan(false, &trace)?;
                wire::drive_async(&mut plan, con).await
            })
            .await;
        trace.finish(&result);
        result
    }
}

/// One run of an [`Op`], without its I/O.
struct OpRun<'a, T> {
    op: &'a Op<T>,
    request: &'a Request,
    call: CallPlan<'a>,
    /// The command that puts back a value that did not decode, and the decoding error.
    undo: Option<(Cmd, Error)>,
    done: Option<Result<T>>,
}

/// Decodes the call's reply; with the command that puts back a popped value that did not
/// decode, to send before returning the error.
fn decode<T: 'static>(
    op: &Op<T>,
    request: &Request,
    (reply, acks): CallReply,
) -> (Result<T>, Option<Cmd>) {
    match reply {
        Ok(value) => op.decode_reply(op.reply_value(value, acks)),
        Err(err) => (Err(reply_error(request, err)), None),
    }
}

impl<T: 'static> Plan for OpRun<'_, T> {
    type Output = T;

    fn poll(&mut self) -> Action<'_, T> {
        if let Some(done) = self.done.take() {
            return Action::Done(done);
        }
        if self.undo.is_none() {
            match self.call.poll().send() {
                Ok(send) => return send,
                Err(Ok(reply)) => match decode(self.op, self.request, reply) {
                    (Err(err), Some(undo)) => self.undo = Some((undo, err)),
                    (decoded, _) => return Action::Done(decoded),
                },
                Err(Err(err)) => return Action::Done(Err(err)),
            }
        }
        match &self.undo {
            Some((cmd, _)) => Action::Cmd(cmd),
            None => unreachable!("set above"),
        }
    }

    fn feed(&mut self, reply: Reply) -> Result<()> {
        match (self.undo.take(), reply) {
            (Some((_, err)), Reply::One(undone)) => {
                self.done = Some(Err(put_back(err, undone)));
                Ok(())
            }
            (None, reply) => self.call.feed(reply),
            (Some((_, err)), Reply::Many(_)) => Err(err),
        }
    }
}

/// The value and the wait's replies of a reply made by [`Op::reply_value`].
fn split_durable(value: Value) -> Result<(Value, Vec<Value>)> {
    if let Value::Array(mut parts) = value
        && parts.len() == 2
        && let Some(Value::Array(acks)) = parts.pop()
        && let Some(value) = parts.pop()
    {
        return Ok((value, acks));
    }
    Err(Error::unexpected_reply(
        "a waiting operation's reply is not the call's and the wait's",
        "only the runtime of the operation that waits can decode it",
    ))
}
