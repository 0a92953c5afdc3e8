"""Naive references for the tests: the budget curve as a loop over problems and
proposals."""

from __future__ import annotations


def budget_curve_naive(success, cost, budgets) -> list:
    """Pass rate at each budget k, one problem and one proposal at a time."""
    out = []
    for k in budgets:
        solved = 0
        for row_s, row_c in zip(success, cost):
            spent = 0
            for ok, c in zip(row_s, row_c):
                spent += c
                if spent > k:
                    break
                if ok:
                    solved += 1
                    break
        out.append(solved / len(success))
    return out
