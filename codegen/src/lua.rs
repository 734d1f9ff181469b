//! A small Lua 5.1 tokenizer: enough to find `KEYS`, `ARGV`, `redis.call` and assignments,
//! with positions for diagnostics. It is not a parser; `check` works on the token stream.

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An identifier that is not a keyword.
    Name,
    /// One of Lua's reserved words.
    Keyword,
    /// A numeric literal, as written.
    Number,
    /// A short or long string literal, decoded.
    Str,
    /// Punctuation and operators (`..`, `==`, `(`, …).
    Op,
}

/// One token, positioned at its first character.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token {
    pub kind: Kind,
    /// The source text, except for strings, which hold their decoded value.
    pub text: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub col: usize,
}

impl Token {
    /// Whether this is the operator `op`.
    pub(crate) fn is_op(&self, op: &str) -> bool {
        self.kind == Kind::Op && self.text == op
    }

    /// Whether this is the keyword `kw`.
    pub(crate) fn is_kw(&self, kw: &str) -> bool {
        self.kind == Kind::Keyword && self.text == kw
    }

    /// Whether this is the name `name`.
    pub(crate) fn is_name(&self, name: &str) -> bool {
        self.kind == Kind::Name && self.text == name
    }
}

/// Source that Lua itself would refuse to load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LexError {
    pub line: usize,
    pub col: usize,
    pub message: String,
    pub hint: String,
}

const KEYWORDS: &str = "and break do else elseif end false for function if in \
    local nil not or repeat return then true until while";

/// Whether `word` is reserved in Lua 5.1.
pub(crate) fn is_keyword(word: &str) -> bool {
    KEYWORDS.split_whitespace().any(|k| k == word)
}

/// Splits `source` into tokens. Comments and whitespace are dropped; a `#!` first line is
/// skipped, as Redis does. Problems are reported, never panicked on, and the tokens read so
/// far are still returned.
pub(crate) fn tokenize(source: &str) -> (Vec<Token>, Vec<LexError>) {
    let mut lexer = Lexer {
        chars: source.chars().collect(),
        pos: 0,
        line: 1,
        col: 1,
        tokens: Vec::new(),
        errors: Vec::new(),
    };
    lexer.run();
    (lexer.tokens, lexer.errors)
}

struct Lexer {
    chars: Vec<char>,
    pos: usize,
    line: usize,
    col: usize,
    tokens: Vec<Token>,
    errors: Vec<LexError>,
}

impl Lexer {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek(0)?;
        self.pos += 1;
        // Only `\n` ends a line, so lines agree with `str::lines`, which the header parser uses.
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }

    fn push(&mut self, kind: Kind, text: String, line: usize, col: usize) {
        self.tokens.push(Token {
            kind,
            text,
            line,
            col,
        });
    }

    fn error(&mut self, line: usize, col: usize, message: String, hint: &str) {
        self.errors.push(LexError {
            line,
            col,
            message,
            hint: hint.to_string(),
        });
    }

    fn run(&mut self) {
        if self.peek(0) == Some('#') && self.peek(1) == Some('!') {
            while self.peek(0).is_some_and(|c| c != '\n') {
                self.bump();
            }
        }
        while let Some(c) = self.peek(0) {
            let (line, col) = (self.line, self.col);
            if c.is_whitespace() {
                self.bump();
            } else if c == '-' && self.peek(1) == Some('-') {
                self.comment();
            } else if c.is_ascii_alphabetic() || c == '_' {
                self.name();
            } else if c.is_ascii_digit()
                || (c == '.' && self.peek(1).is_some_and(|d| d.is_ascii_digit()))
            {
                self.number();
            } else if c == '"' || c == '\'' {
                self.short_string(c);
            } else if c == '[' && matches!(self.peek(1), Some('[' | '=')) {
                match self.long_open() {
                    Some(level) => {
                        if let Some(text) = self.long_body(level, line, col, "long string") {
                            self.push(Kind::Str, text, line, col);
                        }
                    }
                    None => {
                        // `[=` without a second `[` is an error in Lua 5.1, not an index.
                        self.bump();
                        while self.peek(0) == Some('=') {
                            self.bump();
                        }
                        self.error(
                            line,
                            col,
                            "invalid long string delimiter".to_string(),
                            "open a long string with `[[` or `[==[` (any number of `=`)",
                        );
                    }
                }
            } else if let Some(op) = self.operator() {
                for _ in 0..op.len() {
                    self.bump();
                }
                self.push(Kind::Op, op.to_string(), line, col);
            } else {
                self.unexpected(c, line, col);
            }
        }
    }

    fn unexpected(&mut self, c: char, line: usize, col: usize) {
        let hint = match c {
            '!' => "Lua writes not-equal as `~=` and negation as `not`",
            '~' => "Lua's only use of `~` is not-equal, `~=`",
            '&' | '|' => "Lua 5.1 has no bitwise operators; use `bit.band` and `bit.bor`",
            _ => "Lua does not allow it outside strings and comments",
        };
        self.error(line, col, format!("unexpected character `{c}`"), hint);
        self.bump();
        // A run of stray characters (pasted binary, a stray language) is one problem, not many.
        while let Some(next) = self.peek(0) {
            if next.is_whitespace()
                || next.is_ascii_alphanumeric()
                || "_-'\"[]{}()+*/%^#<>=;:,.".contains(next)
            {
                break;
            }
            self.bump();
        }
    }

    fn operator(&self) -> Option<&'static str> {
        const OPS: &str = "... .. == ~= <= >= + - * / % ^ # < > = ( ) { } [ ] ; : , .";
        OPS.split_whitespace()
            .find(|op| op.chars().enumerate().all(|(i, c)| self.peek(i) == Some(c)))
    }

    fn comment(&mut self) {
        let (line, col) = (self.line, self.col);
        self.bump();
        self.bump();
        if self.peek(0) == Some('[') {
            // `--[==[` opens a long comment; `--[=` without the second `[` is a line comment.
            let save = (self.pos, self.line, self.col);
            if let Some(level) = self.long_open() {
                self.long_body(level, line, col, "long comment");
                return;
            }
            (self.pos, self.line, self.col) = save;
        }
        while self.peek(0).is_some_and(|c| c != '\n') {
            self.bump();
        }
    }

    /// At `[`: consumes `[`, `=`*, `[` and returns the level, or returns `None` (consuming
    /// nothing) when this is not a long bracket.
    fn long_open(&mut self) -> Option<usize> {
        let mut level = 0;
        while self.peek(1 + level) == Some('=') {
            level += 1;
        }
        if self.peek(1 + level) != Some('[') {
            return None;
        }
        for _ in 0..level + 2 {
            self.bump();
        }
        Some(level)
    }

    /// Reads up to and including the `]`, `=`*level, `]` that closes a long bracket.
    fn long_body(&mut self, level: usize, line: usize, col: usize, what: &str) -> Option<String> {
        // Lua drops a line break right after the opening bracket.
        if self.peek(0) == Some('\r') && self.peek(1) == Some('\n') {
            self.bump();
        }
        if self.peek(0) == Some('\n') {
            self.bump();
        }
        let mut text = String::new();
        loop {
            match self.peek(0) {
                None => {
                    let close = format!("]{}]", "=".repeat(level));
                    self.error(
                        line,
                        col,
                        format!("unterminated {what}"),
                        &format!("close it with `{close}`"),
                    );
                    return None;
                }
                Some(']')
                    if (1..=level).all(|i| self.peek(i) == Some('='))
                        && self.peek(level + 1) == Some(']') =>
                {
                    for _ in 0..level + 2 {
                        self.bump();
                    }
                    return Some(text);
                }
                Some(c) => {
                    text.push(c);
                    self.bump();
                }
            }
        }
    }

    fn name(&mut self) {
        let (line, col) = (self.line, self.col);
        let mut text = String::new();
        while let Some(c) = self
            .peek(0)
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        {
            text.push(c);
            self.bump();
        }
        let kind = if is_keyword(&text) {
            Kind::Keyword
        } else {
            Kind::Name
        };
        self.push(kind, text, line, col);
    }

    fn number(&mut self) {
        let (line, col) = (self.line, self.col);
        let mut text = String::new();
        // The same greedy scan as Lua 5.1's `read_numeral`; validity is checked afterwards.
        while let Some(c) = self.peek(0).filter(|c| c.is_ascii_digit() || *c == '.') {
            text.push(c);
            self.bump();
        }
        if let Some(e @ ('e' | 'E')) = self.peek(0) {
            text.push(e);
            self.bump();
            if let Some(sign @ ('+' | '-')) = self.peek(0) {
                text.push(sign);
                self.bump();
            }
        }
        while let Some(c) = self
            .peek(0)
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        {
            text.push(c);
            self.bump();
        }
        let valid = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
            Some(hex) => !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit()),
            None => text.parse::<f64>().is_ok(),
        };
        if !valid {
            self.error(
                line,
                col,
                format!("malformed number `{text}`"),
                "write a decimal (`42`, `1.5`, `1e3`) or hexadecimal (`0xff`) number",
            );
        }
        self.push(Kind::Number, text, line, col);
    }

    fn short_string(&mut self, quote: char) {
        let (line, col) = (self.line, self.col);
        self.bump();
        let mut text = String::new();
        loop {
            let Some(c) = self.peek(0) else {
                self.unterminated(quote, line, col);
                return;
            };
            match c {
                '\n' | '\r' => {
                    self.unterminated(quote, line, col);
                    return;
                }
                '\\' => {
                    let (eline, ecol) = (self.line, self.col);
                    self.bump();
                    let Some(e) = self.peek(0) else {
                        self.unterminated(quote, line, col);
                        return;
                    };
                    if e.is_ascii_digit() {
                        let mut digits = String::new();
                        while digits.len() < 3 {
                            match self.peek(0).filter(char::is_ascii_digit) {
                                Some(d) => {
                                    digits.push(d);
                                    self.bump();
                                }
                                None => break,
                            }
                        }
                        match digits.parse::<u8>() {
                            Ok(byte) => text.push(char::from(byte)),
                            Err(_) => self.error(
                                eline,
                                ecol,
                                format!("escape sequence `\\{digits}` is too large"),
                                "decimal escapes go up to `\\255`",
                            ),
                        }
                        continue;
                    }
                    self.bump();
                    text.push(match e {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        'a' => '\u{7}',
                        'b' => '\u{8}',
                        'f' => '\u{c}',
                        'v' => '\u{b}',
                        // Lua 5.1 keeps any other escaped character as is (`\\`, `\"`, `\'`, a
                        // line break).
                        other => other,
                    });
                }
                c if c == quote => {
                    self.bump();
                    self.push(Kind::Str, text, line, col);
                    return;
                }
                c => {
                    text.push(c);
                    self.bump();
                }
            }
        }
    }

    fn unterminated(&mut self, quote: char, line: usize, col: usize) {
        self.error(
            line,
            col,
            "unterminated string".to_string(),
            &format!("close it with `{quote}` on the same line; write a line break as `\\n`"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(source: &str) -> Vec<(Kind, String)> {
        let (tokens, errors) = tokenize(source);
        assert_eq!(errors, []);
        tokens.into_iter().map(|t| (t.kind, t.text)).collect()
    }

    #[test]
    fn operators_strings_and_comments() {
        use Kind::*;
        let source = "#!lua\nlocal a = KEYS[1] .. 'x\\'y\\65' -- c\n--[==[ long\n]] ]==] b ~= ... [[\nraw]] 0x1F 1e-3";
        let want = [
            (Keyword, "local"),
            (Name, "a"),
            (Op, "="),
            (Name, "KEYS"),
            (Op, "["),
            (Number, "1"),
            (Op, "]"),
            (Op, ".."),
            (Str, "x'yA"),
            (Name, "b"),
            (Op, "~="),
            (Op, "..."),
            (Str, "raw"),
            (Number, "0x1F"),
            (Number, "1e-3"),
        ];
        let want: Vec<(Kind, String)> = want.iter().map(|(k, t)| (*k, t.to_string())).collect();
        assert_eq!(kinds(source), want);
    }

    #[test]
    fn positions_count_characters() {
        let (tokens, _) = tokenize("local é = 1\n  x");
        let x = tokens.last().map(|t| (t.text.as_str(), t.line, t.col));
        assert_eq!(x, Some(("x", 2, 3)));
        // `é` is not a Lua name character: reported once, positioned in characters.
        let (_, errors) = tokenize("local é = 1");
        assert_eq!(
            errors.iter().map(|e| (e.line, e.col)).collect::<Vec<_>>(),
            [(1, 7)]
        );
    }

    #[test]
    fn broken_input_is_reported_not_panicked_on() {
        for source in [
            "'abc", "\"abc\\", "'a\nb", "[[abc", "--[[abc", "[=x", "1.2.3", "'\\300'", "x = 1 !",
            "[==[ ]=]",
        ] {
            let (_, errors) = tokenize(source);
            assert_eq!(errors.len(), 1, "{source:?}: {errors:?}");
        }
    }
}
