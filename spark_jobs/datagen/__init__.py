"""Deterministic data generator for the seed datasets (``python -m spark_jobs datagen``).

Same seed and options, same files, byte for byte. ``bad_rate`` replaces that share of records with a
realistic bad record, one of ``BAD_KINDS``, and ``late_rate`` moves that share of good records back
in time so they arrive late. The result carries the ground truth (which records are bad and why,
which are duplicates, which good rows silver must hold) so tests can check the pipeline against it.
This is not a transformation: it may use boto3 (``spark_jobs.datagen.sink``).
"""
from spark_jobs.datagen.generate import BAD_KINDS, DatagenConfig, GeneratedData, generate

__all__ = ["BAD_KINDS", "DatagenConfig", "GeneratedData", "generate"]
