"""The packaged artifact runs a layer under spark-submit with the arguments EMR would pass.

What EMR on EKS runs is ``spark-submit <sparkSubmitParameters> <entryPoint> <entryPointArguments>``
(plus the spark-defaults classification as Spark conf). This test runs exactly that locally with
``--master local[2]``: the zip and entrypoint come from the built artifact, the parameters and
arguments from the same request builder, and only two things differ from EMR: the zip is a local
path instead of its s3:// URI, and the lake is a local folder (EMRFS s3:// does not exist here).
The working directory is outside the repo and PYTHONPATH is unset, so spark_jobs can only come
from the zip: the test proves the artifact is self-contained.
"""
from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from infra.deploy.artifact import build_artifact, contract_sha256
from infra.deploy.request import RunSpec, build_request, entrypoint_arguments
from infra.deploy.target import DeployTarget
from infra.deploy.upload import location_of

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
REPO = Path(__file__).resolve().parents[3]
VENV_BIN = Path(sys.executable).parent
RECORDS = 200
TARGET = DeployTarget(
    tenant_id="acme", region="eu-west-1", bucket="acme-eu-west-1-lake",
    kms_key_arn="arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    role_arn="arn:aws:iam::123456789012:role/acme-emr-job-execution", virtual_cluster_id="abcdefghijklmnopqrstuvwxy",
    log_group="/tenantlake/acme/emr-jobs",
)


def _spark_submit_command(request: dict, zip_path: Path, entrypoint: Path, lake: Path) -> list[str]:
    driver = request["jobDriver"]["sparkSubmitJobDriver"]
    params = driver["sparkSubmitParameters"].split(" ")
    assert params[:2] == ["--py-files", driver["sparkSubmitParameters"].split(" ")[1]]
    params[1] = str(zip_path)
    defaults = next(c for c in request["configurationOverrides"]["applicationConfiguration"]
                    if c["classification"] == "spark-defaults")["properties"]
    conf = [arg for key, value in defaults.items() for arg in ("--conf", f"{key}={value}")]
    args = list(driver["entryPointArguments"])
    args[args.index("--lake-uri") + 1] = str(lake)
    return [str(VENV_BIN / "spark-submit"), "--master", "local[2]", "--conf", "spark.ui.enabled=false",
            *params, *conf, str(entrypoint), *args]


def test_packaged_entrypoint_runs_bronze_from_the_zip_alone(tmp_path):
    built = build_artifact(tmp_path / "build")
    spec = RunSpec("iot", "bronze", datetime.date(2024, 5, 1))
    request = build_request(TARGET, location_of(built, TARGET.bucket), spec, contract_sha256(built, "iot"))
    lake = tmp_path / "lake"
    assert request["jobDriver"]["sparkSubmitJobDriver"]["entryPointArguments"] == entrypoint_arguments(TARGET, spec)

    datagen = subprocess.run([sys.executable, "-m", "spark_jobs", "datagen", "--dataset", "iot", "--records",
                              str(RECORDS), "--lake-uri", str(lake)], cwd=REPO, capture_output=True, text=True)
    assert datagen.returncode == 0, datagen.stderr

    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_HOME")}
    env.update(PATH=f"{VENV_BIN}:{env.get('PATH', '')}", PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    isolated = subprocess.run([sys.executable, "-c", "import spark_jobs"], cwd=workdir, env=env, capture_output=True)
    assert isolated.returncode != 0, "spark_jobs must not be importable outside the zip for this test to mean anything"

    command = _spark_submit_command(request, built.zip_path, built.entrypoint_path, lake)
    result = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=280)
    assert result.returncode == 0, "\n".join(l for l in (result.stdout + result.stderr).splitlines() if " INFO " not in l)[-3000:]
    manifests = list((lake / "reports" / "bronze" / "iot").glob("*/manifest.json"))
    assert len(manifests) == 1, result.stdout
    manifest = json.loads(manifests[0].read_text())
    assert manifest["rows_in"] == RECORDS and manifest["rows_out"] == RECORDS
    assert list((lake / "bronze" / "iot").rglob("*.parquet"))
