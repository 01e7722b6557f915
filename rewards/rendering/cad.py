"""The ``cadquery`` and ``cadquery-geometry`` kinds: run CadQuery code in the sandbox, keep the solid.

CadQuery, not build123d: the two cannot share an environment (cadquery 2.8 needs
``cadquery-ocp<8``, build123d 0.13 ``cadquery-ocp-novtk>=8``); build123d executes a part faster
(28-32 ms against 68-112 ms) but imports slower (4.0-4.7 s against 3.0-3.2 s), and the public
text-to-CAD data the zoo reads (ExeCAD, CAD-RL's target format, and cadrille's) are CadQuery
scripts.

Source: the code itself, or JSON ``{"code": ..., "reference": ...}`` (:func:`cad_source`) when the
geometry is compared with a reference part. The code must leave its part in ``result`` (a
``cq.Workplane`` or a shape).

* ``cadquery`` answers an image: the tessellated solid, isometric, flat-shaded, painted in depth
  order with PIL (no OpenGL/EGL needed inside the sandbox).
* ``cadquery-geometry`` answers JSON in the image channel (as ``matplotlib-facts`` does):
  ``volume``, and with a reference ``ref_volume``, ``iou`` (exact: OCC boolean intersection
  volume over the union volume, the parts where the code put them) and ``chamfer`` (symmetric mean
  squared nearest-neighbour distance of 1024 area-weighted surface samples per part, seeded,
  divided by the squared diagonal of the reference's bounding box).
"""

from __future__ import annotations

import json
from typing import Any

Size = tuple[int, int]
CHAMFER_POINTS = 1024


def cad_source(code: str, reference: str | None = None) -> str:
    """The source of a geometry job: the answer's code and, optionally, the reference part's code."""
    return json.dumps({"code": code, "reference": reference})


def _split(source: bytes) -> tuple[str, str | None]:
    text = source.decode("utf-8")
    if text.lstrip().startswith("{"):
        try:
            payload = json.loads(text)
        except json.JSONDecodeError:
            payload = None
        if isinstance(payload, dict) and isinstance(payload.get("code"), str):
            return payload["code"], payload.get("reference")
    return text, None


def build_part(code: str, label: str = "<model-code>") -> Any:
    """Exec CadQuery code and return its ``result`` as one OCC shape (a compound when several)."""
    import cadquery as cq

    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__, "cq": cq}
    exec(compile(code, label, "exec"), namespace)  # noqa: S102  (sandboxed job)
    result = namespace.get("result")
    if result is None:
        raise ValueError("the code left no part in a variable named result")
    if isinstance(result, cq.Workplane):
        shapes = [v for v in result.vals() if isinstance(v, cq.Shape)]
        if not shapes:
            raise ValueError("result is a Workplane holding no solid")
        result = shapes[0] if len(shapes) == 1 else cq.Compound.makeCompound(shapes)
    if not isinstance(result, cq.Shape):
        raise TypeError(f"result must be a cq.Workplane or a shape, got {type(result).__name__}")
    if not result.isValid():
        raise ValueError("the part is not a valid solid (OCC check failed)")
    return result


def _mesh(shape: Any) -> tuple[Any, Any]:
    import numpy as np

    vertices, triangles = shape.tessellate(0.1, 0.2)
    points = np.array([v.toTuple() for v in vertices], dtype=np.float64)
    faces = np.array(triangles, dtype=np.int64).reshape(-1, 3)
    if len(faces) == 0:
        raise ValueError("the part has no surface to tessellate")
    return points, faces


def surface_samples(points: Any, faces: Any, n: int = CHAMFER_POINTS, seed: int = 0) -> Any:
    """``n`` points drawn uniformly by area on a triangle mesh (seeded, so reruns agree)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    a, b, c = (points[faces[:, i]] for i in range(3))
    area = np.linalg.norm(np.cross(b - a, c - a), axis=1)
    pick = rng.choice(len(faces), size=n, p=area / area.sum())
    u, v = rng.random((2, n, 1))
    flip = (u + v) > 1
    u, v = np.where(flip, 1 - u, u), np.where(flip, 1 - v, v)
    return a[pick] + u * (b[pick] - a[pick]) + v * (c[pick] - a[pick])


def chamfer(x: Any, y: Any) -> float:
    """Symmetric Chamfer distance: mean squared nearest distance x->y plus y->x."""

    d = ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)
    return float(d.min(1).mean() + d.min(0).mean())


def render_cadquery(source: bytes, size: Size) -> bytes:
    """An isometric, flat-shaded picture of the part at exactly ``size`` (RGB bytes)."""
    import numpy as np
    from PIL import Image, ImageDraw

    code, _ = _split(source)
    points, faces = _mesh(build_part(code))
    view = np.array([[0.7071, -0.7071, 0.0], [-0.4082, -0.4082, 0.8165], [0.5774, 0.5774, 0.5774]])
    projected = points @ view.T
    xy = projected[:, :2]
    span = max(float(np.ptp(xy, axis=0).max()), 1e-9)
    scale = 0.85 * min(size) / span
    centre = (xy.max(0) + xy.min(0)) / 2
    pix = (xy - centre) * scale * np.array([1, -1]) + np.array(size) / 2
    tri = projected[faces]
    normals = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-12)
    shade = 0.35 + 0.65 * np.abs(normals @ np.array([0.3, 0.5, 0.81]))
    canvas = Image.new("RGB", size, (255, 255, 255))
    draw = ImageDraw.Draw(canvas)
    for i in np.argsort(tri[:, :, 2].mean(1)):  # far to near (view axis points to the viewer)
        tone = int(200 * shade[i])
        draw.polygon([tuple(p) for p in pix[faces[i]]], fill=(tone, tone, min(255, tone + 40)))
    return canvas.tobytes()


def render_cadquery_geometry(source: bytes, size: Size) -> bytes:
    """JSON facts of the part (and its comparison with the reference), zero-padded to ``w*h*3`` bytes."""
    import numpy as np

    code, reference = _split(source)
    part = build_part(code)
    facts: dict[str, Any] = {"volume": float(part.Volume())}
    if reference is not None:
        target = build_part(reference, "<reference-code>")
        facts["ref_volume"] = float(target.Volume())
        common = float(part.intersect(target).Volume()) if facts["volume"] > 0 else 0.0
        union = facts["volume"] + facts["ref_volume"] - common
        facts["iou"] = common / union if union > 0 else 0.0
        diagonal2 = float(np.sum(np.ptp(_mesh(target)[0], axis=0) ** 2))
        facts["chamfer"] = chamfer(surface_samples(*_mesh(part)), surface_samples(*_mesh(target))) / max(diagonal2,
                                                                                                           1e-12)
    data = json.dumps(facts).encode()
    capacity = size[0] * size[1] * 3
    if len(data) > capacity:
        raise ValueError(f"geometry facts take {len(data)} bytes, over the {capacity} a {size} answer holds")
    return data + b"\0" * (capacity - len(data))


def preload_cadquery() -> None:
    import cadquery as cq
    import numpy  # noqa: F401
    import PIL.ImageDraw  # noqa: F401

    cq.Workplane("XY").box(1, 1, 1).val().tessellate(0.1)  # loads OCC's meshing code once
