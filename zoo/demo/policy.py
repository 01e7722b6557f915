"""The policy page: N seeded episodes of an environment in; an animated rollout and the returns out.

Episodes are played by :func:`zoo.engines.policy.evaluate.run_episodes`, the evaluation's own loop
(episode i reset with ``seed + i``, the policy's action queue cleared after each reset), so the table
holds the numbers the evaluation would report for those seeds. The first episode is filmed when the
environment can draw (``render_mode="rgb_array"``); one that cannot is still played, and the page says so.
"""

from __future__ import annotations

import atexit
import functools
import inspect
import logging
import tempfile
from pathlib import Path
from typing import Any

import gradio as gr
import gymnasium as gym
from PIL import Image

from zoo.demo import inputs
from zoo.demo.errors import InputError, guarded
from zoo.demo.examples import Example
from zoo.domains import DOMAINS
from zoo.engines.policy.envs import make_environment
from zoo.engines.policy.evaluate import run_episodes
from zoo.engines.policy.methods import ENVIRONMENTS
from zoo.import_strings import resolve

logger = logging.getLogger(__name__)

MAX_EPISODES = 20
#: Width of the filmed frames (zoo: a few hundred kB of GIF for a 50-step episode).
FRAME_WIDTH = 240
COLUMNS = ["episode", "seed", "return", "success", "steps"]


class FilmFirstEpisode(gym.Wrapper):
    """Keeps the frames of the first episode after :meth:`reset` (and counts every episode's steps)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.frames: list[Image.Image] = []
        self.steps: list[int] = []
        self.render_error: str | None = None

    def reset(self, **kwargs: Any) -> Any:
        result = self.env.reset(**kwargs)
        self.steps.append(0)
        self._film()
        return result

    def step(self, action: Any) -> Any:
        result = self.env.step(action)
        self.steps[-1] += 1
        self._film()
        return result

    def _film(self) -> None:
        if len(self.steps) != 1 or self.render_error is not None or self.env.render_mode != "rgb_array":
            return
        try:
            frame = Image.fromarray(self.env.render())
        except Exception as err:  # noqa: BLE001 - no GL here: the episodes still count, the page says why
            self.render_error = f"{type(err).__name__}: {err}"
            return
        self.frames.append(frame.resize((FRAME_WIDTH, round(frame.height * FRAME_WIDTH / frame.width))))


def environments_for(domain: str) -> list[str]:
    """The environments the entry's domain registers (every registered one for a directory of no domain)."""
    own = list(DOMAINS.get(domain).environments) if domain in DOMAINS else []
    return own or ENVIRONMENTS.list()


def filmed_environment(name: str) -> FilmFirstEpisode:
    """Environment ``name``, drawing to arrays when its factory takes ``render_mode``."""
    factory = resolve(ENVIRONMENTS.get(name), what=f"environment {name!r}")
    drawable = "render_mode" in inspect.signature(factory).parameters
    return FilmFirstEpisode(make_environment(name, **({"render_mode": "rgb_array"} if drawable else {})))


@functools.cache
def _gif_folder() -> Path:
    """One temporary folder per server for its rollouts, removed when the server's process exits."""
    folder = tempfile.TemporaryDirectory(prefix="zoo-demo-")
    atexit.register(folder.cleanup)
    return Path(folder.name)


def write_gif(frames: list[Image.Image]) -> str:
    """The frames as a looping GIF in the server's temporary folder (what the page shows; gradio copies it into
    its own cache, and the folder goes when the server stops)."""
    with tempfile.NamedTemporaryFile(dir=_gif_folder(), prefix="rollout-", suffix=".gif", delete=False) as f:
        path = Path(f.name)
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=80, loop=0)
    return str(path)


def build(pipe: Any, examples: tuple[Example, ...]) -> None:
    """The episodes tab of ``pipe``'s page (inside an open ``gr.Blocks``), opening on ``examples[0]``'s seed."""
    names = environments_for(pipe.entry.domain)
    with gr.Row():
        with gr.Column():
            env_name = gr.Dropdown(names, value=names[0] if names else None, label="environment", elem_id="env")
            # a number box, not a slider: a slider clamps a typed 100000 to its end silently; the handler says the range
            episodes = gr.Number(label=f"episodes (1 to {MAX_EPISODES})", value=3, precision=0, elem_id="episodes")
            seed = gr.Number(label=f"first seed (episode i is reset with seed + i; 0 to {inputs.SEED_MAX})",
                             value=examples[0].seed, precision=0, elem_id="seed")  # fmt: skip
            run = gr.Button("Run episodes", variant="primary", elem_id="run")
        with gr.Column():
            status = gr.Markdown(elem_id="status")
            film = gr.Image(label="first episode", type="filepath", interactive=False, elem_id="rollout")
            note = gr.Markdown(elem_id="note")
            table = gr.Dataframe(headers=COLUMNS, label="episodes", interactive=False, elem_id="returns")

    if len(examples) > 1 and names:
        gr.Examples([[names[0], 3, e.seed] for e in examples], [env_name, episodes, seed], label="examples")

    def play(name: str | None, count: float | None, first: float | None) -> tuple[Any, ...]:
        if not name:
            raise InputError("no environment is registered for this policy; pick one")
        count, start = inputs.whole_number(count, "episodes", 1, MAX_EPISODES), inputs.seed(first)
        env = filmed_environment(name)
        try:
            played = list(run_episodes(env, pipe.act, count, start, on_reset=pipe.reset))
        finally:
            env.close()
        rows = [[i, start + i, round(total, 4), bool(info.get("is_success", False)), env.steps[i]]
                for i, (total, info) in enumerate(played)]  # fmt: skip
        successes = sum(row[3] for row in rows)
        summary = f"success {successes}/{len(rows)}; mean return {sum(r[2] for r in rows) / len(rows):.4f}"
        if not env.frames:
            summary += f". No film: {env.render_error or f'{name} does not draw (its factory takes no render_mode)'}"
        return (write_gif(env.frames) if env.frames else None), summary, rows

    run.click(guarded(play, 3), [env_name, episodes, seed], [status, film, note, table])
