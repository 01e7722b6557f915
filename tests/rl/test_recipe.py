"""Recipe schema: YAML in, typed dotted overrides, clear errors, every shipped recipe parses."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import save_file

from zoo.engines import ENGINES
from zoo.engines.reading import load_recipe
from zoo.engines.vlm.recipe import SemiOnlineRecipe, VerlRecipe, VLMRLRecipe
from zoo.engines.vlm.recipe import VLMRecipe as Recipe
from zoo.recipe import RecipeError

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted(ROOT.glob("domains/*/recipes/*.yaml"))  # parsing each is tests/contract's job

MINIMAL = {"name": "t", "engine": "vlm-trl", "data": {"name": "synthetic-colour"}, "rewards": ["synthetic-colour"]}


def test_defaults_and_shorthand_reward():
    recipe = Recipe.from_dict(MINIMAL)
    assert recipe.rewards[0].name == "synthetic-colour" and recipe.rewards[0].weight == 1.0
    assert recipe.model.name == "tiny:qwen2_5_vl"
    assert recipe.output_dir == Path("runs/t")


def test_overrides_are_typed():
    recipe = VerlRecipe.from_dict(
        {**MINIMAL, "engine": "vlm-verl"},
        [
            "training.lr=1e-5",  # YAML 1.1 reads this as a string; the schema makes it a float
            "training.steps=7",
            "training.lora.enabled=true",
            "algorithm.loss_type=dapo",
            "algorithm.dual_clip=3",
            "data.kwargs.n=12",
            "rewards.0.weight=0.5",
            "verl.overrides=[trainer.nnodes=2]",
        ],
    )
    assert recipe.training.lr == 1e-5 and isinstance(recipe.training.lr, float)
    assert recipe.training.steps == 7 and recipe.training.lora.enabled is True
    assert recipe.algorithm.loss_type == "dapo" and recipe.algorithm.dual_clip == 3.0
    assert recipe.data.kwargs == {"n": 12}
    assert recipe.rewards[0].weight == 0.5
    assert recipe.verl.overrides == ("trainer.nnodes=2",)


def test_yaml_round_trip(tmp_path):
    recipe = Recipe.from_dict(MINIMAL, ["algorithm.num_generations=4", "training.batch_size=8"])
    path = tmp_path / "recipe.yaml"
    recipe.to_yaml(path)
    assert Recipe.from_yaml(path) == recipe


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("training.lrr=1", "Did you mean training.lr"),
        ("algorithm.loss_type=dapoo", "Did you mean: dapo"),
        ("training.steps=many", "training.steps must be int"),
        ("training.freeze_vision=maybe", "must be true or false"),
        ("rewards.3.weight=1", "has only 1 item"),
        ("no_equals_sign", "must look like key.path=value"),
        ("algorithm.num_generations=1", "groups of at least 2"),
        ("training.batch_size=6", "not a multiple of algorithm.num_generations=8"),
        ("algorithm.dual_clip=0.5", "dual_clip must be > 1"),
        ("training.warmup_steps=10", "does nothing with lr_scheduler: constant"),
        ("training.lr.x=1", "training.lr is a float value with no keys inside"),
        ("rewards.0.name.x=1", "rewards.0.name is a str value with no keys inside"),
        ("data.kwargs.n.x=1", "data.kwargs.n holds 3, not a mapping"),
        ("data.kwargs=[1, *x]", "not valid YAML"),
        ("rewards.0.weight=.nan", "a reward weight must be a finite number"),
        ("rewards.0.weight=-.inf", "a reward weight must be a finite number"),
    ],
)
def test_bad_overrides_name_the_problem(override, message):
    """Read, then checked as ``zoo train`` does (an unknown loss type is the check's: it resolves the name)."""
    with pytest.raises(RecipeError, match=message.replace(".", r"\.").replace("(", r"\(")):
        recipe = Recipe.from_dict({**MINIMAL, "data": {"name": "synthetic-colour", "kwargs": {"n": 3}}}, [override])
        ENGINES.get(recipe.engine).check_recipe(recipe)


@pytest.mark.parametrize("override", ["training.lr.x=1", "rewards.0.weight=nan"])
def test_zoo_train_exits_1_on_a_bad_recipe_before_training(tmp_path, capsys, override):
    from zoo.cli import main

    recipe = ROOT / "domains/synthetic/recipes/synthetic-colour.yaml"
    assert main(["train", str(recipe), "--set", override, "--output-dir", str(tmp_path / "run")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
    assert not (tmp_path / "run").exists(), "nothing is written for a recipe that does not parse"


def alias_bomb(levels: int) -> str:
    """Billion-laughs YAML: each level lists the previous one 9 times (9**levels leaves, a few hundred bytes)."""
    lines = ['l0: &l0 "lol"']
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels + 1)]
    return "\n".join([*lines, "name: bomb", "engine: vlm-trl"]) + "\n"


def test_alias_bomb_and_oversized_recipes_are_refused(tmp_path):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(alias_bomb(9))  # 9**9 = 387 M strings once copied
    with pytest.raises(RecipeError, match=r"expands to more than 100000 YAML nodes"):
        Recipe.from_yaml(bomb)
    with pytest.raises(RecipeError, match=r"expands to more than"):
        Recipe.from_dict(MINIMAL, ["data.kwargs=" + "{" + alias_bomb(9).replace("\n", ", ").rstrip(", ") + "}"])

    loop = tmp_path / "loop.yaml"
    loop.write_text("name: &a [*a]\n")
    with pytest.raises(RecipeError, match="alias that contains itself"):
        Recipe.from_yaml(loop)

    deep = tmp_path / "deep.yaml"
    deep.write_text("name: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(RecipeError, match="not valid YAML"):
        Recipe.from_yaml(deep)

    big = tmp_path / "big.yaml"
    big.write_text("description: " + "x" * (1 << 20) + "\n")
    with pytest.raises(RecipeError, match="a recipe is at most"):
        Recipe.from_yaml(big)


def test_a_few_anchors_still_work(tmp_path):
    path = tmp_path / "anchors.yaml"
    path.write_text("name: t\nengine: vlm-trl\ndata: {name: synthetic-colour, kwargs: &k {n: 4}, eval_kwargs: *k}\n"
                    "rewards: [synthetic-colour]\n")  # fmt: skip
    recipe = Recipe.from_yaml(path)
    assert recipe.data.kwargs == recipe.data.eval_kwargs == {"n": 4}


def test_unknown_yaml_key_and_missing_file(tmp_path):
    with pytest.raises(RecipeError, match=r"unknown recipe key 'trainng'.*Did you mean training"):
        Recipe.from_dict({**MINIMAL, "trainng": {}})
    with pytest.raises(RecipeError, match="does not exist"):
        Recipe.from_yaml(tmp_path / "nope.yaml")
    with pytest.raises(RecipeError, match="missing required key"):
        Recipe.from_dict({"data": {"name": "x"}, "rewards": ["r"]})


def test_policy_source_accepts_dirs_zoo_names_and_hub_base_models(tmp_path, monkeypatch):
    """Recipes start from Hub base models that are not zoo entries; those must not be 'unknown model'."""
    from zoo.engines.vlm.policy_model import policy_source
    from zoo.hub import CHECKPOINTS_DIR
    from zoo_common.registry import UnknownNameError

    def source(name: str, *overrides: str) -> tuple[str, str | None]:
        recipe = Recipe.from_dict({"name": "t", "engine": "vlm-trl", "data": {"name": "d"}, "rewards": ["r"],
                                   "model": {"name": name}},
                                  list(overrides))
        return policy_source(recipe)

    (tmp_path / "model.safetensors").write_bytes(b"")  # checked as zoo.load checks it: a header, not just a name
    with pytest.raises(RecipeError, match="model.safetensors is not a valid safetensors file"):
        source(str(tmp_path))
    save_file({"w": torch.zeros(1)}, str(tmp_path / "model.safetensors"))
    assert source(str(tmp_path)) == (str(tmp_path), None)
    assert source("gui-grounding-tiny") == (str(CHECKPOINTS_DIR / "gui-grounding-tiny"), None)
    from zoo.hub import ModelNotAvailableError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # offline and not cached: the zoo's download command, not transformers'
    with pytest.raises(ModelNotAvailableError, match="hf download Qwen/Qwen2.5-VL-7B-Instruct --revision abc"):
        source("Qwen/Qwen2.5-VL-7B-Instruct", "model.revision=abc")
    monkeypatch.delenv("HF_HUB_OFFLINE")  # online, a Hub id is passed on to from_pretrained as it is
    assert source("Qwen/Qwen2.5-VL-7B-Instruct", "model.revision=abc") == ("Qwen/Qwen2.5-VL-7B-Instruct", "abc")
    with pytest.raises(UnknownNameError, match="Did you mean"):
        source("gui-grounding-tiy")
    monkeypatch.chdir(ROOT)  # shipped recipes name repository-relative directories
    for path in SHIPPED:
        recipe = load_recipe(path)
        if isinstance(recipe, VLMRLRecipe):  # the VLM RL recipes (policy_source is theirs)
            name = recipe.model.name  # a later stage may start from an earlier stage's run directory
            assert name.startswith(("tiny:", "runs/")) or source(name)[0], path


def test_each_vlm_loop_has_its_recipe_class_and_refuses_what_it_does_not_run(tmp_path):
    """One recipe class per loop: the engine picks it, and a setting only another loop reads is refused."""
    assert [ENGINES.get(e).recipe_class() for e in ("vlm-trl", "vlm-semi-online", "vlm-verl")] == [
        Recipe, SemiOnlineRecipe, VerlRecipe]  # fmt: skip
    multi = {"name": "x", "data": {"name": "synthetic-colour"}, "rewards": [{"name": "synthetic-colour"}],
             "algorithm": {"adv_estimator": "ui-s1"}}  # fmt: skip
    for cls, engine in ((Recipe, "vlm-trl"), (VerlRecipe, "vlm-verl")):
        with pytest.raises(RecipeError, match=f"needs a multi-turn rollout, which engine {engine} does not run; "
                                              "use engine: vlm-semi-online"):  # fmt: skip
            ENGINES.get(engine).check_recipe(cls.from_dict({**multi, "engine": engine}))
    assert SemiOnlineRecipe.from_dict({**multi, "engine": "vlm-semi-online"}).is_multi_turn
    with pytest.raises(RecipeError, match="'grpo' is single-turn; engine vlm-semi-online runs the multi-turn estimators"):
        ENGINES.get("vlm-semi-online").check_recipe(SemiOnlineRecipe.from_dict({**MINIMAL, "engine": "vlm-semi-online"}))
    def written(data: dict) -> Path:
        (tmp_path / "r.yaml").write_text(yaml.safe_dump(data))
        return tmp_path / "r.yaml"

    # --engine moves a recipe when the blocks only the first loop reads hold its defaults (a resolved recipe.yaml
    # writes them all); a block set otherwise is refused by name: verl rolls out with verl.rollout
    assert load_recipe(written({**MINIMAL, "rollout": {"backend": "hf"}}), engine="vlm-verl").engine == "vlm-verl"
    with pytest.raises(RecipeError, match="rollout: {'backend': 'vllm'} is read by VLMRecipe's loop only; engine "
                                          "'vlm-verl' would ignore it"):  # fmt: skip
        load_recipe(written({**MINIMAL, "rollout": {"backend": "vllm"}}), engine="vlm-verl")
    with pytest.raises(RecipeError, match="unknown recipe key 'multi_turn'"):
        load_recipe(written({**MINIMAL, "multi_turn": {"image_limit": 2}}))
    with pytest.raises(RecipeError, match=r"algorithm.plugins \['shuffle-r1'\] run in the vlm-trl engine's"):
        VerlRecipe.from_dict({**MINIMAL, "engine": "vlm-verl", "algorithm": {"plugins": [{"name": "shuffle-r1"}]}})
    assert load_recipe(written(MINIMAL), engine="vlm-verl") == VerlRecipe.from_dict({**MINIMAL, "engine": "vlm-verl"})


def test_resolved_recipe_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    import errno

    path = tmp_path / "recipe.yaml"
    path.write_text("the previous run's recipe\n")
    real_write = Path.write_text

    def disk_full(self, text, *args, **kwargs):
        real_write(self, text[:10], *args, **kwargs)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", disk_full)
    with pytest.raises(OSError, match="No space left"):
        Recipe.from_dict(MINIMAL).to_yaml(path)
    monkeypatch.undo()
    assert path.read_text() == "the previous run's recipe\n"
    assert [p.name for p in tmp_path.iterdir()] == ["recipe.yaml"], "no partial file is left behind"
