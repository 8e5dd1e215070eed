//! pita's compiled comparison kernel: the statistics of same-dtype float tensor pairs (F16, BF16,
//! F32, F64), as the Python package's `pita.stats_contract` defines them, for a whole batch of
//! pairs in one call, with the GIL released. `pita.stats` calls it; the numpy path is its peer.

mod batch;
mod format;
mod measure;

use std::fs::File;
use std::mem::ManuallyDrop;
use std::os::fd::FromRawFd;

use pyo3::buffer::PyUntypedBuffer;
use pyo3::exceptions::{PyEOFError, PyOSError, PyValueError};
use pyo3::prelude::*;

use batch::{Dtype, Grain, Pair, ReadError, Source};
use measure::{Stats, Tolerance};

/// `TensorStats`' fields in order, before `settled`: (n, mismatched, max_abs_diff, worst,
/// max_rel_diff, max_ulp or None, max_ulp_at, examples, nan_reference, nan_candidate).
type Measured = (
    u64,
    u64,
    f64,
    i64,
    f64,
    Option<u64>,
    i64,
    Vec<i64>,
    u64,
    u64,
);

/// One side of a pair as Python gives it: an object with a C-contiguous buffer, or an open
/// file's (descriptor, byte offset, name as messages show it).
enum Side {
    Buffer(PyUntypedBuffer),
    File {
        file: ManuallyDrop<File>,
        offset: u64,
        shown: String,
    },
}

impl Side {
    fn from_python(object: &Bound<'_, PyAny>, bytes: usize) -> PyResult<Side> {
        if let Ok((fd, offset, shown)) = object.extract::<(i32, u64, String)>() {
            // SAFETY: the caller keeps the descriptor open for the call; ManuallyDrop never closes it.
            return Ok(Side::File {
                file: ManuallyDrop::new(unsafe { File::from_raw_fd(fd) }),
                offset,
                shown,
            });
        }
        let buffer = PyUntypedBuffer::get(object)?;
        if !buffer.is_c_contiguous() || buffer.len_bytes() != bytes {
            return Err(PyValueError::new_err(format!(
                "a tensor of {bytes} contiguous bytes was expected, got {} bytes{}",
                buffer.len_bytes(),
                if buffer.is_c_contiguous() {
                    ""
                } else {
                    ", not contiguous"
                }
            )));
        }
        Ok(Side::Buffer(buffer))
    }

    fn source(&self) -> Source<'_> {
        match self {
            // SAFETY: the buffer stays exported (and its object alive) for as long as `self`.
            Side::Buffer(buffer) => Source::Memory(unsafe {
                std::slice::from_raw_parts(buffer.buf_ptr().cast::<u8>(), buffer.len_bytes())
            }),
            Side::File {
                file,
                offset,
                shown,
            } => Source::File {
                file,
                offset: *offset,
                shown,
            },
        }
    }
}

/// The statistics of each `(dtype name, elements, reference, candidate)` in `pairs`, judged by
/// the `(atol, rtol, ulp limit or -1, equal_nan)` of the same position in `tolerances`. `chunk`,
/// `piece`, `sub_block` (elements) and `threads` cut the work finer than it would be (tests cross
/// every boundary).
#[pyfunction]
#[pyo3(signature = (pairs, tolerances, *, chunk=None, piece=None, sub_block=None, threads=None))]
fn measure_many(
    py: Python<'_>,
    pairs: Vec<(String, usize, Bound<'_, PyAny>, Bound<'_, PyAny>)>,
    tolerances: Vec<(f64, f64, i64, bool)>,
    chunk: Option<usize>,
    piece: Option<usize>,
    sub_block: Option<usize>,
    threads: Option<usize>,
) -> PyResult<Vec<Measured>> {
    if pairs.len() != tolerances.len() {
        return Err(PyValueError::new_err(format!(
            "{} pairs but {} tolerances",
            pairs.len(),
            tolerances.len()
        )));
    }
    let mut sides = Vec::with_capacity(pairs.len());
    for (name, size, reference, candidate) in &pairs {
        let dtype = Dtype::named(name).ok_or_else(|| {
            PyValueError::new_err(format!(
                "the kernel measures F16, BF16, F32 and F64, not {name}"
            ))
        })?;
        let bytes = size * dtype.size();
        sides.push((
            dtype,
            *size,
            Side::from_python(reference, bytes)?,
            Side::from_python(candidate, bytes)?,
        ));
    }
    let batch: Vec<Pair> = sides
        .iter()
        .zip(&tolerances)
        .map(
            |((dtype, size, reference, candidate), &(atol, rtol, ulp_limit, equal_nan))| Pair {
                dtype: *dtype,
                size: *size,
                reference: reference.source(),
                candidate: candidate.source(),
                tolerance: Tolerance {
                    atol,
                    rtol,
                    ulp_limit,
                    equal_nan,
                },
            },
        )
        .collect();
    let grain = Grain {
        chunk,
        piece,
        sub_block,
        threads,
    };
    let measured = py
        .detach(|| batch::measure_many(&batch, grain))
        .map_err(read_error)?;
    Ok(measured.into_iter().map(python_stats).collect())
}

fn python_stats(s: Stats) -> Measured {
    let max_ulp = (s.max_ulp_at >= 0).then_some(s.max_ulp);
    (
        s.n,
        s.mismatched,
        s.max_abs_diff,
        s.worst,
        s.max_rel_diff,
        max_ulp,
        s.max_ulp_at,
        s.examples,
        s.nan_reference,
        s.nan_candidate,
    )
}

/// A short read is a file truncated while being read (EOFError, which pita reports as a usage
/// error); any other error is the system's (OSError).
fn read_error(failed: ReadError) -> PyErr {
    if failed.error.kind() == std::io::ErrorKind::UnexpectedEof {
        PyEOFError::new_err(format!(
            "{}: the file was truncated while being read",
            failed.shown
        ))
    } else {
        PyOSError::new_err(format!("{}: {}", failed.shown, failed.error))
    }
}

#[pymodule]
fn pita_kernel(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(measure_many, module)?)?;
    module.add("EXAMPLES", measure::EXAMPLES)?;
    module.add("ULP_UNBOUNDED", measure::ULP_UNBOUNDED)?;
    Ok(())
}
