# acme: GDPR data, so it stays in the EU (Ireland).
include "root" {
  path = find_in_parent_folders("root.hcl")
}

# The shared cluster network (tenants/_platform/network): the tenant's jobs run on the shared EKS cluster and
# reach the lake through that VPC's endpoints, which the network unit owns.
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
  tenant_id           = "acme"
  region              = "eu-west-1"
  data_classification = ["gdpr"]
  # The sample tenants target the local emulator: 123456789012 is moto's fixed account.
  # For TENANTLAKE_ENV=aws, put the real account here (and in tenants/_platform/network).
  account_id = "123456789012"
  # No VPC of its own: the shared network's endpoints (the module creates none).
  shared_gateway_endpoint_ids   = dependency.network.outputs.gateway_endpoint_ids
  shared_interface_endpoint_ids = dependency.network.outputs.interface_endpoint_ids
  # Iceberg table maintenance every Sunday as an EMR on EKS run (the schedule's defaults), from the code
  # `make deploy-jobs TENANT=acme ARGS=--maintain` published.
  maintenance_schedule = { enabled = true }
  # Lake Formation: the consumer selects gold's non-personal columns; the privacy officer's role may select the
  # personal ones too (on AWS the role must exist: Lake Formation refuses a grant to an unknown principal).
  lake_formation = {
    personal_data_reader_arns = ["arn:aws:iam::123456789012:role/acme-privacy-officer"]
  }
  # The pipeline runs itself (modules/README.md, "Orchestration and alerts"): a state machine runs each dataset's
  # layers on EMR on EKS when its contract's schedule fires or its landing data arrives; failures retry and alert;
  # a dataset whose silver was not published within its contract's freshness target pages. The runs use the code a
  # completed `make deploy-jobs TENANT=acme` published. Alerts go to the on-call address below.
  orchestration = {
    enabled             = true
    alert_subscriptions = [{ protocol = "email", endpoint = "acme-data-oncall@example.com" }]
  }
  tags = {
    owner    = "acme-data-team"
    workload = "datalake"
  }
}
