//! The key check: from a script's key templates, Lua that refuses a call whose keys are
//! not named as the templates say, before anything is written.
//!
//! A template's literal text must stand in the key, and a value the keys share must be the
//! same in each: the `{…}` group (the pattern instance: every key of a call takes the same
//! one), and any placeholder that two keys name, or that a key names and an argument of
//! the same name gives (`vote/cast`'s `<subject>`). A value no other key or argument
//! names is free, but never empty. The rules of scope, for a script with a variadic key:
//!
//! - A placeholder is one value for the whole call, except one that the variadic key's
//!   template names outside the group and no other key or argument names: that one takes a
//!   value per item (`<tag>` of `{<namespace>}:tag:<tag>`), or per round of the items of a
//!   key of several forms, which take the forms in turn (`<key>|{<key>}:levels`: a board,
//!   then its levels). A variadic argument of the same name gives the value of each round
//!   (`@arg tag string...`, one per key), and then the call must pass one value per round.
//! - The items of a variadic key whose template is a bare placeholder (`<key>`) are free.
//!
//! A key is read in one pass, each value as short as it can be; a group's value holds its
//! hash tag whole, and a group of several values that holds a hash tag holds it inside one
//! of them. Only where two values of one key are both unknown (no earlier key or
//! argument gave one) can that reading differ from the one the caller meant, and then
//! only for a value that holds the template's next literal text.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::model::{ArgType, BAD_ARGS, BAD_KEYS, Header, Key, KeyForm, KeyPart};
use crate::render::lines::{Lines, Part, lua_text};

/// A Lua pattern that a key name holding a cluster hash tag matches: a `{` (the first),
/// then at least one byte up to the first `}`.
const TAGGED: &str = "'^[^{]*{[^}]+}'";

/// What a value in a key name stands for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Slot {
    /// The `{…}` group as it stands in the key: `{emails}`, or a value that holds a hash tag
    /// of its own as it is.
    Group,
    /// The group's content as a value of its own: `<key>` beside `{<key>}:levels`.
    Content,
    /// A placeholder outside the group.
    Param(String),
}

/// A piece of a form, as the check reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Slot(Slot),
}

/// Whether a value is one for the whole call or one per round of a variadic key's items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    Call,
    Round,
}

/// The script's `{…}` group.
#[derive(Debug, Clone)]
struct Group {
    /// The placeholder, when the group is one placeholder alone (`{<name>}`).
    param: Option<String>,
    /// The content as the templates write it (`<namespace>:<uid>`).
    content: String,
    /// The content's texts around its values, for `key_split`, when it is not one
    /// placeholder alone.
    texts: Option<Vec<String>>,
    /// The placeholders of the content.
    params: Vec<String>,
}

/// The variadic key, when it has a template.
#[derive(Debug, Clone)]
struct Variadic {
    /// Its first index in `KEYS` (1-based).
    first: usize,
    name: String,
    /// Its forms, as the check reads them, with their text.
    forms: Vec<(String, Vec<Piece>)>,
    /// A bare placeholder (`<key>`): the items are free.
    free: bool,
    /// The fewest items it takes.
    min: u32,
}

/// A variadic argument that gives a value per round.
#[derive(Debug, Clone)]
struct PerRound {
    /// Its first index in `ARGV` (1-based).
    first: usize,
    name: String,
}

/// How the keys of a script are checked.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    group: Option<Group>,
    /// The fixed keys with a template: index in `KEYS` (1-based), name, form text, pieces.
    fixed: Vec<(usize, String, String, Vec<Piece>)>,
    variadic: Option<Variadic>,
    scopes: BTreeMap<Slot, Scope>,
    /// The argument that gives a slot its value: its index in `ARGV` (1-based), its name,
    /// and whether its local holds the text as it came.
    fixed_args: BTreeMap<Slot, (usize, String, bool)>,
    per_round: BTreeMap<Slot, PerRound>,
}

/// A problem with a script's templates, for the `@key` or `@arg` it names.
pub(crate) struct Problem {
    pub at: Tag,
    pub message: String,
    pub hint: String,
}

/// An `@key` or `@arg` line, by its index (0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tag {
    Key(usize),
    Arg(usize),
}

/// The group of `keys`' templates, if any: check_script already made sure there is one.
fn group_of(keys: &[Key]) -> Option<Group> {
    let inner = keys
        .iter()
        .filter_map(|k| k.template.as_ref())
        .flat_map(|t| &t.forms)
        .find_map(|form| {
            form.parts.iter().find_map(|part| match part {
                KeyPart::HashTag(inner) => Some(inner.clone()),
                _ => None,
            })
        })?;
    let content = crate::model::spell(&inner);
    let params: Vec<String> = inner
        .iter()
        .filter_map(|p| match p {
            KeyPart::Param(name) => Some(name.clone()),
            _ => None,
        })
        .collect();
    let param = match inner.as_slice() {
        [KeyPart::Param(name)] => Some(name.clone()),
        _ => None,
    };
    let texts = param.is_none().then(|| texts_of(&inner));
    Some(Group {
        param,
        content,
        texts,
        params,
    })
}

/// The literal texts around the values of `parts`, as `key_split` takes them: one more
/// than the values, empty where two values touch or a value starts or ends the parts.
fn texts_of(parts: &[KeyPart]) -> Vec<String> {
    let mut texts = vec![String::new()];
    for part in parts {
        match part {
            KeyPart::Text(text) => texts.last_mut().expect("never empty").push_str(text),
            _ => texts.push(String::new()),
        }
    }
    texts
}

/// How the check reads `form`.
fn pieces_of(form: &KeyForm, group: Option<&Group>) -> Vec<Piece> {
    if let Some(group) = group
        && form.hash_tag().is_none()
        && form.text == group.content
    {
        return vec![Piece::Slot(Slot::Content)];
    }
    form.parts
        .iter()
        .map(|part| match part {
            KeyPart::Text(text) => Piece::Text(text.clone()),
            KeyPart::Param(name) if group.and_then(|g| g.param.as_ref()) == Some(name) => {
                Piece::Slot(Slot::Content)
            }
            KeyPart::Param(name) => Piece::Slot(Slot::Param(name.clone())),
            KeyPart::HashTag(_) => Piece::Slot(Slot::Group),
        })
        .collect()
}

fn slots(pieces: &[Piece]) -> impl Iterator<Item = &Slot> {
    pieces.iter().filter_map(|p| match p {
        Piece::Slot(slot) => Some(slot),
        Piece::Text(_) => None,
    })
}

/// The slots that share one value's scope: the group and its content go together.
fn same_family(a: &Slot, b: &Slot) -> bool {
    a == b
        || matches!(
            (a, b),
            (Slot::Group, Slot::Content) | (Slot::Content, Slot::Group)
        )
}

/// How `header`'s keys are checked: `Ok(None)` when no key has a template.
pub(crate) fn analyze(header: &Header) -> Result<Option<Plan>, Vec<Problem>> {
    if header.keys.iter().all(|k| k.template.is_none()) {
        return Ok(None);
    }
    let mut problems = Vec::new();
    let group = group_of(&header.keys);
    let mut fixed = Vec::new();
    let mut variadic = None;
    for (i, key) in header.keys.iter().enumerate() {
        let Some(template) = &key.template else {
            continue;
        };
        let forms: Vec<(String, Vec<Piece>)> = template
            .forms
            .iter()
            .map(|f| (f.text.clone(), pieces_of(f, group.as_ref())))
            .collect();
        if let Some(group) = group.as_ref().filter(|g| g.param.is_none()) {
            for (text, pieces) in &forms {
                for slot in slots(pieces) {
                    if let Slot::Param(p) = slot
                        && group.params.contains(p)
                    {
                        problems.push(Problem {
                            at: Tag::Key(i),
                            message: format!(
                                "`<{p}>` stands outside the hash tag `{{{}}}` in `{text}`",
                                group.content
                            ),
                            hint: "a value of a hash tag of several values stands in that hash \
                                   tag only: give it another name outside it"
                                .into(),
                        });
                    }
                }
            }
        }
        if key.variadic {
            let free = forms.len() == 1
                && matches!(
                    forms[0].1.as_slice(),
                    [Piece::Slot(Slot::Content | Slot::Param(_))]
                );
            variadic = Some(Variadic {
                first: i + 1,
                name: key.name.clone(),
                forms,
                free,
                min: key.count.min,
            });
        } else {
            let (text, pieces) = forms.into_iter().next().expect("one form");
            fixed.push((i + 1, key.name.clone(), text, pieces));
        }
    }
    // Every slot the keys name, and its scope.
    let mut all: Vec<Slot> = Vec::new();
    let named = fixed.iter().flat_map(|(_, _, _, p)| slots(p)).chain(
        variadic
            .iter()
            .filter(|v| !v.free)
            .flat_map(|v| v.forms.iter().flat_map(|(_, p)| slots(p))),
    );
    for slot in named {
        if !all.contains(slot) {
            all.push(slot.clone());
        }
    }
    // An argument named as the group's one placeholder gives the group's content.
    if let Some(param) = group.as_ref().and_then(|g| g.param.as_deref())
        && all.contains(&Slot::Group)
        && !all.contains(&Slot::Content)
        && header.args.iter().any(|a| a.name == param)
    {
        all.push(Slot::Content);
    }
    let arg_slot = |name: &str| -> Option<Slot> {
        if group.as_ref().and_then(|g| g.param.as_deref()) == Some(name) {
            return all.contains(&Slot::Content).then_some(Slot::Content);
        }
        let slot = Slot::Param(name.to_string());
        all.contains(&slot).then_some(slot)
    };
    let fixed_arg = |slot: &Slot| {
        header
            .args
            .iter()
            .any(|a| !a.variadic && arg_slot(&a.name).is_some_and(|s| same_family(&s, slot)))
    };
    let mut scopes = BTreeMap::new();
    for slot in &all {
        let in_fixed = fixed
            .iter()
            .any(|(_, _, _, p)| slots(p).any(|s| same_family(s, slot)))
            || fixed_arg(slot);
        let outside_variadic = variadic.iter().filter(|v| !v.free).any(|v| {
            v.forms
                .iter()
                .any(|(_, p)| slots(p).any(|s| same_family(s, slot) && !matches!(s, Slot::Group)))
        });
        let scope = if outside_variadic && !in_fixed {
            Scope::Round
        } else {
            Scope::Call
        };
        scopes.insert(slot.clone(), scope);
    }
    let mut fixed_args = BTreeMap::new();
    let mut per_round = BTreeMap::new();
    for (i, arg) in header.args.iter().enumerate() {
        if let Some(group) = group.as_ref().filter(|g| g.param.is_none())
            && group.params.contains(&arg.name)
        {
            problems.push(Problem {
                at: Tag::Arg(i),
                message: format!(
                    "the argument `{}` is named as a value of the hash tag `{{{}}}`",
                    arg.name, group.content
                ),
                hint: "a hash tag of several values is checked whole: rename the argument, or \
                       the placeholder"
                    .into(),
            });
            continue;
        }
        let Some(slot) = arg_slot(&arg.name) else {
            continue;
        };
        let scope = scopes[&slot];
        match (arg.variadic, scope) {
            (false, _) => {
                let text = matches!(arg.ty, ArgType::String | ArgType::Bytes | ArgType::Json)
                    && !arg.optional;
                fixed_args.insert(slot, (i + 1, arg.name.clone(), text));
            }
            (true, Scope::Round) => {
                let forms = variadic.as_ref().map_or(1, |v| v.forms.len());
                if forms > 1 {
                    problems.push(Problem {
                        at: Tag::Arg(i),
                        message: format!(
                            "the variadic argument `{}` gives a value per item of a key of \
                             several forms",
                            arg.name
                        ),
                        hint: "a variadic argument may name a placeholder of a variadic key of \
                               one form only; rename it"
                            .into(),
                    });
                    continue;
                }
                per_round.insert(
                    slot,
                    PerRound {
                        first: i + 1,
                        name: arg.name.clone(),
                    },
                );
            }
            (true, Scope::Call) => problems.push(Problem {
                at: Tag::Arg(i),
                message: format!(
                    "the variadic argument `{}` is named as a value of the whole call",
                    arg.name
                ),
                hint: "a variadic argument gives a value per item of the variadic key: name it \
                       as a placeholder that only the variadic key names, or rename it"
                    .into(),
            }),
        }
    }
    // A value of the whole call that the variadic key names first must be in its first
    // form, which the check reads before the others.
    if let Some(v) = variadic.as_ref().filter(|v| !v.free) {
        let before: BTreeSet<&Slot> = fixed.iter().flat_map(|(_, _, _, p)| slots(p)).collect();
        for (text, pieces) in v.forms.iter().skip(1) {
            for slot in slots(pieces) {
                let first_form = slots(&v.forms[0].1).any(|s| same_family(s, slot));
                if scopes[slot] == Scope::Call
                    && !before.iter().any(|s| same_family(s, slot))
                    && !fixed_args.contains_key(slot)
                    && !first_form
                {
                    problems.push(Problem {
                        at: Tag::Key(v.first - 1),
                        message: format!(
                            "`{text}` names a value of the whole call that no key before it, and \
                             not the first form, names"
                        ),
                        hint: "put the values of the whole call in the first form too".into(),
                    });
                }
            }
        }
    }
    let plan = Plan {
        group,
        fixed,
        variadic,
        scopes,
        fixed_args,
        per_round,
    };
    let taken = locals(&plan);
    let names = (header
        .keys
        .iter()
        .enumerate()
        .map(|(i, k)| (Tag::Key(i), &k.name)))
    .chain(
        header
            .args
            .iter()
            .enumerate()
            .map(|(i, a)| (Tag::Arg(i), &a.name)),
    );
    for (at, name) in names {
        if taken.contains(name) {
            problems.push(Problem {
                at,
                message: format!("`{name}` is the name of a local of the generated key check"),
                hint: "rename it: the key check reads the keys' values into locals named \
                       `<placeholder>_of_keys`, `<placeholder>_of_item` and `<key>_parts`"
                    .into(),
            });
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Some(plan))
}

/// The local that holds `slot`'s value, for a value of the whole call (`_of_keys`) or of
/// a round (`_of_item`).
fn local(plan: &Plan, slot: &Slot, suffix: &str) -> String {
    match slot {
        Slot::Group => format!("tag{suffix}"),
        Slot::Content => match plan.group.as_ref().and_then(|g| g.param.as_ref()) {
            Some(param) => format!("{param}{suffix}"),
            None => format!("content{suffix}"),
        },
        Slot::Param(param) => format!("{param}{suffix}"),
    }
}

/// The names of the locals a check of `plan` may bind: no key or argument may take one.
fn locals(plan: &Plan) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for slot in plan.scopes.keys().chain([&Slot::Group, &Slot::Content]) {
        for suffix in ["_of_keys", "_of_item"] {
            names.push(local(plan, slot, suffix));
        }
    }
    for (_, name, _, _) in &plan.fixed {
        names.push(format!("{name}_parts"));
    }
    if let Some(v) = &plan.variadic {
        names.push(format!("{}_parts", v.name));
    }
    names
}

/// A value the check knows at some point: the Lua expression that gives it, and where it
/// comes from, as the error message says it (`as in waiting`, `= ARGV[1]`).
#[derive(Debug, Clone)]
struct Known {
    expr: String,
    from: String,
}

/// The check of one key against one form.
#[derive(Clone, Copy)]
struct Step<'a> {
    /// The key, as a Lua expression (`waiting`, `KEYS[2]`, `KEYS[i]`).
    key: &'a str,
    /// The key's name in the header.
    name: &'a str,
    /// The form's text.
    text: &'a str,
    /// The key's index in `KEYS`; `None` for an item of the loop (`i`).
    index: Option<usize>,
    pieces: &'a [Piece],
    indent: &'a str,
    /// `_of_keys` or `_of_item`: what the locals of the values it reads end with.
    suffix: &'a str,
}

/// How a value was read from a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Read {
    /// The key is the value.
    Whole,
    /// By `key_cut`, into a local that is nil when the key is not of the form.
    Cut,
    /// By `key_split`, as an item of its result, which is nil when the key is not of the
    /// form; a group read so holds a hash tag.
    Split,
}

/// Renders the key check of `plan` into `out`.
pub(crate) fn render(plan: &Plan, out: &mut Lines) {
    let mut emitter = Emitter {
        plan,
        out,
        pending: Vec::new(),
    };
    emitter.all();
    emitter.flush();
}

struct Emitter<'p, 'o> {
    plan: &'p Plan,
    out: &'o mut Lines,
    /// Checks of keys held back, to be written as a run when they make one.
    pending: Vec<Simple>,
}

/// The check of a fixed key that must be a known value (`prefix`) then a text (`tail`),
/// held back: keys in a row that differ only in their text are checked in one condition.
struct Simple {
    index: usize,
    key: String,
    /// `key ~= <prefix> .. '<tail>'`.
    cond: String,
    prefix: String,
    tail: String,
    /// The form's text before `tail`.
    common: String,
    text: String,
    with: String,
}

impl Emitter<'_, '_> {
    fn all(&mut self) {
        let plan = self.plan;
        self.out
            .line("-- The keys, as their templates name them: a value two of them share is the same in both.");
        if let Some(v) = &plan.variadic {
            for arg in plan.per_round.values() {
                self.out.line(&format!(
                    "if #KEYS - {} ~= #ARGV - {} then",
                    v.first, arg.first
                ));
                self.out.error(
                    "  ",
                    &format!(
                        "{} expected one {} per key of {}, got ",
                        BAD_ARGS, arg.name, v.name
                    ),
                    Some(&format!(
                        "(#KEYS - {}) .. ' and ' .. (#ARGV - {})",
                        v.first - 1,
                        arg.first - 1
                    )),
                );
                self.out.line("end");
            }
        }
        let mut known: BTreeMap<Slot, Known> = BTreeMap::new();
        for (slot, (index, name, text)) in &plan.fixed_args {
            // A text argument's local holds it as it came; another type's is converted.
            let expr = if *text {
                name.clone()
            } else {
                format!("ARGV[{index}]")
            };
            known.insert(
                slot.clone(),
                Known {
                    expr,
                    from: format!("= ARGV[{index}]"),
                },
            );
        }
        let mut remaining: Vec<&(usize, String, String, Vec<Piece>)> = plan.fixed.iter().collect();
        while !remaining.is_empty() {
            // The key with the fewest values still unknown goes first, so that each value
            // is read where little else is unknown beside it.
            let pick = (0..remaining.len())
                .min_by_key(|&i| (unknown(&remaining[i].3, &known).len(), i))
                .expect("not empty");
            let (index, name, text, pieces) = remaining.remove(pick);
            let mut later: BTreeSet<Slot> = remaining
                .iter()
                .flat_map(|(_, _, _, p)| slots(p).cloned())
                .collect();
            if let Some(v) = plan.variadic.as_ref().filter(|v| !v.free) {
                later.extend(
                    v.forms
                        .iter()
                        .flat_map(|(_, p)| slots(p))
                        .filter(|s| plan.scopes[*s] == Scope::Call)
                        .cloned(),
                );
            }
            let step = Step {
                key: name,
                name,
                text,
                index: Some(*index),
                pieces,
                indent: "",
                suffix: "_of_keys",
            };
            self.step(step, &mut known, &later, &BTreeSet::new());
        }
        if let Some(v) = &plan.variadic {
            self.variadic(v, known);
        }
    }

    /// The check of every item of the variadic key.
    fn variadic(&mut self, v: &Variadic, mut known: BTreeMap<Slot, Known>) {
        self.flush();
        let plan = self.plan;
        let first = v.first;
        if v.free {
            self.out.line(&format!("for i = {first}, #KEYS do"));
            self.out.line("  if KEYS[i] == '' then");
            self.error("    ", &v.forms[0].0, "", None, "KEYS[i]");
            self.out.line("  end");
            self.out.line("end");
            return;
        }
        let is_round = |s: &Slot| plan.scopes[s] == Scope::Round;
        let per_round = |known: &mut BTreeMap<Slot, Known>, index: &dyn Fn(usize) -> String| {
            for (slot, arg) in &plan.per_round {
                known.insert(
                    slot.clone(),
                    Known {
                        expr: format!("ARGV[{}]", index(arg.first)),
                        from: format!("from the {} arguments", arg.name),
                    },
                );
            }
        };
        // The values of the whole call that only the variadic key names: read from its
        // first item, against which the loop then checks every item.
        let (text0, form0) = &v.forms[0];
        let call_unknown: Vec<Slot> = unknown(form0, &known)
            .into_iter()
            .filter(|s| !is_round(s))
            .collect();
        if !call_unknown.is_empty() {
            let later: BTreeSet<Slot> = v
                .forms
                .iter()
                .flat_map(|(_, p)| slots(p))
                .filter(|s| !is_round(s))
                .cloned()
                .collect();
            let mut first_known = known.clone();
            per_round(&mut first_known, &|arg| arg.to_string());
            let key = format!("KEYS[{first}]");
            let step = Step {
                key: &key,
                name: &v.name,
                text: text0,
                index: Some(first),
                pieces: form0,
                indent: "",
                suffix: "_of_keys",
            };
            if v.min == 0 {
                let declared: BTreeSet<Slot> = call_unknown.iter().cloned().collect();
                let names: Vec<String> = declared
                    .iter()
                    .map(|s| local(plan, s, "_of_keys"))
                    .collect();
                self.out.line(&format!("local {}", names.join(", ")));
                self.out.line(&format!("if #KEYS >= {first} then"));
                self.step(
                    Step {
                        indent: "  ",
                        ..step
                    },
                    &mut first_known,
                    &later,
                    &declared,
                );
                self.out.line("end");
            } else {
                self.step(step, &mut first_known, &later, &BTreeSet::new());
            }
            for slot in call_unknown {
                if let Some(value) = first_known.get(&slot) {
                    known.insert(slot, value.clone());
                }
            }
        }
        let n = v.forms.len();
        per_round(&mut known, &|arg| match arg.cmp(&first) {
            std::cmp::Ordering::Equal => "i".to_string(),
            std::cmp::Ordering::Greater => format!("i + {}", arg - first),
            std::cmp::Ordering::Less => format!("i - {}", first - arg),
        });
        // The values of a round that a later form of it reads: declared before the loop.
        let mut declared = BTreeSet::new();
        for (j, (_, pieces)) in v.forms.iter().enumerate() {
            let later: Vec<&Slot> = v.forms[j + 1..]
                .iter()
                .flat_map(|(_, p)| slots(p))
                .collect();
            for slot in slots(pieces).filter(|s| is_round(s) && !known.contains_key(*s)) {
                if later.contains(&slot) {
                    declared.insert(slot.clone());
                }
                // A group made from its content, or checked against it, later in the round.
                if later.iter().any(|l| same_family(l, slot) && *l != slot) {
                    declared.insert(Slot::Group);
                }
            }
        }
        if !declared.is_empty() {
            let names: Vec<String> = declared
                .iter()
                .map(|s| local(plan, s, "_of_item"))
                .collect();
            self.out.line(&format!("local {}", names.join(", ")));
        }
        self.out.line(&format!("for i = {first}, #KEYS do"));
        for (j, (text, pieces)) in v.forms.iter().enumerate() {
            let indent = if n == 1 {
                "  "
            } else {
                if j == 0 {
                    self.out
                        .line(&format!("  if (i - {first}) % {n} == 0 then"));
                } else if j + 1 < n {
                    self.out
                        .line(&format!("  elseif (i - {first}) % {n} == {j} then"));
                } else {
                    // The last form: every other round's item is checked above.
                    self.out.line("  else");
                }
                "    "
            };
            let later: BTreeSet<Slot> = v.forms[j + 1..]
                .iter()
                .flat_map(|(_, p)| slots(p))
                .filter(|s| is_round(s))
                .cloned()
                .collect();
            let step = Step {
                key: "KEYS[i]",
                name: &v.name,
                text,
                index: None,
                pieces,
                indent,
                suffix: "_of_item",
            };
            self.step(step, &mut known, &later, &declared);
        }
        if n > 1 {
            self.out.line("  end");
        }
        self.out.line("end");
    }

    /// How the message names `slot`.
    fn what(&self, slot: &Slot) -> String {
        match slot {
            Slot::Group | Slot::Content => match self.plan.group.as_ref() {
                Some(Group {
                    param: Some(param), ..
                }) => format!("<{param}>"),
                _ => "the hash tag".to_string(),
            },
            Slot::Param(param) => format!("<{param}>"),
        }
    }

    /// The check of one key against one form: what it reads of the key, then one `if` that
    /// refuses the call when the key is not of the form, then the values it read that
    /// later keys need.
    fn step(
        &mut self,
        s: Step,
        known: &mut BTreeMap<Slot, Known>,
        later: &BTreeSet<Slot>,
        declared: &BTreeSet<Slot>,
    ) {
        let plan = self.plan;
        let mut with: Vec<String> = Vec::new();
        for slot in distinct(s.pieces) {
            let from = known
                .iter()
                .find(|(k, _)| same_family(k, &slot))
                .map(|(_, v)| v.from.clone());
            if let Some(from) = from {
                let words = format!("{} {from}", self.what(&slot));
                if !with.contains(&words) {
                    with.push(words);
                }
            }
        }
        // `local x = …`, or `x = …` for a local declared before the loop.
        let bind = |slot: &Slot, expr: &str| -> String {
            let name = local(plan, slot, s.suffix);
            if declared.contains(slot) {
                format!("{name} = {expr}")
            } else {
                format!("local {name} = {expr}")
            }
        };
        let mut before: Vec<String> = Vec::new();
        let mut conds: Vec<String> = Vec::new();
        let mut after: Vec<String> = Vec::new();
        // The group, from its content read by an earlier key.
        if s.pieces.contains(&Piece::Slot(Slot::Group))
            && !known.contains_key(&Slot::Group)
            && let Some(content) = known.get(&Slot::Content).cloned()
        {
            let name = local(plan, &Slot::Group, s.suffix);
            before.push(bind(&Slot::Group, &format!("key_group({})", content.expr)));
            conds.push(format!("not {name}"));
            known.insert(
                Slot::Group,
                Known {
                    expr: name,
                    from: content.from,
                },
            );
        }
        let unknowns = unknown(s.pieces, known);
        let repeated = unknowns
            .iter()
            .any(|u| slots(s.pieces).filter(|slot| *slot == u).count() > 1);
        // Each value read: its slot, the expression that gives it (nil when the key is not
        // of the form, but for `Read::Whole`), and how it was read.
        let mut read: Vec<(Slot, String, Read)> = Vec::new();
        let needs = |slot: &Slot| {
            matches!(slot, Slot::Group | Slot::Content) || later.iter().any(|l| l == slot)
        };
        if unknowns.is_empty() {
            conds.push(format!("{} ~= {}", s.key, concat(s.pieces, known)));
        } else if unknowns.len() == 1 && !repeated {
            let x = &unknowns[0];
            let at = s
                .pieces
                .iter()
                .position(|p| *p == Piece::Slot(x.clone()))
                .expect("an unknown value is one of the pieces");
            let head = concat(&s.pieces[..at], known);
            let tail = concat(&s.pieces[at + 1..], known);
            if head == "''" && tail == "''" {
                conds.push(format!("{} == ''", s.key));
                read.push((x.clone(), s.key.to_string(), Read::Whole));
            } else {
                // Between literal texts a Lua pattern reads the value, in one call.
                let literal = |pieces: &[Piece]| pieces.iter().all(|p| matches!(p, Piece::Text(_)));
                let cut = if literal(&s.pieces[..at]) && literal(&s.pieces[at + 1..]) {
                    let (head, tail) = (text_of(&s.pieces[..at]), text_of(&s.pieces[at + 1..]));
                    if needs(x) {
                        format!(
                            "string.match({}, {})",
                            s.key,
                            lua_text(&format!("^{}(.+){}$", escape(&head), escape(&tail)))
                        )
                    } else {
                        format!(
                            "string.find({}, {})",
                            s.key,
                            lua_text(&format!("^{}.+{}$", escape(&head), escape(&tail)))
                        )
                    }
                } else {
                    format!("key_cut({}, {head}, {tail})", s.key)
                };
                if needs(x) {
                    before.push(bind(x, &cut));
                    let name = local(plan, x, s.suffix);
                    conds.push(format!("not {name}"));
                    read.push((x.clone(), name, Read::Cut));
                } else {
                    conds.push(format!("not {cut}"));
                }
            }
        } else if !repeated
            && !unknowns.iter().any(&needs)
            && s.pieces.iter().all(|p| match p {
                Piece::Text(_) => true,
                Piece::Slot(slot) => unknowns.contains(slot),
            })
        {
            // Free values between literal texts: one Lua pattern, nothing read.
            let mut pattern = String::from("^");
            for piece in s.pieces {
                match piece {
                    Piece::Text(text) => pattern.push_str(&escape(text)),
                    Piece::Slot(_) => pattern.push_str(".+"),
                }
            }
            pattern.push('$');
            conds.push(format!(
                "not string.find({}, {})",
                s.key,
                lua_text(&pattern)
            ));
        } else {
            // Several values unknown: the key is read in one pass.
            let parts = format!("{}_parts", s.name);
            let mut texts: Vec<Vec<Piece>> = vec![Vec::new()];
            let mut values: Vec<Slot> = Vec::new();
            for piece in s.pieces {
                match piece {
                    Piece::Slot(slot) if unknowns.contains(slot) => {
                        values.push(slot.clone());
                        texts.push(Vec::new());
                    }
                    other => texts.last_mut().expect("never empty").push(other.clone()),
                }
            }
            let texts: Vec<String> = texts.iter().map(|t| concat(t, known)).collect();
            let group_first = values.first() == Some(&Slot::Group);
            before.push(format!(
                "local {parts} = key_split({}, {{ {} }}, {group_first})",
                s.key,
                texts.join(", ")
            ));
            conds.push(format!("not {parts}"));
            for (i, slot) in values.iter().enumerate() {
                if let Some(first) = values[..i].iter().position(|v| v == slot) {
                    conds.push(format!("{parts}[{}] ~= {parts}[{}]", first + 1, i + 1));
                } else if needs(slot) {
                    read.push((slot.clone(), format!("{parts}[{}]", i + 1), Read::Split));
                }
            }
        }
        // What a value just read must be besides: a hash tag group holds a hash tag, and
        // is made of the values of its content; a group and its content agree.
        for (slot, expr, how) in read {
            let from = format!("as in {}", s.name);
            match slot {
                Slot::Group => {
                    if how != Read::Split {
                        conds.push(format!("not string.find({expr}, {TAGGED})"));
                    }
                    if let Some(texts) = plan.group.as_ref().and_then(|g| g.texts.as_ref()) {
                        conds.push(format!("not key_group_fits({expr}, {})", lua_list(texts)));
                    }
                    if let Some(content) = known.get(&Slot::Content) {
                        conds.push(format!("key_group({}) ~= {expr}", content.expr));
                    }
                }
                Slot::Content => {
                    if let Some(texts) = plan.group.as_ref().and_then(|g| g.texts.as_ref()) {
                        conds.push(format!("not key_content_fits({expr}, {})", lua_list(texts)));
                    }
                    if let Some(group) = known.get(&Slot::Group) {
                        conds.push(format!("key_group({expr}) ~= {}", group.expr));
                    } else if later.contains(&Slot::Group) {
                        // The group later keys take, made now: a value no group can be
                        // made of is this key's fault.
                        let guarded = match how {
                            Read::Whole => format!("key_group({expr})"),
                            Read::Cut => format!("{expr} and key_group({expr})"),
                            Read::Split => {
                                let parts = format!("{}_parts", s.name);
                                format!("{parts} and key_group({expr})")
                            }
                        };
                        before.push(bind(&Slot::Group, &guarded));
                        let name = local(plan, &Slot::Group, s.suffix);
                        conds.push(format!("not {name}"));
                        known.insert(
                            Slot::Group,
                            Known {
                                expr: name,
                                from: from.clone(),
                            },
                        );
                    }
                }
                Slot::Param(_) => {}
            }
            // A value later keys read, where they can read it: a key in a loop, or an item
            // of a split, is bound to a local after the check.
            let stable = how == Read::Cut || (how == Read::Whole && s.index.is_some());
            let expr = if later.contains(&slot) && !stable {
                after.push(bind(&slot, &expr));
                local(plan, &slot, s.suffix)
            } else {
                expr
            };
            known.insert(slot, Known { expr, from });
        }
        // A split whose values nothing reads is a test alone.
        let split_prefix = format!("local {}_parts = ", s.name);
        let parts_read = format!("{}_parts[", s.name);
        if let Some(at) = before.iter().position(|b| b.starts_with(&split_prefix))
            && !conds.iter().chain(&after).any(|c| c.contains(&parts_read))
        {
            let call = before.remove(at)[split_prefix.len()..].to_string();
            let test = format!("not {}_parts", s.name);
            for cond in conds.iter_mut().filter(|c| **c == test) {
                *cond = format!("not {call}");
            }
        }
        let with = if with.is_empty() {
            String::new()
        } else {
            format!(" with {}", with.join(" and "))
        };
        // A key that must equal what is known, then a text: it may join a run of such keys.
        if let (Some(index), [.., Piece::Text(tail)], [cond], true, true, "") = (
            s.index,
            s.pieces,
            conds.as_slice(),
            before.is_empty(),
            after.is_empty(),
            s.indent,
        ) && unknowns.is_empty()
            && s.pieces.len() > 1
            && let Some(common) = s.text.strip_suffix(tail.as_str())
        {
            self.pending.push(Simple {
                index,
                key: s.key.to_string(),
                cond: cond.clone(),
                prefix: concat(&s.pieces[..s.pieces.len() - 1], known),
                tail: tail.clone(),
                common: common.to_string(),
                text: s.text.to_string(),
                with,
            });
            return;
        }
        self.flush();
        for line in &before {
            self.out.line(&format!("{}{line}", s.indent));
        }
        self.out.condition(s.indent, &conds, " or ");
        let inner = format!("{}  ", s.indent);
        self.error(&inner, s.text, &with, s.index, s.key);
        self.out.line(&format!("{}end", s.indent));
        for line in after {
            self.out.line(&format!("{}{line}", s.indent));
        }
    }

    /// `return redis.error_reply('BAD_KEYS …')` for key `key` (`KEYS[index]`, or
    /// `KEYS[i]`), which is not `text` `with` the values it shares.
    fn error(&mut self, indent: &str, text: &str, with: &str, index: Option<usize>, key: &str) {
        let shown = format!("shown({key})");
        let rest = format!("] must be {text}{with}, got ");
        match index {
            Some(index) => {
                let message = format!("{BAD_KEYS} KEYS[{index}{rest}");
                self.out.error(indent, &message, Some(&shown));
            }
            None => self.out.error_parts(
                indent,
                &[
                    Part::Text(&format!("{BAD_KEYS} KEYS[")),
                    Part::Code("i"),
                    Part::Text(&rest),
                    Part::Code(&shown),
                ],
            ),
        }
    }

    /// Writes the checks of the keys held back as [`Simple`]: three or more in a row that
    /// differ only in their last text are checked in one condition (see [`Self::fold`]);
    /// the others one by one.
    fn flush(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        let mut rest = pending.as_slice();
        while let Some(first) = rest.first() {
            let run = 1 + rest[1..]
                .iter()
                .zip(rest)
                .take_while(|(next, prev)| {
                    next.index == prev.index + 1
                        && (&next.prefix, &next.common, &next.with)
                            == (&first.prefix, &first.common, &first.with)
                })
                .count();
            if run >= 3 {
                self.fold(&rest[..run]);
            } else {
                for one in &rest[..run] {
                    self.out.condition("", std::slice::from_ref(&one.cond), "");
                    self.error("  ", &one.text, &one.with, Some(one.index), &one.key);
                    self.out.line("end");
                }
            }
            rest = &rest[run..];
        }
    }

    /// The keys of `run`, in a row, each the same value then its text: one condition over
    /// them all, and only when it fails, one loop over the texts to name the first key that
    /// is wrong (a table and a loop cost a call that passes more than the comparisons).
    fn fold(&mut self, run: &[Simple]) {
        let first = &run[0];
        let at = match first.index - 1 {
            0 => "i".to_string(),
            offset => format!("i + {offset}"),
        };
        let conds: Vec<String> = run.iter().map(|one| one.cond.clone()).collect();
        self.out.condition("", &conds, " or ");
        let tails: Vec<String> = run.iter().map(|one| lua_text(&one.tail)).collect();
        self.out
            .list("  for i, each in ipairs({ ", &tails, " }) do");
        let key = format!("KEYS[{at}]");
        self.out
            .condition("    ", &[format!("{key} ~= {} .. each", first.prefix)], "");
        self.out.error_parts(
            "      ",
            &[
                Part::Text(&format!("{BAD_KEYS} KEYS[")),
                Part::Code(&at),
                Part::Text(&format!("] must be {}", first.common)),
                Part::Code("each"),
                Part::Text(&format!("{}, got ", first.with)),
                Part::Code(&format!("shown({key})")),
            ],
        );
        self.out.line("    end");
        self.out.line("  end");
        self.out.line("end");
    }
}

/// The distinct slots of `pieces`, in order.
fn distinct(pieces: &[Piece]) -> Vec<Slot> {
    let mut out: Vec<Slot> = Vec::new();
    for slot in slots(pieces) {
        if !out.contains(slot) {
            out.push(slot.clone());
        }
    }
    out
}

/// The slots of `pieces` not yet known, in order; the group counts as known when its
/// content is, as it is made from it.
fn unknown(pieces: &[Piece], known: &BTreeMap<Slot, Known>) -> Vec<Slot> {
    distinct(pieces)
        .into_iter()
        .filter(|s| {
            let made = *s == Slot::Group && known.contains_key(&Slot::Content);
            !known.contains_key(s) && !made
        })
        .collect()
}

/// `pieces` as one Lua expression: texts quoted, known values by their expressions.
fn concat(pieces: &[Piece], known: &BTreeMap<Slot, Known>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut text = String::new();
    for piece in pieces {
        match piece {
            Piece::Text(t) => text.push_str(t),
            Piece::Slot(slot) => {
                if !text.is_empty() {
                    parts.push(lua_text(&std::mem::take(&mut text)));
                }
                parts.push(known[slot].expr.clone());
            }
        }
    }
    if !text.is_empty() {
        parts.push(lua_text(&text));
    }
    if parts.is_empty() {
        "''".to_string()
    } else {
        parts.join(" .. ")
    }
}

/// The text of `pieces`, all literal.
fn text_of(pieces: &[Piece]) -> String {
    pieces
        .iter()
        .map(|p| match p {
            Piece::Text(text) => text.as_str(),
            Piece::Slot(_) => unreachable!("literal pieces only"),
        })
        .collect()
}

/// `text` as a Lua pattern that matches it alone: its magic characters escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "^$()%.[]*+-?".contains(c) {
            out.push('%');
        }
        out.push(c);
    }
    out
}

/// `{ 'a', 'b' }`.
fn lua_list(texts: &[String]) -> String {
    let items: Vec<String> = texts.iter().map(|t| lua_text(t)).collect();
    format!("{{ {} }}", items.join(", "))
}

/// The `@error BAD_ARGS` words the key check adds to the counts':
/// `, or not one tag per key of tag_targets`.
pub(crate) fn arity_words(header: &Header) -> String {
    let mut words = String::new();
    if let Ok(Some(plan)) = analyze(header)
        && let Some(v) = &plan.variadic
    {
        for arg in plan.per_round.values() {
            let _ = write!(words, ", or not one {} per key of {}", arg.name, v.name);
        }
    }
    words
}
