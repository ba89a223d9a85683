# kwx — two commands on a fresh machine: `make run` (the service on an embedded PostgreSQL)
# and `make test` (the whole suite). The Makefile builds its own virtualenv in .venv.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
HOST   ?= 127.0.0.1
PORT   ?= 8000
PYTEST_ARGS ?=

.PHONY: run test test-under-load test-citus lint bench bench-quick openapi clean install lock

# The first `make run` / `make test` on a machine says what it does, shows pip's own progress and
# prints how long it took (about a minute); later runs skip this until pyproject.toml or
# constraints.txt changes. constraints.txt pins every package to the versions the suite last passed
# with, so a fresh clone (and CI) installs what was tested, not whatever PyPI released since;
# `make lock` moves the pins to the newest releases pyproject.toml allows.
$(STAMP): pyproject.toml constraints.txt
	@echo "kwx: [1/2] making the virtualenv $(VENV) and installing kwx with its packages (once; about a minute)"
	@start=$$(date +%s) && \
	  $(PYTHON) -m venv $(VENV) && \
	  $(BIN)/pip install --quiet --upgrade pip && \
	  $(BIN)/pip install --progress-bar on --no-color -c constraints.txt -e '.[dev,bench]' && \
	  echo "kwx: [1/2] installed in $$(( $$(date +%s) - start )) s"
	@touch $(STAMP)

# The rules engine compiled with mypyc (services/compiled_engine.py), rebuilt when domain/ changes;
# used only while it matches the sources. Without a C compiler the engine stays interpreted.
COMPILED := $(VENV)/.compiled
$(COMPILED): $(STAMP) $(wildcard domain/*.py) services/compiled_engine.py
	@echo "kwx: [2/2] compiling the rules engine with mypyc (once per change of domain/; about a minute)"
	@start=$$(date +%s); \
	  $(BIN)/python -m services.compiled_engine build || echo "kwx: the rules engine stays interpreted"; \
	  echo "kwx: [2/2] done in $$(( $$(date +%s) - start )) s"
	@touch $(COMPILED)

install: $(STAMP) $(COMPILED)

run: $(STAMP) $(COMPILED)
	$(BIN)/kwx serve --host $(HOST) --port $(PORT)

test: $(STAMP) $(COMPILED)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The suite RUNS times in a row beside BUSY CPU-bound processes (issue 11 §6; tests/under_load.py).
RUNS ?= 10
BUSY ?= 2
test-under-load: $(STAMP) $(COMPILED)
	$(BIN)/python -m tests.under_load --runs $(RUNS) --busy $(BUSY) -- $(PYTEST_ARGS)

# The store, append, API, projection and fault tests on a real Citus cluster (issue 14;
# tests/citus_cluster.py, docs/SCALING.md): Citus built once into .kwx-citus/pg (a build that cannot
# be done fails the target, it never skips), a coordinator and two workers started on 127.0.0.1,
# TEST_DATABASE_URL at the coordinator, the servers stopped after. CITUS_DESELECT: tests whose own
# tampering Citus refuses (ALTER TABLE … DISABLE TRIGGER on a distributed table — also how the facts
# test makes events look stored before migration 0012 —, an UPDATE of events
# with a STABLE expression, a correlated join of events with a coordinator table), and two tests of a
# single PostgreSQL's plan (on a cluster the coordinator plans a distributed scan; each worker plans its shard).
CITUS_TESTS ?= tests/citus_test_build.py tests/citus_test_cluster.py tests/citus_test_faults.py \
	tests/service/test_store.py tests/service/test_store_layers.py tests/service/test_fast_append.py \
	tests/service/test_global_read.py tests/service/test_tenants.py tests/service/test_migrations.py \
	tests/service/test_api.py tests/service/test_ndjson_ingest.py tests/service/test_input_semantics.py \
	tests/service/test_hostile.py tests/service/test_conformance_http.py tests/service/test_export.py \
	tests/service/test_verify_file.py tests/service/test_feed.py tests/service/test_discovery.py \
	tests/service/test_keys_admin.py tests/service/test_read_schemas.py tests/service/test_timeline.py \
	tests/service/test_workers.py tests/service/test_serve_projector.py tests/service/test_restore.py \
	tests/service/test_faults_db.py tests/service/test_metrics.py tests/service/test_cli.py \
	tests/service/test_push.py tests/service/test_read_pool.py tests/service/test_collation.py \
	tests/service/test_heap.py tests/service/test_read_gate.py tests/service/test_health_ready.py \
	tests/service/test_migration_0020.py tests/projections
CITUS_DESELECT ?= \
	--deselect tests/projections/test_log.py::test_the_facts_page_walks_the_log_order_index_and_puts_the_planner_back \
	--deselect tests/projections/test_log.py::test_each_walk_of_the_facts_page_stops_at_the_page \
	--deselect tests/projections/test_hand_reads.py::test_a_changed_event_breaks_its_hands_chain_only \
	--deselect tests/projections/test_stored_facts.py::test_events_stored_before_facts_are_folded \
	--deselect tests/projections/test_money_bounds.py::test_largest_ranges_through_every_read_model \
	--deselect tests/projections/test_money_bounds.py::test_the_feed_shows_every_reported_line_and_each_report_on_its_own \
	--deselect tests/service/test_cli.py::test_verify_reports_the_first_broken_link_and_exits_1 \
	--deselect tests/service/test_cli.py::test_verify_table_and_tenant_pick_tables_when_tenants_share_an_id \
	--deselect tests/service/test_health_ready.py::test_not_ready_while_the_read_models_lag_past_the_bound
test-citus: $(STAMP) $(COMPILED)
	$(BIN)/python -m tests.citus_cluster run -- $(CITUS_TESTS) $(CITUS_DESELECT) $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check domain services projections tests
	$(BIN)/ruff format --check domain services projections tests
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: $(STAMP) $(COMPILED)
	$(BIN)/python -m tests.bench

# Every benchmark at a tiny size: proves each still runs to its end (numbers meaningless); .ci/run runs it
bench-quick: $(STAMP) $(COMPILED)
	KWX_BENCH_QUICK=1 $(BIN)/python -m tests.bench

openapi: $(STAMP)
	$(BIN)/kwx openapi > openapi/openapi.json

# New pins: a throwaway virtualenv takes the newest releases pyproject.toml allows, and its
# `pip freeze` becomes constraints.txt (then `make test`, and commit both when it passes).
LOCK_VENV := .venv-lock
lock:
	rm -rf $(LOCK_VENV)
	$(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/pip install --quiet --upgrade pip
	$(LOCK_VENV)/bin/pip install --quiet -e '.[dev,bench,redis]'
	{ echo "# The versions kwx's suite passed with: \`make install\` installs these (pip -c)."; \
	  echo "# Written by \`make lock\` ($$($(LOCK_VENV)/bin/python -V)); change pyproject.toml for a range."; \
	  $(LOCK_VENV)/bin/pip freeze --exclude-editable; } > constraints.txt
	rm -rf $(LOCK_VENV)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
