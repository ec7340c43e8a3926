"""EMR on EKS entrypoint for tenantlake jobs: the ``entryPoint`` of every StartJobRun request.

EMR runs ``spark-submit --py-files s3://<lake>/artifacts/spark_jobs/<version>/spark_jobs.zip
s3://<lake>/artifacts/spark_jobs/<version>/entrypoint.py <entryPointArguments>``. The zip is on the
Python path, so this script only hands its arguments to the job CLI. It imports nothing but
spark_jobs: it must run on a cluster that has never seen this repository.
"""
import sys

from spark_jobs.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
