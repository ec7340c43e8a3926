"""Pure transformations: DataFrame in, DataFrame out. No I/O, no boto3, no paths."""
