"""`python -m memstore` runs the CLI."""

from memstore.launcher import main

main()
