//! Several operations in one round trip: a pipeline, or a MULTI/EXEC transaction. A
//! batch loads its scripts in band and is one round trip even right after a
//! `SCRIPT FLUSH`, except a pipeline whose operations all call one script: it sends its
//! calls alone and, after a flush, those calls again behind the load (see [`Batch`]).

use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};

use redis::{Cmd, Pipeline, Value};

use crate::runtime::durability::{Acks, Durability};
use crate::runtime::error::{Error, Result};
use crate::runtime::input::{hash_slot, hash_tag};
use crate::runtime::op::Op;
use crate::runtime::request::{
    Decode, NOSCRIPT_ATTEMPTS, Request, Undo, load_cmd, put_back, server_error, sync_cluster_wait,
};
use crate::runtime::script::Script;
use crate::runtime::trace::Trace;
use crate::runtime::wire::{self, Action, Plan, Reply};

/// Operations sent together in one round trip: a pipeline, or a MULTI/EXEC transaction.
///
/// A transaction is one round trip whatever the server's script cache holds: each
/// distinct script's `SCRIPT LOAD` goes first, inside the MULTI/EXEC, so the loads run in
/// the same atomic step as the calls and a transaction is applied whole or not at all,
/// never cut short by a missing script, even right after a `SCRIPT FLUSH`, a restart or a
/// failover.
///
/// A plain pipeline runs its operations in order, and is one round trip too: it loads
/// its scripts in band, in front of its calls, as a transaction does. One kind of
/// pipeline sends its calls alone (`EVALSHA`, as a raw pipeline would), so that it costs
/// what a raw pipeline costs: one whose operations all call the same script (a bulk of
/// releases, of adds). Right after a flush, a restart or a failover its calls got
/// `NOSCRIPT` and did not run; they are sent again behind the script's load in a second
/// round trip (up to five times, should flushes keep landing between the load and the
/// calls). They are all of the batch's calls, or its last ones when a flush landed
/// mid-way, so the order holds. [`load_all`](crate::load_all) at start-up spares that
/// second round trip until the server next loses its scripts. Sending any other pipeline
/// without its loads would let its native commands and other scripts' calls run before
/// the calls that got `NOSCRIPT`, out of order. In any pipeline another client's flush can
/// still land between a load and a call; the calls that got `NOSCRIPT` did not run, and
/// they alone are sent again, after the rest.
///
/// Replies decode when their [`Slot`]s are read. A pop whose value will not decode as
/// its slot's type has its value put back (where it was) before `run` returns, so a
/// slot's decoding error never loses a value; if putting it back fails, that slot's
/// error says so, and the other slots keep their replies.
///
/// On a Redis Cluster every operation of a batch must be in one hash slot (a batch runs on
/// one node): give the keys one hash tag, such as `{user:7}:cart` and `{user:7}:views`.
/// A batch that spans slots is refused before anything is sent. On a standalone server
/// any keys may share a batch. redis-rs's sync cluster connection answers the first error
/// reply of a pipeline for the whole of it: there a batch in which one operation fails
/// returns that error although the others ran (the async cluster connection gives each
/// operation its own reply).
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::{Batch, counter::{Counter, HashCounter}};
///
/// let client = redis::Client::open("redis://127.0.0.1/")?;
/// let mut con = client.get_connection()?;
///
/// let mut batch = Batch::transaction();
/// let views = batch.add(Counter::new("page:views")?.increase(1));
/// let likes = batch.add(HashCounter::new("page:stats", "likes")?.reset(0));
/// let mut replies = batch.run(&mut con)?;
/// println!("{} views, {} likes before the reset",
///     views.take(&mut replies)?, likes.take(&mut replies)?);
/// # Ok(()) }
/// ```
#[must_use = "a Batch does nothing until it is run"]
pub struct Batch {
    id: u64,
    atomic: bool,
    entries: Vec<Entry>,
    /// The distinct scripts the batch calls, in the order they are first used.
    scripts: Vec<&'static Script>,
    rejected: Option<Error>,
    /// The first operation with a key, and the first whose slot differs from its.
    first: Option<Keyed>,
    stray: Option<Keyed>,
    /// What the batch waits for after its writes ([`Batch::wait_for`]).
    wait: Option<Durability>,
}

/// The [`Slot`] index of the batch's wait, read from [`Replies::acks`].
const WAIT_SLOT: usize = usize::MAX;

/// Where each part of one round trip's replies is (see `Batch::pipeline`).
struct Layout {
    /// `EXISTS` of the first key, for the sync cluster connection.
    lead: usize,
    /// The scripts whose `SCRIPT LOAD` leads the operations, in order.
    loads: Vec<&'static Script>,
    /// How many operations.
    ops: usize,
    /// The wait's commands, after the operations (after `EXEC` in a transaction).
    waits: usize,
}

struct Entry {
    cmd: Cmd,
    script: Option<&'static Script>,
    /// For a pop: what puts back a value that will not decode (see `Op::repair`).
    repair: Option<Undo>,
}

/// An operation's place in the batch, its key and that key's hash slot.
struct Keyed {
    index: usize,
    key: String,
    slot: u16,
}

impl fmt::Debug for Batch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Batch")
            .field("transaction", &self.atomic)
            .field("len", &self.entries.len())
            .field(
                "scripts",
                &self.scripts.iter().map(|s| s.name).collect::<Vec<_>>(),
            )
            .field("rejected", &self.rejected)
            .finish_non_exhaustive()
    }
}

impl Default for Batch {
    fn default() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Batch {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            atomic: false,
            entries: Vec::new(),
            scripts: Vec::new(),
            rejected: None,
            first: None,
            stray: None,
            wait: None,
        }
    }
}

/// Where one operation's reply will be in a batch's [`Replies`].
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::{Batch, Slot, counter::Counter};
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let mut batch = Batch::new();
/// let views: Slot<i64> = batch.add(Counter::new("page:views")?.increase(1));
/// let mut replies = batch.run(&mut con)?;
/// let views: i64 = views.take(&mut replies)?; // decoded as the op's reply type
/// # Ok(()) }
/// ```
#[must_use = "a Slot is how the reply of its operation is read"]
pub struct Slot<T> {
    batch: u64,
    index: usize,
    script: Option<&'static Script>,
    decode: Decode<T>,
    _reply: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for Slot<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Slot")
            .field("index", &self.index)
            .field("script", &self.script.map(|s| s.name))
            .finish_non_exhaustive()
    }
}

/// The replies of a batch, read through the [`Slot`]s that [`Batch::add`] returned.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::{Batch, counter::Counter};
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let views = Counter::new("page:views")?;
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
    batch: u64,
    values: Vec<Option<Value>>,
    /// The replies of the batch's wait, if it waits.
    acks: Option<Vec<Value>>,
    /// The slots whose value did not decode and could not be put back, and why.
    not_put_back: Vec<(usize, redis::RedisError)>,
}

impl Batch {
    /// A pipeline: each command atomic on its own; one round trip while the server has
    /// the scripts it calls, two right after it lost them (see [`Batch`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// A MULTI/EXEC transaction: one round trip, all commands run together with no other
    /// client's command in between, and never only some of them. On a Redis Cluster all
    /// its keys must share one hash slot, as for any batch.
    ///
    /// The user needs the `multi` and `exec` permissions. A server that refuses `MULTI`
    /// runs the queued commands anyway, one by one: the batch reads `MULTI`'s reply and
    /// then fails with [`Error::RanOutsideTransaction`], which says so (their effects
    /// stay; nothing is sent again).
    pub fn transaction() -> Self {
        Batch {
            atomic: true,
            ..Self::default()
        }
    }

    /// Adds a request that was built without error; returns its script, if any.
    fn push(&mut self, request: Request) -> Option<&'static Script> {
        let index = self.entries.len();
        let script = request.script();
        if let Some(script) = script
            && !self.scripts.iter().any(|s| s.sha1 == script.sha1)
        {
            self.scripts.push(script);
        }
        if let Some(key) = request.route() {
            let slot = hash_slot(key);
            // The key is kept only for the first op and the first in another slot.
            let keyed = || Keyed {
                index,
                key: String::from_utf8_lossy(key).into_owned(),
                slot,
            };
            match &self.first {
                None => self.first = Some(keyed()),
                Some(first) if first.slot != slot && self.stray.is_none() => {
                    self.stray = Some(keyed());
                }
                Some(_) => {}
            }
        }
        self.entries.push(Entry {
            cmd: request.into_cmd(),
            script,
            repair: None,
        });
        script
    }

    /// Adds `op`; its reply is read from the [`Replies`] with the returned [`Slot`].
    pub fn add<T: 'static>(&mut self, op: Op<T>) -> Slot<T> {
        let index = self.entries.len();
        let repair = op.repair();
        let request = match (op.request, op.wait) {
            (Ok(_), Some(_)) => Err(Error::invalid(
                "op",
                "an operation that waits (Op::wait_for) runs alone; in a batch, call \
                 Batch::wait_for, which waits once after all its operations",
            )),
            (request, _) => request,
        };
        let script = match request {
            Ok(request) => {
                let script = self.push(request);
                self.entries[index].repair = repair;
                script
            }
            Err(err) => {
                // The first rejected input fails the whole batch before any I/O.
                self.rejected.get_or_insert(err);
                self.entries.push(Entry {
                    cmd: redis::cmd("PING"),
                    script: None,
                    repair: None,
                });
                None
            }
        };
        Slot {
            batch: self.id,
            index,
            script,
            decode: op.decode,
            _reply: PhantomData,
        }
    }

    /// Waits, in the same round trip, after the batch's operations, until `durability` is
    /// met or its timeout is up: `WAIT` for replicas to acknowledge the batch's writes, and
    /// `WAITAOF` for the append-only file (on servers that have it). The returned slot
    /// reads what acknowledged them; the wait covers every operation of the batch,
    /// whenever `wait_for` was called.
    ///
    /// In a transaction the wait follows `EXEC` (inside MULTI/EXEC, `WAIT` would answer at
    /// once, without waiting). In a plain pipeline whose call got `NOSCRIPT` and was sent
    /// again, the wait is sent again behind it and the slot reads the later one, which
    /// covers every write of the batch. As for [`Op::wait_for`](crate::Op::wait_for),
    /// what acknowledged is a count, never an error. A batch waits once: a second
    /// `wait_for` fails the batch with [`Error::InvalidInput`] before any I/O, as does a
    /// zero timeout.
    ///
    /// ```no_run
    /// # fn demo() -> redis_patterns::Result<()> {
    /// use redis_patterns::{Batch, Durability, counter::Counter};
    ///
    /// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let mut batch = Batch::transaction();
    /// let views = batch.add(Counter::new("{page:7}:views")?.increase(1));
    /// let likes = batch.add(Counter::new("{page:7}:likes")?.increase(1));
    /// let acks = batch.wait_for(Durability::replicas(1));
    /// let mut replies = batch.run(&mut con)?;
    /// let (views, likes) = (views.take(&mut replies)?, likes.take(&mut replies)?);
    /// let acks = acks.take(&mut replies)?;
    /// println!("{views} views, {likes} likes, on {} replicas", acks.replicas);
    /// # Ok(()) }
    /// ```
    pub fn wait_for(&mut self, durability: Durability) -> Slot<Acks> {
        if self.wait.is_some() {
            self.rejected.get_or_insert(Error::invalid(
                "durability",
                "the batch already waits: call wait_for once",
            ));
        } else if let Err(err) = durability.check() {
            self.rejected.get_or_insert(err);
        }
        self.wait = Some(durability);
        Slot {
            batch: self.id,
            index: WAIT_SLOT,
            script: None,
            decode: std::sync::Arc::new(move |value| match value {
                Value::Array(acks) => Ok(Acks::from_replies(durability, acks)),
                other => Err(Error::unexpected_reply(
                    "the replies of a batch's wait are not an array",
                    format!("{other:?}"),
                )),
            }),
            _reply: PhantomData,
        }
    }

    /// How many operations the batch holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the batch holds no operation.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether every operation calls the same script (and none is a native command).
    fn calls_one_script(&self) -> bool {
        self.scripts.len() == 1 && self.entries.iter().all(|entry| entry.script.is_some())
    }

    /// The error a cluster gets for a batch over several hash slots, before any I/O.
    fn cross_slot(&self) -> Option<Error> {
        let (first, stray) = (self.first.as_ref()?, self.stray.as_ref()?);
        // The first key's own hash tag when it has one, so the example stays one tag.
        let tag =
            String::from_utf8_lossy(hash_tag(first.key.as_bytes()).unwrap_or(first.key.as_bytes()));
        Some(Error::invalid(
            "batch",
            format!(
                "operation {} uses `{}` (hash slot {}) and operation {} uses `{}` (hash slot {}); \
                 a batch runs on one cluster node, so its keys must share a hash slot: give \
                 them one hash tag, as in `{{{}}}:a` and `{{{}}}:b`",
                first.index, first.key, first.slot, stray.index, stray.key, stray.slot, tag, tag
            ),
        ))
    }

    /// The round trip that runs the operations at `indices`, as a plain pipeline whose
    /// replies are all kept: `EXISTS` of the first key when `anchor` (see `run`), then for
    /// a transaction `MULTI`, when `loads` the loads of their scripts (`BatchRun::poll`
    /// says when), the operations (whose commands are moved out of the batch; a retry
    /// takes them back from the pipeline that sent them), `EXEC`, and last the wait, if
    /// the batch waits.
    ///
    /// A transaction is sent as `MULTI` … `EXEC` commands of a plain pipeline rather than
    /// as redis-rs's atomic pipeline, so that the reply of `MULTI` itself is read: a
    /// server that refused it (a user without the `multi` permission) ran the rest one by
    /// one, and `settle` says so.
    fn pipeline(&mut self, indices: &[usize], anchor: bool, loads: bool) -> (Pipeline, Layout) {
        // Every command it will hold, so that adding them never reallocates.
        let mut pipe = Pipeline::with_capacity(
            usize::from(anchor)
                + 2
                + if loads { self.scripts.len() } else { 0 }
                + indices.len()
                + usize::from(self.wait.is_some()) * 2,
        );
        pipe.ignore_errors();
        let mut layout = Layout {
            lead: 0,
            loads: Vec::new(),
            ops: indices.len(),
            waits: 0,
        };
        if anchor && let Some(first) = &self.first {
            pipe.cmd("EXISTS").arg(first.key.as_bytes());
            layout.lead = 1;
        }
        if self.atomic {
            pipe.cmd("MULTI");
        }
        if loads {
            for script in &self.scripts {
                if indices
                    .iter()
                    .any(|&i| self.entries[i].script == Some(*script))
                {
                    pipe.add_command(load_cmd(script));
                    layout.loads.push(script);
                }
            }
        }
        for &i in indices {
            pipe.add_command(std::mem::replace(&mut self.entries[i].cmd, Cmd::new()));
        }
        if self.atomic {
            pipe.cmd("EXEC");
        }
        if let Some(wait) = &self.wait {
            for cmd in wait.commands() {
                pipe.add_command(cmd);
                layout.waits += 1;
            }
        }
        (pipe, layout)
    }

    /// Puts back the commands of the operations `again`, which were sent with `pipe` as
    /// the operations `sent`, for a retry (only a plain pipeline retries).
    fn restore(&mut self, pipe: &Pipeline, layout: &Layout, sent: &[usize], again: &[usize]) {
        if again.is_empty() {
            return;
        }
        let skip = layout.lead + layout.loads.len();
        for (&i, cmd) in sent.iter().zip(pipe.cmd_iter().skip(skip)) {
            if again.contains(&i) {
                self.entries[i].cmd = cmd.clone();
            }
        }
    }

    /// Runs the batch on a sync connection: `redis::Connection`, a cluster connection, a
    /// pooled one. With the `tracing` feature, each run is a span (see [`crate::trace`]).
    pub fn run(self, con: &mut dyn redis::ConnectionLike) -> Result<Replies> {
        let trace = Trace::batch(self.entries.len(), self.atomic);
        let result = trace.in_scope(|| {
            // redis-rs's sync cluster connection takes a pipeline only packed, and routes
            // it by its first command.
            let mut plan = self.plan(wire::is_sync_cluster(con), &trace)?;
            wire::drive(&mut plan, con)
        });
        trace.finish(&result);
        result
    }

    /// Runs the batch on an async connection: `MultiplexedConnection`,
    /// `ConnectionManager`, an async cluster connection, a pooled one.
    #[cfg(feature = "aio")]
    pub async fn run_async<C>(self, con: &mut C) -> Result<Replies>
    where
        C: redis::aio::ConnectionLike,
    {
        let trace = Trace::batch(self.entries.len(), self.atomic);
        let result = trace
            .instrument(async {
                let mut plan = self.plan(false, &trace)?;
                wire::drive_async(&mut plan, con).await
            })
            .await;
        trace.finish(&result);
        result
    }

    /// The plan of one run, or why the batch is refused before any I/O. `packed`: on
    /// redis-rs's sync cluster connection.
    fn plan(mut self, packed: bool, trace: &Trace) -> Result<BatchRun<'_>> {
        if let Some(err) = self.rejected.take() {
            return Err(err);
        }
        if packed && let Some(err) = self.cross_slot() {
            return Err(err);
        }
        if packed && self.wait.is_some() {
            return Err(sync_cluster_wait());
        }
        Ok(BatchRun {
            values: vec![None; self.entries.len()],
            pending: (0..self.entries.len()).collect(),
            batch: self,
            packed,
            trace,
            acks: None,
            attempt: 0,
            sent: None,
            replies: None,
            undo: Vec::new(),
        })
    }

    /// The commands that put back the values popped by this batch that will not decode
    /// (their slots then fail with the decoding error), in reverse order, so that values
    /// popped from one end go back in the order they were. Sent one by one: this is the
    /// rare path, and it runs on every kind of connection. A put-back that fails is
    /// that slot's error, not the batch's: the other operations ran.
    fn undo(&self, replies: &Replies) -> Vec<(usize, Cmd)> {
        self.entries
            .iter()
            .zip(&replies.values)
            .enumerate()
            .rev()
            .filter_map(|(index, (entry, value))| {
                let repair = entry.repair.as_ref()?;
                repair(value.as_ref()?).map(|cmd| (index, cmd))
            })
            .collect()
    }

    /// Files the replies of the operations at `sent` into `values` and the wait's into
    /// `acks`; returns those that got `NOSCRIPT` in a plain pipeline while their script's
    /// load succeeded (they did not run, and are sent again). A call whose script's load
    /// failed gets the load's error (it did not run either).
    fn settle(
        &self,
        sent: &[usize],
        replies: Vec<Value>,
        layout: &Layout,
        values: &mut [Option<Value>],
        acks: &mut Option<Vec<Value>>,
    ) -> Result<Vec<usize>> {
        let framing = if self.atomic { 2 } else { 0 };
        let expected = layout.lead + framing + layout.loads.len() + layout.ops + layout.waits;
        if replies.len() != expected {
            return Err(Error::unexpected_reply(
                "a batch got another number of replies than it sent commands",
                format!("sent {expected}, got {}", replies.len()),
            ));
        }
        let mut replies = replies.into_iter().skip(layout.lead);
        let again = if self.atomic {
            let items = self.unwrap_transaction(&mut replies, layout)?;
            self.file(sent, items.into_iter(), layout, values)
        } else {
            let results = replies.by_ref().take(layout.loads.len() + layout.ops);
            self.file(sent, results, layout, values)
        };
        *acks = self.wait.is_some().then(|| replies.collect());
        Ok(again)
    }

    /// Files `results` (the loads' replies, then the calls') into `values`; returns the
    /// calls to send again (see [`settle`](Self::settle)).
    fn file(
        &self,
        sent: &[usize],
        mut results: impl Iterator<Item = Value>,
        layout: &Layout,
        values: &mut [Option<Value>],
    ) -> Vec<usize> {
        // Empty, without allocating, when the round trip loaded nothing.
        let loads: Vec<Value> = results.by_ref().take(layout.loads.len()).collect();
        let mut again = Vec::new();
        for (&index, value) in sent.iter().zip(results) {
            let missing_script = matches!(&value, Value::ServerError(e)
                if e.kind() == Some(redis::ServerErrorKind::NoScript));
            if !missing_script {
                values[index] = Some(value);
                continue;
            }
            let failed_load = self.entries[index].script.and_then(|script| {
                let at = layout.loads.iter().position(|s| s.sha1 == script.sha1)?;
                matches!(loads[at], Value::ServerError(_)).then(|| loads[at].clone())
            });
            values[index] = Some(match failed_load {
                Some(load) => load,
                None if !self.atomic => {
                    again.push(index);
                    value
                }
                None => value,
            });
        }
        again
    }

    /// The replies of the loads and the operations of a transaction, from `EXEC`'s;
    /// `replies` starts at `MULTI`'s and is left at the first reply after `EXEC`'s.
    fn unwrap_transaction(
        &self,
        replies: &mut impl Iterator<Item = Value>,
        layout: &Layout,
    ) -> Result<Vec<Value>> {
        let queued_count = layout.loads.len() + layout.ops;
        let multi = replies.next();
        // The first command refused while queued, if any: why EXEC discarded them all.
        let mut refused = None;
        for queued in replies.by_ref().take(queued_count) {
            if let (None, Value::ServerError(err)) = (&refused, queued) {
                refused = Some(err);
            }
        }
        let exec = replies.next();
        if let Some(Value::ServerError(refused)) = multi {
            return Err(Error::RanOutsideTransaction {
                refused: refused.into(),
                commands: queued_count,
            });
        }
        match exec {
            Some(Value::Array(items)) if items.len() == queued_count => Ok(items),
            // Discarded (EXECABORT) because a command was refused while queued: nothing
            // ran. The first refusal says why (a NOPERM, a wrong number of arguments).
            Some(Value::ServerError(err)) => Err(Error::Redis(refused.unwrap_or(err).into())),
            other => Err(Error::unexpected_reply(
                "EXEC did not answer with the transaction's replies",
                format!("{other:?}"),
            )),
        }
    }
}

/// `NOPERM` for `MULTI`.
fn is_refused_multi(err: &redis::RedisError) -> bool {
    err.code() == Some("NOPERM") && err.detail().is_some_and(|d| d.contains("'multi'"))
}

/// One run of a batch, without its I/O: round trips until no call is left to send again,
/// then the put-backs of popped values that will not decode, one by one (the rare path,
/// on every kind of connection; a put-back that fails is that slot's error, not the
/// batch's: the other operations ran).
struct BatchRun<'a> {
    batch: Batch,
    /// On redis-rs's sync cluster connection.
    packed: bool,
    trace: &'a Trace,
    values: Vec<Option<Value>>,
    acks: Option<Vec<Value>>,
    /// The operations still to send.
    pending: Vec<usize>,
    /// Round trips sent so far.
    attempt: usize,
    /// The round trip awaiting its replies.
    sent: Option<(Pipeline, Layout)>,
    /// Set after the last round trip.
    replies: Option<Replies>,
    /// The put-backs still to send, the next one last.
    undo: Vec<(usize, Cmd)>,
}

impl Plan for BatchRun<'_> {
    type Output = Replies;

    fn poll(&mut self) -> Action<'_, Replies> {
        if self.replies.is_none() && (self.pending.is_empty() || self.attempt > NOSCRIPT_ATTEMPTS) {
            let values = std::mem::take(&mut self.values);
            let replies = Replies::new(self.batch.id, values, self.acks.take());
            self.undo = self.batch.undo(&replies);
            self.undo.reverse();
            self.replies = Some(replies);
        }
        if let Some(replies) = &mut self.replies {
            return match self.undo.last() {
                Some((_, cmd)) => Action::Cmd(cmd),
                None => Action::Done(Ok(std::mem::replace(
                    replies,
                    Replies::new(self.batch.id, Vec::new(), None),
                ))),
            };
        }
        if self.attempt > 0 {
            self.trace.recovered("NOSCRIPT");
        }
        // A transaction loads its scripts inside itself, so that it is never cut short by
        // a missing one; so does a pipeline on the sync cluster connection, which answers
        // one error for a whole pipeline (a NOSCRIPT there would hide which calls ran), a
        // pipeline that waits (a WAIT behind calls that did not run would wait for
        // nothing, up to its timeout), and a pipeline of several scripts or with native
        // commands (those would run before the calls that got NOSCRIPT, out of the
        // batch's order). A pipeline whose operations all call one script sends its calls
        // alone: the calls that got NOSCRIPT are all of them, or the last ones (a flush
        // landed mid-way), so sending them again behind the load keeps the order.
        let loads = self.batch.atomic
            || self.packed
            || self.batch.wait.is_some()
            || self.attempt > 0
            || !self.batch.calls_one_script();
        let (pipe, _) = self
            .sent
            .insert(self.batch.pipeline(&self.pending, self.packed, loads));
        if self.packed {
            Action::Packed(pipe)
        } else {
            Action::Pipe(pipe)
        }
    }

    fn feed(&mut self, reply: Reply) -> Result<()> {
        let replies = match reply {
            Reply::One(undone) => {
                let (index, _) = self.undo.pop().expect("a put-back was sent");
                if let (Err(err), Some(replies)) = (undone, &mut self.replies) {
                    replies.not_put_back.push((index, err));
                }
                return Ok(());
            }
            Reply::Many(replies) => replies,
        };
        let (pipe, layout) = self.sent.take().expect("a pipeline was sent");
        let replies = match replies {
            // The sync cluster connection answers the first error reply for the whole
            // pipeline: a refused MULTI, whose commands then ran one by one.
            Err(err) if self.batch.atomic && is_refused_multi(&err) => {
                return Err(Error::RanOutsideTransaction {
                    refused: err,
                    commands: layout.loads.len() + layout.ops,
                });
            }
            // The async cluster connection refuses a pipeline over several slots before
            // sending it; say which keys and how to fix it.
            Err(err)
                if err.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::CrossSlot) =>
            {
                return Err(self.batch.cross_slot().unwrap_or(Error::Redis(err)));
            }
            replies => replies?,
        };
        let again = self.batch.settle(
            &self.pending,
            replies,
            &layout,
            &mut self.values,
            &mut self.acks,
        )?;
        self.batch.restore(&pipe, &layout, &self.pending, &again);
        self.pending = again;
        self.attempt += 1;
        Ok(())
    }
}

impl Replies {
    fn new(batch: u64, values: Vec<Option<Value>>, acks: Option<Vec<Value>>) -> Self {
        Replies {
            batch,
            values,
            acks,
            not_put_back: Vec::new(),
        }
    }
}

impl<T> Slot<T> {
    /// Decodes this slot's reply, or returns the error its command got.
    pub fn take(self, replies: &mut Replies) -> Result<T> {
        if replies.batch != self.batch {
            return Err(Error::unexpected_reply(
                "a slot was read against another batch's replies",
                "read each slot from the replies of the batch that returned it",
            ));
        }
        let value = if self.index == WAIT_SLOT {
            replies.acks.take().map(Value::Array)
        } else {
            replies.values.get_mut(self.index).and_then(Option::take)
        };
        let value = value.ok_or_else(|| {
            Error::unexpected_reply("no reply for this slot", "it was taken already")
        })?;
        let value = value
            .extract_error()
            .map_err(|err| server_error(self.script, err))?;
        let not_put_back = replies
            .not_put_back
            .iter()
            .position(|(index, _)| *index == self.index)
            .map(|at| replies.not_put_back.swap_remove(at).1);
        match ((self.decode)(value), not_put_back) {
            (Err(err), Some(undo_err)) => Err(put_back(err, Err(undo_err))),
            (decoded, _) => decoded,
        }
    }
}
