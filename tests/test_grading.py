"""The grader agrees with math-verify, is fast on plain numbers, and never hangs."""

from __future__ import annotations

import json
import random
import signal
import threading
import time

import pytest
from math_verify import parse, verify

from isocompute import grading
from isocompute.grading import GradeCache, extract_answer, grade, grade_many, warm_up

# Pathological for sympy: latex2sympy builds the tower and verify tries to
# evaluate it, which never finishes (measured: no verdict within 10 s).
TOWER = "\\boxed{9^{9^{9^{9}}}}"
TIMEOUT_S = 1.0
SLACK_S = 1.5  # generous: the suite shares a loaded machine


def raw_math_verify(completion: str, ground_truth: str) -> bool:
    """math-verify used directly on the whole completion, as its README does."""
    return verify(parse("\\boxed{" + ground_truth + "}"), parse(completion))


@pytest.fixture(scope="module", autouse=True)
def _worker_ready():
    # Timing assertions below are about the comparison, not interpreter start-up.
    warm_up()


# (completion, ground truth, expected verdict)
TABLE = [
    ("\\boxed{42}", "42", True),
    ("\\boxed{42}", "43", False),
    ("The answer is \\boxed{-7}.", "-7", True),
    ("The answer is \\boxed{-7}.", "7", False),
    ("\\boxed{\\frac{1}{2}}", "0.5", True),
    ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}", True),
    ("\\boxed{0.5}", "\\frac{1}{2}", True),
    ("\\boxed{\\frac{1}{2}}", "0.25", False),
    ("We have $x = -12$, hence \\boxed{-12}", "-12", True),
    ("Subtracting both sides gives -15", "-15", True),
    ("\\boxed{42} is the answer. Check: 6 * 7 = 42, done in 3 steps.", "42", True),
    ("\\boxed{42}. Then I added 5 more to get 47", "42", True),
    ("so the result is 61", "61", True),
    ("so the result is 61", "16", False),
    ("\\boxed{\\frac{3}{4}}", "\\frac{3}{4}", True),
    ("\\boxed{\\frac{3}{4}}", "0.75", True),
    ("\\boxed{\\frac{3}{4}}", "\\frac{4}{3}", False),
    ("", "42", False),
    ("I am not sure how to solve this.", "42", False),
    ("\\boxed{41}", "42", False),
    ("12+49=\\boxed{61}", "61", True),
    ("\\boxed{61}", "61", True),
    ("\\boxed{61", "61", False),  # cut off inside the box: no answer
    ("\\boxed{x^2+1}", "x^2+1", True),
    ("\\boxed{1+x^2}", "x^2+1", True),
    ("\\boxed{x^2-1}", "x^2+1", False),
    ("The farmer has 1,234 apples in total.", "1234", True),
    ("\\boxed{1} ... \\boxed{2}", "1", False),
    ("The final answer is $\\frac{5}{8}$", "0.625", True),
    ("\\boxed{\\sqrt{2}}", "\\sqrt{2}", True),
    ("\\boxed{2\\sqrt{2}}", "\\sqrt{8}", True),
    ("\\boxed{\\pi}", "3", False),
]


@pytest.mark.parametrize(("completion", "truth", "expected"), TABLE)
def test_table_agrees_with_math_verify(completion, truth, expected):
    assert grade(completion, truth) is expected
    assert raw_math_verify(completion, truth) is expected


def test_last_box_wins():
    # Deliberate divergence: math-verify collects every box into {1, 2}; a
    # model that corrects itself is graded on its last answer.
    completion = "First guess \\boxed{1} ... wait, no: \\boxed{2}"
    assert extract_answer(completion) == "2"
    assert grade(completion, "2") is True
    assert grade(completion, "1") is False


@pytest.mark.parametrize(
    ("completion", "answer"),
    [
        ("\\boxed{\\frac{3}{4}}", "\\frac{3}{4}"),
        ("\\boxed{ 42 }.", "42"),
        ("a \\boxed{\\{1,2\\}} b", "\\{1,2\\}"),
        ("\\boxed{3} then \\boxed{}", "3"),
        ("\\boxed{7} then \\boxed{8", "7"),
        ("the sum is 12, so \\boxed{1", None),
        ("so the result is 61.", "61"),
        ("total: 1,234,567 items", "1234567"),
        ("it is 3/4", "3/4"),
        ("it is $\\frac{5}{8}$", "\\frac{5}{8}"),
        ("from 3-5 we get", "5"),
        ("x = -2.5 here", "-2.5"),
        ("", None),
        ("no digits here", None),
    ],
)
def test_extract_answer(completion, answer):
    assert extract_answer(completion) == answer


def test_ground_truth_forms():
    assert grade("\\boxed{42}", "\\boxed{42}") is True
    assert grade("\\boxed{42}", "$42$") is True
    assert grade("\\boxed{42}", 42) is True  # datasets that store ints
    assert grade("\\boxed{42}", "") is False


def _random_int_pairs(n: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        a = rng.choice([rng.randint(-10, 10), rng.randint(-10**6, 10**6), rng.randint(0, 10**30)])
        b = a if rng.random() < 0.5 else a + rng.choice([-1, 1, 10, -100, 10**12])
        fmt = rng.choice(["{}", "{}", "{:03d}"])  # leading zeros parse to the same value
        pairs.append((fmt.format(a) if a >= 0 else str(a), str(b)))
    return pairs


@pytest.mark.parametrize(("answer", "truth"), _random_int_pairs(120, seed=1))
def test_fast_path_agrees_on_integers(answer, truth):
    fast = grading._fast_verdict(answer, truth)
    assert fast is not None
    assert fast == grading._mv_compare(answer, truth)
    assert grade(f"so \\boxed{{{answer}}}", truth) == raw_math_verify(f"so \\boxed{{{answer}}}", truth)


def test_fast_path_agrees_on_decimals_and_fractions():
    rng = random.Random(2)

    def number() -> str:
        kind = rng.randrange(5)
        if kind == 0:
            return str(rng.randint(-50, 50))
        if kind == 1:
            return f"{rng.uniform(-20, 20):.{rng.randint(1, 7)}f}"
        if kind == 2:
            return f"\\frac{{{rng.randint(-12, 12)}}}{{{rng.randint(1, 12)}}}"
        if kind == 3:
            return f"{rng.randint(0, 12)}/{rng.randint(1, 12)}"
        return rng.choice(["0.5", "0.25", "0.333333", "0.3333333", "1.000001", "1.0000001", "2.0"])

    pairs = [(number(), number()) for _ in range(150)]
    pairs += [(x, x) for x, _ in pairs[:50]]
    pairs += [("0.333333", "\\frac{1}{3}"), ("0.33333", "\\frac{1}{3}"), ("1.0000001", "1")]
    decided = 0
    for answer, truth in pairs:
        fast = grading._fast_verdict(answer, truth)
        if fast is not None:
            decided += 1
            assert fast == grading._mv_compare(answer, truth), (answer, truth)
    assert decided > 0.9 * len(pairs)


def test_fast_path_spawns_nothing(monkeypatch):
    def no_workers(*args, **kwargs):
        raise AssertionError("the fast path must not start a worker")

    monkeypatch.setattr(grading, "_Worker", no_workers)
    monkeypatch.setattr(grading, "_POOL", grading._WorkerPool())
    assert grade("\\boxed{17}", "17") and not grade("\\boxed{17}", "18")
    assert grade("\\boxed{\\frac{1}{2}}", "0.5") and grade("it is 2.50", "\\frac{5}{2}")


def test_100k_integer_completions_are_cheap():
    completions = [f"Adding them gives \\boxed{{{i % 1000}}}" for i in range(100_000)]
    truths = [str(i % 997) for i in range(100_000)]
    start = time.perf_counter()
    verdicts = grade_many(completions, truths)
    elapsed = time.perf_counter() - start
    assert sum(verdicts) == sum(i % 1000 == i % 997 for i in range(100_000))
    assert elapsed < 3.0, elapsed


def _timed_grade(completion: str, truth: str, timeout_s: float = TIMEOUT_S) -> tuple[bool, float]:
    start = time.monotonic()
    verdict = grade(completion, truth, timeout_s=timeout_s)
    return verdict, time.monotonic() - start


def test_timeout_main_thread():
    warm_up()  # a worker killed by an earlier timeout may still be restarting
    handler = signal.getsignal(signal.SIGALRM)
    verdict, elapsed = _timed_grade(TOWER, "42")
    assert verdict is False
    assert 0.9 * TIMEOUT_S <= elapsed < TIMEOUT_S + SLACK_S  # it was slow, and cut off
    assert signal.getsignal(signal.SIGALRM) is handler  # the caller's signals are untouched
    # The grader still works afterwards.
    assert grade("\\boxed{1+x^2}", "x^2+1") is True


def test_timeout_in_thread():
    warm_up()
    out: list[tuple[bool, float]] = []
    thread = threading.Thread(target=lambda: out.append(_timed_grade(TOWER, "43")))
    thread.start()
    thread.join(TIMEOUT_S + 10)
    assert out, "grade() hung in a thread"
    verdict, elapsed = out[0]
    assert verdict is False
    assert elapsed < TIMEOUT_S + SLACK_S


def test_timeout_concurrent_threads():
    warm_up(4)
    towers = ["\\boxed{9^{9^{9^{9}}}}", "\\boxed{8^{8^{8^{8}}}}", "\\boxed{7^{7^{7^{7}}}}"]
    # The honest answer gets a generous limit: four busy workers may share few cores.
    jobs = [(t, "5", TIMEOUT_S) for t in towers] + [("\\boxed{x^2+2x+1}", "(x+1)^2", 30.0)]
    out: dict[int, tuple[bool, float]] = {}
    threads = [
        threading.Thread(target=lambda i=i, job=job: out.__setitem__(i, _timed_grade(*job)))
        for i, job in enumerate(jobs)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(40)
    assert [out[i][0] for i in range(len(jobs))] == [False, False, False, True]
    assert max(out[i][1] for i in range(len(towers))) < TIMEOUT_S + SLACK_S


def test_symbolic_answer_in_thread():
    out = []
    thread = threading.Thread(target=lambda: out.append(grade("\\boxed{\\frac{2}{\\sqrt{2}}}", "\\sqrt{2}")))
    thread.start()
    thread.join(30)
    assert out == [True]


def test_idle_worker_that_died_is_replaced():
    warm_up()
    for worker in list(grading._POOL._idle):
        worker.proc.kill()
        worker.proc.wait()
    assert grade("\\boxed{3x+3}", "3(x+1)") is True


def test_without_a_worker_falls_back_to_fork(monkeypatch):
    monkeypatch.setattr(grading, "_POOL", grading._WorkerPool())
    monkeypatch.setattr(grading.sys, "executable", "/nonexistent/python")
    grading._slow_verdict.cache_clear()
    try:
        assert grade("\\boxed{2(x+2)}", "2x+4") is True
        assert grading._POOL.broken
        start = time.monotonic()
        assert grade("\\boxed{5^{5^{5^{5}}}}", "1", timeout_s=TIMEOUT_S) is False
        assert time.monotonic() - start < TIMEOUT_S + SLACK_S
    finally:
        grading._slow_verdict.cache_clear()


def test_grade_many_matches_grade_and_fills_cache(tmp_path):
    completions = [c for c, _, _ in TABLE]
    truths = [t for _, t, _ in TABLE]
    cache = GradeCache()
    verdicts = grade_many(completions, truths, cache=cache, num_workers=3)
    assert verdicts == [grade(c, t) for c, t in zip(completions, truths)]
    assert verdicts == [e for _, _, e in TABLE]
    assert len(cache) == len({(c, t) for c, t in zip(completions, truths)})
    assert cache.get("\\boxed{42}", "42") is True

    path = tmp_path / "grades.json"
    cache.save(path)
    loaded = GradeCache.load(path)
    assert len(loaded) == len(cache)
    assert all(loaded.get(c, t) == v for c, t, v in zip(completions, truths, verdicts))


def test_grade_many_reuses_cached_grades():
    cache = GradeCache()
    cache.put("\\boxed{42}", "42", False)  # a planted verdict proves the cache is read
    assert grade_many(["\\boxed{42}", "\\boxed{7}"], ["42", "7"], cache=cache) == [False, True]
    assert cache.get("\\boxed{7}", "7") is True


def test_cache_keys_and_versions(tmp_path):
    assert GradeCache.key("ab", "c") != GradeCache.key("a", "bc")
    assert GradeCache.load(tmp_path / "missing.json").get("x", "y") is None
    with pytest.raises(FileNotFoundError):
        GradeCache.load(tmp_path / "missing.json", missing_ok=False)
    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps({"grader_version": "0", "grades": {GradeCache.key("a", "b"): True}}))
    assert len(GradeCache.load(stale)) == 0


def test_argument_errors():
    with pytest.raises(ValueError):
        grade_many(["\\boxed{1}"], [])
    with pytest.raises(ValueError):
        grade("\\boxed{1}", "1", timeout_s=0)
