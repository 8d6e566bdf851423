"""The ranking pipeline: one table of per-source policies (:mod:`.policies`) and the
stages that apply them (:mod:`.pipeline`, :mod:`.stages`, :mod:`.priors`,
:mod:`.merge`). Services load rows and shape payloads; every ranking rule lives here."""
