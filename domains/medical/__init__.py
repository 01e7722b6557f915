"""Medical VLMs: Patho-R1 / Patho-CLIP (pathology), Dolphin-style ultrasound RL, U2-Bench evaluation."""

from zoo.domains import Domain

DOMAIN = Domain(
    name="medical",
    summary="pathology (Patho-R1, Patho-CLIP, PathMMU) and ultrasound (Dolphin-style RL, U2-Bench)",
    entries="domains.medical.entries",
    rewards="domains.medical.rewards",
    datasets={
        "synthetic-pathology": "domains.medical.data:synthetic_pathology",
        "synthetic-ultrasound": "domains.medical.data:synthetic_ultrasound",
        "pathmmu": "domains.medical.data:load_pathmmu",
        "u2bench": "domains.medical.data:load_u2bench_tsv",
    },
    evaluate="domains.medical.evaluate:run",
    benchmarks=(
        "pathmmu", "u2bench-cla", "u2bench-seg", "u2bench-measurement", "u2bench-report",
        "synthetic-pathology-mcq", "synthetic-pathology-vqa", "synthetic-us-<task>",
    ),
)
