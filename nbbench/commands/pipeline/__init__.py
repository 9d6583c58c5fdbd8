"""Input-pipeline subcommands: loader, sweep, feed, and the options they share (options.py)."""
