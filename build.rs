//! Builds the crate from the code generated from `scripts/`, which `generated/` holds: the
//! typed wrapper of every script, their JSON manifest, their Redis Functions library (see
//! the codegen crate), and the `include_dir` tree of `scripts/`.
//!
//! An app's build compiles that code as it is, without the generator (handlebars and its
//! parsers cost more to build than the rest of the crate): there it only checks that
//! `generated/` was made from the scripts as they are, by their SHA1s.
//!
//! With the `codegen` feature (on in the crate's own tests, examples and benches), the
//! build runs the generator on `scripts/` (which checks every script against its header)
//! and fails unless the result is `generated/` to the byte; with
//! `REDIS_PATTERNS_GENERATED=overwrite` it writes the result to `generated/` instead.

use std::path::{Path, PathBuf};

fn main() {
    // Cargo watches both folders, so an added or edited script rebuilds the crate.
    println!("cargo::rerun-if-changed=scripts");
    println!("cargo::rerun-if-changed=generated");
    println!("cargo::rerun-if-env-changed=REDIS_PATTERNS_GENERATED");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    if let Err(message) = rustdoc_pages::write(&root) {
        eprintln!("{message}");
        std::process::exit(1);
    }
    // With the generator, its output is compared byte for byte (which covers the SHA1s);
    // without it, the SHA1s are what can be checked.
    #[cfg(feature = "codegen")]
    let result = generate::compare_or_write(&root);
    #[cfg(not(feature = "codegen"))]
    let result = current(&root);
    if let Err(message) = result {
        eprintln!("{message}");
        std::process::exit(1);
    }
}

/// Fails unless every script under `scripts/` has its SHA1 in `generated/scripts.rs`, and
/// that file has no script more: the generated code is of these scripts.
#[cfg(not(feature = "codegen"))]
fn current(root: &Path) -> Result<(), String> {
    let generated = std::fs::read_to_string(root.join("generated/scripts.rs"))
        .map_err(|err| format!("cannot read generated/scripts.rs: {err}"))?;
    let mut stale = Vec::new();
    let mut scripts = 0;
    for family in sorted_entries(&root.join("scripts"))? {
        if !family.is_dir() {
            continue;
        }
        for path in sorted_entries(&family)? {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if !name.ends_with(".lua") || name.starts_with('_') {
                continue;
            }
            scripts += 1;
            let source = std::fs::read(&path)
                .map_err(|err| format!("cannot read {}: {err}", path.display()))?;
            let sha1 = sha1_smol::Sha1::from(&source).digest().to_string();
            if !generated.contains(&format!("sha1: \"{sha1}\"")) {
                stale.push(
                    path.strip_prefix(root)
                        .unwrap_or(&path)
                        .display()
                        .to_string(),
                );
            }
        }
    }
    let listed = generated.matches("sha1: \"").count();
    if stale.is_empty() && listed == scripts {
        return Ok(());
    }
    Err(format!(
        "generated/ is not the code of scripts/ as it is ({} of {scripts} scripts changed, \
         {listed} generated): {}\n\
         Regenerate it with `REDIS_PATTERNS_GENERATED=overwrite cargo build --features codegen`.",
        stale.len(),
        stale.join(", "),
    ))
}

fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .and_then(|entries| entries.map(|e| e.map(|e| e.path())).collect())
        .map_err(|err| format!("cannot read {}: {err}", dir.display()))?;
    entries.sort();
    Ok(entries)
}

#[cfg(feature = "codegen")]
mod generate {
    use std::collections::HashMap;
    use std::fmt::Write as _;
    use std::path::{Path, PathBuf};

    use redis_patterns_codegen::{Config, model::ScriptFile};

    /// What `generated/` holds, each file made from the whole of `scripts/`.
    const GENERATED: [&str; 4] = [
        "scripts.rs",
        "manifest.json",
        "functions.lua",
        "scripts_dir.rs",
    ];

    /// Generates every file of `generated/` into `OUT_DIR`, then writes each one that
    /// differs to `generated/` (with `REDIS_PATTERNS_GENERATED=overwrite`) or fails naming
    /// them.
    pub fn compare_or_write(root: &Path) -> Result<(), String> {
        let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
        generate(root, &out_dir).map_err(|err| err.to_string())?;
        let overwrite = match std::env::var("REDIS_PATTERNS_GENERATED").as_deref() {
            Ok("overwrite") => true,
            Ok("") | Err(_) => false,
            Ok(other) => {
                return Err(format!(
                    "REDIS_PATTERNS_GENERATED is `overwrite` or unset, not `{other}`"
                ));
            }
        };
        let mut differ = Vec::new();
        for name in GENERATED {
            let made = std::fs::read(out_dir.join(name))
                .map_err(|err| format!("cannot read the generated {name}: {err}"))?;
            let kept = root.join("generated").join(name);
            if std::fs::read(&kept).ok().as_ref() == Some(&made) {
                continue;
            }
            if overwrite {
                std::fs::create_dir_all(root.join("generated"))
                    .and_then(|()| std::fs::write(&kept, &made))
                    .map_err(|err| format!("cannot write {}: {err}", kept.display()))?;
            } else {
                differ.push(format!("generated/{name}"));
            }
        }
        if differ.is_empty() {
            return Ok(());
        }
        Err(format!(
            "{} not what the generator makes of scripts/ now.\n\
             Regenerate with `REDIS_PATTERNS_GENERATED=overwrite cargo build --features codegen`, \
             and commit generated/ with the scripts.",
            differ.join(", ") + if differ.len() == 1 { " is" } else { " are" },
        ))
    }

    fn generate(root: &Path, out_dir: &Path) -> Result<(), redis_patterns_codegen::Error> {
        // Relative, as the generated code names the scripts (a build script runs in the
        // package's folder).
        let scripts = Path::new("scripts");
        let mut config = Config::new();
        config.runtime("crate");
        config.compile(scripts, out_dir.join("scripts.rs"))?;
        config.compile_manifest(
            scripts,
            env!("CARGO_PKG_NAME"),
            env!("CARGO_PKG_VERSION"),
            out_dir.join("manifest.json"),
        )?;
        config.compile_functions(
            scripts,
            env!("CARGO_PKG_VERSION"),
            out_dir.join("functions.lua"),
        )?;
        let files = config.read(scripts)?;
        let path = out_dir.join("scripts_dir.rs");
        std::fs::write(&path, scripts_dir(&root.join("scripts"), &files))
            .map_err(|source| redis_patterns_codegen::Error::Io { path, source })
    }

    /// `scripts/` as an `include_dir::Dir` expression, as `include_dir!` builds it
    /// (entries in path order, paths relative to `scripts/`), but with each script's
    /// contents taken from its generated `Script::source` rather than embedded a second
    /// time; the other files (`_shared.lua`) are embedded here, by paths relative to the
    /// package, so that the code builds wherever the package is.
    fn scripts_dir(root: &Path, scripts: &[ScriptFile]) -> String {
        let sources: HashMap<String, String> = scripts
            .iter()
            .map(|s| {
                let path = format!("{}/{}.lua", s.family, s.op);
                let source = format!(
                    "crate::scripts::{}::{}.source.as_bytes()",
                    s.family,
                    s.op.to_uppercase()
                );
                (path, source)
            })
            .collect();
        let mut out =
            String::from("// @generated by build.rs from the scripts/ folder. Do not edit.\n");
        dir_expr(root, root, &sources, &mut out);
        out.push('\n');
        out
    }

    fn dir_expr(root: &Path, dir: &Path, sources: &HashMap<String, String>, out: &mut String) {
        let relative = |path: &Path| {
            let path = path.strip_prefix(root).expect("under scripts/");
            path.to_str()
                .expect("script paths are UTF-8")
                .replace('\\', "/")
        };
        let children = super::sorted_entries(dir).unwrap_or_else(|err| panic!("{err}"));
        write!(
            out,
            "include_dir::Dir::new({:?}, {{ const ENTRIES: &[include_dir::DirEntry<'static>] = &[",
            relative(dir)
        )
        .unwrap();
        for child in children {
            let path = relative(&child);
            if child.is_dir() {
                out.push_str("include_dir::DirEntry::Dir(");
                dir_expr(root, &child, sources, out);
                out.push_str("), ");
            } else {
                let contents = match sources.get(&path) {
                    Some(source) => source.clone(),
                    None => format!(
                        "include_bytes!(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/scripts/{path}\"))"
                    ),
                };
                write!(
                    out,
                    "include_dir::DirEntry::File(include_dir::File::new({path:?}, {contents})), "
                )
                .unwrap();
            }
        }
        out.push_str("]; ENTRIES })");
    }
}

/// The README and the guide pages (`docs/*.md`) as the crate's docs include them. In a
/// checkout their links go to files and to the pages `cargo doc` writes
/// (`target/doc/redis_patterns/…`); the copies written to `OUT_DIR` link the same items as
/// intra-doc links (which rustdoc checks), the guide pages as the `guide` modules, and the
/// other files in the repository.
mod rustdoc_pages {
    use std::path::{Path, PathBuf};

    /// The pages, by their path in the package.
    const PAGES: [&str; 6] = [
        "README.md",
        "docs/dashboard.md",
        "docs/from-bullmq.md",
        "docs/script-header.md",
        "docs/servers.md",
        "docs/which-lock.md",
    ];

    pub fn write(root: &Path) -> Result<(), String> {
        let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
        std::fs::create_dir_all(out_dir.join("docs"))
            .map_err(|err| format!("cannot create {}/docs: {err}", out_dir.display()))?;
        for page in PAGES {
            println!("cargo::rerun-if-changed={page}");
            let text = std::fs::read_to_string(root.join(page))
                .map_err(|err| format!("cannot read {page}: {err}"))?;
            let out = out_dir.join(page);
            std::fs::write(&out, rewrite(root, page, &text))
                .map_err(|err| format!("cannot write {}: {err}", out.display()))?;
        }
        Ok(())
    }

    /// `text` with the destination of each link definition and inline link outside code
    /// blocks rewritten for rustdoc.
    fn rewrite(root: &Path, page: &str, text: &str) -> String {
        let folder = page.rsplit_once('/').map_or("", |(folder, _)| folder);
        let mut out = String::with_capacity(text.len());
        let mut fenced = false;
        for line in text.split_inclusive('\n') {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
            }
            if fenced {
                out.push_str(line);
                continue;
            }
            // A definition: `[label]: destination`.
            if let Some((label, dest)) = line.split_once("]: ").filter(|_| line.starts_with('[')) {
                let dest = dest.trim_end();
                out.push_str(label);
                out.push_str("]: ");
                out.push_str(&destination(root, folder, dest));
                out.push_str(&line[label.len() + 3 + dest.len()..]);
                continue;
            }
            // Inline links: `](destination)`.
            let mut rest = line;
            while let Some(at) = rest.find("](") {
                out.push_str(&rest[..at + 2]);
                rest = &rest[at + 2..];
                let end = rest.find([')', ' ']).unwrap_or(rest.len());
                out.push_str(&destination(root, folder, &rest[..end]));
                rest = &rest[end..];
            }
            out.push_str(rest);
        }
        out
    }

    /// Where a link of a page in `folder` goes in the rendered docs.
    fn destination(root: &Path, folder: &str, dest: &str) -> String {
        if dest.contains("://") || dest.starts_with('#') || dest.starts_with("mailto:") {
            return dest.to_owned();
        }
        let (path, fragment) = match dest.split_once('#') {
            Some((path, fragment)) => (path, Some(fragment)),
            None => (dest, None),
        };
        let mut parts: Vec<&str> = folder.split('/').filter(|p| !p.is_empty()).collect();
        for part in path.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    parts.pop();
                }
                part => parts.push(part),
            }
        }
        let path = parts.join("/");
        let with = |target: String| match fragment {
            Some(fragment) => format!("{target}#{fragment}"),
            None => target,
        };
        if let Some(item) = path.strip_prefix("target/doc/redis_patterns/") {
            return intra_doc_path(item, fragment);
        }
        if path == "README.md" {
            return with("crate".to_owned());
        }
        if let Some(guide) = path
            .strip_prefix("docs/")
            .and_then(|p| p.strip_suffix(".md"))
        {
            return with(format!("crate::guide::{}", guide.replace('-', "_")));
        }
        let kind = if root.join(&path).is_dir() {
            "tree"
        } else {
            "blob"
        };
        with(format!(
            "{}/{kind}/HEAD/{path}",
            env!("CARGO_PKG_REPOSITORY")
        ))
    }

    /// The intra-doc link to the item whose page `cargo doc` writes at `page` (under
    /// `target/doc/redis_patterns/`), with the kind the page's name gives it, so that
    /// rustdoc refuses a page name that is not the item's: `work_queue/struct.Worker.html`
    /// is `struct@crate::work_queue::Worker`, and with `#method.run`,
    /// `method@crate::work_queue::Worker::run`. A heading's anchor stays an anchor.
    fn intra_doc_path(page: &str, fragment: Option<&str>) -> String {
        let (modules, file) = page.rsplit_once('/').unwrap_or(("", page));
        let mut path = vec!["crate"];
        path.extend(modules.split('/').filter(|m| !m.is_empty()));
        let mut kind = "mod";
        if file != "index.html" {
            let name = file.strip_suffix(".html").unwrap_or(file);
            let (item_kind, name) = name.split_once('.').unwrap_or(("", name));
            kind = item_kind;
            path.push(name);
        }
        let path = path.join("::");
        // rustdoc's anchor of a member, and the disambiguator of its kind.
        let member = fragment.and_then(|f| {
            let (anchor_kind, name) = f.split_once('.')?;
            let kind = match anchor_kind {
                "method" | "tymethod" => "method",
                "variant" => "variant",
                "structfield" => "field",
                "associatedconstant" => "constant",
                "associatedtype" => "type",
                _ => return None,
            };
            Some((kind, name))
        });
        match (member, fragment) {
            (Some((kind, member)), _) => format!("{kind}@{path}::{member}"),
            (None, Some(anchor)) => format!("{kind}@{path}#{anchor}"),
            (None, None) => format!("{kind}@{path}"),
        }
    }
}
