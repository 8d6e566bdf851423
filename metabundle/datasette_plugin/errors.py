"""Datasette's error pages without a server error of their own.

Datasette's default ``handle_exception`` prints every exception with ``rich`` when
``rich`` is installed (it is, for the CLI), and that call fails outside an ``except``
block, so every 404 or 405 became a 500 with nothing logged. Datasette awaits every
``handle_exception`` hook, so :func:`replace_default_handler` unregisters the default
and the plugin's hook answers in its place: a 4xx keeps its status and message (JSON
for ``.json`` paths, else Datasette's ``error.html``), anything else is a 500 saying
only that the request failed.
"""

from __future__ import annotations

from typing import Any

from datasette.utils.asgi import Base400, Response
from markupsafe import Markup

# ``datasette.plugins`` (and the views, which import it) load every plugin's entry point
# when first imported; this module is imported while the plugin package itself is still
# loading, so they are imported inside the functions, once Datasette is up.

SERVER_ERROR_MESSAGE = "The server could not answer this request."
DEFAULT_HANDLER = "datasette.handle_exception"


def replace_default_handler() -> None:
    """Unregister Datasette's default exception handler (once per process)."""
    from datasette.plugins import pm

    default = pm.get_plugin(DEFAULT_HANDLER)
    if default is not None:
        pm.unregister(default)


def error_details(exception: Exception) -> tuple[int, str | Markup, str | None, dict[str, Any]]:
    """Status, message, title and extra fields of the page for ``exception``."""
    from datasette.views.base import DatasetteError

    if isinstance(exception, Base400):
        message = str(exception.args[0]) if exception.args else "Bad request."
        return exception.status, message, None, {}
    if isinstance(exception, DatasetteError) and exception.status < 500:
        message = Markup(exception.message) if exception.message_is_html else exception.message
        return exception.status, message, exception.title, dict(exception.error_dict)
    return 500, SERVER_ERROR_MESSAGE, None, {}


async def error_response(datasette: Any, request: Any, exception: Exception) -> Response:
    """The error page or JSON for ``exception``."""
    status, message, title, info = error_details(exception)
    info.update({"ok": False, "error": message, "status": status, "title": title})
    if request.path.split("?")[0].endswith(".json"):
        return Response.json(info, status=status)
    template = datasette.jinja_env.select_template([f"{status}.html", "error.html"])
    context = dict(
        info, urls=datasette.urls, app_css_hash=datasette.app_css_hash(), menu_links=lambda: []
    )
    return Response.html(await template.render_async(context), status=status)
