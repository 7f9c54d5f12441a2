# One obvious way to do each thing. See README.md.
.PHONY: run test setup worker worker-interactive worker-generation lint

run:    ## set up, load the demo project, run web + the two Celery workers on embedded defaults
	bash scripts/run.sh

test:   ## set up, lint (as `make lint`), then run the whole test suite
	bash scripts/test.sh

lint:   ## set up, then ruff (lint + format check), mypy and import-linter
	bash scripts/setup.sh --dev && bash scripts/lint.sh

setup:  ## only set up (.venv, WordNet, database)
	bash scripts/setup.sh --dev

worker: ## both Celery workers (scripts/workers.sh, as `make run` starts them; logs in var/)
	bash scripts/workers.sh

worker-interactive: ## train, auto-label, route, export, evaluate, import + the embedded beat (stale-job sweep)
	DJANGO_SETTINGS_MODULE=$${DJANGO_SETTINGS_MODULE:-config.settings.local} .venv/bin/celery -A config worker -B -n interactive@%h -Q default,ml,interactive --loglevel INFO

worker-generation: ## generation runs only (long): they never hold up the interactive queue
	DJANGO_SETTINGS_MODULE=$${DJANGO_SETTINGS_MODULE:-config.settings.local} .venv/bin/celery -A config worker -n generation@%h -Q generation --loglevel INFO
