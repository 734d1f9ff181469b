//! Native-command helpers the families share: pushes, pops and counts on one key.

use std::time::Duration;

use redis::{FromRedisValue, ToRedisArgs, Value};

use crate::runtime::input;
use crate::runtime::op::Op;

/// `RPUSH`/`LPUSH key item…`, answering the new length.
pub(crate) fn push<V: ToRedisArgs>(command: &str, key: &str, items: &[V]) -> Op<u64> {
    Op::try_build(|| {
        let mut cmd = redis::cmd(command);
        cmd.arg(input::key("key", key)?).arg(input::items(items)?);
        Ok(Op::native(cmd))
    })
}

/// A command on one key with no other argument (`LLEN`, `ZCARD`, …).
pub(crate) fn one_key<T: FromRedisValue + 'static>(command: &str, key: &str) -> Op<T> {
    Op::try_build(|| {
        let mut cmd = redis::cmd(command);
        cmd.arg(input::key("key", key)?);
        Ok(Op::native(cmd))
    })
}

/// The push that puts a value popped with `pop` (`LPOP`, `BRPOP`, …) back at the end it
/// came from.
fn push_back(pop: &str) -> &'static str {
    if pop.starts_with("BL") || pop.starts_with('L') {
        "LPUSH"
    } else {
        "RPUSH"
    }
}

/// `LPOP`/`RPOP key`: the item, or `None` when the list is empty. An item that does not
/// decode as `T` is pushed back where it was, then the decoding error is returned.
pub(crate) fn pop<T: FromRedisValue + 'static>(command: &'static str, key: &str) -> Op<Option<T>> {
    Op::try_build(|| {
        let key = input::key("key", key)?.to_owned();
        let mut cmd = redis::cmd(command);
        cmd.arg(&key);
        Ok(Op::<Option<T>>::native(cmd).with_undo(move |value| {
            let Value::BulkString(item) = value else {
                return None;
            };
            let mut undo = redis::cmd(push_back(command));
            undo.arg(&key).arg(item);
            Some(undo)
        }))
    })
}

/// `BLPOP`/`BRPOP key timeout`: nil on timeout, else `[key, item]`. An item that does not
/// decode as `T` is pushed back where it was, then the decoding error is returned.
pub(crate) fn blocking_pop<T: FromRedisValue + 'static>(
    command: &'static str,
    key: &str,
    timeout: Option<Duration>,
) -> Op<Option<T>> {
    Op::try_build(|| {
        let mut cmd = redis::cmd(command);
        cmd.arg(input::key("key", key)?)
            .arg(input::block_timeout(timeout)?);
        let op = Op::<Option<(Value, T)>>::native(cmd)
            .map(|reply| Ok(reply.map(|(_, item)| item)))
            .with_undo(move |value| match value {
                Value::Array(reply) => match reply.as_slice() {
                    [Value::BulkString(key), Value::BulkString(item)] => {
                        let mut undo = redis::cmd(push_back(command));
                        undo.arg(key).arg(item);
                        Some(undo)
                    }
                    _ => None,
                },
                _ => None,
            });
        Ok(op)
    })
}

/// `LLEN key`.
pub(crate) fn length(key: &str) -> Op<u64> {
    one_key("LLEN", key)
}
