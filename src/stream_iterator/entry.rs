//! A stream's entries, their ids, and how `XRANGE` and `XREAD` replies decode into them.

use std::fmt;
use std::str::FromStr;

use redis::{FromRedisValue, Value};

use crate::runtime::error::{Error, Result};
use crate::runtime::show::Bytes;

/// A stream entry id: milliseconds and a sequence number, written `ms-seq`.
///
/// ```
/// use redis_patterns::stream_iterator::EntryId;
///
/// let id: EntryId = "1700000000000-3".parse()?;
/// assert_eq!(id, EntryId::new(1_700_000_000_000, 3));
/// assert_eq!(id.to_string(), "1700000000000-3");
/// assert_eq!("5".parse::<EntryId>()?, EntryId::new(5, 0)); // an incomplete id
/// assert!("abc".parse::<EntryId>().is_err());
/// # Ok::<(), redis_patterns::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EntryId {
    /// The milliseconds part.
    pub ms: u64,
    /// The sequence number within the millisecond.
    pub seq: u64,
}

impl EntryId {
    /// `0-0`: before every entry.
    pub const MIN: EntryId = EntryId { ms: 0, seq: 0 };
    /// The largest id a stream can hold.
    pub const MAX: EntryId = EntryId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    /// The id `ms-seq`.
    pub const fn new(ms: u64, seq: u64) -> Self {
        EntryId { ms, seq }
    }
}

impl fmt::Display for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

impl FromStr for EntryId {
    type Err = Error;

    /// `ms-seq`, or `ms` alone (sequence 0); both parts decimal `u64`s.
    fn from_str(text: &str) -> Result<Self> {
        let number = |part: &str| {
            (!part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
                .then(|| part.parse::<u64>().ok())
                .flatten()
        };
        let parsed = match text.split_once('-') {
            Some((ms, seq)) => number(ms).zip(number(seq)),
            None => number(text).map(|ms| (ms, 0)),
        };
        parsed.map(|(ms, seq)| EntryId { ms, seq }).ok_or_else(|| {
            Error::invalid(
                "id",
                format!(
                    "must be a stream id `ms-seq` or `ms` (decimal, up to {}), got {text:?}",
                    u64::MAX
                ),
            )
        })
    }
}

/// One stream entry: its id and its field/value pairs, in the order they were added, as
/// the bytes Redis holds.
///
/// Its `Debug` writes each field and value as a string literal, or as a byte string
/// literal (`b"\xff"`) when it is not UTF-8.
///
/// ```
/// use redis_patterns::stream_iterator::{EntryId, StreamEntry};
///
/// let entry = StreamEntry {
///     id: EntryId::new(1, 1),
///     fields: vec![
///         (b"user".to_vec(), b"peter".to_vec()),
///         (b"age".to_vec(), b"42".to_vec()),
///         (b"photo".to_vec(), b"\x89PNG".to_vec()),
///     ],
/// };
/// assert_eq!(entry.get("user"), Some(&b"peter"[..]));
/// assert_eq!(entry.get_str("user"), Some("peter"));
/// assert_eq!(entry.get_as::<u32>("age")?, Some(42));
/// assert_eq!(entry.get("photo"), Some(&b"\x89PNG"[..]));
/// assert_eq!(entry.get_str("photo"), None); // not UTF-8
/// assert!(entry.get_as::<String>("photo").is_err());
/// assert_eq!(entry.get("nope"), None);
/// assert_eq!(
///     format!("{entry:?}"),
///     r#"StreamEntry { id: 1-1, fields: {"user": "peter", "age": "42", "photo": b"\x89PNG"} }"#
/// );
/// # Ok::<(), redis_patterns::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct StreamEntry {
    /// The entry's id.
    pub id: EntryId,
    /// The field/value pairs (the book's `msg`), in the order they were added.
    pub fields: Vec<(Vec<u8>, Vec<u8>)>,
}

impl StreamEntry {
    /// The value of the first field named `field` (text or bytes), as bytes.
    pub fn get(&self, field: impl AsRef<[u8]>) -> Option<&[u8]> {
        let field = field.as_ref();
        self.fields
            .iter()
            .find(|(name, _)| name == field)
            .map(|(_, value)| value.as_slice())
    }

    /// The value of the first field named `field`, as text: `None` when there is no such
    /// field or its value is not UTF-8 (read it with [`get`](Self::get) then).
    pub fn get_str(&self, field: impl AsRef<[u8]>) -> Option<&str> {
        self.get(field)
            .and_then(|value| std::str::from_utf8(value).ok())
    }

    /// The value of the first field named `field`, decoded as redis-rs decodes a bulk
    /// string (`u64`, `f64`, `String`, `Vec<u8>`, a `FromRedisValue` of your own):
    /// `Ok(None)` when there is no such field, an error when the value does not decode.
    pub fn get_as<T: FromRedisValue>(&self, field: impl AsRef<[u8]>) -> Result<Option<T>> {
        self.get(field)
            .map(|value| T::from_redis_value(Value::BulkString(value.to_vec())))
            .transpose()
            .map_err(Error::from)
    }
}

impl fmt::Debug for StreamEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fields = self
            .fields
            .iter()
            .map(|(name, value)| (Bytes(name), Bytes(value)));
        f.debug_struct("StreamEntry")
            .field("id", &format_args!("{}", self.id))
            .field("fields", &DebugMap(fields))
            .finish()
    }
}

/// Writes pairs as `{k: v, …}` (without collecting them into a map, which would drop a
/// repeated field).
struct DebugMap<I>(I);

impl<I, K, V> fmt::Debug for DebugMap<I>
where
    I: Iterator<Item = (K, V)> + Clone,
    K: fmt::Debug,
    V: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.0.clone()).finish()
    }
}
fn bad_reply(detail: &str) -> Error {
    Error::unexpected_reply("stream reply", detail.to_owned())
}

/// XRANGE's reply: an array of `[id, [field, value, …]]`.
pub(crate) fn entries(reply: Value) -> Result<Vec<StreamEntry>> {
    match reply {
        Value::Nil => Ok(Vec::new()),
        Value::Array(items) => items.into_iter().map(entry).collect(),
        _ => Err(bad_reply("expected an array of entries")),
    }
}

fn entry(value: Value) -> Result<StreamEntry> {
    let Value::Array(parts) = value else {
        return Err(bad_reply("expected an entry `[id, fields]`"));
    };
    let [id, fields]: [Value; 2] = parts
        .try_into()
        .map_err(|_| bad_reply("expected an entry `[id, fields]`"))?;
    let id = String::from_redis_value(id)?
        .parse()
        .map_err(|_| bad_reply("an entry id is not `ms-seq`"))?;
    let pairs = match fields {
        // A deleted entry still listed (XCLAIM, consumer groups) has no fields.
        Value::Nil => Vec::new(),
        Value::Map(pairs) => pairs,
        Value::Array(items) => {
            if items.len() % 2 != 0 {
                return Err(bad_reply("an entry has an odd number of field/values"));
            }
            let mut items = items.into_iter();
            std::iter::from_fn(|| items.next().zip(items.next())).collect()
        }
        _ => return Err(bad_reply("an entry's fields are not an array")),
    };
    let fields = pairs
        .into_iter()
        .map(|(f, v)| Ok((bytes(f)?, bytes(v)?)))
        .collect::<Result<_>>()?;
    Ok(StreamEntry { id, fields })
}

/// A field or value, as is (a bulk string; a simple string or number as its text).
fn bytes(value: Value) -> Result<Vec<u8>> {
    match value {
        Value::BulkString(bytes) => Ok(bytes),
        other => Ok(String::from_redis_value(other)?.into_bytes()),
    }
}

/// XREAD's reply for one stream: nil (nothing), or `[[key, entries]]` (RESP2), or
/// `{key: entries}` (RESP3).
pub(super) fn read_reply(reply: Value) -> Result<Vec<StreamEntry>> {
    let streams = match reply {
        Value::Nil => return Ok(Vec::new()),
        Value::Map(streams) => streams.into_iter().map(|(_, e)| e).collect::<Vec<_>>(),
        Value::Array(streams) => streams
            .into_iter()
            .map(|stream| match stream {
                Value::Array(parts) if parts.len() == 2 => Ok(parts.into_iter().nth(1)),
                _ => Err(bad_reply("expected `[key, entries]`")),
            })
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .flatten()
            .collect(),
        _ => return Err(bad_reply("expected the streams read")),
    };
    let mut all = Vec::new();
    for stream in streams {
        all.extend(entries(stream)?);
    }
    Ok(all)
}
