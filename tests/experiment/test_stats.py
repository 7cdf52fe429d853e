"""The experiment's pure statistics (issue 37 §4): figures over repeats, the two-level bootstrap,
paired differences, the FPR-constrained decision rule, majority verdicts and flips."""
from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from verifier.experiment.stats import arm_stats, decide, flips, majority, paired_deltas, votes

NAN = math.nan
TRUTH = np.array([1, 1, 1, 1, 1, 0, 0, 0, 0, 0] * 3, dtype=bool)  # 30 items, 15 pass / 15 fail


def runs(*rows) -> np.ndarray:
    return np.asarray(rows, dtype=float)


def rep(verdicts, r: int = 3) -> np.ndarray:
    return np.tile(np.asarray(verdicts, dtype=float), (r, 1))


def with_fp(k: int) -> np.ndarray:
    """The truth with the first `k` failing items passed (k false positives)."""
    v = TRUTH.astype(float)
    v[np.flatnonzero(~TRUTH)[:k]] = 1.0
    return v


# ---- per arm --------------------------------------------------------------------------------------
def test_point_figures_are_the_mean_over_repeats_of_each_repeats_figure():
    v = runs(with_fp(0), with_fp(3), with_fp(6))
    s = arm_stats(v, TRUTH, n_boot=200)
    fprs = [0.0, 3 / 15, 6 / 15]
    assert s.metrics["fpr"].value == pytest.approx(np.mean(fprs))
    assert s.spread["fpr"].per_repeat == pytest.approx(fprs) and s.spread["fpr"].range == pytest.approx(6 / 15)
    kappas = [cohen_kappa_score(TRUTH, row > 0.5) for row in v]
    assert s.metrics["kappa"].value == pytest.approx(np.mean(kappas))
    assert s.spread["kappa"].sd == pytest.approx(np.std(kappas, ddof=1))
    assert s.metrics["kappa"].lo <= s.metrics["kappa"].value <= s.metrics["kappa"].hi
    assert s.unstable == pytest.approx(6 / 30) and s.n == 30 and s.unscored == 0


def test_a_perfect_deterministic_arm_has_no_spread_and_a_point_interval():
    s = arm_stats(rep(TRUTH), TRUTH, n_boot=200)
    assert s.metrics["kappa"].value == 1.0 and s.metrics["kappa"].lo == s.metrics["kappa"].hi == 1.0
    assert s.spread["kappa"].range == 0.0 and s.unstable == 0.0
    assert s.metrics["fpr"].value == 0.0 and s.metrics["fnr"].value == 0.0


def test_unscored_verifications_are_left_out_never_counted_as_fails():
    v = rep(TRUTH, 2)
    v[0, :5] = NAN  # five passing items unscored in repeat 1
    s = arm_stats(v, TRUTH, n_boot=100)
    assert s.metrics["fnr"].value == 0.0 and s.unscored == 5 and s.n == 30
    assert s.spread["accuracy"].per_repeat == [1.0, 1.0]


def test_more_repeats_of_a_noisy_judge_do_not_shrink_the_spread_but_the_interval_reflects_noise():
    rng = np.random.default_rng(1)
    noisy = rep(TRUTH, 5)
    noisy[:, :10] = rng.integers(0, 2, size=(5, 10))
    quiet, loud = arm_stats(rep(TRUTH, 5), TRUTH, n_boot=300), arm_stats(noisy, TRUTH, n_boot=300)
    assert loud.spread["kappa"].range > 0 and loud.unstable > 0
    width = lambda s: s.metrics["kappa"].hi - s.metrics["kappa"].lo
    assert width(loud) > width(quiet)


def test_one_repeat_has_no_spread_to_measure():
    s = arm_stats(runs(with_fp(2)), TRUTH, n_boot=50)
    assert s.spread["fpr"].range == 0.0 and math.isnan(s.spread["fpr"].sd) and math.isnan(s.unstable)


def test_the_bootstrap_is_seeded():
    v = runs(with_fp(1), with_fp(4))
    assert arm_stats(v, TRUTH, seed=3) == arm_stats(v, TRUTH, seed=3)


@pytest.mark.parametrize("v,t", [(np.zeros((2, 3)), np.zeros(4, bool)), (np.zeros(3), np.zeros(3, bool)),
                                 (np.zeros((0, 3)), np.zeros(3, bool))])
def test_shapes_are_checked(v, t):
    with pytest.raises(ValueError):
        arm_stats(v, t)


# ---- paired differences and the decision ---------------------------------------------------------
def test_paired_deltas_are_arm_minus_baseline_on_the_same_items():
    base, arm = rep(with_fp(6)), rep(with_fp(0))
    d = paired_deltas(arm, base, TRUTH, n_boot=300)
    assert d["fpr"].value == pytest.approx(-6 / 15)
    k_base = cohen_kappa_score(TRUTH, with_fp(6) > 0.5)
    assert d["kappa"].value == pytest.approx(1 - k_base) and d["kappa"].lo > 0
    assert d["fpr"].hi < 0
    with pytest.raises(ValueError, match="same repeats"):
        paired_deltas(rep(TRUTH, 2), rep(TRUTH, 3), TRUTH)


def test_pairing_narrows_the_interval_compared_with_independent_resamples():
    """Both arms miss the same hard items; the arm fixes one: pairing sees a sure small gain."""
    base = with_fp(5)
    arm = with_fp(4)
    d = paired_deltas(rep(arm), rep(base), TRUTH, n_boot=500)
    a, b = arm_stats(rep(arm), TRUTH, n_boot=500), arm_stats(rep(base), TRUTH, n_boot=500)
    assert d["kappa"].lo >= 0
    assert a.metrics["kappa"].lo < b.metrics["kappa"].hi  # unpaired intervals overlap


def decision(arm, base, n_boot=500):
    return decide(paired_deltas(arm, base, TRUTH, n_boot=n_boot), arm_stats(base, TRUTH, n_boot=n_boot))


def test_accepts_an_arm_that_truly_lowers_fpr():
    d = decision(rep(with_fp(0)), rep(with_fp(6)))
    assert d.verdict == "accept" and "above 0" in d.reason


def test_rejects_an_arm_that_raises_fpr_even_while_raising_kappa():
    base = TRUTH.astype(float)
    base[np.flatnonzero(TRUTH)[:10]] = 0.0  # misses 10 of 15 passes: low kappa, no false positive
    arm = TRUTH.astype(float)
    arm[np.flatnonzero(~TRUTH)[:2]] = 1.0  # finds every pass, but passes 2 failures
    d = decision(rep(arm), rep(base))
    assert d.delta_kappa.lo > 0  # kappa truly rose...
    assert d.verdict == "reject" and "FPR rose" in d.reason and "although kappa rose" in d.reason


def test_an_fpr_rise_within_the_baselines_own_noise_is_not_a_rejection():
    base = runs(with_fp(3), with_fp(0), with_fp(3))  # the baseline's FPR moves by 3/15 on its own
    arm = runs(with_fp(3), with_fp(3), with_fp(3))  # one more FP on average: within that noise
    d = decision(arm, base)
    assert d.delta_fpr.value > 0 and d.fpr_noise == pytest.approx(3 / 15) and d.verdict != "reject"


def test_calls_a_pure_noise_arm_inconclusive():
    """Same judge, a wording change that does nothing: both arms flip coins on the same 8 items."""
    rng = np.random.default_rng(7)
    noisy = lambda: np.where(np.arange(30) < 8, rng.integers(0, 2, size=(3, 30)), TRUTH.astype(float))
    outcomes = [decision(noisy(), noisy(), n_boot=400).verdict for _ in range(10)]
    assert outcomes.count("accept") == 0 and outcomes.count("inconclusive") >= 8


def test_rejects_an_arm_whose_kappa_falls():
    d = decision(rep(np.where(TRUTH, 0.0, 0.0)), rep(TRUTH))
    assert d.verdict == "reject" and "below 0" in d.reason


def test_an_undefined_kappa_is_inconclusive_not_accepted():
    t = np.ones(10, bool)
    d = decide(paired_deltas(rep(np.ones(10)), rep(np.zeros(10)), t, n_boot=50), arm_stats(rep(np.zeros(10)), t, n_boot=50))
    assert d.verdict == "inconclusive" and "undefined" in d.reason


# ---- majority and flips --------------------------------------------------------------------------
def test_majority_is_strict_and_ties_or_unscored_items_are_none():
    v = runs([1, 1, 0, NAN, 1], [1, 0, 0, NAN, 0], [0, NAN, 0, NAN, NAN])
    m = majority(v)
    assert m[0] == 1.0 and math.isnan(m[1]) and m[2] == 0.0 and math.isnan(m[3]) and math.isnan(m[4])
    assert votes(v[:, 0]) == "2/3 pass" and votes(v[:, 1]) == "1/2 pass"


def test_flips_list_changed_majorities_fixed_first_with_their_votes():
    t = np.array([1, 0, 1, 0], bool)
    base = runs([0, 1, 1, 0], [0, 1, 1, 0], [1, 1, 1, 0])
    arm = runs([1, 1, 0, 0], [1, 0, 1, 0], [1, 0, 0, 0])
    out = flips(["a", "b", "c", "d"], arm, base, t)
    assert [(f.id, f.effect) for f in out] == [("a", "fixed"), ("b", "fixed"), ("c", "broke")]
    assert out[0].baseline_votes == "1/3 pass" and out[0].arm_votes == "3/3 pass" and out[0].label is True
    assert not flips(["a", "b", "c", "d"], base, base, t)


# ---- the ledger's accepted path ------------------------------------------------------------------
def test_the_accepted_path_starts_at_the_first_baseline_and_takes_each_experiments_best_accepted_arm():
    from verifier.experiment.ledger import LedgerArm, LedgerLine, accepted_path

    def line(name, *arms):
        return LedgerLine(at=0, name=name, folder=name, repeats=3, items=10, arms=list(arms))

    base = LedgerArm(name="b", baseline=True, fingerprint="0", kappa=0.5, fpr=0.3)
    lines = [line("e1", base, LedgerArm(name="x", baseline=False, fingerprint="1", kappa=0.6, fpr=0.2,
                                        decision="accept", delta_kappa=0.1),
                  LedgerArm(name="y", baseline=False, fingerprint="2", kappa=0.7, fpr=0.2, decision="accept",
                            delta_kappa=0.2)),
             line("e2", base.model_copy(update={"kappa": 0.7}),
                  LedgerArm(name="z", baseline=False, fingerprint="3", kappa=0.8, fpr=0.4, decision="reject")),
             line("e3", base, LedgerArm(name="w", baseline=False, fingerprint="4", kappa=0.75, fpr=0.1,
                                        decision="accept", delta_kappa=0.05))]
    path = accepted_path(lines)
    assert [(p.experiment, p.arm, p.kappa) for p in path] == [("e1", "b", 0.5), ("e1", "y", 0.7), ("e3", "w", 0.75)]
    assert accepted_path([]) == []
