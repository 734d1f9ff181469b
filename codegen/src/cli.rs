//! The `check` and `fix` commands, as both `redis-patterns-codegen` and the
//! `redis-patterns` command run them: what they print, and their exit codes (0 done,
//! 1 problems found).

use std::path::Path;
use std::process::ExitCode;

use crate::Config;

/// Checks the scripts under `dir` against their headers: prints how many passed, or every
/// problem of every file to stderr.
pub fn check(dir: &Path) -> ExitCode {
    if let Some(why) = not_a_scripts_folder(dir) {
        eprintln!("{why}");
        return ExitCode::FAILURE;
    }
    match Config::new().check(dir) {
        Ok(scripts) => {
            println!("{}: {} scripts, no problems", dir.display(), scripts.len());
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("{err}");
            ExitCode::FAILURE
        }
    }
}

/// Rewrites the input checks and the pasted shared helpers of every script under `dir`
/// from its header and the shared files; prints what changed, and what it could not fix.
pub fn fix(dir: &Path) -> ExitCode {
    if let Some(why) = not_a_scripts_folder(dir) {
        eprintln!("{why}");
        return ExitCode::FAILURE;
    }
    match Config::new().fix(dir) {
        Ok(fixed) => {
            for path in &fixed.changed {
                println!("rewrote {path}");
            }
            for problem in &fixed.problems {
                eprintln!("{problem}");
            }
            if !fixed.problems.is_empty() {
                return ExitCode::FAILURE;
            }
            if fixed.changed.is_empty() {
                println!("every script already matches its header");
            }
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("{err}");
            ExitCode::FAILURE
        }
    }
}

/// A client package the generator writes the generated part of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    /// `clients/python`: `redis-patterns-codegen python`.
    Python,
    /// `clients/typescript`: `redis-patterns-codegen typescript`.
    TypeScript,
}

impl Client {
    /// The subcommand that writes it.
    pub fn command(self) -> &'static str {
        match self {
            Client::Python => "python",
            Client::TypeScript => "typescript",
        }
    }

    fn render(
        self,
        scripts: &[crate::model::Script],
        package: &str,
        version: &str,
    ) -> Result<Vec<crate::render::client::File>, String> {
        match self {
            Client::Python => crate::render::python::render(scripts, package, version),
            Client::TypeScript => crate::render::typescript::render(scripts, package, version),
        }
    }

    fn stale(
        self,
        root: &Path,
        files: &[crate::render::client::File],
    ) -> std::io::Result<Vec<String>> {
        match self {
            Client::Python => crate::render::python::stale(root, files),
            Client::TypeScript => crate::render::typescript::stale(root, files),
        }
    }

    fn write(
        self,
        root: &Path,
        files: &[crate::render::client::File],
    ) -> std::io::Result<Vec<String>> {
        match self {
            Client::Python => crate::render::python::write(root, files),
            Client::TypeScript => crate::render::typescript::write(root, files),
        }
    }
}

/// Writes the generated files of the Python package in `dist` (its folder, holding
/// `pyproject.toml`) from the scripts under `dir`, for crate `package` at `version`; with
/// `check`, writes nothing and fails naming every file that is not current.
pub fn python(dir: &Path, dist: &Path, package: &str, version: &str, check: bool) -> ExitCode {
    client(Client::Python, dir, dist, package, version, check)
}

/// Writes the generated files of the package of `lang` in `dist` (its folder) from the
/// scripts under `dir`, for crate `package` at `version`; with `check`, writes nothing and
/// fails naming every file that is not current.
pub fn client(
    lang: Client,
    dir: &Path,
    dist: &Path,
    package: &str,
    version: &str,
    check: bool,
) -> ExitCode {
    if let Some(why) = not_a_scripts_folder(dir) {
        eprintln!("{why}");
        return ExitCode::FAILURE;
    }
    let files = match Config::new().check(dir).and_then(|scripts| {
        lang.render(&scripts, package, version)
            .map_err(crate::Error::Render)
    }) {
        Ok(files) => files,
        Err(err) => {
            eprintln!("{err}");
            return ExitCode::FAILURE;
        }
    };
    let shown = dist.display();
    let result = if check {
        lang.stale(dist, &files)
    } else {
        lang.write(dist, &files)
    };
    match result {
        Ok(paths) if check && !paths.is_empty() => {
            for path in &paths {
                eprintln!(
                    "{shown}/{path}: not what the generator makes of {}",
                    dir.display()
                );
            }
            eprintln!(
                "{} stale file(s); regenerate with `redis-patterns-codegen {} {} {shown} \
                 --package {package} --version {version}`",
                paths.len(),
                lang.command(),
                dir.display()
            );
            ExitCode::FAILURE
        }
        Ok(paths) => {
            for path in &paths {
                println!("wrote {shown}/{path}");
            }
            println!("{shown}: {} generated files, current", files.len());
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("{shown}: {err}");
            ExitCode::FAILURE
        }
    }
}

/// One line saying why `dir` is no scripts folder, if it is not one: missing, not a
/// folder, or holding no `<family>/<op>.lua` at all (the problems of each stray `.lua`
/// file in it would say nothing more useful).
fn not_a_scripts_folder(dir: &Path) -> Option<String> {
    let shown = dir.display();
    if !dir.exists() {
        return Some(format!("{shown}: no such folder"));
    }
    if !dir.is_dir() {
        return Some(format!(
            "{shown}: not a folder; give the folder that holds `<family>/<op>.lua`"
        ));
    }
    match crate::scan(dir) {
        Ok((files, _)) if files.is_empty() => Some(format!(
            "{shown}: not a scripts folder: no `<family>/<op>.lua` in it (a script is \
             `{shown}/<family>/<op>.lua`)"
        )),
        Ok(_) => None,
        Err(err) => Some(err.to_string()),
    }
}
