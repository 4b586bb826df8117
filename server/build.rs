//! Links the server's binary and test binaries with LLVM's `lld` where it is installed.
//!
//! They hold every page's rendering code, and the system's default linker took 31 s for each
//! debug test binary where `lld` takes 7 (README, "How the build works"). `scripts/setup.sh`
//! installs `lld` with Debian's toolchain; without it, or with `GPUSHARE_LINKER=default`, or when
//! the build's own flags already choose a linker, the default linker is used.

use std::env;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=GPUSHARE_LINKER");
    if use_lld() {
        println!("cargo:rustc-link-arg=-fuse-ld=lld");
    }
}

fn use_lld() -> bool {
    if env::var("GPUSHARE_LINKER").is_ok_and(|linker| linker == "default") {
        return false;
    }
    // Only where `cc` drives the link (Linux with glibc), and not over a linker chosen elsewhere.
    let target = env::var("TARGET").unwrap_or_default();
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if !target.ends_with("-linux-gnu") || flags.contains("fuse-ld") || flags.contains("linker=") {
        return false;
    }
    let path = env::var_os("PATH").unwrap_or_default();
    env::split_paths(&path).any(|dir| Path::new(&dir).join("ld.lld").is_file())
}
