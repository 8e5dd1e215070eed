//! The statistics of one range of a tensor pair, as pita's `stats_contract` defines them and
//! judges each element pair, in one pass.
//!
//! Nearly every element pair is looked at once, by a screen over a sub-block: written so that
//! LLVM vectorises it without fast-math (integer and boolean reductions only; float maxima are
//! not reduced but compared against the running ones), it counts mismatches and tells whether
//! the sub-block could change anything else (a non-finite value, a new largest |diff|, ULP
//! distance or relative difference, a mismatch while example positions are still wanted). Only
//! there an exact scalar rescan of the sub-block updates every statistic and position in order.
//! With rtol 0 and a narrow format (F16, BF16, F32) the screen runs in float32 first (twice the
//! lanes), with bounds rounded so that it decides exactly as float64 would, and hands over to the
//! float64 screen wherever float32 could round.
//! After a few training steps every element of a port differs by some ULPs, and maxima stop
//! growing after the first blocks, so nearly every sub-block is settled by the screen alone.

use crate::format::{magnitude, ordinal, ordinal32, ulp_distance, ulp_distance32, Format};

pub const EXAMPLES: usize = 5;
pub const ULP_UNBOUNDED: u64 = i64::MAX as u64;

/// What the contract reads of a tolerance; `ulp_limit` -1 when ULPs do not count.
#[derive(Clone, Copy, Debug)]
pub struct Tolerance {
    pub atol: f64,
    pub rtol: f64,
    pub ulp_limit: i64,
    pub equal_nan: bool,
}

/// `TensorStats` before `settled`: `worst` and `max_ulp_at` are -1 while every |diff| and ULP
/// distance is 0.
#[derive(Clone, Debug)]
pub struct Stats {
    pub n: u64,
    pub mismatched: u64,
    pub max_abs_diff: f64,
    pub worst: i64,
    pub max_rel_diff: f64,
    pub max_ulp: u64,
    pub max_ulp_at: i64,
    pub examples: Vec<i64>,
    pub nan_reference: u64,
    pub nan_candidate: u64,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            n: 0,
            mismatched: 0,
            max_abs_diff: 0.0,
            worst: -1,
            max_rel_diff: 0.0,
            max_ulp: 0,
            max_ulp_at: -1,
            examples: Vec::new(),
            nan_reference: 0,
            nan_candidate: 0,
        }
    }
}

impl Stats {
    /// Adds the statistics of the elements after these (ties keep the earlier position), as
    /// `TensorStats.merge` does.
    pub fn merge(&mut self, other: &Stats) {
        self.n += other.n;
        self.mismatched += other.mismatched;
        if other.worst >= 0 && (self.worst < 0 || other.max_abs_diff > self.max_abs_diff) {
            (self.max_abs_diff, self.worst) = (other.max_abs_diff, other.worst);
        }
        self.max_rel_diff = self.max_rel_diff.max(other.max_rel_diff);
        if other.max_ulp_at >= 0 && (self.max_ulp_at < 0 || other.max_ulp > self.max_ulp) {
            (self.max_ulp, self.max_ulp_at) = (other.max_ulp, other.max_ulp_at);
        }
        let room = EXAMPLES - self.examples.len();
        self.examples.extend(other.examples.iter().take(room));
        self.nan_reference += other.nan_reference;
        self.nan_candidate += other.nan_candidate;
    }
}

/// The float32 screen's relative-difference filter, at most `max_rel`, such that
/// `diff > filter * |x|` in float32 holds for every element whose diff / |x| (rounded in float64)
/// exceeds `max_rel`, wherever the product is a normal float32 (the screen is unsure elsewhere).
/// For F16 and BF16, `max_rel` cut to the bits that keep the product exact: a tie with a short
/// `max_rel` (k ULPs at a power of two, the usual largest) then passes the screen. For F32, 2**-20
/// below `max_rel`, so that the product's rounding (2**-24 relative) cannot lift it to such a diff.
fn rel_filter32<F: Format>(max_rel: f64) -> f32 {
    if F::PRECISION < 24 {
        let dropped = 53 - (24 - F::PRECISION);
        down32(f64::from_bits(max_rel.to_bits() & !((1u64 << dropped) - 1)))
    } else {
        down32(max_rel * (1.0 - f64::powi(2.0, -20)))
    }
}

/// The largest float32 at most `value`: a float32 is above it exactly when it is above `value`.
fn down32(value: f64) -> f32 {
    let rounded = value as f32;
    if f64::from(rounded) > value {
        rounded.next_down()
    } else {
        rounded
    }
}

/// `fn $name<F>(args) -> R` runs `$body` (an `#[inline(always)]` function) compiled for the
/// widest vector unit the processor has: AVX-512, AVX2, or the baseline. Rust never contracts
/// a multiply and an add, so the arithmetic is the same on every one.
macro_rules! vectorised {
    ($name:ident = $body:ident($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        fn $name<F: Format>($($arg: $ty),*) -> $ret {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl")]
                unsafe fn avx512<F: Format>($($arg: $ty),*) -> $ret {
                    $body::<F>($($arg),*)
                }
                #[target_feature(enable = "avx2")]
                unsafe fn avx2<F: Format>($($arg: $ty),*) -> $ret {
                    $body::<F>($($arg),*)
                }
                if has_avx512() {
                    // SAFETY: the processor has these features.
                    return unsafe { avx512::<F>($($arg),*) };
                }
                if std::is_x86_feature_detected!("avx2") {
                    // SAFETY: as above.
                    return unsafe { avx2::<F>($($arg),*) };
                }
            }
            $body::<F>($($arg),*)
        }
    };
}

#[cfg(target_arch = "x86_64")]
fn has_avx512() -> bool {
    std::is_x86_feature_detected!("avx512f")
        && std::is_x86_feature_detected!("avx512bw")
        && std::is_x86_feature_detected!("avx512dq")
        && std::is_x86_feature_detected!("avx512vl")
}

struct Screen {
    mismatches: u64,
    changes: bool,
    top_ulp: u64,
}

/// (mismatches, whether any statistic but the count may change, largest ULP distance) of a
/// sub-block; the count is right when nothing else may change. `max_abs` must be finite, so
/// that a non-finite pair (its diff NaN or infinite) always counts as a change. A diff / |x|
/// that rounds above `max_rel` exceeds it by half its ULP (2**-53 relative at least), more than
/// the product `max_rel * |x|` rounds by where normal: then `diff > max_rel * |x|` sees it, and
/// a tie (diff exactly `max_rel * |x|`) does not; subnormal products count as changes.
#[inline(always)]
#[allow(clippy::neg_cmp_op_on_partial_ord)] // `!(a <= b)` holds for NaN, on purpose
fn screen_body<F: Format>(
    reference: &[F::Raw],
    candidate: &[F::Raw],
    tolerance: &Tolerance,
    ulp_cut: u64,
    max_abs: f64,
    max_rel: f64,
) -> Screen {
    let (mut mismatches, mut changes, mut top_ulp) = (0u64, false, 0u64);
    for (&a, &b) in reference.iter().zip(candidate) {
        let ulp = ulp_distance(ordinal::<F>(a), ordinal::<F>(b));
        top_ulp = top_ulp.max(ulp);
        let (x, y) = (F::to_f64(a), F::to_f64(b));
        let diff = (y - x).abs();
        // `!(<=)` rather than `>`, deliberately: a NaN counts as above every bound, so an allowance
        // of NaN (rtol=inf times 0) fails, as on the rescan.
        mismatches +=
            u64::from(!(diff <= tolerance.atol + tolerance.rtol * x.abs()) & (ulp > ulp_cut));
        let product = max_rel * x.abs();
        // A NaN product (an infinite filter times 0) keeps max_abs, as Python's min() does.
        let bound = if product < max_abs { product } else { max_abs };
        changes |= !(diff <= bound) | ((product <= f64::MIN_POSITIVE) & (diff > 0.0));
    }
    Screen {
        mismatches,
        changes,
        top_ulp,
    }
}

vectorised!(screen = screen_body(reference: &[F::Raw], candidate: &[F::Raw], tolerance: &Tolerance, ulp_cut: u64, max_abs: f64, max_rel: f64) -> Screen);

struct Screen32 {
    mismatches: u32,
    changes: bool,
    unsure: bool,
    top_ulp: u32,
}

/// `screen_body` in float32 for a narrow format and rtol 0, with the bounds rounded down to
/// float32: unless unsure, it says what `screen_body` would, or `changes` errs towards true.
/// Unsure where the subtraction may round (see `Format::EXACT_ULPS`) or the filter product is
/// subnormal. Counts stay 32 bits wide: a sub-block holds fewer than 2**32 elements.
#[inline(always)]
#[allow(clippy::neg_cmp_op_on_partial_ord)] // `!(a <= b)` holds for NaN, on purpose
fn screen32_body<F: Format>(
    reference: &[F::Raw],
    candidate: &[F::Raw],
    atol: f32,
    ulp_cut: u32,
    max_abs: f32,
    rel_filter: f32,
) -> Screen32 {
    let (mut mismatches, mut changes, mut unsure, mut top_ulp) = (0u32, false, false, 0u32);
    for (&a, &b) in reference.iter().zip(candidate) {
        let ulp = ulp_distance32(ordinal32::<F>(a), ordinal32::<F>(b));
        top_ulp = top_ulp.max(ulp);
        let (x, y) = (F::to_f32(a), F::to_f32(b));
        let diff = (y - x).abs();
        let product = rel_filter * x.abs();
        unsure |= (ulp >= F::EXACT_ULPS) | ((product < f32::MIN_POSITIVE) & (product > 0.0));
        mismatches += u32::from(!(diff <= atol) & (ulp > ulp_cut));
        let bound = if product < max_abs { product } else { max_abs };
        changes |= !(diff <= bound);
    }
    Screen32 {
        mismatches,
        changes,
        unsure,
        top_ulp,
    }
}

vectorised!(screen32 = screen32_body(reference: &[F::Raw], candidate: &[F::Raw], atol: f32, ulp_cut: u32, max_abs: f32, rel_filter: f32) -> Screen32);

/// Most elements a sub-block holds: the float32 screen counts them in 32 bits.
pub const MAX_SUB_BLOCK: usize = 1 << 20;

/// The running statistics of one range, fed chunk after chunk in order.
pub struct Sweep {
    tolerance: Tolerance,
    ulp_cut: u64,
    rel_filter32: f32,
    atol32: f32,
    sub_block: usize,
    pub stats: Stats,
}

impl Sweep {
    pub fn new(tolerance: Tolerance, sub_block: usize) -> Self {
        // On the screen a finite pair fails by ULPs when further apart than this; apart at all without ULPs.
        let ulp_cut = tolerance.ulp_limit.max(0) as u64;
        let (atol32, sub_block) = (down32(tolerance.atol), sub_block.clamp(1, MAX_SUB_BLOCK));
        Sweep {
            tolerance,
            ulp_cut,
            rel_filter32: 0.0,
            atol32,
            sub_block,
            stats: Stats::default(),
        }
    }

    /// Elements of a chunk whose first one is at flat position `offset`.
    pub fn chunk<F: Format>(&mut self, reference: &[F::Raw], candidate: &[F::Raw], offset: i64) {
        self.stats.n += reference.len() as u64;
        for start in (0..reference.len()).step_by(self.sub_block) {
            let stop = reference.len().min(start + self.sub_block);
            let (r, c) = (&reference[start..stop], &candidate[start..stop]);
            let max_abs = self.stats.max_abs_diff.min(f64::MAX);
            let narrow = (F::NARROW && self.tolerance.rtol == 0.0).then(|| {
                let ulp_cut = self.ulp_cut.min(u64::from(u32::MAX)) as u32;
                screen32::<F>(
                    r,
                    c,
                    self.atol32,
                    ulp_cut,
                    down32(max_abs),
                    self.rel_filter32,
                )
            });
            let found = match narrow {
                Some(s) if !s.changes && !s.unsure => Screen {
                    mismatches: u64::from(s.mismatches),
                    changes: false,
                    top_ulp: u64::from(s.top_ulp),
                },
                _ => screen::<F>(
                    r,
                    c,
                    &self.tolerance,
                    self.ulp_cut,
                    max_abs,
                    self.stats.max_rel_diff,
                ),
            };
            let settled = !found.changes
                && found.top_ulp <= self.stats.max_ulp
                && (found.mismatches == 0 || self.stats.examples.len() == EXAMPLES);
            if settled {
                self.stats.mismatched += found.mismatches;
            } else {
                self.rescan::<F>(r, c, offset + start as i64);
            }
        }
    }

    /// Every statistic and position, element after element.
    fn rescan<F: Format>(&mut self, reference: &[F::Raw], candidate: &[F::Raw], offset: i64) {
        let t = self.tolerance;
        let stats = &mut self.stats;
        for (i, (&a, &b)) in reference.iter().zip(candidate).enumerate() {
            let position = offset + i as i64;
            let (nan_reference, nan_candidate) = (
                magnitude::<F>(a) > F::INFINITY,
                magnitude::<F>(b) > F::INFINITY,
            );
            let finite = magnitude::<F>(a) < F::INFINITY && magnitude::<F>(b) < F::INFINITY;
            let (x, y) = (F::to_f64(a), F::to_f64(b));
            let same = x == y || (t.equal_nan && nan_reference && nan_candidate);
            let (diff, ulp, passed) = if finite {
                let diff = (y - x).abs();
                let ulp = ulp_distance(ordinal::<F>(a), ordinal::<F>(b)).min(ULP_UNBOUNDED);
                let by_ulp = t.ulp_limit >= 0 && ulp <= t.ulp_limit as u64;
                (
                    diff,
                    ulp,
                    same || diff <= t.atol + t.rtol * x.abs() || by_ulp,
                )
            } else {
                let ulp = if same || (nan_reference && nan_candidate) {
                    0
                } else {
                    ULP_UNBOUNDED
                };
                (if same { 0.0 } else { f64::INFINITY }, ulp, same)
            };
            let rel = if diff == 0.0 {
                0.0
            } else if diff.is_infinite() || x == 0.0 {
                f64::INFINITY
            } else {
                diff / x.abs()
            };
            stats.nan_reference += u64::from(nan_reference);
            stats.nan_candidate += u64::from(nan_candidate);
            if !passed {
                stats.mismatched += 1;
                if stats.examples.len() < EXAMPLES {
                    stats.examples.push(position);
                }
            }
            if diff > stats.max_abs_diff {
                (stats.max_abs_diff, stats.worst) = (diff, position);
            }
            if ulp > stats.max_ulp {
                (stats.max_ulp, stats.max_ulp_at) = (ulp, position);
            }
            if rel > stats.max_rel_diff {
                stats.max_rel_diff = rel;
                self.rel_filter32 = rel_filter32::<F>(rel);
            }
        }
    }
}
