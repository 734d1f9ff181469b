//! Native-command helpers the families share: pushes, pops and counts on one key.

use std::time::Duration;

use crate::runtime::input;
use crate::runtime::op::Op;

/// `RPUSH`/`LPUSH key item…`, answering the new length.
pub(crate) fn push<S: AsRef<str>>(command: &str, key: &str, items: &[S]) -> Op<u64> {
    Op::try_build(|| {
        let mut cmd = redis::cmd(command);
        cmd.arg(input::key("key", key)?).arg(input::items(items)?);
        Ok(Op::native(cmd))
    })
}

/// A command on one key with no other argument (`LPOP`, `LLEN`, `ZCARD`, …).
pub(crate) fn one_key<T: redis::FromRedisValue + 'static>(command: &str, key: &str) -> Op<T> {
    Op::try_build(|| {
        let mut cmd = redis::cmd(command);
        cmd.arg(input::key("key", key)?);
        Ok(Op::native(cmd))
    })
}

/// `BLPOP`/`BRPOP key timeout`: nil on timeout, else `[key, item]`.
pub(crate) fn blocking_pop(
    command: &str,
    key: &str,
    timeout: Option<Duration>,
) -> Op<Option<String>> {
    Op::try_build(|| {
        let mut cmd = redis::cmd(command);
        cmd.arg(input::key("key", key)?)
            .arg(input::block_timeout(timeout)?);
        Ok(
            Op::<Option<(String, String)>>::native(cmd)
                .map(|reply| Ok(reply.map(|(_, item)| item))),
        )
    })
}

/// `LLEN key`.
pub(crate) fn length(key: &str) -> Op<u64> {
    one_key("LLEN", key)
}
