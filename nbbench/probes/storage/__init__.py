"""Storage probes: dd, randread, the presets and many small files, over one inspected target.

Layer: measure, as the rest of :mod:`nbbench.probes`.
"""
