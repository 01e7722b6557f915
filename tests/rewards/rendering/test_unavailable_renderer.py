"""A renderer the workers cannot import (cairosvg without the cairo C library) is refused by name, with what to
install, while the pool's other kinds keep serving. The missing library is simulated by a ``cairocffi`` that raises
at import exactly as the real one does when ``libcairo`` is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

from rewards.rendering import RendererUnavailableError, RenderPool

SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8" fill="red"/></svg>'


@pytest.fixture
def no_libcairo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "cairocffi"
    fake.mkdir()
    (fake / "__init__.py").write_text('raise OSError(\'no library called "cairo-2" was found\\n'
                                      'no library called "cairo" was found\')\n')  # fmt: skip
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # the workers inherit it (RenderPool keeps PYTHONPATH)


def test_the_missing_library_is_named_and_other_kinds_still_render(no_libcairo: None) -> None:
    with RenderPool(workers=1, kinds=("svg", "matplotlib")) as pool:
        assert pool.render("matplotlib", "import matplotlib.pyplot as plt\nplt.plot([1, 2])", size=(32, 32)).ok
        with pytest.raises(RendererUnavailableError, match=r"'svg'.*cairo-2.*apt-get install libcairo2") as err:
            pool.render("svg", SVG, size=(8, 8))
        assert isinstance(err.value, ImportError) and err.value.kind == "svg"
        with pytest.raises(RendererUnavailableError):
            pool.render_many("svg", [SVG, SVG], size=(8, 8))
        assert pool.failure_counts["infra_failure"] == 0  # nothing was attempted, so nothing is masked as infra


def test_with_the_library_the_same_pool_renders_svg() -> None:
    with RenderPool(workers=1, kinds=("svg",)) as pool:
        assert pool.render("svg", SVG, size=(8, 8)).ok
