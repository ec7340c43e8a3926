"""The tenant's EMR on EKS virtual cluster: the tenant namespace on the shared EKS cluster."""
from __future__ import annotations

import dataclasses
from typing import Mapping

from cdktf_cdktf_provider_aws.emrcontainers_virtual_cluster import (
    EmrcontainersVirtualCluster,
    EmrcontainersVirtualClusterContainerProvider,
    EmrcontainersVirtualClusterContainerProviderInfo,
    EmrcontainersVirtualClusterContainerProviderInfoEksInfo,
)
from constructs import Construct


@dataclasses.dataclass(frozen=True)
class EmrVirtualClusterConfig:
    """Inputs of ``EmrVirtualCluster`` (values may be Terraform expressions).

    Attributes:
        name: the virtual cluster's name, ``<tenant>-lake``.
        eks_cluster_name: the EKS cluster hosting it.
        namespace: the tenant's Kubernetes namespace.
        tags: tags of the virtual cluster.
    """

    name: str
    eks_cluster_name: str
    namespace: str
    tags: Mapping[str, str]


class EmrVirtualCluster(Construct):
    def __init__(self, scope: Construct, id_: str, cfg: EmrVirtualClusterConfig) -> None:
        super().__init__(scope, id_)
        self.cluster = EmrcontainersVirtualCluster(
            self, "cluster", name=cfg.name, tags=cfg.tags,
            container_provider=EmrcontainersVirtualClusterContainerProvider(
                id=cfg.eks_cluster_name, type="EKS",
                info=EmrcontainersVirtualClusterContainerProviderInfo(
                    eks_info=EmrcontainersVirtualClusterContainerProviderInfoEksInfo(namespace=cfg.namespace))))
        self.id = self.cluster.id
        self.arn = self.cluster.arn
