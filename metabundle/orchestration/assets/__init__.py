"""Dagster assets: thin wrappers that call ``sources``, ``index`` and ``release``.

One module per source (``raw_<source>`` and ``core_<source>`` groups) plus the
``search`` and ``release`` steps. Business logic belongs in the packages they call.
"""
