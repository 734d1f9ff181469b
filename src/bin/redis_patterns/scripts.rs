//! `show` and `export`: the crate's scripts as headers, files, a library or a manifest.

use redis_patterns::{Param, Rule, Script, catalog};

use super::What;
use super::shared::Failure;

pub(crate) fn export(dir: &std::path::Path, what: What) -> Result<(), Failure> {
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

pub(crate) fn show(script: &Script) {
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
