//! The whole pipeline on a folder: read, check every file, render.

use std::path::Path;

use redis_patterns_codegen::{Config, Error, GENERATED_HEADER};

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
    let shown: Vec<String> = problems
        .iter()
        .map(|d| {
            let path = d
                .path
                .rsplit_once("codegen-bad-folder/")
                .map_or(&*d.path, |(_, p)| p);
            format!("{path}:{}:{}: {}", d.line, d.col, d.message)
        })
        .collect();
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
