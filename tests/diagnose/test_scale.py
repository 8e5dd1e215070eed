import numpy as np

from conftest import f32
from pita import diagnose
from pita.compare import Tolerance
from pita.diagnose import scale
from pita.diagnose.base import Context, Pair, format_factor


def detect(reference, candidate, batch_sizes=()):
    return scale.detect(Pair(f32(reference), f32(candidate), Tolerance(), Context(batch_sizes=set(batch_sizes))))


def test_finds_the_batch_factor_and_names_the_unreduced_loss():
    found = detect([0.1075, 0.0425, -0.0225], [0.43, 0.17, -0.09], batch_sizes=[4])
    assert format_factor(found.params["factor"]) == "4"
    assert "batch size" in found.message and "not reduced" in found.message
    assert found.residual < 1e-7


def test_names_the_inverse_when_the_reference_was_not_reduced():
    found = detect([0.43, 0.17, -0.09], [0.1075, 0.0425, -0.0225], batch_sizes=[4])
    assert format_factor(found.params["factor"]) == "1/4" and "reference's loss" in found.message


def test_does_not_explain_unrelated_random_differences():
    rng = np.random.default_rng(0)
    for _ in range(200):
        reference = rng.standard_normal(16).astype(np.float32)
        candidate = rng.standard_normal(16).astype(np.float32)
        assert detect(reference, candidate) is None


def test_a_huge_factor_on_some_elements_is_no_scale_when_the_rest_do_not_follow():
    """Variances clamped to eps blow up a few gradient entries by ~5e5 while the rest stay as they
    were: the median ratio is huge, and dividing by it leaves about |reference|, which is tiny beside
    the error before but does not reproduce the reference."""
    reference = [-0.09, -0.08, -0.1, -0.07, -0.085]
    candidate = [-0.09 * 576247, -0.08 * 576247, -0.1 * 576247, -0.07, -0.085]
    assert detect(reference, candidate) is None
    assert format_factor(detect(reference, [v * 576247 for v in reference]).params["factor"]) == "576247"


def test_does_not_call_rounding_noise_or_a_sign_flip_a_scale():
    values = np.linspace(-1, 1, 9, dtype=np.float32)
    assert detect(values, np.nextafter(values, np.float32(2))) is None
    assert detect(values, -values) is None


def test_a_single_element_factor_stands_only_when_another_tensor_agrees():
    tol, context = Tolerance(), Context(batch_sizes={4})
    lone = diagnose.explain(f32([-0.65]), f32([-2.6]), tol, context)
    assert lone[0].tentative
    alone = [list(lone)]
    diagnose.corroborate(alone)
    assert alone == [[]]
    backed = [diagnose.explain(f32([-0.65]), f32([-2.6]), tol, context),
              diagnose.explain(f32([0.1, 0.2]), f32([0.4, 0.8]), tol, context)]
    diagnose.corroborate(backed)
    assert [d.kind for d in backed[0]] == ["scale"] and "same finding" in backed[0][0].message


def test_a_single_element_is_no_scale_unless_its_factor_is_a_count():
    # any two numbers are a scale of each other: a loss [2.3] against [2.9] says nothing, even
    # beside a tensor that shows the same factor
    tol, factor = Tolerance(), np.float32(2.9) / np.float32(2.3)
    loss = [diagnose.explain(f32([2.3]), f32([2.9]), tol, Context(batch_sizes={4})),
            diagnose.explain(f32([0.1, 0.2]), f32([0.1, 0.2]) * factor, tol, Context(batch_sizes={4}))]
    diagnose.corroborate(loss)
    assert loss[0] == [] and [d.kind for d in loss[1]] == ["scale"]
    assert detect([2.3], [2.9]) is None and detect([0.0, 2.3], [0.0, 2.9]) is None  # one nonzero element
    assert detect([2.3], [9.2], batch_sizes=[4]).tentative  # a count (the batch size): stands if corroborated
    assert detect([2.3], [6.9]).tentative and detect([0.6], [0.2]).tentative  # 3 classes, 1/3: counts too (p11a, p18a)
    assert detect([2.3], [2.3 * 2.5]) is None  # 2.5 is no count
