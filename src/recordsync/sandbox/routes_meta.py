"""Metadata, views and skills: GET schema, GET users, GET views, GET a view's records,
POST a skill webhook, and the sandbox's own GET of recorded skill runs."""

from __future__ import annotations

import hashlib
import hmac
import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from recordsync.core.secret import Secret
from recordsync.sandbox import query
from recordsync.sandbox.http import HttpError, endpoint, json_response, parse_json_object
from recordsync.sandbox.routes_records import list_answer, object_type, service_of
from recordsync.sandbox.seed import View
from recordsync.sandbox.service import NotFound, utc_now

WEBHOOK_MESSAGE = "Webhook received and skill triggered successfully"


@endpoint
async def schema(request: Request) -> Response:
    return json_response(service_of(request).catalog.schema_answer)


@endpoint
async def users(request: Request) -> Response:
    return json_response(service_of(request).catalog.users_answer)


def _view_summary(view: View) -> dict[str, Any]:
    return {
        "id": str(view.id),
        "name": view.name,
        "view_type": view.view_type,
        "columns": list(view.columns),
    }


@endpoint
async def list_views(request: Request) -> Response:
    ot = object_type(request)
    views = service_of(request).catalog.views_of(ot)
    return json_response({"data": [_view_summary(v) for v in views]})


@endpoint
async def run_view(request: Request) -> Response:
    ot = object_type(request)
    svc = service_of(request)
    view = svc.catalog.views.get(request.path_params["view_id"].lower())
    if view is None or svc.catalog.resolve(view.object_type) is not ot:
        raise NotFound("View not found")
    q = query.from_view(ot, view, request.query_params)
    return list_answer(svc, ot, q, {"view": {"id": str(view.id), "name": view.name}})


def _signature_ok(header: str, body: bytes, key: Secret) -> bool:
    expected = hmac.new(key.reveal().encode("utf-8"), body, hashlib.sha256).hexdigest()
    given = header.strip()
    if not given.lower().startswith("sha256="):  # the contract's form is `sha256=<hex>`
        return False
    given = given[len("sha256=") :]
    return hmac.compare_digest(given.lower().encode("utf-8", "replace"), expected.encode())


@endpoint
async def webhook(request: Request) -> Response:
    svc = service_of(request)
    skill = svc.catalog.skills.get(request.path_params["skill_id"].lower())
    if skill is None or skill.status != "live":
        raise NotFound("Skill not found")
    raw = await request.body()
    signature = request.headers.get("x-webhook-signature")
    if signature is not None and not _signature_ok(signature, raw, request.app.state.api_key):
        raise HttpError(401, "Invalid webhook signature")
    payload = parse_json_object(raw)
    run_id = str(uuid.uuid4())
    with svc.store.transaction():
        svc.store.add_skill_run(run_id, str(skill.id), payload, signature is not None, utc_now())
    return json_response({"success": True, "skillRunId": run_id, "message": WEBHOOK_MESSAGE})


@endpoint
async def skill_runs(request: Request) -> Response:
    """Sandbox extension: every skill run triggered so far, oldest first."""
    return json_response({"data": service_of(request).store.skill_runs()})


ROUTES = [
    Route("/api/meta/schema", schema, methods=["GET"]),
    Route("/api/meta/users", users, methods=["GET"]),
    Route("/api/objects/{object_type}/views", list_views, methods=["GET"]),
    Route("/api/objects/{object_type}/views/{view_id}", run_view, methods=["GET"]),
    Route("/api/webhooks/{skill_id}", webhook, methods=["POST"]),
    Route("/api/sandbox/skill-runs", skill_runs, methods=["GET"]),
]
