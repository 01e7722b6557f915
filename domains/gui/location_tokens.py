"""Click coordinates as location tokens: one token per axis instead of the digits of a pixel number.

PaliGemma and Florence-2 point and box with location tokens added to the vocabulary, so that one
sampled token is one position rather than one digit of it. This codebook is the zoo's own (PaliGemma's
1,024 ``<locNNNN>`` bins are normalised to the image; these are not): ``<pK>`` is the ``PIXEL_BIN``-pixel
bin ``K`` of the model's own frame, read back as its centre pixel ``K * PIXEL_BIN + PIXEL_BIN // 2``.
x and y share the tokens. The 32 tokens cover frames up to 128 pixels, the tiny agent's 112-pixel
screens, at a 2-pixel rounding error; the smallest click target there is 17 pixels tall after UI-S1's
1.2x enlargement.

A model writes UI-S1's answer with tokens where the JSON has numbers::

    <action>
    {"action": "click", "coordinate": [<p14>, <p7>]}
    </action>

and :func:`decode` turns it back into UI-S1's JSON (``[58, 30]``) before UI-S1's parser and matcher
read it, so the reward, the evaluation and the entry's parser are UI-S1's own. ``model.added_tokens:
domains.gui.location_tokens:TOKENS`` adds the tokens to a recipe's model; answer format
``ui-s1-location-tokens`` (:func:`domains.gui.prompts.ui_s1_location_response`) writes the expert's
turns with them. The codebook imports nothing of the domain: the prompts, parsers and rewards read it.
"""

from __future__ import annotations

import json
import re
from typing import Any

PIXEL_BIN = 4
NUM_BINS = 32
#: The tokens a model writing this format adds to its vocabulary (``model.added_tokens`` of a recipe).
TOKENS = tuple(f"<p{k}>" for k in range(NUM_BINS))
_TOKEN = re.compile(r"<p(\d+)>")
_COORDINATE_KEYS = ("coordinate", "coordinate2")


def in_vocabulary(tokenizer: Any) -> bool:
    """Whether a tokenizer holds the location tokens (a model trained to write them)."""
    vocab = tokenizer.get_vocab()
    return all(token in vocab for token in TOKENS)


def to_token(pixel: float) -> str:
    """The token of the bin holding ``pixel`` (in the model's frame); a frame beyond the codebook is an error."""
    k = int(pixel // PIXEL_BIN)
    if not 0 <= k < NUM_BINS:
        raise ValueError(f"pixel {pixel} is outside the location tokens' {NUM_BINS * PIXEL_BIN}-pixel frame")
    return f"<p{k}>"


def to_pixel(token: str) -> int:
    """The centre pixel of a token's bin."""
    match = _TOKEN.fullmatch(token)
    if match is None or int(match[1]) >= NUM_BINS:
        raise ValueError(f"{token!r} is not a location token (<p0> .. <p{NUM_BINS - 1}>)")
    return int(match[1]) * PIXEL_BIN + PIXEL_BIN // 2


def decode(text: str) -> str:
    """``text`` with every location token replaced by its pixel number, so UI-S1's JSON parser reads it.

    A token past the codebook (``<p99>``) is left as written, so the answer is a parse failure that
    names it rather than a silently moved click.
    """
    return _TOKEN.sub(lambda m: str(to_pixel(m[0])) if int(m[1]) < NUM_BINS else m[0], text)


def encode_action(action: dict[str, Any]) -> str:
    """UI-S1's action JSON (``json.dumps`` layout, ``ensure_ascii=False``) with coordinates as location tokens."""
    def value(key: str, v: Any) -> str:
        return f"[{to_token(v[0])}, {to_token(v[1])}]" if key in _COORDINATE_KEYS else json.dumps(v, ensure_ascii=False)

    return "{" + ", ".join(f"{json.dumps(k, ensure_ascii=False)}: {value(k, v)}" for k, v in action.items()) + "}"
