"""Build-side search machinery: tokenizer, FTS tables, embedding providers and
ANN index build/open. Used by the pipeline to build and by ``search`` to query.
"""
