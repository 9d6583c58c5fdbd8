"""Storage subcommands: dd, randread, files and disk (disk.py), checkpoint and shards (ckpt.py), s3
(objects.py), make-dataset (dataset.py), and the PATH check the panel shows (pathinfo.py).

Layer: commands (may import everything below it; never a front end).
"""
