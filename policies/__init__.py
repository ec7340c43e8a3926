"""Policy as code: checkov custom checks (``policies/checks``) and the gate that runs them (``policies.gate``);
the access matrix (``access_matrix.yaml``) and its evaluation with an IAM policy simulator (policies/README.md)."""
