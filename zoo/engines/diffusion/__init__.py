"""The ``diffusion`` engine: RL of text-to-image diffusion and flow models (diffusers + accelerate + peft).

Six methods behind one recipe field (:mod:`.methods`): Flow-GRPO, DanceGRPO, DDPO, RLCM, TreeGRPO,
Adv-GRPO. The step maths is :mod:`zoo.rl.diffusion_steps` / :mod:`zoo.rl.diffusion_loss`; this
package holds the recipe (:mod:`.recipe`), models (:mod:`.models`), rollouts (:mod:`.sampling`,
:mod:`.tree`), the run's objects (:mod:`.setup`), checkpoints (:mod:`.checkpoint`) and the loop
(:mod:`.trainer`). A CPU smoke run takes seconds on the tiny models; GPUs run the same recipe
under ``accelerate launch -m zoo.cli train RECIPE``.
"""
