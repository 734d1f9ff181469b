//! Lines of generated Lua, kept within luacheck's 120 columns.

/// luacheck's limit, which the generated lines keep to.
pub(crate) const MAX_LINE: usize = 120;

/// Lines of Lua being written.
#[derive(Default)]
pub(crate) struct Lines {
    pub(crate) text: String,
}

impl Lines {
    pub(crate) fn line(&mut self, line: &str) {
        self.text.push_str(line);
        self.text.push('\n');
    }

    /// `<indent>if <a> <joiner> <b> ... then`, wrapped to fit, continuations indented by
    /// four more.
    pub(crate) fn condition(&mut self, indent: &str, parts: &[String], joiner: &str) {
        let mut line = format!("{indent}if ");
        let last = parts.len().saturating_sub(1);
        for (i, part) in parts.iter().enumerate() {
            let piece = if i < last {
                format!("{part}{joiner}")
            } else {
                format!("{part} then")
            };
            if line.trim_end().len() + piece.len() > MAX_LINE && line.trim().len() > 2 {
                self.line(line.trim_end());
                line = format!("{indent}    ");
            }
            line.push_str(&piece);
        }
        self.line(&line);
    }

    /// `<indent>return redis.error_reply('<message>' .. <tail>)`, wrapped to fit.
    pub(crate) fn error(&mut self, indent: &str, message: &str, tail: Option<&str>) {
        let tail = tail.map(|t| format!(" .. {t}")).unwrap_or_default();
        let one = format!("{indent}return redis.error_reply('{message}'{tail})");
        if one.len() <= MAX_LINE {
            self.line(&one);
            return;
        }
        // One literal per line, split at spaces, each continuation indented by four more.
        self.line(&format!("{indent}return redis.error_reply("));
        let cont = format!("{indent}    ");
        let words: Vec<&str> = message.split_inclusive(' ').collect();
        let mut pieces: Vec<String> = Vec::new();
        let mut piece = String::new();
        for word in words {
            // Room for the quotes and the ` ..` that ends every line but the last.
            if !piece.is_empty() && cont.len() + piece.len() + word.len() + 5 > MAX_LINE {
                pieces.push(std::mem::take(&mut piece));
            }
            piece.push_str(word);
        }
        pieces.push(piece);
        let last = pieces.len() - 1;
        for (i, piece) in pieces.iter().enumerate() {
            if i < last {
                self.line(&format!("{cont}'{piece}' .."));
            } else if cont.len() + piece.len() + tail.len() + 3 <= MAX_LINE {
                self.line(&format!("{cont}'{piece}'{tail})"));
            } else {
                // The tail does not fit after the last words: it gets a line of its own.
                self.line(&format!("{cont}'{piece}'"));
                self.line(&format!("{cont}{})", tail.trim_start()));
            }
        }
    }
}
