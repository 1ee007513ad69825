"""Exit codes of the `folio` command (documented in docs/cli.md)."""

OK = 0
USAGE = 2  # Typer/Click's own code for bad arguments
SOME_FAILED = 3  # the job finished, but some documents or pages have no output
NO_INPUT = 4  # the input path does not exist or holds no PDF
CONFIG = 5  # the settings cannot work (unknown plan, bad value...)
BUSY = 6  # the resource is taken (another `folio watch` holds the inbox)
BROKER_DOWN = 7  # the Celery broker (Redis) cannot be reached
INTERRUPTED = 130  # Ctrl+C; the same command again finishes the job
