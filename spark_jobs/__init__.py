"""tenantlake PySpark medallion jobs. Runs on EMR on EKS (s3:// via EMRFS) and locally (s3a or paths).

This package never imports ``modules``, ``infra`` or cdktf: whoever launches a job passes the lake URI,
prefixes and key ARN as arguments.
"""
__version__ = "0.1.0"
