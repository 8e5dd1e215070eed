//! Reads the burn version this workspace's Cargo.lock resolved, so every experiment's dump states
//! the exact burn that ran (`pita_lab::BURN_VERSION`, the dumps' `framework_version`).
use std::{env, fs, path::PathBuf};

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let lock = manifest.join("../../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = fs::read_to_string(&lock).unwrap_or_default();
    let version = locked_version(&text, "burn").unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=PITA_LAB_BURN_VERSION={version}");
    // `#[cfg(burn_minor = "23")]`: the per-version shims of `pita_lab::compat` choose by it.
    println!("cargo:rustc-check-cfg=cfg(burn_minor, values(\"21\", \"22\", \"23\"))");
    if let Some(minor) = version.split('.').nth(1) {
        println!("cargo:rustc-cfg=burn_minor=\"{minor}\"");
    }
}

fn locked_version(lock: &str, name: &str) -> Option<String> {
    let needle = format!("name = \"{name}\"\n");
    let start = lock.find(&needle)? + needle.len();
    let line = lock[start..].lines().next()?;
    let version = line.strip_prefix("version = \"")?.strip_suffix('"')?;
    Some(version.to_string())
}
