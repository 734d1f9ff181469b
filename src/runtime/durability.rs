//! Waiting, in the same round trip as a write, for replicas to acknowledge it (`WAIT`) and
//! for the append-only file to be fsynced (`WAITAOF`).

use std::time::Duration;

use redis::{Cmd, Value};

use crate::runtime::error::Error;

/// What a write waits for after it ran, in the same round trip: `N` replicas acknowledging
/// it (`WAIT`), and optionally the append-only file fsynced on the server and on replicas
/// (`WAITAOF`, Redis 7.2+ and Valkey), each for at most [`timeout`](Self::timeout).
///
/// Redis replicates asynchronously: a write acknowledged by the primary alone is lost if
/// the primary fails before a replica got it. Waiting narrows that window: a write that
/// `N` replicas acknowledged survives a failover to one of them. It does not make Redis
/// strongly consistent (a replica that acknowledged may still not be the one promoted, and
/// the write is applied on the primary whether or not the wait succeeds), so the answer
/// is a count, never an error: see [`Acks::is_met`].
///
/// Use it with [`Op::wait_for`](crate::Op::wait_for) and
/// [`Batch::wait_for`](crate::Batch::wait_for):
///
/// ```
/// use std::time::Duration;
/// use redis_patterns::Durability;
///
/// // One replica within half a second.
/// let one = Durability::replicas(1).timeout(Duration::from_millis(500));
/// // One replica, and the AOF fsynced here and on that replica.
/// let safer = Durability::replicas(1).aof_local().aof_replicas(1);
/// assert_eq!(safer.wanted_replicas(), 1);
/// # let _ = one;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Durability {
    replicas: u64,
    aof_local: bool,
    aof_replicas: u64,
    timeout: Duration,
}

/// How long a [`Durability`] waits unless told otherwise.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1);

impl Durability {
    /// Waits until `n` replicas acknowledged the write (`WAIT n`), for at most a second
    /// unless [`timeout`](Self::timeout) says otherwise. `0` waits for none: the reply
    /// then says how many already have it.
    pub fn replicas(n: u64) -> Self {
        Durability {
            replicas: n,
            aof_local: false,
            aof_replicas: 0,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// The longest wait, in whole milliseconds (rounded up). The write is applied either
    /// way; when the time is up, the reply says how many acknowledged. Zero is refused
    /// when the operation runs (for `WAIT` it means "forever").
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Also waits until the server fsynced the write to its append-only file
    /// (`WAITAOF 1 …`): the server must run with `appendonly yes`.
    pub fn aof_local(mut self) -> Self {
        self.aof_local = true;
        self
    }

    /// Also waits until `n` replicas fsynced the write to their append-only files
    /// (`WAITAOF … n …`).
    pub fn aof_replicas(mut self, n: u64) -> Self {
        self.aof_replicas = n;
        self
    }

    /// How many replicas must acknowledge the write.
    pub fn wanted_replicas(&self) -> u64 {
        self.replicas
    }

    /// Whether the local append-only file must be fsynced.
    pub fn wants_aof_local(&self) -> bool {
        self.aof_local
    }

    /// How many replicas must fsync their append-only file.
    pub fn wanted_aof_replicas(&self) -> u64 {
        self.aof_replicas
    }

    /// The longest wait.
    pub fn wait_timeout(&self) -> Duration {
        self.timeout
    }

    fn asks_aof(&self) -> bool {
        self.aof_local || self.aof_replicas > 0
    }

    /// The timeout in whole milliseconds, or why it is refused.
    fn timeout_ms(&self) -> Result<u64, Error> {
        let ms = self.timeout.as_nanos().div_ceil(1_000_000);
        if ms == 0 {
            return Err(Error::invalid(
                "timeout",
                "must be at least 1 ms: WAIT and WAITAOF take 0 as \"wait forever\"",
            ));
        }
        u64::try_from(ms)
            .ok()
            .filter(|&ms| ms <= i64::MAX as u64)
            .ok_or_else(|| Error::invalid("timeout", "must fit in a signed 64-bit count of ms"))
    }

    /// Checked before anything is sent.
    pub(crate) fn check(&self) -> Result<(), Error> {
        self.timeout_ms().map(|_| ())
    }

    /// `WAIT`, then `WAITAOF` when asked for: sent right after the write(s), on the same
    /// connection.
    pub(crate) fn commands(&self) -> Vec<Cmd> {
        let ms = self.timeout_ms().unwrap_or(1);
        let mut wait = redis::cmd("WAIT");
        wait.arg(self.replicas).arg(ms);
        let mut cmds = vec![wait];
        if self.asks_aof() {
            let mut waitaof = redis::cmd("WAITAOF");
            waitaof
                .arg(u64::from(self.aof_local))
                .arg(self.aof_replicas)
                .arg(ms);
            cmds.push(waitaof);
        }
        cmds
    }
}

/// What acknowledged a write: the replies of the `WAIT` (and `WAITAOF`) sent right after
/// it. Never an error: the write was applied either way. See [`is_met`](Self::is_met).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Acks {
    /// How many replicas acknowledged the write within the timeout (`WAIT`'s reply); 0
    /// when `WAIT` failed (see [`wait_error`](Self::wait_error)).
    pub replicas: u64,
    /// The append-only file: whether it was asked for, and what `WAITAOF` said.
    pub aof: Aof,
    /// `WAIT`'s error reply, if it failed: a user without the `wait` permission, or a
    /// server that is itself a replica.
    pub wait_error: Option<Error>,
    /// What was asked for.
    pub requested: Durability,
}

/// What `WAITAOF` said, in [`Acks::aof`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Aof {
    /// The [`Durability`] asked for no AOF fsync; no `WAITAOF` was sent.
    NotRequested,
    /// `WAITAOF`'s reply: whether the server fsynced the write (1 or 0), and how many
    /// replicas did, within the timeout.
    Fsynced {
        /// 1 when the server's own append-only file has the write fsynced.
        local: u64,
        /// How many replicas fsynced it.
        replicas: u64,
    },
    /// The server has no `WAITAOF` (Redis before 7.2): nothing is known about the fsync.
    Unsupported,
    /// `WAITAOF` failed: the server runs without `appendonly yes` while the local fsync
    /// was asked for, or the user lacks the `waitaof` permission.
    Failed(Error),
}

impl Acks {
    /// Whether everything asked for acknowledged the write: at least the replicas
    /// asked for, and the AOF fsyncs asked for (an [`Aof::Unsupported`] server meets no
    /// AOF demand).
    pub fn is_met(&self) -> bool {
        let wanted = &self.requested;
        let aof = match &self.aof {
            Aof::NotRequested => true,
            Aof::Fsynced { local, replicas } => {
                *local >= u64::from(wanted.aof_local) && *replicas >= wanted.aof_replicas
            }
            Aof::Unsupported | Aof::Failed(_) => !wanted.asks_aof(),
        };
        self.wait_error.is_none() && self.replicas >= wanted.replicas && aof
    }

    /// Reads the replies of [`Durability::commands`].
    pub(crate) fn from_replies(requested: Durability, replies: Vec<Value>) -> Acks {
        let mut replies = replies.into_iter();
        let (replicas, wait_error) = match replies.next() {
            Some(Value::Int(n)) => (u64::try_from(n).unwrap_or(0), None),
            other => (0, Some(unexpected("WAIT", other))),
        };
        let aof = if !requested.asks_aof() {
            Aof::NotRequested
        } else {
            match replies.next() {
                Some(Value::Array(counts)) => match counts.as_slice() {
                    [Value::Int(local), Value::Int(replicas)] => Aof::Fsynced {
                        local: u64::try_from(*local).unwrap_or(0),
                        replicas: u64::try_from(*replicas).unwrap_or(0),
                    },
                    _ => Aof::Failed(unexpected("WAITAOF", Some(Value::Array(counts)))),
                },
                Some(Value::ServerError(err)) if is_unknown_command(&err) => Aof::Unsupported,
                other => Aof::Failed(unexpected("WAITAOF", other)),
            }
        };
        Acks {
            replicas,
            aof,
            wait_error,
            requested,
        }
    }
}

/// `ERR unknown command 'WAITAOF'…`, as Redis before 7.2 answers.
fn is_unknown_command(err: &redis::ServerError) -> bool {
    err.code() == "ERR"
        && err
            .details()
            .is_some_and(|d| d.starts_with("unknown command"))
}

/// A reply to `WAIT`/`WAITAOF` that is not a count: its error, or what it was.
fn unexpected(command: &'static str, reply: Option<Value>) -> Error {
    match reply {
        Some(Value::ServerError(err)) => Error::Redis(err.into()),
        other => Error::unexpected_reply(
            if command == "WAIT" {
                "WAIT did not answer with a count"
            } else {
                "WAITAOF did not answer with two counts"
            },
            format!("{other:?}"),
        ),
    }
}

/// An operation's decoded reply, and what acknowledged its write: what
/// [`Op::wait_for`](crate::Op::wait_for) gives.
#[derive(Debug, Clone)]
pub struct Durable<T> {
    /// The operation's reply, decoded as without the wait.
    pub value: T,
    /// What acknowledged the write.
    pub acks: Acks,
}

impl<T> Durable<T> {
    /// Whether everything asked for acknowledged the write ([`Acks::is_met`]).
    pub fn is_met(&self) -> bool {
        self.acks.is_met()
    }

    /// How many replicas acknowledged the write.
    pub fn replicas(&self) -> u64 {
        self.acks.replicas
    }

    /// The value, without the acknowledgements.
    pub fn into_value(self) -> T {
        self.value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(cmds: &[Cmd]) -> Vec<String> {
        cmds.iter()
            .map(crate::runtime::show::command)
            .collect::<Vec<_>>()
    }

    #[test]
    fn commands_and_their_replies() {
        let d = Durability::replicas(2).timeout(Duration::from_micros(1500));
        assert_eq!(shown(&d.commands()), ["WAIT 2 2"]);
        let acks = Acks::from_replies(d, vec![Value::Int(1)]);
        assert_eq!(acks.replicas, 1);
        assert!(!acks.is_met());
        assert!(matches!(acks.aof, Aof::NotRequested));

        let d = Durability::replicas(1).aof_local().aof_replicas(1);
        assert_eq!(shown(&d.commands()), ["WAIT 1 1000", "WAITAOF 1 1 1000"]);
        let met = Acks::from_replies(
            d,
            vec![
                Value::Int(1),
                Value::Array(vec![Value::Int(1), Value::Int(1)]),
            ],
        );
        assert!(met.is_met());
    }

    /// An error reply, as the server sends it.
    fn error_reply(text: &str) -> Value {
        redis::parse_redis_value(format!("-{text}\r\n").as_bytes()).unwrap()
    }

    #[test]
    fn refusals_and_missing_commands_are_reported_not_raised() {
        let d = Durability::replicas(1).aof_local();
        let old_server = Acks::from_replies(
            d,
            vec![
                Value::Int(1),
                error_reply("ERR unknown command 'WAITAOF', with args beginning with: '1' "),
            ],
        );
        assert!(matches!(old_server.aof, Aof::Unsupported), "{old_server:?}");
        assert_eq!(old_server.replicas, 1);
        assert!(!old_server.is_met());

        let refused = Acks::from_replies(
            Durability::replicas(0),
            vec![error_reply(
                "NOPERM User app has no permissions to run the 'wait' command",
            )],
        );
        assert_eq!(refused.replicas, 0);
        assert_eq!(
            refused.wait_error.as_ref().and_then(Error::code),
            Some("NOPERM")
        );
        assert!(!refused.is_met());

        let no_aof = Acks::from_replies(
            d,
            vec![
                Value::Int(1),
                error_reply(
                    "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.",
                ),
            ],
        );
        assert!(matches!(no_aof.aof, Aof::Failed(_)), "{no_aof:?}");
    }

    #[test]
    fn a_zero_timeout_is_refused() {
        assert!(
            Durability::replicas(1)
                .timeout(Duration::ZERO)
                .check()
                .is_err()
        );
        assert!(Durability::replicas(1).check().is_ok());
    }
}
