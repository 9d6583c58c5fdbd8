"""The input pipeline: DataLoader throughput against accelerator use, the settings sweep and the feed.

Layer: measure, as the rest of :mod:`nbbench.probes`.
"""
