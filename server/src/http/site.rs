//! The built site's files under `/pkg`: the WebAssembly, its JavaScript and the stylesheet.
//!
//! `scripts/build.sh` writes a brotli (quality 11) and a gzip copy beside each of them, once per
//! build: compressing the 4 MB WebAssembly at brotli's best on every page load took seconds of a
//! core each time, and a lower quality sends a third more. The copies are served only if, when the
//! server starts, each is at least as new as its file; a site written since by another tool
//! (`cargo leptos watch`) leaves them older, and its files are then compressed as they are sent,
//! as every other answer is.

use std::path::Path;

use tower_http::services::ServeDir;

/// Serves `pkg`, from the precompressed copies when they are all fresh.
pub fn pkg_files(pkg: &Path) -> ServeDir {
    let files = ServeDir::new(pkg);
    match stale_copy(pkg) {
        None => files.precompressed_br().precompressed_gzip(),
        Some(copy) => {
            tracing::warn!(
                copy = %copy.display(),
                "a precompressed copy of the site's files is older than its file (the site was \
                 built by another tool since scripts/build.sh wrote it): the site's files are \
                 compressed as they are sent instead; ./scripts/build.sh writes fresh copies"
            );
            files
        }
    }
}

/// The first `.br` or `.gz` copy in `pkg` older than the file it is a copy of, or whose file is
/// gone.
fn stale_copy(pkg: &Path) -> Option<std::path::PathBuf> {
    let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let entries = std::fs::read_dir(pkg).ok()?;
    entries.flatten().map(|entry| entry.path()).find(|copy| {
        let is_copy = matches!(
            copy.extension().and_then(|e| e.to_str()),
            Some("br") | Some("gz")
        );
        if !is_copy {
            return false;
        }
        match (modified(&copy.with_extension("")), modified(copy)) {
            (Some(file), Some(copy)) => copy < file,
            _ => true,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(path: &Path, seconds_ago: u64) {
        std::fs::write(path, b"x").expect("a file in the test's directory");
        let when = std::time::SystemTime::now() - std::time::Duration::from_secs(seconds_ago);
        std::fs::File::options()
            .write(true)
            .open(path)
            .and_then(|file| file.set_modified(when))
            .expect("the file's time set");
    }

    #[test]
    fn copies_at_least_as_new_as_their_files_are_fresh() {
        let dir = tempfile_dir("fresh");
        touch(&dir.join("gpushare.wasm"), 60);
        touch(&dir.join("gpushare.wasm.br"), 30);
        touch(&dir.join("gpushare.wasm.gz"), 60);
        touch(&dir.join("gpushare.css"), 10);
        assert_eq!(stale_copy(&dir), None);
    }

    #[test]
    fn a_copy_older_than_its_file_or_without_one_is_stale() {
        let dir = tempfile_dir("stale");
        touch(&dir.join("gpushare.wasm"), 10);
        touch(&dir.join("gpushare.wasm.br"), 60);
        assert_eq!(stale_copy(&dir), Some(dir.join("gpushare.wasm.br")));

        let dir = tempfile_dir("orphan");
        touch(&dir.join("gpushare.js.gz"), 60);
        assert_eq!(stale_copy(&dir), Some(dir.join("gpushare.js.gz")));
    }

    fn tempfile_dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("gpushare-site-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("the test's directory");
        dir
    }
}
