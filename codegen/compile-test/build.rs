//! Generates the typed calls of every good fixture of the codegen's tests
//! (`codegen/tests/fixtures/good`, each subfolder a family), as an app's `build.rs` does
//! for its own scripts.

use std::path::PathBuf;

const FIXTURES: &str = "../tests/fixtures/good";

fn main() {
    // The generator is a build-dependency: cargo reruns this script when it changes.
    println!("cargo::rerun-if-changed={FIXTURES}");
    let out =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("fixtures.rs");
    if let Err(err) = redis_patterns_codegen::Config::new().compile(FIXTURES, &out) {
        eprintln!("{err}");
        std::process::exit(1);
    }
}
