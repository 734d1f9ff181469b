//! What every client in another language makes of the checked scripts alike: the files
//! of a package and their stale check, the families, the parameters that name a family's
//! instance, the forms of its key templates, where each key of a family method gets its
//! name from, and the docs of a script as the header gives them. The language renderers
//! ([`super::python`], [`super::typescript`]) turn these into their own code.
//!
//! A family class is built from the parameters that name its instance: the placeholders
//! of the `{…}` hash tags of the family's templates (or, in a family without one, every
//! placeholder of its fixed keys), in order of first appearance. A method of it takes the
//! script's arguments and the placeholders the instance does not give: one an argument of
//! the same name gives is taken from it, one a variadic key names outside its hash tag is
//! a sequence (one value per item, or the variadic argument of its name), and a variadic
//! key named by a bare placeholder takes its key names as they are.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use handlebars::Handlebars;
use serde::Serialize;

use crate::model::{Arg, ArgType, Count, Key, KeyForm, KeyPart, PresetValue, Rule, Script};
use crate::render::rust::{arg_type_name, return_type_name};
use crate::render::{contract, functions};

/// One file of a client package, by its path relative to the package's folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// `src/redis_patterns/_generated/work_queue.py`.
    pub path: String,
    /// Its bytes.
    pub contents: String,
}

/// Where a package keeps what the generator owns: the folders (relative to the package's
/// folder) whatever else in is stale, and the names of folders in them that the
/// language's tools make and the check passes over (Python's caches).
pub struct Owned<'a> {
    /// The generated folders.
    pub dirs: &'a [&'a str],
    /// Folder names skipped inside them.
    pub skipped: &'a [&'a str],
}

/// The files of `files` that differ from what `root` (the package's folder) holds, the
/// missing ones, and the files in the owned folders that `files` lacks: every path
/// relative to `root`, sorted.
pub fn stale(root: &Path, files: &[File], owned: &Owned<'_>) -> std::io::Result<Vec<String>> {
    let mut stale = BTreeSet::new();
    for file in files {
        if std::fs::read(root.join(&file.path)).ok().as_deref() != Some(file.contents.as_bytes()) {
            stale.insert(file.path.clone());
        }
    }
    let expected: BTreeSet<&str> = files.iter().map(|f| f.path.as_str()).collect();
    for extra in owned_files(root, owned)? {
        if !expected.contains(extra.as_str()) {
            stale.insert(extra);
        }
    }
    Ok(stale.into_iter().collect())
}

/// Writes `files` under `root` (the package's folder) and removes the other files of the
/// owned folders; returns what it changed, relative to `root`.
pub fn write(root: &Path, files: &[File], owned: &Owned<'_>) -> std::io::Result<Vec<String>> {
    let changed = stale(root, files, owned)?;
    let expected: BTreeSet<&str> = files.iter().map(|f| f.path.as_str()).collect();
    for path in &changed {
        let full = root.join(path);
        match files.iter().find(|f| &f.path == path) {
            Some(file) => {
                if let Some(parent) = full.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::write(&full, &file.contents)?;
            }
            None if !expected.contains(path.as_str()) => std::fs::remove_file(&full)?,
            None => {}
        }
    }
    Ok(changed)
}

/// Every file under the owned folders of `root`, relative to it, but the skipped ones.
fn owned_files(root: &Path, owned: &Owned<'_>) -> std::io::Result<Vec<String>> {
    fn walk(
        dir: &Path,
        root: &Path,
        skipped: &[&str],
        out: &mut Vec<String>,
    ) -> std::io::Result<()> {
        if !dir.is_dir() {
            return Ok(());
        }
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            if path
                .file_name()
                .is_some_and(|n| skipped.iter().any(|s| n == *s))
            {
                continue;
            }
            if path.is_dir() {
                walk(&path, root, skipped, out)?;
            } else if let Ok(inside) = path.strip_prefix(root) {
                let parts: Vec<String> = inside
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                out.push(parts.join("/"));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    for dir in owned.dirs {
        walk(
            &PathBuf::from(root).join(dir),
            root,
            owned.skipped,
            &mut out,
        )?;
    }
    Ok(out)
}

/// The scripts grouped by family, in their order (the checked scripts come sorted).
pub fn families(scripts: &[Script]) -> Vec<Vec<&Script>> {
    let mut families: Vec<Vec<&Script>> = Vec::new();
    for script in scripts {
        match families.last_mut() {
            Some(family) if family[0].file.family == script.file.family => family.push(script),
            _ => families.push(vec![script]),
        }
    }
    families
}

/// Where a package ships a script's file, relative to the folder of its scripts' parent.
pub fn shipped_path(script: &Script) -> String {
    format!("scripts/{}/{}.lua", script.file.family, script.file.op)
}

/// Whether the script writes nothing (`#!lua flags=no-writes`): it runs with
/// `EVALSHA_RO` / `FCALL_RO`.
pub fn is_read_only(script: &Script) -> bool {
    script.header.flags.iter().any(|f| f == "no-writes")
}

pub fn sha1(text: &str) -> String {
    sha1_smol::Sha1::from(text.as_bytes()).digest().to_string()
}

/// `work_queue` → `WorkQueue`.
pub fn class_name(family: &str) -> String {
    family
        .split('_')
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or(String::new(), |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}

/// The folder of a script's family, as the app names it (`scripts/work_queue`).
pub fn family_folder(script: &Script) -> &str {
    let name = format!("/{}.lua", script.file.op);
    script
        .file
        .path
        .strip_suffix(&name)
        .unwrap_or(&script.file.path)
}

/// A family's instance parameter: its name, and whether it may be left out (every script
/// that names it gives it an `@default`).
pub struct Instance {
    pub name: String,
    pub defaulted: bool,
}

/// The parameters that name a family's instance: the placeholders of every `{…}` group
/// of its templates, or, in a family without one, of its fixed keys' templates, in order
/// of first appearance; the ones with a default last.
pub fn instance_params(family: &[&Script]) -> Vec<Instance> {
    fn push(names: &mut Vec<String>, name: &str) {
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    }
    let mut names: Vec<String> = Vec::new();
    let templates = || {
        family
            .iter()
            .flat_map(|s| &s.header.keys)
            .filter_map(|k| k.template.as_ref().map(|t| (k, t)))
    };
    for (_, template) in templates() {
        for form in &template.forms {
            for part in &form.parts {
                if let KeyPart::HashTag(inner) = part {
                    for inner in inner {
                        if let KeyPart::Param(name) = inner {
                            push(&mut names, name);
                        }
                    }
                }
            }
        }
    }
    if names.is_empty() {
        for (key, template) in templates() {
            if !key.variadic {
                for form in &template.forms {
                    for param in form.params() {
                        push(&mut names, param);
                    }
                }
            }
        }
    }
    // The ones with a default last, as the class's fields take them.
    let mut instance: Vec<Instance> = names
        .into_iter()
        .map(|name| {
            let naming: Vec<&&Script> = family
                .iter()
                .filter(|s| names_placeholder(s, &name))
                .collect();
            let defaulted = naming.iter().all(|s| text_default(s, &name).is_some());
            Instance { name, defaulted }
        })
        .collect();
    instance.sort_by_key(|i| i.defaulted);
    instance
}

/// Whether a template of `script` names placeholder `name`.
fn names_placeholder(script: &Script, name: &str) -> bool {
    script
        .header
        .keys
        .iter()
        .filter_map(|k| k.template.as_ref())
        .any(|t| t.params().contains(&name))
}

/// The `@default` text `script` gives `name`, if any.
pub fn text_default<'a>(script: &'a Script, name: &str) -> Option<&'a str> {
    script
        .header
        .defaults
        .iter()
        .find(|d| d.name == name)
        .and_then(|d| match &d.value {
            PresetValue::Text(text) => Some(text.as_str()),
            PresetValue::SameAs(_) => None,
        })
}

/// The `@default` of argument `arg`, if any.
pub fn arg_default<'a>(script: &'a Script, arg: &Arg) -> Option<&'a PresetValue> {
    script
        .header
        .defaults
        .iter()
        .find(|d| d.name == arg.name)
        .map(|d| &d.value)
}

/// Every form of the family's templates, once per key name, as its module constant:
/// `KEY_<NAME>`, or `KEY_<NAME>_<n>` for the forms of a key of several.
pub fn family_forms(family: &[&Script]) -> Vec<(String, KeyForm)> {
    let mut forms: Vec<(String, KeyForm)> = Vec::new();
    for key in family.iter().flat_map(|s| &s.header.keys) {
        let Some(template) = &key.template else {
            continue;
        };
        for (constant, form) in form_constants(key).into_iter().zip(&template.forms) {
            if forms.iter().all(|(c, _)| c != &constant) {
                forms.push((constant, form.clone()));
            }
        }
    }
    forms
}

/// The constants of a key's forms.
pub fn form_constants(key: &Key) -> Vec<String> {
    let forms = key.template.as_ref().map_or(0, |t| t.forms.len());
    let base = format!("KEY_{}", key.name.to_uppercase());
    if forms == 1 {
        vec![base]
    } else {
        (1..=forms).map(|i| format!("{base}_{i}")).collect()
    }
}

/// The instance parameters no script of the family may default: the values a class is
/// built from and checked with, and the forms they alone name.
pub fn checked_forms<'a>(forms: &'a [(String, KeyForm)], instance: &[Instance]) -> Vec<&'a str> {
    let names: Vec<&str> = instance
        .iter()
        .filter(|i| !i.defaulted)
        .map(|i| i.name.as_str())
        .collect();
    forms
        .iter()
        .filter(|(_, form)| form.params().iter().all(|p| names.contains(p)))
        .map(|(constant, _)| constant.as_str())
        .collect()
}

/// Where one placeholder of a script's keys gets its value in a family method.
#[derive(Clone, PartialEq, Eq)]
pub enum Source {
    /// The instance's field (with a script's `@default` when it is left out).
    Instance(Option<String>),
    /// A method parameter, by its header name: an argument of the same name, or one of
    /// its own.
    Param(String),
}

/// What kind of value a method parameter of its own (not an argument) takes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum OwnKind {
    /// One text: a key name, or a placeholder's value.
    Text,
    /// A sequence of them: the names of a variadic key, or one value per item of it.
    Texts,
}

/// A method parameter that is no argument of the script: a key given as it is, or a
/// placeholder the instance does not give.
pub struct Own {
    /// Its header name.
    pub name: String,
    pub kind: OwnKind,
    /// Its `@default` text, if any.
    pub default: Option<String>,
}

/// How a family method names one key (or the items of the variadic one).
pub enum KeyName {
    /// A key without a template: the method's own parameter of this header name, the
    /// key names as they are (a sequence when `variadic`).
    Given { name: String, variadic: bool },
    /// A key the instance alone names: built with it, once, from this form constant.
    Instance { constant: String },
    /// A key named per call from the method's values, by this form constant.
    PerCall { constant: String },
    /// The items of a variadic key: each of the forms in turn, once per item, where
    /// `each` gives every per-item placeholder its sequence (the header name of the
    /// placeholder, and of the method parameter that holds it).
    Rounds {
        constants: Vec<String>,
        each: Vec<(String, String)>,
    },
}

/// A family method's keys: its own parameters, each placeholder's source, and how each
/// key is named.
pub struct MethodKeys {
    pub own: Vec<Own>,
    /// Every placeholder a per-call name uses, with where its value comes from.
    pub values: Vec<(String, Source)>,
    pub keys: Vec<KeyName>,
    /// Whether a key is named per call from `values`, not once with the instance.
    pub names_per_call: bool,
}

/// How a family method of `script` names its keys, on the instance `instance`.
pub fn method_keys(script: &Script, instance: &[Instance]) -> Result<MethodKeys, String> {
    let h = &script.header;
    let name = format!("{}/{}", script.file.family, script.file.op);
    let fixed_args: Vec<&Arg> = h.args.iter().filter(|a| !a.variadic).collect();
    let variadic_arg = h.args.iter().find(|a| a.variadic);
    let fixed_names: BTreeSet<&str> = h
        .keys
        .iter()
        .filter(|k| !k.variadic)
        .filter_map(|k| k.template.as_ref())
        .flat_map(|t| t.params())
        .collect();
    let mut own: Vec<Own> = Vec::new();
    let mut values: Vec<(String, Source)> = Vec::new();
    let mut each: Vec<(String, String)> = Vec::new();
    let mut keys = Vec::new();
    let mut names_per_call = false;
    let call_scope = |param: &str, own: &mut Vec<Own>, values: &mut Vec<(String, Source)>| {
        if values.iter().any(|(p, _)| p == param) {
            return;
        }
        let source = if let Some(arg) = fixed_args.iter().find(|a| a.name == param) {
            Source::Param(arg.name.clone())
        } else if let Some(inst) = instance.iter().find(|i| i.name == param) {
            Source::Instance(
                inst.defaulted
                    .then(|| text_default(script, param).map(str::to_owned))
                    .flatten(),
            )
        } else {
            own.push(Own {
                name: param.to_owned(),
                kind: OwnKind::Text,
                default: text_default(script, param).map(str::to_owned),
            });
            Source::Param(param.to_owned())
        };
        values.push((param.to_owned(), source));
    };
    for key in &h.keys {
        let Some(template) = &key.template else {
            own.push(Own {
                name: key.name.clone(),
                kind: if key.variadic {
                    OwnKind::Texts
                } else {
                    OwnKind::Text
                },
                default: None,
            });
            keys.push(KeyName::Given {
                name: key.name.clone(),
                variadic: key.variadic,
            });
            continue;
        };
        let constants = form_constants(key);
        if !key.variadic {
            for param in template.params() {
                call_scope(param, &mut own, &mut values);
            }
            // A key the instance alone names was built with it.
            let of_instance = template.params().iter().all(|param| {
                instance.iter().any(|i| i.name == *param && !i.defaulted)
                    && values
                        .iter()
                        .any(|(p, source)| p == param && matches!(source, Source::Instance(None)))
            });
            names_per_call |= !of_instance;
            let constant = constants[0].clone();
            keys.push(if of_instance {
                KeyName::Instance { constant }
            } else {
                KeyName::PerCall { constant }
            });
            continue;
        }
        if let [form] = template.forms.as_slice()
            && let [KeyPart::Param(_)] = form.parts.as_slice()
        {
            // A bare placeholder: the items are free key names.
            own.push(Own {
                name: key.name.clone(),
                kind: OwnKind::Texts,
                default: None,
            });
            keys.push(KeyName::Given {
                name: key.name.clone(),
                variadic: true,
            });
            continue;
        }
        // A value per item: a placeholder the variadic key names outside its hash tag,
        // and no fixed key or argument names.
        let mut rounds = Vec::new();
        for param in template.params() {
            let outside = template.forms.iter().any(|form| {
                form.parts
                    .iter()
                    .any(|p| matches!(p, KeyPart::Param(n) if n == param))
            });
            let by_arg = fixed_args.iter().any(|a| a.name == param);
            if outside && !fixed_names.contains(param) && !by_arg {
                rounds.push(param);
            } else {
                call_scope(param, &mut own, &mut values);
            }
        }
        if rounds.is_empty() {
            return Err(format!(
                "{name}: the variadic key `{}` takes no value per item, so the family's class \
                 cannot tell how many items it has",
                key.name
            ));
        }
        for param in rounds {
            let source = match variadic_arg.filter(|a| a.name == param) {
                Some(arg) => arg.name.clone(),
                None => {
                    own.push(Own {
                        name: param.to_owned(),
                        kind: OwnKind::Texts,
                        default: None,
                    });
                    param.to_owned()
                }
            };
            each.push((param.to_owned(), source));
        }
        names_per_call = true;
        keys.push(KeyName::Rounds {
            constants,
            each: each.clone(),
        });
    }
    Ok(MethodKeys {
        own,
        values,
        keys,
        names_per_call,
    })
}

// The docs: the header, as each language's doc comments show it.

/// How a language's docs name things.
pub struct DocStyle {
    /// A header name as the language's identifier.
    pub ident: fn(&str) -> String,
    /// The paragraph before the error codes.
    pub raises: &'static str,
}

/// The docs of a script's function: the whole header.
pub fn function_doc(script: &Script, name: &str, style: &DocStyle) -> Vec<String> {
    let keys = script.header.keys.iter().map(|key| {
        let named = key
            .template
            .as_ref()
            .map_or(String::new(), |t| format!(", named `{}`", t.text));
        let many = if key.variadic {
            format!(", {}", count_words(key.count, "key names"))
        } else {
            String::new()
        };
        format!(
            "    {} (a {}{many}{named}): {}",
            (style.ident)(&key.name),
            key.ty.name(),
            key.doc
        )
    });
    script_doc(
        script,
        name,
        "Keys, in `KEYS` order (all in one cluster hash slot):",
        keys.collect(),
        style,
    )
}

/// The docs of a family method: the header, with the keys as the method names them.
pub fn method_doc(script: &Script, name: &str, style: &DocStyle) -> Vec<String> {
    let keys = script.header.keys.iter().map(|key| {
        let named = key
            .template
            .as_ref()
            .map_or("given as it is".to_owned(), |t| format!("`{}`", t.text));
        format!("    {} ({}): {}", key.name, named, key.doc)
    });
    script_doc(
        script,
        name,
        "Keys, named from their templates:",
        keys.collect(),
        style,
    )
}

/// The header as docs: its prose, then `keys` under `heading`, the arguments, the reply,
/// the error codes, the complexity and the clock.
fn script_doc(
    script: &Script,
    name: &str,
    heading: &str,
    keys: Vec<String>,
    style: &DocStyle,
) -> Vec<String> {
    let mut doc = header_prose(script, name);
    if !keys.is_empty() {
        doc.push(String::new());
        doc.push(heading.to_owned());
        doc.extend(keys);
    }
    doc.extend(args_doc(script, style));
    doc.extend(tail_doc(script, style));
    doc
}

fn header_prose(script: &Script, name: &str) -> Vec<String> {
    let h = &script.header;
    let mut doc = vec![h.summary.clone()];
    if !h.description.is_empty() {
        doc.push(String::new());
        doc.extend(h.description.iter().cloned());
    }
    doc.push(String::new());
    doc.push(format!(
        "Runs `{}` (`{name}`){}.",
        shipped_path(script),
        if is_read_only(script) {
            " with EVALSHA_RO (FCALL_RO): it writes nothing"
        } else {
            ""
        }
    ));
    doc
}

fn args_doc(script: &Script, style: &DocStyle) -> Vec<String> {
    let h = &script.header;
    if h.args.is_empty() {
        return Vec::new();
    }
    let mut doc = vec![String::new(), "Args:".to_owned()];
    for arg in &h.args {
        let mut what = vec![format!(
            "`{}{}{}`",
            arg_type_name(arg.ty),
            if arg.optional { "?" } else { "" },
            if arg.variadic { "..." } else { "" }
        )];
        what.extend(rule_words(arg));
        if arg.variadic {
            what.push(count_words(arg.count, "values"));
        }
        if let Some(default) = arg_default(script, arg) {
            what.push(match default {
                PresetValue::Text(text) => format!("default `{text}` in the class"),
                PresetValue::SameAs(other) => format!("default `{other}` in the class"),
            });
        }
        doc.push(format!(
            "    {} ({}): {}",
            (style.ident)(&arg.name),
            what.join(", "),
            arg.doc
        ));
    }
    doc
}

fn tail_doc(script: &Script, style: &DocStyle) -> Vec<String> {
    let h = &script.header;
    let mut doc = vec![
        String::new(),
        "Returns:".to_owned(),
        format!(
            "    `{}`: {}",
            return_type_name(&h.returns.ty),
            h.returns.doc
        ),
    ];
    if !h.errors.is_empty() {
        doc.push(String::new());
        doc.push(style.raises.to_owned());
        for e in &h.errors {
            doc.push(format!("        {}: {}", e.code, e.doc));
        }
    }
    doc.push(String::new());
    let clock = match h.clock {
        None => "",
        Some(crate::model::Clock::Server) => " Clock: the server's TIME.",
        Some(crate::model::Clock::Caller) => " Clock: the caller's `now`.",
    };
    doc.push(format!("Complexity: {}.{clock}", h.complexity));
    doc
}

/// What an argument's values must be, for the docs.
fn rule_words(arg: &Arg) -> Option<String> {
    Some(match &arg.rule {
        Rule::Any => return None,
        Rule::NonEmpty => "not empty".into(),
        Rule::Range { min, max } => format!(
            "from {} to {}{}",
            contract::bound(*min),
            contract::bound(*max),
            if arg.ty == ArgType::Ms { " ms" } else { "" }
        ),
        Rule::OneOf(options) => format!(
            "one of {}",
            options
                .iter()
                .map(|o| format!("`{o}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Rule::Length { min, max: None } => format!("{min} bytes at least"),
        Rule::Length {
            min,
            max: Some(max),
        } => format!("{min} to {max} bytes"),
        Rule::Hex { digits } => format!("{digits} hex digits"),
    })
}

fn count_words(count: Count, noun: &str) -> String {
    match count.max {
        None => format!("at least {} {noun}", count.min),
        Some(max) if max == count.min => format!("{max} {noun}"),
        Some(max) => format!("{} to {max} {noun}", count.min),
    }
}

/// `line` cut at spaces into lines of at most `width` characters (a longer word stands
/// alone); the continuation of an indented line is indented 4 more.
pub fn wrap(line: &str, width: usize) -> Vec<String> {
    let lead = line.len() - line.trim_start().len();
    let more = if lead > 0 { lead + 4 } else { 0 };
    let mut lines = Vec::new();
    let mut current = line[..lead].to_owned();
    let mut empty = true;
    for word in line[lead..].split(' ') {
        if !empty && current.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::replace(&mut current, " ".repeat(more)));
            empty = true;
        }
        if !empty {
            current.push(' ');
        }
        current.push_str(word);
        empty = false;
    }
    lines.push(current);
    lines
}

/// The `@arg` line's numeric range of an integer or duration argument, if it is one.
pub fn int_range(arg: &Arg) -> Option<(i64, i64)> {
    matches!(arg.ty, ArgType::Int | ArgType::Uint | ArgType::Ms).then(|| arg.range())
}

/// The parameters of a function or method: on one line (joined) when `line` of them fits
/// in `width` characters, else one a line, each at `indent` plus `step`, the closing one
/// back at `indent`.
pub fn params_layout(
    params: &[String],
    line: impl Fn(&str) -> String,
    indent: &str,
    step: &str,
    width: usize,
) -> String {
    let joined = params.join(", ");
    if line(&joined).chars().count() <= width {
        return joined;
    }
    let items: String = params
        .iter()
        .map(|p| format!("\n{indent}{step}{p},"))
        .collect();
    format!("{items}\n{indent}")
}

/// A header name made an identifier of `language` by `ident`, once among `names`, or an
/// error naming the script.
pub fn unique(
    names: &mut BTreeSet<String>,
    name: &str,
    script: &str,
    ident: fn(&str) -> String,
    language: &str,
) -> Result<String, String> {
    let ident = ident(name);
    if !names.insert(ident.clone()) {
        return Err(format!(
            "{script}: two parameters would be called `{ident}` in {language}; rename one"
        ));
    }
    Ok(ident)
}

/// How a language spells the literals of `@default` texts.
pub struct Literals {
    /// The language, for messages.
    pub language: &'static str,
    /// `true` and `false`.
    pub bools: [&'static str; 2],
    /// A string literal holding a text.
    pub text: fn(&str) -> String,
}

/// The literal of an argument's `@default` text, or an error naming the script when the
/// language has none for it.
pub fn default_literal(
    arg: &Arg,
    text: &str,
    script: &str,
    lits: &Literals,
) -> Result<String, String> {
    Ok(match arg.ty {
        ArgType::Int | ArgType::Uint | ArgType::Ms if text.parse::<i64>().is_ok() => text.into(),
        ArgType::Float if text.parse::<f64>().is_ok_and(f64::is_finite) => text.into(),
        ArgType::Bool if text == "1" => lits.bools[0].into(),
        ArgType::Bool if text == "0" => lits.bools[1].into(),
        ArgType::String | ArgType::Bytes => (lits.text)(text),
        _ => {
            return Err(format!(
                "{script}: `@default {} {text}` has no {} literal for a `{}`",
                arg.name,
                lits.language,
                arg_type_name(arg.ty)
            ));
        }
    })
}

/// What a language's template gets of one script: its contract's constant, its function,
/// and how that function encodes, names its keys and decodes, each an expression of the
/// language's.
#[derive(Serialize)]
pub struct ScriptCtx {
    pub constant: String,
    pub constant_doc: String,
    pub value: String,
    pub function: String,
    pub params: String,
    pub returns: String,
    pub doc: String,
    pub encode: String,
    pub keys: String,
    /// The reply's decoder, an expression of the runtime's.
    pub decode: String,
    /// The decoder's name: built once, at import.
    pub reply: String,
}

/// What a language's template gets of one method of a family's class.
#[derive(Serialize)]
pub struct MethodCtx {
    pub name: String,
    pub params: String,
    pub returns: String,
    pub doc: String,
    pub encode: String,
    /// The values of the placeholders a per-call key name uses.
    pub values: String,
    /// Whether a key is named per call (from the values), not once when the instance is built.
    pub names_per_call: bool,
    pub keys: Vec<String>,
    pub constant: String,
    pub reply: String,
}

/// The docs of a family's class: what it is built from (each value named by `ident`), and
/// what a value `left` out takes.
pub fn class_doc(
    family: &[&Script],
    instance: &[Instance],
    ident: fn(&str) -> String,
    left: &str,
) -> Vec<String> {
    let named = |values: &[&Instance]| {
        values
            .iter()
            .map(|i| format!("`{}`", ident(&i.name)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut lines = vec![format!(
        "The scripts of `{}/`, on one instance of the pattern.",
        family_folder(family[0])
    )];
    lines.push(String::new());
    if instance.is_empty() {
        lines.push("Every key is given to each method.".to_owned());
    } else {
        lines.push(format!(
            "Built from {}: each method names its keys from their templates with these \
             values, and checks them when the instance is built (`InvalidInput`, \
             `BAD_KEYS`, for an empty value or stray braces).",
            named(&instance.iter().collect::<Vec<_>>())
        ));
    }
    let defaulted: Vec<&Instance> = instance.iter().filter(|i| i.defaulted).collect();
    if !defaulted.is_empty() {
        lines.push(String::new());
        lines.push(format!(
            "{left}, {} takes each script's `@default`, as the Rust API does.",
            named(&defaulted)
        ));
    }
    lines
}

/// The docs of a family's module.
pub fn module_doc(family: &[&Script]) -> Vec<String> {
    vec![
        format!("The scripts of `{}/`.", family_folder(family[0])),
        String::new(),
        format!(
            "A function per script, whose parameters are the header's keys then arguments, \
             and `{}`, whose methods name the keys from their templates.",
            class_name(&family[0].file.family)
        ),
    ]
}

/// How a client language spells what the code shared by the renderers writes: its
/// identifiers and literals, and the names of its runtime. The logic that writes them
/// (the parameters of a script's function, how a method names its keys, the template
/// constants, the files a package ships) is written once, here.
pub struct Lang {
    /// The language's name in diagnostics: `Python`.
    pub name: &'static str,
    /// An identifier for a header's name (a reserved word escaped).
    pub ident: fn(&str) -> String,
    /// A string literal.
    pub str: fn(&str) -> String,
    /// A list literal of expressions (a tuple in Python).
    pub list: fn(&[String]) -> String,
    /// A map literal from names (written as strings) to expressions.
    pub map: fn(Vec<(String, String)>) -> String,
    /// The runtime module as the generated code names it, with its dot: `_rt.`.
    pub rt: &'static str,
    /// What builds an instance of one of the runtime's classes: `` or `new `.
    pub new: &'static str,
    /// What spreads a list into the items of a list: `*`.
    pub spread: &'static str,
    /// The runtime's constructors of a template's text, placeholder and hash tag.
    pub parts: [&'static str; 3],
    /// The type of a key's name, and of a variadic key's names.
    pub key_type: &'static str,
    pub keys_type: &'static str,
    /// A method's key that the instance named once, from its form constant.
    pub instance_key: fn(&str) -> String,
    /// The name of a method's placeholder values, which per-call key names read.
    pub names: &'static str,
}

/// A Handlebars registry of `templates` (name, text): strict, nothing escaped.
pub fn handlebars(templates: &[(&str, &'static str)]) -> Result<Handlebars<'static>, String> {
    let mut hb = Handlebars::new();
    hb.set_strict_mode(true);
    hb.register_escape_fn(handlebars::no_escape);
    for (name, text) in templates {
        hb.register_template_string(name, *text)
            .map_err(|e| format!("template error: {e}"))?;
    }
    Ok(hb)
}

/// Template `name` of `hb` rendered with `ctx`.
pub fn render_template(
    hb: &Handlebars<'_>,
    name: &str,
    ctx: &impl Serialize,
) -> Result<String, String> {
    hb.render(name, ctx)
        .map_err(|e| format!("template error: {e}"))
}

/// `files` and the files every package ships beside them, under `prefix` (the folder of
/// the package's code, with its slash, or empty): the Functions library and every
/// script as it is; all sorted by path.
pub fn with_shipped(
    mut files: Vec<File>,
    scripts: &[Script],
    version: &str,
    prefix: &str,
) -> Vec<File> {
    files.push(File {
        path: format!("{prefix}functions.lua"),
        contents: functions::library(scripts, version),
    });
    for script in scripts {
        files.push(File {
            path: format!("{prefix}{}", shipped_path(script)),
            contents: script.file.source.clone(),
        });
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

/// Refuses a method whose name (`function`) is that of one of the instance's values,
/// which the class holds under the same names.
pub fn method_beside_instance(
    script: &Script,
    function: &str,
    instance: &[Instance],
    lang: &Lang,
) -> Result<(), String> {
    if instance.iter().any(|i| (lang.ident)(&i.name) == function) {
        return Err(format!(
            "{}/{}: the method would take the name of the instance's `{function}`; rename one",
            script.file.family, script.file.op
        ));
    }
    Ok(())
}

/// A key template's form as a module constant of a family.
#[derive(Serialize)]
pub struct FormCtx {
    pub constant: String,
    pub doc: String,
    pub value: String,
}

/// The module constants of `forms`, the key templates of family `module`, each with its
/// doc (`doc` writes the language's).
pub fn form_ctxs(
    module: &str,
    forms: &[(String, KeyForm)],
    lang: &Lang,
    doc: impl Fn(&[String]) -> String,
) -> Vec<FormCtx> {
    forms
        .iter()
        .map(|(constant, form)| FormCtx {
            constant: constant.clone(),
            doc: doc(&[format!("The name template `{}`.", form.text)]),
            value: format!(
                "{}{}Form({}, {}, {})",
                lang.new,
                lang.rt,
                (lang.str)(module),
                (lang.str)(&form.text),
                parts_literal(&form.parts, lang)
            ),
        })
        .collect()
}

/// A template's parts, as the runtime's constructors build them.
fn parts_literal(parts: &[KeyPart], lang: &Lang) -> String {
    let [text, value, tag] = lang.parts;
    let items: Vec<String> = parts
        .iter()
        .map(|part| match part {
            KeyPart::Text(s) => format!("{}{text}({})", lang.rt, (lang.str)(s)),
            KeyPart::Param(name) => format!("{}{value}({})", lang.rt, (lang.str)(name)),
            KeyPart::HashTag(inner) => format!("{}{tag}({})", lang.rt, parts_literal(inner, lang)),
        })
        .collect();
    (lang.list)(&items)
}

/// The parameters of a script's function: its keys, then its arguments (each typed by
/// `arg_type`), every one named once.
pub struct FunctionParams {
    /// `<ident>: <type>`, in order.
    pub params: Vec<String>,
    /// The expressions of the keys (a variadic key's spread).
    pub keys: Vec<String>,
    /// The expressions of the arguments.
    pub values: Vec<String>,
}

/// The parameters of the function of `script` (named `name` in diagnostics), whose
/// contract is the module constant `constant`.
pub fn function_params(
    script: &Script,
    name: &str,
    constant: &str,
    lang: &Lang,
    arg_type: fn(&Arg) -> String,
) -> Result<FunctionParams, String> {
    let h = &script.header;
    let mut seen = BTreeSet::new();
    let mut out = FunctionParams {
        params: Vec::new(),
        keys: Vec::new(),
        values: Vec::new(),
    };
    for key in &h.keys {
        let ident = unique(&mut seen, &key.name, name, lang.ident, lang.name)?;
        if key.variadic {
            out.params.push(format!("{ident}: {}", lang.keys_type));
            out.keys.push(format!(
                "{}{}many({constant}, {}, {ident})",
                lang.spread,
                lang.rt,
                (lang.str)(&key.name)
            ));
        } else {
            out.params.push(format!("{ident}: {}", lang.key_type));
            out.keys.push(ident);
        }
    }
    for arg in &h.args {
        let ident = unique(&mut seen, &arg.name, name, lang.ident, lang.name)?;
        out.params.push(format!("{ident}: {}", arg_type(arg)));
        out.values.push(ident);
    }
    Ok(out)
}

/// The expressions of a family method's keys, named as `keys` says, in the method of the
/// script whose contract is `constant`; `value` is the expression of a method parameter
/// or placeholder by its header name.
pub fn method_key_exprs(
    keys: &[KeyName],
    constant: &str,
    lang: &Lang,
    value: &dyn Fn(&str) -> String,
) -> Vec<String> {
    keys.iter()
        .map(|key| match key {
            KeyName::Given {
                name,
                variadic: true,
            } => format!(
                "{}{}many({constant}, {}, {})",
                lang.spread,
                lang.rt,
                (lang.str)(name),
                value(name)
            ),
            KeyName::Given { name, .. } => value(name),
            KeyName::Instance { constant: form } => (lang.instance_key)(form),
            KeyName::PerCall { constant: form } => {
                format!("{form}.name({constant}.name, {})", lang.names)
            }
            KeyName::Rounds { constants, each } => format!(
                "{}{}rounds({constant}, {}, {}, {})",
                lang.spread,
                lang.rt,
                (lang.list)(constants),
                lang.names,
                (lang.map)(
                    each.iter()
                        .map(|(param, source)| (param.clone(), value(source)))
                        .collect()
                )
            ),
        })
        .collect()
}

/// The checked scripts of the generator's good fixtures, which the renderers' tests render.
#[cfg(test)]
pub(crate) fn fixtures() -> Vec<Script> {
    let config = crate::Config::new();
    config
        .analyze(&config.read("tests/fixtures/good").unwrap())
        .unwrap()
}
