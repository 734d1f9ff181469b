//! What `redis-patterns-codegen` generates for each of its good test fixtures, built
//! against the real `redis-patterns` runtime, warning-free.
//!
//! The output is included twice: as a public module, where every item must be documented
//! (`missing_docs`), and as a private one that nothing calls, as in an app that uses only
//! some of its scripts, where nothing may warn as dead code. The tests check what the
//! generated statics and functions hold.

#![deny(warnings)]
#![warn(missing_docs)]

/// The typed calls of `codegen/tests/fixtures/good`, one module per family.
pub mod fixtures {
    include!(concat!(env!("OUT_DIR"), "/fixtures.rs"));
}

/// The same code, unused.
mod unused {
    include!(concat!(env!("OUT_DIR"), "/fixtures.rs"));
}

#[cfg(test)]
mod tests {
    use redis_patterns::{Count, Rule};

    use std::collections::BTreeMap;

    use crate::fixtures::{ALL, identity_lock, profile, rate_limiter, set_ops, timeline};

    /// A command's arguments, as text.
    fn args<T: 'static>(op: &redis_patterns::Op<T>) -> Vec<String> {
        let cmd = op.cmd().expect("the input is valid");
        cmd.args_iter()
            .map(|arg| match arg {
                redis::Arg::Simple(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                other => panic!("a script call has no {other:?}"),
            })
            .collect()
    }

    /// Each static holds its script as the app's folder names it: the path `compile` was
    /// given, then `<family>/<op>.lua`; the source is that file, byte for byte.
    #[test]
    fn statics_hold_the_fixtures() {
        assert_eq!(identity_lock::RELEASE.name, "identity_lock/release");
        assert_eq!(
            identity_lock::RELEASE.path,
            "../tests/fixtures/good/identity_lock/release.lua"
        );
        assert_eq!(
            identity_lock::RELEASE.source,
            include_str!("../../tests/fixtures/good/identity_lock/release.lua")
        );
        assert_eq!(identity_lock::RELEASE.sha1.len(), 40);
        assert!(identity_lock::LEASE.is_read_only());
        assert!(identity_lock::RELEASE.declares_error("BAD_TOKEN"));

        let union = &set_ops::UNION_STORE;
        let keys: Vec<_> = union.keys.iter().map(|k| (k.name, k.variadic)).collect();
        assert_eq!(keys, [("dest", false), ("sources", true)]);
        assert_eq!(
            union.keys[1].count,
            Count {
                min: 1,
                max: Some(1000)
            }
        );
        let args: Vec<_> = union.args.iter().map(|a| (a.name, a.ty, a.rule)).collect();
        assert_eq!(
            args,
            [
                (
                    "ttl",
                    "ms",
                    Rule::Range {
                        min: 1,
                        max: 10_000_000_000
                    }
                ),
                ("extra", "string", Rule::NonEmpty),
            ]
        );
        assert_eq!(timeline::POST.args[2].name, "keep");
        assert!(timeline::POST.args[2].optional);

        let names: Vec<_> = ALL.iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            [
                "counter/incr_capped",
                "identity_lock/lease",
                "identity_lock/release",
                "profile/save",
                "rate_limiter/take",
                "set_ops/union_store",
                "timeline/post",
            ]
        );
    }

    /// A generated function builds the call of its static, with the keys and arguments in
    /// the header's order; one that breaks the header's rules is refused before any I/O.
    #[test]
    fn functions_build_calls_of_their_static() {
        let release = identity_lock::release("report:lock", "secret");
        assert_eq!(release.script(), Some(&identity_lock::RELEASE));
        assert_eq!(
            args(&release),
            [
                "EVALSHA",
                identity_lock::RELEASE.sha1,
                "1",
                "report:lock",
                "secret"
            ]
        );

        let lease = identity_lock::lease("report:lock", "secret");
        assert_eq!(lease.script(), Some(&identity_lock::LEASE));
        assert_eq!(args(&lease)[0], "EVALSHA_RO");

        let union = set_ops::union_store(
            "{s}:dest",
            &["{s}:a", "{s}:b"],
            std::time::Duration::from_secs(60),
            &["x"],
        );
        assert_eq!(union.script(), Some(&set_ops::UNION_STORE));
        assert_eq!(
            args(&union)[2..],
            ["3", "{s}:dest", "{s}:a", "{s}:b", "60000", "x"]
        );

        let post = timeline::post("tl", "item", 1_000, None, 10);
        assert_eq!(args(&post)[2..], ["1", "tl", "item", "1000", "", "10"]);

        // Bytes as they are, a flag as 1/0, `None` as an empty string, JSON as its text.
        let badge = BTreeMap::from([("score", 3)]);
        let save = profile::save(
            "{u}:profile",
            "{u}:scores",
            b"\x89PNG",
            true,
            Some(4.5),
            None,
            Some(-60),
            &BTreeMap::from([("theme", "dark")]),
            &[&badge, &badge],
        );
        assert_eq!(save.script(), Some(&profile::SAVE));
        assert_eq!(
            args(&save)[2..],
            [
                "2",
                "{u}:profile",
                "{u}:scores",
                "\u{FFFD}PNG",
                "1",
                "4.5",
                "",
                "-60",
                r#"{"theme":"dark"}"#,
                r#"{"score":3}"#,
                r#"{"score":3}"#,
            ]
        );

        // An empty token breaks `non-empty`: no command is built, nothing is sent.
        let refused = identity_lock::release("report:lock", "");
        assert_eq!((refused.script(), refused.cmd().is_some()), (None, false));
    }

    /// Each family with key templates has a `keys` module: a function per key name, whose
    /// parameters are the template's placeholders, and a static the key's metadata points
    /// at. A key without a template has neither.
    #[test]
    fn key_functions_name_keys_from_their_templates() {
        assert_eq!(profile::keys::profile("7").unwrap(), "{7}:profile");
        assert_eq!(profile::keys::scores("{u:7}").unwrap(), "{u:7}:scores");
        assert_eq!(
            set_ops::keys::sources("stats", "mon").unwrap(),
            "{stats}:mon"
        );
        assert_eq!(
            rate_limiter::keys::bucket("ann", "login").unwrap(),
            "rate:{ann}:login"
        );
        assert_eq!(timeline::keys::timeline("ann").unwrap(), "timeline:ann");
        assert!(matches!(
            profile::keys::profile("a}b"),
            Err(redis_patterns::Error::InvalidInput { what: "user", .. })
        ));
        assert_eq!(profile::SAVE.keys[1].template, Some(&profile::keys::SCORES));
        assert_eq!(set_ops::keys::SOURCES.params(), ["namespace", "source"]);
        assert_eq!(identity_lock::RELEASE.keys[0].template, None);
    }
}
