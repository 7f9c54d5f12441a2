#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    from config.cli import argv_problem  # after the default: importing config settles it

    if (problem := argv_problem(sys.argv)) is not None:
        sys.stderr.write(f"manage.py: {problem}\n")
        sys.exit(2)
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
