"""Production: secrets and hosts have no defaults; DEBUG is off whatever the environment says;
HTTPS everywhere (redirect, HSTS, secure cookies) behind a TLS-terminating proxy.

``python manage.py check --deploy`` is clean with only ``DJANGO_SECRET_KEY`` and
``DJANGO_ALLOWED_HOSTS`` set. See docs/security.md for every variable read here.
"""

from config.env import ImproperlyConfiguredEnv, env, env_bool, env_int, env_list

from .base import *

PRODUCTION = True

# Never from DJANGO_DEBUG: a debug page shows settings (DATABASE_URL, CELERY_BROKER_URL) and URLs.
DEBUG = False

SECRET_KEY = env("DJANGO_SECRET_KEY")
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", [])
if not ALLOWED_HOSTS:
    raise ImproperlyConfiguredEnv("environment variable DJANGO_ALLOWED_HOSTS is required in production")

SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_CONTENT_TYPE_NOSNIFF = True

# HTTPS. Browsers only honour HSTS received over HTTPS, so the header never reaches a plain-HTTP client.
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 31536000)  # one year
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
# Only a consent in the header: nothing is preloaded until the domain is submitted to hstspreload.org.
SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", True)

# The proxy in front terminates TLS and says so in a header it sets (and overwrites if a client
# sent it). "HEADER,value" in Django's META spelling; "off" when gunicorn itself serves HTTPS.
_proxy_ssl_header = env_list("DJANGO_SECURE_PROXY_SSL_HEADER", ["HTTP_X_FORWARDED_PROTO", "https"])
if [part.lower() for part in _proxy_ssl_header] in (["off"], ["none"]):
    SECURE_PROXY_SSL_HEADER = None
elif len(_proxy_ssl_header) == 2:
    SECURE_PROXY_SSL_HEADER = (_proxy_ssl_header[0], _proxy_ssl_header[1])
else:
    raise ImproperlyConfiguredEnv(
        "DJANGO_SECURE_PROXY_SSL_HEADER must be 'HTTP_HEADER_NAME,value' (e.g. HTTP_X_FORWARDED_PROTO,https) or 'off'"
    )
