"""Monitoring subcommands: monitor (a cell or a command), watch and mark (the kernel-long background
monitor), and what they share (common.py).

Layer: commands (may import everything below it; never a front end).
"""
