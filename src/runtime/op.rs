//! The one place that runs commands and scripts: an [`Op`] is built once and can run on a
//! sync connection, on an async one, or inside a [`Batch`](crate::Batch).

use std::fmt;
use std::sync::Arc;

use redis::{Cmd, FromRedisValue, Value};

use crate::runtime::error::{Error, Result};
use crate::runtime::script::Script;
use crate::runtime::show;

pub(crate) type Decode<T> = Arc<dyn Fn(Value) -> Result<T> + Send + Sync>;

/// For an operation that takes a value out of Redis (a pop): the command that puts the
/// value of a reply back where it was, sent when the reply does not decode, so that a
/// value the caller cannot read is never lost.
pub(crate) type Undo = Arc<dyn Fn(&Value) -> Option<Cmd> + Send + Sync>;

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
}

impl<T> Clone for Op<T> {
    fn clone(&self) -> Self {
        Op {
            request: self.request.clone(),
            decode: Arc::clone(&self.decode),
            undo: self.undo.clone(),
        }
    }
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

#[derive(Clone)]
pub(crate) enum Request {
    /// `EVALSHA` (or `EVALSHA_RO`) of `script`.
    Script { script: &'static Script, cmd: Cmd },
    /// Any other command.
    Native(Cmd),
}

impl Request {
    pub(crate) fn cmd(&self) -> &Cmd {
        match self {
            Request::Script { cmd, .. } | Request::Native(cmd) => cmd,
        }
    }

    pub(crate) fn into_cmd(self) -> Cmd {
        match self {
            Request::Script { cmd, .. } | Request::Native(cmd) => cmd,
        }
    }

    pub(crate) fn script(&self) -> Option<&'static Script> {
        match self {
            Request::Script { script, .. } => Some(script),
            Request::Native(_) => None,
        }
    }

    /// The key whose hash slot the command goes to, if it has keys: read from the command
    /// when a batch needs it, so that an op run alone pays nothing for it.
    pub(crate) fn route(&self) -> Option<&[u8]> {
        first_key(self.cmd())
    }
}

/// The first key of a command: its first argument, but for the few commands that the
/// crate sends whose keys sit elsewhere (after a key count, after `STREAMS`) or that have
/// none. All keys of one command share a slot (checked where it is built), so the first
/// decides where it goes.
fn first_key(cmd: &Cmd) -> Option<&[u8]> {
    let mut args = cmd.args_iter().map(|arg| match arg {
        redis::Arg::Simple(bytes) => bytes,
        _ => b"0",
    });
    let name = args.next()?.to_ascii_uppercase();
    match name.as_slice() {
        // `<numkeys> <key>...`, after the script or function for the EVAL family.
        b"SINTERCARD" | b"ZINTERCARD" | b"LMPOP" | b"ZMPOP" | b"ZUNION" | b"ZINTER" | b"ZDIFF"
        | b"EVAL" | b"EVALSHA" | b"EVAL_RO" | b"EVALSHA_RO" | b"FCALL" | b"FCALL_RO" => {
            if name.starts_with(b"EVAL") || name.starts_with(b"FCALL") {
                args.next()?;
            }
            let numkeys = args.next()?;
            (numkeys != b"0").then(|| args.next())?
        }
        b"XREAD" | b"XREADGROUP" => {
            let mut args = args.skip_while(|a| !a.eq_ignore_ascii_case(b"STREAMS"));
            args.next()?;
            args.next()
        }
        b"SCAN" | b"CLUSTER" | b"SCRIPT" | b"PING" | b"INFO" | b"TIME" | b"ECHO" | b"FUNCTION"
        | b"COMMAND" | b"CONFIG" | b"CLIENT" | b"DBSIZE" | b"RANDOMKEY" => None,
        _ => args.next(),
    }
}

/// The crate's error for a failed command: a script's declared code, a blocking
/// command's response timeout, or the Redis error as it is.
fn reply_error(request: &Request, err: redis::RedisError) -> Error {
    if err.is_timeout() {
        return response_timeout(request.cmd(), err);
    }
    server_error(request.script(), err)
}

/// A client-side timeout of a blocking command, which loses what the command pops later.
fn response_timeout(cmd: &Cmd, err: redis::RedisError) -> Error {
    let name = cmd.args_iter().next().and_then(|arg| match arg {
        redis::Arg::Simple(name) => Some(String::from_utf8_lossy(name).to_ascii_uppercase()),
        _ => None,
    });
    match name {
        Some(command)
            if err.is_timeout()
                && (command.starts_with("BL")
                    || command.starts_with("BR")
                    || command.starts_with("BZ")
                    || command == "XREAD"
                    || command == "XREADGROUP") =>
        {
            Error::ResponseTimeout {
                command,
                source: err,
            }
        }
        _ => Error::Redis(err),
    }
}

/// Turns an error reply into the crate's error: a script's declared code becomes
/// [`Error::Script`], anything else stays a Redis error.
pub(crate) fn server_error(script: Option<&'static Script>, err: redis::RedisError) -> Error {
    match (script, err.code()) {
        (Some(script), Some(code)) if script.declares_error(code) => Error::Script {
            script: script.name,
            path: script.path,
            code: code.to_owned(),
            message: err.detail().unwrap_or_default().to_owned(),
        },
        _ => Error::Redis(err),
    }
}

pub(crate) fn decode_as<T: FromRedisValue>(value: Value) -> Result<T> {
    Ok(T::from_redis_value(value)?)
}

/// How many times one operation sends `SCRIPT LOAD` and its `EVALSHA` again after a
/// `NOSCRIPT`: a flush can land between the load and the call, but not this many times in
/// a row unless something flushes continuously.
pub(crate) const NOSCRIPT_ATTEMPTS: usize = 5;

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
        }
    }

    /// The script this operation calls, if it calls one.
    pub fn script(&self) -> Option<&'static Script> {
        self.request.as_ref().ok().and_then(Request::script)
    }

    /// The command this operation sends, or `None` if its input was rejected.
    pub fn cmd(&self) -> Option<&Cmd> {
        self.request.as_ref().ok().map(Request::cmd)
    }

    /// Runs on a sync connection: `redis::Connection`, a cluster connection, a pooled one.
    ///
    /// A script runs with `EVALSHA` (`EVALSHA_RO` when it writes nothing). If the server
    /// answers `NOSCRIPT` (it restarted, failed over, or ran `SCRIPT FLUSH`), the call is
    /// sent again behind its script's `SCRIPT LOAD`, both in one round trip, as a
    /// [`Batch`](crate::Batch) sends them, up to five times; a call that got `NOSCRIPT`
    /// did not run, so nothing runs twice.
    pub fn run(&self, con: &mut dyn redis::ConnectionLike) -> Result<T> {
        let request = self.request.as_ref().map_err(Clone::clone)?;
        let reply = match request.cmd().query::<Value>(con) {
            Err(err) if is_noscript(&err) => crate::runtime::batch::run_one(request.clone(), con)?,
            reply => reply,
        };
        match self.decode_reply(reply.map_err(|err| reply_error(request, err))?) {
            (Err(err), Some(undo)) => Err(put_back(err, undo.query::<Value>(con))),
            (decoded, _) => decoded,
        }
    }

    /// Runs on an async connection: `MultiplexedConnection`, `ConnectionManager`, an async
    /// cluster connection, a pooled one. Same behaviour as [`run`](Self::run).
    #[cfg(feature = "aio")]
    pub async fn run_async<C>(&self, con: &mut C) -> Result<T>
    where
        C: redis::aio::ConnectionLike,
    {
        let request = self.request.as_ref().map_err(Clone::clone)?;
        let reply = match request.cmd().query_async::<Value>(con).await {
            Err(err) if is_noscript(&err) => {
                crate::runtime::batch::run_one_async(request.clone(), con).await?
            }
            reply => reply,
        };
        match self.decode_reply(reply.map_err(|err| reply_error(request, err))?) {
            (Err(err), Some(undo)) => Err(put_back(err, undo.query_async::<Value>(con).await)),
            (decoded, _) => decoded,
        }
    }
}

/// The error of a value that did not decode, after the command that put it back ran:
/// the decoding error when the value is back, else why it could not be put back.
pub(crate) fn put_back(err: Error, undone: redis::RedisResult<Value>) -> Error {
    match undone {
        Ok(_) => err,
        Err(undo_err) => Error::unexpected_reply(
            "a value taken out of Redis did not decode, and putting it back failed",
            format!("{err}; putting it back: {undo_err}"),
        ),
    }
}

fn is_noscript(err: &redis::RedisError) -> bool {
    err.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript)
}

/// `SCRIPT LOAD`: redis-rs sends it to every node of a cluster.
pub(crate) fn load_cmd(script: &Script) -> Cmd {
    let mut cmd = redis::cmd("SCRIPT");
    cmd.arg("LOAD").arg(script.source);
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_of(args: &[&str]) -> Option<String> {
        let mut cmd = redis::cmd(args[0]);
        cmd.arg(&args[1..]);
        first_key(&cmd).map(|k| String::from_utf8(k.to_vec()).unwrap())
    }

    #[test]
    fn first_keys_of_native_commands() {
        assert_eq!(key_of(&["GET", "a"]).as_deref(), Some("a"));
        assert_eq!(
            key_of(&["LMOVE", "a", "a", "LEFT", "RIGHT"]).as_deref(),
            Some("a")
        );
        assert_eq!(key_of(&["SINTERCARD", "2", "x", "y"]).as_deref(), Some("x"));
        assert_eq!(key_of(&["EVALSHA", "abc", "0"]), None);
        assert_eq!(
            key_of(&["EVALSHA", "abc", "1", "k", "a"]).as_deref(),
            Some("k")
        );
        assert_eq!(
            key_of(&["XREAD", "COUNT", "1", "STREAMS", "s", "0"]).as_deref(),
            Some("s")
        );
        assert_eq!(key_of(&["SCAN", "0", "MATCH", "x"]), None);
        assert_eq!(key_of(&["CLUSTER", "SHARDS"]), None);
    }
}
