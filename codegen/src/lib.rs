//! Typed Rust calls for Redis Lua scripts, generated at build time from each script's
//! header. It is the generator behind [`redis-patterns`](https://docs.rs/redis-patterns),
//! and an app runs it from its own `build.rs` for its own scripts, as it would run
//! `prost-build` for its `.proto` files.
//!
//! It parses the header of every script in a folder, checks each header against its
//! script's body (every problem of every file at once, as
//! `sql/inventory/reserve.lua:LINE:COL: error: …` and a hint), and renders, per script, a
//! `static` [`Script`](https://docs.rs/redis-patterns/latest/redis_patterns/struct.Script.html)
//! and a function whose parameters are the header's keys and arguments.
//!
//! # Your own scripts
//!
//! The whole setup is in the repository's
//! [`examples/own-scripts`](https://github.com/redis-patterns/redis-patterns/tree/main/examples/own-scripts).
//!
//! **`Cargo.toml`**: the runtime in `[dependencies]`, the generator in
//! `[build-dependencies]`, at the same version (see [the version check](#the-version-check)):
//!
//! ```toml
//! [dependencies]
//! redis-patterns = "0.1"
//! redis = "1"                    # the connection
//!
//! [build-dependencies]
//! redis-patterns-codegen = "0.1"
//! ```
//!
//! **The scripts**: one file per script, at `<folder>/<family>/<op>.lua`, in a folder of
//! the package (any name: `sql` here). The family becomes a module and the op a function,
//! so both are snake_case Rust identifiers. A `.lua` file anywhere else in the folder
//! (directly in it, or in a folder inside a family) is an error, never silently left out.
//!
//! ```text
//! sql/inventory/reserve.lua
//! sql/inventory/release.lua
//! ```
//!
//! **`build.rs`**: the folder is relative to the package root, and is the path the
//! generated code and the diagnostics show (`sql/inventory/reserve.lua`).
//!
//! ```no_run
//! // build.rs, in `fn main()`
//! println!("cargo::rerun-if-changed=sql");
//! let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").unwrap()).join("scripts.rs");
//! if let Err(err) = redis_patterns_codegen::Config::new().compile("sql", &out) {
//!     eprintln!("{err}"); // every problem of every script, then how many
//!     std::process::exit(1);
//! }
//! ```
//!
//! **A manifest**, for tools and for clients in other languages:
//! [`compile_manifest`](Config::compile_manifest) writes every script's contract as JSON
//! (name, path, SHA1, flags, keys, arguments with their types, counts and rules, return
//! type, errors, clock, complexity), in the shape of `redis-patterns`'s
//! `schema/manifest.schema.json`.
//!
//! **The module**: the generated file is pulled in with one `include!`.
//!
//! ```ignore
//! // src/main.rs or src/lib.rs
//! mod scripts {
//!     include!(concat!(env!("OUT_DIR"), "/scripts.rs"));
//! }
//! ```
//!
//! # The script header
//!
//! A script starts with an optional `#!lua flags=…` line, then a block of `---` lines,
//! then the input checks generated from it (see [below](#input-checks-fix-and-check)), then
//! its own code. The full grammar is in the `redis-patterns` README, section
//! ["The script header"](https://docs.rs/redis-patterns/latest/redis_patterns/#the-script-header).
//!
//! ```lua
//! --- Reserves `quantity` units of an item for `order`, if that many are left in stock.
//! ---
//! --- Any description, as many lines as needed.
//! --- @key stock string {<sku>}:stock      units in stock: an integer; missing counts as 0
//! --- @key reserved hash {<sku>}:reserved  units reserved, by order; in the same hash slot as `stock`
//! --- @arg order string non-empty    the order the units are for
//! --- @arg quantity uint 1..=10^9    how many units to reserve
//! --- @return int?                   units left in stock; nil when fewer than `quantity` were left (nothing reserved)
//! --- @error BAD_ARGS                not 2 keys and 2 arguments
//! --- @error BAD_ORDER               empty
//! --- @error BAD_QUANTITY            not an integer within its range
//! --- @error NOT_A_COUNT             `stock` holds something other than a count of units
//! --- @complexity O(1)
//! ```
//!
//! The tags are `@key` (with the key's name template), `@arg`, `@return`, `@error`,
//! `@uses` (shared helpers), `@default` (what the Rust API fills in), `@clock` and
//! `@complexity`. The grammar is written once, in
//! the `redis-patterns` README: ["The script header"](https://docs.rs/redis-patterns/latest/redis_patterns/#the-script-header),
//! ["Key names"](https://docs.rs/redis-patterns/latest/redis_patterns/#key-names) and
//! ["Shared helpers"](https://docs.rs/redis-patterns/latest/redis_patterns/#shared-helpers).
//! The docs of the codes the input checks raise (`BAD_ARGS`, `BAD_<NAME>`) are written by
//! `fix`. Besides the header, the build refuses `KEYS[n]`/`ARGV[n]` used but not declared,
//! a local bound under another name than the header's, a global assignment, and a key name
//! built inside Lua.
//!
//! # The generated code
//!
//! For each script, in the module of its family: a `static` `Script` (upper case: `RESERVE`)
//! with its name (`inventory/reserve`), path (`sql/inventory/reserve.lua`), SHA1, source,
//! flags and the whole header; and a function (`reserve`) whose parameters are the keys
//! (`&str`, `&[&str]` when variadic) then the arguments (`&str`, `&[u8]`, `i64`, `u64`,
//! `f64`, `bool`, `Duration`, `Option<…>` for `?`, slices when variadic), returning an
//! `Op` of the header's return type (`int?` is `Op<Option<i64>>`). For the keys with a
//! template, a `keys` module holds a `static` `KeyTemplate` and a function per key name
//! (`keys::stock(sku) -> Result<String>`; `<key>_<n>` per form of a key of several forms),
//! whose parameters are the template's placeholders in order. Building an `Op` sends
//! nothing: it checks every key and argument against the header first (a bad one fails
//! with `Error::InvalidInput` when run, before any I/O), then runs on a sync or async
//! connection, or in a `Batch`. At the top level, `ALL` lists every script. The file
//! starts with an `@generated` line, is formatted, and is the same bytes for the same
//! scripts; it builds without warnings in a crate that uses only some of it, and every
//! item has docs.
//!
//! ```ignore
//! use scripts::inventory;
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! // Optional: each call loads its script when the server lacks it. Loading at start-up
//! // fails fast, and lets the app send EVALSHA in its own pipelines.
//! redis_patterns::load(&mut con, &[&inventory::RESERVE, &inventory::RELEASE])?; // or scripts::ALL
//! let left: Option<i64> = inventory::reserve("{sku:42}:stock", "{sku:42}:reserved", "order-1", 3)
//!     .run(&mut con)?;
//! ```
//!
//! A script's declared error comes back as `Error::Script { script, path, code, message }`,
//! whose message names the script's file (`sql/inventory/reserve.lua`), where its `@error`
//! lines say what the code means.
//!
//! # Input checks: `fix` and `check`
//!
//! Each script starts, right after its header, with input checks rendered from the header
//! ([`contract`]): the `KEYS`/`ARGV` counts and every argument, in Lua, answering
//! `BAD_ARGS` or `BAD_<NAME>`, a local of the header's name for each key and argument, and,
//! where keys have templates, a check that the call's keys are named as they say
//! (`BAD_KEYS`: literal text, one hash tag for the call, and every value two keys, or a key
//! and the argument of its placeholder's name, share). The helpers they call (`shown`,
//! `integer`, …) are pasted before them with the script's shared helpers ([`shared`]), so
//! the script's own code starts right after their last line.
//! They live in the file, so that it runs alone (`redis-cli --eval`, any client) and what
//! Redis runs is what a reader sees; the build refuses a script whose checks differ from
//! its header. Write the header, then let the command write the checks, and again after
//! every header change:
//!
//! ```text
//! cargo install --path . --features cli   # in a checkout of the version you depend on
//! redis-patterns fix sql     # rewrites each script's input checks from its header
//! redis-patterns check sql   # reports every problem, as the build does
//! ```
//!
//! (`redis-patterns-codegen fix sql` and `check sql`, from `cargo install --path codegen`,
//! do the same.) [`Config::fix`] and [`Config::check`] do the same from Rust.
//!
//! # The version check
//!
//! The generated code calls the runtime's items (`Script`, `Param`, `ScriptCall`, …), so
//! it must be built against the `redis-patterns` it was generated for. Every generated file
//! starts with `const _: () = ::redis_patterns::check_generated_code_format(N);`, where `N`
//! is this crate's [`GENERATED_CODE_FORMAT`]: against a runtime of another format, the app
//! fails to compile with one message that says to use the same version of both crates,
//! rather than with errors about missing fields.
//!
//! The generated code names the runtime `::redis_patterns`; an app that renames the
//! dependency says so with [`Config::runtime`].

#![warn(missing_docs)]

mod check;
pub mod cli;
pub mod diagnostic;
mod helpers;
mod layout;
mod lua;
pub mod model;
mod parse;
mod render;
pub mod shared;

use std::fmt;
use std::path::{Path, PathBuf};

pub use check::analyze;
pub use diagnostic::Diagnostic;
pub use render::rust::{GENERATED_CODE_FORMAT, GENERATED_HEADER};
pub use render::{contract, functions};

use model::{Script, ScriptFile};

/// How to generate: the path of the runtime crate the generated code calls.
#[derive(Debug, Clone)]
pub struct Config {
    runtime: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            runtime: "::redis_patterns".into(),
        }
    }
}

/// What [`Config::fix`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fixed {
    /// The files whose input checks were rewritten.
    pub changed: Vec<String>,
    /// The files left alone, and why.
    pub problems: Vec<Diagnostic>,
}

/// Why generation failed.
#[derive(Debug)]
pub enum Error {
    /// The scripts have problems; every one found is listed.
    Scripts(Vec<Diagnostic>),
    /// A file could not be read or written.
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The generator could not render its template: a bug in the generator.
    Render(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Scripts(diagnostics) => {
                for d in diagnostics {
                    writeln!(f, "{d}")?;
                }
                let n = diagnostics.len();
                write!(
                    f,
                    "{n} problem{} in the scripts",
                    if n == 1 { "" } else { "s" }
                )
            }
            Error::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Render(msg) => write!(f, "redis-patterns-codegen bug: {msg}"),
        }
    }
}

impl std::error::Error for Error {}

impl Config {
    /// The defaults: generated code calls `::redis_patterns`.
    pub fn new() -> Self {
        Self::default()
    }

    /// The path by which generated code names the runtime crate: `crate` inside
    /// `redis-patterns` itself, `::redis_patterns` (the default) elsewhere.
    pub fn runtime(&mut self, path: impl Into<String>) -> &mut Self {
        self.runtime = path.into();
        self
    }

    /// Reads every `<family>/<op>.lua` under `dir`, sorted by path.
    ///
    /// `dir` is relative to the package root (where `build.rs` runs), and appears so in
    /// diagnostics, in each generated `Script`'s `path` and in the generated
    /// `include_str!`: `sql` gives `sql/inventory/reserve.lua`. An absolute `dir` inside
    /// the package (`$CARGO_MANIFEST_DIR/sql`) is shown relative to it, the same way.
    ///
    /// A `.lua` file anywhere else under `dir` (directly in it, or in a folder inside a
    /// family folder) is an error: [`Error::Scripts`], with where to move it. Other files
    /// are ignored.
    pub fn read(&self, dir: impl AsRef<Path>) -> Result<Vec<ScriptFile>, Error> {
        let (files, misplaced) = scan(dir.as_ref())?;
        if misplaced.is_empty() {
            Ok(files)
        } else {
            Err(Error::Scripts(misplaced))
        }
    }

    /// [`read`](Self::read) then [`analyze`](Self::analyze): the checked scripts under
    /// `dir`, or every problem of every file at once, misplaced files included. This is
    /// what `redis-patterns-codegen check <folder>` and [`compile`](Self::compile) run.
    pub fn check(&self, dir: impl AsRef<Path>) -> Result<Vec<Script>, Error> {
        let (files, mut problems) = scan(dir.as_ref())?;
        match self.analyze(&files) {
            Ok(scripts) if problems.is_empty() => Ok(scripts),
            Ok(_) => Err(Error::Scripts(problems)),
            Err(Error::Scripts(found)) => {
                problems.extend(found);
                problems.sort();
                Err(Error::Scripts(problems))
            }
            Err(other) => Err(other),
        }
    }

    /// Parses and checks `files`: the scripts, or every problem of every file.
    pub fn analyze(&self, files: &[ScriptFile]) -> Result<Vec<Script>, Error> {
        let mut scripts = Vec::new();
        let mut problems = Vec::new();
        for file in files {
            problems.extend(check_names(file));
            match analyze(file) {
                Ok(script) => scripts.push(script),
                Err(found) => problems.extend(found),
            }
        }
        problems.extend(check::check_family(&scripts));
        if problems.is_empty() {
            Ok(scripts)
        } else {
            problems.sort();
            Err(Error::Scripts(problems))
        }
    }

    /// Renders checked scripts into formatted Rust source. Pure: the same scripts give the
    /// same bytes.
    pub fn generate(&self, scripts: &[Script]) -> Result<String, Error> {
        render::rust::render(scripts, &self.runtime).map_err(Error::Render)
    }

    /// Rewrites the input checks of every script under `dir` from its header (see
    /// [`contract`]). A script whose header does not parse, or whose block cannot be found
    /// whole, is left alone and reported in [`Fixed::problems`]; the others are fixed.
    /// Fails only when a file cannot be read or written.
    pub fn fix(&self, dir: impl AsRef<Path>) -> Result<Fixed, Error> {
        let mut changed = Vec::new();
        let (files, mut problems) = scan(dir.as_ref())?;
        for file in files {
            let mut report = diagnostic::Report::new(&file.path);
            let parsed = parse::parse(&file.source, &mut report);
            let header = if report.diagnostics.is_empty() {
                parsed.clone().into_header()
            } else {
                None
            };
            let Some(header) = header else {
                problems.extend(report.diagnostics);
                continue;
            };
            let shared = check::shared_section(&file, &parsed, Some(&header), &mut report);
            if !report.diagnostics.is_empty() {
                problems.extend(report.diagnostics);
                continue;
            }
            let fixed = match contract::fix_with(&file.source, &header, &shared) {
                Ok(fixed) => fixed,
                Err(why) => {
                    problems.push(Diagnostic {
                        path: file.path.clone(),
                        line: 1,
                        col: 1,
                        message: why,
                        hint: "the fixer rewrites only a block it can find whole".into(),
                    });
                    continue;
                }
            };
            if fixed != file.source {
                std::fs::write(&file.path, fixed).map_err(|source| Error::Io {
                    path: PathBuf::from(&file.path),
                    source,
                })?;
                changed.push(file.path);
            }
        }
        problems.sort();
        Ok(Fixed { changed, problems })
    }

    /// The JSON manifest of `scripts` for `package` at `version`: every script's name,
    /// path, SHA1, flags, keys, arguments (types, counts, rules), return type, errors,
    /// clock and complexity, in the shape of `manifest.schema.json`.
    pub fn manifest(&self, scripts: &[Script], package: &str, version: &str) -> String {
        render::manifest::manifest(scripts, package, version)
    }

    /// Reads and checks the scripts under `dir` and writes their manifest to `out`
    /// (see [`manifest`](Self::manifest)), leaving `out` untouched when it already holds
    /// the same bytes.
    pub fn compile_manifest(
        &self,
        dir: impl AsRef<Path>,
        package: &str,
        version: &str,
        out: impl AsRef<Path>,
    ) -> Result<(), Error> {
        let json = self.manifest(&self.check(dir)?, package, version);
        write_if_changed(out.as_ref(), &json)
    }

    /// The Redis Functions library of `scripts` for crate `version`: each script's body
    /// registered as a function (see [`functions`]), for `FUNCTION LOAD`.
    pub fn functions_library(&self, scripts: &[Script], version: &str) -> String {
        functions::library(scripts, version)
    }

    /// Reads and checks the scripts under `dir` and writes their Functions library to
    /// `out` (see [`functions_library`](Self::functions_library)), leaving `out` untouched
    /// when it already holds the same bytes.
    pub fn compile_functions(
        &self,
        dir: impl AsRef<Path>,
        version: &str,
        out: impl AsRef<Path>,
    ) -> Result<(), Error> {
        let library = self.functions_library(&self.check(dir)?, version);
        write_if_changed(out.as_ref(), &library)
    }

    /// Reads, checks and renders the scripts under `dir` and writes the result to `out`,
    /// leaving `out` untouched when it already holds the same bytes.
    pub fn compile(&self, dir: impl AsRef<Path>, out: impl AsRef<Path>) -> Result<(), Error> {
        let code = self.generate(&self.check(dir)?)?;
        write_if_changed(out.as_ref(), &code)
    }
}

/// Writes `text` to `out` unless `out` already holds it (so that cargo sees no change).
fn write_if_changed(out: &Path, text: &str) -> Result<(), Error> {
    if std::fs::read_to_string(out).is_ok_and(|old| old == text) {
        return Ok(());
    }
    std::fs::write(out, text).map_err(|source| Error::Io {
        path: out.to_path_buf(),
        source,
    })
}

/// The scripts under `dir` (each `<dir>/<family>/<op>.lua`, sorted by path), and a
/// diagnostic for every other `.lua` file under it, which would otherwise be left out of
/// the build without a word.
pub(crate) fn scan(dir: &Path) -> Result<(Vec<ScriptFile>, Vec<Diagnostic>), Error> {
    let shown_dir = display_path(&relative_to_package(dir));
    let mut files = Vec::new();
    let mut misplaced = Vec::new();
    let read = |path: &Path| {
        std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })
    };
    let top_shared = dir.join(shared::FILE_NAME);
    let top_shared = if top_shared.is_file() {
        Some(shared::SharedFile {
            path: format!("{shown_dir}/{}", shared::FILE_NAME),
            family: None,
            source: read(&top_shared)?,
        })
    } else {
        None
    };
    for entry in sorted_entries(dir)? {
        if !entry.is_dir() {
            if is_lua(&entry) && file_name(&entry) != shared::FILE_NAME {
                let name = file_name(&entry);
                misplaced.push(Diagnostic {
                    path: format!("{shown_dir}/{name}"),
                    line: 1,
                    col: 1,
                    message: format!(
                        "a script directly in `{shown_dir}`, outside any family folder"
                    ),
                    hint: format!(
                        "move it to `{shown_dir}/<family>/{name}`: each family is a subfolder of \
                         `{shown_dir}` (and a module of the generated code)"
                    ),
                });
            }
            continue;
        }
        let family = file_name(&entry);
        let family_shared = entry.join(shared::FILE_NAME);
        let mut shared_files: Vec<shared::SharedFile> = top_shared.iter().cloned().collect();
        if family_shared.is_file() {
            shared_files.push(shared::SharedFile {
                path: format!("{shown_dir}/{family}/{}", shared::FILE_NAME),
                family: Some(family.clone()),
                source: read(&family_shared)?,
            });
        }
        for path in sorted_entries(&entry)? {
            if path.is_dir() {
                nested_scripts(dir, &path, &shown_dir, &family, &mut misplaced)?;
                continue;
            }
            if !is_lua(&path) || file_name(&path) == shared::FILE_NAME {
                continue;
            }
            let source = read(&path)?;
            files.push(ScriptFile {
                family: family.clone(),
                op: path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                path: format!("{shown_dir}/{family}/{}", file_name(&path)),
                source,
                shared: shared_files.clone(),
            });
        }
    }
    Ok((files, misplaced))
}

/// Reports every `.lua` file under `dir`, a folder inside the family folder `family` of
/// `root`: scripts are never looked for there. Symbolic links to folders are not followed.
fn nested_scripts(
    root: &Path,
    dir: &Path,
    shown_dir: &str,
    family: &str,
    misplaced: &mut Vec<Diagnostic>,
) -> Result<(), Error> {
    for path in sorted_entries(dir)? {
        let is_dir = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
        if is_dir {
            nested_scripts(root, &path, shown_dir, family, misplaced)?;
        } else if is_lua(&path) {
            let name = file_name(&path);
            let inside = path.strip_prefix(root).unwrap_or(&path);
            misplaced.push(Diagnostic {
                path: format!("{shown_dir}/{}", display_path(inside)),
                line: 1,
                col: 1,
                message: format!(
                    "a script in a folder inside the family folder `{shown_dir}/{family}`"
                ),
                hint: format!(
                    "move it to `{shown_dir}/{family}/{name}`, or to `{shown_dir}/<family>/{name}` \
                     for another family: scripts are `{shown_dir}/<family>/<op>.lua`, one \
                     folder deep"
                ),
            });
        }
    }
    Ok(())
}

fn is_lua(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "lua")
}

/// `path` relative to the package being built when it is an absolute path inside it
/// (`$CARGO_MANIFEST_DIR/sql` is shown as `sql`), so that generated code and diagnostics
/// do not depend on where the package sits; any other path as it is. Only where cargo runs
/// build scripts and tests, in the package root, so the relative path still names the file.
fn relative_to_package(path: &Path) -> PathBuf {
    if path.is_absolute()
        && let Some(root) = std::env::var_os("CARGO_MANIFEST_DIR")
        && std::env::current_dir().is_ok_and(|cwd| cwd == Path::new(&root))
        && let Ok(inside) = path.strip_prefix(&root)
        && inside.components().next().is_some()
    {
        return inside.to_path_buf();
    }
    path.to_path_buf()
}

fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let io = |source| Error::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut paths = std::fs::read_dir(dir)
        .map_err(io)?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(io)?;
    paths.sort();
    Ok(paths)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `/`-separated whatever the platform, without `.` components, so diagnostics and
/// generated code are the same everywhere.
fn display_path(path: &Path) -> String {
    let joined = path
        .components()
        .filter(|c| {
            !matches!(
                c,
                std::path::Component::RootDir | std::path::Component::CurDir
            )
        })
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/");
    let prefixed = matches!(
        path.components().next(),
        Some(std::path::Component::Prefix(_))
    );
    if path.has_root() && !prefixed {
        format!("/{joined}")
    } else if joined.is_empty() {
        ".".into()
    } else {
        joined
    }
}

fn is_identifier(name: &str) -> bool {
    model::is_snake(name) && !model::is_rust_keyword(name)
}

/// The family and op become a module and a function, so they must be Rust identifiers.
fn check_names(file: &ScriptFile) -> Vec<Diagnostic> {
    [("family folder", &file.family), ("file name", &file.op)]
        .into_iter()
        .filter(|(_, name)| !is_identifier(name))
        .map(|(what, name)| Diagnostic {
            path: file.path.clone(),
            line: 1,
            col: 1,
            message: format!("the {what} `{name}` is not a snake_case Rust identifier"),
            hint: "rename it to lower-case letters, digits and `_`, starting with a letter, and not a Rust keyword".into(),
        })
        .collect()
}
