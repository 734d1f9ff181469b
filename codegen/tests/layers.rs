//! The generator's modules import one way: parse -> model -> render -> check, each from
//! the modules below it, with no circle anywhere in `src/`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every module of `src/` (`render::contract` for `src/render/contract.rs`, `lib` for the
/// crate root) and its source, without its tests.
fn modules() -> BTreeMap<String, String> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let name = path.strip_prefix(root).unwrap().with_extension("");
                let name = name.to_string_lossy().replace(['/', '\\'], "::");
                let source = std::fs::read_to_string(&path).unwrap();
                let code = source.split("#[cfg(test)]").next().unwrap_or_default();
                let code: Vec<&str> = code
                    .lines()
                    .map(|line| line.split("//").next().unwrap_or_default())
                    .collect();
                out.insert(name, code.join("\n"));
            }
        }
    }
    let mut out = BTreeMap::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    walk(&root, &root, &mut out);
    out.remove("main");
    out
}

/// The longest module name that `path` (`render::contract::render`) starts with; the
/// crate root for an item of its own (`Config`).
fn owner<'a>(path: &str, modules: &'a BTreeMap<String, String>) -> Option<&'a String> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len())
        .rev()
        .find_map(|n| {
            modules
                .get_key_value(&parts[..n].join("::"))
                .map(|(k, _)| k)
        })
        .or_else(|| modules.get_key_value("lib").map(|(k, _)| k))
}

/// What each module names of the others: `crate::a::b` and `crate::{a, b}` paths, and its
/// own child modules (`mod x;` then `x::`).
fn imports(modules: &BTreeMap<String, String>) -> BTreeMap<&String, BTreeSet<&String>> {
    let mut graph = BTreeMap::new();
    for (name, code) in modules {
        let mut named = BTreeSet::new();
        for (at, _) in code.match_indices("crate::") {
            let rest = &code[at + "crate::".len()..];
            let paths: Vec<String> = match rest.strip_prefix('{') {
                Some(group) => group[..group.find('}').unwrap_or(group.len())]
                    .split(',')
                    .map(|item| item.trim().to_string())
                    .collect(),
                None => vec![
                    rest.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                        .next()
                        .unwrap_or_default()
                        .trim_end_matches(':')
                        .to_string(),
                ],
            };
            named.extend(paths.iter().filter_map(|path| owner(path, modules)));
        }
        let prefix = if name == "lib" {
            String::new()
        } else {
            format!("{name}::")
        };
        for line in code.lines() {
            let child = line
                .trim_start()
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("pub ")
                .strip_prefix("mod ")
                .and_then(|rest| rest.strip_suffix(';'));
            if let Some(child) = child
                && code.contains(&format!("{child}::"))
                && let Some(module) = modules.get_key_value(&format!("{prefix}{child}"))
            {
                named.insert(module.0);
            }
        }
        named.remove(name);
        graph.insert(name, named);
    }
    graph
}

#[test]
fn modules_import_one_way() {
    let modules = modules();
    let graph = imports(&modules);
    // Depth-first, in name order: every module after those it imports.
    let mut order: Vec<&String> = Vec::new();
    let mut path: Vec<&String> = Vec::new();
    fn visit<'a>(
        name: &'a String,
        graph: &BTreeMap<&'a String, BTreeSet<&'a String>>,
        path: &mut Vec<&'a String>,
        order: &mut Vec<&'a String>,
    ) {
        if order.contains(&name) {
            return;
        }
        if let Some(at) = path.iter().position(|n| *n == name) {
            let circle: Vec<&str> = path[at..].iter().map(|n| n.as_str()).collect();
            panic!(
                "modules import in a circle: {} -> {name}",
                circle.join(" -> ")
            );
        }
        path.push(name);
        for next in &graph[name] {
            visit(next, graph, path, order);
        }
        path.pop();
        order.push(name);
    }
    for name in graph.keys() {
        visit(name, &graph, &mut path, &mut order);
    }
    let position = |name: &str| order.iter().position(|n| *n == name).unwrap();
    // The stages, in the order they import each other.
    assert!(position("model") < position("parse"));
    assert!(position("parse") < position("render::contract"));
    assert!(position("render::contract") < position("check"));
    println!(
        "{}",
        order
            .iter()
            .map(|n| n.as_str())
            .collect::<Vec<_>>()
            .join(" -> ")
    );
}
