"""Drift between the agent CLIs agentport verified and their newest releases.

Reads the pinned versions from CI's install steps (.ci/steps/20-agent-clis,
21-more-agent-clis: npm `package@version`; 22-hermes: PyPI `hermes-agent==version`), asks
the registries for the newest release of each, and prints a Markdown table. With `--run`,
every CLI whose newest release differs is installed into its own prefix (npm, or a venv for
hermes), a bin folder is made of the pinned CLIs with the newer ones in their place, and the
real-CLI contract tests run against it inside `scripts/test.sh` (loopback only), filtered
to that CLI: the table gains the tests passed / failed per CLI. Nothing in the repository
changes; updating a pin (and `verified_against` in the catalog) is a reviewed commit.

Usage: python scripts/cli_drift.py [--run] [--prefix DIR]
Exit code: 0 when nothing drifted or every drifted CLI passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STEPS = ROOT / ".ci" / "steps"
# the real-CLI contract tests (each filters by the CLI's name with -k)
CONTRACT_TESTS = (
    "tests/contract/test_backends_contract.py",
    "tests/contract/test_more_clis_contract.py",
    "tests/contract/test_fault_matrix.py",
    "tests/contract/test_least_privilege_contract.py",
    "tests/contract/test_reasoning_effort_contract.py",
    "tests/contract/test_user_cli_setup_contract.py",
    "tests/contract/test_quota_contract.py",
    "tests/contract/test_quota_contract_more_clis.py",
    "tests/contract/test_hermes_contract.py",
    "tests/contract/test_grok_contract.py",
    "tests/contract/test_images_contract.py",
    "tests/contract/test_web_research_more_clis.py",
)
_NPM_PIN = re.compile(r'"(@?[\w.\-/]+)@(\d[\w.\-]*)"')
_PIP_PIN = re.compile(r'PIN="([\w\-]+)==([\w.\-]+)"')
# npm package -> the executable (and the backend name the tests filter on)
EXECUTABLES = {
    "@openai/codex": "codex",
    "@anthropic-ai/claude-code": "claude",
    "@google/gemini-cli": "gemini",
    "opencode-ai": "opencode",
    "@qwen-code/qwen-code": "qwen",
    "@mariozechner/pi-coding-agent": "pi",
    "@github/copilot": "copilot",
    "@vibe-kit/grok-cli": "grok",
    "hermes-agent": "hermes",
}


@dataclass
class Pin:
    package: str
    pinned: str
    registry: str  # "npm" or "pypi"
    newest: str | None = None
    passed: int | None = None
    failed: int | None = None

    @property
    def cli(self) -> str:
        return EXECUTABLES.get(self.package, self.package.rsplit("/", 1)[-1])

    @property
    def drifted(self) -> bool:
        return self.newest is not None and self.newest != self.pinned


def pins() -> list[Pin]:
    """Every pinned CLI of CI's install steps."""
    found: list[Pin] = []
    for step in ("20-agent-clis", "21-more-agent-clis"):
        text = (STEPS / step).read_text(encoding="utf-8")
        block = text[text.index("PINS=(") : text.index(")", text.index("PINS=("))]
        found += [Pin(pkg, ver, "npm") for pkg, ver in _NPM_PIN.findall(block)]
    hermes = _PIP_PIN.search((STEPS / "22-hermes").read_text(encoding="utf-8"))
    if hermes:
        found.append(Pin(hermes.group(1), hermes.group(2), "pypi"))
    return found


def newest(pin: Pin) -> str | None:
    """The registry's newest release, or None when it cannot be asked."""
    if pin.registry == "npm":
        out = subprocess.run(
            ["npm", "view", pin.package, "version"], capture_output=True, text=True, timeout=60
        )
        return out.stdout.strip() or None
    out = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", pin.package],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    found = re.search(r"\(([^)]+)\)", out.stdout)
    return found.group(1) if found else None


def install(pin: Pin, prefix: Path) -> Path:
    """Install *pin*'s newest release under *prefix*; the executable's path."""
    assert pin.newest is not None
    if pin.registry == "npm":
        subprocess.run(
            ["npm", "install", "--global", "--prefix", str(prefix), "--no-audit", "--no-fund",
             "--loglevel=error", f"{pin.package}@{pin.newest}"],
            check=True,
        )  # fmt: skip
        return prefix / "bin" / pin.cli
    venv = prefix / f"{pin.cli}-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
         f"{pin.package}=={pin.newest}"],
        check=True,
    )  # fmt: skip
    return venv / "bin" / pin.cli


def pinned_bin_dir() -> Path | None:
    prefix = Path(os.environ.get("AGENTPORT_CLI_PREFIX") or
                  Path.home() / ".cache" / "agentport-ci" / "agent-clis")  # fmt: skip
    marker = prefix / "bin-dir.txt"
    return Path(marker.read_text().strip()) if marker.is_file() else None


def run_contract(pin: Pin, bin_dir: Path, report: Path) -> None:
    """The contract tests of *pin*'s CLI against *bin_dir*; counts into *pin*."""
    env = {**os.environ, "AGENTPORT_CLI_BIN_DIR": str(bin_dir)}
    if pin.cli == "hermes":  # its tests read <prefix>/bin-dir.txt (.ci/steps/22-hermes)
        hermes = report.parent / "hermes-prefix"
        hermes.mkdir(exist_ok=True)
        (hermes / "bin-dir.txt").write_text(str((bin_dir / "hermes").resolve().parent) + "\n")
        env["AGENTPORT_HERMES_PREFIX"] = str(hermes)
    tests = [t for t in CONTRACT_TESTS if (ROOT / t).exists()]
    subprocess.run(
        ["bash", "scripts/test.sh", "-q", "-p", "no:cacheprovider", "-k", pin.cli,
         f"--junitxml={report}", *tests],
        cwd=ROOT, env=env, check=False,
    )  # fmt: skip
    if not report.exists():
        pin.passed, pin.failed = 0, 1
        return
    suite = ET.parse(report).getroot()
    cases = suite.iter("testcase")
    failed = skipped = total = 0
    for case in cases:
        total += 1
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None:
            skipped += 1
    pin.passed, pin.failed = total - failed - skipped, failed


def table(found: list[Pin]) -> str:
    lines = [
        "| CLI | package | verified | newest | drift | contract tests |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for p in found:
        drift = "yes" if p.drifted else ("no" if p.newest else "unknown")
        tests = "" if p.passed is None else f"{p.passed} passed, {p.failed} failed"
        lines.append(
            f"| {p.cli} | {p.package} | {p.pinned} | {p.newest or '?'} | {drift} | {tests} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", action="store_true", help="install and test the newer ones")
    parser.add_argument("--prefix", type=Path, help="where to install them (default: a temp dir)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    found = pins()
    for pin in found:
        pin.newest = newest(pin)
    drifted = [p for p in found if p.drifted]
    if args.run and drifted:
        base = pinned_bin_dir()
        prefix = args.prefix or Path(tempfile.mkdtemp(prefix="agentport-drift-"))
        mixed = prefix / "mixed-bin"
        mixed.mkdir(parents=True, exist_ok=True)
        for entry in base.iterdir() if base else ():
            link = mixed / entry.name
            if not link.exists():
                link.symlink_to(entry)
        for pin in drifted:
            exe = install(pin, prefix)
            link = mixed / pin.cli
            link.unlink(missing_ok=True)
            link.symlink_to(exe)
        for pin in drifted:
            run_contract(pin, mixed, prefix / f"{pin.cli}.xml")
    if args.json:
        print(json.dumps([vars(p) | {"cli": p.cli, "drifted": p.drifted} for p in found], indent=2))
    else:
        print(table(found))
    return 1 if any(p.failed for p in drifted) else 0


if __name__ == "__main__":
    raise SystemExit(main())
