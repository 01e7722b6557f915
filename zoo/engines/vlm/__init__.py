"""The vision-language engines: GRPO-family RL of VLMs that write text, and their supervised warm start.

One recipe class per loop (:mod:`.recipe`): ``vlm-trl`` (single-turn GRPO on TRL, :mod:`.trl_engine`
with :mod:`.trainer`), ``vlm-semi-online`` (UI-S1's multi-turn loop, :mod:`.semi_online_engine`),
``vlm-verl`` (the export to a verl cluster, :mod:`.verl_engine`) and ``vlm-sft`` (:mod:`.sft_engine`).
All of them load the policy through :mod:`.policy_model` and apply the entry's input contract
(:mod:`.contract`) to the dataset's raw questions.
"""
