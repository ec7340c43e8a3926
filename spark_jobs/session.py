"""Building the SparkSession: tuned for the machine, and s3a settings for an S3-compatible endpoint.

On EMR the session comes from the cluster (EMRFS handles ``s3://``; encryption comes from the job's
``configurationOverrides``), so ``S3aSettings`` is only for local runs against the emulator, or for
s3a against real S3 outside EMR.
"""
from __future__ import annotations

import dataclasses
import os

from spark_jobs.catalog import session_conf as iceberg_session_conf

LOCAL_SHUFFLE_PARTITIONS = 8  # 2 cores: 200 (Spark's default) made silver 2x larger and gold 3x slower


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


def build_session(
    app_name: str,
    s3a: S3aSettings | None = None,
    jars: list[str] | None = None,
    master: str | None = None,
    driver_memory: str = "4g",
    shuffle_partitions: int = LOCAL_SHUFFLE_PARTITIONS,
    extra_conf: dict[str, str] | None = None,
):
    """Return a SparkSession: ``local[2]`` unless ``master`` (or spark-submit) says otherwise.

    Driver memory and JVM options are set on the builder, before the first ``getOrCreate()``.
    """
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(app_name)
    # Under spark-submit (EMR, or a local spark-submit) the launcher owns the master: leave it alone.
    launched_by_spark_submit = "PYSPARK_GATEWAY_PORT" in os.environ
    if master or not launched_by_spark_submit:
        builder = builder.master(master or os.environ.get("TENANTLAKE_SPARK_MASTER", "local[2]"))
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.driver.memory": driver_memory,
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        # Unparseable timestamps become null (and fail the <col>_type rule) instead of raising.
        "spark.sql.legacy.timeParserPolicy": "CORRECTED",
        # v2 task commits move files straight into the job's hidden staging folder: one copy fewer per
        # file on s3a. Visibility still comes only from the job commit (see spark_jobs/io/writers.py).
        "spark.hadoop.mapreduce.fileoutputcommitter.algorithm.version": "2",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
    }
    if jars:
        conf["spark.jars"] = ",".join(jars)
    conf.update(iceberg_session_conf(conf.get("spark.jars", "")))  # static: Iceberg jar + SQL extensions
    if s3a is not None:
        conf.update({f"spark.hadoop.{k}": v for k, v in s3a.hadoop_conf().items()})
        if s3a.truststore:
            conf["spark.driver.extraJavaOptions"] = (
                f"-Djavax.net.ssl.trustStore={s3a.truststore} -Djavax.net.ssl.trustStoreType=PKCS12 "
                f"-Djavax.net.ssl.trustStorePassword={s3a.truststore_password}"
            )
    conf.update(extra_conf or {})
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


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
