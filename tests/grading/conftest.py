"""The grader's tests. math-verify's own test files, vendored as data in math_verify_0_9_0/
(its README.md): read by math_verify_suite.py with `ast`, never collected."""

collect_ignore_glob = ["math_verify_0_9_0/*"]
