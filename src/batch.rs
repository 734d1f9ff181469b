//! Several operations in one round trip: a pipeline, or a MULTI/EXEC transaction.

use std::marker::PhantomData;

use redis::{Pipeline, Value};

use crate::error::{Error, Result};
use crate::op::{Decode, Op, load_cmd, server_error};
use crate::script::Script;

/// Operations sent together as one pipeline, optionally as one MULTI/EXEC transaction.
///
/// A pipeline cannot recover from `NOSCRIPT` halfway (the commands before it have already
/// run), so [`run`](Self::run) first sends one `SCRIPT LOAD` for each distinct script the
/// batch calls, and only then the batch.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::{Batch, counter::{Counter, HashCounter}};
///
/// let client = redis::Client::open("redis://127.0.0.1/")?;
/// let mut con = client.get_connection()?;
///
/// let mut batch = Batch::transaction();
/// let views = batch.add(Counter::new("page:views").increase(1));
/// let likes = batch.add(HashCounter::new("page:stats", "likes").reset(0));
/// let mut replies = batch.run(&mut con)?;
/// println!("{} views, {} likes before the reset",
///     views.take(&mut replies)?, likes.take(&mut replies)?);
/// # Ok(()) }
/// ```
#[derive(Default)]
#[must_use = "a Batch does nothing until it is run"]
pub struct Batch {
    pipe: Pipeline,
    scripts: Vec<&'static Script>,
    rejected: Option<Error>,
    len: usize,
}

/// Where one operation's reply will be in a batch's [`Replies`].
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::{Batch, Slot, counter::Counter};
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let mut batch = Batch::new();
/// let views: Slot<i64> = batch.add(Counter::new("page:views").increase(1));
/// let mut replies = batch.run(&mut con)?;
/// let views: i64 = views.take(&mut replies)?; // decoded as the op's reply type
/// # Ok(()) }
/// ```
#[must_use = "a Slot is how the reply of its operation is read"]
pub struct Slot<T> {
    index: usize,
    script: Option<&'static Script>,
    decode: Decode<T>,
    _reply: PhantomData<fn() -> T>,
}

/// The replies of a batch, read through the [`Slot`]s that [`Batch::add`] returned.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::{Batch, counter::Counter};
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let views = Counter::new("page:views");
/// let mut batch = Batch::transaction();
/// let before = batch.add(views.get());
/// let after = batch.add(views.increase(5));
/// let mut replies = batch.run(&mut con)?;
/// // Slots may be read in any order; each reply is taken once.
/// assert_eq!(after.take(&mut replies)?, before.take(&mut replies)? + 5);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Replies {
    values: Vec<Option<Value>>,
}

impl Batch {
    /// A pipeline: one round trip, each command atomic on its own.
    pub fn new() -> Self {
        Self::default()
    }

    /// A MULTI/EXEC transaction: one round trip, all commands run together with no other
    /// client's command in between. Not available on a Redis Cluster.
    pub fn transaction() -> Self {
        let mut batch = Self::default();
        batch.pipe.atomic();
        batch
    }

    /// Adds `op`; its reply is read from the [`Replies`] with the returned [`Slot`].
    pub fn add<T>(&mut self, op: Op<T>) -> Slot<T> {
        let index = self.len;
        self.len += 1;
        let script = match op.request {
            Ok(request) => {
                let script = request.script();
                if let Some(script) = script
                    && !self.scripts.iter().any(|s| s.sha1 == script.sha1)
                {
                    self.scripts.push(script);
                }
                self.pipe.add_command(request.into_cmd());
                script
            }
            Err(err) => {
                // The first rejected input fails the whole batch before any I/O.
                self.rejected.get_or_insert(err);
                None
            }
        };
        Slot {
            index,
            script,
            decode: op.decode,
            _reply: PhantomData,
        }
    }

    /// How many operations the batch holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the batch holds no operation.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Runs the batch on a sync connection.
    pub fn run(mut self, con: &mut dyn redis::ConnectionLike) -> Result<Replies> {
        if let Some(err) = self.rejected.take() {
            return Err(err);
        }
        for script in &self.scripts {
            load_cmd(script).query::<Value>(con)?;
        }
        let values: Vec<Value> = self.pipe.ignore_errors().query(con)?;
        Ok(Replies::new(values))
    }

    /// Runs the batch on an async connection.
    pub async fn run_async<C>(mut self, con: &mut C) -> Result<Replies>
    where
        C: redis::aio::ConnectionLike,
    {
        if let Some(err) = self.rejected.take() {
            return Err(err);
        }
        for script in &self.scripts {
            load_cmd(script).query_async::<Value>(con).await?;
        }
        let values: Vec<Value> = self.pipe.ignore_errors().query_async(con).await?;
        Ok(Replies::new(values))
    }
}

impl Replies {
    fn new(values: Vec<Value>) -> Self {
        Replies {
            values: values.into_iter().map(Some).collect(),
        }
    }
}

impl<T> Slot<T> {
    /// Decodes this slot's reply, or returns the error its command got.
    pub fn take(self, replies: &mut Replies) -> Result<T> {
        let value = replies
            .values
            .get_mut(self.index)
            .and_then(Option::take)
            .ok_or_else(|| {
                Error::unexpected_reply(
                    "no reply for this slot",
                    "it was taken already, or belongs to another batch",
                )
            })?;
        let value = value
            .extract_error()
            .map_err(|err| server_error(self.script, err))?;
        (self.decode)(value)
    }
}
