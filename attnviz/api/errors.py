"""Errors as the client sees them: a 4xx with a message naming the field and the rule.

FastAPI's validation errors echo the whole input back and spread the message over a list; here
each error keeps its location and message but not the input, and ``message`` says it in one line
(``config.layers: Input should be less than or equal to 12``). Anything unexpected is logged and
answered with a plain 500 that carries no stack trace.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from attnviz.errors import RemoteError, TraceError
from attnviz.schemas.trace import TraceQuery
from attnviz.services.admission import Busy
from attnviz.services.jobs import TooManyJobs
from attnviz.services.line import TooManyRuns
from attnviz.services.text_trace import ModelNotFound
from attnviz.services.training import NoRoom, RunElsewhere, RunGone, TrainRefused

log = logging.getLogger(__name__)


# Tags of the /api/trace body union; a location inside one reads as the plain field.
_UNION_TAGS = ("toy", "text")


def _strip_tag(loc: tuple | list, union: bool) -> list:
    """The location without the tag of /api/trace's union (``union``) or of /api/export's
    ``trace``, and elsewhere without a ``toy`` or ``text`` before a field within it (a Learn
    check's toy table: its messages are a trace's), but not a field of that name itself (the
    corpus's ``text``)."""
    loc = list(loc)
    if (union or len(loc) > 2) and len(loc) > 1 and loc[0] == "body" and loc[1] in _UNION_TAGS:
        del loc[1]
    elif loc[:2] == ["body", "trace"] and len(loc) > 3 and loc[2] in _UNION_TAGS:
        del loc[2]  # POST /api/export's trace, the same union
    return loc


def _field(loc: tuple | list) -> str:
    # Where it was sent (the body, the query string) is no part of the field's name; a field
    # itself named "query" (a Learn view's) is.
    parts = [str(p) for p in (loc[1:] if loc and loc[0] in ("body", "query") else loc)]
    out = ""
    for p in parts:
        out += f"[{p}]" if p.isdigit() else (f".{p}" if out else p)
    return out


# Our own validators already start with the field they are about ("config.heads: ...").
_NAMES_FIELD = re.compile(r"^[A-Za-z_][\w.\[\]]*: ")


def _one_line(err: dict) -> str:
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    if _NAMES_FIELD.match(msg):
        return msg
    return f"{_field(err.get('loc', ())) or 'body'}: {msg}"


def _plainer(err: dict, union: bool) -> dict:
    """Two refusals said as what to do: a number sent as true or false (``config.seed: Input
    should be a valid integer, not false``), and a query parameter of POST /api/trace sent in
    its body (``layer: a query parameter, not a body field ...``)."""
    kind, given, loc = err.get("type"), err.get("input"), err.get("loc", [])
    if kind in ("int_type", "float_type") and isinstance(given, bool):
        return {**err, "msg": f"{err.get('msg')}, not {str(given).lower()}"}
    if kind == "extra_forbidden" and union and len(loc) == 2 and loc[1] in TraceQuery.model_fields:
        name = loc[1]
        return {
            **err,
            "msg": f"a query parameter, not a body field: send it in the URL "
            f"(POST /api/trace?{name}=...)",
        }
    return err


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors: list[dict[str, Any]] = []
    union = request.url.path.endswith("/api/trace")
    for err in exc.errors():
        err = _plainer({**err, "loc": _strip_tag(err.get("loc", ()), union)}, union)
        if err.get("type") == "json_invalid":
            where = err.get("loc", ("body", "?"))[-1]
            reason = err.get("ctx", {}).get("error", "")
            err = {
                **err,
                "loc": ["body"],
                "msg": f"body: not valid JSON at character {where} ({reason})",
            }
        errors.append(
            {"loc": list(err.get("loc", ())), "msg": _one_line(err), "type": err.get("type")}
        )
    message = "; ".join(e["msg"] for e in errors[:3])
    if len(errors) > 3:
        message += f"; and {len(errors) - 3} more"
    return JSONResponse(status_code=422, content={"message": message, "detail": errors})


async def _trace_error(_request: Request, exc: TraceError) -> JSONResponse:
    field = str(exc).split(":", 1)[0]
    where = "query" if field in TraceQuery.model_fields else "body"
    detail = [{"loc": [where, *field.split(".")], "msg": str(exc), "type": "value_error"}]
    return JSONResponse(status_code=422, content={"message": str(exc), "detail": detail})


async def _not_found(_request: Request, exc: ModelNotFound) -> JSONResponse:
    detail = [{"loc": ["body", "model"], "msg": str(exc), "type": "not_found"}]
    return JSONResponse(status_code=404, content={"message": str(exc), "detail": detail})


async def _run_gone(_request: Request, exc: RunGone) -> JSONResponse:
    detail = [{"loc": ["path", "run_id"], "msg": str(exc), "type": "not_found"}]
    return JSONResponse(status_code=404, content={"message": str(exc), "detail": detail})


async def _run_elsewhere(_request: Request, exc: RunElsewhere) -> JSONResponse:
    """A run another server on the data directory holds: 503, in words, and when to ask again."""
    detail = [{"loc": ["path", "run_id"], "msg": str(exc), "type": "held_elsewhere"}]
    return JSONResponse(
        status_code=503,
        content={"message": str(exc), "detail": detail},
        headers={"Retry-After": str(exc.retry_after)},
    )


async def _train_refused(request: Request, exc: TrainRefused) -> JSONResponse:
    """422 in a learner's words; a cap's setting, which the message never names, is the host's:
    the log names it."""
    if exc.setting is not None:
        log.info("%s %s refused by %s: %s", request.method, request.url.path, exc.setting, exc)
    field = str(exc).split(":", 1)[0]
    detail = [{"loc": ["body", *field.split(".")], "msg": str(exc), "type": "value_error"}]
    return JSONResponse(status_code=422, content={"message": str(exc), "detail": detail})


async def _too_many(_request: Request, exc: TooManyRuns | TooManyJobs) -> JSONResponse:
    """A visitor's or an address's rule (runs, trace jobs): 429, the rule in the message, and
    when to try again."""
    return JSONResponse(
        status_code=429,
        content={"message": str(exc), "detail": []},
        headers={"Retry-After": str(exc.retry_after)},
    )


async def _no_room(_request: Request, exc: NoRoom) -> JSONResponse:
    """The disk budget for runs taken by runs that may not be removed yet: 507."""
    return JSONResponse(status_code=507, content={"message": str(exc), "detail": []})


async def _busy(_request: Request, exc: Busy) -> JSONResponse:
    return JSONResponse(
        status_code=503,
        content={"message": str(exc), "detail": []},
        headers={"Retry-After": str(exc.retry_after)},
    )


async def _remote(_request: Request, exc: RemoteError) -> JSONResponse:
    """A remote deployment's failure (NDIF), in its plain words: 502, or 503 with Retry-After."""
    headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after is not None else None
    detail = [{"loc": ["body", "model"], "msg": str(exc), "type": "remote"}]
    return JSONResponse(
        status_code=exc.status, content={"message": str(exc), "detail": detail}, headers=headers
    )


async def _http_error(_request: Request, exc: HTTPException) -> JSONResponse:
    """400, 404, 405 and the like, in the same shape as every other error."""
    message = str(exc.detail)
    if exc.status_code == 400 and message == "There was an error parsing the body":
        message = "body: could not be read as JSON (UTF-8 text)"
    return JSONResponse(
        status_code=exc.status_code,
        content={"message": message, "detail": []},
        headers=exc.headers,
    )


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return JSONResponse(status_code=500, content={"message": "internal error", "detail": []})


Handler = Callable[[Request, Any], Awaitable[JSONResponse]]


def install_error_handlers(app: FastAPI) -> None:
    handlers: list[tuple[type[Exception], Handler]] = [
        (RequestValidationError, _validation_error),
        (TraceError, _trace_error),
        (ModelNotFound, _not_found),
        (RunElsewhere, _run_elsewhere),
        (RunGone, _run_gone),
        (TrainRefused, _train_refused),
        (TooManyRuns, _too_many),
        (TooManyJobs, _too_many),
        (NoRoom, _no_room),
        (Busy, _busy),
        (RemoteError, _remote),
        (HTTPException, _http_error),
        (Exception, _unexpected),
    ]
    for kind, handler in handlers:
        app.add_exception_handler(kind, handler)
