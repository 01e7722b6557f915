"""GUI models of the zoo.

Facts come from the authors' code and Hub pages: GUI-G1 (Yuqi-Zhou/GUI-G1@e581fe98,
``grpo_rec.py``), UI-S1 (X-PLUG/MobileAgent@11cea575, ``UI-S1/``) and the mPLUG/UI-S1-7B Hub card.
"""

from __future__ import annotations

from domains.gui.prompts import (
    GUI_G1_USER,
    UI_S1_NEXT_TURN,
    UI_S1_STEP_INSTRUCTION,
    UI_S1_SYSTEM,
    UI_S1_USER,
    parse_gui_g1,
    parse_ui_s1,
)
from zoo.kinds import VLMSpec
from zoo.registry import ModelEntry, register

GUI_G1_3B = register(
    ModelEntry(
        name="gui-g1-3b",
        aliases=("gui-g1",),
        repo_id="Yuqi-Zhou/GUI-G1-3B-v1",
        architecture="qwen2_5_vl",
        base_model="Qwen/Qwen2.5-VL-3B-Instruct",
        domain="gui",
        task="GUI grounding (instruction -> element box)",
        # grpo_rec.py feeds images at min 3136 / max 12845056 pixels; boxes are absolute pixels
        # of that (smart-resized) image.
        spec=VLMSpec(
            user=GUI_G1_USER, min_pixels=3136, max_pixels=12845056, coord_frame="resized", max_new_tokens=128,
            parser=parse_gui_g1,
        ),
        license="other",  # the base's Qwen Research License (license_source)
        code_license="apache-2.0",
        paper="2505.15810",
        license_source=(
            "LICENSE of the authors' repository Yuqi-Zhou/GUI-G1@e581fe98 (Apache-2.0); the licence field of "
            "the Yuqi-Zhou/GUI-G1-3B-v1 Hub card was not read by this project (UNVERIFIED). The base "
            "Qwen/Qwen2.5-VL-3B-Instruct is published under the Qwen Research License (its Hub LICENSE, "
            "discussion Qwen/Qwen2.5-VL-3B-Instruct#12): check it before any commercial use"
        ),
        revision_note=(
            "not pinned: no full commit hash of Yuqi-Zhou/GUI-G1-3B-v1 was found (the authors' README links the "
            "repository without a commit, its history cannot be read from here, and the Hub page mirrors and public "
            "code searched name none); pin one with zoo.load(name, revision=SHA)"
        ),
        rl_methods=("grpo",),
    )
)

UI_S1_7B = register(
    ModelEntry(
        name="ui-s1-7b",
        aliases=("ui-s1",),
        repo_id="mPLUG/UI-S1-7B",
        architecture="qwen2_5_vl",
        base_model="Qwen/Qwen2.5-VL-7B-Instruct",
        domain="gui",
        task="mobile GUI agent (goal + screenshot -> next action)",
        # UI-S1/x/qwen/image.py: factor 28, min 1 token, max 12800 tokens of 28x28 pixels. A trajectory's later
        # turns are the "next-turn" template, a low-level instruction the "step-instruction" one
        # (zoo.engines.vlm.contract.with_turn_contract; UI-S1/x/data/agent/json.py gen_next_round).
        spec=VLMSpec(
            system=UI_S1_SYSTEM,
            user=UI_S1_USER,
            templates={"next-turn": UI_S1_NEXT_TURN, "step-instruction": UI_S1_STEP_INSTRUCTION},
            min_pixels=28 * 28,
            max_pixels=12800 * 28 * 28,
            coord_frame="resized",
            max_new_tokens=512,
            image_first=False,
            parser=parse_ui_s1,
        ),
        license="apache-2.0",
        code_license="mit",
        license_source=(
            "Hub card front matter of mPLUG/UI-S1-7B at commit 8f38d44 (`license: apache-2.0`); the code "
            "(X-PLUG/MobileAgent, UI-S1/) is MIT"
        ),
        # The Hub commit whose page shows the card above (a model-card edit; parent d4e8297):
        # https://fast.hugflare.com/mPLUG/UI-S1-7B/commit/8f38d44a4cfde16061067bb7b0caf767e6ebb578 (a Hub mirror).
        revision="8f38d44a4cfde16061067bb7b0caf767e6ebb578",
        revision_note=(
            "pinned to the model-card edit 8f38d44 (parent d4e8297), read on its Hub commit page; not the first "
            "commit, and whether it is the newest is unverified (the Hub's history could not be read here)"
        ),
        rl_methods=("semi-online-rl",),
        paper="2509.11543",
        notes="Single-step use: the goal is the question; multi-turn history is the caller's to build.",
    )
)

# The checkpoint this repository trains itself (python -m lab.gui.release, from three recipes).
GUI_GROUNDING_TINY = register(
    ModelEntry(
        name="gui-grounding-tiny",
        repo_id=None,
        architecture="qwen2_5_vl",
        base_model="none (random init, Qwen2.5-VL architecture, ~1M parameters)",
        domain="gui",
        task="GUI grounding on 112-px synthetic screens (one button: instruction -> box)",
        # Trained with the GUI-G1 prompt and reward on 112x112 screens; the processor limits keep
        # them unresized, and larger screenshots are smart-resized to <= 112x112 (boxes mapped back).
        spec=VLMSpec(
            user=GUI_G1_USER, min_pixels=56 * 56, max_pixels=112 * 112, coord_frame="resized", max_new_tokens=32,
            parser=parse_gui_g1,
        ),
        license="apache-2.0",
        license_source="this repository's licence (pyproject.toml: Apache-2.0); trained here",
        revision_note="shipped in this repository (checkpoints/gui-grounding-tiny), not on the Hub",
        rl_methods=("grpo",),
        notes="A teaching/demo checkpoint trained on CPU by `python -m lab.gui.release`; it only knows the "
        "synthetic one-button task and is not a GUI agent. Card: model_cards/gui-grounding-tiny/README.md.",
    )
)

# The multi-turn agent this repository trains itself (python -m lab.gui.agent_release, three recipes).
GUI_AGENT_TINY = register(
    ModelEntry(
        name="gui-agent-tiny",
        repo_id=None,
        architecture="qwen2_5_vl",
        base_model="none (random init, Qwen2.5-VL architecture, ~1M parameters)",
        domain="gui",
        task="next action on 112-px synthetic phone screens (goal + last two screenshots -> UI-S1 action)",
        # Trained without UI-S1's system prompt: each user turn is the goal (no "next-turn" template: the
        # user template in every turn), then the screenshot; 112x112 screens stay unresized.
        spec=VLMSpec(
            min_pixels=56 * 56, max_pixels=112 * 112, coord_frame="resized", max_new_tokens=48, image_first=False,
            parser=parse_ui_s1,
        ),
        license="apache-2.0",
        license_source="this repository's licence (pyproject.toml: Apache-2.0); trained here",
        revision_note="shipped in this repository (checkpoints/gui-agent-tiny), not on the Hub",
        rl_methods=("semi-online-rl",),
        notes="A teaching/demo checkpoint trained on CPU by `python -m lab.gui.agent_release`; it only knows "
        "the synthetic 2-4 step episodes and is not a phone agent. Card: model_cards/gui-agent-tiny/README.md.",
    )
)
