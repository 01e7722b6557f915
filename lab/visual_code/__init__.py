"""The experiments behind the visual code domain's shipped checkpoints."""
