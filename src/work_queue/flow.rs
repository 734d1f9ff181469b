//! Flows: a parent job that runs once each of its children has ended.

use redis::ToRedisArgs;

use super::{Added, JobOptions, WorkQueue, script, spans};
use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::op::Op;

/// The most children one flow has ([`WorkQueue::add_flow`]), so that adding it stays short
/// (50 children of 1 KiB take about a millisecond of server time); more children are the
/// app's to join, as children in other queues are.
pub const MAX_CHILDREN: usize = 50;

/// What a child's failure (it died: its last delivery failed) does to its parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OnChildFailure {
    /// The parent dies with it, with the error `child <id> failed` (BullMQ's
    /// `failParentOnFailure`); the other children run on.
    #[default]
    FailParent,
    /// It counts as ended, as if it completed (BullMQ's `ignoreDependencyOnFailure`).
    Ignore,
    /// It counts as ended, and the parent lists it among its
    /// [`failed_children`](super::JobInfo::failed_children) (BullMQ's
    /// `continueParentOnFailure`).
    Continue,
}

impl OnChildFailure {
    fn as_str(self) -> &'static str {
        match self {
            OnChildFailure::FailParent => "fail",
            OnChildFailure::Ignore => "ignore",
            OnChildFailure::Continue => "continue",
        }
    }
}

/// One child of a flow: its id (unique in the queue), its payload, and what its failure
/// does to the parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Child {
    id: String,
    payload: Vec<u8>,
    on_failure: OnChildFailure,
}

impl Child {
    /// A child whose failure fails its parent. A payload that is not sent as one argument
    /// is [`Error::InvalidInput`].
    pub fn new<V: ToRedisArgs>(id: impl Into<String>, payload: V) -> Result<Self> {
        Ok(Child {
            id: id.into(),
            payload: input::value("payload", &payload)?,
            on_failure: OnChildFailure::default(),
        })
    }

    /// What its failure does to the parent.
    pub fn on_failure(mut self, on_failure: OnChildFailure) -> Self {
        self.on_failure = on_failure;
        self
    }

    /// Its id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl WorkQueue {
    /// Adds a flow in one call: `children` (1 to [`MAX_CHILDREN`], jobs of this queue)
    /// wait at once, with the parent's priority and no group, and the parent
    /// ([`State::Blocked`](super::State::Blocked)) waits until each has ended, then runs
    /// (at its own rank, as if added then). What a child's failure does to the parent is
    /// the child's [`OnChildFailure`]. When the parent's id is in the queue already,
    /// nothing is added (as [`add`](Self::add) deduplicates); a child's id that is in the
    /// queue (or twice in the flow) fails with the code `DUPLICATE`, and nothing is added.
    /// A delay in `options` is [`Error::InvalidInput`]: a flow starts at once; so are
    /// retries, LIFO and removal, which a flow's parent does not take yet. One script
    /// (`work_queue/add_flow`).
    ///
    /// Children in another queue (or another cluster slot) are the app's to join: wait for
    /// each one's end ([`wait_for_job`](Self::wait_for_job)), then add the parent.
    ///
    /// ```no_run
    /// # fn demo() -> redis_patterns::Result<()> {
    /// use redis_patterns::work_queue::{Child, JobOptions, OnChildFailure, WorkQueue};
    ///
    /// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let queue = WorkQueue::new("reports")?;
    /// let children = [
    ///     Child::new("q3:sales", "sales")?,
    ///     Child::new("q3:costs", "costs")?,
    ///     Child::new("q3:charts", "charts")?.on_failure(OnChildFailure::Continue),
    /// ];
    /// queue.add_flow("q3:report", "assemble", JobOptions::new(), &children).run(&mut con)?;
    /// # Ok(()) }
    /// ```
    pub fn add_flow<V: ToRedisArgs>(
        &self,
        id: &str,
        payload: V,
        options: JobOptions,
        children: &[Child],
    ) -> Op<Added> {
        Op::try_build(|| {
            let payload = input::value("payload", &payload)?;
            if !options.delay.is_zero() {
                return Err(Error::invalid(
                    "delay",
                    "a flow starts at once: leave it unset",
                ));
            }
            if children.is_empty() || children.len() > MAX_CHILDREN {
                return Err(Error::invalid(
                    "children",
                    format!(
                        "a flow has from 1 to {MAX_CHILDREN} children, got {}",
                        children.len()
                    ),
                ));
            }
            options.priority_and_group_only("a flow's parent")?;
            let group = options.group_arg()?;
            let args: Vec<&[u8]> = children
                .iter()
                .flat_map(|c| {
                    [
                        c.id.as_bytes(),
                        &c.payload,
                        c.on_failure.as_str().as_bytes(),
                    ]
                })
                .collect();
            let (send, trace) = spans::send_context(
                options.trace_context.as_deref(),
                &self.name,
                "add_flow",
                id,
                payload.len(),
            );
            let k = &self.keys;
            let op = script::add_flow(
                &k.waiting,
                &k.delayed,
                &k.jobs,
                &k.signal,
                &k.blocked,
                id,
                &payload,
                u64::from(options.priority),
                group,
                &trace,
                &args,
            );
            Ok(op.map(Added::sent(send)))
        })
    }
}

/// A parent's failed children as `job.lua` reads them: `<length>:<id>` each.
pub(super) fn failed_children(mut text: &[u8]) -> Result<Vec<String>> {
    let bad = || {
        Error::unexpected_reply(
            "failed children",
            String::from_utf8_lossy(text).into_owned(),
        )
    };
    let mut ids = Vec::new();
    while !text.is_empty() {
        let colon = text.iter().position(|b| *b == b':').ok_or_else(bad)?;
        let len: usize = std::str::from_utf8(&text[..colon])
            .ok()
            .and_then(|n| n.parse().ok())
            .ok_or_else(bad)?;
        let id = text.get(colon + 1..colon + 1 + len).ok_or_else(bad)?;
        ids.push(String::from_utf8_lossy(id).into_owned());
        text = &text[colon + 1 + len..];
    }
    Ok(ids)
}
