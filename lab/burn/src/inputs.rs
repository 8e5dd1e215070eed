//! Deterministic inputs, bit-identical to `pita.inputs` on the Python side.

use sha2::{Digest, Sha256};

/// `0.1·k − 0.5` for `k = start..start+n`, computed in f64 and rounded to f32.
pub fn ramp(n: usize, start: usize) -> Vec<f32> {
    (start..start + n)
        .map(|k| (0.1f64 * k as f64 - 0.5) as f32)
        .collect()
}

/// sha256 (hex) of the little-endian bytes of every input, in the order given.
pub fn inputs_sha256(inputs: &[&[f32]]) -> String {
    let mut hasher = Sha256::new();
    for values in inputs {
        for value in values.iter() {
            hasher.update(value.to_le_bytes());
        }
    }
    hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ramp_starts_at_minus_half_and_steps_by_a_tenth() {
        let values = ramp(12, 0);
        assert_eq!(values[0], -0.5);
        assert_eq!(values[5], 0.0);
        assert_eq!(values[11], (1.1f64 - 0.5) as f32);
        assert_eq!(ramp(2, 5), vec![values[5], values[6]]);
    }

    #[test]
    fn hash_depends_on_every_input_and_their_order() {
        let a = ramp(3, 0);
        let b = ramp(3, 3);
        assert_ne!(inputs_sha256(&[&a, &b]), inputs_sha256(&[&b, &a]));
        assert_eq!(inputs_sha256(&[&a, &b]).len(), 64);
    }
}
