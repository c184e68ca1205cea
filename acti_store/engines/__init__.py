"""The engines acti_store runs on, one folder each: everything one database knows.

``sqlite``, ``postgresql`` and ``mariadb`` (also MySQL) each hold their ``connection`` (the
policy of their sessions), ``errors`` (what their driver's codes mean), ``types`` (their forms of
the column types), ``migration`` (how they migrate), ``statements`` (the repository's
``EngineStrategy``) and ``doctor`` (their checks). Nothing in the package imports them by name:
``acti_store.engine_registry`` lists them and imports an engine's part when it is first asked for
(docs/adapters.md: adding a database engine).
"""
