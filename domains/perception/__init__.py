"""General visual RL: VLM-R1, Visual-RFT, Vision-R1, Curr-ReFT, R1-Reward, SCS, Shuffle-R1 (grounding, detection, reasoning)."""

from zoo.domains import Domain

DOMAIN = Domain(
    name="perception",
    summary="general visual RL with verifiable rewards (VLM-R1, Visual-RFT, Vision-R1, Curr-ReFT, R1-Reward, SCS, Shuffle-R1)",
    entries="domains.perception.entries",
    rewards="domains.perception.rewards",
    algorithms="domains.perception.algorithms",
    algorithm_names={"loss type": ("stable_reinforce",), "advantage estimator": ("stable-reinforce",),
                     "policy loss": ("stable_reinforce",), "rollout plug-in": ("shuffle-r1", "scs")},
    datasets={
        "refcoco": "domains.perception.data:load_refcoco",
        "ovdeval": "domains.perception.data:load_ovdeval",
        "lisa-visual-rft": "domains.perception.data:load_lisa",
        "perception-synthetic": "domains.perception.data:load_synthetic",
        "curriculum": "domains.perception.data:load_curriculum",
        "vision-r1-data": "domains.perception.data:load_vision_r1_data",
        "curr-reft-data": "domains.perception.data:load_curr_reft",
        "r1-reward-rl": "domains.perception.data:load_r1_reward_rl",
        "scs-data": "domains.perception.scs_data:load_scs",
    },
    answer_formats={"rejection-sample": "domains.perception.rejection_sft:accepted_answer"},
    evaluate="domains.perception.evaluate:run",
    benchmarks=("refcoco", "lisa-grounding", "synthetic-rec", "ovdeval", "lisa-visual-rft", "vl-reward-bench",
                "vision-r1-coco", "vision-r1-odinw"),
    # OVDEval is a benchmark only. RefCOCO/+/g, LISA and Curr-ReFT-data ship training splits beside their
    # evaluation ones, so a recipe on them is judged by the split its path names (domains/perception/data.py).
    eval_datasets=("ovdeval",),
)
