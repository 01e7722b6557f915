"""Visual code: chart-to-matplotlib (MSRL), image-to-SVG (StarVector, RLRF style), text-to-CadQuery (CAD-RL style)."""

from zoo.domains import Domain

DOMAIN = Domain(
    name="visual_code",
    summary="chart, SVG and CAD code generation rewarded by rendering (MSRL, StarVector/RLRF, CAD-RL style)",
    entries="domains.visual_code.entries",
    rewards="domains.visual_code.rewards",
    datasets={
        "chart-synthetic": "domains.visual_code.data:synthetic_charts",
        "svg-synthetic": "domains.visual_code.data:synthetic_svgs",
        "cad-synthetic": "domains.visual_code.data:synthetic_cad",
        "chartmimic": "domains.visual_code.data:load_chartmimic",
        "plot2code": "domains.visual_code.data:load_plot2code",
        "vincicoder-rl": "domains.visual_code.data:load_vincicoder_rl",
        "svg-stack": "domains.visual_code.data:load_svg_stack",
        "text2cad": "domains.visual_code.data:load_text2cad",
    },
    answer_formats={"svg-code": "domains.visual_code.prompts:reference_code"},
    evaluate="domains.visual_code.evaluate:run",
    # svg-*: SVG-Bench's image-to-SVG test splits, scored with StarVector's metrics (domains/visual_code/svg_bench.py)
    benchmarks=("chartmimic", "plot2code", "chart-synthetic", "svg-stack", "svg-fonts", "svg-icons", "svg-emoji",
                "svg-diagrams"),
    # ChartMimic's dataset/ and Plot2Code's test split are benchmark files (`zoo eval --data chartmimic|plot2code`).
    eval_datasets=("chartmimic", "plot2code"),
)
