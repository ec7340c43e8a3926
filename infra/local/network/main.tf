# Fixture network for the local environment: the VPC a tenant that brings its own VPC names in its file,
# with two private subnets, each with its own route table, so that the tenant module's `vpc_ids` resolve
# and its S3 gateway endpoint has route tables to attach to. Never used with TENANTLAKE_ENV=aws, where
# tenants name their real VPCs. (Tenants on a shared cluster VPC get theirs from the platform network
# unit, tenants/_platform/network, which creates its own fixture VPC locally.)
#
# The runner (infra/terragrunt/fixture_network.py) applies one copy per fixture VPC, with state in the
# emulator's state bucket under network/<vpc id>/terraform.tfstate.  The emulator creates the VPC with the
# id in its `tenantlake:fixture-vpc-id` tag (infra/local/moto_server.py); a postcondition checks it.

terraform {
  required_version = ">= 1.6"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "5.100.0"
    }
  }
  backend "s3" {}
}

variable "tenant_id" {
  type        = string
  description = "Tenant that owns the VPC (tags only)."
}

variable "region" {
  type        = string
  description = "Region of the tenant, and of its VPC."
}

variable "vpc_id" {
  type        = string
  description = "The VPC id the tenant file lists; the created VPC must get exactly this id."
}

variable "cidr_block" {
  type        = string
  description = "CIDR of the fixture VPC."
  default     = "10.20.0.0/16"
}

variable "endpoint" {
  type        = string
  description = "The emulator's endpoint URL."
}

variable "ca_bundle" {
  type        = string
  description = "The emulator's CA certificate (PEM)."
}

provider "aws" {
  region                      = var.region
  access_key                  = "testing"
  secret_key                  = "testing"  # pragma: allowlist secret - dummy or public value
  skip_credentials_validation = true
  skip_requesting_account_id  = true
  skip_region_validation      = true
  skip_metadata_api_check     = "true"
  custom_ca_bundle            = var.ca_bundle
  endpoints {
    ec2 = var.endpoint
    sts = var.endpoint
  }
}

locals {
  tags = {
    tenant               = var.tenant_id
    "tenantlake:fixture" = "network"
    environment          = "local"
  }
  subnets = {
    a = cidrsubnet(var.cidr_block, 8, 1)
    b = cidrsubnet(var.cidr_block, 8, 2)
  }
}

resource "aws_vpc" "tenant" {
  cidr_block           = var.cidr_block
  enable_dns_support   = true
  enable_dns_hostnames = true
  tags                 = merge(local.tags, { Name = "${var.tenant_id}-fixture", "tenantlake:fixture-vpc-id" = var.vpc_id })

  lifecycle {
    postcondition {
      condition     = self.id == var.vpc_id
      error_message = "The fixture VPC of ${var.tenant_id} got id ${self.id}, not ${var.vpc_id}: the emulator is not infra/local/moto_server.py (make emulator-down, then apply again)."
    }
  }
}

resource "aws_subnet" "private" {
  for_each          = local.subnets
  vpc_id            = aws_vpc.tenant.id
  cidr_block        = each.value
  availability_zone = "${var.region}${each.key}"
  tags              = merge(local.tags, { Name = "${var.tenant_id}-private-${each.key}" })
}

resource "aws_route_table" "private" {
  for_each = local.subnets
  vpc_id   = aws_vpc.tenant.id
  tags     = merge(local.tags, { Name = "${var.tenant_id}-private-${each.key}" })
}

resource "aws_route_table_association" "private" {
  for_each       = local.subnets
  subnet_id      = aws_subnet.private[each.key].id
  route_table_id = aws_route_table.private[each.key].id
}

output "vpc_id" {
  value       = aws_vpc.tenant.id
  description = "The fixture VPC's id (equal to var.vpc_id)."
}

output "route_table_ids" {
  value       = [for rt in aws_route_table.private : rt.id]
  description = "The private route tables (the VPC's main route table comes on top)."
}
