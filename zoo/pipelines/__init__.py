"""Inference pipelines, one per model kind, imported lazily (``zoo`` stays cheap to import).

Which pipeline serves a kind is named by its spec class (:data:`zoo.kinds.SPECS`).
"""
