"""The project's URLconf as routes, and the values their arguments take from its data.

``routes()`` walks the URLconf (by hand: Django's admindocs has a walk, but importing it
pulls in the admin; the public ``pattern`` / ``url_patterns`` attributes are read).
``fillings()`` fills a route's arguments: from ``--sample-values name=value``, else from
the rows of the view's model, else of each model with fields of the arguments' names
and types (``<uuid:code>``: a UUIDField named code), each a candidate tried in turn by
benchinit's search (djbench.plan.discover) until its page answers: three models may all
name their identifier ``code``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.resolvers import RegexPattern, RoutePattern

_CONVERTER = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>[^>]+)>")
SAMPLES = 5  # pages of one kind a scenario cycles over


@dataclass
class Route:
    template: str  # "/shop/<int:pk>/"
    view: Any
    name: str  # "shop:detail", or "" when unnamed
    admin: bool = False

    @property
    def arguments(self) -> list[str]:
        return [m.group("name") for m in _CONVERTER.finditer(self.template)]


def _regex_template(regex: str) -> str | None:
    """A regex route without groups as a plain path; None when it takes arguments."""
    if "(" in regex:
        return None
    text = regex.lstrip("^").rstrip("$").replace("\\Z", "")
    text = re.sub(r"\\(.)", r"\1", text)
    return None if re.search(r"[.*+?\[\]{}|]", text) else text


def routes(patterns: list[Any] | None = None, prefix: str = "", namespace: str = "") -> list[Route]:
    """Every URL pattern of the project's URLconf, with its full path template."""
    found: list[Route] = []
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        pattern = entry.pattern
        piece: str
        if isinstance(pattern, RoutePattern):
            piece = str(pattern)  # the route as written: "shop/<int:pk>/"
        elif isinstance(pattern, RegexPattern):
            piece = _regex_template(str(pattern)) or (
                # A catch-all that also matches nothing (a CMS's page tree: Wagtail's
                # `^((?:[\w\-]+/)*)$`) serves its prefix: the site's root page.
                "" if pattern.regex.fullmatch("") else "<regex>"  # "<regex>": cannot fill
            )
        else:
            piece = "<unknown>"
        if isinstance(entry, URLResolver):
            ns = entry.namespace or ""
            inner = f"{namespace}:{ns}" if namespace and ns else (ns or namespace)
            found += routes(entry.url_patterns, prefix + piece, inner)
        elif isinstance(entry, URLPattern):
            name = f"{namespace}:{entry.name}" if namespace and entry.name else entry.name or ""
            template = "/" + (prefix + piece).lstrip("/")
            admin = namespace.split(":")[0] in ADMIN_NAMESPACES or template.startswith("/admin/")
            found.append(Route(template=template, view=entry.callback, name=name, admin=admin))
    return found


# Namespaces of admin sites (Django's, Wagtail's): not the pages a visitor reads.
ADMIN_NAMESPACES = ("admin", "wagtailadmin")


def _model_of(view: Any) -> Any:
    view_class = getattr(view, "view_class", None)
    model = getattr(view_class, "model", None)
    if model is None:
        queryset = getattr(view_class, "queryset", None)
        model = getattr(queryset, "model", None)
    return model


# The model fields a path converter's values can come from (Django's own converters).
_FIELDS = {
    "uuid": ("UUIDField",),
    "int": ("AutoField", "BigAutoField", "SmallAutoField", "IntegerField", "BigIntegerField",
            "PositiveIntegerField", "PositiveBigIntegerField", "SmallIntegerField",
            "PositiveSmallIntegerField"),
    "slug": ("SlugField", "CharField"),
    "str": ("CharField", "SlugField", "UUIDField", "AutoField", "BigAutoField"),
}  # fmt: skip
CANDIDATE_MODELS = 6  # models tried per route before it is said to answer 404


def _field(model: Any, name: str, converter: str) -> str | None:
    """The attribute of `model` an argument fills (pk for pk/id), if its type fits."""
    if name in ("pk", "id", "object_id"):
        return "pk"
    try:
        found = model._meta.get_field(name)
    except Exception:  # FieldDoesNotExist, or a model without _meta
        return None
    kind = found.get_internal_type()
    return name if kind in _FIELDS.get(converter, _FIELDS["str"]) else None


def _candidates(route: Route, missing: list[str]) -> list[tuple[Any, dict[str, str]]]:
    """Models whose rows can fill the route's missing arguments (each argument's
    attribute): the view's own model first, then every model with fields of those
    names and types. The same argument name can mean different models on different
    routes (three models' `code`), so each is tried until the page answers."""
    from django.apps import apps

    converters = {m.group("name"): m.group("converter") or "str"
                  for m in _CONVERTER.finditer(route.template)}  # fmt: skip
    own = _model_of(route.view)
    found = []
    for model in [own, *(m for m in apps.get_models() if m is not own)]:
        if model is None:
            continue
        attrs = {n: _field(model, n, converters.get(n, "str")) for n in missing}
        if all(attrs.values()):
            found.append((model, {n: a for n, a in attrs.items() if a}))
    return found[:CANDIDATE_MODELS]


def fillings(route: Route, samples: dict[str, str]) -> tuple[list[list[str]], str]:
    """The paths that fill the route, one list per candidate model (its first rows by
    primary key, up to SAMPLES), or ([], why not)."""
    if "<regex>" in route.template or "<unknown>" in route.template:
        return [], "a regular-expression route with arguments (add it to the file by hand)"
    given = {k: v for k, v in samples.items() if k in route.arguments}
    missing = [a for a in route.arguments if a not in given]

    def path(values: dict[str, str]) -> str:
        return _CONVERTER.sub(lambda m: values[m.group("name")], route.template)

    if not missing:
        return [[path(given)]], ""
    options = []
    for model, attrs in _candidates(route, missing):
        rows = model._default_manager.order_by("pk")[:SAMPLES]
        paths = [path({**{n: str(getattr(r, a)) for n, a in attrs.items()}, **given}) for r in rows]
        if paths:
            options.append(paths)
    if not options:
        names = ", ".join(missing)
        return [], (
            f"needs {names}: give a value with --sample-values {missing[0]}=... (no model "
            "has rows with fields of those names and types)"
        )
    return options, ""
