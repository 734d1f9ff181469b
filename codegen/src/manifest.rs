//! The machine-readable manifest: every script's contract as JSON, for tools and for
//! bindings in other languages. Its shape is described by `manifest.schema.json`.

use serde::Serialize;

use crate::functions::{function_name, library_name};
use crate::model::{Clock, Count, Rule, Script};
use crate::render::{arg_type_name, return_type_name};

/// The manifest's format; a change that breaks a reader bumps it.
pub const MANIFEST_FORMAT: u32 = 1;

#[derive(Serialize)]
struct Manifest<'a> {
    format: u32,
    package: &'a str,
    version: &'a str,
    library: String,
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
    function: String,
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
    doc: &'a str,
}

#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum RuleEntry<'a> {
    Any,
    NonEmpty,
    Range { min: i64, max: i64 },
    OneOf { options: &'a [String] },
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
    doc: &'a str,
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
                        },
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
                function: function_name(version, &script.file.family, &script.file.op),
            }
        })
        .collect();
    let manifest = Manifest {
        format: MANIFEST_FORMAT,
        package,
        version,
        library: library_name(version),
        scripts,
    };
    let mut json = serde_json::to_string_pretty(&manifest).expect("the manifest is plain data");
    json.push('\n');
    json
}
