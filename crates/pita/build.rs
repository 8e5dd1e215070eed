//! Best-effort: the burn version the *consumer's* Cargo.lock resolved, for the dumps'
//! `framework_version`.
//!
//! A build script cannot ask cargo which lockfile it is building for, and burn exports no
//! version constant. This one looks for the first `Cargo.lock` that lists this very package
//! (`pita` at this version) in the folders above, in order:
//!
//! 1. `OUT_DIR`, inside the target directory, which by default lies in the consumer's
//!    workspace root;
//! 2. the folder cargo was invoked from (`PWD`, which cargo passes on), inside the consumer's
//!    workspace however far away `CARGO_TARGET_DIR` puts the target directory.
//!
//! It reads the version of `burn` locked there that fits pita's requirement (`^0.22.1`). Where
//! none is found (cargo invoked from outside the workspace with `--manifest-path` and a target
//! directory elsewhere) the crate records `unknown`, and a later build retries;
//! `DumpBuilder::framework_version` sets the version explicitly. pita's own folder is not
//! searched: as a dependency, the Cargo.lock above it is pita's, not the consumer's.
use std::env;
use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let starts: Vec<PathBuf> = ["OUT_DIR", "PWD"].into_iter().filter_map(env::var_os).map(PathBuf::from).collect();
    let name = env::var("CARGO_PKG_NAME").unwrap_or_default();
    let version = env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let burn = match locked_burn_version(&starts, &name, &version) {
        Some((lock, burn)) => {
            println!("cargo:rerun-if-changed={}", lock.display());
            burn
        }
        None => {
            // Retry when built from elsewhere.
            println!("cargo:rerun-if-env-changed=PWD");
            println!("cargo:rerun-if-env-changed=CARGO_TARGET_DIR");
            "unknown".to_string()
        }
    };
    println!("cargo:rustc-env=PITA_RESOLVED_BURN_VERSION={burn}");
}

/// The first `Cargo.lock` above one of `starts` (tried in order) that lists package `name` at
/// `version`, and the version of burn locked there.
fn locked_burn_version(starts: &[PathBuf], name: &str, version: &str) -> Option<(PathBuf, String)> {
    starts.iter().find_map(|start| {
        let (lock, text) = find_lock(start, name, version)?;
        Some((lock, locked_burn(&text)?))
    })
}

/// The first `Cargo.lock` above `start` that lists `name` at `version`, and its text.
fn find_lock(start: &Path, name: &str, version: &str) -> Option<(PathBuf, String)> {
    start.ancestors().map(|dir| dir.join("Cargo.lock")).find_map(|lock| {
        let text = fs::read_to_string(&lock).ok()?;
        let lists = packages(&text).any(|(n, v)| n == name && v == version);
        lists.then_some((lock, text))
    })
}

/// The locked version of `burn` that pita's requirement `^0.22.1` accepts.
fn locked_burn(lock: &str) -> Option<String> {
    packages(lock)
        .filter(|(name, _)| *name == "burn")
        .map(|(_, version)| version)
        .find(|version| compatible(version))
        .map(str::to_string)
}

/// `^0.22.1`: 0.22.x with x ≥ 1, no pre-release.
fn compatible(version: &str) -> bool {
    let parts: Vec<&str> = version.split('.').collect();
    matches!(parts.as_slice(), ["0", "22", patch] if patch.parse::<u64>().is_ok_and(|p| p >= 1))
}

/// `(name, version)` of every `[[package]]` entry of a Cargo.lock.
fn packages(lock: &str) -> impl Iterator<Item = (&str, &str)> {
    lock.split("[[package]]").skip(1).filter_map(|entry| {
        let field = |key: &str| {
            entry.lines().find_map(|line| {
                let value = line.strip_prefix(key)?.trim_start().strip_prefix('=')?.trim();
                value.strip_prefix('"')?.strip_suffix('"')
            })
        };
        Some((field("name")?, field("version")?))
    })
}

/// Run with the crate's unit tests (lib.rs includes this file under `cfg(test)`).
#[cfg(test)]
mod tests {
    use super::*;

    const LOCK: &str = "version = 4\n\n[[package]]\nname = \"burn\"\nversion = \"0.21.0\"\n\n[[package]]\nname = \"burn\"\nversion = \"0.22.3\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\n\n[[package]]\nname = \"pita\"\nversion = \"0.1.0\"\n";

    #[test]
    fn finds_the_consumers_lock_from_where_cargo_ran_when_the_target_dir_is_elsewhere() {
        let root = std::env::temp_dir().join(format!("pita-build-script-{}", std::process::id()));
        let (workspace, target) = (root.join("port"), root.join("elsewhere/target/debug/build/pita-0123/out"));
        let invoked_in = workspace.join("src/bin");
        for dir in [&invoked_in, &target] {
            fs::create_dir_all(dir).unwrap();
        }
        fs::write(workspace.join("Cargo.lock"), LOCK).unwrap();
        // A lock that does not list pita (another project above the target directory) is passed by.
        fs::write(root.join("elsewhere/Cargo.lock"), LOCK.replace("\"pita\"", "\"other\"")).unwrap();

        let found = locked_burn_version(&[target.clone(), invoked_in.clone()], "pita", "0.1.0");
        assert_eq!(found, Some((workspace.join("Cargo.lock"), "0.22.3".to_string())));
        assert_eq!(locked_burn_version(std::slice::from_ref(&target), "pita", "0.1.0"), None);
        assert_eq!(locked_burn_version(&[target, invoked_in], "pita", "0.2.0"), None, "another pita version");
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn reads_the_burn_that_fits_pitas_requirement() {
        assert_eq!(locked_burn(LOCK).as_deref(), Some("0.22.3"));
        assert!(compatible("0.22.1") && !compatible("0.22.0") && !compatible("0.23.0") && !compatible("0.22.2-pre"));
    }
}
