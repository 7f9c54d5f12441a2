# The workspace pages show annotation data: the same annotation settings as tests/annotate.
from tests.annotate.conftest import _annotation_settings  # noqa: F401
