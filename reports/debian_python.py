"""Kept for the test scripts that still import it (history_test, tools/fleet/fleet_test): the
re-execution lives in reports/interpreter.py."""

from reports.interpreter import reexec_if_missing  # noqa: F401
