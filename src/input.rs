//! Checks on caller input, made before any I/O so that bad input never reaches Redis.

use std::time::Duration;

use crate::error::{Error, Result};

/// The longest lease a script accepts: 15 decimal digits of milliseconds (about 31,700
/// years), far below the point where Redis rejects an expiry as out of range.
pub(crate) const MAX_TTL_MS: u64 = 999_999_999_999_999;

/// A key or name must not be empty.
pub(crate) fn key<'a>(what: &'static str, key: &'a str) -> Result<&'a str> {
    if key.is_empty() {
        return Err(Error::invalid(what, "must not be empty"));
    }
    Ok(key)
}

/// A token must not be empty: an empty token would match a lock taken by a client that
/// stored nothing.
pub(crate) fn token<'a>(what: &'static str, token: &'a str) -> Result<&'a str> {
    if token.is_empty() {
        return Err(Error::invalid(
            what,
            "must not be empty; IdentityLock::random_token() makes a fresh one",
        ));
    }
    Ok(token)
}

/// `d` in whole milliseconds (rounded down), if that is from 1 to `max`.
pub(crate) fn millis_in(d: Duration, max: u64) -> Option<u64> {
    u64::try_from(d.as_millis())
        .ok()
        .filter(|ms| (1..=max).contains(ms))
}

/// A lease in whole milliseconds (rounded down), from 1 ms to [`MAX_TTL_MS`].
pub(crate) fn ttl_ms(ttl: Duration) -> Result<u64> {
    millis_in(ttl, MAX_TTL_MS).ok_or_else(|| {
        let why = if ttl.as_millis() == 0 {
            format!("must be at least 1 ms, got {ttl:?}")
        } else {
            format!("must be at most {MAX_TTL_MS} ms, got {ttl:?}")
        };
        Error::invalid("ttl", why)
    })
}

/// A count Redis stores as a signed 64-bit integer.
pub(crate) fn int64(what: &'static str, n: u64) -> Result<i64> {
    i64::try_from(n)
        .map_err(|_| Error::invalid(what, format!("must be at most {}, got {n}", i64::MAX)))
}

/// `-n`, for the `decrease` operations that send a negative increment.
pub(crate) fn negate(what: &'static str, n: i64) -> Result<i64> {
    n.checked_neg()
        .ok_or_else(|| Error::invalid(what, format!("must be greater than {}", i64::MIN)))
}

/// The name of an auxiliary key of the pattern instance `name`, in the same cluster hash
/// slot as `name` itself: `{name}:suffix`, or `name:suffix` when `name` already holds a
/// hash tag.
pub(crate) fn aux_key(name: &str, suffix: &str) -> Result<String> {
    let name = key("name", name)?;
    if has_hash_tag(name) {
        Ok(format!("{name}:{suffix}"))
    } else if name.contains('}') {
        // `{a}b}:x` would hash by `a`, while `a}b` hashes whole: different slots.
        Err(Error::invalid(
            "name",
            format!(
                "`{name}` holds a `}}` but no hash tag; add one, as in `{{{name}}}`, or drop the `}}`"
            ),
        ))
    } else {
        Ok(format!("{{{name}}}:{suffix}"))
    }
}

fn has_hash_tag(key: &str) -> bool {
    hash_tag(key).is_some()
}

/// Redis Cluster's rule: the text between the first `{` and the next `}`, if not empty.
fn hash_tag(key: &str) -> Option<&str> {
    let open = key.find('{')?;
    let len = key[open + 1..].find('}')?;
    (len > 0).then(|| &key[open + 1..open + 1 + len])
}

/// A batch size: from 1 to `i64::MAX` (a count of 0 would never make progress).
pub(crate) fn count(what: &'static str, n: usize) -> Result<u64> {
    match u64::try_from(n) {
        Ok(n) if (1..=i64::MAX as u64).contains(&n) => Ok(n),
        _ => Err(Error::invalid(
            what,
            format!("must be from 1 to {}, got {n}", i64::MAX),
        )),
    }
}

/// The items of a push: at least one, since a push of nothing is a Redis error.
pub(crate) fn items<S: AsRef<str>>(items: &[S]) -> Result<Vec<&str>> {
    if items.is_empty() {
        return Err(Error::invalid(
            "items",
            "must hold at least one item; pass a slice such as &[\"a\", \"b\"]",
        ));
    }
    Ok(items.iter().map(AsRef::as_ref).collect())
}

/// The timeout of a blocking command (BLPOP, BZPOPMIN, BLMOVE, …) as the seconds Redis
/// takes, to the millisecond: `None` waits forever (sent as `0`); `Some(t)` must be from
/// 1 ms (a zero `Duration` would also mean forever to Redis, so it is refused) to
/// [`MAX_TTL_MS`], and is rounded down to whole milliseconds.
pub(crate) fn block_timeout(timeout: Option<Duration>) -> Result<String> {
    let Some(timeout) = timeout else {
        return Ok("0".to_owned());
    };
    let ms = millis_in(timeout, MAX_TTL_MS).ok_or_else(|| {
        let why = if timeout.as_millis() == 0 {
            format!("must be at least 1 ms, got {timeout:?}; use None to wait forever")
        } else {
            format!("must be at most {MAX_TTL_MS} ms, got {timeout:?}; use None to wait forever")
        };
        Error::invalid("timeout", why)
    })?;
    Ok(format!("{}.{:03}", ms / 1000, ms % 1000))
}

/// The most items a bounded queue may hold: 15 decimal digits, as its scripts accept.
pub(crate) const MAX_LENGTH: u64 = 999_999_999_999_999;

/// A queue's `max_length`: from 1 to [`MAX_LENGTH`].
pub(crate) fn max_length(n: u64) -> Result<u64> {
    if !(1..=MAX_LENGTH).contains(&n) {
        return Err(Error::invalid(
            "max_length",
            format!("must be from 1 to {MAX_LENGTH}, got {n}"),
        ));
    }
    Ok(n)
}

/// A sorted-set score: any `f64` but NaN, which Redis refuses. Infinities are sent as
/// `+inf`/`-inf`, finite values in Rust's shortest round-trip form.
pub(crate) fn score(what: &'static str, score: f64) -> Result<String> {
    if score.is_nan() {
        return Err(Error::invalid(
            what,
            "must be a number, not NaN; infinities are accepted",
        ));
    }
    Ok(if score == f64::INFINITY {
        "+inf".to_owned()
    } else if score == f64::NEG_INFINITY {
        "-inf".to_owned()
    } else {
        format!("{score:?}")
    })
}

/// [`items`], no two equal.
pub(crate) fn unique_items<S: AsRef<str>>(items: &[S]) -> Result<Vec<&str>> {
    let items = self::items(items)?;
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    if let Some(twice) = items.iter().find(|item| !seen.insert(**item)) {
        return Err(Error::invalid(
            "items",
            format!("must be distinct, but {twice:?} is passed more than once"),
        ));
    }
    Ok(items)
}

/// The Redis Cluster hash slot of `key`: CRC16 (XMODEM) of its hash tag, or of the whole
/// key when it has none, modulo 16384.
pub(crate) fn hash_slot(key: &str) -> u16 {
    let hashed = hash_tag(key).unwrap_or(key);
    let mut crc: u16 = 0;
    for &byte in hashed.as_bytes() {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc % 16384
}

/// The keys of one multi-key call: none empty, and all in one cluster hash slot, so that
/// the call behaves the same on a standalone server and on a cluster.
pub(crate) fn same_slot(what: &'static str, keys: &[&str]) -> Result<()> {
    let Some((first, rest)) = keys.split_first() else {
        return Ok(());
    };
    key(what, first)?;
    let slot = hash_slot(first);
    for other in rest {
        key(what, other)?;
        let other_slot = hash_slot(other);
        if other_slot != slot {
            return Err(Error::invalid(
                what,
                format!(
                    "`{first}` (slot {slot}) and `{other}` (slot {other_slot}) are in different \
                     cluster hash slots; give the keys one hash tag, as in `{{visits}}:monday` \
                     and `{{visits}}:tuesday`"
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aux_keys_share_the_names_slot() {
        assert_eq!(aux_key("lock:1", "fence").unwrap(), "{lock:1}:fence");
        assert_eq!(
            aux_key("{user:7}:lock", "fence").unwrap(),
            "{user:7}:lock:fence"
        );
        assert_eq!(aux_key("a{b", "fence").unwrap(), "{a{b}:fence");
        // An empty tag is no tag, and wrapping would make `a{` the tag.
        assert!(matches!(
            aux_key("a{}b", "fence"),
            Err(Error::InvalidInput { what: "name", .. })
        ));
        assert!(matches!(
            aux_key("a}b", "fence"),
            Err(Error::InvalidInput { what: "name", .. })
        ));
        assert!(matches!(
            aux_key("", "fence"),
            Err(Error::InvalidInput { what: "name", .. })
        ));
    }

    #[test]
    fn ttl_is_whole_milliseconds_in_range() {
        assert_eq!(ttl_ms(Duration::from_micros(1500)).unwrap(), 1);
        assert_eq!(
            ttl_ms(Duration::from_millis(MAX_TTL_MS)).unwrap(),
            MAX_TTL_MS
        );
        assert!(ttl_ms(Duration::from_micros(999)).is_err());
        assert!(ttl_ms(Duration::from_millis(MAX_TTL_MS + 1)).is_err());
        assert!(ttl_ms(Duration::MAX).is_err());
    }
}
