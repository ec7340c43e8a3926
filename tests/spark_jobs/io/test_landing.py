"""Landing reads: how a batch's files are spread over tasks; how a bronze layer stores its record index."""
from __future__ import annotations

from spark_jobs.io import landing, readers

MiB = 1024 * 1024


def test_a_large_file_that_is_not_split_leaves_the_other_files_spread_over_the_cores(spark):
    """One 1 GB CSV file (read whole by one task) and 100 small ones: the small files are packed by their own
    bytes per core, into about one task per core, not behind the large file's split size (which made every
    other file of the batch one task)."""
    large = ("s3a://lake/landing/d/export.csv", 1024 * MiB)
    small = [(f"s3a://lake/landing/d/part-{i}.csv", 10_000) for i in range(100)]
    groups = landing.whole_file_groups(spark, [large, *small])
    assert [(files, open_cost) for _, open_cost, files in groups] == [([large], 1024 * MiB), (small, 4 * MiB)]
    small_split = groups[1][0]
    cores = spark.sparkContext.defaultParallelism
    assert small_split * cores >= sum(length + 4 * MiB for _, length in small) > small_split * (cores - 1)
    assert landing.split_bytes(spark, [large, *small], splittable=False) == 1024 * MiB  # what all files shared before
    assert landing.whole_file_groups(spark, small) == [(small_split, 4 * MiB, small)]


def test_a_bronze_layer_from_before_keeps_its_32_bit_record_index(spark, tmp_path):
    """New layers store ``_record_index`` as 64-bit; one written before keeps 32 bits (Spark 3.5 cannot read a
    32-bit Parquet column as 64-bit, so mixing them would break every later read of the layer)."""
    old, new = tmp_path / "old", tmp_path / "new"
    spark.createDataFrame([(1, "a")], "_record_index int, _raw string").write.parquet(str(old / "_batch_id=0"))
    spark.createDataFrame([(1, "a")], "_record_index long, _raw string").write.parquet(str(new / "_batch_id=0"))
    assert [readers.record_index_type(spark, str(path)) for path in (old, new, tmp_path / "none")] == ["int", "long", "long"]
