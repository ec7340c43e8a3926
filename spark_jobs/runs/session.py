"""Building the SparkSession: who owns which setting, and s3a settings for an S3-compatible endpoint; the
session for a lake (``session_for``) and a command's session, sized from the bytes it will read
(``command_session``).

Two ways a session starts, and who decides what:

* **tenantlake starts it** (``python -m spark_jobs``, tests, the demo): ``local[2]`` (or ``master``),
  a loopback driver, no UI, 8 shuffle partitions, driver memory, the s3a jars and the emulator's trust
  store (``local_conf``), plus the job settings below.
* **spark-submit started the driver** (EMR on EKS, or a local ``spark-submit``): the launcher's conf
  wins. Only the settings the jobs' results depend on (``job_conf``), the lake's s3a settings
  (``storage_conf``) and the caller's ``extra_conf`` are set; master, driver host and bind address,
  sizing, jars and JVM options are left as the launcher gave them. One line on stderr says what the
  session runs with (it lands in the driver log on EMR).

On EMR the lake is ``s3://`` through EMRFS (encryption comes from the job's ``configurationOverrides``),
so ``S3aSettings`` is only for local runs against the emulator, or for s3a against real S3 outside EMR.
"""
from __future__ import annotations

import contextlib
import dataclasses
import glob
import os
import re
import sys
from pathlib import Path
from typing import Any, Iterator

from spark_jobs.contract.model import load_contract
from spark_jobs.io.lake_bytes import stored_bytes
from spark_jobs.lake.catalog import session_conf as iceberg_session_conf
from spark_jobs.lake.config import LakeConfig, gold_table_name
from spark_jobs.lake.failures import JobFailed, check_endpoint

LOCAL_SHUFFLE_PARTITIONS = 8  # 2 cores: 200 (Spark's default) made silver 2x larger and gold 3x slower
LISTING_TASKS = 8  # tasks of the job Spark runs to list more than 32 paths (its default: one per path, up to 10,000)
LOCAL_DRIVER_HOST = "127.0.0.1"
DRIVER_MEMORY_ENV = "TENANTLAKE_DRIVER_MEMORY"  # a local session's driver heap, e.g. 3g (default: DEFAULT_DRIVER_MEMORY)
# 2g, as the EMR request's driver (infra/deploy/request.py): run-all over 5M iot events fits in it (peak RSS
# 2.85 GB, Python + JVM), and at 1M a 4g heap made no layer faster, only larger (bench/README.md, Memory).
DEFAULT_DRIVER_MEMORY = "2g"
_MEMORY = re.compile(r"^[1-9][0-9]*[kmgt]?$", re.IGNORECASE)
# A session started for small inputs only (``build_session(small_inputs=True)``: the CLI decides from the bytes
# the command will read, spark_jobs/io/lake_bytes.py) compiles with the JVM's quick JIT compiler (C1) only. On a
# few thousand records most of the extra CPU is the optimising compiler's, compiling code that then runs on a
# handful of rows: bronze + silver + gold of 2,000 iot records took 64-66 CPU s by default, 35-36 with C1 alone
# (`python -m bench.jvm_options`, spark_jobs/README.md). Larger inputs keep the default: at 100,000 records C1
# cost no more (359 vs 364 CPU s), but hot loops on millions of rows are what C2 is for, and that is unmeasured.
# TENANTLAKE_JIT=full|quick overrides the choice.
# With C1 alone the JVM reserves a code cache of 48 MB only (tiered compilation reserves 240 MB); the demo's
# run-all of three datasets filled it after 98 s ("CodeCache is full. Compiler has been disabled."), and
# everything after ran interpreted. So the quick JIT keeps the tiered size (reserved, committed as used).
QUICK_JIT_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
JIT_ENV = "TENANTLAKE_JIT"
# A class-data-sharing archive of the driver's classes (infra/local/jvm_archive.py builds it; `make setup` does,
# and `make demo`/`make test` set the variable): a local session's JVM maps it instead of loading and verifying
# Spark's classes again (a small query: 9.1 and 9.6 CPU s against 14.6 and 13.7). A JVM that cannot use the archive (another JDK or
# class path) starts without it, silently; a path that is not a file is refused before the JVM starts.
JVM_ARCHIVE_ENV = "TENANTLAKE_JVM_ARCHIVE"
# The JVM's own lines about the archive (a class it skips, an archive it cannot map) stay out of the commands'
# output: several print JSON on stdout. The training run (infra/local/jvm_archive.py) writes with the same.
JVM_ARCHIVE_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
# What the spark-submit line reports: where the driver is and how the job is sized.
REPORTED_CONF = ("spark.master", "spark.submit.deployMode", "spark.driver.host", "spark.driver.bindAddress",
                 "spark.sql.shuffle.partitions", "spark.executor.instances", "spark.executor.memory")


@dataclasses.dataclass(frozen=True)
class S3aSettings:
    """How s3a reaches the lake.

    Attributes:
        endpoint: S3 endpoint URL (``https://127.0.0.1:PORT`` for the emulator). "" means AWS's own.
        region: the lake's region.
        kms_key_arn: the tenant key: every write is SSE-KMS with it, matching the bucket policy.
        access_key / secret_key / session_token: explicit credentials; empty means the default chain.
        truststore: a PKCS#12 JVM trust store for a private CA (the emulator's). @default - ""
        truststore_password: its password. @default - "changeit"
        path_style: path-style addressing (needed for the emulator). @default - True
    """

    endpoint: str
    region: str
    kms_key_arn: str
    access_key: str = ""
    secret_key: str = ""
    session_token: str = ""
    truststore: str = ""
    truststore_password: str = "changeit"
    path_style: bool = True

    def hadoop_conf(self) -> dict[str, str]:
        conf = {
            "fs.s3a.endpoint.region": self.region,
            "fs.s3a.path.style.access": str(self.path_style).lower(),
            "fs.s3a.connection.ssl.enabled": "true",
            "fs.s3a.server-side-encryption-algorithm": "SSE-KMS",
            "fs.s3a.server-side-encryption.key": self.kms_key_arn,
            "fs.s3a.fast.upload": "true",
        }
        if self.endpoint:
            conf["fs.s3a.endpoint"] = self.endpoint
        if self.access_key:
            conf["fs.s3a.access.key"] = self.access_key
            conf["fs.s3a.secret.key"] = self.secret_key
            if self.session_token:
                conf["fs.s3a.session.token"] = self.session_token
                conf["fs.s3a.aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
            else:
                conf["fs.s3a.aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
        return conf


def launched_by_spark_submit() -> bool:
    """True when this Python process is a driver that spark-submit started (EMR on EKS, or a local
    ``spark-submit``): its JVM and its conf exist already. PySpark's launcher exports the gateway port."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def job_conf() -> dict[str, str]:
    """Settings the jobs' results depend on: applied to every session, local or launched."""
    return {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        # Unparseable timestamps become null (and fail the <col>_type rule) instead of raising.
        "spark.sql.legacy.timeParserPolicy": "CORRECTED",
        # v2 task commits move files straight into the job's hidden staging folder: one copy fewer per
        # file on s3a. Visibility still comes only from the job commit (see spark_jobs/io/writers.py).
        "spark.hadoop.mapreduce.fileoutputcommitter.algorithm.version": "2",
    }


def storage_conf(s3a: S3aSettings | None) -> dict[str, str]:
    """The lake's s3a settings as Spark conf (empty without s3a): applied to every session."""
    if s3a is None:
        return {}
    return {f"spark.hadoop.{k}": v for k, v in s3a.hadoop_conf().items()}


def quick_jit(small_inputs: bool) -> bool:
    """Whether a local session compiles with C1 only: ``$TENANTLAKE_JIT`` (``quick`` or ``full``) when set,
    else when the session is for small inputs only."""
    choice = os.environ.get(JIT_ENV, "").strip().lower()
    if choice in ("quick", "full"):
        return choice == "quick"
    if choice:
        raise ValueError(f"{JIT_ENV}={choice!r}: give quick, full, or leave it unset (chosen from the input size)")
    return small_inputs


def jvm_archive() -> str:
    """The class-data-sharing archive a local session's JVM maps: ``$TENANTLAKE_JVM_ARCHIVE``, or "" (none).
    A value that is not a file raises ``ValueError`` here, before any JVM starts."""
    value = os.environ.get(JVM_ARCHIVE_ENV, "").strip()
    if value and not os.path.isfile(value):
        raise ValueError(f"{JVM_ARCHIVE_ENV}={value!r} is not a file: build it with `python -m infra.local.jvm_archive` "
                         "(it prints the path) or unset it")
    if value and " " in value:
        raise ValueError(f"{JVM_ARCHIVE_ENV}={value!r}: a path without spaces (it goes into the JVM's options)")
    return value


def local_conf(driver_memory: str, shuffle_partitions: int, jars: list[str] | None = None,
               s3a: S3aSettings | None = None, small_inputs: bool = False) -> dict[str, str]:
    """Settings that only make sense for a session tenantlake starts itself on this machine: loopback
    driver, no UI, sizing for 2 cores, the jars and the emulator's trust store. Under spark-submit the
    launcher decides all of these (on Kubernetes, Spark refuses a driver host or bind address at all)."""
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        # Listing more than 32 paths (a bronze batch's files, the broken arrays it reads again) runs a
        # Spark job; by default it has one task per path, about 3 s per 1,000 files on 2 cores for
        # scheduling alone (bench/FINDINGS.md). A few tasks list the same paths, each a share of them.
        "spark.sql.sources.parallelPartitionDiscovery.parallelism": str(LISTING_TASKS),
        "spark.driver.memory": driver_memory,
        "spark.driver.host": LOCAL_DRIVER_HOST,
        "spark.driver.bindAddress": LOCAL_DRIVER_HOST,
    }
    if jars:
        conf["spark.jars"] = ",".join(jars)
    java_options = []
    if s3a is not None and s3a.truststore:
        java_options.append(
            f"-Djavax.net.ssl.trustStore={s3a.truststore} -Djavax.net.ssl.trustStoreType=PKCS12 "
            f"-Djavax.net.ssl.trustStorePassword={s3a.truststore_password}"
        )
    if quick_jit(small_inputs):
        java_options.append(QUICK_JIT_OPTIONS)
    archive = jvm_archive()
    if archive:
        java_options.append(f"-XX:SharedArchiveFile={archive} {JVM_ARCHIVE_QUIET}")
    if java_options:
        conf["spark.driver.extraJavaOptions"] = " ".join(java_options)
    return conf


def driver_heap(driver_memory: str | None = None) -> str:
    """A local session's driver heap: ``driver_memory``, else ``$TENANTLAKE_DRIVER_MEMORY``, else
    ``DEFAULT_DRIVER_MEMORY``. A value the JVM would refuse (``-Xmx``: a number with k, m, g or t) raises
    ``ValueError`` here, before any JVM starts."""
    source, value = ("driver_memory", driver_memory) if driver_memory else (DRIVER_MEMORY_ENV, os.environ.get(DRIVER_MEMORY_ENV))
    if not value:
        return DEFAULT_DRIVER_MEMORY
    if not _MEMORY.match(value.strip()):
        raise ValueError(f"{source}={value!r}: give the driver heap as a number with k, m, g or t, e.g. 2g or 3072m")
    return value.strip()


def build_session(
    app_name: str,
    s3a: S3aSettings | None = None,
    jars: list[str] | None = None,
    master: str | None = None,
    driver_memory: str | None = None,
    shuffle_partitions: int = LOCAL_SHUFFLE_PARTITIONS,
    extra_conf: dict[str, str] | None = None,
    small_inputs: bool = False,
):
    """Return a SparkSession (see the module docstring for who owns which setting).

    Args:
        app_name: the application name (a launcher's own name wins under spark-submit).
        s3a: the lake's s3a settings. @default - None (no s3a)
        jars: extra jars (the s3a jars). Local sessions only. @default - None
        master: Spark master of a local session. @default - ``$TENANTLAKE_SPARK_MASTER`` or ``local[2]``
        driver_memory: driver heap of a local session, set before the JVM starts. @default -
            ``$TENANTLAKE_DRIVER_MEMORY`` or ``DEFAULT_DRIVER_MEMORY``
        shuffle_partitions: ``spark.sql.shuffle.partitions`` of a local session. @default - 8
        extra_conf: settings the caller needs wherever the job runs; applied last, in both cases.
            @default - None
        small_inputs: the session only reads small inputs: a local session then compiles with C1 only
            (``QUICK_JIT_OPTIONS``; ``$TENANTLAKE_JIT`` overrides). Under spark-submit the launcher decides.
            @default - False
    """
    from pyspark.sql import SparkSession

    launched = launched_by_spark_submit()
    builder = SparkSession.builder.appName(app_name)
    conf = job_conf()
    conf.update(storage_conf(s3a))
    if launched:
        ignored = [name for name, given in (("jars", jars), ("master", master),
                                            ("truststore", s3a is not None and s3a.truststore)) if given]
    else:
        os.environ.setdefault("SPARK_LOCAL_IP", LOCAL_DRIVER_HOST)
        # Python on the executors (bronze's landing lines, transforms/landing_lines.py; the erasure's scan and
        # redaction) is this interpreter, with this venv's packages (pyarrow, boto3), not whatever `python3` is
        # first on PATH. PySpark reads only the variable; under spark-submit the launcher sets it.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = builder.master(master or os.environ.get("TENANTLAKE_SPARK_MASTER", "local[2]"))
        conf.update(local_conf(driver_heap(driver_memory), shuffle_partitions, jars, s3a, small_inputs))
    # Iceberg (spark_jobs/lake/catalog.py): its SQL extensions, and locally its runtime jar (static settings).
    conf.update(iceberg_session_conf(conf.get("spark.jars", "")))
    conf.update(extra_conf or {})
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if launched:
        print(describe_session(spark, ignored), file=sys.stderr, flush=True)
    else:
        spark.sparkContext.setLogLevel("ERROR")
    return spark


def describe_session(spark, ignored: list[str] | None = None) -> str:
    """One line: the launcher's settings this session runs with, read back from the running session."""
    context_conf = spark.sparkContext.getConf()
    shown = []
    for key in REPORTED_CONF:
        value = spark.conf.get(key) if key.startswith("spark.sql.") else context_conf.get(key, None)
        shown.append(f"{key}={value if value is not None else '(unset)'}")
    line = "session: started by spark-submit, the launcher's conf kept: " + " ".join(shown)
    if ignored:
        line += f" (not applied under spark-submit: {', '.join(ignored)}; pass them to spark-submit)"
    return line


def apply_bucket_settings(spark, bucket: str, s3a: S3aSettings) -> None:
    """Per-bucket s3a settings on a running session (``fs.s3a.bucket.<bucket>.*``).

    Lets one session (a test's, or a driver serving several tenants) write each lake with its own
    key and endpoint. Takes effect for buckets whose FileSystem is not yet cached by the JVM.
    The trust store is JVM-wide: it must be given when the session starts.
    """
    hadoop_conf = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in s3a.hadoop_conf().items():
        if key.startswith("fs.s3a.") and key != "fs.s3a.fast.upload":
            hadoop_conf.set(f"fs.s3a.bucket.{bucket}.{key[len('fs.s3a.'):]}", value)


# ---- a session for a lake, and a command's session sized from what it reads ----------------------------------
# Every command that starts a session asks ``command_session`` (``run``/``run-all`` from the layers' inputs,
# ``counts``, ``maintain``, ``erase``, ``query``, ``contract plan``, ``sync-tags`` from the folders they read);
# whether one it starts itself can be one for small inputs comes from the bytes stored under the lake folders it
# will read, listed before the JVM starts (``io.lake_bytes.stored_bytes``, stopped once past the limit). The
# benchmarks ask it the same way, so they size their sessions as the commands they measure do.
JARS_ENV = "TENANTLAKE_SPARK_JARS"
REPO_JAR_CACHE = Path(__file__).resolve().parents[2] / ".local" / "jars"

# A layer whose input (bronze Parquet for silver, the silver table for gold) holds at most this many bytes
# is planned as a small input (JobRun.size_for_input): a quarter of the 64 MB that adaptive execution
# aims for per partition, so it would have coalesced every shuffle of such a run into one partition.
SMALL_INPUT_BYTES = 16 * 1024 * 1024
SMALL_INPUT_CONF = {"spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": "1"}


def s3a_settings(lake: LakeConfig) -> S3aSettings:
    return S3aSettings(
        endpoint=lake.s3_endpoint, region=lake.region, kms_key_arn=lake.kms_key_arn, truststore=lake.truststore,
    )


def find_jars(explicit: list[str] | None = None) -> list[str]:
    """s3a jars: explicit list, else ``$TENANTLAKE_SPARK_JARS`` (comma-separated), else the repo's
    verified cache (``.local/jars``, filled by ``python -m infra.local.s3a_jars``)."""
    if explicit:
        return explicit
    if os.environ.get(JARS_ENV):
        return [j for j in os.environ[JARS_ENV].split(",") if j]
    return sorted(glob.glob(str(REPO_JAR_CACHE / "*.jar")))


def check_local_settings() -> None:
    """A bad ``$TENANTLAKE_DRIVER_MEMORY``, ``$TENANTLAKE_JIT`` or ``$TENANTLAKE_JVM_ARCHIVE`` for a session this
    process starts: one line and exit 2 (``JobFailed``), before anything else runs, not a JVM that fails to start."""
    try:
        driver_heap()
        quick_jit(False)
        jvm_archive()
    except ValueError as exc:
        raise JobFailed(str(exc), 2) from None


def session_for(lake: LakeConfig, app_name: str, jars: list[str] | None = None,
                small_inputs: bool = False) -> tuple[Any, bool]:
    """The running session (tests, spark-submit) with this lake's bucket settings, or a new tuned one
    (``small_inputs``: the command reads only small inputs, ``build_session``).
    Returns ``(spark, created)``. Fails with ``EndpointUnreachable`` first if the S3 endpoint is down."""
    from pyspark.sql import SparkSession

    check_endpoint(lake)
    active = SparkSession.getActiveSession()
    if active is not None:
        active.conf.set("spark.sql.legacy.timeParserPolicy", "CORRECTED")
        active.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
        if lake.is_s3a:
            apply_bucket_settings(active, lake.bucket, s3a_settings(lake))
        return active, False
    check_local_settings()
    if lake.is_s3a:
        found = find_jars(jars)
        if not found and not launched_by_spark_submit():  # under spark-submit the launcher's --jars decide
            raise JobFailed(
                f"s3a needs the hadoop-aws jars: pass --jars, set {JARS_ENV}, or run `python -m infra.local.s3a_jars`", 2
            )
        spark = build_session(app_name, s3a=s3a_settings(lake), jars=found, small_inputs=small_inputs)
        apply_bucket_settings(spark, lake.bucket, s3a_settings(lake))
    else:
        spark = build_session(app_name, small_inputs=small_inputs)
    return spark, True


# What each layer reads, relative to the lake root: the bytes a run will read (sizing its session).
LAYER_INPUTS = {"bronze": "landing", "silver": "bronze", "gold": "silver"}


def reads_small_inputs(lake: LakeConfig, plan: list[tuple[str, str]], continuous: bool = False) -> bool:
    """Whether every layer of ``plan`` reads small inputs: the bytes stored under their inputs (landing,
    bronze, the silver table) at most ``jobs.SMALL_INPUT_BYTES`` together; a continuous ingest reads
    without end, so it never is small (``reads_small_folders`` says when the question is asked at all)."""
    folders = sorted({f"{LAYER_INPUTS[layer]}/{dataset}" for dataset, layer in plan})
    return reads_small_folders(lake, folders, continuous=continuous)


def dataset_folders(datasets: list[str]) -> list[str]:
    """Every folder a dataset's data lives in, relative to the lake root: landing, bronze, silver, the
    quarantine and each gold table of its contract (what `counts` reads)."""
    folders = []
    for dataset in datasets:
        folders += [f"{layer}/{dataset}" for layer in ("landing", "bronze", "silver", "quarantine")]
        folders += [f"gold/{gold_table_name(dataset, name)}" for name in load_contract(dataset).gold]
    return folders


def table_folders(datasets: list[str]) -> list[str]:
    """The Iceberg tables' folders of the datasets (silver and each gold table): what `maintain` reads."""
    return [f for f in dataset_folders(datasets) if f.startswith(("silver/", "gold/"))]


def reads_small_folders(lake: LakeConfig, folders: list[str], versions: bool = False,
                        continuous: bool = False) -> bool:
    """Whether ``folders`` (relative to the lake root; ``versions``: every version of their objects) hold at
    most ``jobs.SMALL_INPUT_BYTES`` together, so the command's session can be one for small inputs.
    Only asked for a session this command starts itself (not under spark-submit, not in a running session)
    and when ``$TENANTLAKE_JIT`` does not decide already."""
    from pyspark.sql import SparkSession

    if launched_by_spark_submit() or SparkSession.getActiveSession():
        return False
    check_local_settings()  # a bad setting or a stopped emulator: its one line, before any listing
    check_endpoint(lake)
    if continuous or os.environ.get(JIT_ENV):
        return False
    size = stored_bytes(lake, folders, SMALL_INPUT_BYTES, versions=versions)
    if size is None or size > SMALL_INPUT_BYTES:
        return False
    amount = f"{size / 2**20:.1f} MB" if size >= 2**20 else f"{size / 2**10:.0f} KB"
    print(f"session: {amount} of input: a session for small inputs ({JIT_ENV}=full to change)",
          file=sys.stderr, flush=True)
    return True


@contextlib.contextmanager
def command_session(lake: LakeConfig, app: str, jars: str = "", small_inputs: bool = False,
                    reads: list[str] | None = None, versions: bool = False) -> Iterator[Any]:
    """A command's session, stopped at the end when the command started it (``session_for``:
    the running one of a test or of spark-submit is kept). ``jars``: ``--jars`` (comma-separated).
    ``reads``: the lake folders the command reads (relative to the lake root, ``""`` for all of it;
    ``versions``: every version of their objects): a session it starts itself is sized from their bytes
    (``reads_small_folders``) unless ``small_inputs`` decided already."""
    if reads is not None and not small_inputs:
        small_inputs = reads_small_folders(lake, reads, versions=versions)
    spark, created = session_for(lake, app, [j for j in jars.split(",") if j] or None, small_inputs=small_inputs)
    try:
        yield spark
    finally:
        if created:
            spark.stop()
