"""The experiments behind the driving domain's shipped checkpoints."""
