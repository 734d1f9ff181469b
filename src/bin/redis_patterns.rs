//! `redis-patterns`: the crate's scripts from a shell. List and read them, export them
//! (as files, a Redis Functions library or a JSON manifest), load them into a server or
//! a cluster, check a folder of scripts of your own and rewrite their generated parts, and
//! call one.
//!
//! Exit codes: 0 when the command did what was asked; 1 when Redis or a script answered
//! an error, or `check` found problems; 2 for a command line that makes no sense (an
//! unknown script, a bad argument), with nothing sent.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use redis::Value;
use redis_patterns::{
    Param, Rule, Script, ScriptCall, ScriptMode, catalog, float_from_text, integer_from_text,
};

/// What the numbers of each type must be, as a usage error says it: the scripts' one rule.
const WHOLE: &str = "a whole number (digits, an optional leading -, no leading zero)";
const WHOLE_0: &str = "a whole number, 0 or more (digits, no leading zero)";
const FLOAT: &str = "a finite decimal number (such as 1.5, -2, 1e+20, 1e-07 or 1.0E16)";

/// A `uint` or `ms` value by the one rule for integers.
fn uint_from_text(text: &str) -> Option<u64> {
    integer_from_text(text).and_then(|n| u64::try_from(n).ok())
}

#[derive(Parser)]
#[command(
    name = "redis-patterns",
    version,
    about = "The redis-patterns scripts from a shell: list, show, export, load, check, fix, call.",
    after_help = "Examples:\n  \
        redis-patterns list\n  \
        redis-patterns show identity_lock/release\n  \
        redis-patterns export ./redis-patterns --what manifest\n  \
        redis-patterns load redis://127.0.0.1:6379 --functions\n  \
        redis-patterns check ./sql\n  \
        redis-patterns fix ./sql\n  \
        redis-patterns call identity_lock/release --url redis://127.0.0.1 --key lock:1 --arg secret"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Lists every script: its name, `ro` when it writes nothing, and what it does.
    List,
    /// Shows a script's header: what it does, its keys, arguments, reply and errors.
    Show {
        /// The script, as `family/op` (`identity_lock/release`).
        name: String,
        /// Prints the whole script instead.
        #[arg(long)]
        source: bool,
    },
    /// Writes the scripts, the Functions library or the manifest to a folder.
    Export {
        /// The folder (created if missing).
        dir: PathBuf,
        /// What to write.
        #[arg(long, value_enum, default_value_t = What::All)]
        what: What,
    },
    /// Loads every script (SCRIPT LOAD) or the Functions library (FUNCTION LOAD) into a
    /// server, or into every primary of a cluster.
    Load {
        /// The server: `redis://host:port` (`rediss://` for TLS).
        url: String,
        /// Loads the Functions library instead of the scripts.
        #[arg(long)]
        functions: bool,
        /// The URL is a node of a cluster: load into every primary.
        #[arg(long)]
        cluster: bool,
    },
    /// Checks a folder of scripts (`<dir>/<family>/<op>.lua`) against their headers, as
    /// the build does, with every problem as `file:line:col`.
    Check {
        /// The folder.
        dir: PathBuf,
    },
    /// Rewrites the input checks of every script in a folder from its header, and pastes
    /// the shared helpers it names (`@uses`) from their `_shared.lua` files.
    Fix {
        /// The folder.
        dir: PathBuf,
    },
    /// Calls a script: checks the keys and arguments against its header, then runs it.
    ///
    /// Name the keys as the Rust API does with `--param`: each key is built from its
    /// header's template (`{<name>}:waiting`), as in `call work_queue/counts --param
    /// name=emails`. A fixed key takes a parameter's first value; a variadic key takes an
    /// item per value of its parameters given several times (`--param tag=a --param
    /// tag=b`), one key of each form in turn for a key of several forms; `--key` gives a
    /// variadic key's items instead. Or name every key yourself with `--key`.
    Call {
        /// The script, as `family/op`.
        name: String,
        /// The server: `redis://host:port`.
        #[arg(long, default_value = "redis://127.0.0.1:6379")]
        url: String,
        /// A key, in the header's order (repeat for each); with `--param`, the items of
        /// the variadic key.
        #[arg(long = "key")]
        keys: Vec<String>,
        /// A parameter of the keys' templates, as NAME=VALUE (repeat for each): builds
        /// every key as the pattern names it.
        #[arg(long = "param", value_name = "NAME=VALUE")]
        params: Vec<String>,
        /// An argument, in the header's order (repeat for each); an empty one for `?` types.
        #[arg(long = "arg", allow_hyphen_values = true)]
        args: Vec<String>,
        /// Runs it as a Redis Function (FCALL), loading the library if the server lacks it.
        #[arg(long)]
        functions: bool,
        /// The URL is a node of a cluster.
        #[arg(long)]
        cluster: bool,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum What {
    /// `scripts/<family>/<op>.lua`
    Scripts,
    /// `functions.lua`: the Redis Functions library
    Functions,
    /// `manifest.json` and `manifest.schema.json`
    Manifest,
    /// All of them.
    All,
}

/// How a command failed: what to print, and the exit code.
struct Failure {
    message: String,
    code: u8,
}

impl Failure {
    fn usage(message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
            code: 2,
        }
    }

    fn failed(message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
            code: 1,
        }
    }
}

impl From<redis_patterns::Error> for Failure {
    fn from(err: redis_patterns::Error) -> Self {
        match err {
            redis_patterns::Error::InvalidInput { .. } => Failure::usage(err.to_string()),
            err => Failure::failed(err.to_string()),
        }
    }
}

impl From<redis::RedisError> for Failure {
    fn from(err: redis::RedisError) -> Self {
        Failure::failed(err.to_string())
    }
}

impl From<std::io::Error> for Failure {
    fn from(err: std::io::Error) -> Self {
        Failure::failed(err.to_string())
    }
}

fn main() -> ExitCode {
    match Cli::parse().command {
        // The generator's own commands, with its output and exit codes.
        Command::Check { dir } => redis_patterns_codegen::cli::check(&dir),
        Command::Fix { dir } => redis_patterns_codegen::cli::fix(&dir),
        command => match run(command) {
            Ok(()) => ExitCode::SUCCESS,
            Err(failure) => {
                eprintln!("redis-patterns: {}", failure.message.trim_end());
                ExitCode::from(failure.code)
            }
        },
    }
}

fn run(command: Command) -> Result<(), Failure> {
    match command {
        Command::List => {
            for script in catalog::scripts() {
                let ro = if script.is_read_only() { "ro" } else { "  " };
                println!("{:<34} {ro}  {}", script.name, script.summary);
            }
            Ok(())
        }
        Command::Show { name, source } => {
            let script = find(&name)?;
            if source {
                print!("{}", script.source);
            } else {
                show(script);
            }
            Ok(())
        }
        Command::Export { dir, what } => export(&dir, what),
        Command::Load {
            url,
            functions,
            cluster,
        } => {
            let mut con = connect(&url, cluster)?;
            if functions {
                catalog::load_functions(&mut *con)?;
                println!(
                    "loaded the library {} ({} functions) into {url}{}",
                    catalog::functions_library(),
                    catalog::scripts().len(),
                    if cluster { ", every primary" } else { "" }
                );
            } else {
                catalog::load_all(&mut *con)?;
                println!(
                    "loaded {} scripts into {url}{}",
                    catalog::scripts().len(),
                    if cluster { ", every node" } else { "" }
                );
            }
            Ok(())
        }
        Command::Check { .. } | Command::Fix { .. } => unreachable!("main runs check and fix"),
        Command::Call {
            name,
            url,
            keys,
            params,
            args,
            functions,
            cluster,
        } => {
            let script = find(&name)?;
            let keys = if params.is_empty() {
                keys
            } else {
                template_keys(script, &params, &keys)?
            };
            let op = call(script, &keys, &args)?.via(if functions {
                ScriptMode::Functions
            } else {
                ScriptMode::Eval
            });
            let mut con = connect(&url, cluster)?;
            let reply = op.run(&mut *con)?;
            print_value(&reply, 0);
            Ok(())
        }
    }
}

fn find(name: &str) -> Result<&'static Script, Failure> {
    catalog::find(name).ok_or_else(|| {
        let family = name.split('/').next().unwrap_or(name);
        let near: Vec<&str> = catalog::scripts()
            .iter()
            .map(|s| s.name)
            .filter(|n| n.starts_with(family))
            .collect();
        let hint = if near.is_empty() {
            "`redis-patterns list` shows them all".to_owned()
        } else {
            format!("did you mean one of {}?", near.join(", "))
        };
        Failure::usage(format!("no script `{name}`; {hint}"))
    })
}

fn connect(url: &str, cluster: bool) -> Result<Box<dyn redis::ConnectionLike>, Failure> {
    let failed =
        |err: redis::RedisError| Failure::failed(format!("cannot connect to {url}: {err}"));
    if cluster {
        let client = redis::cluster::ClusterClient::new(vec![url]).map_err(failed)?;
        Ok(Box::new(client.get_connection().map_err(failed)?))
    } else {
        let client = redis::Client::open(url).map_err(failed)?;
        Ok(Box::new(client.get_connection().map_err(failed)?))
    }
}

fn export(dir: &std::path::Path, what: What) -> Result<(), Failure> {
    std::fs::create_dir_all(dir)?;
    let mut wrote = Vec::new();
    if matches!(what, What::Scripts | What::All) {
        catalog::export(dir.join("scripts"))?;
        wrote.push(format!("{} scripts in scripts/", catalog::scripts().len()));
    }
    if matches!(what, What::Functions | What::All) {
        std::fs::write(dir.join("functions.lua"), catalog::FUNCTIONS)?;
        wrote.push("functions.lua".to_owned());
    }
    if matches!(what, What::Manifest | What::All) {
        catalog::export_manifest(dir.join("manifest.json"))?;
        std::fs::write(dir.join("manifest.schema.json"), catalog::MANIFEST_SCHEMA)?;
        wrote.push("manifest.json and manifest.schema.json".to_owned());
    }
    println!("wrote {} to {}", wrote.join(", "), dir.display());
    Ok(())
}

/// The keys of `script` built from their templates with `params` (`NAME=VALUE`); `given`
/// are the variadic key's items, when given.
fn template_keys(
    script: &'static Script,
    params: &[String],
    given: &[String],
) -> Result<Vec<String>, Failure> {
    let mut values: Vec<(&str, Vec<&str>)> = Vec::new();
    for param in params {
        let Some((name, value)) = param.split_once('=') else {
            return Err(Failure::usage(format!(
                "`--param` takes NAME=VALUE, got {param:?}"
            )));
        };
        match values.iter_mut().find(|(n, _)| *n == name) {
            Some((_, all)) => all.push(value),
            None => values.push((name, vec![value])),
        }
    }
    let mut known: Vec<&str> = Vec::new();
    for key in script.keys {
        let Some(template) = key.template else {
            return Err(Failure::usage(format!(
                "{}'s key `{}` has no template: name the keys with --key",
                script.name, key.name
            )));
        };
        for param in template.params() {
            if !known.contains(&param) {
                known.push(param);
            }
        }
    }
    let list = |names: &[&str]| {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some((unknown, _)) = values.iter().find(|(n, _)| !known.contains(n)) {
        return Err(Failure::usage(format!(
            "{} names its keys from {}; `{unknown}` is none of them",
            script.name,
            list(&known)
        )));
    }
    let has_variadic = script.keys.last().is_some_and(|k| k.variadic);
    if !given.is_empty() && !has_variadic {
        return Err(Failure::usage(format!(
            "{} has no variadic key: name its keys with --param or with --key, not both",
            script.name
        )));
    }
    let of = |name: &str| values.iter().find(|(n, _)| *n == name).map(|(_, v)| v);
    // Every parameter a key needs, so that one error names them all.
    let missing: Vec<&str> = known
        .iter()
        .copied()
        .filter(|p| of(p).is_none())
        .filter(|p| {
            script.keys.iter().any(|k| {
                (!k.variadic || given.is_empty())
                    && k.template.is_some_and(|t| t.params().contains(p))
            })
        })
        .collect();
    if !missing.is_empty() {
        return Err(Failure::usage(format!(
            "{} names its keys from {}: add {}",
            script.name,
            list(&known),
            missing
                .iter()
                .map(|p| format!("--param {p}=<value>"))
                .collect::<Vec<_>>()
                .join(" ")
        )));
    }
    // Every parameter of the keys built below was given: `missing` is empty.
    let all = |name: &str| of(name).expect("every needed parameter was given");
    let mut keys = Vec::new();
    for key in script.keys {
        let template = key
            .template
            .expect("every key has a template: checked above");
        if !key.variadic {
            let form = &template.forms[0];
            let firsts: Vec<&str> = form.params.iter().map(|p| all(p)[0]).collect();
            keys.push(form.build(&firsts)?);
            continue;
        }
        if !given.is_empty() {
            keys.extend(given.iter().cloned());
            continue;
        }
        // An item per value of the parameters given several times; one given once is
        // every item's.
        let params = template.params();
        let items = params.iter().map(|p| all(p).len()).max().unwrap_or(1);
        let uneven = params.iter().find(|p| ![1, items].contains(&all(p).len()));
        if let Some(p) = uneven {
            return Err(Failure::usage(format!(
                "the items of `{}` take one value of each parameter given several times: \
                 `{p}` has {}, another {items}",
                key.name,
                all(p).len()
            )));
        }
        for item in 0..items {
            for form in template.forms {
                let values: Vec<&str> = form
                    .params
                    .iter()
                    .map(|p| all(p).get(item).unwrap_or(&all(p)[0]))
                    .copied()
                    .collect();
                keys.push(form.build(&values)?);
            }
        }
    }
    Ok(keys)
}

/// The script's call, each argument converted to its header type and checked as the Rust
/// API checks it.
fn call(
    script: &'static Script,
    keys: &[String],
    args: &[String],
) -> Result<redis_patterns::Op<Value>, Failure> {
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let fixed_keys = script.keys.iter().filter(|k| !k.variadic).count();
    if keys.len() < fixed_keys {
        let params: Vec<String> = script
            .keys
            .iter()
            .filter_map(|k| k.template)
            .flat_map(|t| t.params())
            .fold(Vec::new(), |mut all, p| {
                if !all.contains(&p) {
                    all.push(p);
                }
                all
            })
            .iter()
            .map(|p| format!("--param {p}=<value>"))
            .collect();
        let how = if params.is_empty() {
            format!("`redis-patterns show {}` lists its keys", script.name)
        } else {
            format!(
                "name its keys with {}, or each with --key",
                params.join(" ")
            )
        };
        return Err(Failure::usage(format!(
            "{} needs the key `{}`; {how}",
            script.name,
            script.keys[keys.len()].name,
        )));
    }
    let mut call = ScriptCall::new(script);
    for key in &keys[..fixed_keys] {
        call = call.key(key);
    }
    match script.keys.last() {
        Some(last) if last.variadic => call = call.keys(&keys[fixed_keys..]),
        _ if keys.len() > fixed_keys => {
            return Err(Failure::usage(format!(
                "{} takes {fixed_keys} key(s); got {}",
                script.name,
                keys.len()
            )));
        }
        _ => {}
    }
    let fixed = script.args.iter().filter(|p| !p.variadic).count();
    if args.len() < fixed {
        let missing = &script.args[args.len()];
        return Err(Failure::usage(format!(
            "{} needs `{}` ({}); `redis-patterns show {}` lists its arguments",
            script.name, missing.name, missing.ty, script.name
        )));
    }
    for (param, value) in script.args.iter().zip(args) {
        if !param.variadic {
            call = add_arg(call, param, value)?;
        }
    }
    match script.args.last() {
        Some(last) if last.variadic => call = add_args(call, last, &args[fixed..])?,
        _ if args.len() > fixed => {
            return Err(Failure::usage(format!(
                "{} takes {fixed} argument(s); got {}",
                script.name,
                args.len()
            )));
        }
        _ => {}
    }
    Ok(call.finish())
}

/// The values of the variadic argument `param`, each converted to its type.
fn add_args(call: ScriptCall, param: &Param, values: &[String]) -> Result<ScriptCall, Failure> {
    fn parsed<T>(
        param: &Param,
        values: &[String],
        what: &str,
        read: impl Fn(&str) -> Option<T>,
    ) -> Result<Vec<T>, Failure> {
        values
            .iter()
            .map(|v| {
                read(v).ok_or_else(|| {
                    Failure::usage(format!("each `{}` is {what}, got {v:?}", param.name))
                })
            })
            .collect()
    }
    Ok(match param.ty {
        "int" => call.args(&parsed(param, values, WHOLE, integer_from_text)?),
        "uint" => call.args(&parsed(param, values, WHOLE_0, uint_from_text)?),
        "float" => call.args(&parsed(param, values, FLOAT, float_from_text)?),
        "bytes" => {
            let values: Vec<&[u8]> = values.iter().map(|v| v.as_bytes()).collect();
            call.args(&values)
        }
        _ => {
            let values: Vec<&str> = values.iter().map(String::as_str).collect();
            call.args(&values)
        }
    })
}

fn add_arg(call: ScriptCall, param: &Param, value: &str) -> Result<ScriptCall, Failure> {
    let bad = |why: &str| {
        Failure::usage(format!(
            "`{}` is a {}{}: {why}, got {value:?}",
            param.name,
            param.ty,
            if param.optional {
                " (empty for none)"
            } else {
                ""
            }
        ))
    };
    if param.optional && value.is_empty() {
        return Ok(match param.ty {
            "int" => call.arg(None::<i64>),
            "uint" => call.arg(None::<u64>),
            "float" => call.arg(None::<f64>),
            _ => call.arg(None::<Duration>),
        });
    }
    Ok(match param.ty {
        "int" => call.arg(integer_from_text(value).ok_or_else(|| bad(WHOLE))?),
        "uint" => call.arg(uint_from_text(value).ok_or_else(|| bad(WHOLE_0))?),
        "float" => call.arg(float_from_text(value).ok_or_else(|| bad(FLOAT))?),
        "ms" => call.arg(Duration::from_millis(
            uint_from_text(value).ok_or_else(|| bad("whole milliseconds"))?,
        )),
        "bool" => call.arg(match value {
            "1" | "true" => true,
            "0" | "false" => false,
            _ => return Err(bad("1 or 0")),
        }),
        "bytes" => call.arg(value.as_bytes()),
        _ => call.arg(value),
    })
}

fn show(script: &Script) {
    println!("{}  ({})", script.name, script.path);
    println!("  {}", script.summary);
    if !script.description.is_empty() {
        println!();
        for line in script.description.lines() {
            println!("  {line}");
        }
    }
    println!("\nKeys:");
    for key in script.keys {
        println!("  {:<16} {:<10} {}", param_name(key), key.ty, key.doc);
    }
    if !script.args.is_empty() {
        println!("\nArguments:");
        for arg in script.args {
            let ty = format!("{}{}", arg.ty, if arg.optional { "?" } else { "" });
            let rule = match arg.rule {
                Rule::Any => String::new(),
                Rule::NonEmpty => "non-empty".to_owned(),
                Rule::Range { min, max } => format!("{min}..={max}"),
                Rule::OneOf(options) => options.join("|"),
                Rule::Length { min, max: None } => format!("len:{min}.."),
                Rule::Length {
                    min,
                    max: Some(max),
                } => format!("len:{min}..={max}"),
                Rule::Hex { digits } => format!("hex:{digits}"),
            };
            println!(
                "  {:<16} {:<10} {:<24} {}",
                param_name(arg),
                ty,
                rule,
                arg.doc
            );
        }
    }
    println!("\nReply: {}  {}", script.returns.ty, script.returns.doc);
    println!("\nErrors:");
    for error in script.errors {
        println!("  {:<16} {}", error.code, error.doc);
    }
    if let Some(clock) = script.clock {
        println!("\nClock: {clock:?}");
    }
    println!("Complexity: {}", script.complexity);
    println!(
        "Read-only: {}",
        if script.is_read_only() {
            "yes (EVALSHA_RO, FCALL_RO; runs on replicas)"
        } else {
            "no"
        }
    );
    println!("SHA1: {}", script.sha1);
    println!("Function: {}", catalog::function_name(script));
}

fn param_name(param: &Param) -> String {
    if param.variadic {
        let max = param.count.max.map_or(String::new(), |m| m.to_string());
        format!("{}... {}..={max}", param.name, param.count.min)
    } else {
        param.name.to_owned()
    }
}

/// A reply as `redis-cli` shows one.
fn print_value(value: &Value, depth: usize) {
    let indent = "   ".repeat(depth);
    match value {
        Value::Nil => println!("{indent}(nil)"),
        Value::Int(n) => println!("{indent}(integer) {n}"),
        Value::BulkString(bytes) => println!("{indent}\"{}\"", String::from_utf8_lossy(bytes)),
        Value::SimpleString(s) => println!("{indent}{s}"),
        Value::Okay => println!("{indent}OK"),
        Value::Array(items) | Value::Set(items) => {
            if items.is_empty() {
                println!("{indent}(empty array)");
            }
            for (i, item) in items.iter().enumerate() {
                print!("{indent}{}) ", i + 1);
                match item {
                    Value::Array(_) | Value::Set(_) => {
                        println!();
                        print_value(item, depth + 1);
                    }
                    _ => print_value(item, 0),
                }
            }
        }
        other => println!("{indent}{other:?}"),
    }
}
