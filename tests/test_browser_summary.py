"""The test run's last lines say how many browser tests ran (tests/conftest.py), so the site's
browser tests cannot skip quietly where chromium or playwright is missing."""

import os
import subprocess
import sys

from conftest import ROOT, browser_summary


def test_the_summary_counts_what_ran_and_why_the_rest_skipped():
    assert browser_summary({"a": "passed", "b": "passed"}, []) == "browser tests: 2 ran (2 passed)"
    assert browser_summary({"a": "passed", "b": "failed"}, []) == "browser tests: 2 ran (1 passed, 1 failed)"
    assert browser_summary({"a": "skipped", "b": "skipped"}, ["/usr/bin/chromium is missing"]) == \
        "browser tests: 0 ran, 2 skipped (/usr/bin/chromium is missing)"


def test_a_run_without_playwright_says_the_browser_tests_skipped(tmp_path):
    """A real pytest run of one browser test with a `playwright` that cannot be imported."""
    (tmp_path / "playwright").mkdir()
    (tmp_path / "playwright" / "__init__.py").write_text('raise ImportError("no playwright here")\n', encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/lab/test_site.py", "-k", "root_leads_to_the_book"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "browser tests: 0 ran, 1 skipped (the Python package playwright is missing (scripts/setup installs it))" in proc.stdout.splitlines()
