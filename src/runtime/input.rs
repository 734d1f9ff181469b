//! Checks on caller input, made before any I/O so that bad input never reaches Redis.

use std::time::Duration;

use redis::ToRedisArgs;

use crate::runtime::error::{Error, Result};
pub(crate) use crate::runtime::keys::{hash_slot, hash_tag, key};
use crate::runtime::script::{Count, Param, Rule};

// The rules of script arguments, applied to the metadata of each `@arg` line (see
// `call::ScriptCall`); the scripts apply the same rules in their generated input checks.

/// How a bound reads in messages: `2^63-1` rather than nineteen digits, as the scripts
/// write it.
fn bound(n: i64) -> String {
    match n {
        i64::MAX => "2^63-1".to_string(),
        i64::MIN => "-2^63".to_string(),
        n => n.to_string(),
    }
}

/// The range an integer argument accepts: its declared one, or its type's.
fn range_of(param: &Param) -> (i64, i64) {
    match param.rule {
        Rule::Range { min, max } => (min, max),
        _ if param.ty == "uint" => (0, i64::MAX),
        // Lua's numbers hold whole milliseconds exactly up to 2^53 - 1.
        _ if param.ty == "ms" => (0, (1 << 53) - 1),
        _ => (i64::MIN, i64::MAX),
    }
}

/// An `int` or `uint` value.
pub(crate) fn check_int(param: &Param, value: i128) -> std::result::Result<(), String> {
    let (min, max) = range_of(param);
    if (i128::from(min)..=i128::from(max)).contains(&value) {
        Ok(())
    } else {
        Err(format!(
            "must be an integer from {} to {}, got {value}",
            bound(min),
            bound(max)
        ))
    }
}

/// An `ms` value: whole milliseconds (rounded down) within the range; the milliseconds.
pub(crate) fn check_ms(param: &Param, value: Duration) -> std::result::Result<u64, String> {
    let (min, max) = range_of(param);
    match u64::try_from(value.as_millis()) {
        Ok(ms) if (min as u64..=max as u64).contains(&ms) => Ok(ms),
        _ => Err(format!(
            "must be whole milliseconds from {} to {}, got {value:?}",
            bound(min),
            bound(max)
        )),
    }
}

/// An integer sent as text, read by the scripts' one rule for integers: decimal digits
/// with an optional leading `-`, no leading zero, and no `+`, space, fraction, exponent
/// or hex; `None` for any other text, or one beyond 64 bits. The generated input checks
/// of every script read `int`, `uint` and `ms` arguments so (then check their range).
///
/// ```
/// use redis_patterns::integer_from_text;
///
/// assert_eq!(integer_from_text("-42"), Some(-42));
/// for refused in ["007", "+5", " 5", "1e3", "0x10", "1.5", "-0", ""] {
///     assert_eq!(integer_from_text(refused), None);
/// }
/// ```
pub fn integer_from_text(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let canonical = text == "0"
        || (!digits.is_empty()
            && !digits.starts_with('0')
            && digits.bytes().all(|b| b.is_ascii_digit()));
    if canonical { text.parse().ok() } else { None }
}

/// A float sent as text, read by the scripts' one rule for floats: decimal digits with an
/// optional leading `-`, then an optional fraction (`.` and digits) and an optional
/// exponent (`e` or `E`, an optional sign, digits), no leading zero, and no `+` before the
/// number, space, hex, `inf` or `nan`; `None` for any other text, or one beyond the finite
/// doubles. So every finite float as Python, JavaScript, Java, Go and C print it by
/// default is read (`1e+16`, `1e+21`, `1.0E16`, `1e-07`, `0.1`), and the shortest form
/// Rust prints (`{:?}`), which the crate sends. The generated input checks of every script
/// read `float` arguments so.
///
/// ```
/// use redis_patterns::float_from_text;
///
/// for (text, value) in [("1e+20", 1e20), ("1.0E16", 1e16), ("1e-07", 1e-7), ("-0.5", -0.5)] {
///     assert_eq!(float_from_text(text), Some(value));
/// }
/// for refused in ["NaN", "inf", "0x10", " 5", "+5", ".5", "5.", "007", "1e", "1e400", ""] {
///     assert_eq!(float_from_text(refused), None);
/// }
/// ```
pub fn float_from_text(text: &str) -> Option<f64> {
    let unsigned = text.strip_prefix('-').unwrap_or(text);
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let (whole, fraction) = match mantissa.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (mantissa, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e)));
    let whole_ok = digits(whole) && (whole == "0" || !whole.starts_with('0'));
    if !whole_ok || !fraction.is_none_or(digits) || !exponent_ok {
        return None;
    }
    text.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// A `float` value: finite, as the scripts' rule for floats has no inf or NaN.
pub(crate) fn check_float(_param: &Param, value: f64) -> std::result::Result<(), String> {
    if value.is_finite() {
        Ok(())
    } else {
        Err(format!("must be a finite number, got {value}"))
    }
}

/// A `string` value.
pub(crate) fn check_str(param: &Param, value: &str) -> std::result::Result<(), String> {
    if let Rule::OneOf(options) = param.rule
        && !options.contains(&value)
    {
        let shown: String = value.chars().take(32).collect();
        return Err(format!(
            "must be one of {}, got {shown:?}",
            options
                .iter()
                .map(|o| format!("`{o}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    check_bytes(param, value.as_bytes())
}

/// A `bytes` (or `string`, or `json`) value.
pub(crate) fn check_bytes(param: &Param, value: &[u8]) -> std::result::Result<(), String> {
    let len = value.len();
    match param.rule {
        Rule::NonEmpty if value.is_empty() => Err("must not be empty".to_string()),
        Rule::Length { min, max } if len < min as usize => Err(match max {
            Some(max) => format!("must be from {min} to {max} bytes long, got {len}"),
            None => format!("must be {min} bytes long at least, got {len}"),
        }),
        Rule::Length {
            min,
            max: Some(max),
        } if len > max as usize => {
            Err(format!("must be from {min} to {max} bytes long, got {len}"))
        }
        Rule::Hex { digits }
            if len != digits as usize || !value.iter().all(u8::is_ascii_hexdigit) =>
        {
            Err(format!(
                "must be {digits} hex digits, got {:?}",
                String::from_utf8_lossy(&value[..len.min(32)])
            ))
        }
        _ => Ok(()),
    }
}

/// `value` passes the rule of a script's argument: for a native command that takes the
/// same setting as a script (a limiter's `maximum`, a lock's `ttl`), so that both refuse
/// the same values.
pub(crate) fn check_param(param: &Param, value: impl ScriptArg) -> Result<()> {
    value
        .encode(param)
        .map(drop)
        .map_err(|why| Error::invalid(param.name, why))
}

/// How many values a variadic key or argument was given.
pub(crate) fn check_count(
    param: &Param,
    given: usize,
    noun: &str,
) -> std::result::Result<(), String> {
    let Count { min, max } = param.count;
    let fits = given >= min as usize && max.is_none_or(|max| given <= max as usize);
    if fits {
        return Ok(());
    }
    Err(match max {
        Some(max) if max == min => format!("takes {min} {noun}, got {given}"),
        Some(max) => format!("takes from {min} to {max} {noun}, got {given}"),
        None => format!("takes at least {min} {noun}, got {given}"),
    })
}

/// The longest blocking wait (BLPOP, BLMOVE, XREAD BLOCK): 15 decimal digits of
/// milliseconds, as the longest lease the scripts accept, far below the point where Redis
/// rejects a timeout. Blocking commands have no script, so this is their one rule.
pub(crate) const MAX_BLOCK_MS: u64 = 999_999_999_999_999;

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

/// The rule of every script's `ttl` and `lease` argument (`identity_lock/extend`'s
/// `ttl`, say; a unit test of the families checks that they all agree with it).
pub(crate) const TTL: Param = Param {
    name: "ttl",
    ty: "ms",
    optional: false,
    variadic: false,
    count: Count {
        min: 1,
        max: Some(1),
    },
    rule: Rule::Range {
        min: 1,
        max: MAX_BLOCK_MS as i64,
    },
    doc: "a time to live, in whole milliseconds",
    template: None,
};

/// A time to live or lease for a native command (`SET … PX`, `PEXPIRE`): whole
/// milliseconds, by the rule of the scripts' `ttl` (`identity_lock/extend`'s), so that a
/// lease a native command takes is one every script takes too.
pub(crate) fn ttl_ms(ttl: Duration) -> Result<u64> {
    check_param(&TTL, ttl)?;
    Ok(u64::try_from(ttl.as_millis()).expect("within the rule's range"))
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
    aux_key_of("name", name, suffix)
}

/// [`aux_key`] for a pattern built on a key the caller names (a geo set's key): a bad one
/// is reported as `what`.
pub(crate) fn aux_key_of(what: &'static str, name: &str, suffix: &str) -> Result<String> {
    let name = key(what, name)?;
    if has_hash_tag(name) {
        Ok(format!("{name}:{suffix}"))
    } else if name.contains('}') {
        // `{a}b}:x` would hash by `a`, while `a}b` hashes whole: different slots.
        Err(Error::invalid(
            what,
            format!(
                "`{name}` holds a `}}` but no hash tag; add one, as in `{{{name}}}`, or drop the `}}`"
            ),
        ))
    } else {
        Ok(format!("{{{name}}}:{suffix}"))
    }
}

fn has_hash_tag(key: &str) -> bool {
    hash_tag(key.as_bytes()).is_some()
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

/// Where page `page` (from 1) of `size` (at least 1) items starts, and its size, for the
/// families that read by page number (pagination, timelines). Page 0 is refused: sent as
/// an index, it would read from the other end.
pub(crate) fn page(page: u64, size: usize) -> Result<(u64, u64)> {
    if page == 0 {
        return Err(Error::invalid(
            "page",
            "pages count from 1; page 0 would read from the oldest end",
        ));
    }
    let size = count("size", size)?;
    (page - 1)
        .checked_mul(size)
        .filter(|offset| {
            offset
                .checked_add(size)
                .is_some_and(|end| end <= i64::MAX as u64)
        })
        .map(|offset| (offset, size))
        .ok_or_else(|| Error::invalid("page", "page × size is past the end of any key"))
}

/// One value as the bytes Redis stores: anything redis-rs sends as a single argument
/// (`&str`, `String`, `&[u8]`, `Vec<u8>`, numbers, …).
pub(crate) fn value<V: ToRedisArgs>(what: &'static str, value: &V) -> Result<Vec<u8>> {
    let mut args = value.to_redis_args();
    if args.len() != 1 {
        return Err(Error::invalid(
            what,
            format!(
                "must be one value, but it is sent as {} arguments; pass each value on its own",
                args.len()
            ),
        ));
    }
    Ok(args.pop().expect("one argument"))
}

/// One value (see [`value`]) that must not be empty: a member, a hash field or an id
/// the pattern refuses empty.
pub(crate) fn non_empty_value<V: ToRedisArgs>(what: &'static str, v: &V) -> Result<Vec<u8>> {
    let bytes = value(what, v)?;
    if bytes.is_empty() {
        return Err(Error::invalid(what, "must not be empty"));
    }
    Ok(bytes)
}

/// At least one item, each one value (see [`value`]).
pub(crate) fn items<V: ToRedisArgs>(items: &[V]) -> Result<Vec<Vec<u8>>> {
    if items.is_empty() {
        return Err(Error::invalid(
            "items",
            "must hold at least one item; pass a slice such as &[\"a\", \"b\"]",
        ));
    }
    items.iter().map(|item| value("items", item)).collect()
}

/// The timeout of a blocking command (BLPOP, BZPOPMIN, BLMOVE, …) as the seconds Redis
/// takes, to the millisecond: `None` waits forever (sent as `0`); `Some(t)` must be from
/// 1 ms (a zero `Duration` would also mean forever to Redis, so it is refused) to
/// [`MAX_BLOCK_MS`], and is rounded down to whole milliseconds.
pub(crate) fn block_timeout(timeout: Option<Duration>) -> Result<String> {
    let Some(timeout) = timeout else {
        return Ok("0".to_owned());
    };
    let ms = millis_in(timeout, MAX_BLOCK_MS).ok_or_else(|| {
        let why = if timeout.as_millis() == 0 {
            format!("must be at least 1 ms, got {timeout:?}; use None to wait forever")
        } else {
            format!("must be at most {MAX_BLOCK_MS} ms, got {timeout:?}; use None to wait forever")
        };
        Error::invalid("timeout", why)
    })?;
    Ok(format!("{}.{:03}", ms / 1000, ms % 1000))
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

/// Borrows each value, as the generated function of a `bytes...` argument takes them.
pub(crate) fn slices(values: &[Vec<u8>]) -> Vec<&[u8]> {
    values.iter().map(Vec::as_slice).collect()
}

/// [`items`], no two equal.
pub(crate) fn unique_items<V: ToRedisArgs>(items: &[V]) -> Result<Vec<Vec<u8>>> {
    let items = self::items(items)?;
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    if let Some(twice) = items.iter().find(|item| !seen.insert(item.as_slice())) {
        return Err(Error::invalid(
            "items",
            format!(
                "must be distinct, but \"{}\" is passed more than once",
                twice.escape_ascii()
            ),
        ));
    }
    Ok(items)
}

/// The keys of one multi-key call: none empty, and all in one cluster hash slot, so that
/// the call behaves the same on a standalone server and on a cluster.
pub(crate) fn same_slot(what: &'static str, keys: &[&str]) -> Result<()> {
    let Some((first, rest)) = keys.split_first() else {
        return Ok(());
    };
    key(what, first)?;
    let slot = hash_slot(first.as_bytes());
    for other in rest {
        key(what, other)?;
        let other_slot = hash_slot(other.as_bytes());
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

/// A value that can be passed as a script argument: it checks itself against the
/// argument's [`Param`] and encodes as Redis receives it.
///
/// The generated functions take, per `@arg` type: `&str` (`string`), `&[u8]` (`bytes`),
/// `i64` (`int`), `u64` (`uint`), `f64` (`float`), `bool` (`bool`), `Duration` (`ms`),
/// and `Option` of those for `?` types.
pub trait ScriptArg {
    /// The bytes to send, or why the value breaks `param`'s rule.
    fn encode(&self, param: &Param) -> std::result::Result<Vec<u8>, String>;
}

impl ScriptArg for &str {
    fn encode(&self, param: &Param) -> std::result::Result<Vec<u8>, String> {
        check_str(param, self)?;
        Ok(self.as_bytes().to_vec())
    }
}

impl ScriptArg for &[u8] {
    fn encode(&self, param: &Param) -> std::result::Result<Vec<u8>, String> {
        check_bytes(param, self)?;
        Ok(self.to_vec())
    }
}

impl ScriptArg for i64 {
    fn encode(&self, param: &Param) -> std::result::Result<Vec<u8>, String> {
        check_int(param, i128::from(*self))?;
        Ok(self.to_string().into_bytes())
    }
}

impl ScriptArg for u64 {
    fn encode(&self, param: &Param) -> std::result::Result<Vec<u8>, String> {
        check_int(param, i128::from(*self))?;
        Ok(self.to_string().into_bytes())
    }
}

impl ScriptArg for f64 {
    fn encode(&self, param: &Param) -> std::result::Result<Vec<u8>, String> {
        check_float(param, *self)?;
        // Rust's shortest round-trip form (`0.1`, `1e20`, `-2.5e-7`) is what the scripts'
        // rule for floats accepts.
        Ok(format!("{self:?}").into_bytes())
    }
}

impl ScriptArg for bool {
    fn encode(&self, _param: &Param) -> std::result::Result<Vec<u8>, String> {
        Ok(vec![if *self { b'1' } else { b'0' }])
    }
}

impl ScriptArg for Duration {
    fn encode(&self, param: &Param) -> std::result::Result<Vec<u8>, String> {
        Ok(check_ms(param, *self)?.to_string().into_bytes())
    }
}

/// `None` is sent as an empty string, which a `<type>?` argument reads as none.
impl<T: ScriptArg> ScriptArg for Option<T> {
    fn encode(&self, param: &Param) -> std::result::Result<Vec<u8>, String> {
        match self {
            Some(value) => value.encode(param),
            None if param.optional => Ok(Vec::new()),
            None => Err("is required".to_string()),
        }
    }
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

    /// What the crate sends for a float is what the rule reads back, exactly.
    #[test]
    fn floats_round_trip_through_their_text() {
        for value in [
            0.0,
            -0.0,
            0.1,
            1.5,
            -2.0,
            1e20,
            1e21,
            1e-7,
            5e-324,
            f64::MAX,
            f64::MIN_POSITIVE,
            123_456_789.123_456_79,
        ] {
            let text = String::from_utf8(value.encode(&TTL).unwrap()).unwrap();
            assert_eq!(float_from_text(&text), Some(value), "{text}");
        }
    }

    #[test]
    fn ttl_is_whole_milliseconds_in_range() {
        assert_eq!(ttl_ms(Duration::from_micros(1500)).unwrap(), 1);
        let max = 999_999_999_999_999;
        assert_eq!(ttl_ms(Duration::from_millis(max)).unwrap(), max);
        assert!(ttl_ms(Duration::from_micros(999)).is_err());
        assert!(ttl_ms(Duration::from_millis(max + 1)).is_err());
        assert!(ttl_ms(Duration::MAX).is_err());
    }
}
