"""`python -m agentport` runs the CLI."""

from .cli import main

main()
