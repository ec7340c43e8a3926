import sys

from spark_jobs.cli import main

sys.exit(main(sys.argv[1:]))
