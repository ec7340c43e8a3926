"""Where a tenant's lake is and how to reach it: the lake URI, key and endpoint, and the layout under it.

Layout (INTERFACES section 4): ``landing/<ds>/``, ``bronze/<ds>/``, ``silver/<ds>/`` (the Iceberg table
``silver.<ds>``), ``gold/<table>/`` (the Iceberg table ``gold.<table>``, ``gold_table_name``), ``quarantine/<ds>/``,
``checkpoints/<ds>/bronze/``, the staging folders ``checkpoints/<ds>/<layer>-staging/`` (``STAGING_FOLDERS``),
``reports/<layer>/<ds>/<run_id>/manifest.json``. Jobs never rebuild resource names: the launcher
passes the lake URI and key (from the tenant's Terraform outputs).
"""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from urllib.parse import urlparse

LAYERS: tuple[str, ...] = ("bronze", "silver", "gold")
STATE_DIR_ENV = "TENANTLAKE_STATE_DIR"
# Where a layer's job writes its records before it publishes them (bronze: each batch, and ``-fixed`` beside it;
# silver: the flagged records). Deleted after the run, but a versioned bucket keeps them as noncurrent
# versions: the erasure sweeps these folders with the layers.
STAGING_FOLDERS = {"bronze": "bronze-staging", "silver": "silver-staging"}


class LakeConfigError(ValueError):
    """The lake cannot be located from the given arguments; the message says which argument to pass."""


@dataclasses.dataclass(frozen=True)
class LakeConfig:
    """How to reach one tenant's lake.

    Attributes:
        lake_uri: ``s3a://bucket`` (local), ``s3://bucket`` (EMR, EMRFS) or a plain path.
        kms_key_arn: the tenant key; every s3a write is SSE-KMS with it. @default - ""
        region: the lake's region. @default - "eu-west-1"
        s3_endpoint: S3 endpoint for s3a ("" = AWS). @default - ""
        truststore: PKCS#12 trust store for the emulator's private CA (JVM side). @default - ""
        ca_bundle: PEM CA bundle for boto3 (every lake client: spark_jobs/io/s3.py). @default - $AWS_CA_BUNDLE or ""
        glue_databases: (layer, Glue database) pairs: the Iceberg catalog's namespaces when the lake's
            catalog is Glue (``s3://`` lakes on EMR; the tenant output ``glue_database_names``). Unused by
            the local Hadoop catalog, whose namespaces are the layer names. @default - ()
        data_classification: the tenant's classification (tenant output ``data_classification``, or
            ``--data-classification``); with pii or gdpr every contract must declare ``subject_keys``.
            @default - () (unknown: nothing is required)
        lf_classification_tag: the tenant's Lake Formation classification tag key (tenant output
            ``lake_formation.classification_tag``, or ``--lf-classification-tag``): the jobs tag the columns of the
            tables they create with it (``spark_jobs/tables/lf_tags.py``). @default - "" (no tagging)
        metric_namespace: the CloudWatch namespace a publish puts its freshness metric in, and ``event_source`` the
            EventBridge source a blocked publish is emitted under (tenant output ``orchestration``, or
            ``--metric-namespace`` / ``--event-source``; ``spark_jobs/runs/signals.py``). @default - "" (neither)
    """

    lake_uri: str
    kms_key_arn: str = ""
    region: str = "eu-west-1"
    s3_endpoint: str = ""
    truststore: str = ""
    ca_bundle: str = ""
    glue_databases: tuple[tuple[str, str], ...] = ()
    data_classification: tuple[str, ...] = ()
    lf_classification_tag: str = ""
    metric_namespace: str = ""
    event_source: str = ""

    def __post_init__(self):
        object.__setattr__(self, "lake_uri", self.lake_uri.rstrip("/"))

    @property
    def scheme(self) -> str:
        return urlparse(self.lake_uri).scheme

    @property
    def is_s3a(self) -> bool:
        return self.scheme == "s3a"

    @property
    def is_object_store(self) -> bool:
        return self.scheme in ("s3", "s3a", "s3n")

    @property
    def bucket(self) -> str:
        return urlparse(self.lake_uri).netloc

    @property
    def folder(self) -> Path:
        """The lake's folder when it is not an object store (``file:///x`` or a plain path ``/x``)."""
        parsed = urlparse(self.lake_uri)
        return Path(parsed.path if parsed.scheme == "file" else self.lake_uri)

    def path(self, *parts: str) -> str:
        return "/".join([self.lake_uri, *[p.strip("/") for p in parts if p]])

    def landing(self, dataset: str) -> str:
        return self.path("landing", dataset)

    def bronze(self, dataset: str) -> str:
        return self.path("bronze", dataset)

    def silver(self, dataset: str) -> str:
        return self.path("silver", dataset)

    def quarantine(self, dataset: str) -> str:
        return self.path("quarantine", dataset)

    def gold(self, dataset: str, gold_name: str) -> str:
        """The location of the gold table ``gold.<gold_table_name(dataset, gold_name)>``: an Iceberg Hadoop
        catalog places a table at ``<warehouse>/<namespace>/<table>``."""
        return self.path("gold", gold_table_name(dataset, gold_name))

    def checkpoint(self, dataset: str) -> str:
        return self.path("checkpoints", dataset, "bronze")

    def staging(self, dataset: str, layer: str) -> str:
        """``layer``'s staging folder for ``dataset`` (``STAGING_FOLDERS``)."""
        return self.path("checkpoints", dataset, STAGING_FOLDERS[layer])

    def report_dir(self, layer: str, dataset: str, run_id: str) -> str:
        return self.path("reports", layer, dataset, run_id)


def gold_table_name(dataset: str, gold_name: str) -> str:
    """The gold table of ``gold_name`` for ``dataset``: the gold's own name when it starts with the
    dataset's (``iot_hourly`` of ``iot``), else ``<dataset>_<gold_name>``: a generic gold module such as
    ``period_summary`` serves several datasets, each with a table of its own
    (``airquality_period_summary``)."""
    return gold_name if gold_name.startswith(dataset) else f"{dataset}_{gold_name}"


def lake_from_outputs(outputs: dict, source: str) -> LakeConfig:
    """Build a LakeConfig from a tenant's ``lake.json`` (terraform outputs + emulator facts)."""
    bucket = outputs.get("lake_bucket_name")
    if not bucket:
        raise LakeConfigError(f"{source}: has no lake_bucket_name; re-run `make apply TENANT=<tenant>`")
    return LakeConfig(
        lake_uri=f"s3a://{bucket}",
        kms_key_arn=str(outputs.get("kms_key_arn", "")),
        region=str(outputs.get("region", "eu-west-1")),
        s3_endpoint=str(outputs.get("s3_endpoint", "")),
        truststore=str(outputs.get("truststore", "")),
        ca_bundle=str(outputs.get("ca_bundle", "") or os.environ.get("AWS_CA_BUNDLE", "")),
        glue_databases=tuple(sorted((outputs.get("glue_database_names") or {}).items())),
        data_classification=tuple(outputs.get("data_classification") or ()),
        lf_classification_tag=str((outputs.get("lake_formation") or {}).get("classification_tag") or ""),
        metric_namespace=str((outputs.get("orchestration") or {}).get("metric_namespace") or ""),
        event_source=str((outputs.get("orchestration") or {}).get("event_source") or ""),
    )


def tenant_lake_file(tenant: str) -> Path:
    state_dir = Path(os.environ.get(STATE_DIR_ENV) or Path(__file__).resolve().parents[2] / ".local")
    return state_dir / "tenants" / tenant / "lake.json"


def read_lake_outputs(tenant: str = "", lake_config: str = "") -> tuple[dict, Path]:
    """The tenant's terraform outputs as written to lake.json (``lake_config``, else the tenant's file),
    and the path they came from; a one-line ``LakeConfigError`` when the file is missing or broken."""
    if not (lake_config or tenant):
        raise LakeConfigError("say which lake: --tenant T or --lake-config FILE")
    path = Path(lake_config) if lake_config else tenant_lake_file(tenant)
    try:
        outputs = json.loads(path.read_text())
    except FileNotFoundError:
        hint = f"; run `make apply TENANT={tenant}` first" if tenant else ""
        raise LakeConfigError(f"lake config {path} does not exist{hint}") from None
    except ValueError as exc:
        raise LakeConfigError(f"lake config {path} is not valid JSON ({exc})") from None
    if not isinstance(outputs, dict):
        raise LakeConfigError(f"lake config {path} is not a JSON object")
    return outputs, path


def resolve_lake(
    lake_uri: str = "", kms_key_arn: str = "", region: str = "", s3_endpoint: str = "", truststore: str = "",
    ca_bundle: str = "", lake_config: str = "", tenant: str = "",
    glue_databases: tuple[tuple[str, str], ...] = (), data_classification: tuple[str, ...] = (),
    lf_classification_tag: str = "", metric_namespace: str = "", event_source: str = "",
) -> LakeConfig:
    """Precedence: explicit ``lake_uri`` (+ key, region, endpoint, truststore), else a lake-config file,
    else the tenant's ``$TENANTLAKE_STATE_DIR/tenants/<tenant>/lake.json``."""
    if lake_uri:
        if urlparse(lake_uri).scheme in ("s3", "s3a") and not kms_key_arn:
            raise LakeConfigError("--kms-key-arn is required with an s3/s3a --lake-uri (writes are SSE-KMS)")
        return LakeConfig(
            lake_uri=lake_uri, kms_key_arn=kms_key_arn, region=region or "eu-west-1", s3_endpoint=s3_endpoint,
            truststore=truststore, ca_bundle=ca_bundle or os.environ.get("AWS_CA_BUNDLE", ""),
            glue_databases=tuple(glue_databases), data_classification=tuple(data_classification),
            lf_classification_tag=lf_classification_tag, metric_namespace=metric_namespace, event_source=event_source,
        )
    if not (lake_config or tenant):
        raise LakeConfigError("say which lake: --lake-uri URI (with --kms-key-arn), --lake-config FILE or --tenant T")
    outputs, path = read_lake_outputs(tenant=tenant, lake_config=lake_config)
    lake = lake_from_outputs(outputs, str(path))
    overrides = {k: v for k, v in {"kms_key_arn": kms_key_arn, "region": region, "s3_endpoint": s3_endpoint,
                                   "truststore": truststore, "ca_bundle": ca_bundle,
                                   "glue_databases": tuple(glue_databases),
                                   "data_classification": tuple(data_classification),
                                   "lf_classification_tag": lf_classification_tag,
                                   "metric_namespace": metric_namespace, "event_source": event_source}.items() if v}
    return dataclasses.replace(lake, **overrides)


def lake_from_args(args) -> LakeConfig:
    """``resolve_lake`` from a command line's lake selection options (``spark_jobs.cli``'s ``--lake-uri`` ...
    ``--tenant``; the catalog and classification options where the command has them)."""
    return resolve_lake(lake_uri=args.lake_uri, kms_key_arn=args.kms_key_arn, region=args.region,
                        s3_endpoint=args.s3_endpoint, truststore=args.truststore, ca_bundle=args.ca_bundle,
                        lake_config=args.lake_config, tenant=args.tenant,
                        glue_databases=getattr(args, "glue_databases", ()),
                        data_classification=getattr(args, "data_classification", ()),
                        lf_classification_tag=getattr(args, "lf_classification_tag", ""),
                        metric_namespace=getattr(args, "metric_namespace", ""),
                        event_source=getattr(args, "event_source", ""))


def lake_selection(args) -> str:
    """The lake options of a command line, to repeat in a command an error message suggests."""
    if getattr(args, "lake_uri", ""):
        options = [("--lake-uri", args.lake_uri), ("--kms-key-arn", args.kms_key_arn), ("--region", args.region),
                   ("--s3-endpoint", args.s3_endpoint), ("--truststore", args.truststore)]
        return " ".join(f"{flag} {value}" for flag, value in options if value)
    if getattr(args, "lake_config", ""):
        return f"--lake-config {args.lake_config}"
    return f"--tenant {args.tenant}" if getattr(args, "tenant", "") else ""
