"""Metric code against hand-computed cases and the published CUAVerifierBench figures."""
from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from verifier.bench.labels import agreement_table, read_labels_csv
from verifier.bench.metrics import (
    binarize,
    binary_agreement,
    continuous_agreement,
    fleiss_kappa,
    inter_annotator,
)

T, F = True, False


def test_binary_hand_computed():
    # tp: 0,4  fp: 1  fn: 3  tn: 2,5
    a = binary_agreement([T, T, F, F, T, F], [T, F, F, T, T, F], n_boot=200)
    assert (a.tp, a.fp, a.fn, a.tn, a.n) == (2, 1, 1, 2, 6)
    assert a.accuracy.value == pytest.approx(4 / 6)
    assert a.precision.value == pytest.approx(2 / 3)
    assert a.recall.value == pytest.approx(2 / 3)
    assert a.f1.value == pytest.approx(2 / 3)
    assert a.fpr.value == pytest.approx(1 / 3)
    assert a.fnr.value == pytest.approx(1 / 3)
    # po = 4/6, pe = (3*3 + 3*3)/36 = 1/2  ->  kappa = (2/3 - 1/2) / (1/2) = 1/3
    assert a.kappa.value == pytest.approx(1 / 3)


def test_undefined_ratio_is_nan_not_zero():
    a = binary_agreement([F, F, F, F], [T, F, T, F], n_boot=50)
    assert math.isnan(a.precision.value)  # no predicted positives
    assert a.recall.value == 0.0 and a.fnr.value == 1.0
    assert a.kappa.value == pytest.approx(0.0)


def test_none_is_rejected():
    with pytest.raises(ValueError, match="None"):
        binary_agreement([T, None], [T, F])


def test_bootstrap_seeded_and_brackets_point():
    rng = np.random.default_rng(3)
    truth = rng.random(80) < 0.4
    pred = np.where(rng.random(80) < 0.8, truth, ~truth)
    a1 = binary_agreement(pred, truth, seed=7)
    a2 = binary_agreement(pred, truth, seed=7)
    a3 = binary_agreement(pred, truth, seed=8)
    assert a1 == a2
    assert a1.kappa.lo != a3.kappa.lo
    for m in ("accuracy", "kappa", "fpr", "fnr", "f1"):
        s = getattr(a1, m)
        assert s.lo <= s.value <= s.hi and s.lo < s.hi
    # the vectorised formula used for resamples equals sklearn's kappa
    assert a1.kappa.value == pytest.approx(cohen_kappa_score(truth, pred))


def test_continuous_hand_computed():
    c = continuous_agreement([0.0, 0.5, 1.0], [0.0, 1.0, 0.5], n_boot=100)
    assert c.pearson.value == pytest.approx(0.5)
    assert c.spearman.value == pytest.approx(0.5)
    assert c.mae.value == pytest.approx(1 / 3)


def test_binarize_threshold_inclusive():
    assert binarize([0.79, 0.8, 0.800000011920929, 1.0]) == [F, T, T, T]
    assert binarize([0.5], 0.5) == [T]


def test_fleiss_and_pairwise_hand_computed():
    # counts [[2,0],[1,1],[0,2]]: P_i = 1,0,1 -> P=2/3; p_j = .5,.5 -> Pe=.5 -> kappa 1/3
    assert fleiss_kappa([["A", "A"], ["A", "B"], ["B", "B"]]) == pytest.approx(1 / 3)
    labels = {f"t{i}": {"J1": a, "J2": b} for i, (a, b) in
              enumerate([(T, T), (T, F), (F, F), (F, F), (T, T), (F, T)])}
    labels["solo"] = {"J3": T}  # one annotator only: ignored
    ia = inter_annotator(labels, min_shared=3)
    assert ia.n_items == 6 and ia.n_annotators == 2 and ia.n_pairs == 1
    assert ia.pairwise_percent_agreement == pytest.approx(4 / 6)
    assert ia.mean_pairwise_kappa == pytest.approx(1 / 3)  # po 4/6, pe 1/2


# ---- the real labels ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def csv_rows(request):
    shared = request.getfixturevalue("shared_data")
    labels, verdicts = read_labels_csv(shared / "cuaverifierbench" / "om2w_labels_and_uv_verdicts.csv")
    stored = [v for v in verdicts if v.verifier.startswith("uv (dataset")]
    return {(r.verifier, r.target, r.label_source): r
            for r in agreement_table(stored, labels, n_boot=200)}, labels


def test_shared_csv_outcome_vs_final(csv_rows):
    rows, labels = csv_rows
    assert len(labels) == 106
    b = rows[("uv (dataset, stored)", "outcome", "final")].binary
    assert (b.tp, b.fp, b.fn, b.tn) == (11, 4, 6, 85)
    assert round(b.accuracy.value, 3) == 0.906
    assert round(b.kappa.value, 3) == 0.632
    assert round(b.fpr.value, 3) == 0.045
    assert round(b.fnr.value, 3) == 0.353


def test_shared_csv_outcome_vs_blind_majority(csv_rows):
    b = csv_rows[0][("uv (dataset, stored)", "outcome", "uv_blind")].binary
    assert (b.tp, b.fp, b.fn, b.tn) == (11, 4, 18, 73)
    assert round(b.kappa.value, 3) == 0.385


def test_shared_csv_process(csv_rows):
    rows = csv_rows[0]
    b = rows[("uv (dataset, stored)", "process", "final")].binary
    assert (b.tp, b.fp, b.fn, b.tn) == (20, 21, 2, 63)
    assert round(b.kappa.value, 3) == 0.500
    c = rows[("uv (dataset, stored)", "process_score", "uv_blind")].continuous
    assert c.n == 106 and round(c.pearson.value, 3) == 0.674


def test_undefined_values_survive_json():
    from verifier.bench.metrics import BinaryAgreement

    a = binary_agreement([F, F, F, F], [T, F, T, F], n_boot=20)
    back = BinaryAgreement.model_validate_json(a.model_dump_json())
    assert math.isnan(back.precision.value) and back.tp == 0 and back.kappa == a.kappa
