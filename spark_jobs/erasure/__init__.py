"""Erasure of data subjects (GDPR Art. 17): ``python -m spark_jobs erase`` (``job.py``), the subjects and the
erasure key (``subjects.py``), the staged rewrite of Parquet partitions (``partitions.py``) and the object
versions and their scan (``objects.py``). spark_jobs/README.md, "Erasure", says what it does and proves."""
