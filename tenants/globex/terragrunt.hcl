# globex: internal data only; on the shared cluster with acme, so in its region (eu-west-1).
include "root" {
  path = find_in_parent_folders("root.hcl")
}

# The shared cluster network, like acme's: both tenants' jobs run on one EKS cluster, in one VPC.
dependency "network" {
  config_path = "../_platform/network"

  # Until the network is applied, validation, plans and destroys read these (Terragrunt's mock outputs).
  mock_outputs = {
    gateway_endpoint_ids   = { "vpc-00000000000000000" = "vpce-00000000000000000" }
    interface_endpoint_ids = { "vpc-00000000000000000.kms" = "vpce-00000000000000001" }
  }
  mock_outputs_allowed_terraform_commands = ["validate", "plan", "destroy"]
}

# The account's Lake Formation settings in this region (tenants/_platform/lake-formation-eu-west-1): applied before
# this tenant, so its Glue databases and tables get no IAM_ALLOWED_PRINCIPALS default. No output is read; the block
# orders the units (the runner refuses the tenant's apply while the account keeps that default).
dependency "lake_formation" {
  config_path                             = "../_platform/lake-formation-eu-west-1"
  mock_outputs                            = { region = "eu-west-1" }
  mock_outputs_allowed_terraform_commands = ["validate", "plan", "destroy"]
}

inputs = {
  tenant_id           = "globex"
  region              = "eu-west-1"
  data_classification = ["internal"]
  account_id = "123456789012"  # moto's fixed account (see tenants/acme/terragrunt.hcl)
  shared_gateway_endpoint_ids   = dependency.network.outputs.gateway_endpoint_ids
  shared_interface_endpoint_ids = dependency.network.outputs.interface_endpoint_ids
  tags = {
    owner    = "globex-analytics"
    workload = "datalake"
  }
}
