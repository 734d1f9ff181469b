//! Shared helpers: one source in `_shared.lua`, pasted by `fix` into each script that
//! names them, checked byte for byte, and defined once in the Functions library.

use std::path::{Path, PathBuf};

use redis_patterns_codegen::{Config, Fixed};

/// A fresh scripts folder under the test's temporary directory, holding `files`.
fn folder(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("shared-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

const FAMILY_SHARED: &str = "\
--- Helpers of the counter scripts.
-- luacheck: ignore 211

-- The count `hash` keeps for `field`, as a number.
local function count_of(hash, field)
  return tonumber(redis.call('HGET', hash, field) or '0')
end

-- Adds `by` to the count of `field`; the new count.
local function bump(hash, field, by)
  return count_of(hash, field) + redis.call('HINCRBY', hash, field, by) - count_of(hash, field)
end
";

const TOP_SHARED: &str = "\
--- Helpers of every family.
-- luacheck: ignore 211

-- `n` doubled.
local function twice(n)
  return 2 * n
end
";

/// A script that names `uses` and calls `body`.
fn script(uses: &str, body: &str) -> String {
    format!(
        "--- Adds to a count.\n\
         --- @key counts hash          the counts\n\
         --- @arg field string         the field\n\
         --- @return int               the new count\n\
         --- @error BAD_ARGS           not 1 key and 1 argument\n\
         --- @uses {uses}\n\
         --- @complexity O(1)\n\
         {body}"
    )
}

fn errors(dir: &Path) -> Vec<String> {
    match Config::new().check(dir) {
        Ok(_) => vec![],
        Err(err) => err.to_string().lines().map(str::to_owned).collect(),
    }
}

#[test]
fn fix_pastes_the_named_helpers_and_those_they_call_and_check_holds_every_copy() {
    let body = "return twice(bump(counts, field, 1))\n";
    let dir = folder(
        "paste",
        &[
            ("_shared.lua", TOP_SHARED),
            ("counter/_shared.lua", FAMILY_SHARED),
            ("counter/add.lua", &script("bump twice", body)),
        ],
    );
    let fixed = Config::new().fix(&dir).unwrap();
    assert_eq!(fixed.problems, vec![]);
    assert_eq!(fixed.changed.len(), 1);
    let path = dir.join("counter/add.lua");
    let source = std::fs::read_to_string(&path).unwrap();
    let pasted: Vec<&str> = source
        .lines()
        .skip_while(|l| !l.starts_with("-- Helpers shared with other scripts"))
        .collect();
    assert_eq!(
        pasted.join("\n"),
        format!(
            "-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in\n\
             -- _shared.lua and counter/_shared.lua of the scripts folder).\n\
             -- `n` doubled.\n\
             local function twice(n)\n  return 2 * n\nend\n\
             -- The count `hash` keeps for `field`, as a number.\n\
             local function count_of(hash, field)\n  return tonumber(redis.call('HGET', hash, field) or '0')\nend\n\
             -- Adds `by` to the count of `field`; the new count.\n\
             local function bump(hash, field, by)\n  return count_of(hash, field) + redis.call('HINCRBY', hash, field, by) - count_of(hash, field)\nend\n\
             -- End of the shared helpers.\n\
             -- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run\n\
             -- `redis-patterns fix <folder>`). A bad call changes nothing.\n\
             if #KEYS ~= 1 or #ARGV ~= 1 then\n\
             \x20 return redis.error_reply('BAD_ARGS expected 1 key and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)\n\
             end\n\
             local counts = KEYS[1]\n\
             local field = ARGV[1]\n\
             -- End of the generated input checks.\n\
             return twice(bump(counts, field, 1))"
        ),
        "the helpers right after the header, the input checks, then the script's own code"
    );
    assert_eq!(errors(&dir), Vec::<String>::new());
    assert_eq!(
        Config::new().fix(&dir).unwrap(),
        Fixed {
            changed: vec![],
            problems: vec![]
        },
        "a second fix changes nothing"
    );

    // A copy edited by hand is refused; so is a source edited after the paste.
    std::fs::write(&path, source.replace("return 2 * n", "return n + n")).unwrap();
    let found = errors(&dir);
    assert!(
        found[0].ends_with("error: the pasted shared helpers differ from those the header names, as their files hold them"),
        "{found:?}"
    );
    std::fs::write(&path, &source).unwrap();
    std::fs::write(
        dir.join("_shared.lua"),
        TOP_SHARED.replace("2 * n", "n * 2"),
    )
    .unwrap();
    assert_eq!(errors(&dir).len(), 3, "{:?}", errors(&dir));
    assert_eq!(Config::new().fix(&dir).unwrap().changed.len(), 1);
    assert_eq!(errors(&dir), Vec::<String>::new());

    // The Functions library defines each helper once: the folder's at the top, a family's
    // in a block around that family's functions, and no function body repeats them.
    let scripts = Config::new().check(&dir).unwrap();
    let library = Config::new().functions_library(&scripts, "0.1.0");
    assert_eq!(library.matches("local function twice(").count(), 1);
    assert_eq!(library.matches("local function bump(").count(), 1);
    assert!(!library.contains("Helpers shared with other scripts"));
    let block = library.find("\ndo\n").unwrap();
    assert!(library.find("local function twice(").unwrap() < block);
    assert!(library.find("local function bump(").unwrap() > block);
    assert!(library.trim_end().ends_with("end"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_name_no_file_defines_and_a_name_never_called_are_refused() {
    let body = "return twice(1) + redis.call('HLEN', counts) + #field\n";
    let dir = folder(
        "names",
        &[
            ("_shared.lua", TOP_SHARED),
            ("counter/_shared.lua", FAMILY_SHARED),
            ("counter/add.lua", &script("twice bump thrice", body)),
        ],
    );
    let fixed = Config::new().fix(&dir).unwrap();
    let shown = dir.to_string_lossy().replace('\\', "/");
    let found: Vec<String> = fixed.problems.iter().map(ToString::to_string).collect();
    assert_eq!(
        found,
        [
            format!(
                "{shown}/counter/add.lua:6:17: error: `bump` is named in `@uses` but the script never calls it\n  \
                 = hint: remove it from `@uses`: a helper that only another helper calls comes along with it"
            ),
            format!(
                "{shown}/counter/add.lua:6:22: error: no shared helper is called `thrice`\n  \
                 = hint: define it in {shown}/_shared.lua or {shown}/counter/_shared.lua, or remove it"
            ),
        ]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_shared_file_holds_only_commented_helpers_each_below_those_it_calls() {
    let bad = "\
--- Helpers.
local limit = 10

local function undocumented(n)
  return n
end

-- Calls one defined below it.
local function first(n)
  return second(n)
end

-- Defined below its caller.
local function second(n)
  return n
end
";
    let dir = folder(
        "bad-file",
        &[
            ("counter/_shared.lua", bad),
            (
                "counter/add.lua",
                &script(
                    "first",
                    "return first(#field) + redis.call('HLEN', counts)\n",
                ),
            ),
        ],
    );
    let shown = dir.to_string_lossy().replace('\\', "/");
    let found: Vec<String> = Config::new()
        .fix(&dir)
        .unwrap()
        .problems
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        found,
        [
            format!(
                "{shown}/counter/_shared.lua:2:1: error: a shared file holds only `local function`s, each with its comment\n  \
                 = hint: move other code into a helper, or into the scripts"
            ),
            format!(
                "{shown}/counter/_shared.lua:4:1: error: `undocumented` has no comment above it\n  \
                 = hint: say what the helper does, and why, in `--` lines right above it"
            ),
            format!(
                "{shown}/counter/_shared.lua:9:1: error: `first` calls `second`, which is defined below it\n  \
                 = hint: define each helper below the helpers it calls"
            ),
            format!(
                "{shown}/counter/add.lua:6:11: error: no shared helper is called `first`\n  \
                 = hint: define it in {shown}/counter/_shared.lua, or remove it"
            ),
        ]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A family's helper may call the folder's and the generator's (`shown`): they come along,
/// pasted in that order, each once. The script's own code names what it calls, the
/// generator's helpers too, and a `_shared.lua` may not define a helper of the input
/// checks' name.
#[test]
fn a_family_helper_calls_the_folders_and_the_generators() {
    let family = "\
--- Helpers of the counter scripts.
-- luacheck: ignore 211

-- `n` four times, by the folder's helper.
local function quadruple(n)
  return twice(twice(n))
end

-- A refusal that shows `s`.
local function refusal(s)
  return redis.error_reply('BAD_FIELD ' .. shown(s))
end
";
    let body = "if field == 'x' then\n  return refusal(field)\nend\n\
                return quadruple(redis.call('HLEN', counts))\n";
    let dir = folder(
        "across",
        &[
            ("_shared.lua", TOP_SHARED),
            ("counter/_shared.lua", family),
            (
                "counter/add.lua",
                &script("quadruple refusal", body).replace(
                    "--- @uses",
                    "--- @error BAD_FIELD          the field is `x`\n--- @uses",
                ),
            ),
        ],
    );
    let fixed = Config::new().fix(&dir).unwrap();
    assert_eq!(fixed.problems, vec![]);
    let path = dir.join("counter/add.lua");
    let source = std::fs::read_to_string(&path).unwrap();
    let defined: Vec<&str> = source
        .lines()
        .filter_map(|l| l.strip_prefix("local function "))
        .map(|l| l.split('(').next().unwrap_or(l))
        .collect();
    assert_eq!(defined, ["shown", "twice", "quadruple", "refusal"]);
    assert!(source.contains(
        "-- redis-patterns-codegen; _shared.lua and counter/_shared.lua of the scripts folder).\n"
    ));
    assert_eq!(errors(&dir), Vec::<String>::new());

    // The script's own call of a pasted helper it does not name is refused.
    std::fs::write(
        &path,
        source.replace(
            "return quadruple(redis.call('HLEN', counts))",
            "return twice(quadruple(redis.call('HLEN', counts)))",
        ),
    )
    .unwrap();
    let found = errors(&dir);
    assert!(
        found[0].contains(
            "error: the script calls the shared helper `twice` without naming it in `@uses`"
        ),
        "{found:?}"
    );
    assert_eq!(found.len(), 3, "one problem: {found:?}");

    // A shared helper named as one of the input checks' is refused.
    std::fs::write(
        dir.join("_shared.lua"),
        format!("{TOP_SHARED}\n-- Another.\nlocal function shown(s)\n  return s\nend\n"),
    )
    .unwrap();
    let found = errors(&dir);
    assert!(
        found
            .iter()
            .any(|e| e.ends_with("error: `shown` is the name of a helper of the input checks")),
        "{found:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
