"""ChartMimic's low-level metrics on hand-counted lists, and the figure facts read in the sandbox.

Scoring rules: ChartMimic/ChartMimic chart2code/utils/evaluator/{text,layout,color}_evaluator.py at 7ee16fba.
"""

import pytest

from rewards.chart_metrics import color_f1, color_similarity, hex_to_lab, low_level_scores, multiset_f1
from rewards.rendering import close_optional_pools, render
from rewards.rendering.chart_facts import decode_facts


@pytest.fixture(autouse=True, scope="module")
def _shared_pools(render_pool):
    """Default kinds go to the session's pool; the optional kinds' pools stop with this module."""
    yield
    close_optional_pools()


def test_multiset_f1_by_hand():
    # 2 of 3 generated match 2 of 4 reference: P = 2/3, R = 1/2, F1 = 2PR/(P+R) = 4/7
    got = multiset_f1(["a", "b", "x"], ["a", "b", "c", "d"])
    assert got == pytest.approx({"precision": 2 / 3, "recall": 0.5, "f1": 4 / 7})
    assert multiset_f1(["a", "a"], ["a"])["precision"] == 0.5  # each reference item matches once
    assert multiset_f1([], ["a"])["f1"] == 0.0


def test_lab_and_color_similarity_by_hand():
    # white is L*=100, a*=b*=0; black is 0,0,0: deltaE 100 -> similarity 0
    assert hex_to_lab("#FFFFFF") == pytest.approx([100.0, 0.0, 0.0], abs=0.01)
    assert hex_to_lab("#000000") == pytest.approx([0.0, 0.0, 0.0], abs=1e-9)
    assert color_similarity("#FFFFFF", "#000000") == 0.0
    # sRGB red is L*a*b* (53.24, 80.09, 67.20) (CIE formulas; the value skimage.color.rgb2lab gives)
    assert hex_to_lab("#FF0000") == pytest.approx([53.24, 80.09, 67.20], abs=0.02)


def test_color_f1_pairs_within_element_groups():
    same = color_f1({"bar": ["#FF0000", "#0000FF"]}, {"bar": ["#0000FF", "#FF0000"]})
    assert same["f1"] == pytest.approx(1.0)
    # a line colour never matches a bar colour; one bar of two matches exactly: P = 1/2, R = 1/1
    crossed = color_f1({"bar": ["#FF0000"], "line": ["#0000FF"]}, {"bar": ["#FF0000"]})
    assert crossed == pytest.approx({"precision": 0.5, "recall": 1.0, "f1": 2 / 3})


CODE = """import matplotlib.pyplot as plt
fig, axes = plt.subplots(1, 2)
axes[0].bar(['a', 'b'], [1, 2], color=['#ff0000', '#00ff00'])
axes[1].plot([0, 1], [1, 0], color='#0000ff')
axes[1].set_title('T')
"""


def test_chart_facts_from_the_sandbox_and_self_score_one():
    facts = decode_facts(render("matplotlib-facts", CODE, size=(64, 64)).image)
    assert facts["layout"] == [[1, 2, 0, 0, 0, 0], [1, 2, 0, 0, 1, 1]]
    assert sorted(facts["types"]) == ["bar", "bar", "line"]
    assert facts["colors"] == {"bar": ["#FF0000", "#00FF00"], "line": ["#0000FF"]}
    assert "T" in facts["texts"] and "a" in facts["texts"]
    assert low_level_scores(facts, facts) == {"text": 1.0, "layout": 1.0, "type": 1.0, "color": 1.0}


def test_chart_facts_of_broken_code_is_invalid():
    assert render("matplotlib-facts", "import matplotlib.pyplot as plt\n1/0", size=(64, 64)).status == "invalid"
