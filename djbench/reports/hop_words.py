"""The ASGI thread hops in words: what causes them and what removes them (the guide,
the report and the gate's output; the hops are measured in djbench/measure/hops.py)."""

from __future__ import annotations


def hop_causes(causes: dict[str, int], limit: int = 4) -> str:
    """The causes of a scenario's thread hops, most frequent first, shortened."""
    ranked = sorted(causes.items(), key=lambda kv: -kv[1])
    shown = [f"{what.split(': ', 1)[-1]}" + (f" x{n}" if n > 1 else "") for what, n in ranked]
    more = f" and {len(shown) - limit} more" if len(shown) > limit else ""
    return "; ".join(shown[:limit]) + more


def hop_advice(causes: dict[str, int]) -> str:
    """What removes the hops found (only the advice that applies)."""
    text = " ".join(causes)
    advice = []
    sync_only = sorted(
        {
            what.split("middleware ", 1)[1].split(": sync only")[0]
            for what in causes
            if ": sync only" in what
        }
    )
    for name in sync_only:
        advice.append(
            f"{name} is sync only: it runs the middleware above it in a thread and calls "
            "the rest back, two hops a request; use an async-capable release or "
            "alternative, move the work out of the request (static files: let the proxy "
            "serve them), or remove it"
        )
    if "process_request" in text or "process_response" in text:
        advice.append(
            "make each listed middleware async-capable without MiddlewareMixin hooks (or "
            "drop it): every process_request/process_response of a MiddlewareMixin "
            "middleware is a hop under ASGI"
        )
    if "view_wrapper" in text or "the sync view" in text:
        advice.append("write the view as `async def`")
    if "QuerySet" in text:
        advice.append(
            "Django's async ORM itself runs in a thread (one hop per query): expect no "
            "gain over a sync view on a WSGI server"
        )
    if "request_started" in text or "close" in text:
        advice.append(
            "the hops around request_started/request_finished (Django's own database "
            "connection handlers) happen in every Django project under ASGI: not yours to remove"
        )
    return "; ".join(advice)
