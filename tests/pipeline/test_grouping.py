"""Top-k grouping: ties to the later screenshot, paper pruning, streaming decisions."""
import random

from verifier.grouping import decided, group, invert, representatives, select


def m(rows):
    """rows: {shot: score} for one criterion 'c1'."""
    return {s: {"c1": v} for s, v in rows.items()}


def test_topk_ties_go_to_later_screenshot():
    mat = m({1: 6, 2: 6, 3: 6, 4: 6})
    assert select(mat, "c1", k=2, prune=False) == [4, 3]
    assert select(mat, "c1", k=3, prune=False) == [4, 3, 2]


def test_topk_orders_by_score_then_recency():
    mat = m({1: 9, 2: 3, 3: 9, 4: 5})
    assert select(mat, "c1", k=3, prune=False) == [3, 1, 4]


def test_pruning_drops_earlier_low_when_later_high():
    mat = m({1: 3, 2: 4, 3: 8, 4: 2})
    assert select(mat, "c1", k=5, prune=True) == [3, 4]  # 4 is later than the >7 one: kept
    assert select(mat, "c1", k=5, prune=False) == [3, 2, 1, 4]


def test_pruning_needs_score_above_seven():
    mat = m({1: 3, 2: 7})
    assert select(mat, "c1", k=5, prune=True) == [2, 1]


def test_pruning_keeps_mid_scores():
    mat = m({1: 5, 2: 9})
    assert select(mat, "c1", k=5, prune=True) == [2, 1]


def test_min_relevance_excludes_zero():
    mat = m({1: 0, 2: 2})
    assert select(mat, "c1", k=5, min_relevance=1) == [2]
    assert select(mat, "c1", k=5, min_relevance=0, prune=False) == [2, 1]


def test_group_and_invert():
    mat = {1: {"a": 9, "b": 0}, 2: {"a": 1, "b": 8}}
    g = group(mat, ["a", "b"], k=5)
    assert g == {"a": [1, 2], "b": [2]}
    assert invert(g, ["a", "b"]) == {1: ["a"], 2: ["a", "b"]}


def test_representatives_are_latest_of_each_hash():
    assert representatives({"h1": [1], "h2": [3, 4], "h3": [2]}) == {1: "h1", 4: "h2", 2: "h3"}


def test_decided_waits_for_rows_that_could_change_the_answer():
    ids = ["c1"]
    known = {1: {"c1": 3}}
    assert decided(1, known, pending=[2], ids=ids, k=5) is None  # shot 2 could score >7 and prune 1
    assert decided(1, {1: {"c1": 6}}, pending=[2], ids=ids, k=5) == ["c1"]  # >=5: never pruned, k not full
    assert decided(1, {1: {"c1": 6}}, pending=[2, 3], ids=ids, k=2) is None  # 2 pending could push it out
    assert decided(2, {1: {"c1": 9}, 2: {"c1": 3}}, pending=[], ids=ids, k=1) == []  # pushed out


def test_decided_agrees_with_select_when_all_rows_known_and_never_contradicts_later():
    rng = random.Random(7)
    ids = ["a", "b", "c"]
    for _ in range(400):
        n, k = rng.randint(1, 9), rng.randint(1, 4)
        full = {s: {c: rng.randint(0, 10) for c in ids} for s in range(1, n + 1)}
        final = invert(group(full, ids, k=k), ids)
        order = list(full)
        rng.shuffle(order)
        for cut in range(n + 1):
            known = {s: full[s] for s in order[:cut]}
            pending = order[cut:]
            for s in known:
                got = decided(s, known, pending, ids, k=k)
                if got is not None:  # a decision made early must equal the final grouping
                    assert got == final.get(s, []), (full, k, known, s)
        for s in full:
            assert decided(s, full, [], ids, k=k) == final.get(s, [])
