"""``zoo demo NAME|DIR``: try a model in the browser, on a page built from its entry's kind.

People pick a model by trying it. The page opens with the entry's card summary (task, licence,
base, paper), then one tab of the model's kind (a question about an image, a prompt to draw, seeded
episodes of a policy, class names to score) and a reward tab that scores any text against a target
through the same registry and sandbox as training. A model that cannot run here (gated, not
released, offline without cached weights) opens a page that says why and what to do.

Gradio is an optional extra (``pip install 'rl-model-zoo[demo]'``): nothing here imports it until
:func:`zoo.demo.server.launch` runs, so ``import zoo`` stays light.
"""
