"""``python -m metabundle``: the ``metabundle`` command."""

from metabundle.cli import main

main()
