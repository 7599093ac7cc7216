"""Every mutation of mutations.py still applies: its text occurs exactly once
in its file. A mutation whose text has moved on guards nothing, and
scripts/mutation (long, not part of ./scripts/test) would only say so when
someone runs it."""

import os
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mutations import MUTATIONS  # noqa: E402


class MutationsApply(unittest.TestCase):
    def test_each_mutation_text_occurs_once(self):
        for name, path, before, after, _ in MUTATIONS:
            with self.subTest(name):
                text = open(os.path.join(ROOT, path)).read()
                self.assertEqual(text.count(before), 1, f"{name}: in {path}")
                self.assertNotEqual(before, after, name)


if __name__ == "__main__":
    unittest.main()
