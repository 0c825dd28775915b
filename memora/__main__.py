"""`python -m memora` runs the command line."""

from memora.cli import main

main()
