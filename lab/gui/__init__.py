"""The experiments behind the gui domain's shipped checkpoints."""
