"""GUI grounding and GUI agents: GUI-G1, UI-S1, CRAFT-GUI (recipe only), ScreenSpot evaluation."""
