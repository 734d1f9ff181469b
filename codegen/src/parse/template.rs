//! Key name templates (`{<name>}:waiting`): read from `@key` lines, and checked within a
//! script (one hash tag for every key of a call) and within a family (one template per
//! key name).
//!
//! A template is the word after a key's type (and count) when it holds a `<`, starts with
//! `<`, `{` or an ASCII letter or digit, and ends with `>`, `}`, an ASCII letter, digit or
//! `_`: so a doc that begins with `` `t:<id>` `` or `<x>:<id>:` stays a doc.

use crate::diagnostic::{Pos, Report};
use crate::model::{Key, KeyForm, KeyPart, KeyTemplate, MAX_NAME, is_rust_keyword, is_snake};

const PLACEHOLDER_HINT: &str =
    "a placeholder is a parameter's name between `<` and `>`, as in `{<name>}:waiting`";
const GROUP_HINT: &str = "the hash tag is one `{…}` group around the parameters that pick the \
                          cluster slot, as in `{<name>}:waiting`";

/// Whether `word`, after a key's type and count, is its template rather than its doc.
pub(crate) fn is_template(word: &str) -> bool {
    word.contains('<')
        && word.starts_with(|c: char| c == '<' || c == '{' || c.is_ascii_alphanumeric())
        && word.ends_with(|c: char| c == '>' || c == '}' || c == '_' || c.is_ascii_alphanumeric())
}

/// Parses the template `word`, which starts at column `col` of `line`; reports every
/// problem and returns `None` if there was one.
pub(crate) fn parse(
    word: &str,
    line: usize,
    col: usize,
    variadic: bool,
    report: &mut Report,
) -> Option<KeyTemplate> {
    let chars: Vec<char> = word.chars().collect();
    let mut forms = Vec::new();
    let mut ok = true;
    let mut start = 0;
    let several = chars.contains(&'|');
    for end in chars
        .iter()
        .enumerate()
        .filter(|(_, c)| **c == '|')
        .map(|(i, _)| i)
        .chain([chars.len()])
    {
        let text: String = chars[start..end].iter().collect();
        let form = Form {
            template: word,
            text: &text,
            several,
            line,
            col: col + start,
        };
        match form.parse(report) {
            Some(parsed) => forms.push(parsed),
            None => ok = false,
        }
        start = end + 1;
    }
    if several && !variadic {
        report.error(
            line,
            col,
            format!("the template `{word}` gives several forms to a key that is not variadic"),
            "forms `a|b` are for the items of a variadic key (`<name>...`), each item taking one \
             of them as the key's doc says; a single key has one form",
        );
        ok = false;
    }
    ok.then(|| KeyTemplate {
        text: word.to_string(),
        forms,
    })
}

/// One form of a template being parsed.
struct Form<'a> {
    template: &'a str,
    text: &'a str,
    several: bool,
    line: usize,
    /// The column of the form's first character.
    col: usize,
}

impl Form<'_> {
    fn parse(&self, report: &mut Report) -> Option<KeyForm> {
        let template = self.template;
        if self.text.is_empty() {
            report.error(
                self.line,
                self.col,
                format!("the template `{template}` has an empty form"),
                "separate the forms of a variadic key's items with single `|`, as in \
                 `<key>|{<key>}:levels`",
            );
            return None;
        }
        let chars: Vec<char> = self.text.chars().collect();
        let mut ok = true;
        let mut parts = Vec::new();
        // The group being read: its column and pieces.
        let mut group: Option<(usize, Vec<KeyPart>)> = None;
        let mut seen_group = false;
        let mut param_before_group: Option<(usize, String)> = None;
        let mut literal = String::new();
        let mut i = 0;
        while i < chars.len() {
            let col = self.col + i;
            let into = |group: &mut Option<(usize, Vec<KeyPart>)>,
                        parts: &mut Vec<KeyPart>,
                        part: KeyPart| match group {
                Some((_, inner)) => inner.push(part),
                None => parts.push(part),
            };
            match chars[i] {
                '<' => {
                    let Some(len) = chars[i + 1..].iter().position(|&c| c == '>') else {
                        report.error(
                            self.line,
                            col,
                            format!("`<` without its `>` in the template `{template}`"),
                            PLACEHOLDER_HINT,
                        );
                        return None;
                    };
                    let name: String = chars[i + 1..i + 1 + len].iter().collect();
                    if !is_snake(&name) || name.len() > MAX_NAME || is_rust_keyword(&name) {
                        report.error(
                            self.line,
                            col,
                            format!("`<{name}>` is not a valid placeholder"),
                            format!(
                                "a placeholder names a parameter in snake_case (a lower-case \
                                 letter, then lower-case letters, digits and `_`), of at most \
                                 {MAX_NAME} characters and not a Rust keyword: the key's \
                                 generated function takes it as a parameter"
                            ),
                        );
                        ok = false;
                    }
                    if !literal.is_empty() {
                        into(&mut group, &mut parts, KeyPart::Text(literal.clone()));
                        literal.clear();
                    }
                    if group.is_none() && !seen_group && param_before_group.is_none() {
                        param_before_group = Some((col, name.clone()));
                    }
                    into(&mut group, &mut parts, KeyPart::Param(name));
                    i += len + 2;
                    continue;
                }
                '>' => {
                    report.error(
                        self.line,
                        col,
                        format!("`>` without its `<` in the template `{template}`"),
                        PLACEHOLDER_HINT,
                    );
                    return None;
                }
                '{' if group.is_some() || seen_group => {
                    report.error(
                        self.line,
                        col,
                        format!("the template `{template}` has a second hash tag"),
                        "a key has one hash tag, the `{…}` group: Redis Cluster hashes only \
                         the first, and every key of a call takes the same one",
                    );
                    return None;
                }
                '{' => {
                    if let Some((param_col, name)) = &param_before_group {
                        report.error(
                            self.line,
                            *param_col,
                            format!("`<{name}>` comes before the hash tag in `{template}`"),
                            "a value before the `{…}` group could hold a `{` of its own and \
                             move the key to another slot: put it inside the group, or after it",
                        );
                        ok = false;
                    }
                    if !literal.is_empty() {
                        parts.push(KeyPart::Text(std::mem::take(&mut literal)));
                    }
                    group = Some((col, Vec::new()));
                }
                '}' => {
                    let Some((_, mut inner)) = group.take() else {
                        report.error(
                            self.line,
                            col,
                            format!("`}}` outside a hash tag in the template `{template}`"),
                            GROUP_HINT,
                        );
                        return None;
                    };
                    if !literal.is_empty() {
                        inner.push(KeyPart::Text(std::mem::take(&mut literal)));
                    }
                    if inner.is_empty() {
                        report.error(
                            self.line,
                            col - 1,
                            format!("the hash tag of the template `{template}` is empty"),
                            "put the parameters that pick the slot between the braces, as in \
                             `{<name>}:waiting`: Redis Cluster ignores an empty `{}`",
                        );
                        return None;
                    }
                    parts.push(KeyPart::HashTag(inner));
                    seen_group = true;
                }
                c => literal.push(c),
            }
            i += 1;
        }
        if let Some((group_col, _)) = group {
            report.error(
                self.line,
                group_col,
                format!("the template `{template}` opens a hash tag it does not close"),
                GROUP_HINT,
            );
            return None;
        }
        if !literal.is_empty() {
            parts.push(KeyPart::Text(literal));
        }
        let form = KeyForm {
            text: self.text.to_string(),
            parts,
        };
        if form.params().is_empty() {
            let what = if self.several {
                format!("the form `{}` of the template `{template}`", self.text)
            } else {
                format!("the template `{template}`")
            };
            report.error(
                self.line,
                self.col,
                format!("{what} has no placeholder"),
                "a template names the key from parameters, as `<key>` or `{<name>}:waiting`; \
                 a key of one fixed name needs none",
            );
            return None;
        }
        ok.then_some(form)
    }
}

/// Every key of one call shares one cluster slot: the script's templates take at most one
/// hash tag (`{<name>}`), and a key without one is that tag's content alone (`<key>`
/// beside `{<key>}:levels`).
pub(crate) fn check_script(keys: &[(&Key, Pos)], report: &mut Report) {
    let templated = || {
        keys.iter()
            .filter_map(|&(key, at)| Some((key, at, key.template.as_ref()?)))
    };
    let mut first: Option<(String, &str)> = None;
    for (key, at, template) in templated() {
        for tag in template.forms.iter().filter_map(KeyForm::hash_tag) {
            match &first {
                None => first = Some((tag, &key.name)),
                Some((seen, of)) if *seen != tag => report.error(
                    at.line,
                    at.col,
                    format!("`{tag}` is another hash tag than `{seen}` of `{of}`"),
                    format!(
                        "the keys of one call share a cluster slot through one hash tag: give \
                         every key of the script the group `{seen}`"
                    ),
                ),
                Some(_) => {}
            }
        }
    }
    let Some((tag, of)) = first else {
        return;
    };
    let content = &tag[1..tag.len() - 1];
    for (key, at, template) in templated() {
        for form in &template.forms {
            if form.hash_tag().is_none() && form.text != content {
                report.error(
                    at.line,
                    at.col,
                    format!(
                        "`{}` of `{}` has no hash tag, so it need not share the slot of `{tag}` \
                         of `{of}`",
                        form.text, key.name
                    ),
                    format!(
                        "beside keys with the group `{tag}`, a key is either `{content}` alone \
                         (which hashes the same) or takes the same group"
                    ),
                );
            }
        }
    }
}
