"""Medical VLMs: Patho-R1 / Patho-CLIP (pathology), Dolphin-style ultrasound RL, U2-Bench evaluation."""
