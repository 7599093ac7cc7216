"""Shared pieces of the deploy checks: the skip code, python3-yaml, the verdict."""
import sys

SKIP = 77  # ctest's SKIP_RETURN_CODE for these tests


def require_yaml():
    """Returns the yaml module, or exits SKIP when python3-yaml is missing."""
    try:
        import yaml
    except ImportError:
        print("SKIP: python3-yaml not installed (scripts/setup installs it)")
        sys.exit(SKIP)
    return yaml


def verdict(failures, passed):
    """Prints FAIL with the count, or PASS with `passed`; returns the exit code."""
    if failures:
        print(f"FAIL: {len(failures)} problem(s)")
        return 1
    print("PASS: " + passed)
    return 0
