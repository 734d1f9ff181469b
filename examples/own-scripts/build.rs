//! Generates a typed Rust call for every script under `lua/` (`lua/<family>/<op>.lua`).
//!
//! A problem in a script fails the build with every problem listed, as
//! `lua/inventory/reserve.lua:LINE:COL: error: …` and a hint.

use std::path::PathBuf;

fn main() {
    // Watching the whole folder regenerates the code when a script is added or edited.
    println!("cargo::rerun-if-changed=lua");
    let out =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("scripts.rs");
    if let Err(err) = redis_patterns_codegen::Config::new().compile("lua", &out) {
        eprintln!("{err}");
        std::process::exit(1);
    }
}
