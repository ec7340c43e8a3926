"""Policy as code: checkov custom checks (``policies/checks``) and the gate that runs them (``policies.gate``)."""
