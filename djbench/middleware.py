"""Middleware that reports a request's SQL query count when asked (verify gate only)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponseBase

from djbench import querycount


class QueryCountMiddleware:
    """Natively sync and async: no ``sync_to_async`` hop under ASGI.

    Put it first in ``MIDDLEWARE`` so that queries of every other middleware count too.
    """

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self.__acall__(request)
        if request.META.get(querycount.REQUEST_HEADER) != "1":
            return self.get_response(request)
        cell = querycount.start()
        try:
            response: HttpResponseBase = self.get_response(request)
        finally:
            querycount.stop()
        response[querycount.RESPONSE_HEADER] = str(cell[0])
        return response

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        get_response: Callable[[HttpRequest], Awaitable[HttpResponseBase]] = self.get_response
        if request.META.get(querycount.REQUEST_HEADER) != "1":
            return await get_response(request)
        cell = querycount.start()
        try:
            response = await get_response(request)
        finally:
            querycount.stop()
        response[querycount.RESPONSE_HEADER] = str(cell[0])
        return response
