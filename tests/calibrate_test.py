#!/usr/bin/env python3
"""Tests of scripts/calibrate's fitting procedure against synthetic cases.

The fit (docs/calibration.md §3) brackets and bisects one group multiplier per
step in log space; these tests give it a runner whose IOPS are a known
function of the group's cost rows, so they check the procedure, not the
model: it finds the multiplier that meets the target, reports a target it
cannot reach instead of inventing a multiplier, and says so when the
response is not monotone (a "weakly identified" fit with other roots).

Usage: calibrate_test.py (no arguments; needs no blklab binary).
"""

import contextlib
import importlib.machinery
import importlib.util
import io
import math
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_calibrate():
    path = os.path.join(ROOT, "scripts", "calibrate")
    loader = importlib.machinery.SourceFileLoader("calibrate", path)
    spec = importlib.util.spec_from_loader("calibrate", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


cal = load_calibrate()


def group_multiplier(groups, cost_rows, group, costs):
    """The multiplier of `group` the fit applied, read back from the cost
    rows it passes (so the rounding of group_costs is exercised too): the
    group's largest row reads it most precisely."""
    rows = next(g["rows"] for g in groups if g["name"] == group)
    row = max(rows, key=lambda r: cost_rows[r][0])
    return costs[row] / cost_rows[row][0]


class SyntheticRunner:
    """IOPS as a function of one group's multiplier."""

    def __init__(self, groups, cost_rows, group, response):
        self.groups = groups
        self.cost_rows = cost_rows
        self.group = group
        self.response = response
        self.runs = 0

    def run(self, case, costs):
        self.runs += 1
        return {"iops": self.response(group_multiplier(self.groups, self.cost_rows, self.group, costs))}


class FitStepTest(unittest.TestCase):
    def setUp(self):
        self.groups = cal.read_groups()
        self.cost_rows = cal.read_cost_rows()
        self.group = self.groups[0]["name"]
        self.case = {"case": "RCx", "state": "synthetic", "published": {"iops": 1.0e6}}

    def fit(self, response):
        runner = SyntheticRunner(self.groups, self.cost_rows, self.group, response)
        with contextlib.redirect_stdout(io.StringIO()):
            result = cal.fit_step(runner, self.groups, self.cost_rows, {}, self.group, self.case)
        return result, runner

    def test_finds_the_multiplier_that_meets_the_target(self):
        # IOPS = 1 / (fixed + m * priced): the target is met at m = 1.6.
        result, runner = self.fit(lambda m: 1.0 / (0.4e-6 + 0.375e-6 * m))
        self.assertTrue(result["reached"])
        self.assertLess(abs(result["residual"]), cal.TOLERANCE)
        self.assertAlmostEqual(result["permille"] / 1000, 1.6, delta=0.02)
        self.assertLessEqual(runner.runs, cal.MAX_RUNS)
        self.assertEqual(cal.non_monotone(result["memo"]), [])

    def test_a_target_below_one_brackets_downwards(self):
        result, _ = self.fit(lambda m: 1.0 / (0.4e-6 + 1.2e-6 * m))  # m = 0.5
        self.assertTrue(result["reached"])
        self.assertAlmostEqual(result["permille"] / 1000, 0.5, delta=0.01)

    def test_an_unreachable_target_keeps_the_default(self):
        # A ceiling the group does not price: IOPS never reach the target.
        result, _ = self.fit(lambda m: 0.8e6 / (1.0 + 0.01 * m))
        self.assertFalse(result["reached"])
        self.assertEqual(result["permille"], 1000)
        self.assertIn("not reachable", result["note"])


class NonMonotoneTest(unittest.TestCase):
    def test_monotone_runs_have_no_pairs(self):
        memo = {1000: 0.04, 1414: 0.005, 2000: -0.12, 1189: 0.02}
        self.assertEqual(cal.non_monotone(memo), [])

    def test_a_rise_with_the_multiplier_is_reported(self):
        # Log residuals as RC1 after gave them with idle CPUs: 1.2 above 1.0.
        memo = {500: math.log(5.76 / 5.8), 1000: math.log(5.76 / 5.8), 1200: math.log(6.03 / 5.8),
                1414: math.log(5.83 / 5.8)}
        pairs = cal.non_monotone(memo)
        self.assertIn((1000, 1200), pairs)
        self.assertIn((500, 1200), pairs)
        self.assertNotIn((1200, 1414), pairs)

    def test_noise_within_the_tolerance_is_not_a_rise(self):
        memo = {1000: 0.001, 1100: 0.001 + cal.TOLERANCE}
        self.assertEqual(cal.non_monotone(memo), [])


class CmdFitTest(unittest.TestCase):
    """cmd_fit over all three steps with a synthetic runner per case."""

    def run_fit(self, responses):
        groups = cal.read_groups()
        cost_rows = cal.read_cost_rows()

        class Runner:
            def run(self, case, costs):
                group = next(g for g, c in cal.STEPS if c == case["name"])
                return {"iops": responses[group](group_multiplier(groups, cost_rows, group, costs))}

        class Args:
            command = "fit"
            write = False

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            cal.cmd_fit(Args(), Runner())
        return out.getvalue()

    def targets(self):
        return {g: cal.case_by_name(c)["published"]["iops"] for g, c in cal.STEPS}

    def test_prints_each_step_and_the_fitted_table(self):
        t = self.targets()
        text = self.run_fit({g: (lambda m, g=g: t[g] * 1.3 / (0.3 + m)) for g in t})
        for g in t:
            self.assertIn(f"  {g} = 1.000", text)
        self.assertIn("fitted: ", text)
        self.assertNotIn("weakly identified", text)

    def test_says_when_a_step_is_weakly_identified(self):
        t = self.targets()
        responses = {g: (lambda m, g=g: t[g] * 1.3 / (0.3 + m)) for g in t}
        last = cal.STEPS[-1][0]
        # A bump: IOPS rise from m = 1 to m = 2 before they fall, so the
        # bracket's runs are not monotone in m.
        responses[last] = lambda m: t[last] * (1.02 if m < 1.5 else 1.05 if m < 3 else 0.9)
        text = self.run_fit(responses)
        self.assertIn("weakly identified", text)
        self.assertIn(f"  {last} = ", text)


if __name__ == "__main__":
    unittest.main(verbosity=1)
