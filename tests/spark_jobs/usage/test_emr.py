"""spark_jobs/usage/emr.py: vCPU-hours and GB-hours of EMR on EKS job runs, from ``describe_job_run`` of runs
submitted with the deploy's own request (moto over HTTPS; the test moves them to COMPLETED, as EMR would)."""
from __future__ import annotations

import dataclasses
import datetime as dt

import botocore.session

from infra.deploy.request import JobSizing, RequestOptions, RunSpec, build_request
from infra.deploy.target import target_from_outputs
from spark_jobs.usage import cost, emr
from tests.infra.deploy.conftest import driven_emulator, tenant_outputs  # noqa: F401 - fixtures
from tests.infra.deploy.test_request import LOCATION


def test_emr_on_eks_describe_job_run_has_no_utilisation_figures():
    """Why the figures are computed: the service model's JobRun carries sizing and times, not usage
    (EMR Serverless' JobRun has billedResourceUtilization; EMR on EKS' has not)."""
    members = botocore.session.get_session().get_service_model("emr-containers").shape_for("JobRun").members
    assert "billedResourceUtilization" not in members and "totalResourceUtilization" not in members
    assert {"createdAt", "finishedAt", "jobDriver", "configurationOverrides", "tags"} <= set(members)


def test_requested_resources_follow_sparks_kubernetes_rules():
    assert emr.requested(cost.LOCAL_RUN_SIZING) == (5.0, 2.8 + 2 * 5.6)  # 0.4 overhead for PySpark
    assert emr.requested({"spark.executor.memoryOverhead": "1g", "spark.driver.memory": "512m"}) == (
        3.0, 0.5 + 384 / 1024 + 2 * (1 + 1))
    assert emr.memory_gb("2048") == 2.0 and emr.memory_gb("1t") == 1024.0


def test_quoted_submit_parameters_are_read_as_spark_submit_reads_them():
    """A run submitted by hand may quote its values: shell words, as spark-submit gets them, not space-split."""
    job_run = {"jobDriver": {"sparkSubmitJobDriver": {"sparkSubmitParameters": (
        "--conf \"spark.executor.memory=8g\" --conf 'spark.driver.extraJavaOptions=-XX:+UseG1GC --conf x=y' "
        "--conf spark.executor.instances=4 --archives s3://b/deps.tar.gz#deps")}},
        "configurationOverrides": {"applicationConfiguration": [
            {"classification": "spark-defaults", "properties": {"spark.executor.memory": "1g"}}]}}
    conf = emr.run_conf(job_run)
    assert conf == {"spark.executor.memory": "8g", "spark.executor.instances": "4",
                    "spark.driver.extraJavaOptions": "-XX:+UseG1GC --conf x=y"}
    assert emr.requested(conf) == (1 + 4 * 1, (1 + 0.4) + 4 * (8 + 0.4 * 8))
    assert emr.submit_words("--conf 'a=b") == ["--conf", "'a=b"]  # an unclosed quote: split on spaces


def test_local_run_sizing_is_the_deploys_default():
    sizing = JobSizing()
    assert cost.LOCAL_RUN_SIZING == {"spark.driver.cores": str(sizing.driver_cores),
                                     "spark.driver.memory": sizing.driver_memory,
                                     "spark.executor.instances": str(sizing.executor_instances),
                                     "spark.executor.cores": str(sizing.executor_cores),
                                     "spark.executor.memory": sizing.executor_memory}


def test_finished_runs_of_the_month_are_costed_by_their_requested_sizing(driven_emulator, tenant_outputs):
    target = target_from_outputs("acme", tenant_outputs)
    client = driven_emulator.client("emr-containers")
    options = RequestOptions(sizing=dataclasses.replace(JobSizing(), executor_instances=3))
    specs = [RunSpec("iot", "pipeline", dt.date.today()), RunSpec("clickstream", "pipeline", dt.date.today())]
    ids = []
    for spec in specs:
        request = build_request(target, LOCATION, spec, "c0ffee", options)
        request.pop("clientToken")
        ids.append(client.start_job_run(**request)["id"])
    backend = driven_emulator.backend()
    durations = {ids[0]: 1800, ids[1]: 20}  # 30 minutes; 20 s (billed as one minute)
    for run_id, seconds in durations.items():
        run = backend.job_runs[run_id]
        run.state = "COMPLETED"
        run.finished_at = run.created_at + dt.timedelta(seconds=seconds)
    month = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m")
    described = emr.job_runs_of_month(client, target.virtual_cluster_id, month)
    assert sorted(r["id"] for r in described) == sorted(ids)
    rows = {r.dataset: r.to_dict() for r in emr.summarise(described)}
    vcpu, gb = 1 + 3 * 2, (2 + 0.8) + 3 * (4 + 1.6)
    assert rows["iot"] == {"layer": "pipeline", "dataset": "iot", "job_runs": 1, "hours": 0.5,
                           "vcpu_hours": round(vcpu * 0.5, 4), "memory_gb_hours": round(gb * 0.5, 4)}
    assert rows["clickstream"]["hours"] == round(60 / 3600, 4)
    previous = (dt.datetime.now(dt.timezone.utc).replace(day=1) - dt.timedelta(days=1)).strftime("%Y-%m")
    assert emr.job_runs_of_month(client, target.virtual_cluster_id, previous) == []
