"""JSON interchange: export to and import from the ``outputs/agents`` format, and the file mirror.

A folder holds ``{name}.json`` per agent and ``{name}_history.json`` per agent that has a history,
exactly in the contract's format (``documents`` renders and parses them). Every file operation goes
through ``folder.Folder``: relative to one open directory, never following a symbolic link, each
write atomic (temporary file in the same directory, fsync, rename). Nothing outside the folder is
read or written.

* ``export_json`` (``export``) streams the store into a folder (flat memory), marked
  ``INCOMPLETE_MARKER`` until its last file is written; ``prune`` removes the files of agents
  that no longer exist.
* ``import_json`` (``importing``) streams a folder into the store in one transaction
  (``bulk_put_stream``): v1 documents upgraded, every document validated by the repository's
  models, each bad file reported with the reason; all or nothing unless told otherwise; a dry run
  writes nothing; a folder an export did not finish (it still holds ``INCOMPLETE_MARKER``) is
  refused with ``IncompleteExportError`` unless ``allow_incomplete=True``.
* ``rewrite_documents`` (``rewrite``) rewrites a folder's files in place as canonical v2, after a
  backup.
* ``JsonMirror`` (``mirror``) keeps a folder in step with the store after each committed write.

Folders need POSIX; on other systems they raise ``AgentStoreError`` (``folder.NEEDS_POSIX``).
"""

from __future__ import annotations

from .export import EXPORT_PAGE_SIZE, ExportReport, export_json
from .files import DEFAULT_DIRECTORY, HISTORY_SUFFIX, Progress, agent_file_name, history_file_name
from .folder import BACKUP_PREFIX, INCOMPLETE_MARKER, MAX_FILE_BYTES, NEEDS_POSIX, SUFFIX
from .importing import ImportReport, import_json
from .mirror import JsonMirror
from .rewrite import RewriteReport, rewrite_documents

__all__ = [
    "BACKUP_PREFIX",
    "DEFAULT_DIRECTORY",
    "EXPORT_PAGE_SIZE",
    "HISTORY_SUFFIX",
    "INCOMPLETE_MARKER",
    "MAX_FILE_BYTES",
    "NEEDS_POSIX",
    "SUFFIX",
    "ExportReport",
    "ImportReport",
    "JsonMirror",
    "Progress",
    "RewriteReport",
    "agent_file_name",
    "export_json",
    "history_file_name",
    "import_json",
    "rewrite_documents",
]
