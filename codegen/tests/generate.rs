//! The whole pipeline on a folder: read, check every file, render.

use std::path::{Path, PathBuf};

use redis_patterns_codegen::{Config, Diagnostic, Error, Fixed, GENERATED_HEADER, contract};

fn fixtures(kind: &str) -> String {
    // Relative to the package root, as build.rs passes it; tests run there too.
    format!("tests/fixtures/{kind}")
}

#[test]
fn generated_code_is_pinned_and_deterministic() {
    let config = Config::new();
    let first = config
        .generate(
            &config
                .analyze(&config.read(fixtures("good")).unwrap())
                .unwrap(),
        )
        .unwrap();
    for _ in 0..3 {
        let again = config
            .generate(
                &config
                    .analyze(&config.read(fixtures("good")).unwrap())
                    .unwrap(),
            )
            .unwrap();
        assert_eq!(again, first, "generating twice gave different bytes");
    }
    assert!(first.starts_with(GENERATED_HEADER));
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/../snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!("codegen__good_fixtures", first));
}

/// The manifest of the good fixtures is pinned: every field of every script, as JSON.
#[test]
fn the_manifest_is_pinned_and_deterministic() {
    let config = Config::new();
    let scripts = config
        .analyze(&config.read(fixtures("good")).unwrap())
        .unwrap();
    let manifest = config.manifest(&scripts, "fixtures", "1.2.3");
    assert_eq!(config.manifest(&scripts, "fixtures", "1.2.3"), manifest);
    assert!(manifest.ends_with("}\n"));
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/../snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!("codegen__good_fixtures_manifest", manifest));
}

/// The Functions library of the good fixtures is pinned: each body registered unchanged,
/// the input checks' helpers defined once at the top.
#[test]
fn the_functions_library_is_pinned() {
    let config = Config::new();
    let scripts = config
        .analyze(&config.read(fixtures("good")).unwrap())
        .unwrap();
    let library = config.functions_library(&scripts, "1.2.3-rc.1");
    assert!(library.starts_with("#!lua name=redis_patterns_v1_2_3_rc_1_"));
    assert_eq!(library.matches("local function decimal_less").count(), 1);
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/../snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!("codegen__good_fixtures_functions", library));
}

/// Other scripts of the same version make a library of other names, so that apps built
/// from each load and call their own: the name's digest follows any change to a script,
/// even one that no header shows.
#[test]
fn a_changed_script_renames_the_library_and_its_functions() {
    let config = Config::new();
    let mut scripts = config
        .analyze(&config.read(fixtures("good")).unwrap())
        .unwrap();
    let name_line = |library: &str| library.lines().next().unwrap().to_owned();
    let before = config.functions_library(&scripts, "1.2.3");
    let before_name = name_line(&before);
    assert!(
        before_name.starts_with("#!lua name=redis_patterns_v1_2_3_"),
        "{before_name}"
    );
    let digest = before_name.rsplit('_').next().unwrap();
    assert_eq!(digest.len(), 12, "{before_name}");
    assert!(
        digest.bytes().all(|b| b.is_ascii_hexdigit()),
        "{before_name}"
    );
    assert!(before.contains(&format!(
        "function_name = 'rp_v1_2_3_{digest}__identity_lock__release'"
    )));
    scripts[0].file.source.push_str("-- a comment more\n");
    let after = config.functions_library(&scripts, "1.2.3");
    assert_ne!(name_line(&after), before_name);
    assert!(!after.contains(&format!("rp_v1_2_3_{digest}__")));
    let manifest = config.manifest(&scripts, "fixtures", "1.2.3");
    assert!(manifest.contains(&name_line(&after)["#!lua name=".len()..]));
}

#[test]
fn files_are_read_in_path_order() {
    let files = Config::new().read(fixtures("good")).unwrap();
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    let mut sorted = paths.clone();
    sorted.sort_unstable();
    assert_eq!(paths, sorted);
    assert_eq!(paths[0], "tests/fixtures/good/counter/incr_capped.lua");
    assert_eq!(
        (files[0].family.as_str(), files[0].op.as_str()),
        ("counter", "incr_capped")
    );
}

/// Every problem of every file comes back at once, in path and line order, and the
/// folder and file names must make Rust identifiers.
#[test]
fn every_problem_of_every_file_is_reported_at_once() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("codegen-bad-folder");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("Bad-Family")).unwrap();
    std::fs::create_dir_all(dir.join("lock")).unwrap();
    let good = std::fs::read_to_string(fixtures("good/identity_lock/release.lua")).unwrap();
    std::fs::write(dir.join("Bad-Family/type.lua"), &good).unwrap();
    std::fs::write(
        dir.join("lock/a.lua"),
        "--- Summary.\n--- @return nil nothing\nreturn KEYS[1]\n",
    )
    .unwrap();
    std::fs::write(dir.join("lock/b.lua"), "x = 1\n").unwrap();
    std::fs::write(dir.join("lock/notes.txt"), "not a script").unwrap();

    let config = Config::new();
    let files = config.read(&dir).unwrap();
    assert_eq!(files.len(), 3);
    let Err(Error::Scripts(problems)) = config.analyze(&files) else {
        panic!("the folder has problems");
    };
    let shown = relative(&problems, "codegen-bad-folder", false);
    let expected = [
        "Bad-Family/type.lua:1:1: the family folder `Bad-Family` is not a snake_case Rust identifier",
        "Bad-Family/type.lua:1:1: the file name `type` is not a snake_case Rust identifier",
        "lock/a.lua:2:1: the header has no `@complexity`",
        "lock/a.lua:3:8: `KEYS[1]` is used but the header declares no keys",
        "lock/b.lua:1:1: assignment to global `x`",
        "lock/b.lua:1:1: the script has no header",
    ];
    assert_eq!(shown, expected);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Diagnostics as `path:line:col: message` (and their hints), each path cut to what
/// follows the temporary folder `dir`.
fn relative(problems: &[Diagnostic], dir: &str, with_hint: bool) -> Vec<String> {
    problems
        .iter()
        .map(|d| {
            let path = d
                .path
                .rsplit_once(&format!("{dir}/"))
                .map_or(&*d.path, |(_, p)| p);
            let shown = format!("{path}:{}:{}: {}", d.line, d.col, d.message);
            if with_hint {
                format!("{shown}\n  = hint: {}", d.hint)
            } else {
                shown
            }
        })
        .collect()
}

/// The folder's diagnostics as the build prints them, with the temporary folder's path
/// shown as `<dir>`.
fn shown_problems(err: Error, dir: &Path) -> String {
    let Error::Scripts(problems) = err else {
        panic!("expected problems in the scripts, got {err}");
    };
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
        .replace(&dir.to_string_lossy().replace('\\', "/"), "<dir>")
}

/// A script directly in the folder, or in a folder inside a family folder, would be left
/// out of the build; each is an error that says where to move it. `check` (and so the
/// build) reports them with the problems of the scripts in place, all at once; `read`
/// refuses the folder; `fix` rewrites the others and reports them.
#[test]
fn scripts_outside_a_family_folder_are_errors() {
    let dir = copy_of_good_fixtures("codegen-misplaced");
    let good = std::fs::read_to_string(dir.join("identity_lock/release.lua")).unwrap();
    std::fs::write(dir.join("release.lua"), &good).unwrap();
    std::fs::write(dir.join("README.md"), "not a script").unwrap();
    std::fs::create_dir_all(dir.join("identity_lock/old/v1")).unwrap();
    std::fs::write(dir.join("identity_lock/old/release.lua"), &good).unwrap();
    std::fs::write(dir.join("identity_lock/old/v1/release.lua"), &good).unwrap();
    std::fs::write(dir.join("identity_lock/old/notes.txt"), "not a script").unwrap();
    std::fs::write(dir.join("counter/broken.lua"), "x = 1\n").unwrap();

    let expected = "\
<dir>/counter/broken.lua:1:1: error: assignment to global `x`
  = hint: declare it with `local x`; Redis rejects scripts that set globals
<dir>/counter/broken.lua:1:1: error: the script has no header
  = hint: begin the file (after any `#!lua` line) with `---` comment lines: a one-sentence summary, then the `@key`, `@arg`, `@return`, `@error`, `@clock` and `@complexity` tags
<dir>/identity_lock/old/release.lua:1:1: error: a script in a folder inside the family folder `<dir>/identity_lock`
  = hint: move it to `<dir>/identity_lock/release.lua`, or to `<dir>/<family>/release.lua` for another family: scripts are `<dir>/<family>/<op>.lua`, one folder deep
<dir>/identity_lock/old/v1/release.lua:1:1: error: a script in a folder inside the family folder `<dir>/identity_lock`
  = hint: move it to `<dir>/identity_lock/release.lua`, or to `<dir>/<family>/release.lua` for another family: scripts are `<dir>/<family>/<op>.lua`, one folder deep
<dir>/release.lua:1:1: error: a script directly in `<dir>`, outside any family folder
  = hint: move it to `<dir>/<family>/release.lua`: each family is a subfolder of `<dir>` (and a module of the generated code)";
    let config = Config::new();
    assert_eq!(
        shown_problems(config.check(&dir).unwrap_err(), &dir),
        expected
    );
    let out = dir.join("out.rs");
    assert_eq!(
        shown_problems(config.compile(&dir, &out).unwrap_err(), &dir),
        expected
    );
    assert!(!out.exists());
    let misplaced: Vec<&str> = expected.lines().skip(4).collect();
    assert_eq!(
        shown_problems(config.read(&dir).unwrap_err(), &dir),
        misplaced.join("\n")
    );

    std::fs::remove_file(dir.join("counter/broken.lua")).unwrap();
    let release = dir.join("identity_lock/release.lua");
    std::fs::write(&release, without_block(&good)).unwrap();
    let fixed = config.fix(&dir).unwrap();
    assert_eq!(
        fixed.changed,
        [release.to_string_lossy().replace('\\', "/")]
    );
    assert_eq!(
        shown_problems(Error::Scripts(fixed.problems), &dir),
        misplaced.join("\n")
    );
    assert_eq!(std::fs::read_to_string(&release).unwrap(), good);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The paths in diagnostics and in the generated code are the folder as the app names it,
/// relative to its package root: `./` and a trailing `/` are dropped, and an absolute path
/// inside the package (`$CARGO_MANIFEST_DIR/sql`) is shown relative to it, so the
/// generated code is the same wherever the package sits.
#[test]
fn paths_are_the_folder_as_the_package_names_it() {
    let config = Config::new();
    let expected = config.read(fixtures("good")).unwrap();
    assert_eq!(
        expected[0].path,
        "tests/fixtures/good/counter/incr_capped.lua"
    );
    assert_eq!(config.read("./tests/fixtures/good/").unwrap(), expected);
    let absolute = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/good");
    assert_eq!(
        std::env::var_os("CARGO_MANIFEST_DIR").as_deref(),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).as_os_str()),
        "cargo runs tests with CARGO_MANIFEST_DIR set, as it runs build scripts"
    );
    assert_eq!(config.read(&absolute).unwrap(), expected);

    let code = config
        .generate(&config.analyze(&expected).unwrap())
        .unwrap();
    assert!(code.contains(
        "#[doc = \" The scripts of `tests/fixtures/good/counter/`.\"]\n#[allow(dead_code, clippy::too_many_arguments, clippy::type_complexity)]\npub mod counter {"
    ));
    assert!(code.contains("        path: \"tests/fixtures/good/counter/incr_capped.lua\",\n"));
    assert!(code.contains("/tests/fixtures/good/counter/incr_capped.lua\")"));
    assert!(code.starts_with(&format!(
        "{GENERATED_HEADER}const _: () = ::redis_patterns::check_generated_code_format({});\n",
        redis_patterns_codegen::GENERATED_CODE_FORMAT
    )));

    // A folder outside the package keeps its absolute path, and its scripts are embedded
    // from there.
    let outside = copy_of_good_fixtures("codegen-outside");
    let files = config.read(&outside).unwrap();
    let shown = outside.to_string_lossy().replace('\\', "/");
    assert_eq!(files[0].path, format!("{shown}/counter/incr_capped.lua"));
    let code = config.generate(&config.analyze(&files).unwrap()).unwrap();
    let source = code
        .split("source: ")
        .nth(1)
        .and_then(|rest| rest.split(",\n").next())
        .unwrap();
    assert_eq!(
        source.split_whitespace().collect::<String>(),
        format!("include_str!(\"{shown}/counter/incr_capped.lua\")")
    );
    std::fs::remove_dir_all(&outside).unwrap();
}

/// A fresh copy of the good fixtures under the test's temporary folder.
fn copy_of_good_fixtures(name: &str) -> std::path::PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    for file in Config::new().read(fixtures("good")).unwrap() {
        let path = dir.join(&file.family).join(format!("{}.lua", file.op));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, file.source).unwrap();
    }
    dir
}

/// `source` without its input checks.
fn without_block(source: &str) -> String {
    let begin = source.find(contract::BEGIN).expect("a block");
    let end = source.find(contract::END).expect("a block") + contract::END.len() + 1;
    format!("{}{}", &source[..begin], &source[end..])
}

/// `fix` rewrites the blocks that are missing or stale, names the files it changed, and
/// changes nothing the second time.
#[test]
fn fix_rewrites_the_files_whose_block_is_missing() {
    let dir = copy_of_good_fixtures("codegen-fix");
    let release = dir.join("identity_lock/release.lua");
    let take = dir.join("rate_limiter/take.lua");
    let originals: Vec<String> = [&release, &take]
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    for (path, source) in [&release, &take].iter().zip(&originals) {
        std::fs::write(path, without_block(source)).unwrap();
    }
    let config = Config::new();
    let shown = |p: &Path| p.to_string_lossy().replace('\\', "/");
    assert_eq!(
        config.fix(&dir).unwrap(),
        Fixed {
            changed: vec![shown(&release), shown(&take)],
            problems: vec![],
        }
    );
    for (path, source) in [&release, &take].iter().zip(&originals) {
        assert_eq!(&std::fs::read_to_string(path).unwrap(), source);
    }
    assert_eq!(config.fix(&dir).unwrap(), Fixed::default());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A file whose header does not parse is reported and left alone; the others are still
/// fixed.
#[test]
fn fix_reports_headers_it_cannot_read_and_fixes_the_rest() {
    let dir = copy_of_good_fixtures("codegen-fix-broken");
    let release = dir.join("identity_lock/release.lua");
    let original = std::fs::read_to_string(&release).unwrap();
    std::fs::write(&release, without_block(&original)).unwrap();
    let broken = dir.join("identity_lock/broken.lua");
    let broken_source = "--- Has an old-style key.\n--- @key lock\n--- @return nil  nothing\n\
                         --- @complexity O(1)\nreturn 1\n";
    std::fs::write(&broken, broken_source).unwrap();

    let fixed = Config::new().fix(&dir).unwrap();
    assert_eq!(
        fixed.changed,
        [release.to_string_lossy().replace('\\', "/")]
    );
    let shown = relative(&fixed.problems, "codegen-fix-broken", false);
    // Sorted as diagnostics sort: by path, position, then message.
    assert_eq!(
        shown,
        [
            "identity_lock/broken.lua:2:5: `@key lock` has no doc",
            "identity_lock/broken.lua:2:5: `@key lock` has no type",
        ]
    );
    assert_eq!(std::fs::read_to_string(&broken).unwrap(), broken_source);
    assert_eq!(std::fs::read_to_string(&release).unwrap(), original);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Copies the good fixtures to `folder`, deletes the line `marker` from the block of
/// `identity_lock/release.lua` and the whole block of `rate_limiter/take.lua`, and runs
/// `fix`: it rewrites `take.lua` and leaves `release.lua` as it is. Returns the folder,
/// `release.lua`'s path and broken text, and what `fix` answered.
fn fix_with_a_marker_missing(folder: &str, marker: &str) -> (PathBuf, PathBuf, String, Fixed) {
    let dir = copy_of_good_fixtures(folder);
    let release = dir.join("identity_lock/release.lua");
    let take = dir.join("rate_limiter/take.lua");
    let release_source = std::fs::read_to_string(&release).unwrap();
    let take_source = std::fs::read_to_string(&take).unwrap();
    let broken = release_source.replacen(&format!("{marker}\n"), "", 1);
    assert_ne!(broken, release_source);
    std::fs::write(&release, &broken).unwrap();
    std::fs::write(&take, without_block(&take_source)).unwrap();

    let fixed = Config::new().fix(&dir).unwrap();
    assert_eq!(fixed.changed, [take.to_string_lossy().replace('\\', "/")]);
    assert_eq!(std::fs::read_to_string(&release).unwrap(), broken);
    assert_eq!(std::fs::read_to_string(&take).unwrap(), take_source);
    (dir, release, broken, fixed)
}

/// A block without its last marker cannot be rewritten: `fix` reports it on the file's
/// first line, leaves the file alone, and still fixes the others.
#[test]
fn fix_reports_an_unterminated_block_and_fixes_the_rest() {
    let (dir, _, _, fixed) = fix_with_a_marker_missing("codegen-fix-unterminated", contract::END);
    let shown = relative(&fixed.problems, "codegen-fix-unterminated", true);
    assert_eq!(
        shown,
        [format!(
            "identity_lock/release.lua:1:1: line 11: the input checks start here but never end; \
             delete them up to the script's own code, or end them with `{}`\n  = hint: the fixer \
             rewrites only a block it can find whole",
            contract::END
        )]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A block whose first marker is gone cannot be rewritten either: writing a block after the
/// header would leave the rest of the old one below it. `fix` reports it on the file's first
/// line, leaves the file alone, and still fixes the others.
#[test]
fn fix_reports_a_block_without_its_first_marker_and_fixes_the_rest() {
    let (dir, release, unopened, fixed) =
        fix_with_a_marker_missing("codegen-fix-unopened", contract::BEGIN);
    let shown = relative(&fixed.problems, "codegen-fix-unopened", true);
    assert_eq!(
        shown,
        [
            "identity_lock/release.lua:1:1: line 20: the input checks end here but never start; \
             delete them from the header down to this line, or start them with the first line of \
             the block\n  = hint: the fixer rewrites only a block it can find whole"
        ]
    );
    // Fixing again changes nothing, and reports the same.
    assert_eq!(
        Config::new().fix(&dir).unwrap(),
        Fixed {
            changed: vec![],
            problems: fixed.problems,
        }
    );
    assert_eq!(std::fs::read_to_string(&release).unwrap(), unopened);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `fix` with a script it cannot fix: the others are rewritten and named on stdout, the
/// problem goes to stderr, and the command fails, also when nothing was left to rewrite.
#[test]
fn the_command_fails_when_a_script_cannot_be_fixed() {
    let run = |args: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_redis-patterns-codegen"))
            .args(args)
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8(output.stdout).unwrap(),
            String::from_utf8(output.stderr).unwrap(),
        )
    };
    let dir = copy_of_good_fixtures("codegen-command-unopened");
    let release = dir.join("identity_lock/release.lua");
    let take = dir.join("rate_limiter/take.lua");
    let release_source = std::fs::read_to_string(&release).unwrap();
    let take_source = std::fs::read_to_string(&take).unwrap();
    let unopened = release_source.replacen(&format!("{}\n", contract::BEGIN), "", 1);
    std::fs::write(&release, &unopened).unwrap();
    std::fs::write(&take, without_block(&take_source)).unwrap();
    let dir_arg = dir.to_string_lossy().into_owned();
    let problem = format!(
        "{}:1:1: error: line 20: the input checks end here but never start; delete them from the \
         header down to this line, or start them with the first line of the block\n  = hint: the \
         fixer rewrites only a block it can find whole\n",
        release.to_string_lossy()
    );

    let (code, stdout, stderr) = run(&["fix", &dir_arg]);
    assert_eq!(
        (code, stdout, stderr.as_str()),
        (
            Some(1),
            format!("rewrote {}\n", take.to_string_lossy()),
            problem.as_str()
        )
    );
    assert_eq!(std::fs::read_to_string(&take).unwrap(), take_source);
    assert_eq!(std::fs::read_to_string(&release).unwrap(), unopened);
    let (code, stdout, stderr) = run(&["fix", &dir_arg]);
    assert_eq!(
        (code, stdout.as_str(), stderr.as_str()),
        (Some(1), "", problem.as_str())
    );

    // `check` reports it where the block ends.
    let (code, stdout, stderr) = run(&["check", &dir_arg]);
    assert_eq!(
        (code, stdout.as_str(), stderr),
        (
            Some(1),
            "",
            format!(
                "{}:20:1: error: the input checks end here but never start\n  = hint: delete what \
                 is left of them above this line, or start them with their first line; run \
                 `redis-patterns fix <scripts folder>` to write them from the header\n1 \
                 problem in the scripts\n",
                release.to_string_lossy()
            )
        )
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The `redis-patterns-codegen` command: `check` reports as the build does, `fix` writes the
/// blocks and says which, anything else prints the usage.
#[test]
fn the_command_checks_and_fixes_a_folder() {
    let run = |args: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_redis-patterns-codegen"))
            .args(args)
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8(output.stdout).unwrap(),
            String::from_utf8(output.stderr).unwrap(),
        )
    };
    let (code, stdout, stderr) = run(&["check", &fixtures("good")]);
    assert_eq!(
        (code, stdout.as_str(), stderr.as_str()),
        (
            Some(0),
            format!("{}: 7 scripts, no problems\n", fixtures("good")).as_str(),
            ""
        )
    );

    let dir = copy_of_good_fixtures("codegen-command");
    let release = dir.join("identity_lock/release.lua");
    let original = std::fs::read_to_string(&release).unwrap();
    let edited = original.replace("TOKEN must not be empty", "TOKEN is required");
    assert_ne!(edited, original);
    std::fs::write(&release, edited).unwrap();
    let dir_arg = dir.to_string_lossy().into_owned();
    let (code, _, stderr) = run(&["check", &dir_arg]);
    assert_eq!(code, Some(1));
    assert!(
        stderr.ends_with(
            "identity_lock/release.lua:19:1: error: the input checks differ from what the header \
             declares\n  = hint: expected `  return redis.error_reply('BAD_TOKEN must not be \
             empty')` here, found `  return redis.error_reply('BAD_TOKEN is required')`; \
             run `redis-patterns fix <scripts folder>` to write them from the header\n1 \
             problem in the scripts\n"
        ),
        "{stderr}"
    );
    let (code, stdout, stderr) = run(&["fix", &dir_arg]);
    assert_eq!(
        (code, stdout, stderr.as_str()),
        (
            Some(0),
            format!("rewrote {}\n", release.to_string_lossy()),
            ""
        )
    );
    assert_eq!(std::fs::read_to_string(&release).unwrap(), original);
    let (code, stdout, _) = run(&["fix", &dir_arg]);
    assert_eq!(
        (code, stdout.as_str()),
        (Some(0), "every script already matches its header\n")
    );
    std::fs::remove_dir_all(&dir).unwrap();

    let (code, stdout, stderr) = run(&["lint", "scripts"]);
    assert_eq!((code, stdout.as_str()), (Some(2), ""));
    assert!(stderr.starts_with("usage: redis-patterns-codegen check|fix <scripts folder>"));
    let (code, stdout, _) = run(&["--help"]);
    assert_eq!(code, Some(0));
    assert!(stdout.starts_with("usage: redis-patterns-codegen check|fix <scripts folder>"));

    // A folder that holds no scripts is said to be none, in one line.
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
    for command in ["check", "fix"] {
        let (code, stdout, stderr) = run(&[command, src]);
        assert_eq!(
            (code, stdout.as_str(), stderr),
            (
                Some(1),
                "",
                format!(
                    "{src}: not a scripts folder: no `<family>/<op>.lua` in it (a script is \
                     `{src}/<family>/<op>.lua`)\n"
                )
            )
        );
    }
}
