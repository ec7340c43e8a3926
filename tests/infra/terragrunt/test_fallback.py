"""infra/terragrunt/fallback.py: the executor refuses what it cannot run."""
from __future__ import annotations

import pytest

from infra import terragrunt as tg
from infra.terragrunt import fallback


def test_remote_module_sources_are_refused():
    with pytest.raises(tg.UnsupportedConstruct, match="local paths only"):
        fallback.module_dir("git::git@github.com:opencredo/terraform-modules.git//s3_datalake")
