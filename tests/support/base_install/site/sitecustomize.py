"""Run this interpreter as a base install of metabundle (:mod:`base_closure`).

This folder goes first on ``PYTHONPATH`` (:func:`tests.support.base_install.base_install_env`);
child interpreters inherit it, so SQL workers and ``python -m`` children run the same way.
"""

import base_closure

base_closure.install()
