"""``python ft_cli.py ARGS``: the real ``raystudy`` CLI with the test-only ``fault_test``
study registered (the registry is patched in this process only)."""

from __future__ import annotations

import sys

from raystudy.cli import main
from raystudy.platform.configuration import registry

registry.add_entry(registry.StudyEntry("fault_test", "ft_study", "test-only"))

if __name__ == "__main__":
    sys.exit(main())
