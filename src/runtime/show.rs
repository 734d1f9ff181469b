//! How bytes read in `Debug` output: keys, items and commands, binary or not.

use std::fmt;

/// Bytes written as a Rust literal: a string literal when they are UTF-8, else a byte
/// string literal (`b"\xff"`).
pub(crate) struct Bytes<'a>(pub(crate) &'a [u8]);

impl fmt::Debug for Bytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match std::str::from_utf8(self.0) {
            Ok(text) => fmt::Debug::fmt(text, f),
            Err(_) => write!(f, "b\"{}\"", self.0.escape_ascii()),
        }
    }
}

/// `cmd` as one line: arguments separated by spaces, printable ASCII as is, anything
/// else escaped, long arguments cut to 64 bytes.
pub(crate) fn command(cmd: &redis::Cmd) -> String {
    let mut line = String::new();
    for (i, arg) in cmd.args_iter().enumerate() {
        if i > 0 {
            line.push(' ');
        }
        let bytes = match arg {
            redis::Arg::Simple(bytes) => bytes,
            _ => b"<cursor>".as_slice(),
        };
        let shown = &bytes[..bytes.len().min(64)];
        line.extend(shown.escape_ascii().map(char::from));
        if shown.len() < bytes.len() {
            line.push_str(&format!("…(+{} bytes)", bytes.len() - shown.len()));
        }
    }
    line
}
