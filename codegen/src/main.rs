//! `redis-patterns-codegen`: checks a folder of scripts, or rewrites their input checks
//! from their headers.
//!
//! ```text
//! cargo install redis-patterns-codegen --version <the one in [build-dependencies]>
//! redis-patterns-codegen check sql
//! redis-patterns-codegen fix sql
//! ```
//!
//! Inside the `redis-patterns` workspace: `cargo run -p redis-patterns-codegen -- check
//! scripts`.

use std::process::ExitCode;

const USAGE: &str = "usage: redis-patterns-codegen check|fix <scripts folder>

  check  reports every problem of every script, as the build does
  fix    rewrites each script's input checks from its header (the block between
         `-- Input checks, generated ...` and `-- End of the generated input checks.`)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let config = redis_patterns_codegen::Config::new();
    match args.as_slice() {
        [command, dir] if command == "check" => match config.check(dir) {
            Ok(scripts) => {
                println!("{} scripts, no problems", scripts.len());
                ExitCode::SUCCESS
            }
            Err(err) => {
                eprintln!("{err}");
                ExitCode::FAILURE
            }
        },
        [command, dir] if command == "fix" => match config.fix(dir) {
            Ok(fixed) => {
                for path in &fixed.changed {
                    println!("rewrote the input checks of {path}");
                }
                for problem in &fixed.problems {
                    eprintln!("{problem}");
                }
                if fixed.problems.is_empty() {
                    if fixed.changed.is_empty() {
                        println!("every script's input checks already match its header");
                    }
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                }
            }
            Err(err) => {
                eprintln!("{err}");
                ExitCode::FAILURE
            }
        },
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}
