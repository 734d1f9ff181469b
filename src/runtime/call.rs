//! Builds the call of one script, checking every key and argument against the script's
//! header before anything is sent. The generated functions in [`crate::scripts`] use it, so
//! every script is called, and checked, the same way.

use std::fmt;

use redis::FromRedisValue;

use crate::runtime::error::Error;
use crate::runtime::input;
use crate::runtime::input::ScriptArg;
use crate::runtime::op::Op;
use crate::runtime::request::{Request, decode_as};
use crate::runtime::script::{Param, Script};

/// A script call being built: keys and arguments in header order, each checked against its
/// `@key`/`@arg` line. The first value that breaks its rule makes [`finish`](Self::finish)
/// return an [`Op`] that fails with [`Error::InvalidInput`] when run, before any I/O.
///
/// Every function `redis-patterns-codegen` generates is one chain of these calls, for the
/// crate's scripts and for an app's own; call it by hand to build a call the generated
/// function does not offer.
///
/// ```
/// use std::time::Duration;
/// use redis_patterns::{Error, ScriptCall, scripts::identity_lock::EXTEND};
///
/// // What `scripts::identity_lock::extend(lock, token, ttl)` does.
/// let op = ScriptCall::new(&EXTEND)
///     .key("report:lock")
///     .arg("secret")
///     .arg(Duration::from_secs(30))
///     .finish::<bool>();
/// assert_eq!(op.script(), Some(&EXTEND));
///
/// // A value its header refuses: the op fails when run, before any I/O.
/// let op = ScriptCall::new(&EXTEND).key("report:lock").arg("").arg(Duration::ZERO);
/// let mut client = redis::Client::open("redis://127.0.0.1/")?;
/// match op.finish::<bool>().run(&mut client) {
///     Err(Error::InvalidInput { what: "token", .. }) => {}
///     other => panic!("expected a refused token, got {other:?}"),
/// }
/// # Ok::<(), redis_patterns::Error>(())
/// ```
#[must_use]
pub struct ScriptCall {
    script: &'static Script,
    keys: Vec<Vec<u8>>,
    args: Vec<Vec<u8>>,
    /// How many `@key`/`@arg` lines have been filled.
    next_key: usize,
    next_arg: usize,
    error: Option<Error>,
}

impl fmt::Debug for ScriptCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptCall")
            .field("script", &self.script.name)
            .field("keys", &self.keys.len())
            .field("args", &self.args.len())
            .field("error", &self.error)
            .finish()
    }
}

impl ScriptCall {
    /// Starts a call of `script`.
    pub fn new(script: &'static Script) -> Self {
        ScriptCall {
            script,
            keys: Vec::with_capacity(script.keys.len()),
            args: Vec::with_capacity(script.args.len()),
            next_key: 0,
            next_arg: 0,
            error: None,
        }
    }

    fn fail(&mut self, what: &'static str, why: String) {
        self.error.get_or_insert(Error::InvalidInput { what, why });
    }

    fn next_key(&mut self) -> Option<&'static Param> {
        let param = self.script.keys.get(self.next_key);
        self.next_key += 1;
        if param.is_none() {
            self.fail("keys", format!("{} declares fewer keys", self.script.path));
        }
        param
    }

    fn next_arg(&mut self) -> Option<&'static Param> {
        let param = self.script.args.get(self.next_arg);
        self.next_arg += 1;
        if param.is_none() {
            self.fail(
                "args",
                format!("{} declares fewer arguments", self.script.path),
            );
        }
        param
    }

    /// Adds the next `KEYS` entry.
    pub fn key(mut self, key: &str) -> Self {
        if self.next_key().is_some() {
            self.keys.push(key.as_bytes().to_vec());
        }
        self
    }

    /// Adds the remaining `KEYS` entries (a variadic `@key`), as many as it takes.
    pub fn keys(mut self, keys: &[&str]) -> Self {
        if let Some(param) = self.next_key() {
            match input::check_count(param, keys.len(), "keys") {
                Ok(()) => self.keys.extend(keys.iter().map(|k| k.as_bytes().to_vec())),
                Err(why) => self.fail(param.name, why),
            }
        }
        self
    }

    /// Adds the next `ARGV` entry, checked against its `@arg` line.
    pub fn arg(mut self, value: impl ScriptArg) -> Self {
        if let Some(param) = self.next_arg() {
            match value.encode(param) {
                Ok(bytes) => self.args.push(bytes),
                Err(why) => self.fail(param.name, why),
            }
        }
        self
    }

    /// Adds the remaining `ARGV` entries (a variadic `@arg`), each checked.
    pub fn args<A: ScriptArg>(mut self, values: &[A]) -> Self {
        let Some(param) = self.next_arg() else {
            return self;
        };
        if let Err(why) = input::check_count(param, values.len(), "values") {
            self.fail(param.name, why);
            return self;
        }
        for (i, value) in values.iter().enumerate() {
            match value.encode(param) {
                Ok(bytes) => self.args.push(bytes),
                Err(why) => {
                    self.fail(param.name, format!("value {i} {why}"));
                    break;
                }
            }
        }
        self
    }

    /// Adds a `json` argument: the value serialised as JSON text.
    #[cfg(feature = "json")]
    pub fn arg_json(self, value: &impl serde::Serialize) -> Self {
        match serde_json::to_string(value) {
            Ok(text) => self.arg(text.as_str()),
            Err(err) => self.json_failed(err),
        }
    }

    /// Adds the remaining `json` arguments (a variadic `@arg`).
    #[cfg(feature = "json")]
    pub fn args_json(self, values: &[impl serde::Serialize]) -> Self {
        match values
            .iter()
            .map(serde_json::to_string)
            .collect::<std::result::Result<Vec<_>, _>>()
        {
            Ok(texts) => {
                let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
                self.args(&texts)
            }
            Err(err) => self.json_failed(err),
        }
    }

    #[cfg(feature = "json")]
    fn json_failed(mut self, err: serde_json::Error) -> Self {
        if let Some(param) = self.next_arg() {
            self.fail(param.name, format!("does not serialise to JSON: {err}"));
        }
        self
    }

    /// Finishes the call; the reply decodes into `T`.
    pub fn finish<T: FromRedisValue + 'static>(self) -> Op<T> {
        if let Some(err) = self.error {
            return Op::rejected(err);
        }
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
        Op::from_parts(Ok(Request::Script { script, cmd }), decode_as::<T>)
    }
}
