# math-verify's own test files are vendored as data (see README.md): never collected.
collect_ignore_glob = ["test_*.py"]
