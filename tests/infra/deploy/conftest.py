"""Fixtures for the deploy tests: an in-process moto server whose EMR-containers job runs the test drives.

Moto's job runs stay RUNNING forever, and moto 5.2.5 has no state-manager model (and no /moto-api/
endpoint) for EMR-containers job runs. So these tests run moto's own WSGI app in a thread of the test
process (HTTPS, same private CA as the session emulator): the product code talks to it over real HTTP
like to any endpoint, and the test moves job runs to COMPLETED / FAILED in moto's backend. The product
code is not special-cased for it.
"""
from __future__ import annotations

import dataclasses
import json
import ssl
import threading
import time
import urllib.request
from pathlib import Path
from typing import Callable

import pytest

ACCOUNT_ID = "123456789012"
REGION = "eu-west-1"
TENANT = "acme"


@dataclasses.dataclass
class DrivenEmulator:
    endpoint: str
    ca_bundle: str

    def backend(self, region: str = REGION):
        from moto.emrcontainers.models import emrcontainers_backends

        return emrcontainers_backends[ACCOUNT_ID][region]

    def reset(self) -> None:
        request = urllib.request.Request(self.endpoint + "/moto-api/reset", method="POST")
        context = ssl.create_default_context(cafile=self.ca_bundle)
        with urllib.request.urlopen(request, context=context, timeout=10) as resp:
            assert resp.status == 200

    def client(self, service: str, region: str = REGION):
        import boto3

        return boto3.client(service, region_name=region, endpoint_url=self.endpoint, verify=self.ca_bundle,
                            aws_access_key_id="testing", aws_secret_access_key="testing")

    def env(self) -> dict[str, str]:
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_CA_BUNDLE": self.ca_bundle, "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing", "AWS_EC2_METADATA_DISABLED": "true"}  # pragma: allowlist secret - dummy or public value


@pytest.fixture(scope="session")
def driven_emulator(tmp_path_factory):
    """Moto's WSGI app served over HTTPS from a thread of this process; stopped at session end."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    class QuietHandler(MotoRequestHandler):
        def log_request(self, *args, **kwargs):  # one line per poll would drown the test output
            pass

    from infra.local import tls

    certs = tls.ensure_certificates(tmp_path_factory.mktemp("driven-emulator"))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(certs / "server.pem"), str(certs / "server.key"))
    server = make_server("127.0.0.1", 0, DomainDispatcherApplication(create_backend_app), threaded=True,
                         request_handler=QuietHandler, ssl_context=context)
    thread = threading.Thread(target=server.serve_forever, name="driven-moto", daemon=True)
    thread.start()
    try:
        yield DrivenEmulator(endpoint=f"https://127.0.0.1:{server.server_port}", ca_bundle=str(certs / "ca.pem"))
    finally:
        server.shutdown()
        thread.join(timeout=10)


def create_tenant_resources(emu: DrivenEmulator, tenant: str = TENANT, role_tenant_tag: str | None = None) -> dict:
    """What the tenant module creates and a deploy needs, made with boto3; returns flattened outputs."""
    kms = emu.client("kms")
    key_arn = kms.create_key(Description=f"{tenant} lake key")["KeyMetadata"]["Arn"]
    bucket = f"{tenant}-{REGION}-lake"
    s3 = emu.client("s3")
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
    s3.put_bucket_encryption(Bucket=bucket, ServerSideEncryptionConfiguration={"Rules": [{
        "ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": key_arn}}]})
    iam = emu.client("iam")
    trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRoleWithWebIdentity",
                                                     "Principal": {"Federated": f"arn:aws:iam::{ACCOUNT_ID}:oidc-provider/x"}}]}
    role_arn = iam.create_role(RoleName=f"{tenant}-emr-job-execution", AssumeRolePolicyDocument=json.dumps(trust),
                               Tags=[{"Key": "tenant", "Value": role_tenant_tag or tenant}])["Role"]["Arn"]
    erasure_role_arn = iam.create_role(RoleName=f"{tenant}-emr-erasure", AssumeRolePolicyDocument=json.dumps(trust),
                                       Tags=[{"Key": "tenant", "Value": role_tenant_tag or tenant}])["Role"]["Arn"]
    log_group = f"/tenantlake/{tenant}/emr-jobs"
    emu.client("logs").create_log_group(logGroupName=log_group)
    cluster_id = emu.client("emr-containers").create_virtual_cluster(
        name=f"{tenant}-lake",
        containerProvider={"id": "tenantlake", "type": "EKS", "info": {"eksInfo": {"namespace": f"emr-{tenant}"}}},
    )["id"]
    glue = emu.client("glue")
    databases = {layer: f"{tenant.replace('-', '_')}_{layer}" for layer in ("silver", "gold")}
    for layer, name in databases.items():
        glue.create_database(DatabaseInput={"Name": name, "LocationUri": f"s3://{bucket}/{layer}/"})
    return {
        "tenant_id": tenant, "region": REGION, "lake_bucket_name": bucket, "kms_key_arn": key_arn,
        "job_execution_role_arn": role_arn, "emr_virtual_cluster_id": cluster_id, "log_group_name": log_group,
        "emr_namespace": f"emr-{tenant}", "glue_database_names": databases, "erasure_role_arn": erasure_role_arn,
    }


@pytest.fixture
def tenant_outputs(driven_emulator):
    """A fresh emulator state with one tenant's resources; the outputs a deploy reads."""
    driven_emulator.reset()
    return create_tenant_resources(driven_emulator)


class JobDriver:
    """Moves each new job run to a terminal state after ``hold_s`` (so a poller sees it RUNNING first).

    ``decide(job_run)`` returns ("COMPLETED", "", "") or ("FAILED", failure_reason, state_details).
    ``created`` records, per run in creation order, its name, tags and the states of the runs created
    before it at the moment it appeared (the dependency-order evidence).
    """

    def __init__(self, emu: DrivenEmulator, decide: Callable, hold_s: float = 0.4):
        self.emu, self.decide, self.hold_s = emu, decide, hold_s
        self.created: list[dict] = []
        self._seen: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="job-driver", daemon=True)

    def __enter__(self):
        # Runs that exist already are driven too, but not recorded as created by this step.
        now = time.monotonic()
        self._seen = {run_id: now for run_id in self.emu.backend().job_runs}
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.is_set():
            runs = list(self.emu.backend().job_runs.values())
            for run in runs:
                if run.id not in self._seen:
                    self._seen[run.id] = time.monotonic()
                    earlier = {r.id: r.state for r in runs if r.id != run.id and r.id in self._seen}
                    self.created.append({"id": run.id, "name": run.name, "tags": dict(run.tags or {}),
                                         "states_before": earlier, "client_token": run.client_token})
                elif run.state == "RUNNING" and time.monotonic() - self._seen[run.id] >= self.hold_s:
                    state, reason, details = self.decide(run)
                    run.failure_reason = reason or None
                    run.state_details = details or None
                    run.state = state
            time.sleep(0.05)


@pytest.fixture
def job_driver(driven_emulator):
    def make(decide: Callable = lambda run: ("COMPLETED", "", ""), hold_s: float = 0.4) -> JobDriver:
        return JobDriver(driven_emulator, decide, hold_s)

    return make


@pytest.fixture
def outputs_file(tmp_path, tenant_outputs) -> Path:
    """The outputs as `terraform output -json` prints them."""
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({k: {"value": v, "type": "string", "sensitive": False} for k, v in tenant_outputs.items()}))
    return path


def write_manifest(emu: DrivenEmulator, bucket: str, dataset: str, layer: str, status: str = "succeeded",
                   error: str | None = None, date: str | None = None, validation: dict | None = None) -> str:
    """Put a run manifest where the layer job writes it (``reports/<layer>/<dataset>/<run_id>/``), built
    with the jobs' own ``RunManifest``: what a job run on the cluster leaves in the lake. Returns the key."""
    import datetime as dt

    from spark_jobs.runs.manifest import RunManifest, new_run_id

    manifest = RunManifest(run_id=new_run_id(), dataset=dataset, layer=layer, lake_uri=f"s3://{bucket}",
                           started_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                           code_version="spark_jobs-test", date=date, validation=validation or {})
    manifest.finish(status, 0.0, 1.0, error=error)
    key = f"reports/{layer}/{dataset}/{manifest.run_id}/manifest.json"
    emu.client("s3").put_object(Bucket=bucket, Key=key, Body=manifest.to_json().encode())
    return key


@pytest.fixture(scope="session")
def job_deps_archive():
    """The dependency archive for the default EMR release on x86_64, built once (about a minute, pip's
    cache warm) into the default cache, where `make deploy-jobs` in the tests finds it again. Returned as
    the cache hands it back (``cached=True``), which is what every later `make deploy-jobs` reports, also on
    a clean clone where this fixture is the first build."""
    from infra.deploy import job_deps

    target = job_deps.target_for_release(job_deps.DEFAULT_RELEASE_LABEL)
    job_deps.build_job_deps(target)
    again = job_deps.build_job_deps(target)
    assert again.cached, "the archive just built is not found in the cache"
    return again
