"""modules/emr_virtual_cluster.py: the tenant namespace on the EKS cluster."""
from __future__ import annotations

from tests.modules.helpers import resource


def test_virtual_cluster(tenant_module):
    vc = resource(tenant_module, "aws_emrcontainers_virtual_cluster", "emr_cluster")
    assert vc["name"] == "${var.tenant_id}-lake"
    assert vc["container_provider"] == {"id": "${var.eks_cluster_name}", "type": "EKS",
                                        "info": {"eks_info": {"namespace": "${local.namespace}"}}}
