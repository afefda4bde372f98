"""The owner's consent to a remote client, and the pages around it.

Two places, and only one of them reachable from outside:
- ``/consent/<id>`` on the public server (through the tunnel): where the client's
  browser waits. It says what is asked and waits (it refreshes itself); it takes the
  one-time code that ``serve`` printed in the owner's terminal and log. Reaching it grants
  nothing: a wrong code counts, five deny the request, and a day's budget of wrong codes
  for all requests together pauses every code (``remote_auth``).
- ``/approve/<id>`` on a second listener bound to loopback (``consent_app``), which no
  tunnel forwards: the owner, at this machine, approves or denies with one click. Its form
  carries a nonce of the request, so a page elsewhere cannot submit it.
Once approved, the waiting page sends the browser on to the client with the code; a
request denied (by the owner, or by five wrong codes) gets a page saying so and is never
redirected: a client nobody approved must not turn this host into an open redirector.
"""

from __future__ import annotations

import html
import logging
from typing import Any

from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from .remote_auth import Pending, RemoteAuthority, spaced

log = logging.getLogger(__name__)

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>plaud-index-mcp</title>
{refresh}<style>body{{font:16px system-ui;max-width:36em;margin:3em auto;padding:0 1em}}
code{{font-size:1.2em}}</style></head><body><h1>Plaud Index</h1>{body}</body></html>"""


def page(body: str, refresh: bool = False, status: int = 200) -> HTMLResponse:
    return HTMLResponse(PAGE.format(body=body, refresh='<meta http-equiv="refresh" '
                                    'content="3">' if refresh else ""), status_code=status,
                        headers={"Cache-Control": "no-store", "X-Frame-Options": "DENY",
                                 "Referrer-Policy": "same-origin"})


def _asks(pending: Pending) -> str:
    return (f"<p><b>{html.escape(pending.client_name)}</b> asks to search your Plaud "
            "recordings on this computer (redirecting to "
            f"<code>{html.escape(str(pending.params.redirect_uri))}</code>).</p>")


def add_public_routes(server: MCPServer[Any], authority: RemoteAuthority) -> None:
    @server.custom_route("/consent/{ident}", methods=["GET", "POST"])  # type: ignore[untyped-decorator]
    async def waiting(request: Request) -> Response:
        pending = authority.pending.get(request.path_params["ident"])
        if request.method == "POST":
            form = await request.form()
            pending = authority.try_code(request.path_params["ident"],
                                         str(form.get("code", ""))[:20]) or pending
        if pending is None:
            return page("<p>This request is unknown or has expired. Start again from the "
                        "app that asked.</p>", status=404)
        if pending.decision == "approved" and pending.redirect:
            return RedirectResponse(pending.redirect, status_code=302)
        if pending.decision is not None:  # denied: a client nobody approved is sent nowhere
            return page(f"<p>{html.escape(pending.client_name)} was not approved. Start "
                        "again from the app that asked, and ask the owner of this computer "
                        "for the code.</p>", status=403)
        if authority.paused():
            return page(_asks(pending) + "<p>It waits for the owner of this computer. Too "
                        "many wrong codes were typed today, so codes approve nothing now: "
                        "the owner approves it on this computer itself.</p>",
                        refresh=request.method == "GET")
        wrong = "<p>That code is not the one. </p>" if request.method == "POST" else ""
        return page(_asks(pending) + wrong +
                    "<p>It waits for the owner of this computer: they approve it there, or "
                    "type here the one-time code <code>plaud-index-mcp serve</code> shows "
                    "them (twelve digits).</p><form method=post><input name=code "
                    "inputmode=numeric autocomplete=one-time-code maxlength=20> "
                    "<button>Approve</button></form>", refresh=request.method == "GET")


def consent_app(authority: RemoteAuthority) -> Starlette:
    """The approval page, served only on loopback (``serve`` binds it to 127.0.0.1)."""
    async def approve(request: Request) -> Response:
        pending = authority.pending.get(request.path_params["ident"])
        if pending is None:
            return page("<p>Unknown or expired request.</p>", status=404)
        if request.method == "POST":
            form = await request.form()
            if str(form.get("nonce", "")) != pending.nonce:
                return page("<p>This form is not from this page.</p>", status=403)
            decided = authority.decide(pending.ident, form.get("decision") == "approve")
            word = "approved" if decided and decided.decision == "approved" else "denied"
            return page(f"<p>You {word} {html.escape(pending.client_name)}. You can close "
                        "this tab.</p>")
        if pending.decision is not None:
            return page(f"<p>Already {pending.decision}.</p>")
        nonce = html.escape(pending.nonce)
        return page(_asks(pending) + f"<p>One-time code: <code>{spaced(pending.code)}</code></p>"
                    f"<form method=post><input type=hidden name=nonce value={nonce}>"
                    "<button name=decision value=approve>Approve</button> "
                    "<button name=decision value=deny>Deny</button></form>")

    return Starlette(routes=[Route("/approve/{ident}", approve, methods=["GET", "POST"])])
