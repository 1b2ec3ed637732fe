"""Drives the Python client that openapi-python-client generated from wxlake's served
OpenAPI document (tests/it/openapi.rs generates it and starts the server).

Every GET operation of the document is called through its generated function, once per
response shape (each mode), and each 200 must parse into the generated models:

- the parsed value is the model the call's shape names (not None, not an error body);
- it re-serializes (`to_dict`) to exactly the JSON the server sent (date-time strings
  compared as instants), so no field was lost or mistyped on the way;
- no model holds a field its schema does not declare (`additional_properties`), so the
  document lists every field the server sends, and no object was left a plain dict where
  the model names a type (a union's parser falls back to the raw value).

Usage: python openapi_client.py CLIENT_DIR BASE_URL API_KEY OPERATIONS_JSON
(OPERATIONS_JSON: the operationIds the test expects to be called, as a JSON list).
Prints one line per call; exits non-zero naming every failure.
"""

import datetime
import importlib
import json
import pkgutil
import re
import sys

import attrs

PACKAGE = "wxlake_client"


def snake(operation_id):
    """The module name openapi-python-client gives an operationId."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", operation_id).lower()


def operation_modules():
    """Generated operation modules by name (api/<tag>/<operation>.py)."""
    api = importlib.import_module(f"{PACKAGE}.api")
    out = {}
    for info in pkgutil.walk_packages(api.__path__, prefix=f"{PACKAGE}.api."):
        if not info.ispkg:
            out[info.name.rsplit(".", 1)[1]] = importlib.import_module(info.name)
    return out


def plain(value):
    """A parsed value back as JSON-compatible data."""
    if isinstance(value, list):
        return [plain(v) for v in value]
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return value


def as_instant(text):
    """A date-time string as an instant, or None (the client re-emits `format: date-time`
    fields in Python's isoformat: `+00:00` for `Z`, at most microseconds)."""
    try:
        return datetime.datetime.fromisoformat(text)
    except (ValueError, OverflowError):
        return None


def difference(parsed, sent, where="body"):
    """The first place where the re-serialized parse differs from the body sent, or None."""
    if isinstance(sent, dict) and isinstance(parsed, dict):
        if sorted(parsed) != sorted(sent):
            return f"{where}: keys {sorted(parsed)} != sent {sorted(sent)}"
        for k in sent:
            d = difference(parsed[k], sent[k], f"{where}.{k}")
            if d:
                return d
        return None
    if isinstance(sent, list) and isinstance(parsed, list):
        if len(parsed) != len(sent):
            return f"{where}: {len(parsed)} items != sent {len(sent)}"
        for i, (p, s) in enumerate(zip(parsed, sent)):
            d = difference(p, s, f"{where}[{i}]")
            if d:
                return d
        return None
    if isinstance(sent, str) and isinstance(parsed, str) and parsed != sent:
        instant = as_instant(sent)
        if instant is not None and "T" in sent and instant == as_instant(parsed):
            return None
    if parsed != sent or isinstance(parsed, bool) != isinstance(sent, bool):
        return f"{where}: {parsed!r} != sent {sent!r}"
    return None


def raw_dict_inside(value):
    """Whether a plain dict (JSON no model took) sits in `value`."""
    if isinstance(value, dict):
        return True
    return isinstance(value, list) and any(raw_dict_inside(v) for v in value)


def problems(value, where="body"):
    """What the parse missed: fields a declared model received beyond its schema's
    properties, and objects left as plain dicts where the field is typed as a model (a
    union's parser falls back to the raw value when no member parses)."""
    found = []
    if isinstance(value, list):
        for i, v in enumerate(value):
            found += problems(v, f"{where}[{i}]")
    elif attrs.has(type(value)):
        fields = attrs.fields(type(value))
        extra = getattr(value, "additional_properties", {})
        # A model with properties of its own must not collect unknown ones; a map
        # (only additional_properties) holds its entries there by design.
        if len(fields) > 1 and extra:
            found.append(f"{where} ({type(value).__name__}): undeclared {sorted(extra)}")
        for field in fields:
            if field.name == "additional_properties":
                continue
            v = getattr(value, field.name)
            typed = str(field.type)
            if raw_dict_inside(v) and "Any" not in typed and "dict" not in typed:
                found.append(f"{where}.{field.name}: a plain dict where the model says {typed}: {v}")
            found += problems(v, f"{where}.{field.name}")
        for k, v in extra.items():
            found += problems(v, f"{where}[{k!r}]")
    return found


def calls(m):
    """Per operationId: (arguments, the parsed type's name) for each shape to check."""
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    today = now.date()
    yesterday = today - datetime.timedelta(days=1)
    mode = m.ObservationMode
    return {
        "getObservations": [
            (dict(station_code="KNYC", mode=mode("latest")), "ObservationV2"),
            (dict(station_code="EGLC", mode=mode("latest")), "ObservationV2"),
            (dict(station_code="KNYC", mode=mode("svc_high"), logic=m.Logic("nws")), "SvcHigh"),
            (dict(station_code="EGLC", mode=mode("svc_high"), logic=m.Logic("wu"), date=yesterday), "SvcHigh"),
            (dict(station_code="KNYC", start_time=now - datetime.timedelta(hours=20), end_time=now), "list"),
        ],
        "getObservationsV1": [
            (dict(station_code="KNYC", mode=mode("latest")), "ObservationV1"),
            (dict(station_code="EGLC", mode=mode("svc_high")), "SvcHighV1"),
            (dict(station_code="EGLC", start_time=now - datetime.timedelta(hours=6), end_time=now), "list"),
        ],
        "getDailyExtremes": [
            (dict(station_code="KNYC", start_date=yesterday, end_date=today, logic=m.Logic("nws")), "list"),
        ],
        "getStations": [
            (dict(), "list"),
            (dict(station_code="EGLC,KNYC", include="latest_runs", date=yesterday), "list"),
        ],
        "getForecasts": [
            (
                dict(location_name="KNYC", start_valid_time=now, end_valid_time=now + datetime.timedelta(hours=6)),
                "list",
            ),
            (dict(location_name="EGLC", model="GFS", run="latest"), "list"),
            (dict(location_name="KNYC", mode=m.ForecastMode("daily")), "list"),
            (dict(location_name="EGLC", mode=m.ForecastMode("daily"), tz_mode=m.TzMode("standard")), "list"),
        ],
        "getForecastsV1": [
            (
                dict(location_name="KNYC", start_valid_time=now, end_valid_time=now + datetime.timedelta(hours=3)),
                "list",
            ),
        ],
        "getNwsForecasts": [
            (dict(station_code="KNYC"), "NwsForecastLatest"),
            (dict(station_code="KNYC", mode=m.NwsMode("history"), date=yesterday), "NwsForecastHistory"),
        ],
        "getPrecipitation": [(dict(station_code="KNYC"), "Precipitation")],
        "getNearbyStations": [
            (dict(station_code="KNYC", radius_km=2000.0), "Nearby"),
            (dict(stations="EGLC,KNYC"), "Nearby"),
        ],
        "getPacing": [
            (dict(station_code="KNYC"), "Pacing"),
            (dict(station_code="EGLC", logic=m.Logic("wu")), "Pacing"),
        ],
        "getBrackets": [
            (dict(station_code="KNYC", target=m.AccuracyTarget("high")), "Brackets"),
            (dict(station_code="EGLC", target=m.AccuracyTarget("low"), logic=m.Logic("wu")), "Brackets"),
        ],
        "getBracketAccuracy": [
            (dict(station_code="KNYC", target=m.AccuracyTarget("high")), "BracketAccuracy"),
            (dict(), "BracketAccuracy"),
        ],
        "getModelAccuracy": [
            (dict(station_code="KNYC", include="trends,daily_detail"), "ModelAccuracy"),
            (dict(station_code="EGLC", window=m.AccuracyWindow("30d"), target=m.AccuracyTarget("low")), "ModelAccuracy"),
            (dict(station_code="KORD"), "ModelAccuracy"),
        ],
        "getStatus": [(dict(), "Health")],
        "getMetrics": [(dict(), "str")],
    }


def type_name(parsed):
    return "list" if isinstance(parsed, list) else type(parsed).__name__


def main():
    client_dir, base_url, api_key, operations = sys.argv[1:5]
    sys.path.insert(0, client_dir)
    client_mod = importlib.import_module(PACKAGE)
    models = importlib.import_module(f"{PACKAGE}.models")
    client = client_mod.AuthenticatedClient(base_url=base_url, token=api_key, raise_on_unexpected_status=True)
    modules = operation_modules()
    table = calls(models)
    failures = []
    expected = json.loads(operations)
    for op in expected:
        if snake(op) not in modules:
            failures.append(f"{op}: no generated module {snake(op)} (generated: {sorted(modules)})")
        if op not in table:
            failures.append(f"{op}: the driver has no call for it (add one to calls())")
    for op, cases in table.items():
        if op not in expected:
            failures.append(f"{op}: called by the driver but not a GET operation of the document")
            continue
        module = modules.get(snake(op))
        if module is None:
            continue
        for args, want in cases:
            label = f"{op}({', '.join(f'{k}={v}' for k, v in args.items())})"
            try:
                resp = module.sync_detailed(client=client, **args)
            except Exception as e:  # an unexpected status or a parse error
                failures.append(f"{label}: {type(e).__name__}: {e}")
                continue
            body = resp.content.decode()
            if resp.status_code != 200:
                failures.append(f"{label}: status {resp.status_code}: {body[:300]}")
                continue
            parsed = resp.parsed
            got = type_name(parsed)
            if got != want:
                failures.append(f"{label}: parsed as {got}, want {want}: {body[:300]}")
                continue
            if want == "str":
                sent = body
            else:
                sent = json.loads(body)
                if isinstance(parsed, list) and not parsed:
                    failures.append(f"{label}: an empty list checks no model: {body[:300]}")
            d = difference(plain(parsed), sent)
            if d:
                failures.append(f"{label}: to_dict() differs from the body sent at {d}")
            found = problems(parsed)
            failures += [f"{label}: {e}" for e in found[:3]]
            if len(found) > 3:
                failures.append(f"{label}: ... and {len(found) - 3} more")
            print(f"ok {label}: {got}{f' of {len(parsed)}' if isinstance(parsed, list) else ''}")
    for f in failures:
        print(f"FAIL {f}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
