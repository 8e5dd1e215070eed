//! [`Error`]: what pita's fallible functions return, the dump writer's and the guards' `check_*`
//! / `try_*` forms alike.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// Everything that can go wrong in pita without a panic.
///
/// A guard's `check_*` / `try_*` form returns [`Error::Check`], whose message (its `Display`) is
/// word for word the one the panicking form panics with. [`Error::Recording`] comes from
/// [`Recorder`](crate::record::Recorder) and [`Replay`](crate::replay::Replay); the other variants
/// from [`Dump`](crate::dump::Dump).
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A guard found what it guards against.
    Check {
        /// The guard, e.g. `finite::check_finite`.
        guard: &'static str,
        /// What it found; the panicking form panics with these words.
        message: String,
    },
    /// A dump already holds a tensor of this name.
    DuplicateTensor {
        /// The tensor's name.
        name: String,
    },
    /// A tensor name the readers refuse (a control character, or the reserved `__metadata__`).
    InvalidName {
        /// The tensor's name.
        name: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// [`Dump::write`](crate::dump::Dump::write), which names its files after the variant, was
    /// called on a dump built without one.
    MissingVariant,
    /// A variant that cannot name a file (`burn-<variant>.safetensors`).
    InvalidVariant {
        /// The variant.
        variant: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A path [`Dump::write_to`](crate::dump::Dump::write_to) cannot write a dump to.
    InvalidPath {
        /// The path.
        path: PathBuf,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A metadata key that the dump sets itself, or that has its own builder method.
    ReservedKey {
        /// The key.
        key: String,
        /// What sets it instead.
        hint: &'static str,
    },
    /// A tensor of a dtype no dump holds (quantized tensors: dequantize them first).
    UnsupportedDtype {
        /// The tensor's name.
        name: String,
        /// burn's name for the dtype.
        dtype: String,
    },
    /// A tensor's data could not be read back from its device, or its bytes are not valid for
    /// its dtype.
    Read {
        /// The tensor's name.
        name: String,
        /// What burn reported.
        message: String,
    },
    /// The safetensors or JSON form could not be serialised.
    Serialize {
        /// What the serialiser reported.
        message: String,
    },
    /// A [`Recorder`](crate::record::Recorder) call that breaks the recording convention
    /// (docs/recording.md): a step numbered out of order, a loss of more than one value, a name
    /// recorded twice; or a reference recording [`Replay`](crate::replay::Replay) cannot replay.
    Recording {
        /// What was refused, and why.
        message: String,
    },
    /// A file could not be read or written.
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
}

impl Error {
    /// A guard's finding, with the message its panicking form panics with; also for checks of
    /// your own written in the same style.
    pub fn check(guard: &'static str, message: impl Into<String>) -> Self {
        Error::Check { guard, message: message.into() }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Check { message, .. } => f.write_str(message),
            Error::DuplicateTensor { name } => write!(f, "tensor {name:?} is already in the dump"),
            Error::InvalidName { name, reason } => write!(f, "tensor name {name:?}: {reason}"),
            Error::MissingVariant => {
                f.write_str("Dump::write names the files after the variant: set one (DumpBuilder::variant), or use Dump::write_to(path)")
            }
            Error::InvalidVariant { variant, reason } => write!(f, "variant {variant:?}: {reason}"),
            Error::InvalidPath { path, reason } => write!(f, "{}: {reason}", path.display()),
            Error::ReservedKey { key, hint } => write!(f, "metadata key {key:?} is reserved: {hint}"),
            Error::UnsupportedDtype { name, dtype } => {
                write!(f, "tensor {name:?}: dtype {dtype} has no dump name (dequantize quantized tensors first)")
            }
            Error::Read { name, message } => write!(f, "tensor {name:?}: cannot read its data: {message}"),
            Error::Serialize { message } => write!(f, "cannot serialise the dump: {message}"),
            Error::Recording { message } => f.write_str(message),
            Error::Io { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_displays_its_message_alone() {
        let error = Error::check("finite::check_finite", "x holds non-finite values: 1 of 1");
        assert_eq!(error.to_string(), "x holds non-finite values: 1 of 1");
    }

    #[test]
    fn io_errors_keep_their_source() {
        let error = Error::io("a/b.json", io::Error::new(io::ErrorKind::NotFound, "gone"));
        assert_eq!(error.to_string(), "a/b.json: gone");
        assert!(std::error::Error::source(&error).is_some());
    }
}
