"""Where runbench's load goes and what sends it: --target, --protocol,
--new-connection-every, Locust's workers and --advertise-host, each checked into a value
(one-line OptionError) for :func:`djbench.plan.runplan.from_command`."""

from __future__ import annotations

from typing import Any

from djbench.plan.options import OptionError, split_list


def target_url(raw: Any) -> str | None:
    """--target: an http:// URL with a host (its path, if any, is ignored: scenarios
    carry their own)."""
    if raw is None:
        return None
    from urllib.parse import urlsplit

    url = urlsplit(str(raw))
    if url.scheme != "http" or not url.hostname:
        raise OptionError(
            f"--target takes an http:// URL like http://127.0.0.1:8000, got {raw!r} "
            "(the load drivers speak plain HTTP/1.1; put TLS in front of them elsewhere)"
        )
    try:
        port = url.port
    except ValueError:
        raise OptionError(f"--target: {raw!r} has no valid port") from None
    host = f"[{url.hostname}]" if ":" in url.hostname else url.hostname
    return f"http://{host}:{port or 80}"


PROTOCOLS = ("h1", "h2", "h2c")


def protocols_of(options: dict[str, Any]) -> list[str]:
    """--protocol h1,h2,h2c: an axis (each deployment once per protocol). HTTP/2 is
    spoken by h2load only (builtin, wrk and Locust speak HTTP/1.1): with h2 or h2c in
    the list, --driver auto means h2load for every protocol, so that the driver does
    not change with the protocol."""
    chosen = split_list(options.get("protocol")) or ["h1"]
    wrong = [p for p in chosen if p not in PROTOCOLS]
    if wrong:
        raise OptionError(f"--protocol takes {', '.join(PROTOCOLS)}, got {wrong[0]!r}")
    return list(dict.fromkeys(chosen))


def new_connection_every(options: dict[str, Any]) -> int | None:
    """--new-connection-every N: the builtin driver's (wrk, h2load and Locust keep their
    connections; h2load cannot reconnect, so HTTP/2's handshakes are not measured)."""
    every = options.get("new_connection_every")
    if every is None:
        return None
    if every < 1:
        raise OptionError("--new-connection-every takes a whole number of at least 1")
    if set(split_list(options.get("protocol")) or ["h1"]) != {"h1"}:
        raise OptionError(
            "--new-connection-every speaks HTTP/1.1 (the builtin driver): leave out "
            "--protocol h2/h2c (h2load cannot reconnect mid-run)"
        )
    return int(every)


def locust_workers(raw: Any, option: str = "--locust-workers") -> int:
    value = 1 if raw is None else raw
    if not isinstance(value, int) or not 1 <= value <= 64:
        raise OptionError(f"{option} takes a count from 1 to 64")
    return value


def remote_options(options: dict[str, Any]) -> dict[str, Any]:
    """--locust-workers, --locust-master-bind and its workers, --advertise-host, checked
    for what can be checked without the driver (the rest: run.remote)."""
    bind = options.get("locust_master_bind")
    expect, wait = options.get("locust_expect_workers"), options.get("locust_join_timeout")
    if bind is not None and options.get("locust_workers") is not None:
        raise OptionError(
            "with --locust-master-bind the workers run elsewhere: say how many with "
            "--locust-expect-workers, not --locust-workers"
        )
    if wait is not None and not 1 <= wait <= 3600:
        raise OptionError("--locust-join-timeout takes seconds from 1 to 3600")
    return {
        "locust_workers": locust_workers(options.get("locust_workers")),
        "locust_master_bind": bind,
        "locust_expect_workers": locust_workers(expect, "--locust-expect-workers"),
        "locust_join_timeout": 120.0 if wait is None else float(wait),
        "advertise_host": options.get("advertise_host"),
        "allow_remote_target": bool(options.get("allow_remote_target")),
    }
