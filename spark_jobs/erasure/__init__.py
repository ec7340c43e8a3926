"""Erasure of data subjects (GDPR Art. 17): ``python -m spark_jobs erase`` (``job.py``), the subjects and the
erasure key (``subjects.py``), the staged rewrite of Parquet partitions (``partitions.py``) and the object
versions and their scan (``objects.py``). spark_jobs/README.md, "Erasure", says what it does and proves."""

# Where an EMR erase run's subject file waits (``python -m infra.deploy --erase-subject-file``, which
# uploads it): it holds the ids themselves, so the run deletes every version of it before it verifies.
INBOX_PREFIX = "checkpoints/_erasure/inbox/"
