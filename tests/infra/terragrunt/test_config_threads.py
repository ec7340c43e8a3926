"""infra/terragrunt/config.py: units loaded by several workers at once (plan-all/apply-all/destroy-all with
PARALLELISM > 1) evaluate exactly as when loaded one by one. python-hcl2's parser is not thread-safe on its
own: without the lock, about 1 parse in 300 came back wrong here."""
from __future__ import annotations

import concurrent.futures

from infra.terragrunt.config import load_unit
from tests.infra.terragrunt.conftest import SAMPLE_TENANTS


def test_units_loaded_concurrently_equal_units_loaded_alone():
    names = list(SAMPLE_TENANTS)
    alone = {name: load_unit(name) for name in names}
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        loaded = list(pool.map(load_unit, [names[i % len(names)] for i in range(360)]))
    wrong = [run.name for run in loaded if run != alone[run.name]]
    assert wrong == []
