"""One exception base, one subclass per failure a user can act on.

Messages are written for the person (or model) reading them: they say what
went wrong and what to do next. Only the CLI and the MCP tools turn these
into output.
"""

from __future__ import annotations


class PlaudIndexError(Exception):
    """Base of every error this package raises on purpose."""

    exit_code = 1


class ConfigError(PlaudIndexError):
    """A configuration value cannot be used."""


class MalformedRecordingError(PlaudIndexError):
    """A recording's detail JSON cannot be normalised; the cycle skips it."""


class ModelUnavailableError(PlaudIndexError):
    """The embedding model cannot be found, downloaded or loaded."""


class IndexSchemaError(PlaudIndexError):
    """The on-disk index was written by a newer version of this program."""


class IndexCorruptError(PlaudIndexError):
    """The on-disk index cannot be read."""


class IndexNotReadyError(PlaudIndexError):
    """There is no index to answer from yet (``answers.readiness.NotReadyYet`` carries the
    typed state that says why)."""


class IndexBusyError(PlaudIndexError):
    """Another process holds the indexer lock."""

    exit_code = 0
    MESSAGE = "indexing already in progress, skipping cycle"

    def __init__(self, message: str = MESSAGE) -> None:
        super().__init__(message)


class InvalidQueryError(PlaudIndexError):
    """A search argument is out of range or malformed."""

    exit_code = 2


class UnknownRecordingError(PlaudIndexError):
    """No recording with that id is in the index (a search server answer)."""

    exit_code = 2  # bad input, as every other argument the user got wrong


class RecordingGoneError(PlaudIndexError):
    """The source has no recording with that id any more (Plaud 404, a removed file)."""


class SourceError(PlaudIndexError):
    """The recording source (Plaud or the mock corpus) failed."""


class PlaudAuthError(SourceError):
    """Signed out, or the sign-in expired or was revoked: the user must log in again."""

    EXPIRED = "Plaud auth expired — run `plaud-index-mcp login`"
    SIGNED_OUT = ("Not signed in to Plaud: run `plaud-index-mcp login` (or set "
                  "PLAUD_CLIENT=mock to index the bundled sample).")


class PlaudTransientError(SourceError):
    """Network trouble, rate limits or Plaud 5xx that outlasted the retries: try later."""


class PlaudUnreachableError(PlaudTransientError):
    """No answer from Plaud at all (DNS, no network, a timeout): the sign-in is fine."""


class PlaudRateLimitedError(PlaudTransientError):
    """Plaud kept answering 429 Too Many Requests: slow down, nothing is wrong locally."""


class PlaudUpstreamError(SourceError):
    """Plaud answered with something that is not what the API promises (HTML, bad JSON,
    a wrong shape, a redirect): never read as "no recordings"."""


class LoginError(PlaudIndexError):
    """The browser sign-in did not complete."""


class TokenStoreError(PlaudIndexError):
    """Tokens cannot be read or written (a locked keychain, a broken file)."""


class AgentError(PlaudIndexError):
    """The service manager (launchd, systemd) refused to load or unload the agent."""


class StateError(PlaudIndexError):
    """A state file of ours was written by a newer version, or cannot be written."""


class StorageError(PlaudIndexError):
    """The disk refused a write: full, read-only, or no permission. Nothing committed is lost."""
