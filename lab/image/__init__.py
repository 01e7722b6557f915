"""The experiments behind the image domain's shipped checkpoints."""
