//! The recorder's progress line, `[k/N] record step k…` on stderr, as `pita/progress.py` draws
//! it: only on a terminal, `PITA_PROGRESS=0` never, `PITA_PROGRESS=1` always; redrawn in place at
//! most 10 times a second and cleared at the end.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use crate::Error;

/// The variable that turns the line off (`0`) or on (`1`), as in the Python library.
pub(super) const ENV: &str = "PITA_PROGRESS";
const MAX_COLUMNS: usize = 100;
const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// Whether to draw: `PITA_PROGRESS` decides when set, else whether stderr is a terminal.
pub(super) fn enabled(value: Option<&str>, terminal: bool) -> Result<bool, Error> {
    match value {
        None | Some("") => Ok(terminal),
        Some("1") => Ok(true),
        Some("0") => Ok(false),
        Some(other) => Err(Error::Recording { message: format!("{ENV}={other:?}: expected 0 (never draw progress) or 1 (always draw it)") }),
    }
}

/// The line, `[done/total] label name…`, in at most 100 columns (the middle of `name` gives way).
pub(super) fn line(done: usize, total: usize, label: &str, name: &str) -> String {
    let prefix = format!("[{done}/{total}] {label} ");
    let room = MAX_COLUMNS.saturating_sub(prefix.chars().count() + 1);
    let chars: Vec<char> = name.chars().collect();
    let name = if chars.len() <= room {
        name.to_string()
    } else {
        let tail = room.saturating_sub(1) / 2;
        let head = room.saturating_sub(1) - tail;
        format!("{}…{}", chars[..head].iter().collect::<String>(), chars[chars.len() - tail..].iter().collect::<String>())
    };
    format!("{prefix}{name}…")
}

/// The line of one recording; resolved (on or off) at its first draw.
#[derive(Debug, Default)]
pub(super) struct Progress {
    active: Option<bool>,
    drawn_at: Option<Instant>,
    drawn_width: usize,
}

impl Progress {
    /// Draws `[step/total] record step <step>…`, unless drawn less than 0.1 s ago. Fails only for
    /// a `PITA_PROGRESS` that is neither 0 nor 1.
    pub(super) fn step(&mut self, step: usize, total: usize) -> Result<(), Error> {
        let active = match self.active {
            Some(active) => active,
            None => *self.active.insert(enabled(std::env::var(ENV).ok().as_deref(), std::io::stderr().is_terminal())?),
        };
        if !active || self.drawn_at.is_some_and(|at| at.elapsed() < MIN_INTERVAL) {
            return Ok(());
        }
        self.drawn_at = Some(Instant::now());
        let text = line(step, total, "record", &format!("step {step}"));
        let width = text.chars().count();
        self.write(&format!("\r{text}{}", " ".repeat(self.drawn_width.saturating_sub(width))));
        self.drawn_width = width;
        Ok(())
    }

    /// Clears the line, if one was drawn.
    pub(super) fn clear(&mut self) {
        if self.drawn_width > 0 {
            self.write(&format!("\r{}\r", " ".repeat(self.drawn_width)));
            self.drawn_width = 0;
        }
    }

    fn write(&mut self, text: &str) {
        let mut stderr = std::io::stderr().lock();
        // A closed stderr must not stop the recording the line only reports on.
        if stderr.write_all(text.as_bytes()).and_then(|()| stderr.flush()).is_err() {
            self.active = Some(false);
            self.drawn_width = 0;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_on_a_terminal_or_when_told() {
        assert!(enabled(None, true).unwrap());
        assert!(!enabled(None, false).unwrap());
        assert!(enabled(Some("1"), false).unwrap());
        assert!(!enabled(Some("0"), true).unwrap());
        assert!(enabled(Some("yes"), true).unwrap_err().to_string().starts_with("PITA_PROGRESS=\"yes\": expected 0"));
    }

    #[test]
    fn the_line_is_pythons() {
        assert_eq!(line(3, 100, "record", "step 3"), "[3/100] record step 3…");
        let long = line(1, 2, "record", &"x".repeat(300));
        assert_eq!(long.chars().count(), MAX_COLUMNS);
        assert!(long.starts_with("[1/2] record xxx") && long.contains("x…x") && long.ends_with("x…"));
    }
}
