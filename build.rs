//! Generates the typed wrapper of every script in `scripts/`, their JSON manifest and
//! their Redis Functions library (see the codegen crate).

use std::path::PathBuf;

fn main() {
    // Cargo watches the whole folder, so an added or edited script regenerates the code.
    println!("cargo::rerun-if-changed=scripts");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let mut config = redis_patterns_codegen::Config::new();
    config.runtime("crate");
    let built = config
        .compile("scripts", out_dir.join("scripts.rs"))
        .and_then(|()| {
            config.compile_manifest(
                "scripts",
                env!("CARGO_PKG_NAME"),
                env!("CARGO_PKG_VERSION"),
                out_dir.join("manifest.json"),
            )
        })
        .and_then(|()| {
            config.compile_functions(
                "scripts",
                env!("CARGO_PKG_VERSION"),
                out_dir.join("functions.lua"),
            )
        });
    if let Err(err) = built {
        eprintln!("{err}");
        std::process::exit(1);
    }
}
