"""The one pattern for citations of files a clone does not have: the team's design notes and
reference folder, the seeds (and their "Task N" steps), the scratch folder. Shared by the
house tests over docs/ (test_docs_stand_alone) and over src/ (test_house_no_private_citations).
"""

from __future__ import annotations

import re

PRIVATE_CITATION = re.compile(
    r"DESIGN\.md|shared/reference|shared/fixtures|shared/seeds|\.\./shared|/tmp/team|"
    r"deep-research-port-plan|deeprefine-skill\.md|ouroboros-provider-adapter|"
    r"cli-contracts\.md|library-anchors\.md|workflow-anchors\.md|undriveable-clis\.md|"
    r"quota-messages\.md|deeprefine-cli\.md|ouroboros\.md|peers-turn[0-9]+\.md|"
    r"\breference/[A-Za-z0-9_-]+\.md|\bTasks? [0-9]+\b"
)
