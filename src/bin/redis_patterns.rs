//! `redis-patterns`: the crate's scripts from a shell. List and read them, export them
//! (as files, a Redis Functions library or a JSON manifest), load them into a server or
//! a cluster, check a folder of scripts of your own and rewrite their generated parts, and
//! call one. And operate work queues: list the queues of a server (`queues`), and
//! (`queue <name> …`) read a queue's counts, metrics, jobs and settings; pause and resume
//! it; retry, remove, reprioritise, delay or promote a job; retry every dead job; drain,
//! clean or delete it; change its settings. Each of these runs one of the `work_queue`
//! scripts through its Rust API, never a raw command, so a cluster (`--cluster`) works
//! as a single server does, and bulk actions go 100 jobs per call until done. Their
//! output is one `key: value` per line, or an aligned table for `list`, `queues` and the
//! per-minute metrics, or with `--json` one line of JSON; payloads and errors show as
//! text when they are UTF-8 (control characters escaped), else as `hex:` and their bytes
//! in hex (as is a text that starts with `hex:`). `--url` defaults to `REDIS_URL`, as
//! the examples read it.
//!
//! Exit codes: 0 when the command did what was asked; 1 when Redis or a script answered
//! an error, `check` found problems, a `queue` action on one job found no such job or
//! one in a state it leaves alone, or a `queue` action that writes found a queue with no
//! keys (nothing changed); 2 for a command line that makes no sense (an unknown script or
//! state, a bad number), with nothing sent. A closed output (`| head`) ends the command
//! quietly, as it ends other Unix tools.

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
    about = "The redis-patterns scripts from a shell: list, show, export, load, check, fix, call; \
             operate a work queue.",
    after_help = "Examples:\n  \
        redis-patterns list\n  \
        redis-patterns show identity_lock/release\n  \
        redis-patterns export ./redis-patterns --what manifest\n  \
        redis-patterns load redis://127.0.0.1:6379 --functions\n  \
        redis-patterns check ./sql\n  \
        redis-patterns fix ./sql\n  \
        redis-patterns call identity_lock/release --url redis://127.0.0.1 --key lock:1 --arg secret\n  \
        redis-patterns queues --url redis://127.0.0.1\n  \
        redis-patterns queue emails counts --url redis://127.0.0.1\n  \
        REDIS_URL=redis://127.0.0.1 redis-patterns queue emails metrics --prometheus\n  \
        redis-patterns queue emails retry --all-dead\n  \
        redis-patterns queue emails limits --group-concurrency 2"
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
        #[arg(
            long,
            env = "REDIS_URL",
            hide_env_values = true,
            default_value = "redis://127.0.0.1:6379"
        )]
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
    /// Operates a work queue: its counts, metrics, jobs and settings; pause, resume,
    /// retry, remove, drain, clean, delete; a job's priority and delay.
    ///
    /// Each action is one of the `work_queue` scripts, as the Rust API runs it (never a
    /// raw command), so it is atomic and checked; bulk actions call theirs 100 jobs at a
    /// time until done. An action on one job exits with 1 when there is no such job or
    /// it is in a state the action leaves alone (nothing changed). A queue with no keys
    /// on the server (a name with a typo in it) is named as such: a read says so on
    /// stderr, an action that writes is refused with 1 (`--create` sets up a new queue's
    /// pause or settings before its first job).
    Queue(queue::QueueArgs),
    /// Lists the work queues of a server (of every primary with `--cluster`) with their
    /// counts: every `{<name>}:jobs` hash, found in SCAN steps of 1,000 keys.
    Queues(queue::QueuesArgs),
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
    // Rust starts programs with SIGPIPE ignored, so a write to a closed pipe fails and
    // `println!` panics. Its default action ends the program quietly, as it ends other
    // Unix tools. Sockets are not concerned: Rust sends on them with MSG_NOSIGNAL, so a
    // server that closes a connection is still an error.
    #[cfg(unix)]
    // SAFETY: called first, before any thread starts; SIG_DFL is a valid action for
    // SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    match Cli::parse_from(queue::name_first(std::env::args_os())).command {
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
        Command::Queue(args) => queue::run(args),
        Command::Queues(args) => queue::list_queues(args),
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

/// `redis-patterns queue <name> …` and `redis-patterns queues`: what operators do to a
/// [`work_queue`](redis_patterns::work_queue), each action one of its ops (one script, or
/// one native command to know whether the queue has keys), never a raw command.
mod queue {
    use std::ffi::OsString;
    use std::fmt::Write as _;
    use std::time::Duration;

    use clap::{ArgGroup, Args, Subcommand, ValueEnum};
    use redis_patterns::keyspace::{DbIterator, KeyType, cluster_masters};
    use redis_patterns::scripts::work_queue::keys as queue_keys;
    use redis_patterns::work_queue::{
        Changes, Counts, JobInfo, MAX_BULK, Metrics, Removed, Settings, State, WorkQueue,
    };
    use redis_patterns::{Batch, Rule, catalog};
    use serde_json::{Value as Json, json};

    use super::{Failure, WHOLE_0, connect, uint_from_text};

    const EXAMPLES: &str = "Examples:\n  \
        redis-patterns queues --url redis://127.0.0.1:6379\n  \
        redis-patterns queue emails counts --url redis://127.0.0.1:6379\n  \
        REDIS_URL=redis://127.0.0.1:6379 redis-patterns queue emails metrics --prometheus\n  \
        redis-patterns queue emails list dead --count 50 --json\n  \
        redis-patterns queue emails job welcome:42\n  \
        redis-patterns queue emails retry --all-dead\n  \
        redis-patterns queue emails limits --group-concurrency 2 --group-rate 10 --group-period-ms 1000\n  \
        redis-patterns queue emails limits --events-max 10000 --group-turns on\n  \
        redis-patterns queue emails pause && redis-patterns queue emails delete";

    /// The server a command talks to, by default `REDIS_URL`'s, as every example's.
    const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

    /// Marks a queue's name that is also an action's (`queue counts counts`): clap reads a
    /// subcommand's name as the subcommand wherever it stands. No argument of a command
    /// line holds a NUL, so the mark is never part of a name.
    const MARK: char = '\0';

    /// The command line with the queue's name marked when it is also an action's.
    pub fn name_first(args: impl Iterator<Item = OsString>) -> Vec<OsString> {
        let mut args: Vec<OsString> = args.collect();
        if args.get(1).is_none_or(|a| a != "queue") {
            return args;
        }
        let mut i = 2;
        while let Some(arg) = args.get(i).and_then(|a| a.to_str()) {
            match arg {
                "--url" => i += 2,
                "--cluster" => i += 1,
                _ if arg.starts_with("--url=") => i += 1,
                _ if arg.starts_with('-') => break,
                _ => {
                    if Action::has_subcommand(arg) || arg == "help" {
                        args[i] = format!("{MARK}{arg}").into();
                    }
                    break;
                }
            }
        }
        args
    }

    /// The range a `work_queue` script's header gives its argument `arg`: the one source
    /// of the bounds that the flags' help states and their parsers check.
    fn range(script: &str, arg: &str) -> (u64, u64) {
        let param = catalog::find(script)
            .and_then(|s| s.args.iter().find(|p| p.name == arg))
            .unwrap_or_else(|| panic!("{script} has no argument `{arg}`"));
        match param.rule {
            Rule::Range { min, max } => (min.max(0) as u64, max.max(0) as u64),
            _ => panic!("{script}'s `{arg}` has no range"),
        }
    }

    /// `from 1 to 1440`, as a help text says a range.
    fn range_words(script: &str, arg: &str) -> String {
        let (min, max) = range(script, arg);
        format!("{min} to {max}")
    }

    /// A help text that ends with the range of `configure`'s argument `arg`.
    fn setting_help(what: &str, arg: &str) -> String {
        format!("{what} ({})", range_words("work_queue/configure", arg))
    }

    /// The parser of a number within the range of `script`'s argument `arg`.
    fn within(
        script: &'static str,
        arg: &'static str,
    ) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync + 'static {
        move |text| {
            let n = whole(text)?;
            let (min, max) = range(script, arg);
            if (min..=max).contains(&n) {
                Ok(n)
            } else {
                Err(format!("must be from {min} to {max}"))
            }
        }
    }

    #[derive(Args)]
    #[command(after_help = EXAMPLES)]
    pub struct QueueArgs {
        /// The queue's name, as `WorkQueue::new` takes it (its keys are `{<name>}:…`).
        name: String,
        /// The server: `redis://host:port` (`rediss://` for TLS).
        #[arg(long, env = "REDIS_URL", hide_env_values = true, default_value = DEFAULT_URL, global = true)]
        url: String,
        /// The URL is a node of a cluster.
        #[arg(long, global = true)]
        cluster: bool,
        #[command(subcommand)]
        action: Action,
    }

    /// `redis-patterns queues`: the queues on a server.
    #[derive(Args)]
    pub struct QueuesArgs {
        /// The server: `redis://host:port` (`rediss://` for TLS).
        #[arg(long, env = "REDIS_URL", hide_env_values = true, default_value = DEFAULT_URL)]
        url: String,
        /// The URL is a node of a cluster: every primary is searched.
        #[arg(long)]
        cluster: bool,
        /// Prints JSON: an array of the queues, each with its counts.
        #[arg(long)]
        json: bool,
    }

    #[derive(Subcommand)]
    enum Action {
        /// The jobs in each state, and whether the queue is paused.
        Counts {
            /// Prints JSON: an object of the counts and `paused`.
            #[arg(long)]
            json: bool,
        },
        /// The counts, the next job's age, and while metrics are on the totals and the jobs
        /// ended per minute.
        Metrics {
            #[arg(
                long,
                default_value_t = 60,
                value_parser = within("work_queue/metrics", "minutes"),
                help = format!(
                    "How many of the last minutes to read ({}; at most the window kept)",
                    range_words("work_queue/metrics", "minutes")
                )
            )]
            minutes: u64,
            /// Prints the metrics in Prometheus' text format instead.
            #[arg(long, conflicts_with = "json")]
            prometheus: bool,
            /// Prints JSON: the counts, the next job's age, and the totals and minutes
            /// (null totals while metrics are off).
            #[arg(long)]
            json: bool,
        },
        /// One page of the jobs in a state, in the order the state keeps them.
        List {
            /// The state.
            #[arg(value_enum)]
            state: AnyState,
            #[arg(
                long,
                default_value_t = 0,
                value_parser = within("work_queue/list", "offset"),
                help = format!(
                    "How many jobs to skip ({})",
                    range_words("work_queue/list", "offset")
                )
            )]
            offset: u64,
            #[arg(
                long,
                default_value_t = 20,
                value_parser = within("work_queue/list", "count"),
                help = format!(
                    "How many jobs to show ({})",
                    range_words("work_queue/list", "count")
                )
            )]
            count: u64,
            /// Prints JSON: an array of the jobs.
            #[arg(long)]
            json: bool,
        },
        /// One job: its state, deliveries, priority, group, last error, time and payload.
        Job {
            /// The job's id.
            id: String,
            /// Prints JSON: an object of the job.
            #[arg(long)]
            json: bool,
        },
        /// The queue's settings: limits, dead-letter cap, metrics, events, results, turns.
        Settings {
            /// Prints JSON: an object of the settings, as `configure` takes them (0 for
            /// no limit, no metrics, no events).
            #[arg(long)]
            json: bool,
        },
        /// Pauses the queue: workers take nothing until `resume` (running jobs go on).
        Pause {
            /// Pauses a queue that has no keys yet (one that has never had a job).
            #[arg(long)]
            create: bool,
        },
        /// Resumes a paused queue.
        Resume,
        /// Moves a dead job back to waiting, or every dead job with `--all-dead`.
        #[command(group(ArgGroup::new("which").required(true).args(["id", "all_dead"])))]
        Retry {
            /// The dead job's id.
            id: Option<String>,
            /// Every dead job, oldest first, 100 per call.
            #[arg(long)]
            all_dead: bool,
        },
        /// Removes a job that no worker holds (waiting, parked, delayed or dead).
        Remove {
            /// The job's id.
            id: String,
        },
        /// Removes every waiting and parked job (and delayed ones with `--delayed`).
        ///
        /// 100 per call, until none is left; jobs held by workers are left to them.
        Drain {
            /// Removes the delayed jobs too.
            #[arg(long)]
            delayed: bool,
        },
        /// Removes every job in a state, 100 per call.
        Clean {
            /// The state (leased jobs belong to their workers).
            #[arg(value_enum)]
            state: CleanState,
        },
        /// Deletes a paused queue: its jobs, 100 per call, then its keys.
        Delete {
            /// Deletes the jobs workers hold too (their acks then fail with LEASE_LOST).
            #[arg(long)]
            force: bool,
        },
        /// Changes a job's priority (higher goes first).
        Priority {
            /// The job's id.
            id: String,
            #[arg(
                value_parser = within("work_queue/set_priority", "priority"),
                help = format!(
                    "The new priority ({})",
                    range_words("work_queue/set_priority", "priority")
                )
            )]
            priority: u64,
        },
        /// Delays a waiting, parked or delayed job until that many ms from now; with 0,
        /// makes a delayed job wait at once.
        Delay {
            /// The job's id.
            id: String,
            #[arg(
                value_parser = within("work_queue/set_delay", "delay"),
                help = format!(
                    "The delay in whole milliseconds ({}; 0 makes a delayed job wait at once)",
                    range_words("work_queue/set_delay", "delay")
                )
            )]
            ms: u64,
        },
        /// Makes a delayed job wait at once, at its rank.
        Promote {
            /// The job's id.
            id: String,
        },
        /// Changes the settings the flags name and keeps the others, then prints them all.
        ///
        /// The change is one script, which keeps every setting no flag names, so two
        /// operators who change different settings at once both keep theirs. Without
        /// flags, prints the settings. A concurrency or a rate of 0 is no limit; a period
        /// without its rate changes the window of the rate the queue has.
        #[command(visible_alias = "configure")]
        Limits(LimitFlags),
    }

    #[derive(Clone, Copy, ValueEnum)]
    enum Switch {
        On,
        Off,
    }

    #[derive(Args)]
    struct LimitFlags {
        #[arg(long, value_name = "N", value_parser = whole,
            help = setting_help("The most jobs of one group held at once; 0: no limit", "group_concurrency"))]
        group_concurrency: Option<u64>,
        #[arg(long, value_name = "N", value_parser = whole,
            help = setting_help("The most jobs of one group started per period; 0: no limit", "group_rate"))]
        group_rate: Option<u64>,
        #[arg(long, value_name = "MS", value_parser = whole,
            help = setting_help("The period of the group rate, in ms", "group_period"))]
        group_period_ms: Option<u64>,
        #[arg(long, value_name = "N", value_parser = whole,
            help = setting_help("The most jobs of the queue held at once; 0: no limit", "queue_concurrency"))]
        queue_concurrency: Option<u64>,
        #[arg(long, value_name = "N", value_parser = whole,
            help = setting_help("The most jobs of the queue started per period; 0: no limit", "queue_rate"))]
        queue_rate: Option<u64>,
        #[arg(long, value_name = "MS", value_parser = whole,
            help = setting_help("The period of the queue rate, in ms", "queue_period"))]
        queue_period_ms: Option<u64>,
        #[arg(long, value_name = "N", value_parser = whole,
            help = setting_help("The most dead jobs kept", "dead_max"))]
        dead_max: Option<u64>,
        #[arg(long, value_name = "MS", value_parser = whole,
            help = setting_help("How long a dead job is kept, in ms", "dead_age"))]
        dead_age_ms: Option<u64>,
        #[arg(long, value_name = "N", value_parser = whole,
            help = setting_help("The minutes of per-minute metrics kept; 0 turns metrics off", "metrics_minutes"))]
        metrics_minutes: Option<u64>,
        #[arg(long, value_name = "N", value_parser = whole,
            help = setting_help("The most events kept in {<name>}:events; 0 turns events off", "events_max"))]
        events_max: Option<u64>,
        #[arg(long, value_name = "MS", value_parser = whole,
            help = setting_help("How long a job's result is kept, in ms", "result_ttl"))]
        result_ttl_ms: Option<u64>,
        #[arg(long, value_name = "BYTES", value_parser = whole,
            help = setting_help("The longest result kept, in bytes", "result_max"))]
        result_max_bytes: Option<u64>,
        /// Whether the groups with jobs ready take turns (round-robin between groups).
        #[arg(long, value_enum, value_name = "on|off")]
        group_turns: Option<Switch>,
        /// Sets up a queue that has no keys yet (one that has never had a job).
        #[arg(long)]
        create: bool,
    }

    impl LimitFlags {
        /// The changes the flags name; an out-of-range value is a usage error that names
        /// its flag, as the Rust API checks it.
        fn changes(&self) -> Result<Changes, Failure> {
            let mut c = Changes::new();
            let number =
                |c: Changes,
                 flag: &str,
                 value: Option<u64>,
                 set: fn(Changes, u64) -> redis_patterns::Result<Changes>| {
                    match value {
                        Some(n) => set(c, n).map_err(|err| flag_error(flag, n, err)),
                        None => Ok(c),
                    }
                };
            let ms =
                |c: Changes,
                 flag: &str,
                 value: Option<u64>,
                 set: fn(Changes, Duration) -> redis_patterns::Result<Changes>| {
                    match value {
                        Some(n) => {
                            set(c, Duration::from_millis(n)).map_err(|err| flag_error(flag, n, err))
                        }
                        None => Ok(c),
                    }
                };
            c = number(
                c,
                "group-concurrency",
                self.group_concurrency,
                Changes::group_concurrency,
            )?;
            c = number(c, "group-rate", self.group_rate, Changes::group_rate)?;
            c = ms(
                c,
                "group-period-ms",
                self.group_period_ms,
                Changes::group_period,
            )?;
            c = number(
                c,
                "queue-concurrency",
                self.queue_concurrency,
                Changes::queue_concurrency,
            )?;
            c = number(c, "queue-rate", self.queue_rate, Changes::queue_rate)?;
            c = ms(
                c,
                "queue-period-ms",
                self.queue_period_ms,
                Changes::queue_period,
            )?;
            c = number(c, "dead-max", self.dead_max, Changes::dead_max)?;
            c = ms(c, "dead-age-ms", self.dead_age_ms, Changes::dead_age)?;
            c = number(
                c,
                "metrics-minutes",
                self.metrics_minutes,
                Changes::metrics_minutes,
            )?;
            c = number(c, "events-max", self.events_max, Changes::events)?;
            c = ms(c, "result-ttl-ms", self.result_ttl_ms, Changes::result_ttl)?;
            c = number(
                c,
                "result-max-bytes",
                self.result_max_bytes,
                Changes::result_max,
            )?;
            if let Some(turns) = self.group_turns {
                c = c.group_turns(matches!(turns, Switch::On));
            }
            Ok(c)
        }
    }

    /// A value the crate refused, as a usage error that names its flag.
    fn flag_error(
        flag: &str,
        value: impl std::fmt::Display,
        err: redis_patterns::Error,
    ) -> Failure {
        let why = match err {
            redis_patterns::Error::InvalidInput { why, .. } => why,
            err => return err.into(),
        };
        // The crate's "got …" shows the value as the API takes it (`0ns`): the flag's instead.
        let why = why
            .rsplit_once(", got ")
            .map_or(why.as_str(), |(why, _)| why)
            .to_owned();
        Failure::usage(format!("--{flag} {value}: {why}"))
    }

    #[derive(Clone, Copy, ValueEnum)]
    enum AnyState {
        Waiting,
        Parked,
        Delayed,
        Leased,
        Dead,
    }

    impl From<AnyState> for State {
        fn from(state: AnyState) -> State {
            match state {
                AnyState::Waiting => State::Waiting,
                AnyState::Parked => State::Parked,
                AnyState::Delayed => State::Delayed,
                AnyState::Leased => State::Leased,
                AnyState::Dead => State::Dead,
            }
        }
    }

    #[derive(Clone, Copy, ValueEnum)]
    enum CleanState {
        Waiting,
        Parked,
        Delayed,
        Dead,
    }

    impl From<CleanState> for State {
        fn from(state: CleanState) -> State {
            match state {
                CleanState::Waiting => State::Waiting,
                CleanState::Parked => State::Parked,
                CleanState::Delayed => State::Delayed,
                CleanState::Dead => State::Dead,
            }
        }
    }

    /// A whole number, 0 or more, by the scripts' one rule for integers.
    fn whole(text: &str) -> Result<u64, String> {
        uint_from_text(text).ok_or_else(|| format!("must be {WHOLE_0}"))
    }

    impl Action {
        /// Whether the action writes; one on a queue with no keys is refused (a typo
        /// would otherwise pass for a queue), unless it says `--create`.
        fn writes(&self) -> bool {
            match self {
                Action::Counts { .. }
                | Action::Metrics { .. }
                | Action::List { .. }
                | Action::Job { .. }
                | Action::Settings { .. } => false,
                Action::Limits(flags) => !flags.changes().is_ok_and(|c| c.is_empty()),
                _ => true,
            }
        }

        /// Whether the action was told to act on a queue with no keys.
        fn creates(&self) -> bool {
            matches!(self, Action::Pause { create: true })
                || matches!(self, Action::Limits(flags) if flags.create)
        }
    }

    /// What an operator is told about a queue with no keys.
    fn no_keys(name: &str) -> String {
        format!(
            "queue {name:?} has no keys on this server (no job, setting or pause flag); \
             `redis-patterns queues` lists the queues there"
        )
    }

    pub fn run(args: QueueArgs) -> Result<(), Failure> {
        let QueueArgs {
            name,
            url,
            cluster,
            action,
        } = args;
        let name = name.strip_prefix(MARK).unwrap_or(&name).to_owned();
        let queue = WorkQueue::new(name.as_str())?;
        // Settings the flags cannot make, refused before anything is sent.
        if let Action::Limits(flags) = &action {
            flags.changes()?;
        }
        let mut con = connect(&url, cluster)?;
        let con = &mut *con;
        let exists = queue.exists().run(con)?;
        if !exists && action.writes() && !action.creates() {
            let create = if matches!(action, Action::Pause { .. } | Action::Limits(_)) {
                ", and --create sets up a new queue before its first job"
            } else {
                ""
            };
            return Err(Failure::failed(format!(
                "nothing changed: {}{create}",
                no_keys(&name)
            )));
        }
        let reads = !action.writes();
        let result = act(&queue, &name, con, action);
        if !exists && reads {
            eprintln!("redis-patterns: note: {}", no_keys(&name));
        }
        result
    }

    fn act(
        queue: &WorkQueue,
        name: &str,
        con: &mut dyn redis::ConnectionLike,
        action: Action,
    ) -> Result<(), Failure> {
        match action {
            Action::Counts { json } => {
                let mut batch = Batch::new();
                let counts = batch.add(queue.counts());
                let paused = batch.add(queue.is_paused());
                let mut replies = batch.run(con)?;
                let (counts, paused) = (counts.take(&mut replies)?, paused.take(&mut replies)?);
                if json {
                    let mut out = counts_json(&counts);
                    out["paused"] = json!(paused);
                    print_json(&out);
                } else {
                    print_counts(&counts);
                    println!("paused: {}", yes_no(paused));
                }
            }
            Action::Metrics {
                minutes,
                prometheus,
                json,
            } => {
                let metrics = queue.metrics(minutes).run(con)?;
                if prometheus {
                    print!("{}", metrics.prometheus(name));
                } else if json {
                    print_json(&metrics_json(&metrics));
                } else {
                    print_metrics(&metrics, name, minutes);
                }
            }
            Action::List {
                state,
                offset,
                count,
                json,
            } => {
                let jobs = queue.list(state.into(), offset, count).run(con)?;
                if json {
                    print_json(&Json::Array(
                        jobs.iter().map(|job| job_json(job, false)).collect(),
                    ));
                } else {
                    let rows: Vec<Vec<String>> = jobs.iter().map(list_row).collect();
                    print_table(
                        &[
                            "id",
                            "deliveries",
                            "priority",
                            "group",
                            "at (UTC)",
                            "last_error",
                            "payload",
                        ],
                        &rows,
                    );
                }
            }
            Action::Job { id, json } => match queue.job(&id).run(con)? {
                Some(job) if json => print_json(&job_json(&job, true)),
                Some(job) => print_job(&job),
                None => return Err(no_job(&id, name)),
            },
            Action::Settings { json } => {
                let settings = queue.settings().run(con)?;
                if json {
                    print_json(&settings_json(&settings));
                } else {
                    print_settings(&settings);
                }
            }
            Action::Pause { .. } => {
                if queue.pause().run(con)? {
                    println!("paused queue {name}");
                } else {
                    println!("queue {name} was already paused");
                }
            }
            Action::Resume => {
                if queue.resume().run(con)? {
                    println!("resumed queue {name}");
                } else {
                    println!("queue {name} was not paused");
                }
            }
            Action::Retry { id: Some(id), .. } => {
                if !queue.requeue(&id).run(con)? {
                    return Err(Failure::failed(format!(
                        "job {id:?} is not in the dead-letter queue of {name}: nothing changed"
                    )));
                }
                println!("requeued job {id:?}: waiting");
            }
            Action::Retry { id: None, .. } => {
                let mut total = 0;
                loop {
                    let moved = queue.retry_dead(MAX_BULK).run(con)?;
                    total += moved;
                    if moved < MAX_BULK {
                        break;
                    }
                }
                println!("requeued: {total}");
            }
            Action::Remove { id } => match queue.remove(&id).run(con)? {
                Removed::From(state) => println!("removed job {id:?} (was {state})"),
                Removed::Running => {
                    return Err(Failure::failed(format!(
                        "job {id:?} is held by a worker: left to it (its ack or nack ends it)"
                    )));
                }
                Removed::NoSuchJob => return Err(no_job(&id, name)),
            },
            Action::Drain { delayed } => {
                let mut states = vec![State::Waiting, State::Parked];
                if delayed {
                    states.push(State::Delayed);
                }
                for state in states {
                    println!("removed_{state}: {}", clean(queue, con, state)?);
                }
            }
            Action::Clean { state } => {
                let state = State::from(state);
                println!("removed_{state}: {}", clean(queue, con, state)?);
            }
            Action::Delete { force } => {
                loop {
                    match queue.delete(MAX_BULK, force).run(con) {
                        Ok(0) => break,
                        Ok(_) => {}
                        Err(err) if err.code() == Some("NOT_PAUSED") => {
                            return Err(Failure::failed(format!(
                                "queue {name} is running: pause it first \
                                 (`redis-patterns queue {name} pause`), then delete it"
                            )));
                        }
                        Err(err) if err.code() == Some("JOBS_RUNNING") => {
                            return Err(Failure::failed(format!(
                                "workers hold jobs of queue {name}: wait until they end \
                                 (`redis-patterns queue {name} counts` shows them as leased), \
                                 or delete with --force (their acks then fail with LEASE_LOST)"
                            )));
                        }
                        Err(err) => return Err(err.into()),
                    }
                }
                println!("deleted queue {name}");
            }
            Action::Priority { id, priority } => {
                let priority = u8::try_from(priority).expect("the header bounds it to a byte");
                match queue.set_priority(&id, priority).run(con)? {
                    Some(state) => println!("job {id:?}: priority {priority} ({state})"),
                    None => return Err(no_job(&id, name)),
                }
            }
            Action::Delay { id, ms } => {
                match queue.set_delay(&id, Duration::from_millis(ms)).run(con)? {
                    (true, Some(state)) => println!("job {id:?}: {state}"),
                    (false, Some(state @ (State::Waiting | State::Parked))) => {
                        // Only a delay of 0 leaves these alone: they are ready already.
                        return Err(Failure::failed(format!(
                            "job {id:?} is {state}, ready already: a delay of 0 makes only a \
                             delayed job wait at once; nothing changed"
                        )));
                    }
                    (false, Some(state)) => {
                        return Err(Failure::failed(format!(
                            "job {id:?} is {state}: only a waiting, parked or delayed job \
                             can be delayed; nothing changed"
                        )));
                    }
                    (_, None) => return Err(no_job(&id, name)),
                }
            }
            Action::Promote { id } => {
                if !queue.promote(&id).run(con)? {
                    return Err(Failure::failed(format!(
                        "job {id:?} is not delayed in queue {name} (`redis-patterns queue \
                         {name} job {id}` shows where it is): nothing changed"
                    )));
                }
                println!("job {id:?}: waiting");
            }
            Action::Limits(flags) => {
                let changes = flags.changes()?;
                if !changes.is_empty() {
                    let configured = queue.configure(&changes).run(con)?;
                    println!("changed: {}", yes_no(configured.changed));
                    println!("groups_woken: {}", configured.groups_woken);
                }
                print_settings(&queue.settings().run(con)?);
            }
        }
        Ok(())
    }

    /// `redis-patterns queues`: every queue of the server (every primary of a cluster),
    /// found by its `{<name>}:jobs` hash in SCAN steps of 1,000 keys, with its counts.
    pub fn list_queues(args: QueuesArgs) -> Result<(), Failure> {
        let QueuesArgs { url, cluster, json } = args;
        let mut con = connect(&url, cluster)?;
        let mut names = std::collections::BTreeSet::new();
        if cluster {
            let info = redis::IntoConnectionInfo::into_connection_info(url.as_str())?;
            for node in cluster_masters().run(&mut *con)? {
                let addr = match info.addr() {
                    redis::ConnectionAddr::TcpTls {
                        insecure,
                        tls_params,
                        ..
                    } => redis::ConnectionAddr::TcpTls {
                        host: node.host.clone(),
                        port: node.port,
                        insecure: *insecure,
                        tls_params: tls_params.clone(),
                    },
                    _ => redis::ConnectionAddr::Tcp(node.host.clone(), node.port),
                };
                let client = redis::Client::open(info.clone().set_addr(addr))?;
                let mut node_con = client.get_connection().map_err(|err| {
                    Failure::failed(format!("cannot connect to the primary {node}: {err}"))
                })?;
                scan_queues(&mut node_con, &mut names)?;
            }
        } else {
            scan_queues(&mut *con, &mut names)?;
        }
        let mut rows = Vec::new();
        for name in &names {
            let queue = WorkQueue::new(name.as_str())?;
            let mut batch = Batch::new();
            let counts = batch.add(queue.counts());
            let paused = batch.add(queue.is_paused());
            let mut replies = batch.run(&mut *con)?;
            rows.push((name, counts.take(&mut replies)?, paused.take(&mut replies)?));
        }
        if json {
            let all = rows
                .iter()
                .map(|(name, counts, paused)| {
                    let mut row = json!({ "queue": name });
                    for (k, v) in counts_json(counts).as_object().expect("an object") {
                        row[k] = v.clone();
                    }
                    row["paused"] = json!(paused);
                    row
                })
                .collect();
            print_json(&Json::Array(all));
        } else if rows.is_empty() {
            println!("no queue on this server");
        } else {
            let table: Vec<Vec<String>> = rows
                .iter()
                .map(|(name, c, paused)| {
                    vec![
                        text_cell(name.as_bytes()),
                        c.waiting.to_string(),
                        c.parked.to_string(),
                        c.delayed.to_string(),
                        c.leased.to_string(),
                        c.dead.to_string(),
                        yes_no(*paused).to_owned(),
                    ]
                })
                .collect();
            print_table(
                &[
                    "queue", "waiting", "parked", "delayed", "leased", "dead", "paused",
                ],
                &table,
            );
        }
        Ok(())
    }

    /// The names of the queues whose `jobs` hash one server holds, added to `names`: a
    /// key `X:jobs` is a queue's when `WorkQueue` names the queue's `jobs` so (keys of
    /// other patterns, or not named by the template, are left out).
    fn scan_queues(
        con: &mut dyn redis::ConnectionLike,
        names: &mut std::collections::BTreeSet<String>,
    ) -> Result<(), Failure> {
        let mut walk = DbIterator::new(1000)
            .matching("*:jobs")
            .of_type(KeyType::Hash);
        while let Some(batch) = walk.next(con)? {
            for key in batch {
                let Some(stem) = key.to_str().and_then(|k| k.strip_suffix(":jobs")) else {
                    continue;
                };
                // `{emails}:jobs` is the queue `emails`; `{tenant:7}:emails:jobs`, whose
                // name holds its hash tag, the queue `{tenant:7}:emails`.
                let wrapped = stem
                    .strip_prefix('{')
                    .and_then(|s| s.strip_suffix('}'))
                    .filter(|inner| !inner.is_empty() && !inner.contains(['{', '}']));
                let name = wrapped.unwrap_or(stem);
                if queue_keys::jobs(name).is_ok_and(|jobs| key == jobs.as_str()) {
                    names.insert(name.to_owned());
                }
            }
        }
        Ok(())
    }

    /// Removes every job in `state`, `MAX_BULK` per call; answers how many went.
    fn clean(
        queue: &WorkQueue,
        con: &mut dyn redis::ConnectionLike,
        state: State,
    ) -> Result<u64, Failure> {
        let mut total = 0;
        loop {
            let removed = queue.clean(state, MAX_BULK).run(con)?;
            total += removed;
            if removed < MAX_BULK {
                return Ok(total);
            }
        }
    }

    fn no_job(id: &str, queue: &str) -> Failure {
        Failure::failed(format!("no job {id:?} in queue {queue}"))
    }

    fn yes_no(yes: bool) -> &'static str {
        if yes { "yes" } else { "no" }
    }

    fn print_json(value: &Json) {
        println!("{value}");
    }

    fn counts_json(counts: &Counts) -> Json {
        json!({
            "waiting": counts.waiting,
            "parked": counts.parked,
            "delayed": counts.delayed,
            "leased": counts.leased,
            "dead": counts.dead,
        })
    }

    fn print_counts(counts: &Counts) {
        println!("waiting: {}", counts.waiting);
        println!("parked: {}", counts.parked);
        println!("delayed: {}", counts.delayed);
        println!("leased: {}", counts.leased);
        println!("dead: {}", counts.dead);
    }

    fn print_metrics(metrics: &Metrics, name: &str, minutes: u64) {
        print_counts(&metrics.counts);
        match metrics.next_job_age {
            Some(age) => println!("next_job_age_ms: {}", age.as_millis()),
            None => println!("next_job_age_ms: none (no job waits)"),
        }
        if !metrics.is_on() {
            println!(
                "metrics: off (nothing is counted; `redis-patterns queue {name} limits \
                 --metrics-minutes 60` turns them on)"
            );
            return;
        }
        println!("metrics_minutes: {}", metrics.window);
        println!("completed_total: {}", metrics.completed);
        println!("failed_deliveries_total: {}", metrics.failed_deliveries);
        println!("dead_total: {}", metrics.dead);
        let rows: Vec<Vec<String>> = metrics
            .minutes
            .iter()
            .filter(|m| m.completed > 0 || m.failed_deliveries > 0)
            .map(|m| {
                vec![
                    utc_minute(m.minute),
                    m.completed.to_string(),
                    m.failed_deliveries.to_string(),
                ]
            })
            .collect();
        println!();
        if rows.is_empty() {
            // The rows read: the minutes asked for, at most the window kept.
            let read = minutes.min(metrics.window);
            println!("no job ended in the last {read} minute(s)");
        } else {
            print_table(&["minute (UTC)", "completed", "failed deliveries"], &rows);
        }
    }

    fn metrics_json(metrics: &Metrics) -> Json {
        let on = metrics.is_on();
        let total = |n: u64| if on { json!(n) } else { Json::Null };
        json!({
            "counts": counts_json(&metrics.counts),
            "next_job_age_ms": metrics.next_job_age.map(|age| age.as_millis() as u64),
            "metrics_minutes": metrics.window,
            "completed_total": total(metrics.completed),
            "failed_deliveries_total": total(metrics.failed_deliveries),
            "dead_total": total(metrics.dead),
            "minutes": metrics.minutes.iter().map(|m| json!({
                "minute": m.minute,
                "utc": utc_minute(m.minute),
                "completed": m.completed,
                "failed_deliveries": m.failed_deliveries,
            })).collect::<Vec<_>>(),
        })
    }

    fn print_settings(settings: &Settings) {
        for (scope, limits) in [("group", settings.group()), ("queue", settings.queue())] {
            match limits.concurrency_limit() {
                Some(n) => println!("{scope}_concurrency: {n}"),
                None => println!("{scope}_concurrency: none"),
            }
            match limits.rate_limit() {
                Some((n, _)) => println!("{scope}_rate: {n}"),
                None => println!("{scope}_rate: none"),
            }
            println!("{scope}_period_ms: {}", limits.period().as_millis());
        }
        println!("dead_max: {}", settings.dead_max());
        println!("dead_age_ms: {}", settings.dead_age().as_millis());
        let off = |n: u64| if n == 0 { " (off)" } else { "" };
        let minutes = settings.metrics_window();
        println!("metrics_minutes: {minutes}{}", off(minutes));
        let events = settings.events_max();
        println!("events_max: {events}{}", off(events));
        println!("result_ttl_ms: {}", settings.result_ttl().as_millis());
        println!("result_max_bytes: {}", settings.result_max());
        println!(
            "group_turns: {}",
            if settings.takes_turns() { "on" } else { "off" }
        );
    }

    fn settings_json(settings: &Settings) -> Json {
        let (group, queue) = (settings.group(), settings.queue());
        json!({
            "group_concurrency": group.concurrency_limit().unwrap_or(0),
            "group_rate": group.rate_limit().map_or(0, |(n, _)| n),
            "group_period_ms": group.period().as_millis() as u64,
            "queue_concurrency": queue.concurrency_limit().unwrap_or(0),
            "queue_rate": queue.rate_limit().map_or(0, |(n, _)| n),
            "queue_period_ms": queue.period().as_millis() as u64,
            "dead_max": settings.dead_max(),
            "dead_age_ms": settings.dead_age().as_millis() as u64,
            "metrics_minutes": settings.metrics_window(),
            "events_max": settings.events_max(),
            "result_ttl_ms": settings.result_ttl().as_millis() as u64,
            "result_max_bytes": settings.result_max(),
            "group_turns": settings.takes_turns(),
        })
    }

    fn print_job(job: &JobInfo) {
        println!("id: {}", job.id);
        println!("state: {}", job.state);
        println!("deliveries: {}", job.deliveries);
        println!("priority: {}", job.priority);
        println!("group: {}", job.group.as_deref().unwrap_or("none"));
        match &job.last_error {
            Some(error) => println!("last_error: {}", text_cell(error)),
            None => println!("last_error: none"),
        }
        match job.at_ms {
            Some(ms) => println!("at_ms: {ms} ({})", utc(ms)),
            None => println!("at_ms: none"),
        }
        match &job.progress {
            Some(progress) => println!("progress: {}", text_cell(progress)),
            None => println!("progress: none"),
        }
        if job.pending_children > 0 || !job.failed_children.is_empty() {
            println!("pending_children: {}", job.pending_children);
            println!("failed_children: {}", job.failed_children.join(", "));
        }
        println!("payload: {}", text_cell(&job.payload));
    }

    /// A job as JSON: each value of bytes as text (`"payload"`) when it is UTF-8, else
    /// as hex digits, with which in `"payload_encoding"` (`"utf-8"` or `"hex"`). What
    /// only `job` reads (progress, children) is there when `whole`.
    fn job_json(job: &JobInfo, whole: bool) -> Json {
        let mut out = json!({
            "id": job.id,
            "state": job.state.as_str(),
            "deliveries": job.deliveries,
            "priority": job.priority,
            "group": job.group,
            "at_ms": job.at_ms,
        });
        let mut bytes = vec![
            ("payload", Some(&job.payload)),
            ("last_error", job.last_error.as_ref()),
        ];
        if whole {
            out["pending_children"] = json!(job.pending_children);
            out["failed_children"] = json!(job.failed_children);
            bytes.push(("progress", job.progress.as_ref()));
        }
        for (field, bytes) in bytes {
            let (value, encoding) = match bytes.map(|b| bytes_json(b)) {
                Some((value, encoding)) => (json!(value), json!(encoding)),
                None => (Json::Null, Json::Null),
            };
            out[field] = value;
            out[format!("{field}_encoding")] = encoding;
        }
        out
    }

    /// Bytes as JSON text and its encoding: the text itself when UTF-8, else hex.
    fn bytes_json(bytes: &[u8]) -> (String, &'static str) {
        match std::str::from_utf8(bytes) {
            Ok(text) => (text.to_owned(), "utf-8"),
            Err(_) => (hex(bytes), "hex"),
        }
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().fold(String::new(), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
    }

    fn list_row(job: &JobInfo) -> Vec<String> {
        vec![
            job.id.clone(),
            job.deliveries.to_string(),
            job.priority.to_string(),
            job.group.clone().unwrap_or_else(|| "-".to_owned()),
            job.at_ms.map_or_else(|| "-".to_owned(), utc),
            job.last_error
                .as_deref()
                .map_or_else(|| "-".to_owned(), |e| cut(text_cell(e))),
            cut(text_cell(&job.payload)),
        ]
    }

    /// Bytes for a person to read: UTF-8 text as it is, its control characters escaped
    /// (`\n`, `\u{1b}`), so that a value stays on its line; other bytes as `hex:` and
    /// their hex digits, and so too a text that starts with `hex:`, so that the prefix
    /// always means hex.
    fn text_cell(bytes: &[u8]) -> String {
        match std::str::from_utf8(bytes) {
            Ok(text) if !text.starts_with("hex:") => text
                .chars()
                .map(|c| {
                    if c.is_control() {
                        c.escape_default().to_string()
                    } else {
                        c.to_string()
                    }
                })
                .collect(),
            _ => format!("hex:{}", hex(bytes)),
        }
    }

    /// `text` cut to 40 characters, for a table.
    fn cut(text: String) -> String {
        const MAX: usize = 40;
        match text.char_indices().nth(MAX) {
            Some((end, _)) => format!("{}…", &text[..end]),
            None => text,
        }
    }

    /// Columns padded to their widest cell; the last one as it is.
    fn print_table(head: &[&str], rows: &[Vec<String>]) {
        let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
        for row in rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let line = |cells: &mut dyn Iterator<Item = &str>| {
            let mut out = String::new();
            for (i, cell) in cells.enumerate() {
                if i + 1 == widths.len() {
                    out.push_str(cell);
                } else {
                    let _ = write!(out, "{cell:<width$}  ", width = widths[i]);
                }
            }
            println!("{}", out.trim_end());
        };
        line(&mut head.iter().copied());
        for row in rows {
            line(&mut row.iter().map(String::as_str));
        }
    }

    /// A time in ms of the Unix clock as UTC, `2025-01-31T23:59:59.123Z`.
    fn utc(ms: u64) -> String {
        let (date, minute) = utc_parts(ms / 60_000);
        format!("{date}T{minute}:{:02}.{:03}Z", ms / 1000 % 60, ms % 1000)
    }

    /// A minute of the Unix clock (ms / 60,000) as UTC, `2025-01-31T23:59Z`.
    fn utc_minute(minute: u64) -> String {
        let (date, minute) = utc_parts(minute);
        format!("{date}T{minute}Z")
    }

    /// The date (`2025-01-31`) and the hour and minute (`23:59`) of a Unix minute.
    fn utc_parts(minute: u64) -> (String, String) {
        let days = minute / 1440;
        let in_day = minute % 1440;
        // Days since 1970-01-01 to a civil date (the proleptic Gregorian calendar), by
        // 400-year eras of 146,097 days counted from 0000-03-01.
        let z = days + 719_468;
        let era = z / 146_097;
        let doe = z % 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + u64::from(month <= 2);
        (
            format!("{year:04}-{month:02}-{day:02}"),
            format!("{:02}:{:02}", in_day / 60, in_day % 60),
        )
    }
}
