"""Input-pipeline subcommands: loader, sweep, feed, and the options they share (options.py).

Layer: commands (may import everything below it; never a front end).
"""
