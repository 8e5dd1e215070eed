import numpy as np

from pita_lab.inputs import inputs_sha256, ramp


def test_ramp_is_computed_in_float64_then_rounded():
    values = ramp(12)
    assert values.dtype == np.float32
    exact = [np.float32(0.1 * k - 0.5) for k in range(12)]
    assert values.tobytes() == np.array(exact, dtype=np.float32).tobytes()
    assert ramp(3, start=5).tolist() == values[5:8].tolist()


def test_hash_covers_every_input_in_order():
    a, b = ramp(3), ramp(3, start=3)
    assert inputs_sha256(a, b) != inputs_sha256(b, a)
    assert inputs_sha256(a, b) == inputs_sha256(list(map(float, a)), b)
