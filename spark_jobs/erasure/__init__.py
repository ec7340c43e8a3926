"""Erasure of data subjects (GDPR Art. 17): ``python -m spark_jobs erase``. One module per concern:

- ``job.py``: the request, step by step (locks, journal, order of work); ``journal.py``: its progress;
- ``subjects.py``: who is erased, the request checks, the erasure key and the keyed hashes;
- ``matching.py``: when a text holds an id (whole token by the key's case rule, keyed, behind escapes):
  the one matcher, no Spark;
- ``records.py``: the rows that are a subject's or mention one, in Spark (ids only as joined DataFrames and
  a broadcast variable; texts decided by the scan's ``batch_hits`` on the executors);
- ``rewrites.py`` + ``partitions.py``: bronze and quarantine partitions staged and swapped, silver dates replaced;
- ``iceberg.py``: the snapshots from before the request expired, with the files only they held;
- ``scan.py`` + ``sweep.py``: every object version read for ids, streaming, on the executors;
- ``reports.py``: reports, Athena results and logs scrubbed; ``purge.py``: versions deleted for good;
- ``receipts.py``: the receipt and the history of requests for the same subjects; ``objects.py``: S3 versions
  written and deleted (listed by ``spark_jobs/io/s3.py``'s ``list_versions``).

spark_jobs/README.md, "Erasure", says what it does and what the tests prove."""

# Where an EMR erase run's subject file waits (``python -m infra.deploy --erase-subject-file``, which
# uploads it): it holds the ids themselves, so the run deletes every version of it before it verifies.
INBOX_PREFIX = "checkpoints/_erasure/inbox/"


class ErasureError(RuntimeError):
    """The request cannot run as asked; one line saying what to do."""
