//! Writes what a non-Rust app needs to call the scripts into a folder: every script
//! (`<dir>/scripts/<family>/<op>.lua`), the manifest (`<dir>/manifest.json`), its JSON
//! Schema (`<dir>/manifest.schema.json`), and the Redis Functions library
//! (`<dir>/functions.lua`).
//!
//! ```sh
//! cargo run --example export -- /tmp/redis-patterns
//! python3 examples/python/manifest_client.py /tmp/redis-patterns
//! ```

use std::path::PathBuf;

use redis_patterns::catalog;

fn main() -> std::io::Result<()> {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: cargo run --example export -- <folder>");
        std::process::exit(2);
    };
    catalog::export(dir.join("scripts"))?;
    catalog::export_manifest(dir.join("manifest.json"))?;
    std::fs::write(dir.join("manifest.schema.json"), catalog::MANIFEST_SCHEMA)?;
    std::fs::write(dir.join("functions.lua"), catalog::FUNCTIONS)?;
    println!(
        "{} scripts, manifest.json, manifest.schema.json and functions.lua written to {}",
        catalog::scripts().len(),
        dir.display()
    );
    Ok(())
}
