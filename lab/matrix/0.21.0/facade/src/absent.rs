//! burn 0.22 APIs that burn 0.21 does not have. Each ends the program the way the lab's
//! `pita_lab::compat::api_absent` does (the same line, the same exit status), so the matrix shows
//! the cell, or the variant, as "n/a" naming the API. The facade cannot call pita-lab (which
//! depends on it): tests/lab/test_matrix.py holds the two to the same protocol.

/// `burn api absent: <api> (burn 0.21.0)` on stderr, exit status 64.
pub fn api_absent(api: &str) -> ! {
    eprintln!("burn api absent: {api} (burn 0.21.0)");
    std::process::exit(64)
}
