"""Tests: SQLite (or DATABASE_URL), fast hashing, eager Celery for unit tests only.

Integration tests (tests/integration/) switch eager off and talk to the real broker.
"""

import os

from config.env import env, env_bool

from .base import *
from .base import COUNTERPART, VAR_DIR

SECRET_KEY = env("DJANGO_SECRET_KEY", "test-insecure")
DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_TASK_ALWAYS_EAGER = True
CELERY_TASK_EAGER_PROPAGATES = True
# one embedding cache per pytest-xdist worker (scripts/test.sh runs the fast tests in parallel):
# two processes writing the same shard at once would race on its temporary file
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
COUNTERPART["EMBEDDING_CACHE_DIR"] = env(
    "COUNTERPART_EMBEDDING_CACHE", str(VAR_DIR / (f"test-embeddings-{_WORKER}" if _WORKER else "test-embeddings"))
)
# Unit tests run jobs eagerly inside the test's transaction: no heartbeat thread (progress
# calls refresh the heartbeat; integration tests run real workers with the thread on).
COUNTERPART["JOB_HEARTBEAT_THREAD"] = env_bool("COUNTERPART_JOB_HEARTBEAT_THREAD", False)
# Fast tests never convert or load the bundled SmolLM2: the perplexity filter is skipped (with a
# run note) unless a test points COUNTERPART["PERPLEXITY_LM_PATH"] at a tiny model; real-model
# tests are marked slow and switch it back on.
COUNTERPART["BUNDLED_LM"] = env_bool("COUNTERPART_BUNDLED_LM", False)
# no response cache of the model server unless a test names a file (tests/generation/test_endpoint*.py)
COUNTERPART["LLM_CACHE"] = env("COUNTERPART_LLM_CACHE", "")
