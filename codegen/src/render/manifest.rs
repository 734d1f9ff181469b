//! The machine-readable manifest: every script's contract as JSON, for tools and for
//! bindings in other languages. Its shape is described by `manifest.schema.json`.

use serde::Serialize;

use crate::model::{Arg, Clock, Count, Header, KeyPart, KeyTemplate, PresetValue, Rule, Script};
use crate::render::contract;
use crate::render::functions::Names;
use crate::render::rust::{arg_type_name, return_type_name};

/// The manifest's format; a change that breaks a reader bumps it.
pub const MANIFEST_FORMAT: u32 = 1;

/// The manifest's note on key templates: how to read them, and why the keys they name
/// share a cluster slot.
const KEY_NAMES: &str = "Each key's template says how the pattern names it from \
    parameters, so that clients in any language name a pattern instance's keys alike. \
    Literal text stands as it is; <param> is the parameter's value, as it is; the one {...} \
    group of a form is the Redis Cluster hash tag: its content, values put in, is wrapped \
    in { and } unless it already holds a hash tag (a '{', later a '}', something between), \
    in which case it stands as it is. An empty value is refused, and so is a group content \
    with a '}' but no hash tag, or one whose hash tag begins in one value and ends in \
    another. All the keys of one call take the same group (a key \
    without one is that group's content alone), so they share one hash slot: one hash tag \
    per pattern instance. A variadic key whose template has several forms (a|b) takes \
    them in turn: a, b, a, b, and so on. Every script checks the keys of a call before it \
    writes anything, and answers BAD_KEYS, naming the key and its template, when a key does \
    not read as its template, or when two keys, or a key and the argument named as one of \
    its placeholders, give that placeholder two values. A placeholder is one value for the \
    whole call, except one that only the variadic key names outside its group: that one \
    takes a value per item (per round of forms), given by the variadic argument of its \
    name if there is one, one per item. The items of a variadic key whose template is a \
    bare <key> are free.";

#[derive(Serialize)]
struct Manifest<'a> {
    format: u32,
    package: &'a str,
    version: &'a str,
    library: String,
    key_names: &'static str,
    scripts: Vec<ScriptEntry<'a>>,
}

#[derive(Serialize)]
struct ScriptEntry<'a> {
    name: String,
    family: &'a str,
    op: &'a str,
    path: &'a str,
    sha1: String,
    flags: &'a [String],
    read_only: bool,
    summary: &'a str,
    description: String,
    keys: Vec<KeyEntry<'a>>,
    args: Vec<ArgEntry<'a>>,
    returns: ReturnEntry<'a>,
    errors: Vec<ErrorEntry<'a>>,
    clock: Option<&'static str>,
    complexity: &'a str,
    defaults: Vec<DefaultEntry<'a>>,
    function: String,
}

/// An `@default`: `value` for a text, `same_as` for another argument's value.
#[derive(Serialize)]
struct DefaultEntry<'a> {
    name: &'a str,
    value: Option<&'a str>,
    same_as: Option<&'a str>,
    doc: &'a str,
}

#[derive(Serialize)]
struct CountEntry {
    min: u32,
    max: Option<u32>,
}

#[derive(Serialize)]
struct KeyEntry<'a> {
    name: &'a str,
    #[serde(rename = "type")]
    ty: &'static str,
    variadic: bool,
    count: CountEntry,
    template: Option<TemplateEntry<'a>>,
    doc: &'a str,
}

#[derive(Serialize)]
struct TemplateEntry<'a> {
    text: &'a str,
    params: Vec<&'a str>,
    forms: Vec<FormEntry<'a>>,
}

#[derive(Serialize)]
struct FormEntry<'a> {
    text: &'a str,
    params: Vec<&'a str>,
    parts: Vec<PartEntry<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum PartEntry<'a> {
    Text { text: &'a str },
    Param { name: &'a str },
    HashTag { parts: Vec<PartEntry<'a>> },
}

fn parts(parts: &[KeyPart]) -> Vec<PartEntry<'_>> {
    parts
        .iter()
        .map(|part| match part {
            KeyPart::Text(text) => PartEntry::Text { text },
            KeyPart::Param(name) => PartEntry::Param { name },
            KeyPart::HashTag(inner) => PartEntry::HashTag {
                parts: self::parts(inner),
            },
        })
        .collect()
}

fn template(template: &KeyTemplate) -> TemplateEntry<'_> {
    TemplateEntry {
        text: &template.text,
        params: template.params(),
        forms: template
            .forms
            .iter()
            .map(|form| FormEntry {
                text: &form.text,
                params: form.params(),
                parts: parts(&form.parts),
            })
            .collect(),
    }
}

#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum RuleEntry<'a> {
    Any,
    NonEmpty,
    Range { min: i64, max: i64 },
    OneOf { options: &'a [String] },
    Length { min: u32, max: Option<u32> },
    Hex { digits: u32 },
}

#[derive(Serialize)]
struct ArgEntry<'a> {
    name: &'a str,
    #[serde(rename = "type")]
    ty: &'static str,
    optional: bool,
    variadic: bool,
    count: CountEntry,
    rule: RuleEntry<'a>,
    /// What the script's own code checks beyond the rule, as its `@error` doc says.
    more: Option<String>,
    doc: &'a str,
}

/// What the script's own code checks of `arg` beyond its rule: the doc of its `BAD_<NAME>`
/// after the words the input checks raise it for (`or more than `burst``), or the whole
/// doc when the input checks do not raise it.
fn more(header: &Header, arg: &Arg) -> Option<String> {
    let code = contract::error_code(&arg.name);
    let doc = &header.errors.iter().find(|e| e.code == code)?.doc;
    let rest = match contract::error_doc(header, &code) {
        Some(generated) => doc.strip_prefix(generated.as_str())?,
        None => doc.as_str(),
    };
    let rest = rest
        .strip_prefix(", ")
        .or_else(|| rest.strip_prefix("; "))
        .unwrap_or(rest);
    let rest = rest.strip_prefix("or ").unwrap_or(rest);
    (!rest.is_empty()).then(|| rest.to_string())
}

#[derive(Serialize)]
struct ReturnEntry<'a> {
    #[serde(rename = "type")]
    ty: String,
    doc: &'a str,
}

#[derive(Serialize)]
struct ErrorEntry<'a> {
    code: &'a str,
    doc: &'a str,
}

fn count(count: Count) -> CountEntry {
    CountEntry {
        min: count.min,
        max: count.max,
    }
}

/// The manifest of `scripts` (sorted as given) for `package` at `version`, as pretty JSON
/// ending with a newline. The same scripts give the same bytes.
pub(crate) fn manifest(scripts: &[Script], package: &str, version: &str) -> String {
    let names = Names::of(scripts, version);
    let scripts = scripts
        .iter()
        .map(|script| {
            let h = &script.header;
            ScriptEntry {
                name: format!("{}/{}", script.file.family, script.file.op),
                family: &script.file.family,
                op: &script.file.op,
                path: &script.file.path,
                sha1: sha1_smol::Sha1::from(&script.file.source)
                    .digest()
                    .to_string(),
                flags: &h.flags,
                read_only: h.flags.iter().any(|f| f == "no-writes"),
                summary: &h.summary,
                description: h.description.join("\n"),
                keys: h
                    .keys
                    .iter()
                    .map(|k| KeyEntry {
                        name: &k.name,
                        ty: k.ty.name(),
                        variadic: k.variadic,
                        count: count(k.count),
                        template: k.template.as_ref().map(template),
                        doc: &k.doc,
                    })
                    .collect(),
                args: h
                    .args
                    .iter()
                    .map(|a| ArgEntry {
                        name: &a.name,
                        ty: arg_type_name(a.ty),
                        optional: a.optional,
                        variadic: a.variadic,
                        count: count(a.count),
                        rule: match &a.rule {
                            Rule::Any => RuleEntry::Any,
                            Rule::NonEmpty => RuleEntry::NonEmpty,
                            Rule::Range { min, max } => RuleEntry::Range {
                                min: *min,
                                max: *max,
                            },
                            Rule::OneOf(options) => RuleEntry::OneOf { options },
                            Rule::Length { min, max } => RuleEntry::Length {
                                min: *min,
                                max: *max,
                            },
                            Rule::Hex { digits } => RuleEntry::Hex { digits: *digits },
                        },
                        more: more(h, a),
                        doc: &a.doc,
                    })
                    .collect(),
                returns: ReturnEntry {
                    ty: return_type_name(&h.returns.ty),
                    doc: &h.returns.doc,
                },
                errors: h
                    .errors
                    .iter()
                    .map(|e| ErrorEntry {
                        code: &e.code,
                        doc: &e.doc,
                    })
                    .collect(),
                clock: h.clock.map(|c| match c {
                    Clock::Server => "server",
                    Clock::Caller => "caller",
                }),
                complexity: &h.complexity,
                defaults: h
                    .defaults
                    .iter()
                    .map(|d| DefaultEntry {
                        name: &d.name,
                        value: match &d.value {
                            PresetValue::Text(text) => Some(text),
                            PresetValue::SameAs(_) => None,
                        },
                        same_as: match &d.value {
                            PresetValue::SameAs(arg) => Some(arg),
                            PresetValue::Text(_) => None,
                        },
                        doc: &d.doc,
                    })
                    .collect(),
                function: names.function(&script.file.family, &script.file.op),
            }
        })
        .collect();
    let manifest = Manifest {
        format: MANIFEST_FORMAT,
        package,
        version,
        library: names.library(),
        key_names: KEY_NAMES,
        scripts,
    };
    let mut json = serde_json::to_string_pretty(&manifest).expect("the manifest is plain data");
    json.push('\n');
    json
}
