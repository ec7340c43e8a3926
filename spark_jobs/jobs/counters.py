"""What a run step cost besides time: the Spark jobs it ran and the S3 requests it made.

Each stage of a run (``JobRun.stage``) records both as the difference since the previous stage, so a
run's manifest says where its fixed cost goes (``bench/small.py`` tabulates it). On a small input most
of a layer's time is neither rows nor bytes but the number of Spark jobs (each one is scheduled,
planned and code-generated) and of S3 requests (on the emulator each one is an HTTPS round trip).

- Spark jobs: the driver's next job id (``DAGScheduler.nextJobId``), which counts every job the session
  started, streaming micro-batches and Great Expectations' metric jobs included.
- S3 requests: the s3a FileSystem's own statistics for the lake's bucket (HEAD, GET, LIST, PUT, COPY,
  DELETE and bulk DELETE requests). Iceberg's Hadoop file I/O and Spark's readers and writers go through
  the same cached FileSystem, so every request of the run is counted. Other file systems (a local
  folder, EMRFS on ``s3://``) report no S3 figure.

Both are read through the JVM in a few calls; reading them changes nothing. A figure that cannot be
read (an unexpected Spark or Hadoop build) is left out rather than guessed.
"""
from __future__ import annotations

from typing import Any

# s3a statistic names (org.apache.hadoop.fs.s3a.Statistic) -> the request kind they count.
S3A_REQUEST_STATISTICS = {
    "object_metadata_request": "head",
    "action_http_get_request": "get",
    "object_list_request": "list",
    "object_continue_list_request": "list",
    "object_put_request": "put",
    "object_copy_requests": "copy",
    "object_delete_request": "delete",
    "object_bulk_delete_request": "bulk_delete",
}
S3_REQUEST_KINDS = ("head", "get", "list", "put", "copy", "delete", "bulk_delete")


def spark_jobs_started(spark: Any) -> int | None:
    """How many Spark jobs this session has started so far (None when it cannot be read)."""
    try:
        next_job_id = spark.sparkContext._jsc.sc().dagScheduler().nextJobId()  # an AtomicInteger
        return int(next_job_id.get() if hasattr(next_job_id, "get") else next_job_id)  # py4j may convert it
    except Exception:  # noqa: BLE001 - a diagnostic figure: never fail a run over it
        return None


def s3_requests(spark: Any, uri: str) -> dict[str, int] | None:
    """S3 requests made so far through the s3a FileSystem of ``uri``'s bucket, by kind (None when ``uri``
    is not on s3a, or its statistics cannot be read)."""
    if not uri.startswith("s3a://"):
        return None
    try:
        jvm = spark.sparkContext._jvm
        path = jvm.org.apache.hadoop.fs.Path(uri)
        statistics = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).getStorageStatistics()
        counts = dict.fromkeys(S3_REQUEST_KINDS, 0)
        for name, kind in S3A_REQUEST_STATISTICS.items():
            value = statistics.getLong(name)
            counts[kind] += int(value or 0)
        return counts
    except Exception:  # noqa: BLE001 - a diagnostic figure: never fail a run over it
        return None


class RunCounters:
    """Spark jobs and S3 requests since the previous ``step()`` (or since it was made)."""

    def __init__(self, spark: Any, lake_uri: str):
        self._spark, self._uri = spark, lake_uri
        self._jobs, self._s3 = spark_jobs_started(spark), s3_requests(spark, lake_uri)

    def step(self) -> dict[str, Any]:
        """``{"spark_jobs": n, "s3_requests": m, "s3": {kind: k}}`` since the last call; a figure that
        could not be read is left out."""
        jobs, s3 = spark_jobs_started(self._spark), s3_requests(self._spark, self._uri)
        delta: dict[str, Any] = {}
        if jobs is not None and self._jobs is not None:
            delta["spark_jobs"] = jobs - self._jobs
        if s3 is not None and self._s3 is not None:
            by_kind = {kind: s3[kind] - self._s3.get(kind, 0) for kind in S3_REQUEST_KINDS}
            delta["s3_requests"] = sum(by_kind.values())
            delta["s3"] = {kind: n for kind, n in by_kind.items() if n}
        self._jobs, self._s3 = jobs, s3
        return delta
