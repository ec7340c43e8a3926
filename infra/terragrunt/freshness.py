"""Whether a unit applied by this emulator is still what its files say (``TENANTLAKE_ENV=local``).

After a successful apply the runner writes ``applied.json`` into the unit's working directory: the
emulator's pid and start time, a hash of the module it applied, its inputs, and the ETag of its state
object.  A unit another unit depends on is applied again before that one only when this no longer matches
(a no-op ``terraform apply`` costs 25-40 s here).  Against AWS nothing is applied implicitly.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping

from infra.terragrunt.config import UnitRun
from infra.terragrunt.environment import DEFAULT_STATE_REGION, boto_client, state_dir, work_dir

MARKER = "applied.json"


def fingerprint(run: UnitRun) -> dict[str, Any]:
    from infra.local import emulator as emu
    from infra.terragrunt.fallback import module_dir

    state = emu.read_state(state_dir())
    module = module_dir(run.source)
    digest = hashlib.sha256()
    for path in sorted(module.glob("*.tf*")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return {"emulator": [state.pid, state.started_at] if state else None, "module_sha256": digest.hexdigest(),
            "inputs": json.loads(json.dumps(run.inputs, sort_keys=True))}


def _etag(run: UnitRun, env: Mapping[str, str]) -> str | None:
    config = run.backend_config
    s3 = boto_client("s3", config.get("region", DEFAULT_STATE_REGION), env)
    try:
        return s3.head_object(Bucket=config["bucket"], Key=config["key"])["ETag"]
    except s3.exceptions.ClientError:
        return None


def record_applied(run: UnitRun, env: Mapping[str, str]) -> None:
    marker = {**fingerprint(run), "state_etag": _etag(run, env)}
    (work_dir(run.name) / MARKER).write_text(json.dumps(marker, indent=2, sort_keys=True) + "\n")


def forget(run: UnitRun) -> None:
    (work_dir(run.name) / MARKER).unlink(missing_ok=True)


def is_up_to_date(run: UnitRun, env: Mapping[str, str]) -> bool:
    """This emulator applied this module with these inputs, and nothing rewrote the state since."""
    try:
        marker = json.loads((work_dir(run.name) / MARKER).read_text())
    except (OSError, ValueError):
        return False
    current = fingerprint(run)
    if current["emulator"] is None or {k: marker.get(k) for k in current} != current:
        return False
    return marker.get("state_etag") is not None and _etag(run, env) == marker["state_etag"]
