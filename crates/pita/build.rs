//! Records the burn version that Cargo.lock resolved, so dumps state what actually ran.
use std::{env, fs, path::PathBuf};

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let lock = manifest.join("../../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = fs::read_to_string(&lock).unwrap_or_default();
    let version = locked_version(&text, "burn").unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=PITA_BURN_VERSION={version}");
}

fn locked_version(lock: &str, name: &str) -> Option<String> {
    let needle = format!("name = \"{name}\"\n");
    let start = lock.find(&needle)? + needle.len();
    let line = lock[start..].lines().next()?;
    let version = line.strip_prefix("version = \"")?.strip_suffix('"')?;
    Some(version.to_string())
}
