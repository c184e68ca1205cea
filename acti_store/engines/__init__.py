"""The engines acti_store runs on, one folder each: everything one database knows.

``sqlite``, ``postgresql`` and ``mariadb`` (also MySQL) each hold their ``connection`` (the
policy of their sessions), ``statements`` (the repository's ``EngineStrategy``) and ``doctor``
(their checks). Nothing in the package imports them by name: ``acti_store.engine_registry``
lists them and imports an engine's part when it is first asked for (docs/adapters.md: adding an
engine).
"""
