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
        "pathmmu",
        "u2bench-disease_diagnosis", "u2bench-view_recognition_and_assessment", "u2bench-lesion_localisation",
        "u2bench-organ_detection", "u2bench-keypoint_detection", "u2bench-clinical_value_estimation",
        "u2bench-report_generation", "u2bench-caption_generation",
        "u2bench-cla", "u2bench-seg", "u2bench-measurement", "u2bench-report",
        "clip-zero-shot", "clip-retrieval",
        "synthetic-pathology-mcq", "synthetic-pathology-vqa",
        # domains.medical.data.US_TASKS (a descriptor imports nothing of its domain's code)
        "synthetic-us-classification", "synthetic-us-localization", "synthetic-us-measurement", "synthetic-us-report",
    ),
    # PathMMU's data.json and the U2-Bench release are benchmark files (their validation and test
    # splits included): a recipe training on them must say why (data.allow_eval_data).
    eval_datasets=("pathmmu", "u2bench"),
)
