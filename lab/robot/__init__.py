"""The experiments behind the robot domain's shipped checkpoints."""
