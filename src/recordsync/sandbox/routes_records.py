"""Record endpoints: PUT create, POST single-field update, PATCH, DELETE, GET list/one,
and POST batch. Each request runs in one store transaction."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from recordsync.core.model import MAX_BATCH
from recordsync.sandbox import normalize, query
from recordsync.sandbox.catalog import ObjectType
from recordsync.sandbox.http import HttpError, endpoint, json_body, json_response
from recordsync.sandbox.service import NotFound, RecordService, record_id
from recordsync.sandbox.store import Row
from recordsync.sandbox.validation import Invalid


def service_of(request: Request) -> RecordService:
    svc: RecordService = request.app.state.service
    return svc


def object_type(request: Request) -> ObjectType:
    ot = service_of(request).catalog.resolve(request.path_params["object_type"])
    if ot is None:
        raise NotFound()
    return ot


def _locate(svc: RecordService, ot: ObjectType, body: dict[str, Any]) -> Row:
    """The live record named by ``id`` (wins), or by ``email`` for contacts."""
    email = body.get("email")
    if email is not None and not isinstance(email, str):
        raise Invalid("email", "must be a string")
    if body.get("id") is not None or not ot.is_contacts or email is None:
        return svc.get(ot, record_id(body.get("id")))
    row = svc.find_email(ot, email)
    if row is None:
        raise NotFound()
    return row


@endpoint
async def create(request: Request) -> Response:
    ot = object_type(request)
    body = await json_body(request)
    svc = service_of(request)
    with svc.store.transaction():
        rid, _ = svc.create(ot, body.get("name"), body.get("fields"), body.get("profile_image_url"))
        record = svc.render_one(ot, svc.get(ot, rid))
    return json_response({"data": record})


@endpoint
async def update_field(request: Request) -> Response:
    """The legacy single-field update."""
    ot = object_type(request)
    body = await json_body(request)
    svc = service_of(request)
    name = body.get("fieldName")
    if name is None:
        raise Invalid("fieldName", "required")
    if not isinstance(name, str):
        raise Invalid("fieldName", "must be a string")
    if "fieldValue" not in body:
        raise Invalid("fieldValue", "required")
    value = body["fieldValue"]
    with svc.store.transaction():
        if name == "name":
            new_name, values = svc.check_name(value), {}
        else:
            new_name, values = None, svc.check_fields(ot, {name: value})
        row = _locate(svc, ot, body)
        svc.update(ot, row, new_name, values)
        record = svc.render_one(ot, row)
    message = f"Updated custom field '{name}' for {ot.kind}"
    return json_response({"data": record, "message": message})


@endpoint
async def patch(request: Request) -> Response:
    ot = object_type(request)
    body = await json_body(request)
    svc = service_of(request)
    if not any(k in body for k in ("name", "fields", "profile_image_url")) or (
        body.get("fields") == {} and "name" not in body and "profile_image_url" not in body
    ):
        raise Invalid("fields", "nothing to update")
    with svc.store.transaction():
        row = _locate(svc, ot, body)
        name = svc.check_name(body["name"]) if "name" in body else None
        values = svc.check_fields(ot, body.get("fields"))
        given = "profile_image_url" in body
        image = svc.check_image(body.get("profile_image_url"))
        svc.update(ot, row, name, values, image, image_given=given)
        record = svc.render_one(ot, row)
    return json_response({"data": record})


@endpoint
async def delete(request: Request) -> Response:
    ot = object_type(request)
    body = await json_body(request)
    svc = service_of(request)
    rid = record_id(body.get("id"))
    with svc.store.transaction():
        svc.delete(ot, rid)
    return json_response({"success": True})


@endpoint
async def read(request: Request) -> Response:
    """Fetch one (``?id=`` or ``?email=``) or list records."""
    ot = object_type(request)
    svc = service_of(request)
    params = request.query_params
    if "id" in params or "email" in params:
        with svc.store.lock:
            if "id" in params:
                text = params["id"].strip()
                if not (text.isascii() and text.lstrip("-").isdigit()) or len(text) > 20:
                    raise Invalid("id", "must be an integer")
                row = svc.get(ot, int(text))
            else:
                if not ot.is_contacts:
                    raise Invalid("email", "only contacts can be fetched by email")
                found = svc.find_email(ot, params["email"])
                if found is None:
                    raise NotFound()
                row = found
            return json_response({"data": svc.render_one(ot, row)})
    q = query.from_params(ot, params, list(params.keys()))
    return list_answer(svc, ot, q)


def list_answer(
    svc: RecordService, ot: ObjectType, q: query.ListQuery, extra: dict[str, Any] | None = None
) -> Response:
    where, args = q.sql_where(ot.id)
    with svc.store.lock:
        rows, total = svc.store.select(where, args, q.order, q.limit, q.offset)
        data = svc.render(ot, rows, include_deleted=q.include_deleted)
    pagination = {
        "total": total,
        "limit": q.limit,
        "offset": q.offset,
        "has_more": q.offset + len(rows) < total,
    }
    return json_response({"data": data, **(extra or {}), "pagination": pagination})


def _batch_entry(svc: RecordService, ot: ObjectType, entry: Any) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise Invalid("objects[]", "each entry must be a JSON object")
    name = svc.check_name(entry.get("name"))
    match_by = entry.get("match_by")
    row: Row | None = None
    fields = entry.get("fields")
    absent: tuple[str, str] | None = None
    if match_by is not None:
        if match_by not in ("id", "email", "name"):
            raise Invalid("match_by", "must be one of id, email, name")
        value = entry.get("match_value")
        if value is None:
            raise Invalid("match_value", "required when match_by is set")
        if match_by == "id":
            if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
                value = int(value.strip()) if len(value.strip()) < 20 else 0
            if isinstance(value, bool) or not isinstance(value, int):
                raise Invalid("match_value", "must be an integer or a numeric string")
            try:
                row = svc.get(ot, value)
            except NotFound:
                row = None
        elif match_by == "email":
            if not ot.is_contacts:
                raise Invalid("match_by", "email is only available for contacts")
            if not isinstance(value, str):
                raise Invalid("match_value", "must be a string")
            row = svc.find_email(ot, value)
            key = normalize.email_key(value)
            absent = ("email_norm", key) if row is None and key else None
            if row is None and isinstance(fields, dict) and fields.get("email") is None:
                fields = {**fields, "email": value}
            elif row is None and fields is None:
                fields = {"email": value}
        else:
            if isinstance(value, bool) or not isinstance(value, str | int):
                raise Invalid("match_value", "must be a string or an integer")
            row = svc.store.find_by_key(ot.id, "name", str(value))
    image = entry.get("profile_image_url")
    if row is not None:
        values = svc.check_fields(ot, fields)
        checked = svc.check_image(image)
        svc.update(ot, row, name, values, checked, image_given="profile_image_url" in entry)
        return {"id": row.id, "status": "updated"}
    rid, status = svc.create(ot, name, fields, image, absent)
    return {"id": rid, "status": status}


@endpoint
async def batch(request: Request) -> Response:
    ot = object_type(request)
    body = await json_body(request)
    objects = body.get("objects")
    if not isinstance(objects, list):
        raise HttpError(400, 'Request body must contain an "objects" array')
    if len(objects) > MAX_BATCH:
        raise HttpError(
            400, f"Batch size exceeds maximum of {MAX_BATCH}. Received {len(objects)} objects."
        )
    svc = service_of(request)
    results: list[dict[str, Any]] = []
    counts = {"created": 0, "updated": 0, "failed": 0}
    with svc.store.transaction():
        for entry in objects:
            try:
                result = _batch_entry(svc, ot, entry)
            except Invalid as exc:
                result = {"id": None, "status": "failed", "error": str(exc)}
            counts[result["status"]] += 1
            results.append(result)
    summary = {"total": len(objects), **counts}
    return json_response({"results": results, "summary": summary})


_BY_METHOD = {
    "GET": read,
    "HEAD": read,
    "PUT": create,
    "POST": update_field,
    "PATCH": patch,
    "DELETE": delete,
}


async def objects(request: Request) -> Response:
    return await _BY_METHOD[request.method](request)


ROUTES = [
    Route("/api/objects/{object_type}", objects, methods=list(_BY_METHOD)),
    Route("/api/objects/{object_type}/batch", batch, methods=["POST"]),
]
