"""Shards: large files streamed as WebDataset-style loaders read them, and the tar walk they share.

Layer: measure, as the rest of :mod:`nbbench.probes`.
"""
