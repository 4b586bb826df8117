//! Files read in one sitting: no source or test file of the workspace over the size limit, its
//! inline tests included.

use std::fs;

use super::{rust_files, workspace, CRATES};

/// The most lines a source or test file may have, its inline tests included.
const MOST_LINES: usize = 600;

#[test]
fn no_source_file_is_longer_than_one_sitting() {
    let root = workspace();
    let mut problems = Vec::new();
    for name in CRATES {
        let files = [root.join(name).join("src"), root.join(name).join("tests")]
            .iter()
            .flat_map(|dir| rust_files(dir))
            .collect::<Vec<_>>();
        for file in files {
            let shown = file
                .strip_prefix(&root)
                .unwrap_or(&file)
                .display()
                .to_string();
            let lines = fs::read_to_string(&file)
                .expect("a readable source file")
                .lines()
                .count();
            if lines > MOST_LINES {
                problems.push(format!(
                    "{shown} has {lines} lines, over {MOST_LINES}: split it into named parts"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
