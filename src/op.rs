//! The one place that runs commands and scripts: an [`Op`] is built once and can run on a
//! sync connection, on an async one, or inside a [`Batch`](crate::Batch).

use std::time::Duration;

use redis::{Cmd, FromRedisValue, ToRedisArgs, Value};

use crate::error::{Error, Result};
use crate::script::Script;

pub(crate) type Decode<T> = Box<dyn FnOnce(Value) -> Result<T> + Send>;

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
/// let visits = Counter::new("visits");
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
#[must_use = "an Op does nothing until it is run"]
pub struct Op<T> {
    pub(crate) request: Result<Request>,
    pub(crate) decode: Decode<T>,
}

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
}

/// Turns an error reply into the crate's error: a script's declared code becomes
/// [`Error::Script`], anything else stays a Redis error.
pub(crate) fn server_error(script: Option<&'static Script>, err: redis::RedisError) -> Error {
    match (script, err.code()) {
        (Some(script), Some(code)) if script.declares_error(code) => Error::Script {
            script: script.name,
            code: code.to_owned(),
            message: err.detail().unwrap_or_default().to_owned(),
        },
        _ => Error::Redis(err),
    }
}

fn decode_as<T: FromRedisValue>(value: Value) -> Result<T> {
    Ok(T::from_redis_value(value)?)
}

impl<T: FromRedisValue + 'static> Op<T> {
    /// A native command whose reply decodes straight into `T`.
    pub(crate) fn native(cmd: Cmd) -> Self {
        Op {
            request: Ok(Request::Native(cmd)),
            decode: Box::new(decode_as::<T>),
        }
    }
}

impl<T: 'static> Op<T> {
    /// An operation whose input was rejected: running it returns `err` without any I/O.
    pub(crate) fn rejected(err: Error) -> Self {
        Op {
            request: Err(err),
            // Only reachable through a Slot read from another batch's replies.
            decode: Box::new(|_| {
                Err(Error::unexpected_reply(
                    "no reply for a rejected operation",
                    "its input was rejected before it was sent",
                ))
            }),
        }
    }

    /// Builds the operation with `build`, or a rejected one if `build` fails.
    pub(crate) fn try_build(build: impl FnOnce() -> Result<Op<T>>) -> Self {
        build().unwrap_or_else(Op::rejected)
    }

    /// Post-processes the decoded reply.
    pub fn map<U: 'static>(self, f: impl FnOnce(T) -> Result<U> + Send + 'static) -> Op<U> {
        let decode = self.decode;
        Op {
            request: self.request,
            decode: Box::new(move |value| decode(value).and_then(f)),
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
    /// answers `NOSCRIPT` (it restarted, failed over, or ran `SCRIPT FLUSH`), the script
    /// is loaded with `SCRIPT LOAD` (on every node of a cluster) and sent once more.
    pub fn run(self, con: &mut dyn redis::ConnectionLike) -> Result<T> {
        let request = self.request?;
        let script = request.script();
        let reply = match request.cmd().query::<Value>(con) {
            Err(err) if is_noscript(&err) => match script {
                Some(script) => {
                    load_cmd(script).query::<Value>(con)?;
                    request.cmd().query::<Value>(con)
                }
                None => Err(err),
            },
            reply => reply,
        };
        (self.decode)(reply.map_err(|err| server_error(script, err))?)
    }

    /// Runs on an async connection: `MultiplexedConnection`, `ConnectionManager`, an async
    /// cluster connection, a pooled one. Same behaviour as [`run`](Self::run).
    pub async fn run_async<C>(self, con: &mut C) -> Result<T>
    where
        C: redis::aio::ConnectionLike,
    {
        let request = self.request?;
        let script = request.script();
        let reply = match request.cmd().query_async::<Value>(con).await {
            Err(err) if is_noscript(&err) => match script {
                Some(script) => {
                    load_cmd(script).query_async::<Value>(con).await?;
                    request.cmd().query_async::<Value>(con).await
                }
                None => Err(err),
            },
            reply => reply,
        };
        (self.decode)(reply.map_err(|err| server_error(script, err))?)
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

/// Builds a call of one script; the generated functions in [`crate::scripts`] use it, so
/// every script is called the same way.
#[doc(hidden)]
#[must_use]
pub struct ScriptCall {
    script: &'static Script,
    keys: Vec<Vec<u8>>,
    args: Vec<Vec<u8>>,
}

impl ScriptCall {
    /// Starts a call of `script`.
    pub fn new(script: &'static Script) -> Self {
        ScriptCall {
            script,
            keys: Vec::with_capacity(script.keys.len()),
            args: Vec::with_capacity(script.args.len()),
        }
    }

    /// Adds the next `KEYS` entry.
    pub fn key(mut self, key: &str) -> Self {
        self.keys.push(key.as_bytes().to_vec());
        self
    }

    /// Adds the remaining `KEYS` entries (a variadic `@key`).
    pub fn keys(mut self, keys: &[&str]) -> Self {
        self.keys.extend(keys.iter().map(|k| k.as_bytes().to_vec()));
        self
    }

    /// Adds the next `ARGV` entry (`string`, `bytes`, `int`, `uint`, `float`).
    pub fn arg(mut self, arg: impl ToRedisArgs) -> Self {
        self.args.extend(arg.to_redis_args());
        self
    }

    /// Adds the remaining `ARGV` entries (a variadic `@arg`).
    pub fn args<A: ToRedisArgs>(mut self, args: &[A]) -> Self {
        for arg in args {
            self.args.extend(arg.to_redis_args());
        }
        self
    }

    /// Adds a `bool` argument, sent as `1` or `0`.
    pub fn arg_bool(self, arg: bool) -> Self {
        self.arg(u8::from(arg))
    }

    /// Adds an `ms` argument: whole milliseconds, rounded down.
    pub fn arg_ms(self, arg: Duration) -> Self {
        self.arg(arg.as_millis().to_string())
    }

    /// Adds the remaining `bool` arguments (a variadic `@arg`).
    pub fn args_bool(self, args: &[bool]) -> Self {
        args.iter().fold(self, |call, &arg| call.arg_bool(arg))
    }

    /// Adds the remaining `ms` arguments (a variadic `@arg`).
    pub fn args_ms(self, args: &[Duration]) -> Self {
        args.iter().fold(self, |call, &arg| call.arg_ms(arg))
    }

    /// Adds a `json` argument: the value serialised as JSON text.
    ///
    /// # Panics
    ///
    /// If the value's `Serialize` implementation fails, which for plain data it never does.
    #[cfg(feature = "json")]
    pub fn arg_json(self, arg: &impl serde::Serialize) -> Self {
        let text = serde_json::to_string(arg).expect("a json argument failed to serialise");
        self.arg(text)
    }

    /// Adds the remaining `json` arguments (a variadic `@arg`).
    #[cfg(feature = "json")]
    pub fn args_json(self, args: &[impl serde::Serialize]) -> Self {
        args.iter().fold(self, |call, arg| call.arg_json(arg))
    }

    /// Finishes the call; the reply decodes into `T`.
    pub fn finish<T: FromRedisValue + 'static>(self) -> Op<T> {
        let script = self.script;
        let mut cmd = redis::cmd(if script.is_read_only() {
            "EVALSHA_RO"
        } else {
            "EVALSHA"
        });
        cmd.arg(script.sha1).arg(self.keys.len());
        for key in &self.keys {
            cmd.arg(key);
        }
        for arg in &self.args {
            cmd.arg(arg);
        }
        Op {
            request: Ok(Request::Script { script, cmd }),
            decode: Box::new(decode_as::<T>),
        }
    }
}
