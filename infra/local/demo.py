"""`make demo`: the whole platform end to end on the embedded emulator, saying what each stage did.

1. start (or reuse) the emulator: moto server over HTTPS on 127.0.0.1;
2. provision the `acme` lake with the same command `make apply TENANT=acme` runs, which applies the platform
   units acme depends on first (the shared network, the account's Lake Formation settings in eu-west-1; idempotent:
   a second demo re-plans and finds no changes);
3. generate sample data (with a few bad and late records) into `landing/` for the three datasets;
4. run bronze -> silver -> gold for each dataset on s3a (SSE-KMS with the tenant key), with
   Great Expectations validation per layer; print the row counts per layer;
5. build the data-quality report index and print where it is;
6. print ``python -m spark_jobs status``: per dataset its last run, its silver freshness against its contract's
   target, and the CloudWatch facts (the publishes the jobs put, open alarms) of the tenant's orchestration.

Every step runs the same CLI a user would run, as a subprocess, so the demo proves those commands.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from infra.local import emulator, s3a_jars

REPO_ROOT = Path(__file__).resolve().parents[2]
TENANT = "acme"
DATASETS = ("iot", "clickstream", "inventory")
RECORDS = {"iot": 2000, "clickstream": 2000, "inventory": 400}
BAD_RATE = "0.02"   # silver blocks (exit 4) when one rule fails on more than 1% of rows; 2% bad spreads over rules
LATE_RATE = "0.02"
STEP_TIMEOUT_S = 1800  # one step (apply, a datagen, run-all, the index); a cold run-all takes a few minutes


_step_started: list[float] = []


def _step(number: int, msg: str) -> None:
    _step_done()
    print(f"\n==> [{number}/6] {msg}", flush=True)
    _step_started.append(time.monotonic())


def _step_done() -> None:
    """The previous step's wall time, so a slow demo says which step was slow."""
    if _step_started:
        print(f"    ({time.monotonic() - _step_started.pop():.0f} s)", flush=True)


def _run(cmd: list[str], env: dict[str, str], allowed: tuple[int, ...] = (0,)) -> int:
    print("    $ " + " ".join(cmd[2:] if cmd[:2] == [sys.executable, "-m"] else cmd), flush=True)
    try:
        code = subprocess.run(cmd, cwd=REPO_ROOT, env=env, timeout=STEP_TIMEOUT_S).returncode
    except subprocess.TimeoutExpired:
        raise SystemExit(f"demo: step did not finish within {STEP_TIMEOUT_S} s: {' '.join(cmd)}") from None
    if code not in allowed:
        raise SystemExit(f"demo: step failed with exit code {code}: {' '.join(cmd)}")
    return code


def main() -> int:
    started = time.monotonic()
    state_dir = Path(os.environ.get("TENANTLAKE_STATE_DIR") or REPO_ROOT / ".local")
    py = [sys.executable, "-m"]

    _step(1, "emulator: start or reuse moto server (HTTPS) on 127.0.0.1")
    state, reused = emulator.start(state_dir)
    print(f"    {'reusing' if reused else 'started'} {state.endpoint} (pid {state.pid})")
    jars = ",".join(str(p) for p in s3a_jars.ensure_jars())
    env = {**os.environ, **emulator.env_vars(state), "TENANTLAKE_STATE_DIR": str(state_dir),
           "TENANTLAKE_SPARK_JARS": jars}

    _step(2, f"infrastructure: apply tenant '{TENANT}' (tenants/{TENANT}/terragrunt.hcl) on the emulator, after the "
             "platform units it depends on (network, Lake Formation settings)")
    _run(py + ["infra.terragrunt", "apply", "--tenant", TENANT], env)
    lake = json.loads((state_dir / "tenants" / TENANT / "lake.json").read_text())
    print(f"    lake bucket s3://{lake['lake_bucket_name']}  key {lake['kms_key_arn']}")

    _step(3, "data: generate landing files (seeded; 2% bad and 2% late records)")
    for dataset in DATASETS:
        _run(py + ["spark_jobs", "datagen", "--tenant", TENANT, "--dataset", dataset, "--records",
                   str(RECORDS[dataset]), "--bad-rate", BAD_RATE, "--late-rate", LATE_RATE], env)

    _step(4, "pipeline: bronze -> silver -> gold on s3a, validated per layer")
    # Exit 5 = only warn-severity expectations failed: reported, not fatal for a demo.
    _run(py + ["spark_jobs", "run-all", "--tenant", TENANT, "--allow-warn"], env)

    _step(5, "data quality: build the report index")
    _run(py + ["spark_jobs.quality", "index", "--tenant", TENANT], env)

    _step(6, "status: each dataset's last run, freshness against its target, open alarms")
    _run(py + ["spark_jobs", "status", "--tenant", TENANT], env)
    _step_done()

    print(f"\n==> done in {time.monotonic() - started:.0f}s.")
    print(f"    outputs:  s3://{lake['lake_bucket_name']}/{{bronze,silver,gold,quarantine,reports}}/ on {state.endpoint}")
    print(f"    counts:   eval \"$(.venv/bin/python -m infra.local.emulator env)\" && "
          f".venv/bin/python -m spark_jobs counts --tenant {TENANT}")
    print(f"    query:    .venv/bin/python -m spark_jobs query --tenant {TENANT} "
          "\"SELECT count(*) FROM gold.iot_hourly\"  (same environment; silver.* and gold.* are Iceberg tables)")
    print(f"    status:   .venv/bin/python -m spark_jobs status --tenant {TENANT}  (same environment; the state machine, "
          "alerts and alarms of acme's orchestration: modules/README.md, \"Orchestration and alerts\")")
    print(f"    usage:    make usage TENANT={TENANT}  (bytes, runs and an estimated cost per layer; lineage events "
          f"of every run are under s3://{lake['lake_bucket_name']}/reports/lineage/)")
    print("    the emulator keeps running; `make emulator-down` stops it (and drops its data).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
