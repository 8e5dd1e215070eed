//! The command line shared by experiment binaries: `<bin> --variant NAME --out DIR`.

use std::path::PathBuf;

/// What the runner asks an experiment binary to do.
#[derive(Debug, Clone)]
pub struct Args {
    pub variant: String,
    pub out: PathBuf,
}

impl Args {
    /// Parses `--variant NAME --out DIR`; exits with status 2 and one line on bad usage.
    pub fn parse(variants: &[&str]) -> Args {
        match Self::try_parse(std::env::args().skip(1), variants) {
            Ok(args) => args,
            Err(message) => {
                eprintln!("error: {message}");
                std::process::exit(2);
            }
        }
    }

    fn try_parse(mut argv: impl Iterator<Item = String>, variants: &[&str]) -> Result<Args, String> {
        let (mut variant, mut out) = (None, None);
        while let Some(flag) = argv.next() {
            let value = argv.next().ok_or_else(|| format!("{flag} needs a value"))?;
            match flag.as_str() {
                "--variant" => variant = Some(value),
                "--out" => out = Some(PathBuf::from(value)),
                _ => return Err(format!("unknown flag {flag} (expected --variant, --out)")),
            }
        }
        let variant = variant.ok_or("missing --variant")?;
        if !variants.contains(&variant.as_str()) {
            return Err(format!("unknown variant {variant:?} (one of: {})", variants.join(", ")));
        }
        let out = out.ok_or("missing --out")?;
        Ok(Args { variant, out })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(argv: &[&str]) -> Result<Args, String> {
        Args::try_parse(argv.iter().map(|s| s.to_string()), &["mean", "nomean"])
    }

    #[test]
    fn reads_variant_and_out() {
        let args = parse(&["--variant", "mean", "--out", "d"]).unwrap();
        assert_eq!(args.variant, "mean");
        assert_eq!(args.out, PathBuf::from("d"));
    }

    #[test]
    fn rejects_unknown_variants_and_flags() {
        assert!(parse(&["--variant", "sum", "--out", "d"]).unwrap_err().contains("unknown variant"));
        assert!(parse(&["--verbose", "1"]).unwrap_err().contains("unknown flag"));
        assert!(parse(&["--variant"]).unwrap_err().contains("needs a value"));
    }
}
