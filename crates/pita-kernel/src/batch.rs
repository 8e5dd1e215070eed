//! A batch of tensor pairs measured by a few threads that share it by bytes, not by pair: the
//! batch is cut into pieces of at most PIECE_BYTES a side (a small pair is one piece, a large
//! one several), the threads take the next piece as they finish one (a thread the system holds
//! back delays no other), and the pieces of each pair are merged in order. Tensors left in their
//! file are read with pread, a chunk at a time, into one reused buffer per side and thread, so
//! the data stays in cache between the read and the screen.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::format::{Format, BF16, F16, F32, F64};
use crate::measure::{Stats, Sweep, Tolerance};

pub const CHUNK_BYTES: usize = 512 << 10; // read at a time by each thread, a side: both sides stay in L2 cache
pub const SUB_BLOCK: usize = 2048; // elements a screen settles at once; a rescan costs about this many scalar steps
pub const PIECE_BYTES: usize = 4 << 20; // a side: enough that each piece's first, rescanned sub-block costs nothing
pub const MAX_THREADS: usize = 8;
const BYTES_PER_THREAD: usize = 1 << 20; // less than this per thread costs more in starting it than it saves

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    F16,
    BF16,
    F32,
    F64,
}

impl Dtype {
    pub fn named(name: &str) -> Option<Dtype> {
        Some(match name {
            "F16" => Dtype::F16,
            "BF16" => Dtype::BF16,
            "F32" => Dtype::F32,
            "F64" => Dtype::F64,
            _ => return None,
        })
    }

    pub fn size(self) -> usize {
        match self {
            Dtype::F16 | Dtype::BF16 => 2,
            Dtype::F32 => 4,
            Dtype::F64 => 8,
        }
    }
}

/// Where a tensor's bytes are: in memory, or at `offset` of an open file (`shown` names it in errors).
pub enum Source<'a> {
    Memory(&'a [u8]),
    File {
        file: &'a File,
        offset: u64,
        shown: &'a str,
    },
}

/// An error reading a file, with the file as messages show it.
#[derive(Debug)]
pub struct ReadError {
    pub shown: String,
    pub error: io::Error,
}

impl Source<'_> {
    /// Elements `first..last` as a slice: borrowed where the memory is aligned, else read or
    /// copied into `buffer`.
    fn elements<'s, F: Format>(
        &'s self,
        first: usize,
        last: usize,
        buffer: &'s mut Vec<u64>,
    ) -> Result<&'s [F::Raw], ReadError> {
        let size = std::mem::size_of::<F::Raw>();
        let (count, bytes) = (last - first, (last - first) * size);
        if let Source::Memory(memory) = self {
            let wanted = &memory[first * size..last * size];
            if wanted.as_ptr().align_offset(std::mem::align_of::<F::Raw>()) == 0 {
                // SAFETY: aligned, in bounds, and every bit pattern is a valid unsigned integer.
                return Ok(unsafe { std::slice::from_raw_parts(wanted.as_ptr().cast(), count) });
            }
        }
        buffer.resize(bytes.div_ceil(8), 0);
        // SAFETY: the buffer holds at least `bytes` bytes, aligned for any raw element type.
        let target =
            unsafe { std::slice::from_raw_parts_mut(buffer.as_mut_ptr().cast::<u8>(), bytes) };
        match self {
            Source::Memory(memory) => target.copy_from_slice(&memory[first * size..last * size]),
            Source::File {
                file,
                offset,
                shown,
            } => file
                .read_exact_at(target, offset + (first * size) as u64)
                .map_err(|error| ReadError {
                    shown: shown.to_string(),
                    error,
                })?,
        }
        // SAFETY: as above.
        Ok(unsafe { std::slice::from_raw_parts(buffer.as_ptr().cast(), count) })
    }
}

pub struct Pair<'a> {
    pub dtype: Dtype,
    pub size: usize,
    pub reference: Source<'a>,
    pub candidate: Source<'a>,
    pub tolerance: Tolerance,
}

/// How the work is cut: elements per chunk (None: CHUNK_BYTES a side), per piece (None:
/// PIECE_BYTES a side), per sub-block, and threads (None: by the batch's bytes and the cores
/// available).
#[derive(Clone, Copy, Default)]
pub struct Grain {
    pub chunk: Option<usize>,
    pub piece: Option<usize>,
    pub sub_block: Option<usize>,
    pub threads: Option<usize>,
}

/// A range of one pair's elements that one thread measures.
struct Piece {
    pair: usize,
    start: usize,
    stop: usize,
}

/// The statistics of every pair, in order.
pub fn measure_many(pairs: &[Pair], grain: Grain) -> Result<Vec<Stats>, ReadError> {
    let pieces = pieces(pairs, grain);
    let bytes: usize = pairs.iter().map(|p| p.size * p.dtype.size()).sum();
    let threads = grain
        .threads
        .unwrap_or_else(|| {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            cores.min(MAX_THREADS).min(bytes.div_ceil(BYTES_PER_THREAD))
        })
        .clamp(1, pieces.len().max(1));
    let next = AtomicUsize::new(0);
    let measured: Vec<Mutex<Option<Stats>>> = pieces.iter().map(|_| Mutex::new(None)).collect();
    let work = || -> Result<(), ReadError> {
        let mut buffers = (Vec::new(), Vec::new());
        loop {
            let k = next.fetch_add(1, Ordering::Relaxed);
            let Some(piece) = pieces.get(k) else {
                return Ok(());
            };
            let stats = measure_piece(&pairs[piece.pair], piece, grain, &mut buffers).inspect_err(
                |_| {
                    next.store(pieces.len(), Ordering::Relaxed); // the other threads stop at their next piece
                },
            )?;
            *measured[k]
                .lock()
                .expect("no thread panics holding a result") = Some(stats);
        }
    };
    if threads == 1 {
        work()?;
    } else {
        let results: Vec<Result<(), ReadError>> = std::thread::scope(|scope| {
            let running: Vec<_> = (0..threads).map(|_| scope.spawn(work)).collect();
            running
                .into_iter()
                .map(|thread| thread.join().expect("a measuring thread panicked"))
                .collect()
        });
        results.into_iter().collect::<Result<(), ReadError>>()?;
    }
    let mut found = vec![Stats::default(); pairs.len()];
    for (piece, stats) in pieces.iter().zip(measured) {
        found[piece.pair].merge(
            &stats
                .into_inner()
                .expect("no thread panics holding a result")
                .expect("every piece is measured"),
        );
    }
    Ok(found)
}

fn chunk_of(dtype: Dtype, grain: Grain) -> usize {
    grain.chunk.unwrap_or(CHUNK_BYTES / dtype.size()).max(1)
}

/// Every pair cut in pieces of `grain.piece` elements (PIECE_BYTES a side), in order.
fn pieces(pairs: &[Pair], grain: Grain) -> Vec<Piece> {
    let mut pieces = Vec::new();
    for (pair, p) in pairs.iter().enumerate() {
        let length = grain.piece.unwrap_or(PIECE_BYTES / p.dtype.size()).max(1);
        pieces.extend((0..p.size).step_by(length).map(|start| Piece {
            pair,
            start,
            stop: p.size.min(start + length),
        }));
    }
    pieces
}

fn measure_piece(
    pair: &Pair,
    piece: &Piece,
    grain: Grain,
    buffers: &mut (Vec<u64>, Vec<u64>),
) -> Result<Stats, ReadError> {
    match pair.dtype {
        Dtype::F16 => measure_piece_of::<F16>(pair, piece, grain, buffers),
        Dtype::BF16 => measure_piece_of::<BF16>(pair, piece, grain, buffers),
        Dtype::F32 => measure_piece_of::<F32>(pair, piece, grain, buffers),
        Dtype::F64 => measure_piece_of::<F64>(pair, piece, grain, buffers),
    }
}

fn measure_piece_of<F: Format>(
    pair: &Pair,
    piece: &Piece,
    grain: Grain,
    buffers: &mut (Vec<u64>, Vec<u64>),
) -> Result<Stats, ReadError> {
    let mut sweep = Sweep::new(pair.tolerance, grain.sub_block.unwrap_or(SUB_BLOCK).max(1));
    let chunk = chunk_of(pair.dtype, grain);
    for first in (piece.start..piece.stop).step_by(chunk) {
        let last = piece.stop.min(first + chunk);
        let reference = pair.reference.elements::<F>(first, last, &mut buffers.0)?;
        let candidate = pair.candidate.elements::<F>(first, last, &mut buffers.1)?;
        sweep.chunk::<F>(reference, candidate, first as i64);
    }
    Ok(sweep.stats)
}
