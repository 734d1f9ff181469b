//! The generator behind `redis-patterns`: it parses the header of every Lua script in a
//! folder, checks each header against its script's body, and renders one typed Rust
//! function per script.
//!
//! `redis-patterns` runs it from its `build.rs`; an app can do the same for its own
//! scripts, as it would with `prost-build`:
//!
//! ```no_run
//! // build.rs
//! println!("cargo::rerun-if-changed=scripts");
//! let out = std::path::Path::new(&std::env::var_os("OUT_DIR").unwrap()).join("scripts.rs");
//! if let Err(err) = redis_patterns_codegen::Config::new().compile("scripts", &out) {
//!     eprintln!("{err}");
//!     std::process::exit(1);
//! }
//! ```
//!
//! and then, in the app, `mod scripts { include!(concat!(env!("OUT_DIR"), "/scripts.rs")); }`.
//! The header grammar and the checks are described in the `redis-patterns` README.
//! Every problem in every script is reported at once, as
//! `scripts/<family>/<op>.lua:LINE:COL: error: …` followed by a hint.
//!
//! Each script starts, right after its header, with input checks rendered from the header
//! ([`contract`]): the `KEYS`/`ARGV` counts and every argument, in Lua, answering
//! `BAD_ARGS` or `BAD_<NAME>`. They live in the file, so that it runs alone and what Redis
//! runs is what a reader sees; the build refuses a script whose checks differ from its
//! header, and [`Config::fix`] (or `cargo run -p redis-patterns-codegen -- fix <folder>`)
//! writes them after a header changes. The generated Rust checks the same rules before
//! any I/O.

#![warn(missing_docs)]

mod check;
pub mod contract;
pub mod diagnostic;
mod header;
mod lua;
pub mod model;
mod render;

use std::fmt;
use std::path::{Path, PathBuf};

pub use check::analyze;
pub use diagnostic::Diagnostic;
pub use render::GENERATED_HEADER;

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
    /// The generator produced code it cannot format: a bug in the generator.
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

    /// Reads every `<family>/<op>.lua` under `dir`, sorted by path. `dir` is relative to
    /// the package root (where `build.rs` runs), and appears so in diagnostics and in the
    /// generated `include_str!` paths.
    pub fn read(&self, dir: impl AsRef<Path>) -> Result<Vec<ScriptFile>, Error> {
        let dir = dir.as_ref();
        let mut files = Vec::new();
        for family in sorted_entries(dir)? {
            if !family.is_dir() {
                continue;
            }
            for path in sorted_entries(&family)? {
                if path.extension().is_none_or(|e| e != "lua") {
                    continue;
                }
                let source = std::fs::read_to_string(&path).map_err(|source| Error::Io {
                    path: path.clone(),
                    source,
                })?;
                files.push(ScriptFile {
                    family: file_name(&family),
                    op: path
                        .file_stem()
                        .map(|s| s.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                    path: display_path(&path),
                    source,
                });
            }
        }
        Ok(files)
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
        render::render(scripts, &self.runtime).map_err(Error::Render)
    }

    /// Rewrites the input checks of every script under `dir` from its header (see
    /// [`contract`]). A script whose header does not parse, or whose block cannot be found
    /// whole, is left alone and reported in [`Fixed::problems`]; the others are fixed.
    /// Fails only when a file cannot be read or written.
    pub fn fix(&self, dir: impl AsRef<Path>) -> Result<Fixed, Error> {
        let mut changed = Vec::new();
        let mut problems = Vec::new();
        for file in self.read(dir)? {
            let mut report = header::Report::new(&file.path);
            let parsed = header::parse(&file.source, &mut report);
            let header = if report.diagnostics.is_empty() {
                parsed.into_header()
            } else {
                None
            };
            let Some(header) = header else {
                problems.extend(report.diagnostics);
                continue;
            };
            let fixed = match contract::fix(&file.source, &header) {
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

    /// Reads, checks and renders the scripts under `dir` and writes the result to `out`,
    /// leaving `out` untouched when it already holds the same bytes.
    pub fn compile(&self, dir: impl AsRef<Path>, out: impl AsRef<Path>) -> Result<(), Error> {
        let files = self.read(dir)?;
        let code = self.generate(&self.analyze(&files)?)?;
        let out = out.as_ref();
        if std::fs::read_to_string(out).is_ok_and(|old| old == code) {
            return Ok(());
        }
        std::fs::write(out, code).map_err(|source| Error::Io {
            path: out.to_path_buf(),
            source,
        })
    }
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

/// `/`-separated whatever the platform, so diagnostics and generated code are the same
/// everywhere.
fn display_path(path: &Path) -> String {
    let joined = path
        .components()
        .filter(|c| !matches!(c, std::path::Component::RootDir))
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/");
    if path.has_root() {
        format!("/{joined}")
    } else {
        joined
    }
}

fn is_identifier(name: &str) -> bool {
    header::is_snake(name) && !header::is_rust_keyword(name)
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
