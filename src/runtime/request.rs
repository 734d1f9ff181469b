//! A request (a script call or a native command) and everything that runs one: how its
//! reply and its errors decode, the loads that recover a missing script or library, and
//! [`CallPlan`], the one loop that runs a request alone, on every kind of connection.

use std::sync::Arc;

use redis::{Cmd, FromRedisValue, Pipeline, Value};

use crate::runtime::error::{Error, Result};
use crate::runtime::library;
use crate::runtime::script::Script;
use crate::runtime::trace::Trace;
use crate::runtime::wire::{Action, Plan, Reply};

/// How a reply decodes into an operation's type.
pub(crate) type Decode<T> = Arc<dyn Fn(Value) -> Result<T> + Send + Sync>;

/// For an operation that takes a value out of Redis (a pop): the command that puts the
/// value of a reply back where it was, sent when the reply does not decode, so that a
/// value the caller cannot read is never lost.
pub(crate) type Undo = Arc<dyn Fn(&Value) -> Option<Cmd> + Send + Sync>;

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
pub(crate) fn reply_error(request: &Request, err: redis::RedisError) -> Error {
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

pub(crate) fn is_noscript(err: &redis::RedisError) -> bool {
    err.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript)
}

/// A call's reply (its error reply as an error) and the replies of the commands that
/// followed it in its round trip (a wait).
pub(crate) type CallReply = (redis::RedisResult<Value>, Vec<Value>);

/// One request run alone, without its I/O (driven by [`wire`](crate::runtime::wire)).
///
/// The call goes first as it is (with its followers, a wait, in one pipeline). If the
/// server lacks its script (`NOSCRIPT`) or, for an `FCALL`, the crate's library, the call
/// is sent again right behind `SCRIPT LOAD` or `FUNCTION LOAD REPLACE`, in one round
/// trip, up to [`NOSCRIPT_ATTEMPTS`] times (a flush can land between the load and the
/// call). A call that found no script or function did not run, so nothing runs twice.
///
/// That round trip is a plain pipeline, not a transaction, so that a user without the
/// `multi` permission recovers too: each reply stands for its own command, and the
/// call's tells whether it ran; if the load failed (a user without `function|load`), the
/// error is the load's. On redis-rs's sync cluster connection (`packed`), which routes a
/// packed pipeline by its first command and answers its first error reply for all of it,
/// the round trip is `EXISTS <the call's key>` (so that it reaches the key's node), the
/// load, the call: an error is then the load's (the call found nothing) or the call's.
pub(crate) struct CallPlan<'a> {
    request: &'a Request,
    /// The `FCALL` of the request's script, when it runs as a function.
    fcall: Option<Cmd>,
    /// What follows the call in its round trip: a wait.
    followers: Vec<Cmd>,
    packed: bool,
    trace: &'a Trace,
    /// The round trip being sent, when it is a pipeline.
    pipe: Option<Pipeline>,
    /// How many round trips loaded and called again.
    reloads: usize,
    result: Option<Result<CallReply>>,
}

impl<'a> CallPlan<'a> {
    pub(crate) fn new(
        request: &'a Request,
        fcall: Option<Cmd>,
        followers: Vec<Cmd>,
        packed: bool,
        trace: &'a Trace,
    ) -> Self {
        let mut plan = CallPlan {
            request,
            fcall,
            followers,
            packed,
            trace,
            pipe: None,
            reloads: 0,
            result: None,
        };
        if packed && !plan.followers.is_empty() {
            plan.result = Some(Err(sync_cluster_wait()));
        } else if !plan.followers.is_empty() {
            plan.pipe = Some(round_trip(None, plan.call(), &plan.followers));
        }
        plan
    }

    fn call(&self) -> &Cmd {
        self.fcall.as_ref().unwrap_or(self.request.cmd())
    }

    /// Whether `err` says the server lacks what the call runs: then it did not run.
    fn is_missing(&self, err: &redis::RedisError) -> bool {
        if self.fcall.is_some() {
            is_missing_function(err)
        } else {
            self.request.script().is_some() && is_noscript(err)
        }
    }

    /// Sends the call again behind the load of what it lacked.
    fn reload(&mut self) {
        self.reloads += 1;
        if self.fcall.is_some() {
            self.trace.recovered("missing library");
        } else {
            self.trace.recovered("NOSCRIPT");
        }
        if self.reloads > 1 {
            return; // the same round trip again
        }
        let load = match (self.fcall.is_some(), self.request.script()) {
            (false, Some(script)) => load_cmd(script),
            _ => library::function_load(),
        };
        self.pipe = Some(if self.packed {
            let mut pipe = redis::pipe();
            if let Some(key) = self.request.route() {
                pipe.cmd("EXISTS").arg(key);
            }
            pipe.add_command(load).add_command(self.call().clone());
            pipe
        } else {
            round_trip(Some(load), self.call(), &self.followers)
        });
    }

    /// The reply of a round trip with a load, and whether to send it again.
    fn after_reload(&self, reply: Reply) -> Result<(CallReply, bool)> {
        let Reply::Many(replies) = reply else {
            return Err(unexpected_shape());
        };
        let (reply, acks) = if self.packed {
            match replies {
                Ok(mut replies) => (
                    replies.pop().unwrap_or(Value::Nil).extract_error(),
                    Vec::new(),
                ),
                Err(err) => (Err(err), Vec::new()),
            }
        } else {
            let mut replies = replies?;
            if replies.len() < 2 {
                return Err(Error::unexpected_reply(
                    "a pipeline got fewer replies than it sent commands",
                    format!("expected at least 2, got {}", replies.len()),
                ));
            }
            let load = std::mem::replace(&mut replies[0], Value::Nil);
            let (call, acks) = split_call(replies, 1)?;
            match (call, load) {
                // The call found nothing because the load failed: the load's error.
                (Err(err), Value::ServerError(load)) if self.is_missing(&err) => {
                    return Ok(((Err(load.into()), acks), false));
                }
                (call, _) => (call, acks),
            }
        };
        let again = matches!(&reply, Err(err) if self.is_missing(err));
        Ok(((reply, acks), again))
    }
}

impl Plan for CallPlan<'_> {
    type Output = CallReply;

    fn poll(&mut self) -> Action<'_, CallReply> {
        if let Some(result) = self.result.take() {
            return Action::Done(result);
        }
        match &self.pipe {
            Some(pipe) if self.packed => Action::Packed(pipe),
            Some(pipe) => Action::Pipe(pipe),
            None => Action::Cmd(self.call()),
        }
    }

    fn feed(&mut self, reply: Reply) -> Result<()> {
        if self.reloads > 0 {
            let (reply, again) = self.after_reload(reply)?;
            if again && self.reloads < NOSCRIPT_ATTEMPTS {
                self.reload();
            } else {
                self.result = Some(Ok(reply));
            }
            return Ok(());
        }
        let (reply, acks) = match reply {
            Reply::One(reply) => (reply, Vec::new()),
            Reply::Many(replies) => split_call(replies?, 0)?,
        };
        match &reply {
            Err(err) if self.is_missing(err) => self.reload(),
            _ => self.result = Some(Ok((reply, acks))),
        }
        Ok(())
    }
}

fn unexpected_shape() -> Error {
    Error::unexpected_reply(
        "a pipeline's replies came back as one command's",
        "the connection answered a pipeline with a single reply",
    )
}

/// One round trip for one call, as a plain pipeline whose replies are all kept: `load`,
/// the call, and its `followers` (a wait). Not for the sync cluster connection; an async
/// cluster connection sends it to the node of the call's key, the first command with one.
fn round_trip(load: Option<Cmd>, call: &Cmd, followers: &[Cmd]) -> Pipeline {
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    if let Some(load) = load {
        pipe.add_command(load);
    }
    pipe.add_command(call.clone());
    for cmd in followers {
        pipe.add_command(cmd.clone());
    }
    pipe
}

/// Why an operation or a batch that waits is refused on redis-rs's sync cluster
/// connection.
pub(crate) fn sync_cluster_wait() -> Error {
    Error::invalid(
        "durability",
        "redis-rs's sync cluster connection answers an error for a whole pipeline when any \
         of its commands failed, so a refused WAIT or WAITAOF would report a write that ran \
         as failed; wait on an async cluster connection (`cluster_async`), which sends the \
         write and its WAIT to the node of the write's key",
    )
}

/// The call's reply (at `at`) and the replies after it.
fn split_call(
    mut replies: Vec<Value>,
    at: usize,
) -> Result<(redis::RedisResult<Value>, Vec<Value>)> {
    if replies.len() <= at {
        return Err(Error::unexpected_reply(
            "a pipeline got fewer replies than it sent commands",
            format!("expected more than {at}, got {}", replies.len()),
        ));
    }
    let rest = replies.split_off(at + 1);
    let call = replies.pop().unwrap_or(Value::Nil).extract_error();
    Ok((call, rest))
}

/// `FCALL` of a function the server does not have: `ERR Function not found`.
pub(crate) fn is_missing_function(err: &redis::RedisError) -> bool {
    err.code() == Some("ERR")
        && err
            .detail()
            .is_some_and(|d| d.starts_with("Function not found"))
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
