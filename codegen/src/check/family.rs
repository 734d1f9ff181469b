//! Key names within a family: one template per key name.

use crate::diagnostic::Diagnostic;
use crate::model::Script;

/// Within each family, a key name is one key of the pattern: every script that gives it a
/// template gives it the same one. A key of several forms also names a function of the
/// family's `keys` module per form (`boards_1`, `boards_2`), which must not be another
/// key's name.
pub(crate) fn check_family(scripts: &[Script]) -> Vec<Diagnostic> {
    let mut problems = Vec::new();
    let mut seen: Vec<(&str, &str, &Script, usize)> = Vec::new();
    for script in scripts {
        let family = script.file.family.as_str();
        for (index, key) in script.header.keys.iter().enumerate() {
            let Some(template) = &key.template else {
                continue;
            };
            let first = seen
                .iter()
                .find(|(f, name, _, _)| *f == family && *name == key.name);
            match first {
                None => seen.push((family, &key.name, script, index)),
                Some((_, _, other, other_index)) => {
                    let theirs = other.header.keys[*other_index]
                        .template
                        .as_ref()
                        .expect("only templated keys are seen");
                    if theirs.text != template.text {
                        let (line, col) = template_position(script, index, &template.text);
                        let (other_line, _) = template_position(other, *other_index, "");
                        problems.push(Diagnostic {
                            path: script.file.path.clone(),
                            line,
                            col,
                            message: format!(
                                "`{}` is named `{}` here but `{}` in {}:{other_line}",
                                key.name, template.text, theirs.text, other.file.path
                            ),
                            hint: "a key name is one key of the family's pattern: give it the \
                                   same template in every script of the family, or another name"
                                .into(),
                        });
                    }
                }
            }
        }
    }
    for (family, name, script, index) in &seen {
        let template = script.header.keys[*index]
            .template
            .as_ref()
            .expect("only templated keys are seen");
        if template.forms.len() < 2 {
            continue;
        }
        for n in 1..=template.forms.len() {
            let function = format!("{name}_{n}");
            if seen
                .iter()
                .any(|(f, other, ..)| f == family && *other == function)
            {
                let (line, col) = template_position(script, *index, &template.text);
                problems.push(Diagnostic {
                    path: script.file.path.clone(),
                    line,
                    col,
                    message: format!(
                        "the key function `{function}` of form {n} of `{name}` is also a key \
                         of `{family}`"
                    ),
                    hint: format!(
                        "rename `{name}` or the key `{function}`: the family's `keys` module \
                         names each form of `{name}` `{name}_<n>`"
                    ),
                });
            }
        }
    }
    problems
}

/// The line of the `index`-th `@key` of `script`, and the column where `text` starts on
/// it (the line's first column when it is not found).
fn template_position(script: &Script, index: usize, text: &str) -> (usize, usize) {
    let found = script
        .file
        .source
        .lines()
        .enumerate()
        .filter(|(_, line)| {
            line.strip_prefix("---")
                .is_some_and(|rest| rest.trim_start().starts_with("@key"))
        })
        .nth(index);
    match found {
        Some((i, line)) => {
            let col = match line.find(text) {
                Some(byte) if !text.is_empty() => line[..byte].chars().count() + 1,
                _ => 1,
            };
            (i + 1, col)
        }
        None => (1, 1),
    }
}
