//! Best-effort: the burn version the *consumer's* Cargo.lock resolved, for the dumps'
//! `framework_version`.
//!
//! A build script cannot ask cargo which lockfile it is building for. This one walks up from
//! `OUT_DIR` (inside the target directory, which by default lies in the consumer's workspace
//! root) to the first `Cargo.lock` that lists this very package (`pita` at this version), and
//! reads the version of `burn` locked there that fits pita's requirement (`^0.22.1`). Where none
//! is found (a target directory outside the project, `CARGO_TARGET_DIR` pointing elsewhere) the
//! crate records `unknown`; `DumpBuilder::framework_version` sets the version explicitly.
use std::env;
use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let version = env::var_os("OUT_DIR")
        .map(PathBuf::from)
        .and_then(|out| find_lock(&out))
        .and_then(|lock| {
            println!("cargo:rerun-if-changed={}", lock.display());
            let text = fs::read_to_string(&lock).ok()?;
            locked_burn(&text)
        })
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=PITA_RESOLVED_BURN_VERSION={version}");
}

/// The first `Cargo.lock` above `start` that lists this package at this version.
fn find_lock(start: &Path) -> Option<PathBuf> {
    let name = env::var("CARGO_PKG_NAME").ok()?;
    let version = env::var("CARGO_PKG_VERSION").ok()?;
    start.ancestors().map(|dir| dir.join("Cargo.lock")).find(|lock| {
        fs::read_to_string(lock)
            .map(|text| packages(&text).any(|(n, v)| n == name && v == version))
            .unwrap_or(false)
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
