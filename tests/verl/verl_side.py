"""What verl 0.9.1 itself makes of a ``zoo train --engine vlm-verl --dry-run`` export; run under ``.venv-verl``.

``python tests/verl/verl_side.py CHECK[,CHECK...] VERL_DIR OUT_JSON`` reads the export's ``verl/`` folder with
verl's own code and writes what verl saw as JSON, ``{check: what it saw}``, which
``tests/verl/test_verl_reads_export.py`` (main venv) compares with the zoo's side. The checks given run in one
process, in the order given, each composing its own config: verl's imports (about 10 CPU-seconds) are paid once per
export rather than once per check.

* ``config``: ``ppo_trainer.yaml`` composed with the export's overrides through Hydra's compose API and checked by
  ``verl.utils.config.validate_config``, as ``verl/trainer/main_ppo.py::main`` does;
* ``reward``: the reward module loaded by ``verl.trainer.ppo.reward.load_reward_manager`` (the naive manager around
  ``get_custom_reward_fn``), scoring the completions listed in ``--completions``;
* ``lengths``: the rows ``RLHFDataset`` keeps as exported, and with its own length filter at and below the exported
  ``data.max_prompt_length``;
* ``dataset``: the parquet read by ``RLHFDataset``, each prompt's images taken out by the dataset class and its
  tokens built by verl's rollout prompt builder (``create_continuous_token_builder``), as the single-turn agent
  loop does (``verl/experimental/agent_loop/single_turn_agent_loop.py::run``);
* ``train``: ``verl.trainer.main_ppo`` for two steps on this machine's CPU (where it stops is the result).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import verl
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig


def composed(folder: Path, extra: tuple[str, ...] = ()) -> DictConfig:
    """``ppo_trainer`` with the export's ``verl_args.yaml`` overrides (plus ``extra``), as ``main_ppo`` builds it."""
    import yaml

    config_dir = str(Path(verl.__file__).parent / "trainer" / "config")
    args = yaml.safe_load((folder / "verl_args.yaml").read_text())
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        return compose(config_name="ppo_trainer", overrides=[*(f"{k}={v}" for k, v in args.items()), *extra])


def check_config(folder: Path) -> dict[str, Any]:
    """The composed values the zoo sets, after verl's own validation of the whole config."""
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    config = composed(folder)
    validate_config(config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    actor, rollout = config.actor_rollout_ref.actor, config.actor_rollout_ref.rollout
    return {
        "adv_estimator": config.algorithm.adv_estimator,
        "norm_adv_by_std_in_grpo": config.algorithm.norm_adv_by_std_in_grpo,
        "use_kl_in_reward": config.algorithm.use_kl_in_reward,
        "loss_mode": actor.policy_loss.loss_mode,
        "loss_agg_mode": actor.loss_agg_mode,
        "loss_scale_factor": actor.get("loss_scale_factor"),
        "clip_ratio_low": actor.clip_ratio_low,
        "clip_ratio_high": actor.clip_ratio_high,
        "clip_ratio_c": actor.clip_ratio_c,
        "use_kl_loss": actor.use_kl_loss,
        "kl_loss_coef": actor.kl_loss_coef,
        "kl_loss_type": actor.kl_loss_type,
        "lr": actor.optim.lr,
        "lr_scheduler_type": actor.optim.lr_scheduler_type,
        "lr_warmup_steps": actor.optim.lr_warmup_steps,
        "ppo_epochs": actor.ppo_epochs,
        "ppo_mini_batch_size": actor.ppo_mini_batch_size,
        "train_batch_size": config.data.train_batch_size,
        "max_prompt_length": config.data.max_prompt_length,
        "rollout_prompt_length": rollout.prompt_length,
        "filter_overlong_prompts": config.data.filter_overlong_prompts,
        "image_patch_size": config.data.image_patch_size,
        "mm_processor_kwargs": dict(config.data.mm_processor_kwargs),
        "max_response_length": config.data.max_response_length,
        "rollout_n": rollout.n,
        "temperature": rollout.temperature,
        "top_p": rollout.top_p,
        "train_files": config.data.train_files,
        "val_files": config.data.val_files,
        "reward_path": config.reward.custom_reward_function.path,
        "reward_name": config.reward.custom_reward_function.name,
        "total_training_steps": config.trainer.total_training_steps,
        "n_gpus": config.trainer.n_gpus_per_node * config.trainer.nnodes,
    }


def check_reward(folder: Path, completions: Path) -> dict[str, Any]:
    """Each completion of ``completions`` (JSON rows: ``completion`` and the parquet row's ``data_source``,
    ``reward_model``, ``extra_info``) scored by verl's reward manager: the response text it decoded and its score."""
    import numpy as np
    import torch
    from transformers import AutoTokenizer
    from verl import DataProto
    from verl.trainer.ppo.reward import load_reward_manager

    config = composed(folder)
    tokenizer = AutoTokenizer.from_pretrained(config.actor_rollout_ref.model.path)
    manager = load_reward_manager(config, tokenizer)
    scored = []
    for item in json.loads(completions.read_text()):
        ids = tokenizer.encode(item["completion"], add_special_tokens=False)
        pad = [tokenizer.pad_token_id or 0] * 3  # right padding, as the rollout pads responses
        data = DataProto.from_dict(
            tensors={"prompts": torch.zeros(1, 2, dtype=torch.long), "responses": torch.tensor([ids + pad]),
                     "attention_mask": torch.tensor([[1, 1] + [1] * len(ids) + [0] * len(pad)])},
            non_tensors={key: np.array([item[key]], dtype=object)
                         for key in ("data_source", "reward_model", "extra_info")},
        )  # fmt: skip
        result = manager.loop.run_until_complete(manager.run_single(data))
        info = result["reward_extra_info"]
        scored.append({"decoded": tokenizer.decode(ids, skip_special_tokens=True), "score": result["reward_score"],
                       "components": {k: v for k, v in info.items() if isinstance(v, float)}})  # fmt: skip
    return {"manager": type(manager).__name__, "scored": scored}


def check_dataset(folder: Path) -> dict[str, Any]:
    """Per row of verl's dataset: the messages' text, the images verl hands the rollout, and the prompt tokens."""
    from transformers import AutoConfig, AutoProcessor
    from verl.utils.dataset.rl_dataset import get_dataset_class
    from verl.utils.tokenizer.continuous_token_wiring import create_continuous_token_builder

    config = composed(folder)
    path = config.actor_rollout_ref.model.path
    processor = AutoProcessor.from_pretrained(path)
    dataset = get_dataset_class(config.data)(config.data.train_files, processor.tokenizer, config.data, processor)
    builder = create_continuous_token_builder(processor.tokenizer, hf_model_type=AutoConfig.from_pretrained(path)
                                              .model_type, chat_template_kwargs={},
                                              mm_processor_kwargs=config.data.get("mm_processor_kwargs", {}),
                                              processor=processor)  # as the agent loop does (agent_loop.py:243-252)
    patch = processor.image_processor.patch_size  # what the agent loop passes (agent_loop.py:299)
    rows = []
    for index in range(len(dataset)):
        row = dataset[index]
        messages = list(row["raw_prompt"])
        images, _, _ = asyncio.run(type(dataset).process_multi_modal_info(messages, patch, config.data))
        mm: dict[str, Any] = {}
        ids = builder.build_initial_tokens(messages, images=images, mm_inputs_out=mm)
        rows.append({
            "index": row["index"],
            "sample_id": row["extra_info"]["sample_id"],
            "messages": [{"role": m["role"], "parts": [p["text"] if p["type"] == "text" else p["type"]
                                                       for p in _parts(m["content"])]} for m in messages],
            "images": [{"size": list(im.size), "sha256": hashlib.sha256(im.convert("RGB").tobytes()).hexdigest()}
                       for im in images or []],
            "input_ids": [int(i) for i in ids],
            "image_grid_thw": mm["image_grid_thw"].tolist() if "image_grid_thw" in mm else None,
        })  # fmt: skip
    return {"length": len(dataset), "dataset_class": type(dataset).__name__, "rows": rows}


def check_lengths(folder: Path) -> dict[str, Any]:
    """How many rows ``RLHFDataset`` keeps: as exported (``filter_overlong_prompts`` off), and with verl's own length
    filter on at the exported ``max_prompt_length`` and at one token less (the filter counts each prompt, image tokens
    included, ``rl_dataset.py:206-244``): all, then fewer, when the export's length is verl's longest prompt."""
    from transformers import AutoProcessor
    from verl.utils.dataset.rl_dataset import get_dataset_class

    config = composed(folder)
    processor = AutoProcessor.from_pretrained(config.actor_rollout_ref.model.path)
    longest = config.data.max_prompt_length

    def kept(*extra: str) -> int:
        data = composed(folder, extra).data
        return len(get_dataset_class(data)(data.train_files, processor.tokenizer, data, processor))

    return {"rows": kept(), "kept_at_max": kept("data.filter_overlong_prompts=true"),
            "kept_below_max": kept("data.filter_overlong_prompts=true", f"data.max_prompt_length={longest - 1}")}


def _parts(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def check_train(folder: Path, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """``main_ppo`` for two steps on CPU (HF rollout, one worker); where verl stops, if it does, is the result."""
    import os
    import traceback

    from verl.trainer.main_ppo import main

    os.environ["HYDRA_FULL_ERROR"] = "1"  # let verl's exception through instead of hydra's SystemExit

    overrides = [
        "trainer.total_training_steps=2",
        "trainer.device=cpu",
        "trainer.n_gpus_per_node=1",
        "trainer.save_freq=-1",
        "actor_rollout_ref.rollout.name=hf",
        "ray_kwargs.ray_init.num_cpus=2",
        "+ray_kwargs.ray_init.include_dashboard=false",
    ]
    sys.argv = ["main_ppo", *_override_list(folder), *overrides, *extra]
    try:
        main()
    except BaseException as err:  # noqa: BLE001 - where verl stops is what this check reports
        text = "".join(traceback.format_exception(err))  # a Ray actor's error carries its remote traceback as text
        frames = re.findall(r'File "([^"]*/verl/[^"]*)", line (\d+)', text)
        cause = getattr(err, "cause", None) or err
        return {"finished": False, "error": f"{type(cause).__name__}: {cause}".splitlines()[-1][:500],
                "where": f"{_relative(frames[-1][0])}:{frames[-1][1]}" if frames else None}  # fmt: skip
    return {"finished": True}


def _override_list(folder: Path) -> list[str]:
    import yaml

    return [f"{k}={v}" for k, v in yaml.safe_load((folder / "verl_args.yaml").read_text()).items()]


def _relative(filename: str) -> str:
    root = str(Path(verl.__file__).parent.parent)
    return filename[len(root) + 1 :] if filename.startswith(root) else filename


CHECKS = {"config": check_config, "reward": check_reward, "dataset": check_dataset, "lengths": check_lengths,
          "train": check_train}


def _check_list(text: str) -> list[str]:
    """``"config,reward"`` -> ``["config", "reward"]``, every name one of :data:`CHECKS`."""
    checks = text.split(",")
    unknown = [c for c in checks if c not in CHECKS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown check(s) {unknown}: choose from {sorted(CHECKS)}")
    return checks


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checks", type=_check_list,
                        help=f"comma-separated checks of {sorted(CHECKS)}, run in the order given")
    parser.add_argument("folder", type=Path, help="the export's verl/ folder (RUN_DIR/verl)")
    parser.add_argument("out", type=Path, help="where to write what verl saw (JSON: check -> what it saw)")
    parser.add_argument("--completions", type=Path, help="the reward check's completions (JSON)")
    parser.add_argument("--override", action="append", default=[], help="the train check's extra Hydra override")
    options = parser.parse_args()
    extras = {"reward": {"completions": options.completions}, "train": {"extra": tuple(options.override)}}
    seen = {check: CHECKS[check](options.folder.resolve(), **extras.get(check, {})) for check in options.checks}
    options.out.write_text(json.dumps(seen, indent=1))
