"""`python -m cli` runs the command line."""

from cli.app import main

main()
