//! `redis-patterns-codegen`: checks a folder of scripts, or rewrites their input checks
//! from their headers.
//!
//! ```text
//! cargo install --path codegen   # in a checkout of the version in [build-dependencies]
//! redis-patterns-codegen check sql
//! redis-patterns-codegen fix sql
//! ```
//!
//! The `redis-patterns` command runs the same two, as `redis-patterns check sql` and
//! `redis-patterns fix sql`.

use std::path::Path;
use std::process::ExitCode;

use redis_patterns_codegen::cli::Client;

const USAGE: &str = "usage: redis-patterns-codegen check|fix <scripts folder>
       redis-patterns-codegen python <scripts folder> <python package folder>
           --package <crate> --version <version> [--check]
       redis-patterns-codegen typescript <scripts folder> <npm package folder>
           --package <crate> --version <version> [--check]

  check   reports every problem of every script, as the build does
  fix     rewrites each script's input checks from its header, and pastes the shared
          helpers it names from their `_shared.lua` files
  python  writes the generated part of the Python client (clients/python) for the
          crate's version; with --check, writes nothing and names every stale file
  typescript
          the same for the TypeScript client (clients/typescript)

The `redis-patterns` command (`cargo install --path . --features cli` in a checkout) has
the same two subcommands.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [command, dir] if command == "check" => redis_patterns_codegen::cli::check(Path::new(dir)),
        [command, dir] if command == "fix" => redis_patterns_codegen::cli::fix(Path::new(dir)),
        [command, dir, dist, flags @ ..] if command == "python" || command == "typescript" => {
            let lang = if command == "python" {
                Client::Python
            } else {
                Client::TypeScript
            };
            match client_flags(flags) {
                Some((package, version, check)) => redis_patterns_codegen::cli::client(
                    lang,
                    Path::new(dir),
                    Path::new(dist),
                    package,
                    version,
                    check,
                ),
                None => {
                    eprintln!("{USAGE}");
                    ExitCode::from(2)
                }
            }
        }
        [flag] if flag == "--help" || flag == "-h" || flag == "help" => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// `--package <crate> --version <version> [--check]`, in any order.
fn client_flags(flags: &[String]) -> Option<(&str, &str, bool)> {
    let (mut package, mut version, mut check) = (None, None, false);
    let mut flags = flags.iter();
    while let Some(flag) = flags.next() {
        match flag.as_str() {
            "--package" => package = Some(flags.next()?.as_str()),
            "--version" => version = Some(flags.next()?.as_str()),
            "--check" => check = true,
            _ => return None,
        }
    }
    Some((package?, version?, check))
}
