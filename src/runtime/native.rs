//! Native-command helpers the families share: pushes, pops and counts on one key. Keys
//! come from patterns, which checked them when they were built.

use std::time::Duration;

use redis::{FromRedisValue, ToRedisArgs, Value};

use crate::runtime::input;
use crate::runtime::op::Op;

/// `RPUSH`/`LPUSH key item…`, answering the new length.
pub(crate) fn push<V: ToRedisArgs>(command: &str, key: &str, items: &[V]) -> Op<u64> {
    Op::try_build(|| {
        let mut cmd = redis::cmd(command);
        cmd.arg(key).arg(input::items(items)?);
        Ok(Op::native(cmd))
    })
}

/// A command on one key with no other argument (`LLEN`, `ZCARD`, …).
pub(crate) fn one_key<T: FromRedisValue + 'static>(command: &str, key: &str) -> Op<T> {
    let mut cmd = redis::cmd(command);
    cmd.arg(key);
    Op::native(cmd)
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
    let key = key.to_owned();
    let mut cmd = redis::cmd(command);
    cmd.arg(&key);
    Op::<Option<T>>::native(cmd).with_undo(move |value| {
        let Value::BulkString(item) = value else {
            return None;
        };
        let mut undo = redis::cmd(push_back(command));
        undo.arg(&key).arg(item);
        Some(undo)
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
        cmd.arg(key).arg(input::block_timeout(timeout)?);
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

/// `LINDEX key index`: the item there, without taking it; `None` past either end.
pub(crate) fn peek<T: FromRedisValue + 'static>(key: &str, index: i64) -> Op<Option<T>> {
    let mut cmd = redis::cmd("LINDEX");
    cmd.arg(key).arg(index);
    Op::native(cmd)
}

/// Keeps the `n` items nearest the head (`LTRIM key 0 n-1`) or the tail
/// (`LTRIM key -n -1`) of a list; `0` deletes it (`DEL`), which `LTRIM` cannot express.
pub(crate) fn keep(key: &str, n: u64, at_head: bool) -> Op<()> {
    Op::try_build(|| {
        let n = input::int64("n", n)?;
        let cmd = match n {
            0 => {
                let mut cmd = redis::cmd("DEL");
                cmd.arg(key);
                cmd
            }
            n => {
                let (start, stop) = if at_head { (0, n - 1) } else { (-n, -1) };
                let mut cmd = redis::cmd("LTRIM");
                cmd.arg(key).arg(start).arg(stop);
                cmd
            }
        };
        Ok(Op::native(cmd))
    })
}

/// `LLEN key`.
pub(crate) fn length(key: &str) -> Op<u64> {
    one_key("LLEN", key)
}
