"""General visual RL: VLM-R1, Visual-RFT, Vision-R1, Curr-ReFT, R1-Reward, SCS, Shuffle-R1 (grounding, detection, reasoning)."""

from zoo.domains import Domain

DOMAIN = Domain(
    name="perception",
    summary="general visual RL with verifiable rewards (VLM-R1, Visual-RFT, Vision-R1, Curr-ReFT, R1-Reward, SCS, Shuffle-R1)",
    entries="domains.perception.entries",
    rewards="domains.perception.rewards",
    algorithms="domains.perception.algorithms",
    datasets={
        "refcoco": "domains.perception.data:load_refcoco",
        "ovdeval": "domains.perception.data:load_ovdeval",
        "lisa-visual-rft": "domains.perception.data:load_lisa",
        "perception-synthetic": "domains.perception.data:load_synthetic",
        "curriculum": "domains.perception.data:load_curriculum",
    },
    answer_formats={"rejection-sample": "domains.perception.rejection_sft:accepted_answer"},
    evaluate="domains.perception.evaluate:run",
    benchmarks=("refcoco", "lisa-grounding", "synthetic-rec", "ovdeval"),
)
