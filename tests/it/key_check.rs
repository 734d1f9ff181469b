//! Every script refuses a call whose keys are not named as their templates say
//! (`BAD_KEYS`), and writes nothing. The refusals are checked against a model of the rules
//! the header guide states (`docs/script-header.md`, "Key names"), written here from them
//! and not from the generator: for every script, the valid call and many calls made wrong
//! one key or one argument at a time must get the model's answer.

use std::collections::{BTreeMap, BTreeSet};

use redis_patterns::{KeyPart, Script, catalog, scripts};

use crate::contract::valid_call;
use crate::harness::{self, assert_code};
use crate::key_templates::{is_free, per_item};

/// The values a call gives its placeholders: by name, and by round for a placeholder that
/// takes one per round of its variadic key's items.
type Values = BTreeMap<(String, Option<usize>), String>;

/// Redis Cluster's rule: a `{`, then the first `}` after it, with something between.
fn tagged(s: &str) -> bool {
    s.find('{')
        .is_some_and(|open| s[open + 1..].find('}').is_some_and(|len| len > 0))
}

/// The contents whose group a key's `{…}` part `r` can be, each with whether it stands as
/// it is: the text between its braces (a content with no `}`, wrapped), or `r` itself
/// when it holds a hash tag.
fn contents(r: &str) -> Vec<(&str, bool)> {
    let mut out = Vec::new();
    if let Some(inner) = r.strip_prefix('{').and_then(|r| r.strip_suffix('}'))
        && !inner.is_empty()
        && !inner.contains('}')
    {
        out.push((inner, false));
    }
    if tagged(r) {
        out.push((r, true));
    }
    out
}

/// Whether the hash tag of `content`, read as `parts` with `values`, lies inside one value
/// (the guide: a content of several values that stands as it is holds its hash tag in one
/// of them).
fn tag_in_one_value(
    content: &str,
    parts: &[KeyPart],
    values: &Values,
    scope: &dyn Fn(&str) -> Option<usize>,
) -> bool {
    let open = content.find('{').expect("a tagged content");
    let close = open + 1 + content[open + 1..].find('}').expect("a tagged content");
    let mut at = 0;
    parts.iter().any(|part| {
        let len = match part {
            KeyPart::Text(text) => text.len(),
            KeyPart::Param(param) => values[&(param.to_string(), scope(param))].len(),
            KeyPart::HashTag(_) => unreachable!("a group holds no group"),
        };
        let (start, end) = (at, at + len);
        at = end;
        matches!(part, KeyPart::Param(_)) && start <= open && close < end
    })
}

/// Where the next piece can start in `s`: anywhere after at least one byte, or only where
/// the literal text that follows starts.
fn cuts<'a>(s: &'a str, next: Option<&KeyPart>) -> impl Iterator<Item = usize> + 'a {
    let text = match next {
        Some(KeyPart::Text(text)) => Some(*text),
        _ => None,
    };
    (1..=s.len())
        .filter(move |&n| s.is_char_boundary(n))
        .filter(move |&n| text.is_none_or(|t| s[n..].starts_with(t)))
}

/// Every extension of `values` under which `s` reads as `parts`.
fn readings(
    s: &str,
    parts: &[KeyPart],
    values: &Values,
    scope: &dyn Fn(&str) -> Option<usize>,
) -> Vec<Values> {
    let Some((first, rest)) = parts.split_first() else {
        return if s.is_empty() {
            vec![values.clone()]
        } else {
            vec![]
        };
    };
    match first {
        KeyPart::Text(text) => s
            .strip_prefix(text)
            .map_or(vec![], |s| readings(s, rest, values, scope)),
        KeyPart::Param(param) => {
            let slot = (param.to_string(), scope(param));
            if let Some(value) = values.get(&slot) {
                return s
                    .strip_prefix(value.as_str())
                    .map_or(vec![], |s| readings(s, rest, values, scope));
            }
            let mut out = Vec::new();
            for n in cuts(s, rest.first()) {
                let mut more = values.clone();
                more.insert(slot.clone(), s[..n].to_string());
                out.extend(readings(&s[n..], rest, &more, scope));
            }
            out
        }
        KeyPart::HashTag(inner) => {
            let mut out = Vec::new();
            for n in cuts(s, rest.first()) {
                for (content, as_is) in contents(&s[..n]) {
                    for more in readings(content, inner, values, scope) {
                        if !as_is || tag_in_one_value(content, inner, &more, scope) {
                            out.extend(readings(&s[n..], rest, &more, scope));
                        }
                    }
                }
            }
            out
        }
    }
}

/// The placeholders of `script`'s key templates.
fn placeholders(script: &Script) -> BTreeSet<&'static str> {
    script
        .keys
        .iter()
        .filter_map(|k| k.template)
        .flat_map(|t| t.params())
        .collect()
}

/// Whether `keys` follow `script`'s templates for `args`, by the rules as the header guide
/// states them.
fn follows(script: &Script, keys: &[String], args: &[String]) -> bool {
    let mut start = Values::new();
    let named = placeholders(script);
    let mut at = 0;
    for arg in script.args {
        if arg.variadic {
            if named.contains(arg.name) {
                for (round, value) in args[at..].iter().enumerate() {
                    start.insert((arg.name.to_string(), Some(round)), value.clone());
                }
            }
        } else {
            if named.contains(arg.name) {
                start.insert((arg.name.to_string(), None), args[at].clone());
            }
            at += 1;
        }
    }
    let mut possible = BTreeSet::from([start]);
    let mut index = 0;
    for key in script.keys {
        let Some(template) = key.template else {
            index += if key.variadic { keys.len() - index } else { 1 };
            continue;
        };
        let items = if key.variadic { keys.len() - index } else { 1 };
        for item in 0..items {
            let name = &keys[index + item];
            if name.is_empty() {
                return false;
            }
            if key.variadic && is_free(template) {
                continue;
            }
            let forms = template.forms.len();
            let form = &template.forms[item % forms];
            let round = item / forms;
            let scope = |param: &str| per_item(script, param).then_some(round);
            possible = possible
                .iter()
                .flat_map(|values| readings(name, form.parts, values, &scope))
                .collect();
            if possible.is_empty() {
                return false;
            }
        }
        index += items;
    }
    true
}

/// Whether the server refused the call with `BAD_KEYS`; then it wrote nothing.
fn refused(con: &mut redis::Connection, script: &Script, keys: &[String], args: &[String]) -> bool {
    harness::cmd(con, &["FLUSHDB"]);
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match harness::eval(con, script, &keys, &args) {
        Err(err) if err.code() == Some("BAD_KEYS") => {
            assert!(
                harness::dump(con).is_empty(),
                "{}: BAD_KEYS after a write",
                script.name
            );
            true
        }
        _ => false,
    }
}

/// The keys made wrong one at a time, as callers get them wrong: empty, a byte more at
/// either end, the hash tag's braces or its value changed, a separator changed, and two
/// neighbours swapped.
fn wrong_keys(keys: &[String]) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut with = |case: String, i: usize, key: String| {
        let mut keys = keys.to_vec();
        keys[i] = key;
        out.push((case, keys));
    };
    for (i, key) in keys.iter().enumerate() {
        with(format!("KEYS[{}] empty", i + 1), i, String::new());
        with(format!("KEYS[{}] + x", i + 1), i, format!("{key}x"));
        with(format!("x + KEYS[{}]", i + 1), i, format!("x{key}"));
        if let Some(open) = key.find('{') {
            let mut unbraced = key.clone();
            unbraced.remove(open);
            with(format!("KEYS[{}] without its {{", i + 1), i, unbraced);
            let mut other = key.clone();
            other.replace_range(open + 1..open + 2, "Z");
            with(format!("KEYS[{}] of another tag", i + 1), i, other);
        }
        if let Some(colon) = key.rfind(':') {
            let mut dotted = key.clone();
            dotted.replace_range(colon..colon + 1, ".");
            with(
                format!("KEYS[{}] with a . for its last :", i + 1),
                i,
                dotted,
            );
        }
    }
    // The hash tag of every key, when it joins several values, with its first or its last
    // value emptied: `{:peter}`, `{sessions:}`.
    let tag = keys.iter().find_map(|key| {
        let open = key.find('{')?;
        let close = open + key[open..].find('}')?;
        Some(&key[open..=close])
    });
    if let Some(tag) = tag
        && let (Some(first), Some(last)) = (tag.find(':'), tag.rfind(':'))
    {
        let emptied = [
            ("first", format!("{{{}", &tag[first..])),
            ("last", format!("{}}}", &tag[..=last])),
        ];
        for (which, other) in emptied {
            out.push((
                format!("every {tag} with its {which} value empty"),
                keys.iter().map(|key| key.replace(tag, &other)).collect(),
            ));
        }
    }
    for i in 1..keys.len() {
        let mut swapped = keys.to_vec();
        swapped.swap(i - 1, i);
        out.push((format!("KEYS[{i}] and KEYS[{}] swapped", i + 1), swapped));
    }
    out
}

/// The arguments that give a key a value, changed one at a time (a number to the next
/// one, so that it stays within its rule).
fn wrong_args(script: &Script, args: &[String]) -> Vec<(String, Vec<String>)> {
    let named = placeholders(script);
    let mut out = Vec::new();
    for (i, arg) in script.args.iter().enumerate() {
        if arg.variadic || !named.contains(arg.name) {
            continue;
        }
        let mut changed = args.to_vec();
        changed[i] = match args[i].parse::<u64>() {
            // As wide as it was: a token of hex digits stays one.
            Ok(n) => format!("{:0width$}", n + 1, width = args[i].len()),
            Err(_) => format!("{}y", args[i]),
        };
        out.push((format!("ARGV[{}] ({}) changed", i + 1, arg.name), changed));
    }
    out
}

#[test]
fn every_script_refuses_keys_its_templates_do_not_name() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let mut disagreements = Vec::new();
    let mut without_refusal = Vec::new();
    let mut calls = 0;
    for script in catalog::scripts() {
        let (keys, args) = valid_call(script);
        assert!(
            follows(script, &keys, &args),
            "{}: the valid call's keys {keys:?} do not follow the model",
            script.name
        );
        assert!(
            !refused(&mut con, script, &keys, &args),
            "{}: the valid call's keys {keys:?} are refused",
            script.name
        );
        let mut refusals = 0;
        let cases = wrong_keys(&keys)
            .into_iter()
            .map(|(case, keys)| (case, keys, args.clone()))
            .chain(
                wrong_args(script, &args)
                    .into_iter()
                    .map(|(case, args)| (case, keys.clone(), args)),
            );
        for (case, keys, args) in cases {
            calls += 1;
            let expected = !follows(script, &keys, &args);
            let got = refused(&mut con, script, &keys, &args);
            refusals += usize::from(got);
            if expected != got {
                disagreements.push(format!(
                    "{}: {case}: {keys:?} {args:?}: the model {} it, the script {} it",
                    script.name,
                    if expected { "refuses" } else { "accepts" },
                    if got { "refuses" } else { "accepts" },
                ));
            }
        }
        if refusals == 0 {
            without_refusal.push(script.name);
        }
    }
    assert_eq!(disagreements, Vec::<String>::new());
    assert_eq!(
        without_refusal,
        Vec::<&str>::new(),
        "scripts that refused nothing"
    );
    assert!(calls > 1000, "{calls} calls");
}

/// `vote/cast` with the keys of subject `post-a` and the argument `post-b` added the vote
/// to `post-a`'s set and ranked `post-b` with `post-a`'s votes.
#[test]
fn a_vote_for_another_subject_than_its_keys_is_refused() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let keys = [
        "{votes}:up:post-a",
        "{votes}:down:post-a",
        "{votes}:posted",
        "{votes}:hot",
        "{votes}:best",
    ];
    assert_code(
        harness::eval(
            &mut con,
            &scripts::vote::CAST,
            &keys,
            &["post-b", "ann", "up"],
        ),
        "BAD_KEYS",
    );
    assert!(harness::dump(&mut con).is_empty());
    harness::eval(
        &mut con,
        &scripts::vote::CAST,
        &keys,
        &["post-a", "ann", "up"],
    )
    .unwrap();
}

/// `work_queue/take` with `leased` and `dead` swapped put a freshly leased job in the
/// dead-letter set.
#[test]
fn a_take_with_two_keys_swapped_is_refused() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = redis_patterns::work_queue::WorkQueue::new("q").unwrap();
    queue.add("1", "payload").run(&mut con).unwrap();
    let before = harness::dump(&mut con);
    let mut keys: Vec<&str> = queue.keys().to_vec();
    keys.swap(2, 3);
    let args = ["30000", "1", "5", "0123456789abcdef0123456789abcdef"];
    assert_code(
        harness::eval(&mut con, &scripts::work_queue::TAKE, &keys, &args),
        "BAD_KEYS",
    );
    assert_eq!(harness::dump(&mut con), before);
    let counts = queue.counts().run(&mut con).unwrap();
    assert_eq!(counts.waiting, 1);
    assert_eq!(counts.dead, 0);
}
