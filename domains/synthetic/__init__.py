"""A synthetic visual task with exact answers, for the backbone's tests and learning benchmark.

"What colour is the square?": colour is a property of the whole image, so even a tiny random
Qwen-VL with a frozen vision tower can learn it within CPU minutes, which lets the tests and
``bench/learning.py`` show a reward rise for real. It is a domain like the others (data,
rewards, a recipe), so the backbone names no task of its own.
"""

from zoo.domains import Domain

DOMAIN = Domain(
    name="synthetic",
    summary="a synthetic exact-answer visual task (square colour) for smoke runs and learning benchmarks",
    rewards="domains.synthetic.rewards",
    datasets={"synthetic-colour": "domains.synthetic.data:load"},
)
