import sys

try:
    from .cli import main
except KeyboardInterrupt:  # Ctrl-C while nbbench itself was still importing: 130 and one line
    sys.stderr.write("nbbench: interrupted\n")
    sys.exit(130)

sys.exit(main())
