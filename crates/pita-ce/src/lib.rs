//! Compile-fail examples live in `examples/`, each with its expected diagnostic beside it
//! (`ce12.rs`, `ce12.stderr`). `pita run` builds each one and checks the diagnostic;
//! `PITA_OVERWRITE_SNAPSHOTS=1` rewrites the snapshots, to be reviewed as a diff.
