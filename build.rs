//! Generates the typed wrapper of every script in `scripts/` (see the codegen crate).

use std::path::PathBuf;

fn main() {
    // Cargo watches the whole folder, so an added or edited script regenerates the code.
    println!("cargo::rerun-if-changed=scripts");
    let out =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("scripts.rs");
    if let Err(err) = redis_patterns_codegen::Config::new()
        .runtime("crate")
        .compile("scripts", &out)
    {
        eprintln!("{err}");
        std::process::exit(1);
    }
}
