"""Local development: DEBUG on, a fixed insecure secret unless one is given."""

from config.env import env, env_bool

from .base import *

DEBUG = env_bool("DJANGO_DEBUG", True)
SECRET_KEY = env("DJANGO_SECRET_KEY", "local-insecure-do-not-use-in-production")
