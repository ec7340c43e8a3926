"""I/O: reading and writing the lake (Spark readers/writers, small files through Hadoop's FileSystem)."""
