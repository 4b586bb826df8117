//! The shape of the workspace's code, read from its source: no cycle of imports between sibling
//! modules (two files of one folder, or two folders of one parent) in any crate, no source file
//! over the size limit, and a README whose Layout table names what is there.
//!
//! The imports are read as text: every `crate::…` and `super::…` path in a file (its `use`
//! trees, and paths written out in code), with `pub use` re-exports followed to the module that
//! defines the name. Test modules (`#[cfg(test)] mod tests`, inline or in a `tests.rs` of their
//! own) are left out, as are comments.

use std::{
    collections::{BTreeMap, BTreeSet},
    fs,
    path::{Path, PathBuf},
};

/// The crates whose `src/` is read.
const CRATES: &[&str] = &["app", "ecs-facts", "emulator", "placement", "server"];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the server crate sits in the workspace")
        .to_path_buf()
}

/// The `.rs` files under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The module path of a file under a crate's `src/`: `lib.rs` is the root, `a/mod.rs` and
/// `a.rs` are `a`, `a/b.rs` is `a::b`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).expect("a file of the crate");
    let mut parts: Vec<String> = relative
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_string());
    }
    parts
}

/// The file's code without comments and without its inline test module.
fn code_of(text: &str) -> String {
    let mut code = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            // Past the module's other attributes, to what they are on.
            let mut after = lines
                .clone()
                .skip_while(|line| line.trim_start().starts_with("#["));
            if after.next().is_some_and(|next| {
                next.trim_start().starts_with("mod ") && next.trim_end().ends_with('{')
            }) {
                break;
            }
        }
        if trimmed.starts_with("//") {
            continue;
        }
        let line = match line.find("//") {
            // A comment after code (but not the `//` of a URL in a string).
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        };
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// Reads a use tree or a path at `chars[at..]` (after `crate::` or the like), pushing every full
/// path it names onto `paths`, each prefixed with `prefix`. Returns where it stopped.
fn read_tree(
    chars: &[char],
    mut at: usize,
    prefix: &[String],
    paths: &mut Vec<Vec<String>>,
) -> usize {
    let skip_space = |at: &mut usize| {
        while *at < chars.len() && chars[*at].is_whitespace() {
            *at += 1;
        }
    };
    let mut path = prefix.to_vec();
    loop {
        skip_space(&mut at);
        if at < chars.len() && chars[at] == '{' {
            at += 1;
            loop {
                skip_space(&mut at);
                if at >= chars.len() {
                    return at;
                }
                if chars[at] == '}' {
                    return at + 1;
                }
                if chars[at] == ',' {
                    at += 1;
                    continue;
                }
                let before = at;
                at = read_tree(chars, at, &path, paths);
                if at == before {
                    at += 1;
                }
            }
        }
        let start = at;
        while at < chars.len() && (chars[at].is_alphanumeric() || chars[at] == '_') {
            at += 1;
        }
        if at == start {
            break;
        }
        let segment: String = chars[start..at].iter().collect();
        if segment != "self" {
            path.push(segment);
        }
        skip_space(&mut at);
        if at + 1 < chars.len() && chars[at] == ':' && chars[at + 1] == ':' {
            at += 2;
            continue;
        }
        break;
    }
    if path.len() > prefix.len() {
        paths.push(path);
    }
    at
}

/// Every module-rooted path a file's code names: `crate::…` as is, `super::…` and `self::…`
/// resolved against the file's module.
fn paths_in(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let chars: Vec<char> = code.chars().collect();
    let mut paths = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        let word_start = at == 0
            || !(chars[at - 1].is_alphanumeric() || chars[at - 1] == '_' || chars[at - 1] == ':');
        if !word_start {
            at += 1;
            continue;
        }
        let rest: String = chars[at..chars.len().min(at + 7)].iter().collect();
        if rest.starts_with("crate::") {
            at = read_tree(&chars, at + 7, &[], &mut paths);
        } else if rest.starts_with("super::") {
            let mut base = module.to_vec();
            let mut cursor = at;
            while chars[cursor..].starts_with(&['s', 'u', 'p', 'e', 'r', ':', ':']) {
                base.pop();
                cursor += 7;
            }
            at = read_tree(&chars, cursor, &base, &mut paths);
        } else if rest.starts_with("self::") {
            at = read_tree(&chars, at + 6, module, &mut paths);
        } else {
            at += 1;
        }
    }
    paths
}

/// One crate read: its modules, what each file names, and the re-exports of each module.
struct Crate {
    name: String,
    modules: BTreeSet<Vec<String>>,
    /// File → its module and the module paths it names.
    uses: Uses,
    /// (module, name) → the path a `pub use` of that module gives it.
    reexports: BTreeMap<(Vec<String>, String), Vec<String>>,
}

fn read_crate(name: &str) -> Crate {
    let src = workspace().join(name).join("src");
    let mut modules = BTreeSet::new();
    let mut uses: Uses = BTreeMap::new();
    let mut reexports = BTreeMap::new();
    // (module, name) → the path any `use` of that module gives the name.
    let mut imports: BTreeMap<(Vec<String>, String), Vec<String>> = BTreeMap::new();
    let mut globs: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    for file in rust_files(&src) {
        if file.file_name().is_some_and(|name| name == "main.rs") {
            continue;
        }
        let module = module_of(&src, &file);
        if module.iter().any(|part| part == "tests") {
            // A test module in a file of its own, left out as an inline one is.
            continue;
        }
        for depth in 0..=module.len() {
            modules.insert(module[..depth].to_vec());
        }
        let text = fs::read_to_string(&file).expect("a readable source file");
        let code = code_of(&text);
        for (public, targets) in use_statements(&code, &module) {
            for target in targets {
                if let Some(last) = target.last() {
                    if public {
                        reexports.insert((module.clone(), last.clone()), target.clone());
                    }
                    imports.insert((module.clone(), last.clone()), target.clone());
                }
            }
        }
        uses.insert(file.clone(), (module.clone(), paths_in(&code, &module)));
        if glob_of_parent(&code) {
            globs.insert(file.clone(), identifiers(&code));
        }
    }
    add_glob_paths(&mut uses, globs, &imports);
    Crate {
        name: name.to_string(),
        modules,
        uses,
        reexports,
    }
}

/// File → (its module, the module paths it names).
type Uses = BTreeMap<PathBuf, (Vec<String>, Vec<Vec<String>>)>;

/// A `use super::*` brings in every name the parent imports: each word of such a file (`globs`)
/// that its parent imports is a path the file names.
fn add_glob_paths(
    uses: &mut Uses,
    globs: BTreeMap<PathBuf, BTreeSet<String>>,
    imports: &BTreeMap<(Vec<String>, String), Vec<String>>,
) {
    for (file, words) in globs {
        let Some((module, paths)) = uses.get_mut(&file) else {
            continue;
        };
        let parent = module[..module.len().saturating_sub(1)].to_vec();
        for word in words {
            if let Some(target) = imports.get(&(parent.clone(), word)) {
                paths.push(target.clone());
            }
        }
    }
}

/// The `use` statements of a file's code, each whole however many lines it spans: whether it
/// re-exports (`pub`, `pub(crate)`), and the module-rooted paths it names (`crate::`, `self::`
/// and `super::` resolved; a path without one is read from the file's module).
fn use_statements(code: &str, module: &[String]) -> Vec<(bool, Vec<Vec<String>>)> {
    let mut found = Vec::new();
    let mut lines = code.lines();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        let (public, rest) = if let Some(rest) = trimmed.strip_prefix("use ") {
            (false, rest)
        } else if let Some(rest) = trimmed
            .strip_prefix("pub use ")
            .or_else(|| trimmed.strip_prefix("pub(crate) use "))
        {
            (true, rest)
        } else if let Some(rest) = trimmed.strip_prefix("pub(super) use ") {
            (false, rest)
        } else {
            continue;
        };
        let mut statement = rest.to_string();
        while !statement.contains(';') {
            let Some(next) = lines.next() else { break };
            statement.push(' ');
            statement.push_str(next.trim());
        }
        let tree: Vec<char> = statement.chars().collect();
        let mut targets = Vec::new();
        if tree.starts_with(&['c', 'r', 'a', 't', 'e', ':', ':']) {
            read_tree(&tree, 7, &[], &mut targets);
        } else if tree.starts_with(&['s', 'u', 'p', 'e', 'r', ':', ':']) {
            let mut base = module.to_vec();
            let mut at = 0;
            while tree[at..].starts_with(&['s', 'u', 'p', 'e', 'r', ':', ':']) {
                base.pop();
                at += 7;
            }
            read_tree(&tree, at, &base, &mut targets);
        } else if tree.starts_with(&['s', 'e', 'l', 'f', ':', ':']) {
            read_tree(&tree, 6, module, &mut targets);
        } else {
            read_tree(&tree, 0, module, &mut targets);
        }
        found.push((public, targets));
    }
    found
}

/// Whether the code brings in every name of its parent module (`use super::*`).
fn glob_of_parent(code: &str) -> bool {
    code.lines()
        .any(|line| line.trim_start().starts_with("use super::*"))
}

/// The distinct words of the code that could name an item: outside string literals, so that a
/// button's text is no import.
fn identifiers(code: &str) -> BTreeSet<String> {
    // A quote as a character literal opens no string.
    let code = code.replace("'\"'", "' '");
    let mut outside = String::with_capacity(code.len());
    let mut chars = code.chars();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        match (in_string, c) {
            (true, '\\') => {
                chars.next();
            }
            (_, '"') => {
                in_string = !in_string;
                outside.push(' ');
            }
            (true, _) => {}
            (false, c) => outside.push(c),
        }
    }
    outside
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|word| {
            word.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
        })
        .map(str::to_string)
        .collect()
}

impl Crate {
    /// The module a path reaches: its longest prefix that is a module, with names re-exported
    /// by a module followed to where they come from.
    fn module_reached(&self, path: &[String]) -> Vec<String> {
        let mut path = path.to_vec();
        for _ in 0..8 {
            let mut depth = 0;
            while depth < path.len() && self.modules.contains(&path[..=depth]) {
                depth += 1;
            }
            if depth < path.len() {
                let key = (path[..depth].to_vec(), path[depth].clone());
                if let Some(target) = self.reexports.get(&key) {
                    let mut followed = target.clone();
                    followed.extend_from_slice(&path[depth + 1..]);
                    if followed != path {
                        path = followed;
                        continue;
                    }
                }
            }
            return path[..depth].to_vec();
        }
        path
    }

    /// The edges between siblings: (parent, from child, to child) → a file that makes it.
    fn sibling_edges(&self) -> BTreeMap<(Vec<String>, String, String), String> {
        let mut edges = BTreeMap::new();
        for (file, (module, paths)) in &self.uses {
            for path in paths {
                let target = self.module_reached(path);
                let common = module
                    .iter()
                    .zip(&target)
                    .take_while(|(a, b)| a == b)
                    .count();
                if common < module.len() && common < target.len() {
                    let shown = file
                        .strip_prefix(workspace())
                        .unwrap_or(file)
                        .display()
                        .to_string();
                    edges
                        .entry((
                            module[..common].to_vec(),
                            module[common].clone(),
                            target[common].clone(),
                        ))
                        .or_insert(format!("{shown} names {}", path.join("::")));
                }
            }
        }
        edges
    }

    /// Every cycle among the children of one module, as the list of its edges.
    fn cycles(&self) -> Vec<String> {
        let edges = self.sibling_edges();
        let mut by_parent: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> =
            BTreeMap::new();
        for (parent, from, to) in edges.keys() {
            by_parent
                .entry(parent.clone())
                .or_default()
                .entry(from.clone())
                .or_default()
                .insert(to.clone());
        }
        let mut found = Vec::new();
        for (parent, graph) in &by_parent {
            for component in strongly_connected(graph) {
                if component.len() < 2 {
                    continue;
                }
                let mut why = Vec::new();
                for ((edge_parent, from, to), reason) in &edges {
                    if edge_parent == parent && component.contains(from) && component.contains(to) {
                        why.push(format!("    {from} -> {to}: {reason}"));
                    }
                }
                found.push(format!(
                    "{}::{} : {}\n{}",
                    self.name,
                    parent.join("::"),
                    component.iter().cloned().collect::<Vec<_>>().join(", "),
                    why.join("\n")
                ));
            }
        }
        found
    }
}

/// Tarjan's strongly connected components of a small graph.
fn strongly_connected(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<String, usize>,
        low: BTreeMap<String, usize>,
        stack: Vec<String>,
        on_stack: BTreeSet<String>,
        next: usize,
        components: Vec<BTreeSet<String>>,
    }
    impl Walk<'_> {
        fn visit(&mut self, node: &str) {
            self.index.insert(node.to_string(), self.next);
            self.low.insert(node.to_string(), self.next);
            self.next += 1;
            self.stack.push(node.to_string());
            self.on_stack.insert(node.to_string());
            let targets: Vec<String> = self
                .graph
                .get(node)
                .map(|set| set.iter().cloned().collect())
                .unwrap_or_default();
            for target in targets {
                if !self.index.contains_key(&target) {
                    self.visit(&target);
                    let low = self.low[node].min(self.low[&target]);
                    self.low.insert(node.to_string(), low);
                } else if self.on_stack.contains(&target) {
                    let low = self.low[node].min(self.index[&target]);
                    self.low.insert(node.to_string(), low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = BTreeSet::new();
                while let Some(top) = self.stack.pop() {
                    self.on_stack.remove(&top);
                    let done = top == node;
                    component.insert(top);
                    if done {
                        break;
                    }
                }
                self.components.push(component);
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        components: Vec::new(),
    };
    for node in graph.keys() {
        if !walk.index.contains_key(node) {
            walk.visit(node);
        }
    }
    walk.components
}

#[test]
fn no_module_imports_a_sibling_that_imports_it_back() {
    let cycles: Vec<String> = CRATES
        .iter()
        .flat_map(|name| read_crate(name).cycles())
        .collect();
    assert!(
        cycles.is_empty(),
        "cycles of imports between sibling modules (crate::parent : the modules, then each edge):\n{}",
        cycles.join("\n")
    );
}

mod functions;
mod layout;
mod reader;
mod sizes;
