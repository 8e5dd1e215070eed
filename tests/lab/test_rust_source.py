"""The locked crate sources: which methods an impl or trait block defines, and the claim that
reads them (`BlockDefines`), on a fixture crate and on burn's real locked sources."""

import pytest

from pita_lab import repo_root, rust_source
from pita_lab.claims import BlockDefines
from pita_lab.rust_source import block_methods, locked_file

FIXTURE = '''
use crate::Backend;

/// `fn gelu_backward` in a doc comment is not a method.
impl Ops<Self> for Inherits {
    fn relu(x: T) -> T {
        let nested = |y| { fn gelu_backward() {} y }; // a fn inside a body is not a method
        nested(x)
    }
    // fn gelu_backward(x: T) -> T { x }
    /* fn sigmoid(x: T) -> T { x } */
}

impl Ops<Self> for Quoted {
    fn relu(x: T) -> T {
        let brace = '}';
        let text = "} fn gelu_backward() {";
        x
    }
    fn gelu(x: T) -> T { x }
}

impl<B: Backend> Ops<Self> for Overrides<B> {
    fn gelu_backward(x: [f32; 2], grad: T) -> T {
        exact_derivative(x, grad)
    }
}

impl Ops<Self> for Empty {}

trait Ops<B> {
    fn declared(x: [f32; 3]) -> T;
    fn gelu_backward(x: T, grad: T) -> T {
        tanh_derivative(x, grad)
    }
}
'''


def test_methods_are_the_block_s_own_not_nested_commented_or_quoted():
    assert list(block_methods(FIXTURE, "impl Ops<Self> for Inherits")) == ["relu"]
    assert list(block_methods(FIXTURE, "impl Ops<Self> for Quoted")) == ["relu", "gelu"]
    assert list(block_methods(FIXTURE, "impl Ops<Self> for Empty")) == []
    assert list(block_methods(FIXTURE, "trait Ops<B>")) == ["declared", "gelu_backward"]


def test_a_method_knows_its_line_and_body():
    method = block_methods(FIXTURE, "for Overrides<B>")["gelu_backward"]
    assert FIXTURE.splitlines()[method.line - 1].strip().startswith("fn gelu_backward")
    assert method.body.endswith("exact_derivative(x, grad)\n    }")
    assert block_methods(FIXTURE, "trait Ops<B>")["declared"].body == "fn declared(x: [f32; 3]) -> T;"


def test_a_missing_or_ambiguous_block_is_an_error():
    with pytest.raises(ValueError, match="0 blocks"):
        block_methods(FIXTURE, "impl Ops<Self> for Nothing")
    with pytest.raises(ValueError, match="4 blocks"):
        block_methods(FIXTURE, "Ops<Self> for")


@pytest.fixture
def fixture_crate(tmp_path, monkeypatch):
    """A crate `fixture-crate` 0.1.0 holding FIXTURE, where the claim looks for locked crates."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "ops.rs").write_text(FIXTURE)
    monkeypatch.setattr(rust_source, "package_dirs", lambda root: {"fixture-crate": ("0.1.0", tmp_path)})
    return tmp_path


def claim(block, defines=True, contains=""):
    return BlockDefines("c", "", "fixture-crate", "src/ops.rs", block, "gelu_backward", defines, contains)


def test_block_defines_fails_when_an_inheriting_impl_gains_the_method(fixture_crate):
    assert claim("for Inherits", defines=False).check(None, fixture_crate).ok
    assert claim("for Empty", defines=False).check(None, fixture_crate).ok
    assert not claim("for Overrides<B>", defines=False).check(None, fixture_crate).ok
    added = FIXTURE.replace("impl Ops<Self> for Empty {}", "impl Ops<Self> for Empty {\n    fn gelu_backward(x: T, g: T) -> T { g }\n}")
    (fixture_crate / "src" / "ops.rs").write_text(added)
    result = claim("for Empty", defines=False).check(None, fixture_crate)
    assert not result.ok and result.observed.startswith("fn gelu_backward at line")


def test_block_defines_checks_the_body_and_reports_what_it_read(fixture_crate):
    result = claim("trait Ops<B>", contains="tanh_derivative(").check(None, fixture_crate)
    assert result.ok and "fixture-crate 0.1.0 src/ops.rs" in result.expected
    assert not claim("trait Ops<B>", contains="exact_derivative(").check(None, fixture_crate).ok
    assert not claim("for Inherits").check(None, fixture_crate).ok
    missing = claim("for Nothing", defines=False).check(None, fixture_crate)
    assert not missing.ok and missing.observed.startswith("cannot observe")


@pytest.mark.integration
def test_burn_s_locked_backends_are_readable_without_building_them():
    """burn-cubecl and burn-fusion are in the lock (cargo resolves it for every feature) though
    the workspace builds neither: the claim reads them, and fails on an impl that overrides."""
    version, text = locked_file(repo_root(), "burn-cubecl", "src/ops/activation.rs")
    assert version == locked_file(repo_root(), "burn", "Cargo.toml")[0]
    assert "gelu_backward" not in block_methods(text, "for CubeBackend")
    flex = BlockDefines("f", "", "burn-flex", "src/ops/activation.rs", "for Flex", "gelu_backward", defines=False)
    assert not flex.check(None, repo_root()).ok
