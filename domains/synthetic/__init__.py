"""A synthetic visual task with exact answers, for the backbone's tests and learning benchmark.

"What colour is the square?": colour is a property of the whole image, so even a tiny random
Qwen-VL with a frozen vision tower can learn it within CPU minutes, which lets the tests and
``bench/learning.py`` show a reward rise for real. It is a domain like the others (data,
rewards, recipes, one entry), so the backbone names no task of its own. Its entry is the shipped warm
start of the README's first training run (``synthetic-colour-grpo.yaml``): a tiny model stopped half-way
through SFT (``synthetic-colour-sft.yaml``), built by ``python -m lab.synthetic.release``.
"""

from zoo.domains import Domain

DOMAIN = Domain(
    name="synthetic",
    summary="a synthetic exact-answer visual task (square colour) for smoke runs and learning benchmarks",
    entries="domains.synthetic.entries",
    rewards="domains.synthetic.rewards",
    datasets={"synthetic-colour": "domains.synthetic.data:load"},
    answer_formats={"colour-word": "domains.synthetic.data:colour_word"},
)
