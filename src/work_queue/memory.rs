//! What a server's `maxmemory-policy` means for a queue, and what a worker does about it.

use redis::Value;

use super::retry::is_connection_failure;
#[cfg(doc)]
use super::{WorkReport, Worker};
use crate::runtime::error::Result;
use crate::runtime::op::Op;

/// A queue lives in one hash (`{name}:jobs`) and a few sorted sets that have no expiry: a
/// server whose `maxmemory-policy` evicts any key (`allkeys-lru`, `allkeys-lfu`,
/// `allkeys-random`) can evict the hash, and every later `take` then drops the ids it
/// finds without a record, silently. What a [`Worker`] does when it finds such a policy
/// as it starts ([`Worker::on_eviction`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OnEviction {
    /// Runs, and says so: a `tracing` warning (feature `tracing`) and
    /// [`WorkReport::memory_policy`]. The default.
    #[default]
    Warn,
    /// Refuses to run: [`Error::EvictingServer`](crate::Error::EvictingServer).
    Refuse,
    /// Does not look (no `CONFIG GET` is sent).
    Ignore,
}

/// What a server's `maxmemory-policy` means for a queue (see [`OnEviction`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MemoryPolicy {
    /// Not looked at ([`OnEviction::Ignore`]).
    #[default]
    NotChecked,
    /// `noeviction`: a write that needs memory past `maxmemory` fails; nothing is evicted.
    NoEviction,
    /// A `volatile-*` policy: only keys with an expiry are evicted, and a queue's keys
    /// have none (once no such key is left, writes fail as under `noeviction`).
    Volatile,
    /// An `allkeys-*` policy: a queue's keys may be evicted, and its jobs lost.
    AllKeys,
    /// The server refused `CONFIG GET` (a managed Redis that renames or forbids it, an
    /// ACL without `+config|get`), or answered something else: look in its console.
    Unknown,
}

impl MemoryPolicy {
    /// What a `maxmemory-policy` value means for a queue.
    pub fn of(policy: &str) -> Self {
        if policy == "noeviction" {
            MemoryPolicy::NoEviction
        } else if policy.starts_with("volatile-") {
            MemoryPolicy::Volatile
        } else if policy.starts_with("allkeys-") {
            MemoryPolicy::AllKeys
        } else {
            MemoryPolicy::Unknown
        }
    }
}

/// Reads the server's `maxmemory-policy` (`CONFIG GET maxmemory-policy`): the policy and
/// what it means for a queue; `(None, MemoryPolicy::Unknown)` when the server refuses the
/// command. Fails only when the connection does.
pub fn memory_policy(
    con: &mut dyn redis::ConnectionLike,
) -> Result<(Option<String>, MemoryPolicy)> {
    read_policy(policy_read().run(con))
}

/// [`memory_policy`] on an async connection.
#[cfg(feature = "aio")]
pub async fn memory_policy_async<C: redis::aio::ConnectionLike + Send>(
    con: &mut C,
) -> Result<(Option<String>, MemoryPolicy)> {
    read_policy(policy_read().run_async(con).await)
}

/// `CONFIG GET maxmemory-policy`, whose answer [`read_policy`] reads.
pub(super) fn policy_read() -> Op<Value> {
    Op::native(
        redis::cmd("CONFIG")
            .arg("GET")
            .arg("maxmemory-policy")
            .clone(),
    )
}

/// What the server's answer to [`policy_read`] says; an unknown policy where the server
/// refused the command, and the error only when the connection failed.
pub(super) fn read_policy(reply: Result<Value>) -> Result<(Option<String>, MemoryPolicy)> {
    let value = match reply {
        Ok(value) => value,
        Err(err) if is_connection_failure(&err) => return Err(err),
        Err(_) => return Ok((None, MemoryPolicy::Unknown)),
    };
    // A map (RESP3), a flat list of name, value (RESP2); a cluster answers one per node,
    // and the first evicting one counts.
    let mut texts = Vec::new();
    collect_texts(&value, &mut texts);
    let mut found: Option<String> = None;
    for pair in texts.windows(2) {
        if pair[0] == "maxmemory-policy" {
            let policy = pair[1].clone();
            if found.is_none() || MemoryPolicy::of(&policy) == MemoryPolicy::AllKeys {
                found = Some(policy);
            }
        }
    }
    Ok(match found {
        Some(policy) => {
            let meaning = MemoryPolicy::of(&policy);
            (Some(policy), meaning)
        }
        None => (None, MemoryPolicy::Unknown),
    })
}

fn collect_texts(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::BulkString(bytes) => out.push(String::from_utf8_lossy(bytes).into_owned()),
        Value::SimpleString(text) => out.push(text.clone()),
        Value::Array(items) | Value::Set(items) => {
            items.iter().for_each(|item| collect_texts(item, out))
        }
        Value::Map(pairs) => pairs.iter().for_each(|(k, v)| {
            collect_texts(k, out);
            collect_texts(v, out);
        }),
        _ => {}
    }
}
