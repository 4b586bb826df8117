//! The README's Layout table names what is there: every path it names exists, and every
//! top-level folder of each crate is named.

use std::{
    collections::BTreeSet,
    fs,
    path::{Path, PathBuf},
};

use super::{workspace, CRATES};

#[test]
fn the_readme_layout_names_what_is_there() {
    let root = workspace();
    let readme = fs::read_to_string(root.join("README.md")).expect("the README");
    let layout = readme
        .split("\n## Layout\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("the README has a Layout section");
    // Every path it names in backquotes, as written or under the folder of its row.
    let mut problems = Vec::new();
    let mut named = BTreeSet::new();
    for row in layout.lines().filter(|line| line.starts_with("| `")) {
        let cells: Vec<&str> = row.split('|').collect();
        let folders: Vec<String> = cells.get(1).map(|cell| quoted(cell)).unwrap_or_default();
        for folder in &folders {
            if !root.join(folder).exists() {
                problems.push(format!("the Layout names `{folder}`, which does not exist"));
            }
            named.insert(folder.trim_end_matches('/').to_string());
        }
        for mentioned in cells.get(2).map(|cell| quoted(cell)).unwrap_or_default() {
            if !(mentioned.ends_with(".rs")
                || mentioned.ends_with('/')
                || mentioned.ends_with(".js")
                || mentioned.ends_with(".py")
                || mentioned.ends_with(".sh"))
            {
                continue;
            }
            let whole = root.join(&mentioned);
            let found = if mentioned.contains('/') && whole.exists() {
                Some(whole)
            } else {
                folders.iter().find_map(|folder| {
                    let base = root.join(folder);
                    let base = if base.is_dir() {
                        base
                    } else {
                        base.parent().map(Path::to_path_buf).unwrap_or(base)
                    };
                    found_below(&base, &mentioned)
                })
            };
            match found {
                None => problems.push(format!(
                    "the Layout names `{mentioned}` (row {}), which is not there",
                    folders.join(", ")
                )),
                Some(path) => {
                    let shown = path
                        .strip_prefix(&root)
                        .unwrap_or(&path)
                        .display()
                        .to_string();
                    named.insert(shown.trim_end_matches('/').to_string());
                }
            }
        }
    }
    // Every folder of each crate's `src/` (and each top-level folder) is named.
    for name in CRATES {
        let src = root.join(name).join("src");
        let mut folders = vec![format!("{name}/")];
        for entry in fs::read_dir(&src).expect("a crate's src").flatten() {
            if entry.path().is_dir() {
                folders.push(format!(
                    "{name}/src/{}/",
                    entry.file_name().to_string_lossy()
                ));
            }
        }
        for folder in folders {
            let folder = folder.trim_end_matches('/').to_string();
            let covered = named
                .iter()
                .any(|path| path == &folder || path.starts_with(&format!("{folder}/")));
            if !covered {
                problems.push(format!("the Layout does not name `{folder}/`"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The backquoted words of a table cell.
fn quoted(cell: &str) -> Vec<String> {
    cell.split('`')
        .enumerate()
        .filter(|(index, _)| index % 2 == 1)
        .map(|(_, word)| word.to_string())
        .collect()
}

/// Where a file or folder of that name (or relative path) is below `base`, nearest first.
fn found_below(base: &Path, name: &str) -> Option<PathBuf> {
    let mut folders = std::collections::VecDeque::from([base.to_path_buf()]);
    while let Some(folder) = folders.pop_front() {
        let candidate = folder.join(name.trim_end_matches('/'));
        if candidate.exists() {
            return Some(candidate);
        }
        let mut below: Vec<PathBuf> = fs::read_dir(&folder)
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.is_dir())
            .collect();
        below.sort();
        folders.extend(below);
    }
    None
}
