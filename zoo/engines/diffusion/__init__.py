"""The ``diffusion`` engine: RL of text-to-image diffusion and flow models (diffusers + accelerate + peft).

Six methods behind one recipe field (:mod:`.methods`): Flow-GRPO, DanceGRPO, DDPO, RLCM, TreeGRPO,
Adv-GRPO. The step maths is :mod:`zoo.rl.diffusion_steps` / :mod:`zoo.rl.diffusion_loss`; this
package holds the recipe (:mod:`.recipe`), models (:mod:`.models`), rollouts (:mod:`.sampling`,
:mod:`.tree`), what trains where and in which precision (:mod:`.placement`: LoRA or every weight, replicated or
sharded with FSDP2), the EMA (:mod:`.ema`), the run's objects (:mod:`.setup`), checkpoints (:mod:`.checkpoint`) and
the loop (:mod:`.trainer`). A CPU smoke run takes seconds on the tiny models; GPUs run the same recipe under
``accelerate launch --config_file zoo/launch/<launch>.yaml -m zoo.cli train RECIPE`` (or ``torchrun``).
"""
