"""The leaf package under both ``rewards`` and ``zoo``: the registry pattern and coordinate frames.

It imports nothing of this project and nothing heavy (no torch, numpy or PIL), so that
``import zoo`` and ``import rewards`` stay cheap and neither has to import the other for a
concept they share.
"""
