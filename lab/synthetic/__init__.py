"""The synthetic field's release: the warm start of the README's first GRPO run (``lab.synthetic.release``)."""
