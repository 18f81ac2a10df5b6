# The scripts here write reference files from peer packages (ppi_py, scikit-learn, statsmodels,
# the alt-test authors' notebook) run in venvs of their own; CI has none of those, and the
# scripts are run by hand, not collected (--doctest-modules would import them).
collect_ignore_glob = ["*_reference.py"]
