"""Hostile SVGs: external references, entity expansion, reference bombs, huge sizes, bad bytes."""

from __future__ import annotations

import gzip
import time

import pytest

TIMEOUT = 4.0
NS = 'xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"'


def _use_bomb(levels: int = 12) -> str:
    defs = ['<g id="l0"><rect width="1" height="1"/></g>']
    for i in range(1, levels):
        defs.append(f'<g id="l{i}">' + "".join(f'<use xlink:href="#l{i - 1}"/>' for _ in range(10)) + "</g>")
    return f'<svg {NS} width="10" height="10"><defs>{"".join(defs)}</defs><use xlink:href="#l{levels - 1}"/></svg>'


def _billion_laughs() -> str:
    ents = ['<!ENTITY lol0 "lol">'] + [f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)]
    return f'<?xml version="1.0"?><!DOCTYPE svg [{"".join(ents)}]><svg {NS}><text>&lol9;</text></svg>'


CASES = {
    "file-image": (f'<svg {NS} width="9" height="9"><image xlink:href="file:///etc/passwd" width="9" '
                   'height="9"/></svg>', {"invalid"}, "external resource"),
    "http-image": (f'<svg {NS} width="9" height="9"><image href="http://example.com/a.png" width="9" '
                   'height="9"/></svg>', {"invalid"}, "external resource"),
    "file-use": (f'<svg {NS}><use xlink:href="file:///etc/hostname#a"/></svg>', {"invalid"}, "external resource"),
    "relative-use": (f'<svg {NS}><use xlink:href="../../secret.svg#a"/></svg>', {"invalid"}, "external resource"),
    "css-import": (f'<svg {NS}><style>@import url("http://example.com/x.css");</style></svg>',
                   {"invalid", "ok"}, ""),
    "xxe-system-entity": ('<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
                          f'<svg {NS}><text>&x;</text></svg>', {"invalid"}, "Entit"),
    "billion-laughs": (_billion_laughs(), {"invalid"}, "Entit"),
    "use-reference-bomb": (_use_bomb(), {"timeout", "invalid", "ok"}, ""),
    "svg-50mb": (f'<svg {NS}>' + "<!--" + "x" * (50 * 1024 * 1024) + "-->" + "</svg>", {"invalid"}, "limit"),
    "svg-100000px": (f'<svg {NS} width="100000" height="100000"><rect width="100000" height="100000" '
                     'fill="red"/></svg>', {"ok"}, ""),
    "svg-huge-viewbox": (f'<svg {NS} viewBox="0 0 1e9 1e9"><circle cx="5e8" cy="5e8" r="4e8"/></svg>', {"ok"}, ""),
    "svgz-gzip": (gzip.compress(b"<svg xmlns='http://www.w3.org/2000/svg'/>"), {"invalid"}, "gzip"),
    "non-utf8": (b"<svg xmlns='http://www.w3.org/2000/svg'>\xff\xfe</svg>", {"invalid"}, "UTF-8"),
    "empty": ("", {"invalid"}, "empty"),
    "not-xml": ("this is not an svg", {"invalid"}, ""),
    "deep-nesting": (f'<svg {NS}>' + "<g>" * 5000 + "</g>" * 5000 + "</svg>", {"invalid", "ok"}, ""),
    "recursive-gradient": (f'<svg {NS}><defs><linearGradient id="a" xlink:href="#b"/>'
                           f'<linearGradient id="b" xlink:href="#a"/></defs>'
                           '<rect width="5" height="5" fill="url(#a)"/></svg>',
                           {"invalid", "ok"}, ""),
    "data-uri-image": (f'<svg {NS} width="9" height="9"><image width="9" height="9" '
                       'href="data:image/svg+xml;utf8,&lt;svg xmlns=&quot;http://www.w3.org/2000/svg&quot;/&gt;"/></svg>',
                       {"ok", "invalid"}, ""),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_svg_is_contained(case: str, leak_check) -> None:
    source, statuses, message = CASES[case]
    start = time.monotonic()
    result = leak_check.render("svg", source, size=(48, 32), timeout=TIMEOUT)
    assert time.monotonic() - start < TIMEOUT + 5
    assert result.status in statuses, (result.status, result.error)
    assert message.lower() in (result.error or "").lower()
    if result.status == "ok":
        assert result.image.size == (48, 32) and result.image.mode == "RGB"
    else:
        assert result.image is None and result.error
