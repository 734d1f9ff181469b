//! A topic whose subscribers miss nothing across a disconnect (beyond the books).
//!
//! Plain pub/sub loses every message sent while a subscriber is away. Here a topic is a
//! stream, and a **subscription** is a name the app chooses with a position in it: the
//! last message it acknowledged. A process that restarts with the same name resumes
//! right after that message, so delivery is at least once: what a crashed subscriber had
//! read but not acknowledged comes again, at most a poll's `count` at a time.
//!
//! - [`publish`](ReliableTopic::publish) appends a message with the next number, and
//!   keeps at most `cap` messages (the safety valve: see below).
//! - [`subscribe`](ReliableTopic::subscribe) starts a subscription after the newest
//!   message or at the oldest one kept, or renews an existing one (its position stays).
//! - [`poll`](ReliableTopic::poll) answers the messages after the position (up to
//!   `count`) and renews the subscription's lease; [`poll_within`](ReliableTopic::poll_within)
//!   waits for messages with bounded `XREAD BLOCK`s on the stream itself (never pub/sub),
//!   polling again after each.
//! - [`ack`](ReliableTopic::ack) moves the position, renews the lease, and trims the
//!   stream to what the slowest live subscription still needs.
//!
//! **Leases instead of a watchdog.** Each subscription holds a lease on the server's
//! clock, renewed by its polls and acks. One whose process went away for good stops
//! renewing; when its lease runs out another subscription's call drops it (ten at most
//! per call), and it no longer holds the stream back. A subscriber that comes back after
//! that gets `NOT_SUBSCRIBED` and subscribes again (after the newest message, or the
//! oldest kept).
//!
//! **The cap.** A live subscription that reads nothing would make the stream grow for
//! ever; `cap` bounds it. When the cap trims messages a subscription had not
//! acknowledged yet, its next poll says how many it lost (`lost`), instead of skipping
//! them silently. The stream holds at most what the slowest live subscription needs,
//! plus a stream node's worth (trimming removes whole nodes, 1,000 messages per call at
//! most), and never more than `cap`.
//!
//! One reader per subscription name: two processes polling one name both get its
//! messages. Give each consumer its own name; several names share the topic.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use std::time::Duration;
//! use redis_patterns::reliable_topic::{From, ReliableTopic};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let topic = ReliableTopic::new("orders", 100_000)?;
//! let lease = Duration::from_secs(60);
//! topic.subscribe("billing", lease, From::Newest).run(&mut con)?;
//! topic.publish("order 42 paid").run(&mut con)?;
//! if let Some(batch) = topic.poll_within(&mut con, "billing", lease, 100, Duration::from_secs(5))? {
//!     for message in &batch.messages {
//!         // handle(message.payload) ...
//!         topic.ack("billing", lease, message).run(&mut con)?;
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! | Key | Type | Holds |
//! |---|---|---|
//! | `{name}:stream` | stream | the messages: `n` its number, `m` its payload |
//! | `{name}:seq` | string | the last number handed out |
//! | `{name}:subs` | sorted set | subscription → lease deadline (ms, server clock) |
//! | `{name}:cursors` | sorted set | subscription → number of the last message it acknowledged |
//! | `{name}:positions` | hash | subscription → `"<id> <number>"` of that message |
//!
//! From another language: `subscribe.lua`, then a loop of `poll.lua` (and
//! `XREAD BLOCK <ms> STREAMS {name}:stream <wake id>` when it answers no message) and
//! `ack.lua`, with the keys above in that order (`publish.lua` takes the first two).
//!
//! **At a failover** to a replica that missed the last writes, the newest messages and
//! acks may be lost: a subscriber may get a message twice (at least once still holds),
//! and a publish whose reply came back may be gone. Publish with
//! [`Op::wait_for`](crate::Op::wait_for) where that matters.
//!
//! # Beyond Redisson
//!
//! | | Redisson `RReliableTopic` | here |
//! |---|---|---|
//! | subscriber identity | a random consumer group per topic object: a restarted process starts over from the beginning, or from nothing once trimmed | a name the app chooses: a restart resumes after the last acknowledged message |
//! | abandoned subscribers | a watchdog thread renews them; expiry on the client's clock | a lease on the server's clock, renewed by polls and acks |
//! | trimming | ignores what is still pending | to the slowest live subscription's acknowledged position |
//! | a subscriber past the cap | skips what was trimmed, silently | told how many messages it lost |
//! | waiting | `XREADGROUP BLOCK 0` on a connection per subscriber; a listener can stop silently (#7262) | bounded `XREAD BLOCK`s on the stream, then a poll |

use std::time::Duration;

use redis::ToRedisArgs;

use crate::runtime::error::Result;
use crate::runtime::input;
use crate::runtime::op::Op;
use crate::runtime::wait::{self, Attempt, Wake};
use crate::scripts;
use crate::scripts::reliable_topic as script;

/// The most messages one [`poll`](ReliableTopic::poll) answers (its `count`): each costs
/// the server a few microseconds, so a poll stays within about a millisecond at 1 kB a
/// message; a subscriber further behind polls again after its ack.
pub const MAX_POLL: u64 = 250;

/// Where a new subscription starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum From {
    /// After the newest message: only messages published from now on.
    Newest,
    /// At the oldest message the stream still holds.
    Oldest,
}

/// A subscription as [`ReliableTopic::subscribe`] left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscribed {
    /// Whether it was created by this call (false: it existed, and keeps its position).
    pub created: bool,
    /// The id of the message it reads after (`0-0` for the start of the stream).
    pub after: String,
    /// That message's number (0 before the first message).
    pub number: u64,
}

/// One message of the topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Its stream id.
    pub id: String,
    /// Its number: 1 for the topic's first message, one more for each.
    pub number: u64,
    /// What was published.
    pub payload: Vec<u8>,
}

/// What a poll answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// How many messages after the subscription's position the stream no longer holds:
    /// the cap trimmed them before the subscription read them.
    pub lost: u64,
    /// The messages after the position, oldest first.
    pub messages: Vec<Message>,
    /// What to block on for more (the stream, from its newest id).
    pub wake: Wake,
}

/// A topic on a stream (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReliableTopic {
    stream: String,
    seq: String,
    subs: String,
    cursors: String,
    positions: String,
    cap: u64,
}

impl ReliableTopic {
    /// The topic `name`, keeping at most `cap` messages (1 to 10^7).
    ///
    /// An empty `name`, one with a `}` but no hash tag, or a `cap` out of its range is
    /// [`crate::Error::InvalidInput`].
    pub fn new(name: impl Into<String>, cap: u64) -> Result<Self> {
        let name = name.into();
        input::check_param(&scripts::reliable_topic::PUBLISH.args[0], cap)?;
        Ok(ReliableTopic {
            stream: script::keys::stream(&name)?,
            seq: script::keys::seq(&name)?,
            subs: script::keys::subs(&name)?,
            cursors: script::keys::cursors(&name)?,
            positions: script::keys::positions(&name)?,
            cap,
        })
    }

    /// The stream's key (what a waiter blocks on).
    pub fn stream_key(&self) -> &str {
        &self.stream
    }

    /// Publishes `payload`: its stream id and number. One script (`reliable_topic/publish`).
    pub fn publish<V: ToRedisArgs>(&self, payload: V) -> Op<(String, u64)> {
        Op::try_build(|| {
            let payload = input::value("payload", &payload)?;
            Ok(script::publish(&self.stream, &self.seq, self.cap, &payload))
        })
    }

    /// Starts `subscription` at `from`, or renews it (keeping its position) when it
    /// exists; its lease is `lease` from now. One script (`reliable_topic/subscribe`).
    pub fn subscribe(&self, subscription: &str, lease: Duration, from: From) -> Op<Subscribed> {
        let from = match from {
            From::Newest => "new",
            From::Oldest => "oldest",
        };
        script::subscribe(
            &self.stream,
            &self.seq,
            &self.subs,
            &self.cursors,
            &self.positions,
            subscription,
            lease,
            from,
        )
        .map(|(created, after, number)| {
            Ok(Subscribed {
                created,
                after,
                number,
            })
        })
    }

    /// Up to `count` (1 to [`MAX_POLL`]) messages after the subscription's position, and how
    /// many it lost; renews its lease. Fails with `NOT_SUBSCRIBED` when there is no live
    /// subscription of that name. One script (`reliable_topic/poll`).
    pub fn poll(&self, subscription: &str, lease: Duration, count: u64) -> Op<Batch> {
        let stream = self.stream.clone();
        let within = lease / 2;
        script::poll(
            &self.stream,
            &self.seq,
            &self.subs,
            &self.cursors,
            &self.positions,
            subscription,
            lease,
            count,
        )
        .map(move |(lost, newest, messages)| {
            Ok(Batch {
                lost,
                messages: messages
                    .into_iter()
                    .map(|(id, number, payload)| Message {
                        id,
                        number,
                        payload,
                    })
                    .collect(),
                wake: Wake::new(
                    &stream,
                    newest,
                    within.as_millis().try_into().unwrap_or(u64::MAX),
                )?,
            })
        })
    }

    /// Polls until there is a message (or a loss to report), or `timeout` passed
    /// (`None`). Between polls it blocks on the stream from its newest id, at most half
    /// the lease (so that the polls keep the subscription) and a second at a time.
    pub fn poll_within(
        &self,
        con: &mut dyn redis::ConnectionLike,
        subscription: &str,
        lease: Duration,
        count: u64,
        timeout: Duration,
    ) -> Result<Option<Batch>> {
        wait::until(con, timeout, || self.attempt(subscription, lease, count))
    }

    /// [`poll_within`](Self::poll_within) on an async connection.
    #[cfg(feature = "aio")]
    pub async fn poll_within_async<C: redis::aio::ConnectionLike>(
        &self,
        con: &mut C,
        subscription: &str,
        lease: Duration,
        count: u64,
        timeout: Duration,
    ) -> Result<Option<Batch>> {
        wait::until_async(con, timeout, || self.attempt(subscription, lease, count)).await
    }

    fn attempt(&self, subscription: &str, lease: Duration, count: u64) -> Op<Attempt<Batch>> {
        self.poll(subscription, lease, count).map(|batch| {
            Ok(if batch.messages.is_empty() && batch.lost == 0 {
                Attempt::NotYet(batch.wake)
            } else {
                Attempt::Done(batch)
            })
        })
    }

    /// Acknowledges `message` and every one before it: true when the position moved,
    /// false when it was there already (acks may come twice). Renews the lease and trims
    /// the stream. One script (`reliable_topic/ack`).
    pub fn ack(&self, subscription: &str, lease: Duration, message: &Message) -> Op<bool> {
        script::ack(
            &self.stream,
            &self.seq,
            &self.subs,
            &self.cursors,
            &self.positions,
            subscription,
            lease,
            &message.id,
            message.number,
        )
    }

    /// Ends `subscription`: true when it existed. One script (`reliable_topic/unsubscribe`).
    pub fn unsubscribe(&self, subscription: &str) -> Op<bool> {
        script::unsubscribe(
            &self.stream,
            &self.seq,
            &self.subs,
            &self.cursors,
            &self.positions,
            subscription,
        )
    }
}
