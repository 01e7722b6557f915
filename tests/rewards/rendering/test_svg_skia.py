"""The svg-skia render kind: refusals before rendering, hostile inputs in the sandbox, recovery."""

import numpy as np
import pytest

from rewards.rendering import RenderPool
from rewards.rendering.svg_skia import SvgRefused, screen_svg

HEAD = '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" viewBox="0 0 10 10">'
HOSTILE = {
    "absolute path image": HEAD + '<image href="/etc/passwd" width="10" height="10"/></svg>',
    "relative path image": HEAD + '<image xlink:href="../../secret.png" width="10" height="10"/></svg>',
    "file url": HEAD + "<image href='file:///etc/hostname'/></svg>",
    "http use": HEAD + '<use href="http://127.0.0.1:9/x.svg#a"/></svg>',
    "css url": HEAD + '<style>rect { fill: url(http://127.0.0.1:9/p.svg#g) }</style><rect/></svg>',
    "css import": HEAD + "<style>@import 'http://127.0.0.1:9/a.css';</style></svg>",
    "entity": '<!DOCTYPE svg [<!ENTITY x SYSTEM "file:///etc/passwd">]>' + HEAD + "<text>&x;</text></svg>",
    "billion laughs": '<!DOCTYPE s [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;&a;">]>' + HEAD + "<text>&b;</text></svg>",
}


@pytest.mark.parametrize("name", HOSTILE)
def test_screen_refuses_external_references_and_dtds(name):
    with pytest.raises(SvgRefused):
        screen_svg(HOSTILE[name].encode())


def test_screen_allows_fragments_and_data_urls():
    screen_svg((HEAD + '<defs><linearGradient id="g"/></defs><rect fill="url(#g)"/><use href="#g"/>'
                '<image href="data:image/png;base64,iVBORw0KGgo="/></svg>').encode())


@pytest.fixture(scope="module")
def pool():
    with RenderPool(1, kinds=("svg-skia",)) as p:
        yield p


def test_hostile_svgs_are_invalid_in_the_sandbox_and_the_pool_keeps_serving(pool):
    for name, source in HOSTILE.items():
        result = pool.render("svg-skia", source, size=(16, 16))
        assert result.status == "invalid", name
    ok = pool.render("svg-skia", HEAD + '<rect width="10" height="5" fill="#0000ff"/></svg>', size=(20, 20))
    assert ok.ok and tuple(np.asarray(ok.image)[2, 10]) == (0, 0, 255) and tuple(np.asarray(ok.image)[18, 10]) == (
        255, 255, 255)


def test_huge_geometry_finishes_within_the_time_limit(pool):
    huge = HEAD + '<circle cx="5" cy="5" r="1e38" fill="red" stroke="blue" stroke-width="1e30"/></svg>'
    result = pool.render("svg-skia", huge, size=(64, 64), timeout=5.0)
    assert result.status in ("ok", "invalid", "timeout")  # never a hang: the pool answers within the limit
    assert pool.render("svg-skia", HEAD + "<rect width='1' height='1'/></svg>", size=(8, 8)).ok
