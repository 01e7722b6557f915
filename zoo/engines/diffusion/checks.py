"""The check step of the ``diffusion`` engine: the names a recipe gives, resolved once, in the loop's order.

The method row (:data:`zoo.engines.diffusion.methods.METHODS`) decides what the rest of the recipe must be: the
rewards it trains on (none for an adversarial method, whose discriminator is the reward), a tiny model of its sampler
family, an SDE window inside its stochastic steps, Adv-GRPO's discriminator and backbone; then the prompt datasets,
the rewards, the launch config and the provenance rows. ``zoo train`` calls it before anything is written or loaded
(:meth:`zoo.engines.Engine.check_recipe`) and the loop takes its result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zoo.engines.checks import check_launch, check_provenance, check_training_data, resolve_rewards
from zoo.engines.diffusion.methods import METHODS, Method
from zoo.engines.diffusion.recipe import AdvGRPOConfig, DiffusionRecipe, FlatRolloutConfig, sde_window_range
from zoo.recipe import RecipeError

#: The sampler family of each tiny model: a method is refused a tiny model of another family.
FAMILY_OF_TINY = {"tiny:sd3": "flow", "tiny:unet": "ddim", "tiny:lcm": "lcm"}


@dataclass(frozen=True)
class DiffusionChecked:
    """What the diffusion loop uses, resolved by :func:`check_diffusion`."""

    method: Method
    """The method table's row for ``algorithm.method``."""
    rewards: tuple[Any, ...]
    """What the reward table holds under each ``rewards[i].name``, not yet built."""


def check_diffusion(recipe: DiffusionRecipe) -> DiffusionChecked:
    """The method row and what it asks of the recipe, the prompt data, the rewards, the launch and the provenance."""
    alg = recipe.algorithm
    method = METHODS.get(alg.method)
    if method.adversarial and recipe.rewards:
        raise RecipeError(f"rewards: {alg.method} is rewarded by its discriminator alone; remove the rewards list "
                          f"(got {[r.name for r in recipe.rewards]})")  # fmt: skip
    if not method.adversarial and not recipe.rewards:
        raise RecipeError("rewards is empty; list at least one image reward, e.g. {name: brightness}")
    family = FAMILY_OF_TINY.get(recipe.model.name)
    if family is not None and family != method.family:
        fit = [k for k, v in FAMILY_OF_TINY.items() if v == method.family]
        raise RecipeError(f"algorithm.method={method.name!r} needs a {method.family} model (e.g. model.name={fit[0]!r}), "
                          f"got model.name={recipe.model.name!r}")  # fmt: skip
    if isinstance(alg, FlatRolloutConfig):
        _check_window(alg, method)
    if isinstance(alg, AdvGRPOConfig):
        _check_discriminator(alg)
        check_training_data(alg.reference_images, "algorithm.reference_images")
    check_training_data(recipe.prompts.data, "prompts.data")
    rewards = resolve_rewards(recipe.rewards)
    check_launch(recipe.launch)
    check_provenance(recipe)
    return DiffusionChecked(method=method, rewards=rewards)


def _check_window(alg: FlatRolloutConfig, method: Method) -> None:
    """Flow-GRPO-Fast's SDE window lies inside the policy steps of the method's rollout."""
    from zoo.engines.diffusion.sampling import policy_steps

    size = alg.sde_window_size
    if size == 0:
        return
    lo, hi = sde_window_range(alg)
    stochastic = policy_steps(method.step, alg.num_steps)
    if not 0 <= lo or not lo + size <= hi <= stochastic:
        raise RecipeError(f"algorithm.sde_window_range=[{lo}, {hi}) with sde_window_size={size} must satisfy "
                          f"0 <= lo, lo + size <= hi <= {stochastic} (the stochastic steps)")  # fmt: skip


def _check_discriminator(alg: AdvGRPOConfig) -> None:
    """Adv-GRPO's discriminator is one the engine has, and a tiny backbone is that discriminator's own kind."""
    from zoo.engines.diffusion.adversarial import DISCRIMINATORS

    if alg.discriminator not in DISCRIMINATORS:
        raise RecipeError(f"algorithm.discriminator={alg.discriminator!r}: Adv-GRPO's are {sorted(DISCRIMINATORS)}")
    tiny = {kind.tiny: name for name, kind in DISCRIMINATORS.items()}
    if tiny.get(alg.discriminator_backbone, alg.discriminator) != alg.discriminator:
        raise RecipeError(f"algorithm.discriminator_backbone={alg.discriminator_backbone!r} is the "
                          f"{tiny[alg.discriminator_backbone]} discriminator's tiny model; the {alg.discriminator} "
                          f"one's is {DISCRIMINATORS[alg.discriminator].tiny!r}")  # fmt: skip
