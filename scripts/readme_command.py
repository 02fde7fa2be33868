"""Print README.md's quick-start command N (the Nth command line of the "Quick start" code
block), so CI runs exactly what a new user copies: `python scripts/readme_command.py 1`.
`--env` prints only its leading `NAME="value"` assignments (for other CI steps to reuse)."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def quick_start_commands(text: str) -> list[str]:
    section = text.split("## Quick start", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    if block is None:
        raise SystemExit("README.md: no bash block under '## Quick start'")
    return [ln for ln in block.group(1).splitlines() if ln.strip() and not ln.startswith("#")]


def main(argv: list[str]) -> int:
    env_only = "--env" in argv
    numbers = [a for a in argv if a != "--env"]
    commands = quick_start_commands(README.read_text(encoding="utf-8"))
    command = commands[int(numbers[0]) - 1]
    if env_only:
        words = shlex.split(command)
        assignments = words[: next(i for i, w in enumerate(words) if "=" not in w)]
        print(" ".join(shlex.quote(a) for a in assignments))
    else:
        print(command)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
