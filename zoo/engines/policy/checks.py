"""The check step of the ``policy`` engine: the method's training code, the environment, the launch and the
provenance, resolved once before anything is written or the base policy loads (:meth:`zoo.engines.Engine.check_recipe`).

Reading the recipe imported the method's settings module alone (the domain descriptor names it); the check imports
the training code of that domain only (:func:`zoo.domains.load_method_code`), where the method table finds the
method. The environment is checked here and looked up again by name where it is built
(:class:`zoo.engines.policy.envs.EnvFactory`), since each worker process builds its own from the recipe.
"""

from __future__ import annotations

from dataclasses import dataclass

from zoo.domains import load_method_code
from zoo.engines.checks import check_launch, check_provenance
from zoo.engines.policy.methods import ENVIRONMENTS, POLICY_METHODS, PolicyMethod
from zoo.engines.policy.recipe import PolicyRecipe
from zoo.recipe import RecipeError
from zoo_common.registry import UnknownNameError


@dataclass(frozen=True)
class PolicyChecked:
    """What the policy loop uses, resolved by :func:`check_policy`."""

    method: PolicyMethod
    """The method table's entry for ``algorithm.method`` (builds, saves, loads and exports the algorithm)."""


def check_policy(recipe: PolicyRecipe) -> PolicyChecked:
    """The method, then the environment it wraps, then the launch config and the provenance rows."""
    load_method_code(recipe.algorithm.method)
    try:
        method = POLICY_METHODS.get(recipe.algorithm.method)
    except UnknownNameError as err:
        raise RecipeError(f"algorithm.method: {err}") from None
    try:
        ENVIRONMENTS.canonical(recipe.env.name)
    except UnknownNameError as err:
        raise RecipeError(f"env.name={recipe.env.name!r} is not a registered environment: {err}") from None
    check_launch(recipe.launch)
    check_provenance(recipe)
    return PolicyChecked(method=method)
