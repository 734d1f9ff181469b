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

use clap::{Parser, Subcommand, ValueEnum};
use redis_patterns::{ScriptMode, catalog};

use call::{call, print_value, template_keys};
use scripts::{export, show};
use shared::{Failure, connect, find};

mod call;
#[cfg(feature = "dashboard")]
mod dashboard;
mod queue;
mod scripts;
mod shared;

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
    /// Serves a web page of the work queues of a server or a cluster (`--features
    /// dashboard`): their counts and last hour, settings, jobs by state, each job; and the
    /// `queue` actions, which need the token it prints at start.
    ///
    /// It listens on 127.0.0.1:7766 unless told otherwise (`--listen`), answers only to IP
    /// addresses, `localhost` and `--host-name`s, refuses actions sent by another site's
    /// page, and with `--read-only` takes none.
    #[cfg(feature = "dashboard")]
    Dashboard(dashboard::DashboardArgs),
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
        #[cfg(feature = "dashboard")]
        Command::Dashboard(args) => dashboard::run(args),
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
