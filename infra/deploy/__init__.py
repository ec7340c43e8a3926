"""Deploying spark_jobs to a tenant's EMR on EKS virtual cluster (``make deploy-jobs TENANT=acme``).

One concept per module:

* ``artifact``  - the deterministic, content-hashed zip of ``spark_jobs`` (+ contracts, + entrypoint);
* ``target``    - the tenant's Terraform outputs, read and checked, as a typed ``DeployTarget``;
* ``request``   - pure builder of the exact StartJobRun request (what ``--dry-run`` prints);
* ``preflight`` - checks against AWS before anything is uploaded or submitted;
* ``upload``    - SSE-KMS upload to ``s3://<lake>/artifacts/spark_jobs/<version>/``, skipped when unchanged;
* ``runner``    - submission in dependency order and polling until each run is terminal;
* ``cli``       - ``python -m infra.deploy``; ``entrypoint`` is the script EMR runs (it only imports spark_jobs).
"""
