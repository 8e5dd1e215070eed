import subprocess
import sys

import numpy as np
import pytest

import pita
from pita.dump import Dump
from pita.errors import UsageError
from pita.parity import ParityError


def test_assert_parity_passes_and_raises_with_the_report():
    reference = {"w": np.float32([0.1, 0.2]), "b": np.float32([1.0])}
    assert pita.assert_parity(reference, {"w": np.float32([0.1, 0.2]), "b": np.float32([1.0])}).ok
    with pytest.raises(ParityError) as error:
        pita.assert_parity(reference, {"w": np.float32([0.4, 0.8]), "b": np.float32([1.0])})
    assert "candidate = 4 × reference" in str(error.value) and "MISMATCH" in str(error.value)
    assert error.value.result.tensors[1].name == "w"


def test_assert_parity_takes_torch_tensors_and_tolerances():
    torch = pytest.importorskip("torch")
    reference = {"w": torch.tensor([1.0, 2.0])}
    pita.assert_parity(reference, {"w": torch.tensor([1.0, 2.0 + 1e-4])}, atol=1e-3)
    with pytest.raises(ParityError):
        pita.assert_parity(reference, {"w": torch.tensor([1.0, 2.0 + 1e-4])}, atol=1e-6)


def user_suite(folder, source: str) -> subprocess.CompletedProcess:
    """A user's own test file run by pytest in a fresh process, with pita's plugin loaded."""
    (folder / "test_user.py").write_text(source)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(folder)],
                          cwd=folder, capture_output=True, text=True)


def test_the_pytest_plugin_loads_without_torch(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\npita_atol = 0.5\n")
    proc = user_suite(
        tmp_path,
        "import sys, numpy as np, pytest\n"
        "def test_close(assert_parity):\n"
        "    assert_parity({'w': np.float32([1.0])}, {'w': np.float32([1.4])})\n"
        "    assert 'torch' not in sys.modules\n"
        "def test_far(assert_parity):\n"
        "    with pytest.raises(AssertionError):\n"
        "        assert_parity({'w': np.float32([1.0])}, {'w': np.float32([1.6])})\n",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout


def test_assert_parity_has_the_cli_semantics_for_dtypes():
    half = {"w": np.float16([4.0])}, {"w": np.float16([4.003])}  # within float16's default rtol of 1e-3
    assert pita.assert_parity(*half).tensors[0].tolerance == "1e-05+0.001*|reference|"
    with pytest.raises(ParityError):
        pita.assert_parity(*half, atol=1e-6)  # given, atol applies to every float tensor
    with pytest.raises(ParityError, match="integers and bools compare exactly"):
        pita.assert_parity({"n": np.int64([3])}, {"n": np.int64([4])}, atol=10.0)


def test_assert_parity_takes_bfloat16_torch_tensors():
    torch = pytest.importorskip("torch")
    reference = {"w": torch.tensor([1.0, 2.0], dtype=torch.bfloat16)}
    assert pita.assert_parity(reference, {"w": torch.tensor([1.0, 2.0], dtype=torch.bfloat16)}).tensors[0].dtype == "BF16"
    with pytest.raises(ParityError, match="candidate = 2 × reference"):
        pita.assert_parity(reference, {"w": torch.tensor([2.0, 4.0], dtype=torch.bfloat16)})


def test_the_pytest_plugin_defaults_to_per_dtype_tolerances(tmp_path):
    proc = user_suite(
        tmp_path,
        "import numpy as np, pytest\n"
        "def test_half(assert_parity):\n"
        "    assert_parity({'w': np.float16([4.0])}, {'w': np.float16([4.003])})\n"
        "def test_single(assert_parity):\n"
        "    with pytest.raises(AssertionError):\n"
        "        assert_parity({'w': np.float32([4.0])}, {'w': np.float32([4.00001])})\n",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_dumps_of_other_inputs_are_refused_with_the_parameter_that_allows_them():
    reference = Dump({"w": np.float32([1.0])}, {"input_sha256": "aa"})
    candidate = Dump({"w": np.float32([1.0])}, {"input_sha256": "bb"})
    with pytest.raises(UsageError, match="; pass allow_input_mismatch=True to compare anyway$"):
        pita.assert_parity(reference, candidate)
    assert pita.assert_parity(reference, candidate, allow_input_mismatch=True).ok


def test_the_pytest_plugin_names_an_ini_value_that_is_not_a_number(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\npita_atol = abc\n")
    proc = user_suite(tmp_path, "def test_uses(assert_parity):\n    pass\n")
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR, proc.stdout + proc.stderr
    assert proc.stderr.strip() == "ERROR: pita_atol = 'abc' in the pytest ini file: not a number"
