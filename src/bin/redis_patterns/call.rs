//! `call`: a script run with keys built from its header's templates and arguments checked
//! as the Rust API checks them, its reply shown as `redis-cli` shows one.

use std::time::Duration;

use redis::Value;
use redis_patterns::{Param, PresetValue, Script, ScriptCall, float_from_text, integer_from_text};

use super::shared::{FLOAT, Failure, WHOLE, WHOLE_0, uint_from_text};

/// The keys of `script` built from their templates with `params` (`NAME=VALUE`); `given`
/// are the variadic key's items, when given.
pub(crate) fn template_keys(
    script: &'static Script,
    params: &[String],
    given: &[String],
) -> Result<Vec<String>, Failure> {
    let mut values: Vec<(&str, Vec<&str>)> = Vec::new();
    for param in params {
        let Some((name, value)) = param.split_once('=') else {
            return Err(Failure::usage(format!(
                "`--param` takes NAME=VALUE, got {param:?}"
            )));
        };
        match values.iter_mut().find(|(n, _)| *n == name) {
            Some((_, all)) => all.push(value),
            None => values.push((name, vec![value])),
        }
    }
    let mut known: Vec<&str> = Vec::new();
    for key in script.keys {
        let Some(template) = key.template else {
            return Err(Failure::usage(format!(
                "{}'s key `{}` has no template: name the keys with --key",
                script.name, key.name
            )));
        };
        for param in template.params() {
            if !known.contains(&param) {
                known.push(param);
            }
        }
    }
    let list = |names: &[&str]| {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some((unknown, _)) = values.iter().find(|(n, _)| !known.contains(n)) {
        return Err(Failure::usage(format!(
            "{} names its keys from {}; `{unknown}` is none of them",
            script.name,
            list(&known)
        )));
    }
    let has_variadic = script.keys.last().is_some_and(|k| k.variadic);
    if !given.is_empty() && !has_variadic {
        return Err(Failure::usage(format!(
            "{} has no variadic key: name its keys with --param or with --key, not both",
            script.name
        )));
    }
    let of = |name: &str| values.iter().find(|(n, _)| *n == name).map(|(_, v)| v);
    // Every parameter a key needs, so that one error names them all.
    let missing: Vec<&str> = known
        .iter()
        .copied()
        .filter(|p| of(p).is_none())
        .filter(|p| {
            script.keys.iter().any(|k| {
                (!k.variadic || given.is_empty())
                    && k.template.is_some_and(|t| t.params().contains(p))
            })
        })
        .collect();
    if !missing.is_empty() {
        return Err(Failure::usage(format!(
            "{} names its keys from {}: add {}",
            script.name,
            list(&known),
            missing
                .iter()
                .map(|p| format!("--param {p}=<value>"))
                .collect::<Vec<_>>()
                .join(" ")
        )));
    }
    // Every parameter of the keys built below was given: `missing` is empty.
    let all = |name: &str| of(name).expect("every needed parameter was given");
    let mut keys = Vec::new();
    for key in script.keys {
        let template = key
            .template
            .expect("every key has a template: checked above");
        if !key.variadic {
            let form = &template.forms[0];
            let firsts: Vec<&str> = form.params.iter().map(|p| all(p)[0]).collect();
            keys.push(form.build(&firsts)?);
            continue;
        }
        if !given.is_empty() {
            keys.extend(given.iter().cloned());
            continue;
        }
        // An item per value of the parameters given several times; one given once is
        // every item's.
        let params = template.params();
        let items = params.iter().map(|p| all(p).len()).max().unwrap_or(1);
        let uneven = params.iter().find(|p| ![1, items].contains(&all(p).len()));
        if let Some(p) = uneven {
            return Err(Failure::usage(format!(
                "the items of `{}` take one value of each parameter given several times: \
                 `{p}` has {}, another {items}",
                key.name,
                all(p).len()
            )));
        }
        for item in 0..items {
            for form in template.forms {
                let values: Vec<&str> = form
                    .params
                    .iter()
                    .map(|p| all(p).get(item).unwrap_or(&all(p)[0]))
                    .copied()
                    .collect();
                keys.push(form.build(&values)?);
            }
        }
    }
    Ok(keys)
}

/// The script's call, each argument converted to its header type and checked as the Rust
/// API checks it.
pub(crate) fn call(
    script: &'static Script,
    keys: &[String],
    args: &[String],
) -> Result<redis_patterns::Op<Value>, Failure> {
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let fixed_keys = script.keys.iter().filter(|k| !k.variadic).count();
    if keys.len() < fixed_keys {
        let params: Vec<String> = script
            .keys
            .iter()
            .filter_map(|k| k.template)
            .flat_map(|t| t.params())
            .fold(Vec::new(), |mut all, p| {
                if !all.contains(&p) {
                    all.push(p);
                }
                all
            })
            .iter()
            .map(|p| format!("--param {p}=<value>"))
            .collect();
        let how = if params.is_empty() {
            format!("`redis-patterns show {}` lists its keys", script.name)
        } else {
            format!(
                "name its keys with {}, or each with --key",
                params.join(" ")
            )
        };
        return Err(Failure::usage(format!(
            "{} needs the key `{}`; {how}",
            script.name,
            script.keys[keys.len()].name,
        )));
    }
    let mut call = ScriptCall::new(script);
    for key in &keys[..fixed_keys] {
        call = call.key(key);
    }
    match script.keys.last() {
        Some(last) if last.variadic => call = call.keys(&keys[fixed_keys..]),
        _ if keys.len() > fixed_keys => {
            return Err(Failure::usage(format!(
                "{} takes {fixed_keys} key(s); got {}",
                script.name,
                keys.len()
            )));
        }
        _ => {}
    }
    let fixed = script.args.iter().filter(|p| !p.variadic).count();
    // Arguments left out at the end take their `@default`, as the Rust API gives them.
    let mut args = args.to_vec();
    while args.len() < fixed {
        let missing = &script.args[args.len()];
        let default = match script.default_of(missing.name) {
            Some(PresetValue::Text(text)) => text.to_string(),
            Some(PresetValue::SameAs(other)) => {
                match script.args.iter().position(|a| a.name == *other) {
                    Some(at) if at < args.len() => args[at].clone(),
                    _ => return Err(needs(script, missing)),
                }
            }
            None => return Err(needs(script, missing)),
        };
        args.push(default);
    }
    for (param, value) in script.args.iter().zip(&args) {
        if !param.variadic {
            call = add_arg(call, param, value)?;
        }
    }
    match script.args.last() {
        Some(last) if last.variadic => call = add_args(call, last, &args[fixed..])?,
        _ if args.len() > fixed => {
            return Err(Failure::usage(format!(
                "{} takes {fixed} argument(s); got {}",
                script.name,
                args.len()
            )));
        }
        _ => {}
    }
    Ok(call.finish())
}

/// What a call that leaves out `missing` (which has no `@default`) is told.
fn needs(script: &Script, missing: &Param) -> Failure {
    Failure::usage(format!(
        "{} needs `{}` ({}); `redis-patterns show {}` lists its arguments",
        script.name, missing.name, missing.ty, script.name
    ))
}

/// The values of the variadic argument `param`, each converted to its type.
fn add_args(call: ScriptCall, param: &Param, values: &[String]) -> Result<ScriptCall, Failure> {
    fn parsed<T>(
        param: &Param,
        values: &[String],
        what: &str,
        read: impl Fn(&str) -> Option<T>,
    ) -> Result<Vec<T>, Failure> {
        values
            .iter()
            .map(|v| {
                read(v).ok_or_else(|| {
                    Failure::usage(format!("each `{}` is {what}, got {v:?}", param.name))
                })
            })
            .collect()
    }
    Ok(match param.ty {
        "int" => call.args(&parsed(param, values, WHOLE, integer_from_text)?),
        "uint" => call.args(&parsed(param, values, WHOLE_0, uint_from_text)?),
        "float" => call.args(&parsed(param, values, FLOAT, float_from_text)?),
        "bytes" => {
            let values: Vec<&[u8]> = values.iter().map(|v| v.as_bytes()).collect();
            call.args(&values)
        }
        _ => {
            let values: Vec<&str> = values.iter().map(String::as_str).collect();
            call.args(&values)
        }
    })
}

fn add_arg(call: ScriptCall, param: &Param, value: &str) -> Result<ScriptCall, Failure> {
    let bad = |why: &str| {
        Failure::usage(format!(
            "`{}` is a {}{}: {why}, got {value:?}",
            param.name,
            param.ty,
            if param.optional {
                " (empty for none)"
            } else {
                ""
            }
        ))
    };
    if param.optional && value.is_empty() {
        return Ok(match param.ty {
            "int" => call.arg(None::<i64>),
            "uint" => call.arg(None::<u64>),
            "float" => call.arg(None::<f64>),
            _ => call.arg(None::<Duration>),
        });
    }
    Ok(match param.ty {
        "int" => call.arg(integer_from_text(value).ok_or_else(|| bad(WHOLE))?),
        "uint" => call.arg(uint_from_text(value).ok_or_else(|| bad(WHOLE_0))?),
        "float" => call.arg(float_from_text(value).ok_or_else(|| bad(FLOAT))?),
        "ms" => call.arg(Duration::from_millis(
            uint_from_text(value).ok_or_else(|| bad("whole milliseconds"))?,
        )),
        "bool" => call.arg(match value {
            "1" | "true" => true,
            "0" | "false" => false,
            _ => return Err(bad("1 or 0")),
        }),
        "bytes" => call.arg(value.as_bytes()),
        _ => call.arg(value),
    })
}

/// A reply as `redis-cli` shows one.
pub(crate) fn print_value(value: &Value, depth: usize) {
    let indent = "   ".repeat(depth);
    match value {
        Value::Nil => println!("{indent}(nil)"),
        Value::Int(n) => println!("{indent}(integer) {n}"),
        Value::BulkString(bytes) => println!("{indent}\"{}\"", String::from_utf8_lossy(bytes)),
        Value::SimpleString(s) => println!("{indent}{s}"),
        Value::Okay => println!("{indent}OK"),
        Value::Array(items) | Value::Set(items) => {
            if items.is_empty() {
                println!("{indent}(empty array)");
            }
            for (i, item) in items.iter().enumerate() {
                print!("{indent}{}) ", i + 1);
                match item {
                    Value::Array(_) | Value::Set(_) => {
                        println!();
                        print_value(item, depth + 1);
                    }
                    _ => print_value(item, 0),
                }
            }
        }
        other => println!("{indent}{other:?}"),
    }
}
