"""GUI grounding and GUI agents: GUI-G1, UI-S1, CRAFT-GUI (recipe only), ScreenSpot evaluation."""

from zoo.domains import Domain

DOMAIN = Domain(
    name="gui",
    summary="GUI grounding and mobile agents (GUI-G1, UI-S1), ScreenSpot and AndroidControl-format evaluation",
    entries="domains.gui.entries",
    rewards="domains.gui.rewards",
    algorithms="domains.gui.algorithms",
    algorithm_names={"loss type": ("gui_g1",)},
    datasets={
        "screenspot": "domains.gui.data:load_screenspot",
        "screenspot-v2": "domains.gui.data:load_screenspot_v2",
        "screenspot-pro": "domains.gui.data:load_screenspot_pro",
        "gui-g1-json": "domains.gui.data:load_gui_g1_json",
        "ui-s1-android-control": "domains.gui.data:load_ui_s1_jsonl",
        "gui-synthetic": "domains.gui.data:load_synthetic",
        "gui-synthetic-episodes": "domains.gui.data:load_synthetic_episodes",
    },
    answer_formats={
        "qwen-bbox-json": "domains.gui.prompts:qwen_bbox_json",
        "ui-s1-action": "domains.gui.prompts:ui_s1_action_response",
        "ui-s1-location-tokens": "domains.gui.prompts:ui_s1_location_response",
    },
    evaluate="domains.gui.evaluate:run",
    benchmarks=("screenspot", "screenspot-v2", "screenspot-pro", "synthetic", "synthetic-tiny", "android-control",
                "android-control-low", "synthetic-episodes"),
    # ScreenSpot, -v2 and -Pro publish test files only. ui-s1-android-control is not listed: it reads UI-S1's
    # training file (android_control_train_example.jsonl, the 1,000 released trajectories) as well as their
    # evaluation split (android_control_evaluation_std.jsonl), so the split is the file a recipe names;
    # gui-g1-json reads GUI-G1's training records; the synthetic sets are generated.
    eval_datasets=("screenspot", "screenspot-v2", "screenspot-pro"),
)
