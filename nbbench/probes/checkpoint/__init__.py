"""Checkpoints: save a model-like state dict and load it back, as training scripts do.

Layer: measure, as the rest of :mod:`nbbench.probes`.
"""
