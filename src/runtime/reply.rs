//! Reading the items of a script's array reply, for the families that decode one by hand
//! (rows of several fields, status words first).

use std::str::FromStr;

use crate::runtime::error::{Error, Result};

/// An item that holds a decimal number, as scripts send counts, times and scores.
pub(crate) fn number<N: FromStr>(bytes: &[u8]) -> Result<N> {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| {
            Error::unexpected_reply(
                "script reply",
                format!("expected a number, got {}", String::from_utf8_lossy(bytes)),
            )
        })
}

/// An item that holds text: an id, a name, a member.
pub(crate) fn text(bytes: Vec<u8>) -> Result<String> {
    String::from_utf8(bytes)
        .map_err(|_| Error::unexpected_reply("script reply", "expected UTF-8 text"))
}
