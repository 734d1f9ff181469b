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
        let head = format!("{indent}if ");
        self.wrapped(&head, &format!("{indent}    "), parts, joiner, " then");
    }

    /// `<head><item>, <item>, ...<tail>`, wrapped to fit after an item, continuations
    /// indented by four more than `head`.
    pub(crate) fn list(&mut self, head: &str, items: &[String], tail: &str) {
        let indent = &head[..head.len() - head.trim_start().len()];
        self.wrapped(head, &format!("{indent}    "), items, ", ", tail);
    }

    /// `<head><item><sep><item>...<tail>`, wrapped to fit after a `sep`, each continuation
    /// starting with `cont`.
    fn wrapped(&mut self, head: &str, cont: &str, items: &[String], sep: &str, tail: &str) {
        let mut line = head.to_string();
        let mut first = true;
        let last = items.len().saturating_sub(1);
        for (i, item) in items.iter().enumerate() {
            let piece = format!("{item}{}", if i < last { sep } else { tail });
            // The line as it would be: what it has (a trailing space included), then
            // the piece without its own.
            if !first && line.len() + piece.trim_end().len() > MAX_LINE {
                self.line(line.trim_end());
                line = cont.to_string();
            }
            line.push_str(&piece);
            first = false;
        }
        self.line(&line);
    }

    /// `<indent>return redis.error_reply('<message>' .. <tail>)`, wrapped to fit.
    pub(crate) fn error(&mut self, indent: &str, message: &str, tail: Option<&str>) {
        let mut parts = vec![Part::Text(message)];
        parts.extend(tail.map(Part::Code));
        self.error_parts(indent, &parts);
    }

    /// `<indent>return redis.error_reply(<part> .. <part> ...)`: on one line when it fits,
    /// else from the next line on, indented by four more, as many parts a line as fit
    /// (texts split at spaces where they must), each line but the last ending in ` ..`.
    pub(crate) fn error_parts(&mut self, indent: &str, parts: &[Part]) {
        let whole: Vec<String> = parts.iter().map(Part::lua).collect();
        let one = format!("{indent}return redis.error_reply({})", whole.join(" .. "));
        if one.len() <= MAX_LINE {
            self.line(&one);
            return;
        }
        self.line(&format!("{indent}return redis.error_reply("));
        let cont = format!("{indent}    ");
        // Room on a line for a piece and the ` ..` or `)` after it.
        let room = MAX_LINE - cont.len() - 3;
        let mut pieces: Vec<String> = Vec::new();
        for part in parts {
            match part {
                Part::Code(code) => pieces.push(code.to_string()),
                Part::Text(text) => {
                    let mut piece = String::new();
                    for word in text.split_inclusive(' ') {
                        if !piece.is_empty() && lua_text(&format!("{piece}{word}")).len() > room {
                            pieces.push(lua_text(&std::mem::take(&mut piece)));
                        }
                        piece.push_str(word);
                    }
                    pieces.push(lua_text(&piece));
                }
            }
        }
        let mut line = String::new();
        for piece in pieces {
            if !line.is_empty() && line.len() + 4 + piece.len() > room {
                self.line(&format!("{cont}{line} .."));
                line.clear();
            }
            if !line.is_empty() {
                line.push_str(" .. ");
            }
            line.push_str(&piece);
        }
        self.line(&format!("{cont}{line})"));
    }
}

/// A part of an error message: text, or Lua code that gives some.
pub(crate) enum Part<'a> {
    Text(&'a str),
    Code(&'a str),
}

impl Part<'_> {
    fn lua(&self) -> String {
        match self {
            Part::Text(text) => lua_text(text),
            Part::Code(code) => code.to_string(),
        }
    }
}

/// `s` as a single-quoted Lua string.
pub(crate) fn lua_text(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}
