"""GEMMLAB_ARCH without a GPU: which targets gemmlab.runtime.compiler.target accepts, with this GPU's
architecture stood in by a monkeypatch (tests/gpu/test_compile_target.py runs the mode for real)."""

import pytest

from gemmlab.runtime import compiler


@pytest.fixture
def on_an_h200(monkeypatch):
    monkeypatch.setattr(compiler, "arch", lambda: "sm_90")
    monkeypatch.delenv(compiler.ARCH_VARIABLE, raising=False)
    return monkeypatch


def test_unset_means_this_gpu(on_an_h200):
    assert compiler.target() == "sm_90"
    on_an_h200.setenv(compiler.ARCH_VARIABLE, " ")
    assert compiler.target() == "sm_90"


@pytest.mark.parametrize("value", ["compute_75", "compute_80", "compute_90", "sm_90"])
def test_virtual_architectures_up_to_this_gpu(value, on_an_h200):
    on_an_h200.setenv(compiler.ARCH_VARIABLE, value)
    assert compiler.target() == value


@pytest.mark.parametrize("value, message", [("compute_100", "newer than this GPU"),
                                            ("compute_99", "newer than this GPU"),
                                            ("sm_80", "not a virtual architecture"), ("75", "not a virtual architecture")])
def test_what_cannot_run_here_is_refused_in_one_sentence(value, message, on_an_h200):
    on_an_h200.setenv(compiler.ARCH_VARIABLE, value)
    with pytest.raises(ValueError, match=message) as err:
        compiler.target()
    assert str(err.value).count(". ") == 0 and str(err.value).endswith(".")
