//! The rules of key names that script metadata and input checks share: not empty, and
//! where Redis Cluster puts them (hash tags and hash slots).

use crate::runtime::error::{Error, Result};

/// A key or name must not be empty.
pub(crate) fn key<'a>(what: &'static str, key: &'a str) -> Result<&'a str> {
    if key.is_empty() {
        return Err(Error::invalid(what, "must not be empty"));
    }
    Ok(key)
}

/// Redis Cluster's rule: the bytes between the first `{` and the next `}`, if not empty.
pub(crate) fn hash_tag(key: &[u8]) -> Option<&[u8]> {
    hash_tag_span(key).map(|(open, close)| &key[open + 1..close])
}

/// Where the hash tag of `key` stands: the positions of its `{` and `}`.
pub(crate) fn hash_tag_span(key: &[u8]) -> Option<(usize, usize)> {
    let open = key.iter().position(|&b| b == b'{')?;
    let len = key[open + 1..].iter().position(|&b| b == b'}')?;
    (len > 0).then_some((open, open + 1 + len))
}

/// The Redis Cluster hash slot of `key`: CRC16 (XMODEM) of its hash tag, or of the whole
/// key when it has none, modulo 16384.
pub(crate) fn hash_slot(key: &[u8]) -> u16 {
    let hashed = hash_tag(key).unwrap_or(key);
    let mut crc: u16 = 0;
    for &byte in hashed {
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
