"""The packaged job runs under spark-submit the way EMR on EKS runs it, with a Python that has only what
the cluster's image has: pyspark and py4j. Everything else comes from the artifact and the archive.

What EMR on EKS runs is ``spark-submit <sparkSubmitParameters> <entryPoint> <entryPointArguments>``
(plus the spark-defaults classification as Spark conf). This test takes all of it from the request
the deploy builds for a pipeline run (``run-all --dataset iot``), and changes only what a laptop needs:

* ``--master local[2]`` instead of Kubernetes, and the driver bound to 127.0.0.1;
* the zip, the entrypoint and the dependency archive are local paths instead of their s3:// URIs,
  and the lake is a local folder (EMRFS s3:// does not exist here);
* ``--jars`` gives the locally built Iceberg runtime (``.local/jars/``, spark_jobs/README.md) in place of
  the one EMR's image carries at ``/usr/share/aws/iceberg/lib/``: silver and gold are Iceberg tables;
* the request's interpreter (``/usr/bin/python3.11`` on the image) is a *bare* venv: Python 3.11 whose
  only third-party packages are pyspark and py4j, linked from the project venv through a ``.pth``;
* on Kubernetes, spark-submit in the driver pod unpacks ``--archives`` into the driver's working
  directory (Spark's SparkSubmit, SPARK-33748) and ``spark.kubernetes.driverEnv.PYTHONPATH`` becomes the
  driver's environment; in local client mode Spark does neither, so the test unpacks the archive with
  ``tar`` (what Hadoop's ``FileUtil.unTar`` runs for Spark) and exports that PYTHONPATH itself.
  The executors' side (``spark.executorEnv.PYTHONPATH``) is the request's own.

The working directory is outside the repo and PYTHONPATH holds only ``./deps``: spark_jobs can only
come from the zip, pyyaml and great-expectations only from the archive. Validation is on.
"""
from __future__ import annotations

import datetime
import json
import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from infra.deploy.artifact import build_artifact, contract_sha256
from infra.deploy.job_deps import PYTHONPATH_ENTRY, local_target
from infra.deploy.request import (
    LAYERS, JobSizing, RequestOptions, build_request, entrypoint_arguments, run_plan,
)
from infra.deploy.target import DeployTarget
from infra.deploy.upload import location_of
from infra.local.iceberg_jar import ensure_jar
from spark_jobs.lake.catalog import EMR_ICEBERG_JAR

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]
REPO = Path(__file__).resolve().parents[3]
VENV_BIN = Path(sys.executable).parent
RECORDS = 60
TARGET = DeployTarget(
    tenant_id="acme", region="eu-west-1", bucket="acme-eu-west-1-lake",
    kms_key_arn="arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    role_arn="arn:aws:iam::123456789012:role/acme-emr-job-execution", virtual_cluster_id="abcdefghijklmnopqrstuvwxy",
    log_group="/tenantlake/acme/emr-jobs", glue_databases=(("gold", "acme_gold"), ("silver", "acme_silver")),
)
SMALL = JobSizing(driver_cores=1, driver_memory="1g", executor_instances=1, executor_cores=1, executor_memory="1g",
                  shuffle_partitions=4)
ONLY_FROM_THE_ARCHIVE = ("yaml", "great_expectations", "numpy", "pandas", "pydantic")
PROBE = """import importlib.util, json, sys
print(json.dumps({name: importlib.util.find_spec(name) is not None for name in sys.argv[1:]}))
"""


def bare_python(root: Path) -> Path:
    """A venv of this Python whose only third-party packages are pyspark and py4j (linked, not copied)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    python = root / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True, timeout=60).stdout.strip())
    links = root / "spark-only"
    links.mkdir()
    project_site = Path(sysconfig.get_paths()["purelib"])
    for entry in project_site.iterdir():
        if entry.name.split("-")[0] in ("pyspark", "py4j"):
            (links / entry.name).symlink_to(entry)
    (site / "tenantlake-spark-only.pth").write_text(f"{links}\n")
    return python


def _spark_submit_command(request: dict, local: dict[str, str], lake: Path) -> list[str]:
    """The request's spark-submit line with s3:// URIs swapped for local paths (``local``)."""
    driver = request["jobDriver"]["sparkSubmitJobDriver"]
    params = shlex.split(driver["sparkSubmitParameters"])
    for index, token in enumerate(params):
        uri, _, alias = token.partition("#")
        if uri in local:
            params[index] = local[uri] + (f"#{alias}" if alias else "")
        elif token.startswith(("spark.pyspark.python=", "spark.pyspark.driver.python=")):
            params[index] = f"{token.split('=', 1)[0]}={local['python']}"
    defaults = next(c for c in request["configurationOverrides"]["applicationConfiguration"]
                    if c["classification"] == "spark-defaults")["properties"]
    conf = [arg for key, value in defaults.items() for arg in ("--conf", f"{key}={value}")]
    args = list(driver["entryPointArguments"])
    args[args.index("--lake-uri") + 1] = str(lake)
    return [str(VENV_BIN / "spark-submit"), "--master", "local[2]", "--conf", "spark.ui.enabled=false",
            "--conf", "spark.driver.bindAddress=127.0.0.1", "--conf", "spark.driver.host=127.0.0.1",
            *params, *conf, local[driver["entryPoint"]], *args]


def test_the_pipeline_runs_with_a_bare_python_and_the_archive_as_the_only_dependencies(tmp_path, job_deps_archive):
    deps = job_deps_archive
    assert deps.target == local_target(), "the archive the deploy ships must be the one run here"
    built = build_artifact(tmp_path / "build")
    (spec,) = run_plan(["iot"], list(LAYERS), datetime.date(2024, 5, 1))
    options = RequestOptions(sizing=SMALL, job_deps_uri=deps.uri(TARGET.bucket), python=deps.target.interpreter)
    location = location_of(built, TARGET.bucket)
    request = build_request(TARGET, location, spec, contract_sha256(built, "iot"), options)
    assert request["jobDriver"]["sparkSubmitJobDriver"]["entryPointArguments"][:3] == ["run-all", "--dataset", "iot"]
    assert request["jobDriver"]["sparkSubmitJobDriver"]["entryPointArguments"] == entrypoint_arguments(TARGET, spec)

    lake = tmp_path / "lake"
    start = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    datagen = subprocess.run([sys.executable, "-m", "spark_jobs", "datagen", "--dataset", "iot", "--records",
                              str(RECORDS), "--start", start, "--lake-uri", str(lake)], cwd=REPO, capture_output=True,
                             text=True, timeout=120)
    assert datagen.returncode == 0, datagen.stderr

    python = bare_python(tmp_path / "bare")
    workdir = tmp_path / "driver-pod"
    workdir.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "SPARK_HOME", "VIRTUAL_ENV", "TENANTLAKE_VALIDATION", "PYSPARK_GATEWAY_PORT")}
    env.update(PATH=f"{VENV_BIN}:{env.get('PATH', '')}", SPARK_LOCAL_IP="127.0.0.1")
    probe = workdir / "probe.py"
    probe.write_text(PROBE)
    found = json.loads(subprocess.run([str(python), str(probe), "pyspark", "py4j", "spark_jobs", *ONLY_FROM_THE_ARCHIVE],
                                      cwd=workdir, env=env, capture_output=True, text=True, check=True,
                                      timeout=60).stdout)
    assert found == {"pyspark": True, "py4j": True, "spark_jobs": False, **{m: False for m in ONLY_FROM_THE_ARCHIVE}}

    # What spark-submit does in the driver pod: the archive as ./deps, driverEnv as the environment.
    (workdir / "deps").mkdir()
    subprocess.run(["tar", "-xzf", str(deps.path), "-C", str(workdir / "deps")], check=True, timeout=300)
    params = request["jobDriver"]["sparkSubmitJobDriver"]["sparkSubmitParameters"]
    assert f"spark.kubernetes.driverEnv.PYTHONPATH={PYTHONPATH_ENTRY}" in params
    env.update(PYTHONPATH=PYTHONPATH_ENTRY, PYSPARK_PYTHON=str(python), PYSPARK_DRIVER_PYTHON=str(python))
    found = json.loads(subprocess.run([str(python), str(probe), *ONLY_FROM_THE_ARCHIVE], cwd=workdir, env=env,
                                      capture_output=True, text=True, check=True, timeout=60).stdout)
    assert all(found.values()), found

    local = {location.zip_uri: str(built.zip_path), location.entrypoint_uri: str(built.entrypoint_path),
             deps.uri(TARGET.bucket): str(deps.path), "python": str(python),
             # EMR's own Iceberg jar, in the image at this path; here the local build stands in for it.
             f"local://{EMR_ICEBERG_JAR}": str(ensure_jar(quiet=True))}
    command = _spark_submit_command(request, local, lake)
    result = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=840)
    output = "\n".join(l for l in (result.stdout + result.stderr).splitlines() if " INFO " not in l)
    assert result.returncode == 0, output[-4000:]
    assert "spark.sql.shuffle.partitions=4" in output  # the request's sizing reached the session
    for layer in LAYERS:
        (manifest_path,) = (lake / "reports" / layer / "iot").glob("*/manifest.json")
        manifest = json.loads(manifest_path.read_text())
        assert (manifest["status"], manifest["rows_in"]) == ("succeeded", RECORDS), manifest
        assert manifest["validation"] and {v["status"] for v in manifest["validation"].values()} == {"pass"}, manifest
        summary = json.loads((manifest_path.parent / "summary.json").read_text())  # the DQ report, in the lake
        assert summary["layer"] == layer and summary["dataset"] == "iot"
    assert list((lake / "gold" / "iot_hourly" / "data").rglob("*.parquet"))  # the Iceberg table gold.iot_hourly
