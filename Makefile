# One obvious way to do each thing. See README.md.
.PHONY: run test setup worker lint

run:    ## set up, load the demo project, run web + Celery worker on embedded defaults
	bash scripts/run.sh

test:   ## set up, lint (as `make lint`), then run the whole test suite
	bash scripts/test.sh

lint:   ## set up, then ruff (lint + format check), mypy and import-linter
	bash scripts/setup.sh --dev && bash scripts/lint.sh

setup:  ## only set up (.venv, WordNet, database)
	bash scripts/setup.sh --dev

worker: ## a Celery worker on all queues, with the embedded beat that runs the stale-job sweep
	DJANGO_SETTINGS_MODULE=$${DJANGO_SETTINGS_MODULE:-config.settings.local} .venv/bin/celery -A config worker -B -Q default,ml,generation --loglevel INFO
