"""Diffusion-policy PPO on the ``policy`` engine: the DDPM policy, the chain DPPO fine-tunes, the trainer.

Golden source of the schedule: irom-princeton/dppo (MIT) at commit cc7234ad7ff39a8f32de3af903606723a16f0648,
``model/diffusion/sampling.py::cosine_beta_schedule`` and the coefficients of
``model/diffusion/diffusion.py::DiffusionModel.__init__`` (``ddpm_mu_coef1/2``, ``ddpm_logvar_clipped``),
run once for K = 5 (numbers below). The chain and its indices follow ``diffusion_vpg.py::forward``
(``t <= ft_denoising_steps`` kept) and ``get_logprobs`` (pair i is step ``t = K' - 1 - i``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import zoo
from zoo.pipelines.diffusion_policy import DiffusionPolicy, cosine_betas
from zoo.pipelines.policy import PolicyConfig
from zoo.recipe import RecipeError
from zoo.train import run

RECIPES = Path(__file__).resolve().parents[3] / "domains" / "robot" / "recipes"
SMOKE = str(RECIPES / "fetch-push-dppo-smoke.yaml")

DPPO_K5 = {
    "betas": [0.10129407793283463, 0.27954384684562683, 0.47363534569740295, 0.724052369594574, 0.9990000128746033],
    "mu_coef1": [0.9999997615814209, 0.7517487406730652, 0.5781570076942444, 0.46657299995422363, 0.3063907325267792],
    "mu_coef2": [0.0, 0.24389445781707764, 0.38798823952674866, 0.382223904132843, 0.02865130454301834],
    "logvar": [
        -46.051700592041016,
        -2.5216805934906006,
        -1.3732173442840576,
        -0.6408681869506836,
        -0.09967277944087982,
    ],
}


def _policy(steps=5, ft=0, chunk=3, seed=0):
    torch.manual_seed(seed)
    return DiffusionPolicy(PolicyConfig(6, 2, "diffusion-mlp", chunk, (16,), {"denoising_steps": steps,
                                                                            "ft_denoising_steps": ft}))  # fmt: skip


def test_schedule_matches_dppo():
    policy = _policy()
    torch.testing.assert_close(cosine_betas(5), torch.tensor(DPPO_K5["betas"]))
    for name in ("mu_coef1", "mu_coef2", "logvar"):
        torch.testing.assert_close(getattr(policy, name), torch.tensor(DPPO_K5[name]), rtol=1e-5, atol=1e-5)


def test_chain_holds_the_input_of_the_first_fine_tuned_step_then_each_output():
    policy = _policy(steps=5)
    policy.start_fine_tuning(3)
    obs = torch.randn(4, 6)
    action, chain = policy.sample(obs, min_std=0.1, generator=torch.Generator().manual_seed(1))
    assert chain.shape == (4, 4, 3, 2) and torch.equal(chain[:, -1], action)
    assert action.abs().max() <= 1.0
    # replay: the same draws give the same chain, and step i of the chain is t = K' - 1 - i
    generator = torch.Generator().manual_seed(1)
    x = torch.randn((4, 3, 2), generator=generator)
    for t in reversed(range(5)):
        mean, logvar = policy.mean_logvar(x, torch.full((4,), t), obs)
        x = mean + (0.5 * logvar).exp().clamp(min=0.1) * torch.randn(x.shape, generator=generator).clamp(-3, 3)
        if t == 0:
            x = x.clamp(-1, 1)
        if t <= 3:
            torch.testing.assert_close(chain[:, 3 - t], x)


def test_fine_tuning_copies_the_network_and_freezes_the_original():
    policy = _policy()
    policy.start_fine_tuning(2)
    assert all(not p.requires_grad for p in policy.net.parameters())
    assert all(p.requires_grad for p in policy.net_ft.parameters())
    obs, x = torch.randn(3, 6), torch.randn(3, 3, 2)
    for t in (0, 4):
        torch.testing.assert_close(policy.mean_logvar(x, torch.full((3,), t), obs)[0],
                                   policy.mean_logvar(x, torch.full((3,), t), obs, fine_tuned=False)[0])  # fmt: skip
    with torch.no_grad():
        policy.net_ft[0].weight.add_(1.0)
    assert not torch.allclose(
        policy.mean_logvar(x, torch.zeros(3, dtype=torch.long), obs)[0],
        policy.mean_logvar(x, torch.zeros(3, dtype=torch.long), obs, fine_tuned=False)[0],
    )
    torch.testing.assert_close(policy.mean_logvar(x, torch.full((3,), 4), obs)[0],  # t >= K': the frozen net
                               policy.mean_logvar(x, torch.full((3,), 4), obs, fine_tuned=False)[0])  # fmt: skip


def test_one_bc_step_changes_the_noise_network():
    policy = _policy()
    before = {k: v.clone() for k, v in policy.state_dict().items()}
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
    loss = policy.bc_loss(torch.randn(8, 6), torch.rand(8, 3, 2) * 2 - 1, torch.Generator().manual_seed(0))
    loss.backward()
    optimizer.step()
    assert loss.item() > 0 and not torch.equal(before["net.0.weight"], policy.state_dict()["net.0.weight"])


def test_chunk_env_sums_rewards_and_stops_at_the_episode_end():
    from domains.robot.envs import make_fetch_push
    from zoo.engines.policy.dppo import ChunkEnv

    env = ChunkEnv(make_fetch_push(max_episode_steps=6), chunk=4)
    env.reset(seed=0)
    *_, truncated, info = env.step(np.zeros(16, np.float32))
    assert info["env_steps"] == 4 and not truncated
    *_, truncated, info = env.step(np.zeros(16, np.float32))
    assert info["env_steps"] == 2 and truncated  # the time limit fell inside the chunk


@pytest.fixture(scope="module")
def trainer():
    from stable_baselines3.common.vec_env import DummyVecEnv

    from domains.robot.envs import make_fetch_push
    from zoo.engines.policy.dppo import ChunkEnv, DiffusionPPO, minmax_normalization
    from zoo.engines.policy.dppo_settings import DPPOSettings

    config = PolicyConfig(28, 4, "diffusion-mlp", 2, (16,), {"denoising_steps": 4})
    env = DummyVecEnv([lambda: ChunkEnv(make_fetch_push(max_episode_steps=6), 2)] * 2)
    env.seed(0)
    norm = minmax_normalization(
        np.random.default_rng(0).normal(size=(50, 28)), np.random.default_rng(1).uniform(-1, 1, (50, 4))
    )
    settings = DPPOSettings(ft_steps=2, n_steps=4, epochs=2, batch_size=8, gamma=0.9, gae_lambda=0.8)
    return DiffusionPPO(DiffusionPolicy(config), config, norm, env, settings, hidden=(16,), seed=0)


def test_gae_stops_at_episode_ends(trainer):
    batch = {"rewards": torch.tensor([[1.0], [0.0], [2.0]]), "dones": torch.tensor([[0.0], [1.0], [0.0]]),
             "values": torch.tensor([[0.5], [0.2], [0.1]]), "last_values": torch.tensor([0.3])}  # fmt: skip
    adv, returns = trainer.advantages(batch)
    g, lam = 0.9, 0.8
    d2 = 2.0 + g * 0.3 - 0.1
    d1 = 0.0 - 0.2  # the episode ends after step 1: no bootstrap, no recursion
    d0 = 1.0 + g * 0.2 - 0.5
    expected = torch.tensor([[d0 + g * lam * d1], [d1], [d2]])
    torch.testing.assert_close(adv, expected)
    torch.testing.assert_close(returns, expected + batch["values"])


def test_one_iteration_moves_the_fine_tuned_steps_only(trainer):
    frozen = {k: v.clone() for k, v in trainer.policy.net.state_dict().items()}
    tuned = {k: v.clone() for k, v in trainer.policy.net_ft.state_dict().items()}
    trainer.learn()
    assert trainer.num_timesteps == 16  # 2 envs x 4 chunk steps x 2 actions (6-step episodes: 2+2+2)
    assert all(torch.equal(frozen[k], v) for k, v in trainer.policy.net.state_dict().items())
    assert any(not torch.equal(tuned[k], v) for k, v in trainer.policy.net_ft.state_dict().items())
    assert {"train/pg_loss", "train/approx_kl", "train/clip_fraction"} <= set(trainer.logger.name_to_value)


@pytest.fixture(scope="module")
def dppo_run(tmp_path_factory):
    return run(SMOKE, ["training.eval_episodes=2"], output_dir=str(tmp_path_factory.mktemp("dppo") / "run"))


def test_run_exports_pretrained_and_fine_tuned_policies_and_compares_them(dppo_run):
    report = json.loads((dppo_run / "eval.json").read_text())
    assert report["base"]["episodes"] == report["trained"]["episodes"] == 2
    pretrained, final = zoo.load(str(dppo_run / "pretrained")), zoo.load(str(dppo_run / "final"))
    assert final.model.ft_steps == 3 and final.model.net_ft is not None and pretrained.model.net_ft is None
    torch.testing.assert_close(final.model.net.state_dict(), pretrained.model.net.state_dict())
    from domains.robot.envs import make_fetch_push

    env = make_fetch_push(max_episode_steps=20)
    obs, _ = env.reset(seed=0)
    final.reset()
    actions = [final.act(obs) for _ in range(5)]  # one chunk of 4 served from the queue, then a new one
    assert all(a.shape == (4,) and np.isfinite(a).all() for a in actions)


def test_resume_continues_the_dppo_run(tmp_path):
    out = tmp_path / "run"
    run(SMOKE, ["training.steps=1"], output_dir=str(out))
    run(SMOKE, ["training.steps=2"], resume=True, output_dir=str(out))
    state = json.loads((out / "checkpoint-2" / "policy_state.json").read_text())
    assert state["iteration"] == 2 and state["env_steps"] > 0
    assert [r.split(",")[0] for r in (out / "metrics.csv").read_text().splitlines()[1:]] == ["1", "2"]


def test_dppo_recipe_errors_are_named(tmp_path):
    with pytest.raises(RecipeError, match="ft_denoising_steps"):
        run(SMOKE, ["algorithm.ft_denoising_steps=7"], output_dir=str(tmp_path / "a"))
    with pytest.raises(ValueError, match="leave base.model empty"):
        run(SMOKE, ["base.model=fetch-push-bc-tiny"], output_dir=str(tmp_path / "b"))
    with pytest.raises(RecipeError, match="unknown recipe key 'algorithm.clip_finale'. Did you mean algorithm.clip_"):
        run(SMOKE, ["algorithm.clip_finale=0.1"], output_dir=str(tmp_path / "d"))
    with pytest.raises(ValueError, match="offline_episodes"):
        run(SMOKE, ["algorithm.offline_episodes=0"], output_dir=str(tmp_path / "c"))
