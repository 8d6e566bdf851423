"""Datasette's error pages without a server error of their own.

Datasette's default ``handle_exception`` prints every exception with ``rich`` when
``rich`` is installed (it is, for the CLI), and that call fails outside an ``except``
block, so every 404 or 405 became a 500 with nothing logged. Datasette awaits every
``handle_exception`` hook, so :func:`replace_default_handler` unregisters the default
and the plugin's hook answers in its place: a 4xx keeps its status and message (JSON
for ``.json`` paths, else Datasette's ``error.html``), anything else is a 500 saying
only that the request failed.

A table page fails with a server error on some query parameters it cannot use: a
``_sort`` or ``_sort_desc`` naming no sortable column (a ``DatasetteError`` of status
500), a ``__in``/``__notin`` list that is not a JSON list of values SQLite can bind,
or a ``_through`` that is not a JSON object naming a table with a foreign key to this
one. :func:`parameter_error` names the parameter of such a failure, and the answer is
a 400 ``invalid_request`` (``{"error": {"code", "message"}}`` for ``.json`` paths).
"""

from __future__ import annotations

import json
from typing import Any

from datasette.utils.asgi import Base400, Response
from markupsafe import Markup

from metabundle.search.errors import ToolError, invalid

# ``datasette.plugins`` (and the views, which import it) load every plugin's entry point
# when first imported; this module is imported while the plugin package itself is still
# loading, so they are imported inside the functions, once Datasette is up.

SERVER_ERROR_MESSAGE = "The server could not answer this request."
DEFAULT_HANDLER = "datasette.handle_exception"
SORT_PARAMETERS = ("_sort", "_sort_desc")
LIST_LOOKUPS = ("in", "notin")
"""The filter lookups (``column__in=``) whose value may be a JSON list."""
THROUGH = "_through"
SQLITE_INTEGERS = range(-(2**63), 2**63)


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


def _bindable(value: Any) -> bool:
    """Whether SQLite can bind ``value`` (decoded from JSON) as a parameter."""
    if isinstance(value, int):
        return value in SQLITE_INTEGERS
    return value is None or isinstance(value, str | float)


def _list_ok(value: str) -> bool:
    """A ``__in`` value: comma-separated text, or a JSON list of bindable values."""
    if not value.startswith("["):
        return True
    try:
        items = json.loads(value)
    except (ValueError, RecursionError):  # not JSON, too deep, integers past 4,300 digits
        return False
    return isinstance(items, list) and all(_bindable(item) for item in items)


def _through_ok(value: str) -> bool:
    """A ``_through`` value: a JSON object of string ``table`` and ``column`` and a
    bindable ``value``."""
    try:
        data = json.loads(value)
    except (ValueError, RecursionError):
        return False
    return (
        isinstance(data, dict)
        and isinstance(data.get("table"), str)
        and isinstance(data.get("column"), str)
        and "value" in data
        and _bindable(data["value"])
    )


def parameter_error(request: Any, exception: Exception) -> ToolError | None:
    """An ``invalid_request`` naming the query parameter that made a page fail with
    ``exception``, or ``None`` when no parameter explains the failure."""
    from datasette.views.base import DatasetteError

    for name in request.args.keys():  # noqa: SIM118  (MultiParams is not a Mapping)
        values = request.args.getlist(name)
        if "__" in name and name.rsplit("__", 1)[1] in LIST_LOOKUPS:
            if not all(_list_ok(value) for value in values):
                return invalid(
                    f"Parameter {name} must be comma-separated values or a JSON list of "
                    "strings, numbers, booleans or nulls."
                )
        elif name == THROUGH and not all(_through_ok(value) for value in values):
            return invalid(
                f'Parameter {THROUGH} must be a JSON object of a string "table" and "column" '
                'and a "value" that is a string, number, boolean or null.'
            )
    if not isinstance(exception, DatasetteError) or exception.status < 500:
        return None
    message = str(exception.message)
    both = all(name in request.args for name in SORT_PARAMETERS)
    if both and message.startswith("Cannot use _sort and _sort_desc"):
        return invalid("Parameters _sort and _sort_desc cannot be given together.")
    for name in SORT_PARAMETERS:
        if message == f"Cannot sort table by {request.args.get(name)}":
            return invalid(f"Parameter {name} names no sortable column of this table.")
    if THROUGH in request.args and message.startswith("Invalid _through"):
        return invalid(f"Parameter {THROUGH} names no table with a foreign key to this one.")
    return None


def is_json_path(request: Any) -> bool:
    return request.path.split("?")[0].endswith(".json")


async def render_error(datasette: Any, info: dict[str, Any]) -> Response:
    """Datasette's error page for ``info`` (its ``status``, ``title`` and ``error``)."""
    status = info["status"]
    template = datasette.jinja_env.select_template([f"{status}.html", "error.html"])
    context = dict(
        info, urls=datasette.urls, app_css_hash=datasette.app_css_hash(), menu_links=lambda: []
    )
    return Response.html(await template.render_async(context), status=status)


async def error_response(datasette: Any, request: Any, exception: Exception) -> Response:
    """The error page or JSON for ``exception``."""
    refused = parameter_error(request, exception)
    if refused is not None:
        if is_json_path(request):
            return Response.json(refused.payload(), status=refused.http_status)
        info = {"status": refused.http_status, "title": refused.code, "error": refused.message}
        return await render_error(datasette, info)
    status, message, title, info = error_details(exception)
    info.update({"ok": False, "error": message, "status": status, "title": title})
    if is_json_path(request):
        return Response.json(info, status=status)
    return await render_error(datasette, info)
