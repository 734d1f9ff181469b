//! The keys each family's Rust API sends are the keys its scripts' headers name: every
//! `@key` template, expanded here by the rule the headers state (not by the crate's own
//! builders), with the values the API was given, gives the bytes in the command. Each
//! family runs twice: with plain values, and with values that already hold a hash tag.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use redis_patterns::{Error, KeyPart, KeyTemplate, Op, Script, catalog};

use crate::harness::{self, assert_invalid};

/// The scripts no single `Op` calls: `cache/claim` and `cache/fill` run inside
/// `get_or_compute`'s loop, and `time_series/clean` inside `clean_counters`'s; their keys
/// are the ones of `cache/hash_set`'s and `time_series/update`'s templates (the family
/// checks give a key name one template).
const NOT_ONE_OP: &[&str] = &["cache/claim", "cache/fill", "time_series/clean"];

/// `op`'s script, the keys its command names (after `EVALSHA <sha1> <count>`), and its
/// arguments.
pub(crate) fn sent<T: 'static>(op: &Op<T>) -> (&'static Script, Vec<String>, Vec<String>) {
    let script = op.script().expect("a script call");
    let cmd = op
        .cmd()
        .unwrap_or_else(|| panic!("{}: its input is valid", script.name));
    let args: Vec<String> = cmd
        .args_iter()
        .map(|arg| match arg {
            redis::Arg::Simple(bytes) => String::from_utf8(bytes.to_vec()).unwrap(),
            other => panic!("a script call has no {other:?}"),
        })
        .collect();
    let count: usize = args[2].parse().unwrap();
    (
        script,
        args[3..3 + count].to_vec(),
        args[3 + count..].to_vec(),
    )
}

/// Redis Cluster's hash tag rule: a `{`, then later a `}`, with something between.
fn has_hash_tag(s: &str) -> bool {
    s.find('{')
        .is_some_and(|open| s[open + 1..].find('}').is_some_and(|len| len > 0))
}

/// A template's form with `values` put in, as the headers say: `<param>` is the value as
/// it is, and the `{…}` group's content is wrapped in braces unless it already holds a
/// hash tag. A value missing from `values` stands as `*`, which [`matches`] takes for any
/// text.
pub(crate) fn expand(form: &str, values: &BTreeMap<&str, &str>) -> String {
    let mut out = String::new();
    let mut group: Option<String> = None;
    let mut chars = form.chars();
    while let Some(c) = chars.next() {
        let piece = match c {
            '<' => {
                let name: String = chars.by_ref().take_while(|&c| c != '>').collect();
                values.get(name.as_str()).copied().unwrap_or("*").to_owned()
            }
            '{' => {
                group = Some(String::new());
                continue;
            }
            '}' => {
                let content = group.take().expect("a group was opened");
                if has_hash_tag(&content) {
                    content
                } else {
                    format!("{{{content}}}")
                }
            }
            c => c.to_string(),
        };
        match &mut group {
            Some(inner) => inner.push_str(&piece),
            None => out.push_str(&piece),
        }
    }
    out
}

/// Whether placeholder `param` of `script` takes a value per item (per round of forms) of
/// its variadic key: the variadic key names it outside its `{…}` group, and no other key
/// and no argument but a variadic one names it. (The items of a variadic key whose
/// template is a bare `<key>` are free, and name nothing.)
pub(crate) fn per_item(script: &Script, param: &str) -> bool {
    let Some(variadic) = script.keys.last().filter(|k| k.variadic) else {
        return false;
    };
    let Some(template) = variadic.template else {
        return false;
    };
    if is_free(template) {
        return false;
    }
    let outside = template.forms.iter().any(|form| {
        form.parts
            .iter()
            .any(|part| matches!(part, KeyPart::Param(p) if *p == param))
    });
    let fixed_key = script
        .keys
        .iter()
        .filter(|k| !k.variadic)
        .any(|k| k.template.is_some_and(|t| t.params().contains(&param)));
    let fixed_arg = script.args.iter().any(|a| !a.variadic && a.name == param);
    outside && !fixed_key && !fixed_arg
}

/// A variadic key's template that is a bare placeholder: its items are free.
pub(crate) fn is_free(template: &KeyTemplate) -> bool {
    template.forms.len() == 1 && matches!(template.forms[0].parts, [KeyPart::Param(_)])
}

/// Keys for a call of `script` with `args` that follow its templates, as an app in another
/// language names them: a placeholder that an argument names takes the argument's value
/// (per item for a variadic one); another takes a value of its own, the same in every key
/// (per round of forms for one that only the variadic key names); and the variadic key
/// gets `items` items. Every key shares one cluster slot.
pub(crate) fn template_keys(script: &Script, args: &[String], items: usize) -> Vec<String> {
    // Where each argument's values start.
    let mut arg_at = BTreeMap::new();
    for (i, arg) in script.args.iter().enumerate() {
        arg_at.insert(arg.name, i);
    }
    let value = |param: &str, round: usize| -> String {
        if let Some(&at) = arg_at.get(param) {
            let arg = &script.args[at];
            return args[if arg.variadic { at + round } else { at }].clone();
        }
        if per_item(script, param) {
            // A group's value per round holds a hash tag, so that every round's keys share
            // one slot.
            let in_group = script.keys.iter().filter_map(|k| k.template).any(|t| {
                t.forms.iter().any(|f| {
                    f.parts.iter().any(|part| {
                        matches!(part, KeyPart::HashTag(inner)
                            if inner.iter().any(|p| matches!(p, KeyPart::Param(n) if *n == param)))
                    })
                })
            });
            if in_group {
                format!("{{tag}}{param}{round}")
            } else {
                format!("{param}{round}")
            }
        } else {
            param.to_string()
        }
    };
    let mut keys = Vec::new();
    for key in script.keys {
        let template = key.template.expect("every key of the crate has a template");
        let count = if key.variadic { items } else { 1 };
        for item in 0..count {
            let forms = template.forms.len();
            let form = &template.forms[item % forms];
            if key.variadic && is_free(template) {
                keys.push(format!("{{tag}}:{}:{item}", key.name));
                continue;
            }
            let values: BTreeMap<&str, String> = form
                .params
                .iter()
                .map(|p| (*p, value(p, item / forms)))
                .collect();
            let values: BTreeMap<&str, &str> =
                values.iter().map(|(k, v)| (*k, v.as_str())).collect();
            keys.push(expand(form.text, &values));
        }
    }
    keys
}

/// Whether `key` is `expected`, each `*` of which stands for any non-empty text.
pub(crate) fn matches(key: &str, expected: &str) -> bool {
    match expected.split_once('*') {
        None => key == expected,
        Some((head, tail)) => {
            let Some(rest) = key.strip_prefix(head) else {
                return false;
            };
            (1..=rest.len())
                .filter(|&n| rest.is_char_boundary(n))
                .any(|n| matches(&rest[n..], tail))
        }
    }
}

/// The checks of one run, and the scripts they reached.
#[derive(Default)]
struct Checks {
    seen: BTreeSet<&'static str>,
}

impl Checks {
    /// Asserts that `op` sends the keys its script's templates name: each fixed key for
    /// `params`; the variadic key's items for `items`, each the index of its form and the
    /// values it adds to `params` (a value left out matches any text).
    fn check<T: 'static>(
        &mut self,
        op: Op<T>,
        params: &[(&str, &str)],
        items: &[(usize, &[(&str, &str)])],
    ) {
        let (script, keys, _) = sent(&op);
        self.seen.insert(script.name);
        let values: BTreeMap<&str, &str> = params.iter().copied().collect();
        let fixed = script.keys.iter().filter(|k| !k.variadic).count();
        assert_eq!(
            keys.len(),
            fixed + items.len(),
            "{}: {keys:?} for {params:?} and {} items",
            script.name,
            items.len()
        );
        for (i, key) in keys.iter().enumerate() {
            let (param, form, values) = if i < fixed {
                (&script.keys[i], 0, values.clone())
            } else {
                let (form, own) = items[i - fixed];
                let mut values = values.clone();
                values.extend(own.iter().copied());
                (script.keys.last().unwrap(), form, values)
            };
            let template = param
                .template
                .unwrap_or_else(|| panic!("{}: `{}` has no template", script.name, param.name));
            let form_text = template.text.split('|').nth(form).unwrap();
            let expected = expand(form_text, &values);
            assert!(
                matches(key, &expected),
                "{}: `{}` is sent as {key:?}, but its template `{}` names {expected:?} for \
                 {values:?}",
                script.name,
                param.name,
                template.text
            );
        }
    }
}

/// Every key of every script under `scripts/` has a template: an app in another language
/// can always name a pattern's keys as the crate does.
#[test]
fn every_key_of_every_script_has_a_template() {
    let missing: Vec<String> = catalog::scripts()
        .iter()
        .flat_map(|s| s.keys.iter().map(move |k| (s.name, k)))
        .filter(|(_, k)| k.template.is_none())
        .map(|(script, k)| format!("{script}: {}", k.name))
        .collect();
    assert_eq!(missing, Vec::<String>::new());
}

/// The generated key functions follow the rule of `aux_key`: `{name}:suffix`, the name as
/// it is when it holds a hash tag, and an `InvalidInput` about the parameter for an empty
/// value, a `}` without a hash tag, or a hash tag across two values.
#[test]
fn key_functions_follow_the_hash_tag_rule() {
    use redis_patterns::scripts::{app_log, rate_limiter, session, work_queue};

    assert_eq!(
        work_queue::keys::waiting("emails").unwrap(),
        "{emails}:waiting"
    );
    assert_eq!(
        work_queue::keys::waiting("{tenant:7}:emails").unwrap(),
        "{tenant:7}:emails:waiting"
    );
    // An empty `{}` is no hash tag: the name is wrapped, and `{a{}` would hash by `a{`.
    assert_invalid(work_queue::keys::waiting("a{}b"), "name");
    assert_invalid(work_queue::keys::waiting("a}b"), "name");
    assert_invalid(work_queue::keys::waiting(""), "name");
    assert_eq!(
        session::keys::records("app", "{u7}").unwrap(),
        "app:{u7}:records"
    );
    assert_eq!(
        session::keys::records("app", "u7").unwrap(),
        "{app:u7}:records"
    );
    assert_invalid(session::keys::records("app", "u}7"), "uid");
    assert_invalid(session::keys::records("app", ""), "uid");
    assert_invalid(session::keys::records("", "peter"), "namespace");
    // A hash tag across two values, `{:peter}`, would hash by text neither holds.
    assert_invalid(session::keys::records("{", "peter}"), "namespace");
    assert_invalid(session::keys::records("a{b", "{c}"), "namespace");
    assert_eq!(
        session::keys::records("{app:x}", "peter").unwrap(),
        "{app:x}:peter:records"
    );
    assert_eq!(
        app_log::keys::start("checkout", "info").unwrap(),
        "common:{checkout:info}:start"
    );
    assert_eq!(
        rate_limiter::keys::counter("RateLimiter", "{u}", "login").unwrap(),
        "RateLimiter:{u}:login"
    );
    let form = &work_queue::keys::WAITING.forms[0];
    assert!(matches!(
        form.build(&[]),
        Err(Error::InvalidInput { what: "values", .. })
    ));
}

/// Plain values, then values that hold a hash tag of their own: every family's keys are
/// its templates'.
#[test]
fn the_rust_api_sends_the_keys_the_templates_name() {
    let mut seen = BTreeSet::new();
    for tagged in [false, true] {
        let mut checks = Checks::default();
        families(&mut checks, tagged);
        if seen.is_empty() {
            seen = checks.seen;
        } else {
            assert_eq!(checks.seen, seen, "both runs reach the same scripts");
        }
    }
    let all: BTreeSet<&str> = catalog::scripts().iter().map(|s| s.name).collect();
    let left: Vec<&&str> = all
        .difference(&seen)
        .filter(|name| !NOT_ONE_OP.contains(name))
        .collect();
    assert_eq!(left, Vec::<&&str>::new(), "scripts the test does not reach");
    let families: BTreeSet<&str> = all.iter().map(|n| n.split('/').next().unwrap()).collect();
    let reached: BTreeSet<&str> = seen.iter().map(|n| n.split('/').next().unwrap()).collect();
    assert_eq!(reached, families, "every family");
}

/// A value of the run: `plain`, or `tagged` (a value that already holds a hash tag).
fn pick<'a>(tagged: bool, plain: &'a str, with_tag: &'a str) -> &'a str {
    if tagged { with_tag } else { plain }
}

fn families(c: &mut Checks, tagged: bool) {
    use redis_patterns::{
        app_log, autocomplete, barrier, cache, circular_queue, counter, fair_lock, fenced_lock,
        fixed_length_queue, geo, identity_lock, ip_city, latch, leaderboard, logical_matrix,
        matrix, online_friends, pagination, rate_limiter, relation, resource_pool, row_cache,
        session, short_url, stats, tag, time_series, timeline, unique_counter, user_login, vote,
        web_session, work_queue,
    };
    let ttl = Duration::from_secs(60);

    // app_log's name is a part of its hash tag: it refuses one with braces rather than
    // send keys other than the templates'.
    if tagged {
        assert_invalid(app_log::AppLog::new("{shop}"), "name");
    }
    let log = app_log::AppLog::new("checkout").unwrap();
    let severity = app_log::Severity::Warning;
    let p = [("name", "checkout"), ("severity", severity.as_str())];
    c.check(log.log_recent("m", severity), &p, &[]);
    c.check(log.log_common("m", severity), &p, &[]);

    let subject = pick(tagged, "words", "{lang:en}:words");
    let words = autocomplete::Autocomplete::new(subject).unwrap();
    let prefixes: [(usize, &[(&str, &str)]); 3] = [
        (0, &[("prefix", "r")]),
        (0, &[("prefix", "re")]),
        (0, &[("prefix", "red")]),
    ];
    c.check(words.feed("red", 1.0), &[("subject", subject)], &prefixes);
    c.check(words.remove("red"), &[("subject", subject)], &prefixes);

    let name = pick(tagged, "page:1", "{site}:page:1");
    c.check(
        cache::HashCache::new().set(name, [("f", "v")], None),
        &[("name", name)],
        &[],
    );

    let key = pick(tagged, "queue", "{app}:queue");
    c.check(
        circular_queue::UniqueCircularQueue::new(key)
            .unwrap()
            .insert(&["a"]),
        &[("key", key)],
        &[],
    );
    c.check(
        counter::HashCounter::new(key, "f").unwrap().reset(0),
        &[("key", key)],
        &[],
    );
    c.check(
        fixed_length_queue::FixedLengthQueue::new(key, 3)
            .unwrap()
            .enqueue(&["a"]),
        &[("key", key)],
        &[],
    );
    c.check(
        fixed_length_queue::FadedQueue::new(key, 3)
            .unwrap()
            .enqueue(&["a"]),
        &[("key", key)],
        &[],
    );
    let lock = identity_lock::IdentityLock::new(key).unwrap();
    c.check(lock.release("t"), &[("key", key)], &[]);
    c.check(lock.lease("t"), &[("key", key)], &[]);
    c.check(lock.extend("t", ttl), &[("key", key)], &[]);
    let line = timeline::Timeline::new(key).unwrap();
    c.check(line.add(&[(1, "a")]), &[("key", key)], &[]);
    c.check(line.delete_by_time_range(0, 10, 10), &[("key", key)], &[]);

    let name = pick(tagged, "report", "{jobs}:report");
    c.check(
        fenced_lock::FencedLock::new(name).unwrap().acquire(ttl),
        &[("name", name)],
        &[],
    );
    let token = "0123456789abcdef0123456789abcdef";
    let rw = redis_patterns::rw_lock::RwLock::new(name).unwrap();
    c.check(rw.try_read(token, ttl), &[("name", name)], &[]);
    c.check(rw.try_write(token, ttl), &[("name", name)], &[]);
    c.check(rw.release_read(token), &[("name", name)], &[]);
    c.check(rw.release_write(token), &[("name", name)], &[]);
    c.check(rw.extend(token, ttl), &[("name", name)], &[]);
    c.check(rw.downgrade(token, ttl), &[("name", name)], &[]);
    c.check(rw.withdraw(token), &[("name", name)], &[]);
    let fair = fair_lock::FairLock::new(name).unwrap();
    c.check(fair.try_acquire(token, ttl), &[("name", name)], &[]);
    c.check(fair.release(token), &[("name", name)], &[]);
    c.check(fair.extend(token, ttl), &[("name", name)], &[]);
    c.check(fair.cancel(token), &[("name", name)], &[]);

    let filter = redis_patterns::bloom::BloomFilter::new(name, 100, 10).unwrap();
    c.check(filter.add(&["a"]), &[("filter", name)], &[]);
    c.check(filter.contains(&["a"]), &[("filter", name)], &[]);
    c.check(filter.info(0), &[("filter", name)], &[]);
    let topic = redis_patterns::reliable_topic::ReliableTopic::new(name, 100).unwrap();
    let message = redis_patterns::reliable_topic::Message {
        id: "1-0".into(),
        number: 1,
        payload: vec![],
    };
    let n = [("name", name)];
    c.check(topic.publish("p"), &n, &[]);
    c.check(
        topic.subscribe("s", ttl, redis_patterns::reliable_topic::From::Newest),
        &n,
        &[],
    );
    c.check(topic.poll("s", ttl, 10), &n, &[]);
    c.check(topic.ack("s", ttl, &message), &n, &[]);
    c.check(topic.unsubscribe("s"), &n, &[]);
    let redlock = redis_patterns::redlock::Redlock::new(name).unwrap();
    let token = "0123456789abcdef0123456789abcdef";
    c.check(redlock.acquire_on_one(token, ttl), &[("name", name)], &[]);
    c.check(redlock.raise_on_one(token, 7), &[("name", name)], &[]);

    let key = pick(tagged, "places", "{city:7}:places");
    let places = geo::Location::new(key).unwrap();
    let k = [("key", key)];
    let km = [("key", key), ("member", "ann")];
    c.check(places.pin("ann", 1.0, 2.0), &k, &[]);
    c.check(places.locate("ann"), &k, &[]);
    c.check(places.distance("ann", "bob"), &k, &[]);
    c.check(places.size(), &k, &[]);
    c.check(places.search("ann", 1.0, 10), &k, &[]);
    c.check(places.cached_random_neighbour("ann", 10), &km, &[]);
    c.check(places.purge(10), &k, &[]);

    let ns = pick(tagged, "geoip", "{geoip}:v2");
    c.check(
        ip_city::IpCities::new(ns).unwrap().find_city_by_ip(1),
        &[("namespace", ns)],
        &[],
    );

    let key = pick(tagged, "scores", "{game}:scores");
    let other = pick(tagged, "{scores}:weekly", "{game}:weekly");
    let board = leaderboard::Leaderboard::new(key).unwrap();
    let weekly = leaderboard::Leaderboard::new(other).unwrap();
    let k = [("key", key)];
    c.check(board.set_weight("ann", 1.0), &k, &[]);
    c.check(board.update_weight("ann", 1.0), &k, &[]);
    c.check(board.remove("ann"), &k, &[]);
    c.check(board.adopt_step(None, 10), &k, &[]);
    c.check(
        board.around::<String>("ann", 1, leaderboard::RankPolicy::Dense),
        &k,
        &[],
    );
    let first: &[(&str, &str)] = &[("key", key)];
    c.check(board.standing("ann"), &[], &[(0, first), (1, first)]);
    if tagged {
        // Two boards of one slot, read at one moment: board, levels, board, levels.
        let second: &[(&str, &str)] = &[("key", other)];
        c.check(
            leaderboard::Leaderboard::standings(&[&board, &weekly], "ann"),
            &[],
            &[(0, first), (1, first), (0, second), (1, second)],
        );
    }

    let id = pick(tagged, "m", "{grid}:m");
    let rows: [(usize, &[(&str, &str)]); 2] = [(0, &[("row", "0")]), (0, &[("row", "1")])];
    let i = [("id", id)];
    let bits = logical_matrix::LogicalMatrix::new(id, 2, 2).unwrap();
    c.check(bits.init(None), &i, &rows);
    c.check(bits.get_all(), &i, &rows);
    let list = matrix::ListMatrix::new(id, 2, 2).unwrap();
    c.check(list.init(None), &i, &rows);
    c.check(list.get_all(), &i, &rows);
    let fields = matrix::BitmapMatrix::new(id, 2, 2, matrix::Width::U8).unwrap();
    c.check(fields.init(None), &i, &rows);
    c.check(fields.get_all(), &i, &rows);

    let ns = pick(tagged, "chat", "{chat}:eu");
    let at: u64 = 1_700_000_000_000;
    let minute = format!("{:02}", (at / 60_000) % 60);
    let minutes = online_friends::MinuteSets::new(ns).unwrap();
    // The window's minutes, each any minute's set.
    let window: Vec<(usize, &[(&str, &str)])> = vec![(0, &[]); 10];
    c.check(
        minutes.visit_at("ann", at),
        &[("ns", ns), ("minute", &minute)],
        &[],
    );
    c.check(
        minutes.online_friends_at("ann", at),
        &[("ns", ns), ("user", "ann")],
        &window,
    );
    let seen = online_friends::LastSeen::new(ns).unwrap();
    c.check(seen.visit_at("ann", at), &[("ns", ns)], &[]);
    c.check(
        seen.online_friends_at("ann", at),
        &[("ns", ns), ("user", "ann")],
        &[],
    );

    let key = pick(tagged, "news", "{site}:news");
    let paging = pagination::Paging::new(key).unwrap();
    c.check(paging.add(&["a"]), &[("key", key)], &[]);
    c.check(paging.first_page::<String>(10), &[("key", key)], &[]);

    use rate_limiter::Limiter;
    let prefix = pick(tagged, "limits", "{limits}");
    let p = [("prefix", prefix), ("uid", "ann"), ("action", "login")];
    let fixed = rate_limiter::RateLimiter::new("login", 5, ttl)
        .unwrap()
        .with_prefix(prefix)
        .unwrap();
    c.check(fixed.is_permitted("ann"), &p, &[]);
    c.check(fixed.duration("ann"), &p, &[]);
    let sliding = rate_limiter::SlidingWindowLimiter::new("login", 5, ttl)
        .unwrap()
        .with_prefix(prefix)
        .unwrap();
    c.check(sliding.attempt("ann", 1), &p, &[]);
    let gcra = rate_limiter::GcraLimiter::new("login", 5, ttl)
        .unwrap()
        .with_prefix(prefix)
        .unwrap();
    c.check(gcra.attempt("ann", 1), &p, &[]);

    let ns = pick(tagged, "social", "{social}:v1");
    let relations = relation::Relations::new(ns).unwrap();
    let p = [("namespace", ns), ("user", "ann"), ("target", "bob")];
    c.check(relations.follow("ann", "bob"), &p, &[]);
    c.check(relations.unfollow("ann", "bob"), &p, &[]);
    c.check(
        relations.is_following_each_other("ann", "bob"),
        &[("namespace", ns), ("user", "ann"), ("other", "bob")],
        &[],
    );

    let name = pick(tagged, "printers", "{office}:printers");
    let pool = resource_pool::ResourcePool::new(name).unwrap();
    let lease = resource_pool::Lease {
        resource: "r".into(),
        token: "t".into(),
    };
    let n = [("name", name)];
    c.check(pool.associate("r"), &n, &[]);
    c.check(pool.disassociate("r"), &n, &[]);
    c.check(pool.acquire(), &n, &[]);
    c.check(pool.acquire_with_lease(ttl), &n, &[]);
    c.check(pool.release("r"), &n, &[]);
    c.check(pool.release_lease(&lease), &n, &[]);
    c.check(pool.extend_lease(&lease, ttl), &n, &[]);
    c.check(pool.reclaim(10), &n, &[]);
    c.check(pool.total_count(), &n, &[]);
    c.check(pool.has("r"), &n, &[]);

    let name = pick(tagged, "import", "{jobs}:import");
    let countdown = latch::Latch::new(name).unwrap();
    let n = [("name", name)];
    c.check(countdown.arm(2, Some(ttl)), &n, &[]);
    c.check(countdown.count_down(Some("a")), &n, &[]);
    c.check(countdown.state(), &n, &[]);
    c.check(countdown.try_wait(None), &n, &[]);
    let meeting = barrier::Barrier::new(name, 2).unwrap();
    let party = meeting.party();
    c.check(meeting.try_arrive(&party, ttl), &n, &[]);
    c.check(meeting.leave(&party), &n, &[]);
    c.check(meeting.reset(), &n, &[]);
    c.check(meeting.state(), &n, &[]);

    let ns = pick(tagged, "inventory", "{shop}:inventory");
    let rows = row_cache::RowCache::new(ns).unwrap();
    let p = [("namespace", ns), ("row", "42")];
    c.check(rows.schedule_row_cache("42", ttl), &p, &[]);
    c.check(rows.claim(10), &p, &[]);
    c.check(rows.store("42", "v"), &p, &[]);

    // The user's id may hold the hash tag too.
    let ns = pick(tagged, "app", "{app}:sessions");
    let store = session::SessionStore::new(ns).unwrap();
    for uid in ["u7", "{u7}"] {
        let p = [("namespace", ns), ("uid", uid)];
        c.check(store.create(uid), &p, &[]);
        c.check(store.validate(uid, "t"), &p, &[]);
        c.check(store.set(uid, "t", &[("a", "1")]), &p, &[]);
        c.check(store.unset(uid, "t", &["a"]), &p, &[]);
        c.check(store.list(uid), &p, &[]);
        c.check(store.end(uid, "id"), &p, &[]);
    }

    let name = pick(tagged, "links", "{links}:eu");
    let shorty = short_url::UrlShorty::with_name(name).unwrap();
    let n = [("name", name)];
    c.check(shorty.shorten("https://example.com"), &n, &[]);
    c.check(shorty.shorten_cached("https://example.com"), &n, &[]);
    c.check(
        shorty.claim("home", "https://example.com", short_url::LinkOptions::new()),
        &n,
        &[],
    );
    c.check(shorty.restore("1"), &n, &[]);
    c.check(shorty.visit("1"), &n, &[]);
    c.check(shorty.purge(10), &n, &[]);

    // Statistics put their prefix, context and type in one hash tag: each refuses braces.
    let stats = stats::Stats::new().with_prefix("stats").unwrap();
    if tagged {
        assert_invalid(stats.keys("{home}", "ms"), "context");
    }
    let key = pick(tagged, "slowest", "{stats}:slowest");
    let stats = stats.with_slowest(key, 10).unwrap();
    c.check(
        stats.update_stats("home", "ms", 1.0, 1_700_000_000_000),
        &[("prefix", "stats"), ("context", "home"), ("kind", "ms")],
        &[],
    );
    c.check(stats.record_slowest("home", 1.0), &[("key", key)], &[]);

    let ns = pick(tagged, "posts", "{blog}:posts");
    let tags = tag::Tags::new(ns).unwrap();
    let p = [("namespace", ns), ("target", "post:1")];
    // The tags go sorted by byte, each once.
    let sorted: [(usize, &[(&str, &str)]); 2] = [(0, &[("tag", "a")]), (0, &[("tag", "b,c")])];
    c.check(tags.add("post:1", &["b,c", "a"]), &p, &sorted);
    c.check(tags.remove("post:1", &["b,c", "a"]), &p, &sorted);
    // The cache's name: the tags sorted by byte, `%` and `,` escaped, joined by `,`.
    c.check(
        tags.lookup_cached(&["b,c", "a", "a"], ttl),
        &[("namespace", ns), ("tags", "a,b%2Cc")],
        &sorted,
    );

    let ns = pick(tagged, "hits", "{web}:hits");
    let series = time_series::TimeSeries::new(ns)
        .unwrap()
        .with_precisions(&[1, 60])
        .unwrap();
    c.check(
        series.update_counter("home", 1, 1_700_000_000_000),
        &[("namespace", ns), ("name", "home")],
        &[(0, &[("precision", "1")]), (0, &[("precision", "60")])],
    );

    let (x, y) = if tagged {
        ("{visits}:mon", "{visits}:tue")
    } else {
        ("visits", "{visits}:tue")
    };
    let (mon, tue) = (
        unique_counter::UniqueCounter::new(x).unwrap(),
        unique_counter::UniqueCounter::new(y).unwrap(),
    );
    c.check(
        unique_counter::UniqueCounter::union(&[&mon, &tue]),
        &[("key", x)],
        &[(0, &[("key", x)]), (0, &[("key", y)])],
    );
    c.check(
        unique_counter::UniqueCounter::diff(&mon, &tue),
        &[("x", x), ("y", y)],
        &[],
    );

    let name = pick(tagged, "users", "{users}:eu");
    c.check(
        user_login::UserLogin::new(name)
            .unwrap()
            .login::<String>("ann"),
        &[("name", name)],
        &[],
    );

    let ns = pick(tagged, "news", "{news}:v1");
    let votes = vote::Votes::new(ns).unwrap();
    let p = [("namespace", ns), ("subject", "post:1")];
    c.check(votes.up("post:1", "ann"), &p, &[]);
    c.check(votes.forget("post:1"), &p, &[]);
    c.check(votes.post("post:1", Some(1)), &p, &[]);
    c.check(votes.tally("post:1", "ann"), &p, &[]);

    let ns = pick(tagged, "shop", "{shop}:web");
    let web = web_session::WebSessions::new(ns).unwrap();
    let p = [("namespace", ns), ("token", "t1")];
    c.check(web.update_token("t1", "ann", Some("item")), &p, &[]);
    c.check(web.rescale_viewed(10), &p, &[]);
    let oldest = [("t1".to_owned(), 5), ("t2".to_owned(), 6)];
    // With carts or without: each token's items viewed, then its cart.
    for carts in [false, true] {
        c.check(
            web.end_sessions(&oldest, carts),
            &[("namespace", ns)],
            &[
                (0, &[("token", "t1")]),
                (1, &[("token", "t1")]),
                (0, &[("token", "t2")]),
                (1, &[("token", "t2")]),
            ],
        );
    }

    let name = pick(tagged, "emails", "{tenant:7}:emails");
    let queue = work_queue::WorkQueue::new(name).unwrap();
    let job = work_queue::Job {
        id: "1".into(),
        token: "1".into(),
        delivery: 1,
        deadline_ms: 0,
        group: None,
        payload: b"p".to_vec(),
        trace_context: None,
    };
    let n = [("name", name)];
    c.check(queue.add("1", "p"), &n, &[]);
    let window =
        work_queue::Deduplication::new("user:7", std::time::Duration::from_secs(1)).unwrap();
    c.check(
        queue.add_deduplicated("1", "p", work_queue::JobOptions::new(), &window),
        &[("name", name), ("dedup", "user:7")],
        &[],
    );
    c.check(queue.take(1), &n, &[]);
    c.check(queue.ack(&job), &n, &[]);
    c.check(queue.extend(&job), &n, &[]);
    c.check(queue.log(&job, "line"), &n, &[]);
    c.check(queue.logs("1", 0, 10), &n, &[]);
    c.check(queue.nack(&job, "r"), &n, &[]);
    c.check(queue.requeue("1"), &n, &[]);
    c.check(queue.remove("1"), &n, &[]);
    c.check(queue.job("1"), &n, &[]);
    c.check(queue.list(work_queue::State::Dead, 0, 10), &n, &[]);
    c.check(queue.counts(), &n, &[]);
    c.check(queue.pause(), &n, &[]);
    c.check(queue.resume(), &n, &[]);
    c.check(queue.is_paused(), &n, &[]);
    c.check(queue.configure(&work_queue::Settings::new()), &n, &[]);
    c.check(queue.settings(), &n, &[]);
    c.check(queue.metrics(10), &n, &[]);
    c.check(
        queue.rate_limit_group(&job, std::time::Duration::from_secs(1)),
        &n,
        &[],
    );
    c.check(queue.retry_dead(10), &n, &[]);
    c.check(queue.clean(work_queue::State::Waiting, 10), &n, &[]);
    c.check(queue.delete(10, false), &n, &[]);
    c.check(queue.set_priority("1", 3), &n, &[]);
    c.check(queue.set_delay("1", std::time::Duration::ZERO), &n, &[]);
    c.check(queue.progress(&job, "50%"), &n, &[]);
    c.check(queue.result("1"), &n, &[]);
    c.check(queue.events_after("0-0", 10), &n, &[]);
    let children = [work_queue::Child::new("2", "c").unwrap()];
    c.check(
        queue.add_flow("1", "p", work_queue::JobOptions::new(), &children),
        &n,
        &[],
    );
    let every = work_queue::Schedule::every(std::time::Duration::from_secs(1));
    c.check(queue.set_schedule("s", &every), &n, &[]);
    c.check(queue.schedule("s"), &n, &[]);
    c.check(queue.schedules(0, 10), &n, &[]);
    c.check(queue.remove_schedule("s"), &n, &[]);
    c.check(queue.due_schedules(10), &n, &[]);
    let due = work_queue::DueSchedule {
        name: "s".into(),
        run_ms: 0,
        revision: 1,
        timing: work_queue::Timing::Every {
            every: std::time::Duration::from_secs(1),
            offset: std::time::Duration::ZERO,
        },
        missed: work_queue::Missed::Skip,
    };
    c.check(queue.fire(&due, 0), &n, &[]);

    let name = pick(tagged, "exports", "{tenant:7}:exports");
    let sem = redis_patterns::semaphore::Semaphore::new(name).unwrap();
    let token = "0".repeat(32);
    let n = [("name", name)];
    let fifo = redis_patterns::semaphore::Order::Fifo;
    c.check(sem.try_acquire(&token, 1, ttl, fifo), &n, &[]);
    c.check(sem.release(&token), &n, &[]);
    c.check(sem.extend(&token, ttl), &n, &[]);
    c.check(sem.set_capacity(1), &n, &[]);
    c.check(sem.state(), &n, &[]);

    let key = pick(tagged, "invoice:42", "{shop}:invoice:42");
    let invoice = redis_patterns::fenced_write::FencedResource::new(key).unwrap();
    let k = [("key", key)];
    c.check(invoice.set(1, "v", None), &k, &[]);
    c.check(invoice.hset(1, &[("f", "v")]), &k, &[]);
    c.check(invoice.delete(1), &k, &[]);
    c.check(invoice.fence(1), &k, &[]);
}

/// What the templates name is where the data is: a queue named with a hash tag of its
/// own, filled through the Rust API, holds its jobs under the keys the header's template
/// names, on a real server.
#[test]
fn a_queue_with_a_hash_tag_keeps_its_jobs_where_the_template_says() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let name = "{tenant:7}:emails";
    let queue = redis_patterns::work_queue::WorkQueue::new(name).unwrap();
    queue.add("1", "hello").run(&mut con).unwrap();
    let add = catalog::find("work_queue/add").unwrap();
    let values = BTreeMap::from([("name", name)]);
    let waiting = expand(add.keys[0].template.unwrap().text, &values);
    let jobs = expand(add.keys[3].template.unwrap().text, &values);
    assert_eq!(
        (waiting.as_str(), jobs.as_str()),
        ("{tenant:7}:emails:waiting", "{tenant:7}:emails:jobs")
    );
    let ids: Vec<String> = redis::cmd("ZRANGE")
        .arg(&waiting)
        .arg(0)
        .arg(-1)
        .query(&mut con)
        .unwrap();
    assert_eq!(ids, ["1"]);
    let exists: bool = redis::cmd("EXISTS").arg(&jobs).query(&mut con).unwrap();
    assert!(exists);
}
