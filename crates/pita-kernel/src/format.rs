//! The four float formats, read from their raw little-endian bits: NaN and infinity told by the
//! exponent bits, exact float64 values, and ordinals for counting ULPs.

/// A float format whose elements are held as their raw bits (`Raw`).
pub trait Format: Send + Sync + 'static {
    type Raw: Copy + Default + Send + Sync + Into<u64>;
    const SIGN: u64;
    /// The magnitude bits of infinity: NaN above, finite below.
    const INFINITY: u64;
    /// Whether every value is a float32 too (F16, BF16, F32): then `to_f32` is exact, and the
    /// bits and ULP distances fit in 32 bits.
    const NARROW: bool;
    /// Significant bits, the leading one included.
    const PRECISION: u32;
    /// Distances below this many ULPs subtract exactly in the format itself (within a binade,
    /// Sterbenz; or both subnormal).
    const EXACT_ULPS: u32;
    /// The exact float64 value of an element.
    fn to_f64(raw: Self::Raw) -> f64;
    /// The float32 value of an element: exact where `NARROW`.
    fn to_f32(raw: Self::Raw) -> f32;
    /// The bits of a narrow element (truncated for float64).
    fn bits32(raw: Self::Raw) -> u32;
}

pub struct F16;
pub struct BF16;
pub struct F32;
pub struct F64;

impl Format for F16 {
    const PRECISION: u32 = 11;
    type Raw = u16;
    const NARROW: bool = true;
    const EXACT_ULPS: u32 = 1 << 10;
    const SIGN: u64 = 0x8000;
    const INFINITY: u64 = 0x7C00;
    #[inline(always)]
    fn to_f64(raw: u16) -> f64 {
        f64::from(f16_to_f32(raw))
    }
    #[inline(always)]
    fn to_f32(raw: u16) -> f32 {
        f16_to_f32(raw)
    }
    #[inline(always)]
    fn bits32(raw: u16) -> u32 {
        u32::from(raw)
    }
}

impl Format for BF16 {
    const PRECISION: u32 = 8;
    type Raw = u16;
    const NARROW: bool = true;
    const EXACT_ULPS: u32 = 1 << 7;
    const SIGN: u64 = 0x8000;
    const INFINITY: u64 = 0x7F80;
    #[inline(always)]
    fn to_f64(raw: u16) -> f64 {
        f64::from(f32::from_bits(u32::from(raw) << 16))
    }
    #[inline(always)]
    fn to_f32(raw: u16) -> f32 {
        f32::from_bits(u32::from(raw) << 16)
    }
    #[inline(always)]
    fn bits32(raw: u16) -> u32 {
        u32::from(raw)
    }
}

impl Format for F32 {
    const PRECISION: u32 = 24;
    type Raw = u32;
    const NARROW: bool = true;
    const EXACT_ULPS: u32 = 1 << 23;
    const SIGN: u64 = 0x8000_0000;
    const INFINITY: u64 = 0x7F80_0000;
    #[inline(always)]
    fn to_f64(raw: u32) -> f64 {
        f64::from(f32::from_bits(raw))
    }
    #[inline(always)]
    fn to_f32(raw: u32) -> f32 {
        f32::from_bits(raw)
    }
    #[inline(always)]
    fn bits32(raw: u32) -> u32 {
        raw
    }
}

impl Format for F64 {
    const PRECISION: u32 = 53;
    type Raw = u64;
    const NARROW: bool = false;
    const EXACT_ULPS: u32 = 0;
    const SIGN: u64 = 0x8000_0000_0000_0000;
    const INFINITY: u64 = 0x7FF0_0000_0000_0000;
    #[inline(always)]
    fn to_f64(raw: u64) -> f64 {
        f64::from_bits(raw)
    }
    #[inline(always)]
    fn to_f32(raw: u64) -> f32 {
        f64::from_bits(raw) as f32
    }
    #[inline(always)]
    fn bits32(raw: u64) -> u32 {
        raw as u32
    }
}

/// A float16 as the float32 of the same value, without branches (so that loops over it
/// vectorise): the magnitude bits shifted into float32's place are the value times 2**-112, exact
/// for subnormals too; infinity and NaN get float32's largest exponent back.
#[inline(always)]
pub fn f16_to_f32(raw: u16) -> f32 {
    let bits = u32::from(raw);
    let magnitude = (bits & 0x7FFF) << 13;
    let scaled = f32::from_bits(magnitude) * f32::from_bits(0x7780_0000); // 2**112
    let value = if bits & 0x7C00 == 0x7C00 {
        f32::from_bits(magnitude | 0x7F80_0000)
    } else {
        scaled
    };
    f32::from_bits(value.to_bits() | ((bits & 0x8000) << 16))
}

#[inline(always)]
pub fn magnitude<F: Format>(raw: F::Raw) -> u64 {
    raw.into() & (F::SIGN - 1)
}

/// The position of an element among its format's values: both zeros 0, one more per step away
/// from zero, negative below zero.
#[inline(always)]
pub fn ordinal<F: Format>(raw: F::Raw) -> i64 {
    let magnitude = magnitude::<F>(raw) as i64;
    if raw.into() & F::SIGN != 0 {
        -magnitude
    } else {
        magnitude
    }
}

/// `ordinal` of a narrow element, in 32 bits (the screen's lanes stay 32 bits wide).
#[inline(always)]
pub fn ordinal32<F: Format>(raw: F::Raw) -> i32 {
    let bits = F::bits32(raw);
    let magnitude = (bits & (F::SIGN as u32 - 1)) as i32;
    if bits & F::SIGN as u32 != 0 {
        -magnitude
    } else {
        magnitude
    }
}

/// `ulp_distance` of two narrow elements' ordinals: it fits in u32.
#[inline(always)]
pub fn ulp_distance32(a: i32, b: i32) -> u32 {
    let difference = (a as u32).wrapping_sub(b as u32);
    if a >= b {
        difference
    } else {
        difference.wrapping_neg()
    }
}

/// ULPs between two elements given as ordinals; it fits in u64 even for float64.
#[inline(always)]
pub fn ulp_distance(a: i64, b: i64) -> u64 {
    let difference = (a as u64).wrapping_sub(b as u64);
    if a >= b {
        difference
    } else {
        difference.wrapping_neg()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_float16_converts_exactly() {
        for raw in 0..=u16::MAX {
            let expected = half::f16::from_bits(raw).to_f32();
            let found = f16_to_f32(raw);
            assert!(
                found.to_bits() == expected.to_bits() || (found.is_nan() && expected.is_nan()),
                "{raw:#06x}"
            );
        }
    }

    #[test]
    fn every_bfloat16_converts_exactly() {
        for raw in 0..=u16::MAX {
            let expected = half::bf16::from_bits(raw).to_f64();
            let found = BF16::to_f64(raw);
            assert!(
                found.to_bits() == expected.to_bits() || (found.is_nan() && expected.is_nan()),
                "{raw:#06x}"
            );
        }
    }

    #[test]
    fn ulps_cross_zero_and_span_float64() {
        assert_eq!(
            ulp_distance(ordinal::<F32>(0x8000_0001), ordinal::<F32>(0x0000_0001)),
            2
        );
        assert_eq!(
            ulp_distance(ordinal::<F32>(0x8000_0000), ordinal::<F32>(0)),
            0
        );
        let largest = 0x7FEF_FFFF_FFFF_FFFF_u64;
        assert_eq!(
            ulp_distance(ordinal::<F64>(largest), ordinal::<F64>(largest | F64::SIGN)),
            2 * largest
        );
    }
}
